"""Reading and writing Delta tables by catalog name: ``delta_pyds.read_delta(spark, name=...)``
and ``delta_pyds.write_delta(df, name=..., mode=...)`` (the ``saveAsTable`` of this package).

Guarantees:

* the name resolves through Spark's session catalog on every call
  (:mod:`delta_pyds.spark.catalog.lookup`); a name with no entry raises
  :class:`~delta_pyds.errors.TableNotFoundError`, a view or a table of another provider
  :class:`~delta_pyds.errors.NotADeltaTableError`;
* ``read_delta(spark, name=...)`` reads the entry's location as ``read_delta(spark, path)``
  does (the same options: time travel, ``columns``, ``where`` ...);
* ``write_delta(df, name=...)`` writes as ``df.write.saveAsTable(name)`` does with delta-spark:
  an existing Delta table is appended to or overwritten (``mode``), ``error`` / ``errorifexists``
  (the default of ``saveAsTable``, not of ``write_delta``) raise
  :class:`~delta_pyds.errors.TableExistsError`, ``ignore`` writes nothing; a new name makes the
  table (EXTERNAL at ``path`` when one is given, else MANAGED under the warehouse directory) and
  registers it (:func:`~delta_pyds.spark.catalog.entries.create_named`); without a name it is
  :func:`delta_pyds.spark.native.write.write_path` unchanged."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from delta_pyds.errors import ArgumentTypeError, TableExistsError
from delta_pyds.spark.catalog.entries import create_named, same_location
from delta_pyds.spark.catalog.lookup import delta_entry, lookup, parse_name
from delta_pyds.spark.commands.auto_compaction import write_and_compact  # auto compaction after
from delta_pyds.spark.native.read import read_path

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from delta_pyds.transaction.commit import CommitResult


def read_delta(spark: SparkSession, path: str | None = None, *, name: str | None = None, **options: Any) -> DataFrame:
    """``delta_pyds.read_delta``: the Delta table at ``path`` (or the one Spark's catalog names
    ``name``: ``t``, ``db.t``, ``spark_catalog.db.t``, resolved on each call) as a DataFrame read by
    Spark's own Parquet reader, with the options of the ``pydelta`` source and an optional
    ``where`` SQL condition (:func:`delta_pyds.spark.native.read.read_path`)."""
    if (path is None) == (name is None):
        raise ArgumentTypeError("read_delta: give exactly one of the table's 'path' and its catalog 'name'")
    if name is not None:
        entry = delta_entry(spark, name, argument="name")
        assert entry.location is not None
        path = entry.location
    assert path is not None
    return read_path(spark, path, **options)


def write_delta(
    df: DataFrame,
    path: str | None = None,
    *,
    name: str | None = None,
    mode: str = "append",
    partitionBy: str | Iterable[str] | None = None,
    **options: Any,
) -> CommitResult | None:
    """``delta_pyds.write_delta``: writes ``df`` into the Delta table at ``path`` with Spark's own
    Parquet writer and one commit (:func:`delta_pyds.spark.native.write.write_path`), or into the
    table the catalog names ``name`` (see the module docstring); auto compaction after it.
    Returns the commit (None when nothing was committed)."""
    if name is None:
        if path is None:
            raise ArgumentTypeError("write_delta: give the table's 'path' or its catalog 'name'")
        return write_and_compact(df, path, mode=mode, partitionBy=partitionBy, **options)
    if not isinstance(mode, str):
        raise ArgumentTypeError(f"'mode' must be a str (append, overwrite, error, errorifexists, ignore), got {mode!r}")
    spark = df.sparkSession
    parts = parse_name(name, "name")
    entry = lookup(spark, parts)
    if entry is not None and not entry.temporary:
        entry = delta_entry(spark, parts, argument="name")
        assert entry.location is not None
        if path is not None and not same_location(path, entry.location):
            raise TableExistsError(f"write_delta: table {name} is at {entry.location}, not at path {path}")
        if mode.lower() in ("error", "errorifexists", "default"):
            raise TableExistsError(f"[TABLE_OR_VIEW_ALREADY_EXISTS] write_delta: table {name} already exists")
        if mode.lower() == "ignore":
            return None
        return write_and_compact(df, entry.location, mode=mode, partitionBy=partitionBy, **options)

    def make(location: str) -> CommitResult | None:
        return write_and_compact(df, location, mode=mode, partitionBy=partitionBy, **options)

    return create_named(spark, parts, "create", path, make)
