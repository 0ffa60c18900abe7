"""A filter from untrusted text, for ``read_delta(..., safe_where=...)``: parsed with the
package's own SQL subset (:mod:`delta_pyds.expressions.parser`, the one data skipping
uses), checked against the table's columns, and rendered back to Spark SQL.

Guarantees:

* only column references, literals, the operators of the subset and the deterministic
  functions of :data:`~delta_pyds.expressions.functions.FUNCTIONS` pass; anything else (a
  subquery, ``reflect``/``java_method``, a UDF, a table-valued function, ``rand()``, a
  comment) raises :class:`~delta_pyds.errors.ExpressionError` naming it;
* every column reference must name a column (or nested field) of the table, else
  :class:`~delta_pyds.errors.ColumnNotFoundError` naming it and the table's columns;
* the Spark SQL handed to Spark is rendered from the parsed tree, never the user's text:
  identifiers backtick-quoted, literals typed (``CAST('...' AS DECIMAL(p, s))``), every
  operation parenthesised, so Spark cannot read it differently from the checked tree.
"""

from __future__ import annotations

import datetime as dt
import math
from typing import Any

import pyarrow as pa

from delta_pyds.errors import ColumnNotFoundError, ExpressionError
from delta_pyds.expressions.ast import Call, Case, Cast, Col, Lit
from delta_pyds.expressions.functions import FUNCTIONS
from delta_pyds.expressions.lexer import DEFAULT_DIALECT, Dialect
from delta_pyds.expressions.parser import parse_expression
from delta_pyds.protocol.schema import StructType

_INFIX = {
    "=": "=",
    "==": "=",
    "<=>": "<=>",
    "!=": "!=",
    "<>": "!=",
    "<": "<",
    "<=": "<=",
    ">": ">",
    ">=": ">=",
    "+": "+",
    "-": "-",
    "*": "*",
    "/": "/",
    "%": "%",
    "||": "||",
    "and": "AND",
    "or": "OR",
    "like": "LIKE",
    "ilike": "ILIKE",
    "div": "DIV",
}
# functions whose value changes between calls of one query are not deterministic
_NON_DETERMINISTIC: frozenset[str] = frozenset()


def safe_spark_sql(text: str, schema: StructType, dialect: Dialect = DEFAULT_DIALECT) -> str:
    """The Spark SQL rendering of ``text`` (read as Spark reads it under ``dialect``) after the
    checks of the module docstring; the rendering reads the same under every dialect."""
    if not isinstance(text, str):
        raise ExpressionError(f"safe_where: expected a SQL condition string, got {type(text).__name__}")
    tree = parse_expression(text, dialect)
    return _render(tree, schema)


def _ident(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _resolve(path: tuple[str, ...], schema: StructType) -> tuple[str, ...]:
    current: Any = schema
    out: list[str] = []
    for name in path:
        field = current.get(name) if isinstance(current, StructType) else None
        if field is None:
            raise ColumnNotFoundError(
                f"safe_where: {'.'.join(path)} is not a column of the table; columns: {', '.join(schema.names)}"
            )
        out.append(field.name)
        current = field.type
    return tuple(out)


def _sql_type(t: pa.DataType) -> str:
    simple = {
        pa.int8(): "TINYINT",
        pa.int16(): "SMALLINT",
        pa.int32(): "INT",
        pa.int64(): "BIGINT",
        pa.float32(): "FLOAT",
        pa.float64(): "DOUBLE",
        pa.string(): "STRING",
        pa.large_string(): "STRING",
        pa.bool_(): "BOOLEAN",
        pa.date32(): "DATE",
        pa.binary(): "BINARY",
    }
    if t in simple:
        return simple[t]
    if pa.types.is_decimal(t):
        return f"DECIMAL({t.precision}, {t.scale})"
    if pa.types.is_timestamp(t):
        return "TIMESTAMP" if t.tz is not None else "TIMESTAMP_NTZ"
    raise ExpressionError(f"safe_where: a value of type {t} cannot be used")


def _string(value: str) -> str:
    # reads back the same under every Dialect: no backslash or quote inside the quotes
    if "'" in value or "\\" in value:
        return f"CAST(X'{value.encode('utf-8').hex()}' AS STRING)"
    return "'" + value + "'"


def _literal(lit: Lit) -> str:
    v = lit.value
    if v is None:
        return "NULL" if pa.types.is_null(lit.type) else f"CAST(NULL AS {_sql_type(lit.type)})"
    if isinstance(v, bool):
        return "TRUE" if v else "FALSE"
    if isinstance(v, str):
        return _string(v)
    if isinstance(v, float):
        text = "NaN" if math.isnan(v) else ("Infinity" if v > 0 else "-Infinity") if math.isinf(v) else repr(v)
        return f"CAST({_string(text)} AS {_sql_type(lit.type)})"
    if isinstance(v, dt.datetime):
        if v.tzinfo is not None:
            return f"CAST({_string(v.astimezone(dt.timezone.utc).isoformat())} AS TIMESTAMP)"
        return f"CAST({_string(v.isoformat())} AS TIMESTAMP_NTZ)"
    if isinstance(v, dt.date):
        return f"CAST({_string(v.isoformat())} AS DATE)"
    if isinstance(v, (bytes, bytearray)):
        return f"X'{bytes(v).hex()}'"
    return f"CAST({_string(format(v, 'f') if not isinstance(v, int) else str(v))} AS {_sql_type(lit.type)})"


def _render(node: Any, schema: StructType) -> str:
    if isinstance(node, Col):
        return ".".join(_ident(n) for n in _resolve(node.path, schema))
    if isinstance(node, Lit):
        return _literal(node)
    if isinstance(node, Cast):
        return f"CAST({_render(node.expr, schema)} AS {_sql_type(node.type)})"
    if isinstance(node, Case):
        whens = " ".join(f"WHEN {_render(c, schema)} THEN {_render(v, schema)}" for c, v in node.whens)
        default = f" ELSE {_render(node.default, schema)}" if node.default is not None else ""
        return f"(CASE {whens}{default} END)"
    if isinstance(node, Call):
        name = node.name.lower()
        args = [_render(a, schema) for a in node.args]
        if name in _INFIX and len(args) == 2:
            return f"({args[0]} {_INFIX[name]} {args[1]})"
        if name == "not" and len(args) == 1:
            return f"(NOT {args[0]})"
        if name == "negate" and len(args) == 1:
            return f"(- {args[0]})"
        if name in ("isnull", "isnotnull") and len(args) == 1:
            return f"({args[0]} IS {'NOT ' if name == 'isnotnull' else ''}NULL)"
        if name == "in" and len(args) >= 2:
            return f"({args[0]} IN ({', '.join(args[1:])}))"
        if name in FUNCTIONS and name not in _NON_DETERMINISTIC:
            return f"{name}({', '.join(args)})"
    raise ExpressionError(f"safe_where: {type(node).__name__} {getattr(node, 'name', '')!s} is not allowed")
