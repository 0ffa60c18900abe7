"""Spark-like casts and operand coercion over Arrow arrays and scalars, shared by the
parser (typed literals), the evaluator and the function table.

Guarantees: :func:`cast` follows Spark where Arrow differs (strings to timestamps with
an optional offset or ``Z``, strings to dates and booleans, floats truncated to
integers) and raises :class:`~delta_pyds.errors.ExpressionError` instead of an
Arrow error; :func:`call_compute` turns Arrow overflow into an ``ExpressionError``
rather than a wrapped-around value. Dates and times are in UTC.
"""

from __future__ import annotations

import datetime as dt
from typing import TypeAlias

import pyarrow as pa
import pyarrow.compute as pc

from delta_pyds.errors import ExpressionError

Value: TypeAlias = "pa.Array | pa.ChunkedArray | pa.Scalar"
"""An evaluated expression: a column of values, or one value (a literal) for every row."""
Batch: TypeAlias = "pa.RecordBatch | pa.Table"
"""The rows an expression is evaluated over."""


def is_string_type(t: pa.DataType) -> bool:
    return pa.types.is_string(t) or pa.types.is_large_string(t)


def is_numeric_type(t: pa.DataType) -> bool:
    return pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t)


def string_to_timestamp(v: Value, target: pa.DataType) -> Value:
    if isinstance(v, pa.Scalar):
        return string_to_timestamp(pa.array([v.as_py()], v.type), target)[0]
    v = pc.replace_substring(v, "T", " ")
    if target.tz is not None:
        v = pc.replace_substring_regex(v, r"[Zz]$", "+00:00")
        has_off = pc.match_substring_regex(v, r"[+-]\d\d:?\d\d$")
        v = pc.if_else(has_off, v, pc.binary_join_element_wise(v, "+00:00", ""))
        v = pc.if_else(
            pc.match_substring_regex(v, r"^\d{4}-\d\d-\d\d\+"),
            pc.replace_substring_regex(v, r"\+", " 00:00:00+", max_replacements=1),
            v,
        )
    else:
        v = pc.if_else(
            pc.match_substring_regex(v, r"^\d{4}-\d\d-\d\d$"), pc.binary_join_element_wise(v, " 00:00:00", ""), v
        )
    try:
        return v.cast(target)
    except pa.ArrowInvalid:
        return v.cast(pa.timestamp("ns", tz=target.tz)).cast(target, safe=False)


def cast(v: Value, target: pa.DataType) -> Value:
    """Spark-like cast of an Arrow array/scalar."""
    src = v.type
    if src == target:
        return v
    if pa.types.is_null(src):
        return pa.scalar(None, target) if isinstance(v, pa.Scalar) else pa.nulls(len(v), target)
    try:
        if is_string_type(src) and pa.types.is_timestamp(target):
            return string_to_timestamp(v, target)
        if is_string_type(src) and pa.types.is_date(target):
            if isinstance(v, pa.Scalar):
                return pa.scalar(dt.date.fromisoformat(v.as_py().strip()[:10]) if v.is_valid else None, target)
            return pc.utf8_slice_codeunits(pc.utf8_trim_whitespace(v), 0, 10).cast(target)
        if is_string_type(src) and pa.types.is_boolean(target):
            low = pc.utf8_lower(pc.utf8_trim_whitespace(v))
            return pc.if_else(
                pc.is_in(low, pa.array(["true", "t", "yes", "y", "1"])),
                True,
                pc.if_else(pc.is_in(low, pa.array(["false", "f", "no", "n", "0"])), False, pa.scalar(None, pa.bool_())),
            )
        if pa.types.is_timestamp(src) and pa.types.is_timestamp(target) and (src.tz is None) != (target.tz is None):
            return v.cast(pa.timestamp(src.unit, tz=target.tz)).cast(target)
        if pa.types.is_timestamp(src) and is_string_type(target):
            return pc.strftime(v, "%Y-%m-%d %H:%M:%S")
        if pa.types.is_floating(src) and pa.types.is_integer(target):
            return pc.trunc(v).cast(target)
        if pa.types.is_integer(src) and pa.types.is_floating(target):  # Spark rounds (2^63 - 1 -> 9.2e18)
            return pc.cast(v, target, safe=False)
        if pa.types.is_boolean(src) and is_string_type(target):
            return pc.if_else(v, "true", "false")
        return v.cast(target)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, ValueError) as exc:
        raise ExpressionError(f"cannot cast {src} to {target}: {exc}") from None


def unify(a: Value, b: Value) -> tuple[Value, Value]:
    """Brings two operands of a comparison or arithmetic to comparable types."""
    ta, tb = a.type, b.type
    if ta == tb or pa.types.is_null(ta) or pa.types.is_null(tb):
        if pa.types.is_null(ta) and not pa.types.is_null(tb):
            a = cast(a, tb)
        elif pa.types.is_null(tb) and not pa.types.is_null(ta):
            b = cast(b, ta)
        return a, b
    for x, y, flip in ((a, b, False), (b, a, True)):
        tx, ty = x.type, y.type
        if (pa.types.is_date(tx) or pa.types.is_timestamp(tx)) and is_string_type(ty):
            y = cast(y, tx)
            return (y, x) if flip else (x, y)
        if pa.types.is_timestamp(tx) and pa.types.is_date(ty):
            y = cast(y, tx)
            return (y, x) if flip else (x, y)
        if is_numeric_type(tx) and is_string_type(ty):
            y = cast(y, pa.float64() if pa.types.is_floating(tx) else tx)
            return (y, x) if flip else (x, y)
        if pa.types.is_decimal(tx) and pa.types.is_floating(ty):
            x = cast(x, pa.float64())
            return (y, x) if flip else (x, y)
    if pa.types.is_timestamp(ta) and pa.types.is_timestamp(tb):
        return a, cast(b, ta)
    if is_string_type(ta) and is_string_type(tb):
        return cast(a, pa.string()), cast(b, pa.string())
    return a, b


def call_compute(fn: str, *args: Value) -> Value:
    try:
        return getattr(pc, fn)(*args)
    except pa.ArrowInvalid as exc:
        if "overflow" in str(exc).lower():  # Spark's ANSI error class
            raise ExpressionError(f"[ARITHMETIC_OVERFLOW] arithmetic overflow in {fn}: {exc}") from None
        if "divide by zero" in str(exc).lower():
            raise ExpressionError(f"[DIVIDE_BY_ZERO] Division by zero in {fn}") from None
        raise ExpressionError(str(exc)) from None
    except pa.ArrowNotImplementedError:
        if fn in (
            "equal",
            "not_equal",
            "less",
            "less_equal",
            "greater",
            "greater_equal",
            "add_checked",
            "subtract_checked",
            "multiply_checked",
        ) and all(is_numeric_type(a.type) for a in args):
            return getattr(pc, fn)(*[cast(a, pa.float64()) for a in args])
        raise ExpressionError(f"cannot apply {fn} to {', '.join(str(a.type) for a in args)}") from None


def broadcast(v: Value, batch: Batch) -> pa.Array:
    if isinstance(v, pa.Scalar):
        return (
            pa.array([v.as_py()] * batch.num_rows, v.type) if not pa.types.is_null(v.type) else pa.nulls(batch.num_rows)
        )
    return v


def as_bool(v: Value) -> Value:
    if pa.types.is_boolean(v.type):
        return v
    if pa.types.is_null(v.type):
        return cast(v, pa.bool_())
    raise ExpressionError(f"expected a boolean expression, got {v.type}")
