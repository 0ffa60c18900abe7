"""Evaluation of a parsed Spark SQL expression (:mod:`delta_pyds.expressions.ast`) over an
Arrow batch whose columns have the logical names.

Guarantees: :func:`evaluate` follows SQL null semantics (three-valued ``AND``/``OR``,
nulls propagate through comparisons and arithmetic) and Spark's ANSI mode (its default) for
arithmetic: ``+ - *``, unary minus and ``abs`` raise
:class:`~delta_pyds.errors.ExpressionError` naming ``ARITHMETIC_OVERFLOW`` when the result
does not fit the operands' type (never wrapping around), ``div`` (integral division, a
``BIGINT``) raises ``ARITHMETIC_OVERFLOW`` on ``-2^63 div -1``, and ``/`` and ``div`` raise
``DIVIDE_BY_ZERO``, ``%`` ``REMAINDER_BY_ZERO``, for a zero divisor of a non-null dividend (a
null operand gives null), as Spark's ``DivModLike`` does; integers cast to ``DOUBLE`` round as
Spark's cast does; :func:`evaluate_predicate` and :func:`evaluate_value` return
one value per row. Column names resolve case-insensitively when unambiguous. Dates and times
are evaluated in UTC.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from delta_pyds.errors import ExpressionError
from delta_pyds.expressions.ast import Case, Cast, Col, Lit, Node
from delta_pyds.expressions.coercion import (
    Batch,
    Value,
    as_bool,
    broadcast,
    call_compute,
    cast,
    unify,
)
from delta_pyds.expressions.functions import FUNCTIONS

_CMP = {"=": "equal", "!=": "not_equal", "<": "less", "<=": "less_equal", ">": "greater", ">=": "greater_equal"}
_ARITH = {"+": "add_checked", "-": "subtract_checked", "*": "multiply_checked"}


def evaluate(node: Node, batch: Batch) -> Value:
    """Evaluates an expression over a batch whose columns have the logical names: literals,
    columns, casts and CASE here, operators through :data:`_OPERATORS`, any other call through
    the function table (``ExpressionError`` for an unknown function)."""
    if isinstance(node, Lit):
        return pa.scalar(node.value, node.type)
    if isinstance(node, Col):
        return resolve_column(batch, node.path)
    if isinstance(node, Cast):
        return cast(evaluate(node.expr, batch), node.type)
    if isinstance(node, Case):
        return _case(node, batch)
    name, args = node.name, node.args
    operator = _OPERATORS.get(name)
    if operator is not None:
        return operator(name, args, batch)
    fn = FUNCTIONS.get(name)
    if fn is None:
        raise ExpressionError(f"function {name}() is not supported")
    return fn(batch, *[evaluate(a, batch) for a in args])


def _and_or(name: str, args: tuple, batch: Batch) -> Value:
    """Three-valued ``AND`` / ``OR``."""
    a, b = (as_bool(evaluate(x, batch)) for x in args)
    return (pc.and_kleene if name == "and" else pc.or_kleene)(a, b)


def _not(name: str, args: tuple, batch: Batch) -> Value:
    """``NOT``: null stays null."""
    return pc.invert(as_bool(evaluate(args[0], batch)))


def _compare(name: str, args: tuple, batch: Batch) -> Value:
    """``= != < <= > >=`` on the operands brought to one type; a null operand gives null."""
    a, b = unify(evaluate(args[0], batch), evaluate(args[1], batch))
    return call_compute(_CMP[name], a, b)


def _null_safe_equal(name: str, args: tuple, batch: Batch) -> Value:
    """``<=>``: never null; two nulls are equal."""
    a, b = unify(evaluate(args[0], batch), evaluate(args[1], batch))
    eq = pc.fill_null(call_compute("equal", a, b), False)
    both = pc.and_(pc.is_null(a), pc.is_null(b))
    return pc.or_(broadcast(eq, batch), broadcast(both, batch))


def _remainder(name: str, args: tuple, batch: Batch) -> Value:
    """``%`` (see :func:`_mod`)."""
    return _mod(evaluate(args[0], batch), evaluate(args[1], batch), batch)


def _negate(name: str, args: tuple, batch: Batch) -> Value:
    """Unary minus, checked (``ARITHMETIC_OVERFLOW``)."""
    return call_compute("negate_checked", evaluate(args[0], batch))


def _concat(name: str, args: tuple, batch: Batch) -> Value:
    """``||``: the ``concat`` function."""
    return FUNCTIONS["concat"](batch, *[evaluate(x, batch) for x in args])


def _isnull(name: str, args: tuple, batch: Batch) -> Value:
    """``IS NULL``: one boolean per row, never null."""
    return pc.is_null(broadcast(evaluate(args[0], batch), batch))


def _isnotnull(name: str, args: tuple, batch: Batch) -> Value:
    """``IS NOT NULL``: one boolean per row, never null."""
    return pc.is_valid(broadcast(evaluate(args[0], batch), batch))


def _case(node: Case, batch: Batch) -> Value:
    """CASE WHEN: the values cast to the first non-null type among them."""
    conds = [_truthy(evaluate(c, batch), batch) for c, _ in node.whens]
    values = [evaluate(v, batch) for _, v in node.whens]
    default = evaluate(node.default, batch) if node.default is not None else pa.scalar(None, pa.null())
    target = next((v.type for v in values + [default] if not pa.types.is_null(v.type)), pa.null())
    values = [broadcast(cast(v, target), batch) for v in values]
    default = broadcast(cast(default, target), batch)
    cond_struct = pa.StructArray.from_arrays(
        [broadcast(c, batch) for c in conds], names=[f"c{i}" for i in range(len(conds))]
    )
    return pc.case_when(cond_struct, *values, default)


def _arith(name: str, args: tuple, batch: Batch) -> Value:
    """``+ - *`` (checked); date plus or minus an integer number of days."""
    a, b = unify(evaluate(args[0], batch), evaluate(args[1], batch))
    if name in ("+", "-") and pa.types.is_date(a.type) and pa.types.is_integer(b.type):
        days = (
            pc.add_checked(a.cast(pa.int32()), b.cast(pa.int32()))
            if name == "+"
            else pc.subtract_checked(a.cast(pa.int32()), b.cast(pa.int32()))
        )
        return days.cast(pa.date32())
    return call_compute(_ARITH[name], a, b)


def _divide(name: str, args: tuple, batch: Batch) -> Value:
    """``/`` (decimal, else double) and ``div`` (integral, as a ``BIGINT``), with Spark's ANSI
    errors: a zero divisor of a non-null dividend raises ``DIVIDE_BY_ZERO``, ``-2^63 div -1``
    ``ARITHMETIC_OVERFLOW``."""
    a, b = evaluate(args[0], batch), evaluate(args[1], batch)
    if name == "/":
        if not (pa.types.is_decimal(a.type) and pa.types.is_decimal(b.type)):
            a, b = cast(a, pa.float64()), cast(b, pa.float64())
    else:
        a, b = cast(a, pa.int64()), cast(b, pa.int64())
    _refuse_zero_divisor(a, b, batch)
    b = pc.if_else(pc.equal(b, 0), pa.scalar(None, b.type), b)  # the rows left: a null dividend
    return call_compute("divide" if name == "/" else "divide_checked", a, b)


def _refuse_zero_divisor(a: Value, b: Value, batch: Batch, error: str = "DIVIDE_BY_ZERO") -> None:
    """Spark's ANSI ``error`` (``DIVIDE_BY_ZERO``, ``REMAINDER_BY_ZERO``) when a row divides a
    non-null value by zero."""
    zero = pc.and_(pc.is_valid(broadcast(a, batch)), pc.fill_null(pc.equal(broadcast(b, batch), 0), False))
    if pc.any(zero).as_py():
        raise ExpressionError(f"[{error}] Division by zero (Spark's ANSI mode)")


def _in(name: str, args: tuple, batch: Batch) -> Value:
    """``x IN (items)``, null when no item equals and one is null (Kleene OR)."""
    x = evaluate(args[0], batch)
    items = [evaluate(a, batch) for a in args[1:]]
    result = None
    for item in items:
        a, b = unify(x, item)
        eq = call_compute("equal", a, b)
        result = eq if result is None else pc.or_kleene(result, eq)
    return result


def _like(name: str, args: tuple, batch: Batch) -> Value:
    """``LIKE`` / ``ILIKE`` with a string literal pattern."""
    x = evaluate(args[0], batch)
    pattern = args[1]
    if not (isinstance(pattern, Lit) and isinstance(pattern.value, str)):
        raise ExpressionError("LIKE needs a string literal pattern")
    return pc.match_like(cast(broadcast(x, batch), pa.string()), pattern.value, ignore_case=name == "ilike")


def resolve_column(batch: Batch, path: tuple[str, ...]) -> pa.Array:
    names = batch.schema.names
    idx = batch.schema.get_field_index(path[0])
    if idx < 0:
        lowered = [i for i, n in enumerate(names) if n.lower() == path[0].lower()]
        if len(lowered) != 1:
            raise ExpressionError(f"column {path[0]!r} does not exist (columns: {', '.join(names)})")
        idx = lowered[0]
    arr = batch.column(idx)
    for name in path[1:]:
        if not pa.types.is_struct(arr.type):
            raise ExpressionError(f"{'.'.join(path)}: {name!r} is not a field of a struct")
        j = arr.type.get_field_index(name)
        if j < 0:
            matches = [k for k in range(arr.type.num_fields) if arr.type.field(k).name.lower() == name.lower()]
            if len(matches) != 1:
                raise ExpressionError(f"field {'.'.join(path)} does not exist")
            j = matches[0]
        arr = pc.struct_field(arr, [j])
    return arr


def _truthy(v: Value, batch: Batch) -> pa.Array:
    return pc.fill_null(broadcast(as_bool(v), batch), False)


def _mod(a: Value, b: Value, batch: Batch) -> pa.Array:
    """``%`` as Spark's ``Remainder``: the sign of the dividend, ``REMAINDER_BY_ZERO`` for a
    zero divisor of a non-null dividend (ANSI); ``-2^63 % -1`` is 0."""
    a, b = unify(a, b)
    a, b = broadcast(a, batch), broadcast(b, batch)
    _refuse_zero_divisor(a, b, batch, "REMAINDER_BY_ZERO")
    if pa.types.is_decimal(a.type) or pa.types.is_decimal(b.type):
        a, b = cast(a, pa.float64()), cast(b, pa.float64())
    na = a.to_numpy(zero_copy_only=False)
    nb = b.to_numpy(zero_copy_only=False)
    valid = pc.and_(pc.is_valid(a), pc.and_(pc.is_valid(b), pc.not_equal(pc.fill_null(b, 0), 0)))
    mask = valid.to_numpy(zero_copy_only=False)
    out_type = a.type if pa.types.is_integer(a.type) else pa.float64()
    res = np.zeros(len(na), dtype=np.float64 if pa.types.is_floating(out_type) else np.int64)
    if mask.any():
        x = na[mask].astype(res.dtype)
        y = nb[mask].astype(res.dtype)
        res[mask] = np.fmod(x, y)
    return pa.array(res, mask=~mask).cast(out_type)


# operator name -> its step, each called as step(name, args, batch)
_OPERATORS: dict[str, Callable[[str, tuple, Batch], Value]] = {
    "and": _and_or,
    "or": _and_or,
    "not": _not,
    **dict.fromkeys(_CMP, _compare),
    "<=>": _null_safe_equal,
    **dict.fromkeys(_ARITH, _arith),
    "/": _divide,
    "div": _divide,
    "%": _remainder,
    "negate": _negate,
    "||": _concat,
    "isnull": _isnull,
    "isnotnull": _isnotnull,
    "in": _in,
    "like": _like,
    "ilike": _like,
}


def evaluate_predicate(node: Node, batch: Batch) -> pa.Array:
    """A boolean array (nulls kept) with one value per row of ``batch``."""
    result = evaluate(node, batch)
    result = broadcast(as_bool(result), batch)
    if isinstance(result, pa.ChunkedArray):
        result = result.combine_chunks()
    return result


def evaluate_value(node: Node, batch: Batch, target: pa.DataType) -> pa.Array:
    """An expression's values for every row, cast to ``target``."""
    result = broadcast(evaluate(node, batch), batch)
    if isinstance(result, pa.ChunkedArray):
        result = result.combine_chunks()
    return cast(result, target)
