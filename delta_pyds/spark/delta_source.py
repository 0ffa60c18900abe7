"""The short name ``delta`` for this package's source, where no JVM ``delta`` source exists.

Spark 4.3's ``DataSource.lookupDataSource`` tries the JVM ``DataSourceRegister`` short names
first, then class names, and only then the session's Python sources (DESIGN.md §2e, measured);
a later Spark raises when two sources share a name. :func:`register_delta_name` therefore
registers :class:`DeltaNamedSource` as ``delta`` only after asking Spark for ``delta`` and
getting ``DATA_SOURCE_NOT_FOUND``: a session with delta-spark's jars never gets a second
``delta`` source, so ``format("delta")`` stays delta-spark's there.

Guarantees of the ``delta`` source registered here:

* ``spark.read/readStream/write/writeStream.format("delta")`` with a path behave exactly as
  ``format("pydelta")`` (same class, same options);
* ``CREATE TABLE name USING delta [LOCATION 'p']`` through ``spark.sql`` stores a catalog entry
  as delta-spark stores one: provider ``delta``, the location, EXTERNAL (with LOCATION) or
  MANAGED, and an empty schema (``struct<>``: the Delta log is the truth for the schema); with
  a LOCATION that holds no Delta table it fails with :class:`TableNotFoundError`;
* Spark reading or writing a Delta catalog table itself (``spark.table(name)``, ``SELECT ...
  FROM name`` through ``spark.sql``, ``saveAsTable``, ``insertInto``) reaches the source with
  no options (Spark 4.3's ``PythonDataSourceV2.getTable`` drops the entry's properties): it
  fails with :class:`~delta_pyds.errors.CatalogTableReadError`, whose message says to use
  ``read_delta(spark, name=...)`` / ``delta_pyds.sql`` / ``write_delta(df, name=...)``. (``INSERT INTO``
  a delta-spark-shaped entry fails earlier, in Spark's analyzer, with
  ``INSERT_COLUMN_ARITY_MISMATCH``: the entry has no columns.)"""

from __future__ import annotations

import os
import tempfile
import uuid
import weakref
from typing import TYPE_CHECKING, Any

from pyspark.sql.types import StructType

from delta_pyds.errors import CatalogTableReadError
from delta_pyds.spark.datasource import DeltaDataSource

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.datasource import (
        DataSourceReader,
        DataSourceStreamReader,
        DataSourceStreamWriter,
        DataSourceWriter,
    )

# sessions already checked: True when ``delta`` reaches this package, False when a JVM source has it
_CHECKED: weakref.WeakKeyDictionary[Any, bool] = weakref.WeakKeyDictionary()

CATALOG_HINT = (
    "Spark 4.3 gives a Python data source's catalog table no location (PythonDataSourceV2.getTable drops"
    " the entry's properties), so Spark cannot read or write a Delta table by name without delta-spark's"
    " jars. Read it with delta_pyds.read_delta(spark, name=name), write it with delta_pyds.write_delta(df, name=name,"
    " mode=...), and query it with delta_pyds.sql(spark, 'SELECT ... FROM name')"
)


class DeltaNamedSource(DeltaDataSource):
    """``format("delta")`` and ``USING delta`` where no JVM ``delta`` source exists (see the
    module docstring)."""

    @classmethod
    def name(cls) -> str:
        return "delta"

    def _has_path(self) -> bool:
        return bool(self.options.get("path") or self.options.get("paths"))

    def _catalog_use(self, what: str) -> CatalogTableReadError:
        return CatalogTableReadError(f"{what} of a Delta catalog table through Spark: {CATALOG_HINT}")

    def schema(self) -> StructType:
        if "provider" in self.options:  # CREATE TABLE ... USING delta: the entry delta-spark writes
            if self._has_path():
                from delta_pyds.read.options import ReadOptions
                from delta_pyds.read.scan_plan import load_snapshot

                load_snapshot(ReadOptions.parse({"path": self.options["path"]}))  # a Delta table must be there
            return StructType([])
        if not self._has_path():
            raise self._catalog_use("a read")
        return super().schema()

    def reader(self, schema: StructType) -> DataSourceReader:
        if not self._has_path():
            raise self._catalog_use("a read")
        return super().reader(schema)

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        if not self._has_path():
            raise self._catalog_use("a write (saveAsTable, insertInto, INSERT INTO)")
        return super().writer(schema, overwrite)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        if not self._has_path():
            raise self._catalog_use("a streaming read")
        return super().streamReader(schema)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        if not self._has_path():
            raise self._catalog_use("a streaming write (toTable)")
        return super().streamWriter(schema, overwrite)


def register_source(spark: SparkSession, *, delta_name: bool = True) -> None:
    """Registers the ``pydelta`` source on ``spark``, enables filter pushdown and, with
    ``delta_name``, :func:`register_delta_name` (what ``delta_pyds.register`` does before it
    installs the front doors; this package's own calls use this one)."""
    try:
        spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
    except Exception:  # pragma: no cover - some managed platforms lock confs
        pass
    spark.dataSource.register(DeltaDataSource)
    if delta_name:
        register_delta_name(spark)


def register_delta_name(spark: SparkSession) -> bool:
    """Registers :class:`DeltaNamedSource` as ``delta`` on ``spark`` when Spark finds no
    ``delta`` source (checked once per session); returns whether ``delta`` now reaches this
    package (False: a JVM source, e.g. delta-spark, has the name)."""
    known = _CHECKED.get(spark)
    if known is not None:
        return known
    probe = os.path.join(tempfile.gettempdir(), f"delta_pyds-probe-{uuid.uuid4().hex}")
    try:
        spark.read.format("delta").load(probe).schema  # noqa: B018 - analysis is the probe
        ours = False  # something named delta read a path that does not exist
    except Exception as exc:
        text = str(exc)
        if "DATA_SOURCE_NOT_FOUND" in text:
            spark.dataSource.register(DeltaNamedSource)
            ours = True
        else:  # a source answered: ours (a Python source) or a JVM one (delta-spark)
            ours = "PYTHON_DATA_SOURCE" in text or "delta_pyds" in text
    _CHECKED[spark] = ours
    return ours
