"""delta_pyds: Delta Lake for PySpark in pure Python.

``spark.read.format("pydelta").load(path)`` reads Delta tables; the core modules
(everything but :mod:`delta_pyds.spark`) implement the Delta protocol over pyarrow and
fsspec and never import pyspark.
"""

from __future__ import annotations

import importlib
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
    # for type checkers only: the entry points as defined in their modules (importing them here
    # would import pyspark)
    from delta_pyds.read.explain import explain_scan
    from delta_pyds.spark import register
    from delta_pyds.spark.io import read_delta, write_delta
    from delta_pyds.spark.sql import sql
    from delta_pyds.spark.tables import DeltaTable, DeltaTableBuilder, IdentityGenerator

__all__ = [
    "register",
    "read_delta",
    "explain_scan",
    "write_delta",
    "DeltaTable",
    "DeltaTableBuilder",
    "IdentityGenerator",
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


# Each public entry point is defined once, in the module named here, and reached as
# ``delta_pyds.<name>`` by importing that module on first use, so that ``import delta_pyds``
# never imports pyspark (the Spark layer's modules do).
ENTRY_POINTS: dict[str, str] = {
    "register": "delta_pyds.spark",
    "read_delta": "delta_pyds.spark.io",
    "write_delta": "delta_pyds.spark.io",
    "sql": "delta_pyds.spark.sql",
    "explain_scan": "delta_pyds.read.explain",
    "DeltaTable": "delta_pyds.spark.tables",
    "DeltaTableBuilder": "delta_pyds.spark.tables",
    "IdentityGenerator": "delta_pyds.spark.tables",
}


def __getattr__(name: str) -> Any:
    module = ENTRY_POINTS.get(name)
    if module is None:
        raise AttributeError(f"module 'delta_pyds' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # once: later lookups find it without this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(ENTRY_POINTS))
