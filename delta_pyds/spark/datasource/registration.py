"""The short name ``delta`` for this package's source, where no JVM ``delta`` source exists.

Spark 4.3's ``DataSource.lookupDataSource`` tries the JVM ``DataSourceRegister`` short names
first, then class names, and only then the session's Python sources (measured; docs/catalog.md);
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
  ``INSERT_COLUMN_ARITY_MISMATCH``: the entry has no columns.) ``register(spark)``'s front doors
  (:mod:`delta_pyds.spark.front_doors`) meet ``saveAsTable`` / ``insertInto`` / ``writeTo`` in the
  Python session, before Spark sees them."""

from __future__ import annotations

import hashlib
import os
import tempfile
import uuid
import weakref
from typing import TYPE_CHECKING, Any

from pyspark.sql.types import StructType

from delta_pyds.errors import CatalogTableReadError
from delta_pyds.spark.datasource.source import DeltaDataSource
from delta_pyds.spark.session.jvm import is_classic, jvm_active

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
        path = str(self.options.get("path") or "")
        if os.path.basename(path).startswith(PROBE_PREFIX):  # register_delta_name asks who has the name
            raise CatalogTableReadError(f"the delta source is delta_pyds's: {probe_answer(path)}")
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


PROBE_PREFIX = "delta_pyds-probe-"


def error_condition(exc: BaseException) -> str | None:
    """Spark's error condition of ``exc`` (pyspark's errors, and a py4j error pyspark left
    unconverted, e.g. ``SparkClassNotFoundException``), or None."""
    get = getattr(exc, "getCondition", None)
    if get is None:
        java = getattr(exc, "java_exception", None)
        get = getattr(java, "getCondition", None) if java is not None else None
    try:
        value = get() if get is not None else None
    except Exception:  # not a SparkThrowable
        return None
    return str(value) if value is not None else None


def probe_answer(path: str) -> str:
    """What this package's ``delta`` source answers when asked to read the probe path ``path``:
    a digest of the path, which an error that merely echoes the path never contains."""
    return "delta_pyds-probe-answer-" + hashlib.sha256(("delta_pyds probe:" + path).encode()).hexdigest()


def register_class(spark: SparkSession, source: type) -> None:
    """``spark.dataSource.register(source)`` with ``spark`` the active session on the JVM side
    (Spark checks the name against the active session's sources: another session's, e.g. the
    parent of a ``spark.newSession()``, would raise ``DATA_SOURCE_ALREADY_EXISTS``)."""
    if is_classic(spark):
        with jvm_active(spark):
            spark.dataSource.register(source)
    else:
        spark.dataSource.register(source)


def register_sources(spark: SparkSession, *, delta_name: bool = True) -> None:
    """What :func:`delta_pyds.spark.register` does to the session's data sources: the filter
    pushdown conf, ``pydelta``, and ``delta`` (with ``delta_name``) as :func:`register_delta_name`
    decides; no front door is installed here (the package's own fallbacks call this)."""
    try:
        spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
    except Exception:  # pragma: no cover - some managed platforms lock confs
        pass
    register_class(spark, DeltaDataSource)
    if delta_name:
        register_delta_name(spark)


def delta_name_checked(spark: SparkSession) -> bool | None:
    """What :func:`register_delta_name` found for ``spark`` (None: never asked, e.g.
    ``register(spark, delta_name=False)``): whether ``delta`` reaches this package there."""
    return _CHECKED.get(spark)


def register_delta_name(spark: SparkSession) -> bool:
    """Registers :class:`DeltaNamedSource` as ``delta`` on ``spark`` when Spark finds no
    ``delta`` source (checked once per session); returns whether ``delta`` now reaches this
    package (False: another source, e.g. delta-spark's JVM one, has the name). The check reads
    a path that does not exist with ``format("delta")``: Spark's ``DATA_SOURCE_NOT_FOUND``
    means no source has the name; otherwise only this package's source answers with
    :func:`probe_answer` of that path."""
    known = _CHECKED.get(spark)
    if known is not None:
        return known
    probe = os.path.join(tempfile.gettempdir(), f"{PROBE_PREFIX}{uuid.uuid4().hex}")
    try:
        spark.read.format("delta").load(probe).schema  # noqa: B018 - analysis is the probe
        ours = False  # something named delta read a path that does not exist
    except Exception as exc:
        if error_condition(exc) == "DATA_SOURCE_NOT_FOUND":
            try:
                register_class(spark, DeltaNamedSource)
            except Exception as again:  # a session sharing another's Python sources has it already
                if error_condition(again) != "DATA_SOURCE_ALREADY_EXISTS" and "DATA_SOURCE_ALREADY_EXISTS" not in str(
                    again
                ):
                    raise
            ours = True
        else:  # a source answered: ours (a Python source) or another (delta-spark's JVM one)
            ours = probe_answer(probe) in str(exc)
    _CHECKED[spark] = ours
    return ours
