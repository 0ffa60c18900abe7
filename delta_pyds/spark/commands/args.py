"""Argument checking for the ``DeltaTable`` API, as delta-spark's Python API checks, and
the active session a call runs under.

Guarantees:

* a condition is a ``Column`` or a SQL string, else :class:`TypeError` naming the argument
  (``condition``); a required one that is None raises :class:`ValueError` saying so;
* a column mapping (``set``, ``values``) is a ``dict`` with ``str`` keys and ``Column`` or
  SQL-string values, else :class:`TypeError` naming the argument (``{"c": 1}`` is refused:
  write ``{"c": "1"}`` or ``{"c": lit(1)}``); None raises :class:`ValueError`;
* a feature name is a ``str`` and ``truncateHistory`` a ``bool``, else delta-spark's
  ``ValueError`` ("featureName needs to be a string ...", an :class:`ArgumentTypeError`);
* a merge source is a ``DataFrame``; a version an ``int`` (not ``bool``, not ``"0"``); a
  timestamp a ``str`` (``yyyy-MM-dd[ HH:mm:ss]``), ``date`` or ``datetime`` (not a number):
  wrong versions and timestamps raise :class:`ArgumentTypeError` (a ``TypeError`` and a
  ``ValueError``: delta-spark raises ``ValueError`` there);
* :func:`activate` makes the table's session the active one of the calling thread, so that
  Spark finds the ``pydelta`` source from a thread other than the one that created the
  session (Spark looks Python data sources up through the thread's active session).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeAlias

from delta_pyds.errors import ArgumentTypeError, ArgumentValueError, TimestampParseError

if TYPE_CHECKING:
    from pyspark.sql import Column, SparkSession

# the argument types of delta-spark's Python API (its delta/_typing.py)
ExpressionOrColumn: TypeAlias = "str | Column"
OptionalExpressionOrColumn: TypeAlias = "str | Column | None"
ColumnMapping: TypeAlias = "Mapping[str, str | Column]"
OptionalColumnMapping: TypeAlias = "Mapping[str, str | Column] | None"


def _column_type() -> type:
    from pyspark.sql import Column

    return Column


def is_expression(value: Any) -> bool:
    """Whether ``value`` is a Spark ``Column`` (classic or Spark Connect) or a SQL string."""
    return isinstance(value, (str, _column_type()))


def check_condition(value: Any, name: str = "condition", *, required: bool = False) -> None:
    if value is None:
        if required:
            raise ArgumentValueError(f"'{name}' cannot be None")
        return
    if not is_expression(value):
        raise TypeError(
            f"'{name}' must be a Spark SQL Column or a string (expression in SQL syntax), "
            f"found to be of type {type(value)}"
        )


def check_column_map(value: Any, name: str) -> dict[str, Any]:
    """``value`` as a dict of column -> Column / SQL string (see the module docstring);
    ``name`` as delta-spark's messages spell the argument (``"'set' in whenMatchedUpdate"``)."""
    if value is None:
        raise ArgumentValueError(f"{name} cannot be None")
    if not isinstance(value, Mapping):
        raise TypeError(f"{name} must be a dict, found to be {type(value)}")
    for k, v in value.items():
        if not isinstance(k, str):
            raise TypeError(
                f"Keys of dict in {name} must contain only strings with column names, found '{k}' of type '{type(k)}'"
            )
        if not is_expression(v):
            raise TypeError(
                f"Values of dict in {name} must contain only Spark SQL Columns or strings "
                f"(expressions in SQL syntax) as values, found '{v}' of type '{type(v)}'"
            )
    return dict(value)


def check_source(source: Any) -> None:
    from pyspark.sql import DataFrame

    if source is None:
        raise ArgumentValueError("'source' in merge cannot be None")
    if not isinstance(source, DataFrame) and type(source).__name__ != "DataFrame":  # Connect's is another class
        raise TypeError(f"Type of 'source' in merge must be DataFrame, found {type(source)}")


def check_version(version: Any) -> int:
    if version is None:
        raise ArgumentValueError("'version' cannot be None")
    if isinstance(version, bool) or not isinstance(version, int):
        raise ArgumentTypeError(f"version needs to be an int but got '{type(version)}'")
    if version < 0:
        raise ArgumentValueError(f"'version' must be >= 0, got {version}")
    return version


def check_timestamp(timestamp: Any) -> None:
    if timestamp is None:
        raise ArgumentValueError("'timestamp' cannot be None")
    if not isinstance(timestamp, (str, dt.date)):
        raise ArgumentTypeError(
            f"timestamp needs to be a string but got '{type(timestamp)}' (a yyyy-MM-dd or "
            "yyyy-MM-dd HH:mm:ss string, a date or a datetime)"
        )
    if isinstance(timestamp, str):
        from delta_pyds.log.time_travel import parse_timestamp

        try:
            parse_timestamp(timestamp)
        except ValueError:
            raise TimestampParseError(
                f"The provided timestamp ('{timestamp}') cannot be converted to a valid timestamp "
                "(use e.g. '2024-01-31', '2024-01-31 12:00:00' or an ISO-8601 timestamp)"
            ) from None


def check_str(value: Any, name: str, *, optional: bool = False) -> None:
    if value is None and optional:
        return
    if not isinstance(value, str):
        raise TypeError(f"'{name}' must be str, found {value!r} of type {type(value)}")


def check_feature_name(value: Any) -> None:
    """A table feature name is a ``str``, else delta-spark's ``ValueError`` (an
    :class:`ArgumentTypeError`, also a ``TypeError``)."""
    if not isinstance(value, str):
        raise ArgumentTypeError(f"featureName needs to be a string but got '{type(value)}'.")


def check_boolean(value: Any, name: str) -> None:
    """``value`` is a ``bool``, else delta-spark's ``ValueError`` (an :class:`ArgumentTypeError`)."""
    if not isinstance(value, bool):
        raise ArgumentTypeError(f"{name} needs to be a boolean but got '{type(value)}'.")


def activate(spark: SparkSession) -> None:
    """Makes ``spark`` the active session of this thread (in the JVM), so that Spark
    resolves the ``pydelta`` source for work started from this thread."""
    try:
        jvm_session = getattr(spark, "_jsparkSession", None)
        jvm = getattr(spark, "_jvm", None)
        if jvm_session is None or jvm is None:  # Spark Connect: the server resolves sources per session
            return
        # the JVM's active session is per thread (Spark resolves sources through it); the
        # Python-side SparkSession._activeSession is process-wide, so it is left alone
        jvm.SparkSession.setActiveSession(jvm_session)
    except Exception:  # pragma: no cover - a platform that forbids it keeps its own session
        pass
