"""The errors delta-spark users catch as pyspark's ``AnalysisException``, raised with delta-spark's
message texts by the Spark layer (the core never imports pyspark: it raises
:class:`~delta_pyds.errors.TableNotFoundError` / :class:`~delta_pyds.errors.NotADeltaTableError`).

Guarantees: every class here is a subclass of both the package's error and
``pyspark.errors.AnalysisException`` (the class ``pyspark.sql.utils.AnalysisException`` names too,
and the base of the classic and the Spark Connect ``AnalysisException``), so both
``except TableNotFoundError`` and ``except AnalysisException`` catch it, on classic and Spark
Connect sessions. ``str()`` is delta-spark's ``[ERROR_CLASS] message``; ``getCondition()`` and
``getSqlState()`` are delta-spark's (Spark's for ``PATH_NOT_FOUND``):

* a path with no Delta table: ``[DELTA_MISSING_DELTA_TABLE] `<path>` is not a Delta table.``;
  a path that does not exist, on a read: Spark's ``[PATH_NOT_FOUND] Path does not exist: <uri>.``;
* a name that is no Delta table (no entry, a view, another provider), for ``DeltaTable.forName``:
  ``[DELTA_MISSING_DELTA_TABLE] `<db>`.`<t>` is not a Delta table.``;
* ``DeltaTableBuilder`` usage delta-spark refuses (:class:`DeltaUsageException`, also an
  :class:`~delta_pyds.errors.ArgumentValueError`): ``DELTA_CLUSTER_BY_WITH_PARTITIONED_BY``,
  ``DELTA_CREATE_TABLE_MISSING_TABLE_NAME_OR_LOCATION``;
* a table to create with no columns and no query (:class:`SchemaNotProvidedException`, also a
  :class:`~delta_pyds.errors.SchemaError`): ``DELTA_SCHEMA_NOT_PROVIDED``.

The package's own message stays reachable as the exception's ``__cause__``."""

from __future__ import annotations

import os

from pyspark.errors import AnalysisException

from delta_pyds.errors import ArgumentValueError, NotADeltaTableError, SchemaError, TableNotFoundError

MISSING_DELTA_TABLE = "DELTA_MISSING_DELTA_TABLE"
PATH_NOT_FOUND = "PATH_NOT_FOUND"
CLUSTER_BY_WITH_PARTITIONED_BY = "DELTA_CLUSTER_BY_WITH_PARTITIONED_BY"
MISSING_NAME_OR_LOCATION = "DELTA_CREATE_TABLE_MISSING_TABLE_NAME_OR_LOCATION"
SCHEMA_NOT_PROVIDED = "DELTA_SCHEMA_NOT_PROVIDED"
_SQL_STATES = {
    MISSING_DELTA_TABLE: "42P01",
    PATH_NOT_FOUND: "42K03",
    CLUSTER_BY_WITH_PARTITIONED_BY: "42613",
    MISSING_NAME_OR_LOCATION: "42601",
    SCHEMA_NOT_PROVIDED: "42908",
}
_USAGE_MESSAGES = {
    CLUSTER_BY_WITH_PARTITIONED_BY: "Clustering and partitioning cannot both be specified. Please remove "
    "partitionedBy if you want to create a Delta table with clustering.",
    MISSING_NAME_OR_LOCATION: "Table name or location has to be specified.",
}
_SCHEMA_NOT_PROVIDED_MESSAGE = (
    "Table schema is not provided. Please provide the schema (column definition) of the table when using "
    "REPLACE table and an AS SELECT query is not provided."
)


class DeltaAnalysisException(AnalysisException):
    """pyspark's AnalysisException with one of delta-spark's error classes (see the module docstring)."""

    def _set(self, message: str, error_class: str, parameters: dict[str, str]) -> None:
        AnalysisException.__init__(self, message=message, errorClass=error_class, messageParameters=parameters)

    def __str__(self) -> str:
        return f"[{self._errorClass}] {self._message}"

    def getMessage(self) -> str:
        return str(self)

    def getSqlState(self) -> str | None:
        return _SQL_STATES.get(self._errorClass or "")


class DeltaTableNotFoundException(DeltaAnalysisException, TableNotFoundError):
    """No Delta table at a path (or under a name): a :class:`TableNotFoundError` and an ``AnalysisException``."""

    def __new__(cls, message: str, *args: object, **kwargs: object) -> DeltaTableNotFoundException:
        return TableNotFoundError.__new__(cls, message)  # OSError reads two arguments as (errno, strerror)

    def __init__(self, message: str, error_class: str = MISSING_DELTA_TABLE, parameters: dict[str, str] | None = None):
        TableNotFoundError.__init__(self, message)
        self._set(message, error_class, parameters or {})


class NotADeltaTableException(DeltaAnalysisException, NotADeltaTableError):
    """A name of Spark's catalog that is a view or another provider's table: a
    :class:`NotADeltaTableError` and an ``AnalysisException``."""

    def __init__(self, message: str, error_class: str = MISSING_DELTA_TABLE, parameters: dict[str, str] | None = None):
        NotADeltaTableError.__init__(self, message)
        self._set(message, error_class, parameters or {})


class DeltaUsageException(DeltaAnalysisException, ArgumentValueError):
    """A ``DeltaTableBuilder`` call delta-spark refuses with an ``AnalysisException`` (clustering and
    partitioning together, no name and no location): an :class:`ArgumentValueError` and an
    ``AnalysisException`` with delta-spark's class and text."""

    def __init__(self, error_class: str):
        message = _USAGE_MESSAGES[error_class]
        ArgumentValueError.__init__(self, message)
        self._set(message, error_class, {})


class SchemaNotProvidedException(DeltaAnalysisException, SchemaError):
    """A table to create (``DeltaTableBuilder.execute()``, ``CREATE TABLE ... USING delta``) with no
    columns and no query: a :class:`~delta_pyds.errors.SchemaError` and an ``AnalysisException``
    with delta-spark's ``DELTA_SCHEMA_NOT_PROVIDED``."""

    def __init__(self) -> None:
        SchemaError.__init__(self, _SCHEMA_NOT_PROVIDED_MESSAGE)
        self._set(_SCHEMA_NOT_PROVIDED_MESSAGE, SCHEMA_NOT_PROVIDED, {})


def quoted(text: str) -> str:
    """delta-spark's ``DeltaTableIdentifier`` quoting of one part (a path or a name part)."""
    return "`" + text.replace("`", "``") + "`"


def missing_table(identifier: str) -> DeltaTableNotFoundException:
    """``[DELTA_MISSING_DELTA_TABLE] <identifier> is not a Delta table.`` (``identifier`` quoted already)."""
    return DeltaTableNotFoundException(f"{identifier} is not a Delta table.", parameters={"tableName": identifier})


def path_error(path: str, *, read: bool = False) -> DeltaTableNotFoundException:
    """The error for a path that holds no Delta table: on a ``read``, a local path that does not exist
    is Spark's ``PATH_NOT_FOUND`` (as delta-spark raises it), else ``DELTA_MISSING_DELTA_TABLE``."""
    if read and "://" not in path and not path.startswith("file:") and not os.path.exists(path):
        uri = "file:" + os.path.abspath(path)
        return DeltaTableNotFoundException(f"Path does not exist: {uri}.", PATH_NOT_FOUND, {"path": uri})
    return missing_table(quoted(path))


def name_error(parts: tuple[str, ...] | list[str], cause: Exception) -> Exception:
    """The error for a catalog name that is no Delta table (``cause``: the package's own error)."""
    shown = ".".join(quoted(p) for p in parts)
    if isinstance(cause, NotADeltaTableError):
        return NotADeltaTableException(f"{shown} is not a Delta table.", parameters={"tableName": shown})
    return missing_table(shown)
