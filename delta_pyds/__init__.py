"""delta_pyds: Delta Lake for PySpark in pure Python.

``spark.read.format("pydelta").load(path)`` reads Delta tables; the core modules
(everything but :mod:`delta_pyds.spark`) implement the Delta protocol over pyarrow and
fsspec and never import pyspark.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from delta_pyds.errors import (
    AmbiguousCatalogEntryError,
    AppendOnlyError,
    ArgumentTypeError,
    ArgumentValueError,
    CatalogTableReadError,
    ChangeDataError,
    ColumnNotFoundError,
    ColumnTypeError,
    CommitFailedError,
    CommitRetriesExhaustedError,
    ConcurrentAppendError,
    ConcurrentModificationError,
    ConstraintViolationError,
    CorruptCheckpointError,
    CorruptLogError,
    DataFileError,
    DeletionVectorError,
    DeltaError,
    ExpressionError,
    ExternalPathError,
    FeatureDropError,
    IdentityColumnError,
    MalformedVariantError,
    MergeMultipleMatchesError,
    MetadataChangedError,
    MissingPropertyError,
    NoCatalogError,
    NotADeltaTableError,
    OptionValueError,
    PathEscapeError,
    SchemaChangeError,
    SchemaError,
    SettingValueError,
    ShortReadError,
    SqlParameterError,
    SqlParseError,
    SqlStatementError,
    StorageError,
    StoreFaultError,
    StreamChangeError,
    StreamingError,
    StreamingSchemaChangeError,
    StreamSinkError,
    TableExistsError,
    TableNotFoundError,
    TemporaryViewError,
    TimestampParseError,
    UnknownArgumentError,
    UnsafeFileError,
    UnsupportedFeatureError,
    UnsupportedSparkVersionError,
    VersionNotFoundError,
)
from delta_pyds.version import __version__

if TYPE_CHECKING:
    # pyspark's types through the Spark layer, which imports pyspark (this module names no
    # pyspark module, not even for type checking)
    from delta_pyds.read.explain import ScanExplanation
    from delta_pyds.spark.native.read import DataFrame, SparkSession

__all__ = [
    "register",
    "read_delta",
    "explain_scan",
    "write_delta",
    "DeltaTable",
    "__version__",
    "DeltaError",
    "ShortReadError",
    "StoreFaultError",
    "TableNotFoundError",
    "CorruptLogError",
    "CorruptCheckpointError",
    "ExternalPathError",
    "IdentityColumnError",
    "VersionNotFoundError",
    "UnsupportedFeatureError",
    "UnsupportedSparkVersionError",
    "DeletionVectorError",
    "DataFileError",
    "SchemaError",
    "ConcurrentModificationError",
    "ConcurrentAppendError",
    "MetadataChangedError",
    "CommitFailedError",
    "CommitRetriesExhaustedError",
    "TableExistsError",
    "UnknownArgumentError",
    "ColumnNotFoundError",
    "SettingValueError",
    "ArgumentValueError",
    "OptionValueError",
    "AppendOnlyError",
    "ConstraintViolationError",
    "ColumnTypeError",
    "UnsafeFileError",
    "PathEscapeError",
    "StorageError",
    "StreamingError",
    "StreamingSchemaChangeError",
    "StreamChangeError",
    "StreamSinkError",
    "ChangeDataError",
    "ExpressionError",
    "MalformedVariantError",
    "MergeMultipleMatchesError",
    "ArgumentTypeError",
    "AmbiguousCatalogEntryError",
    "FeatureDropError",
    "NoCatalogError",
    "NotADeltaTableError",
    "CatalogTableReadError",
    "SqlParseError",
    "SqlStatementError",
    "TimestampParseError",
    "MissingPropertyError",
    "SchemaChangeError",
    "TemporaryViewError",
    "SqlParameterError",
    "sql",
]


def __getattr__(name: str) -> Any:
    # DeltaTable lives in the Spark layer: imported on first use, so that importing
    # delta_pyds never imports pyspark
    if name in ("DeltaTable", "DeltaTableBuilder", "IdentityGenerator"):
        from delta_pyds.spark import tables

        return getattr(tables, name)
    if name == "write_delta":
        from delta_pyds.spark.io import write_delta

        return write_delta
    raise AttributeError(f"module 'delta_pyds' has no attribute {name!r}")


def read_delta(spark: SparkSession, path: str | None = None, *, name: str | None = None, **options: Any) -> DataFrame:
    """The Delta table at ``path`` (or the one Spark's catalog names ``name``: ``t``, ``db.t``,
    ``spark_catalog.db.t``, resolved on each call) as a DataFrame read by Spark's own Parquet
    reader, with the options of the ``pydelta`` source and an optional ``where`` SQL condition
    (see :mod:`delta_pyds.spark.native.read` and :mod:`delta_pyds.spark.io`)."""
    from delta_pyds.spark.io import read_delta as _read_delta

    return _read_delta(spark, path, name=name, **options)


def explain_scan(path: str, predicates: Sequence[Any] = (), **kwargs: Any) -> ScanExplanation:
    """Which files a scan with ``predicates`` reads, and why (see :mod:`delta_pyds.read.explain`)."""
    from delta_pyds.read.explain import explain_scan as _explain

    return _explain(path, predicates, **kwargs)


def sql(spark: SparkSession, statement: str, args: Any = None, **kwargs: Any) -> DataFrame:
    """Runs one SQL statement: Delta's statements (DESCRIBE HISTORY, VACUUM, DELETE, MERGE INTO,
    ...) and tables named ``delta.`/path``` through delta_pyds, every other statement through
    ``spark.sql(statement, args, **kwargs)`` unchanged (see :mod:`delta_pyds.spark.sql`)."""
    from delta_pyds.spark.sql import sql as _sql

    return _sql(spark, statement, args, **kwargs)


def register(spark: SparkSession, *, delta_name: bool = True) -> None:
    """Registers the ``pydelta`` data source on ``spark`` and enables filter pushdown; also as
    ``delta`` where Spark has no ``delta`` source (see :func:`delta_pyds.spark.register`)."""
    from delta_pyds.spark import register as _register

    _register(spark, delta_name=delta_name)
