"""SQL conditions -> skipping predicates: what a DML or replaceWhere condition written in
the SQL subset (:mod:`delta_pyds.expressions.parser`) implies about one column, in the
predicate form data skipping understands (:mod:`delta_pyds.expressions.predicates`).

Conservative by construction: every row that matches the condition matches the predicates,
so pruning files with them never drops a file holding a matching row; what cannot be said
exactly (functions, casts, literals of another type) gives no predicate."""

from __future__ import annotations

import datetime as _dt
import decimal
from typing import Any

from delta_pyds.errors import ExpressionError
from delta_pyds.expressions import predicates as P
from delta_pyds.expressions.ast import Call, Col, Lit, resolve_alias
from delta_pyds.expressions.lexer import DEFAULT_DIALECT, Dialect
from delta_pyds.expressions.parser import parse_expression
from delta_pyds.protocol.schema import PrimitiveType, StructField, StructType

_FLIP = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "=": "=", "<=>": "<=>"}


def skipping_predicates(
    condition: Any, schema: StructType, dialect: Dialect | None = DEFAULT_DIALECT, *, alias: str | None = None
) -> tuple:
    """Skipping predicates implied by a SQL condition string read as Spark reads it under
    ``dialect`` (empty when nothing simple can be said, when the text is outside the parser's
    subset, or when ``dialect`` is None: unknown; a Column condition gives none). With
    ``alias`` the condition is over the table under that alias (``t.id``), resolved as Spark
    resolves it (:func:`~delta_pyds.expressions.ast.resolve_alias`; an uncertain reading gives
    none). Conservative: every row matching the condition matches the predicates, so pruning
    with them never drops a matching file."""
    if not isinstance(condition, str) or dialect is None:
        return ()
    try:
        node = parse_expression(condition, dialect)
    except (ExpressionError, ValueError):
        return ()
    if alias is not None:
        resolved = resolve_alias(node, alias, (f.name for f in schema.fields))
        if resolved is None:
            return ()
        node = resolved
    pred, _exact = _to_predicate(node, schema)
    return (pred,) if pred is not None else ()


_NO = object()


def _literal_for(value: Any, field: StructField) -> Any:
    """The literal as the column's type for skipping, or _NO when that is not exact."""
    t = field.type
    if value is None or not isinstance(t, PrimitiveType):
        return _NO
    name = t.name
    if isinstance(value, bool):
        return value if name == "boolean" else _NO
    if name in ("byte", "short", "integer", "long"):
        if isinstance(value, int) or (isinstance(value, decimal.Decimal) and value == value.to_integral_value()):
            return int(value)
        return _NO
    if name in ("float", "double"):
        return float(value) if isinstance(value, (int, float, decimal.Decimal)) else _NO
    if name.startswith("decimal"):
        return decimal.Decimal(value) if isinstance(value, (int, decimal.Decimal)) else _NO
    if name == "string":
        return value if isinstance(value, str) else _NO
    if name == "date":
        ok = isinstance(value, _dt.date) and not isinstance(value, _dt.datetime)
        return value if ok else _NO
    return _NO


def _to_predicate(node: Any, schema: StructType) -> Any:
    """(predicate or None, exact): exact means the predicate is equivalent to the node."""
    if not isinstance(node, Call):
        return None, False
    name, args = node.name, node.args
    if name in _CONNECTIVES:
        return _CONNECTIVES[name](args, schema)
    if name in _COMPARISONS and len(args) == 2:
        return _comparison(name, args, schema)
    if name == "in" and len(args) >= 2:
        return _in_list(args, schema)
    if name in ("isnull", "isnotnull") and len(args) == 1:
        f = _column(args[0], schema)
        if f is not None:
            return (P.IsNull(f.name) if name == "isnull" else P.IsNotNull(f.name)), True
    return None, False


def _and(args: tuple, schema: StructType) -> Any:
    """``AND``: the conjunction of the parts that give a predicate (exact when all are)."""
    parts = [_to_predicate(a, schema) for a in args]
    kept = [p for p, _ in parts if p is not None]
    exact = all(p is not None and e for p, e in parts)
    return (P.conjunction(kept) if kept else None), exact


def _or(args: tuple, schema: StructType) -> Any:
    """``OR``: a predicate only when every part gives one."""
    parts = [_to_predicate(a, schema) for a in args]
    if any(p is None for p, _ in parts):
        return None, False
    out = parts[0][0]
    for p, _ in parts[1:]:
        out = P.Or(out, p)
    return out, all(e for _, e in parts)


def _not(args: tuple, schema: StructType) -> Any:
    """``NOT``: a predicate only when the child's is exact."""
    child, exact = _to_predicate(args[0], schema)
    return (P.Not(child), True) if child is not None and exact else (None, False)


_CONNECTIVES = {"and": _and, "or": _or, "not": _not}
_COMPARISONS = {
    "=": P.EqualTo,
    "<": P.LessThan,
    "<=": P.LessThanOrEqual,
    ">": P.GreaterThan,
    ">=": P.GreaterThanOrEqual,
    "<=>": P.EqualNullSafe,
}


def _column(arg: Any, schema: StructType) -> Any:
    """The top-level column a node names, or None."""
    if isinstance(arg, Col) and len(arg.path) == 1:
        return schema.get(arg.path[0])
    return None


def _comparison(name: str, args: tuple, schema: StructType) -> Any:
    """A column compared with a literal of its type (either side), exact; else none."""
    a, b = args
    if isinstance(a, Lit) and isinstance(b, Col):
        a, b, name = b, a, _FLIP[name]
    f = _column(a, schema)
    v = _literal_for(b.value, f) if f is not None and isinstance(b, Lit) else _NO
    if v is not _NO:
        return _COMPARISONS[name](f.name, v), True
    return None, False


def _in_list(args: tuple, schema: StructType) -> Any:
    """``column IN (literals of its type)``, exact; else none."""
    f = _column(args[0], schema)
    values = args[1:]
    vals = [_literal_for(v.value, f) if f is not None and isinstance(v, Lit) else _NO for v in values]
    if vals and all(v is not _NO for v in vals):
        return P.In(f.name, tuple(vals)), True
    return None, False
