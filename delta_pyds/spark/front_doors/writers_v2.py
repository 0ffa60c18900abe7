"""Front doors: ``df.writeTo(name)`` (pyspark's ``DataFrameWriterV2``) of Delta tables.

Guarantees, after ``delta_pyds.register(spark)``:

* ``using``, ``option(s)``, ``tableProperty`` and ``partitionedBy`` run as pyspark defines them and
  are recorded on the writer;
* ``create()``, ``replace()`` and ``createOrReplace()`` with ``using("delta")`` / ``"pydelta"`` (no
  ``using``: the session's ``spark.sql.sources.default``) define the table by the rows in one commit
  (operations ``CREATE TABLE AS SELECT``, ``REPLACE TABLE AS SELECT``, ``CREATE OR REPLACE TABLE AS
  SELECT``), partitioned by ``partitionedBy`` (column names only: a transform such as ``years(ts)``
  is refused by name), with the ``tableProperty``s and ``delta.*`` options as table properties, and
  register it (EXTERNAL at ``option("path")`` / ``tableProperty("location", ...)``, else MANAGED);
  ``create`` on an existing table raises ``TABLE_OR_VIEW_ALREADY_EXISTS``, ``replace`` on a missing
  one ``CANNOT_REPLACE_MISSING_TABLE``, both as ``AnalysisException``;
* ``append()``, ``overwrite(condition)`` and ``overwritePartitions()`` of a Delta catalog table
  (whatever ``using`` said: the table's format, as Spark does) write by column name (``WRITE``
  commits): ``overwrite`` replaces the rows matching the condition (delta-spark's
  ``replaceWhere``), ``overwritePartitions`` the partitions the rows fall in (dynamic partition
  overwrite); a missing table raises ``TABLE_OR_VIEW_NOT_FOUND``;
* every other call is pyspark's own method with the same arguments."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from delta_pyds.errors import ArgumentValueError, TableExistsError, TableNotFoundError
from delta_pyds.spark.catalog.lookup import delta_entry, quote
from delta_pyds.spark.front_doors import write_routes
from delta_pyds.spark.front_doors.patching import (
    WriteState,
    analysis_error,
    bound,
    copied,
    delta_format,
    is_delta_entry,
    recording,
    state,
    wrap,
    writer_dataframe,
)

_DEFINE = {"create": "create", "replace": "replace", "createOrReplace": "createOrReplace"}
_NAME = re.compile(r"^Column<'(`[^`]+`|[A-Za-z_][A-Za-z0-9_]*)'>$")
_BINARY = {"==": "=", "!=": "!=", "<": "<", ">": ">", "<=": "<=", ">=": ">=", "<=>": "<=>", "and": "AND", "or": "OR"}


def _table_property(st: WriteState, property: str, value: str) -> None:
    st.properties[str(property)] = str(value)


def _partitioned_by(st: WriteState, col: Any, *cols: Any) -> None:
    st.partition_by = [col, *cols]


def _options(st: WriteState, **options: Any) -> None:
    for k, v in options.items():
        st.set_option(k, v)


def _remembering_the_name(method: Callable[..., Any]) -> Callable[..., Any]:
    """``__init__`` that records the table name where pyspark keeps it only in the JVM (classic)."""

    def wrapper(self: Any, *args: Any, **kwargs: Any) -> None:
        method(self, *args, **kwargs)
        if getattr(self, "_table_name", None) is None:
            state(self).extra["table"] = bound(method, self, args, kwargs).get("table")

    return wrapper


def install(cls: type) -> None:
    """Wraps ``cls`` (classic or Spark Connect ``DataFrameWriterV2``; see the module docstring)."""
    wrap(cls, "using", recording(lambda st, provider: setattr(st, "source", provider)))
    wrap(cls, "option", recording(lambda st, key, value: st.set_option(key, value)))
    wrap(cls, "options", recording(_options))
    wrap(cls, "__init__", _remembering_the_name)
    wrap(cls, "tableProperty", recording(_table_property))
    wrap(cls, "partitionedBy", recording(_partitioned_by))
    for name in _DEFINE:
        wrap(cls, name, _defining(name))
    wrap(cls, "append", _writing(lambda w, df, loc, st: _write(df, loc, st, "append")))
    wrap(cls, "overwrite", _writing(lambda w, df, loc, st, condition: _overwrite(df, loc, st, condition)))
    wrap(cls, "overwritePartitions", _writing(lambda w, df, loc, st: _write(df, loc, st, "dynamic")))


def _defining(method_name: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    def make(method: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(self: Any) -> Any:
            st = copied(self)
            if not delta_format(self._spark, st.source):
                return method(self)
            _define(self, _DEFINE[method_name], st)
            return None

        return wrapper

    return make


def _define(writer: Any, mode: str, st: WriteState) -> None:
    name = table_name(writer)
    properties = {k: v for k, v in st.properties.items() if k.lower() != "location"}
    properties.update({k: v for k, v in st.options.items() if k.lower().startswith("delta.")})
    path = st.option("path") or next((v for k, v in st.properties.items() if k.lower() == "location"), None)
    parts = [partition_name(c) for c in st.partition_by] if st.partition_by is not None else None
    df = writer_dataframe(writer)
    try:
        write_routes.create_as_select(df, name, path, mode, parts, properties)
    except TableExistsError as exc:
        if "TABLE_OR_VIEW_ALREADY_EXISTS" not in str(exc):
            raise
        message = f"Cannot create table or view {name} because it already exists."
        raise analysis_error(exc, "TABLE_OR_VIEW_ALREADY_EXISTS", "42P07", message) from None
    except TableNotFoundError as exc:
        if mode != "replace":
            raise
        message = (
            f"Table or view {name} cannot be replaced as it does not exist. Use CREATE OR REPLACE TABLE to create"
            " the table."
        )
        raise analysis_error(exc, "CANNOT_REPLACE_MISSING_TABLE", "42P01", message) from None


def _not_found(exc: TableNotFoundError, name: str) -> Exception:
    message = (
        f"The table or view {name} cannot be found. Verify the spelling and correctness of the schema and catalog."
    )
    return analysis_error(exc, "TABLE_OR_VIEW_NOT_FOUND", "42P01", message)


def table_name(writer: Any) -> str:
    """The name ``df.writeTo(name)`` was given (classic writers keep it only in the JVM: recorded
    by the wrapped ``DataFrame.writeTo``)."""
    found = getattr(writer, "_table_name", None) or state(writer).extra.get("table")
    if not found:
        raise ArgumentValueError("writeTo: the table name of this writer is unknown")
    return str(found)


def partition_name(col: Any) -> str:
    """A ``partitionedBy`` column as a name; a transform is refused by name."""
    if isinstance(col, str):
        return col
    m = _NAME.match(str(col))
    if m is None:
        raise ArgumentValueError(
            f"partitionedBy: {col} is not a column name; Delta tables are partitioned by columns (a transform such as"
            " years(ts) or bucket(n, c) is not supported: add a generated column and partition by it)"
        )
    return m.group(1).strip("`")


def _writing(route: Callable[..., None]) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    def make(method: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(self: Any, *args: Any) -> Any:
            name = table_name(self)
            if not is_delta_entry(self._spark, name):
                return method(self, *args)
            df = writer_dataframe(self)
            try:
                entry = delta_entry(self._spark, name, argument="table")
            except TableNotFoundError as exc:
                raise _not_found(exc, name) from None
            route(self, df, entry.location, copied(self), *args)
            return None

        return wrapper

    return make


def _write(df: Any, location: str, st: WriteState, how: str) -> None:
    options, _ = write_routes.write_options(st)
    if how == "dynamic":
        options["partitionOverwriteMode"] = "dynamic"
    write_routes.write_delta(df, location, mode="append" if how == "append" else "overwrite", **options)


def _overwrite(df: Any, location: str, st: WriteState, condition: Any) -> None:
    options, _ = write_routes.write_options(st)
    options["replaceWhere"] = condition_sql(condition, df)
    write_routes.write_delta(df, location, mode="overwrite", **options)


def condition_sql(condition: Any, df: Any) -> str:
    """``overwrite(condition)``'s condition as Spark SQL text (a str is a column name, as pyspark
    takes it); on a classic session Catalyst's own SQL of the condition analyzed over ``df``."""
    if isinstance(condition, str):
        return quote(condition)
    if getattr(condition, "_jc", None) is not None:
        return str(df.where(condition)._jdf.queryExecution().analyzed().condition().sql())
    return _connect_sql(condition._expr)


def _connect_sql(expr: Any) -> str:
    """The SQL text of a Spark Connect expression built of column references, literals,
    comparisons, AND / OR / NOT and ``F.expr`` text; anything else is refused by name."""
    kind = type(expr).__name__
    if kind == "SQLExpression":
        return f"({expr._expr})"
    if kind == "ColumnReference":
        return ".".join(quote(p) for p in str(expr._unparsed_identifier).split("."))
    if kind == "LiteralExpression" and (expr._value is None or isinstance(expr._value, (str, int, float, bool))):
        value = expr._value
        if value is None:
            return "NULL"
        if isinstance(value, bool):
            return "TRUE" if value else "FALSE"
        if isinstance(value, str):
            return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
        return repr(value)
    if kind == "UnresolvedFunction" and expr._name in _BINARY and len(expr._args) == 2:
        return f"({_connect_sql(expr._args[0])} {_BINARY[expr._name]} {_connect_sql(expr._args[1])})"
    if kind == "UnresolvedFunction" and expr._name == "not" and len(expr._args) == 1:
        return f"(NOT {_connect_sql(expr._args[0])})"
    raise ArgumentValueError(
        f"overwrite(condition): {expr!r} cannot be given to Delta as a replaceWhere predicate from a Spark Connect"
        " client; write the condition as F.expr('<SQL predicate>')"
    )
