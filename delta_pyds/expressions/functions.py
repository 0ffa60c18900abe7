"""The SQL functions the expression evaluator supports: :data:`FUNCTIONS` maps a
lower-case name to an implementation ``fn(batch, *args)`` over Arrow arrays/scalars
(string, date/time part, null handling, ``current_date()`` / ``current_timestamp()``
for column defaults, ...).

Guarantees: a name absent from :data:`FUNCTIONS` is refused at parse time; arguments a
function needs as literals (``substring`` positions, ``date_format`` patterns) and
unsupported pattern letters raise :class:`~delta_pyds.errors.ExpressionError`.
Dates and times are evaluated in UTC.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable

import pyarrow as pa
import pyarrow.compute as pc

from delta_pyds.errors import ExpressionError
from delta_pyds.expressions.coercion import (
    Batch,
    Value,
    as_bool,
    broadcast,
    call_compute,
    cast,
    is_string_type,
    unify,
)


def _f_coalesce(batch: Batch, *args: Value) -> Value:
    target = next((a.type for a in args if not pa.types.is_null(a.type)), pa.null())
    return pc.coalesce(*[cast(a, target) for a in args])


def _f_concat(batch: Batch, *args: Value) -> Value:
    strs = [cast(a, pa.string()) for a in args]
    return pc.binary_join_element_wise(*strs, "")


def _f_substring(batch: Batch, s: Value, pos: Value, length: Value | None = None) -> Value:
    s = cast(s, pa.string())
    if not isinstance(pos, pa.Scalar) or (length is not None and not isinstance(length, pa.Scalar)):
        raise ExpressionError("substring() needs literal positions")
    p = pos.as_py()
    n = length.as_py() if length is not None else None
    if p is None or (length is not None and n is None):
        return pa.nulls(batch.num_rows, pa.string())
    if p > 0:
        start = p - 1
    elif p == 0:
        start = 0
    else:
        start = p
    if n is None:
        return pc.utf8_slice_codeunits(s, start)
    if n <= 0:
        return pc.if_else(pc.is_valid(s), "", pa.scalar(None, pa.string()))
    if start < 0:
        stop = start + n
        return pc.utf8_slice_codeunits(s, start, stop) if stop < 0 else pc.utf8_slice_codeunits(s, start)
    return pc.utf8_slice_codeunits(s, start, start + n)


def _as_time(v: Value) -> Value:
    if is_string_type(v.type):
        return cast(v, pa.timestamp("us", tz="UTC"))
    return v


def _part(fn: str) -> Callable[[Batch, Value], Value]:
    def run(batch: Batch, v: Value) -> Value:
        return getattr(pc, fn)(_as_time(v)).cast(pa.int32())

    return run


_JAVA_FORMAT = [
    ("yyyy", "%Y"),
    ("yy", "%y"),
    ("MM", "%m"),
    ("dd", "%d"),
    ("HH", "%H"),
    ("mm", "%M"),
    ("ss", "%S"),
    ("SSSSSS", "%f"),
    ("EEE", "%a"),
    ("MMM", "%b"),
]


def _f_date_format(batch: Batch, v: Value, fmt: Value) -> Value:
    if not isinstance(fmt, pa.Scalar):
        raise ExpressionError("date_format() needs a literal format")
    text, out, i = fmt.as_py(), "", 0
    while i < len(text):
        for java, c in _JAVA_FORMAT:
            if text.startswith(java, i):
                out += c
                i += len(java)
                break
        else:
            ch = text[i]
            if ch.isalpha():
                raise ExpressionError(f"date_format pattern letter {ch!r} is not supported")
            if ch == "'":
                j = text.index("'", i + 1)
                out += text[i + 1 : j].replace("%", "%%")
                i = j + 1
                continue
            out += "%%" if ch == "%" else ch
            i += 1
    v = _as_time(v)
    if pa.types.is_date(v.type):
        v = v.cast(pa.timestamp("s"))
    return pc.strftime(v, out)


def _f_to_date(batch: Batch, v: Value, fmt: Value | None = None) -> Value:
    if fmt is not None:
        raise ExpressionError("to_date() with a format is not supported")
    if pa.types.is_timestamp(v.type):
        return v.cast(pa.date32())
    return cast(v, pa.date32())


def _f_if(batch: Batch, cond: Value, a: Value, b: Value) -> Value:
    target = a.type if not pa.types.is_null(a.type) else b.type
    return pc.if_else(pc.fill_null(as_bool(cond), False), cast(a, target), cast(b, target))


def _f_nullif(batch: Batch, a: Value, b: Value) -> Value:
    x, y = unify(a, b)
    return pc.if_else(pc.fill_null(pc.equal(x, y), False), pa.scalar(None, a.type), a)


def _f_date_add(batch: Batch, d: Value, n: Value) -> Value:
    d = cast(d, pa.date32()) if not pa.types.is_date(d.type) else d
    return pc.add_checked(d.cast(pa.int32()), cast(n, pa.int32())).cast(pa.date32())


def _f_date_sub(batch: Batch, d: Value, n: Value) -> Value:
    d = cast(d, pa.date32()) if not pa.types.is_date(d.type) else d
    return pc.subtract_checked(d.cast(pa.int32()), cast(n, pa.int32())).cast(pa.date32())


def _f_datediff(batch: Batch, a: Value, b: Value) -> Value:
    a = cast(a, pa.date32()) if not pa.types.is_date(a.type) else a
    b = cast(b, pa.date32()) if not pa.types.is_date(b.type) else b
    return pc.subtract(a.cast(pa.int32()), b.cast(pa.int32()))


def _f_length(batch: Batch, v: Value) -> Value:
    if pa.types.is_binary(v.type):
        return pc.binary_length(v).cast(pa.int32())
    return pc.utf8_length(cast(v, pa.string())).cast(pa.int32())


def _f_round(batch: Batch, v: Value, digits: Value | None = None) -> Value:
    nd = digits.as_py() if digits is not None else 0
    if pa.types.is_integer(v.type) and nd >= 0:
        return v
    return pc.round(v, ndigits=nd, round_mode="half_up")


def _now(batch: Batch) -> Value:
    return pa.scalar(dt.datetime.now(dt.timezone.utc), pa.timestamp("us", tz="UTC"))


def _today(batch: Batch) -> Value:
    return pa.scalar(dt.datetime.now(dt.timezone.utc).date(), pa.date32())


FUNCTIONS: dict[str, Callable[..., Value]] = {
    "current_timestamp": _now,
    "now": _now,
    "current_date": _today,
    "curdate": _today,
    "abs": lambda b, v: call_compute("abs_checked", v),
    "coalesce": _f_coalesce,
    "nvl": _f_coalesce,
    "ifnull": _f_coalesce,
    "lower": lambda b, v: pc.utf8_lower(cast(v, pa.string())),
    "lcase": lambda b, v: pc.utf8_lower(cast(v, pa.string())),
    "upper": lambda b, v: pc.utf8_upper(cast(v, pa.string())),
    "ucase": lambda b, v: pc.utf8_upper(cast(v, pa.string())),
    "length": _f_length,
    "char_length": _f_length,
    "character_length": _f_length,
    "trim": lambda b, v: pc.utf8_trim(cast(v, pa.string()), " "),
    "ltrim": lambda b, v: pc.utf8_ltrim(cast(v, pa.string()), " "),
    "rtrim": lambda b, v: pc.utf8_rtrim(cast(v, pa.string()), " "),
    "substring": _f_substring,
    "substr": _f_substring,
    "concat": _f_concat,
    "year": _part("year"),
    "month": _part("month"),
    "day": _part("day"),
    "dayofmonth": _part("day"),
    "hour": _part("hour"),
    "minute": _part("minute"),
    "second": _part("second"),
    "quarter": _part("quarter"),
    "dayofyear": _part("day_of_year"),
    "date_format": _f_date_format,
    "to_date": _f_to_date,
    "date": lambda b, v: _f_to_date(b, v),
    "timestamp": lambda b, v: cast(v, pa.timestamp("us", tz="UTC")),
    "date_add": _f_date_add,
    "date_sub": _f_date_sub,
    "datediff": _f_datediff,
    "isnull": lambda b, v: pc.is_null(broadcast(v, b)),
    "isnotnull": lambda b, v: pc.is_valid(broadcast(v, b)),
    "if": _f_if,
    "iff": _f_if,
    "nullif": _f_nullif,
    "greatest": lambda b, *vs: pc.max_element_wise(*vs, skip_nulls=True),
    "least": lambda b, *vs: pc.min_element_wise(*vs, skip_nulls=True),
    "round": _f_round,
    "startswith": lambda b, s, p: pc.starts_with(cast(s, pa.string()), p.as_py()),
    "endswith": lambda b, s, p: pc.ends_with(cast(s, pa.string()), p.as_py()),
    "contains": lambda b, s, p: pc.match_substring(cast(s, pa.string()), p.as_py()),
}
