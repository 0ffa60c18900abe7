"""Variant values as JSON text, formatted as Spark's ``to_json`` formats a variant.

:func:`decode_to_json` walks the binary encoding (:mod:`delta_pyds.variant.encoding`) and
renders it as Jackson / Java would: strings escaped as Jackson escapes them, doubles and
floats in Java's ``toString`` layout (NaN/Infinity quoted), decimals without trailing
zeros, dates and timestamps as quoted ISO strings, binary as base64, UUIDs canonical.

Guarantees: a malformed encoding (bad offsets, invalid UTF-8, out-of-range decimals or
times, nesting deeper than 500) raises
:class:`~delta_pyds.errors.MalformedVariantError`, never another exception.
Pure Python; no pyarrow, no pyspark.
"""

from __future__ import annotations

import base64
import math
import struct
import uuid
from collections.abc import Callable

from delta_pyds.variant.encoding import (
    ARRAY,
    OBJECT,
    SHORT_STR,
    T_BINARY,
    T_DATE,
    T_DECIMAL4,
    T_DECIMAL8,
    T_DECIMAL16,
    T_DOUBLE,
    T_FALSE,
    T_FLOAT,
    T_INT8,
    T_INT16,
    T_INT32,
    T_INT64,
    T_NULL,
    T_STRING,
    T_TIME,
    T_TIMESTAMP,
    T_TIMESTAMP_NANOS,
    T_TIMESTAMP_NTZ,
    T_TIMESTAMP_NTZ_NANOS,
    T_TRUE,
    T_UUID,
    VariantMetadata,
    array_layout,
    malformed,
    object_layout,
    read_int,
    read_uint,
)

__all__ = ["decode_to_json"]

# --------------------------------------------------------------------------------------
# JSON rendering
# --------------------------------------------------------------------------------------

_JSON_ESCAPES = {
    '"': '\\"',
    "\\": "\\\\",
    "\b": "\\b",
    "\t": "\\t",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
}
for _c in range(0x20):
    _JSON_ESCAPES.setdefault(chr(_c), "\\u%04X" % _c)
_JSON_ESCAPE_TABLE = str.maketrans(_JSON_ESCAPES)


def _json_string(s: str) -> str:
    """JSON string literal as Jackson writes it (Spark's to_json): control characters
    as upper-case ``\\uXXXX`` except the short forms, nothing else escaped."""
    return '"' + s.translate(_JSON_ESCAPE_TABLE) + '"'


def _java_number(digits: str, exponent: int, negative: bool) -> str:
    """Java's Double/Float.toString layout for the decimal ``0.digits × 10^exponent``
    shortest digits: plain in [1e-3, 1e7), computerized scientific otherwise."""
    digits = digits.rstrip("0") or "0"
    sci = exponent - 1  # exponent of the first digit
    sign = "-" if negative else ""
    if -3 <= sci < 7:
        if sci >= 0:
            int_part = digits[: sci + 1].ljust(sci + 1, "0")
            frac = digits[sci + 1 :] or "0"
        else:
            int_part = "0"
            frac = "0" * (-sci - 1) + digits
        return f"{sign}{int_part}.{frac}"
    return f"{sign}{digits[0]}.{digits[1:] or '0'}E{sci}"


def _shortest_digits(text: str) -> tuple[str, int]:
    """('digits', exponent) with value 0.digits × 10^exponent from a repr/'%e' string."""
    mantissa, _, exp = text.lower().partition("e")
    exp_n = int(exp) if exp else 0
    int_part, _, frac = mantissa.partition(".")
    digits = (int_part + frac).lstrip("0")
    lead_zeros = len(int_part + frac) - len((int_part + frac).lstrip("0"))
    return digits, exp_n + len(int_part) - lead_zeros


def _format_double(d: float) -> str:
    if math.isnan(d):
        return '"NaN"'
    if math.isinf(d):
        return '"Infinity"' if d > 0 else '"-Infinity"'
    if d == 0:
        return "-0.0" if math.copysign(1.0, d) < 0 else "0.0"
    digits, exponent = _shortest_digits(repr(abs(d)))
    return _java_number(digits, exponent, d < 0)


def _format_float(f: float) -> str:
    if math.isnan(f):
        return '"NaN"'
    if math.isinf(f):
        return '"Infinity"' if f > 0 else '"-Infinity"'
    if f == 0:
        return "-0.0" if math.copysign(1.0, f) < 0 else "0.0"
    a = abs(f)
    text = repr(a)
    for precision in range(1, 10):  # shortest digits that round-trip through float32
        candidate = "%.*e" % (precision - 1, a)
        try:
            round_trip = struct.unpack("<f", struct.pack("<f", float(candidate)))[0]
        except OverflowError:  # rounded up past the float32 range
            continue
        if round_trip == a:
            text = candidate
            break
    digits, exponent = _shortest_digits(text)
    return _java_number(digits, exponent, f < 0)


def _format_decimal(unscaled: int, scale: int) -> str:
    """Java ``BigDecimal.stripTrailingZeros().toPlainString()``."""
    if unscaled == 0:
        return "0"
    while unscaled % 10 == 0:
        unscaled //= 10
        scale -= 1
    sign = "-" if unscaled < 0 else ""
    digits = str(abs(unscaled))
    if scale <= 0:
        return sign + digits + "0" * (-scale)
    if len(digits) > scale:
        return f"{sign}{digits[:-scale]}.{digits[-scale:]}"
    return f"{sign}0.{'0' * (scale - len(digits))}{digits}"


def _civil_from_days(days: int) -> tuple[int, int, int]:
    """Proleptic Gregorian (year, month, day) of a day count from 1970-01-01."""
    z = days + 719468
    era = z // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    y = yoe + era * 400
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    d = doy - (153 * mp + 2) // 5 + 1
    m = mp + 3 if mp < 10 else mp - 9
    return (y + 1 if m <= 2 else y), m, d


def _format_date(days: int) -> str:
    """Java ``LocalDate.toString`` / ISO_LOCAL_DATE."""
    y, m, d = _civil_from_days(days)
    if abs(y) < 1000:
        year = ("-" if y < 0 else "") + "%04d" % abs(y)
    else:
        year = ("+" if y > 9999 else "") + str(y)
    return f"{year}-{m:02d}-{d:02d}"


def _format_time_of_day(nanos: int) -> str:
    """Java ISO_LOCAL_TIME: HH:mm:ss plus the fraction without trailing zeros."""
    seconds, frac = divmod(nanos, 1_000_000_000)
    h, rem = divmod(seconds, 3600)
    mi, s = divmod(rem, 60)
    text = f"{h:02d}:{mi:02d}:{s:02d}"
    if frac:
        text += "." + ("%09d" % frac).rstrip("0")
    return text


def _format_local(nanos_since_epoch: int) -> str:
    days, nanos = divmod(nanos_since_epoch, 86_400_000_000_000)
    return _format_date(days) + " " + _format_time_of_day(nanos)


_UTC_NAMES = {"UTC", "Etc/UTC", "Z", "GMT", "Etc/GMT", "+00:00", "UTC+0", "Etc/Universal"}


def _utc_offset_seconds(nanos_since_epoch: int, zone_id: str) -> int:
    if zone_id in _UTC_NAMES:
        return 0
    import datetime
    from zoneinfo import ZoneInfo

    try:
        instant = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc) + datetime.timedelta(
            microseconds=nanos_since_epoch // 1000
        )
        offset = instant.astimezone(ZoneInfo(zone_id)).utcoffset()
    except (OverflowError, ValueError):
        return 0  # outside Python's datetime range: fall back to UTC
    return int(offset.total_seconds()) if offset is not None else 0


def _format_instant(nanos_since_epoch: int, zone_id: str) -> str:
    offset = _utc_offset_seconds(nanos_since_epoch, zone_id)
    local = _format_local(nanos_since_epoch + offset * 1_000_000_000)
    sign = "-" if offset < 0 else "+"
    hours, minutes = divmod(abs(offset) // 60, 60)
    return f"{local}{sign}{hours:02d}:{minutes:02d}"


def _to_json(value: bytes, pos: int, meta: VariantMetadata, out: list, zone_id: str, depth: int) -> None:
    if pos >= len(value):
        raise malformed(f"value at byte {pos} is past the end ({len(value)} bytes)")
    if depth > 500:
        raise malformed("nesting too deep")
    byte = value[pos]
    basic = byte & 0x3
    info = byte >> 2
    if basic == SHORT_STR:
        end = pos + 1 + info
        if end > len(value):
            raise malformed(f"short string at byte {pos} runs past the end")
        out.append(_json_string(_utf8(value[pos + 1 : end])))
    elif basic == OBJECT:
        _object_to_json(value, pos, meta, out, zone_id, depth)
    elif basic == ARRAY:
        _array_to_json(value, pos, meta, out, zone_id, depth)
    else:
        out.append(_primitive_json(value, pos, info, zone_id))


def _object_to_json(value: bytes, pos: int, meta: VariantMetadata, out: list, zone_id: str, depth: int) -> None:
    num, id_size, offset_size, id_start, offset_start, data_start = object_layout(value, pos)
    out.append("{")
    for i in range(num):
        if i:
            out.append(",")
        field_id = read_uint(value, id_start + i * id_size, id_size, "object field id")
        offset = read_uint(value, offset_start + i * offset_size, offset_size, "object field offset")
        out.append(_json_string(meta.key(field_id)))
        out.append(":")
        _to_json(value, data_start + offset, meta, out, zone_id, depth + 1)
    out.append("}")


def _array_to_json(value: bytes, pos: int, meta: VariantMetadata, out: list, zone_id: str, depth: int) -> None:
    num, offset_size, offset_start, data_start = array_layout(value, pos)
    out.append("[")
    for i in range(num):
        if i:
            out.append(",")
        offset = read_uint(value, offset_start + i * offset_size, offset_size, "array offset")
        _to_json(value, data_start + offset, meta, out, zone_id, depth + 1)
    out.append("]")


_INT_TYPES = {T_INT8: (1, "int8"), T_INT16: (2, "int16"), T_INT32: (4, "int32"), T_INT64: (8, "int64")}
_LITERALS = {T_NULL: "null", T_TRUE: "true", T_FALSE: "false"}


def _primitive_json(value: bytes, pos: int, info: int, zone_id: str) -> str:
    """The JSON of the primitive at ``pos`` whose type id is ``info`` (a flat dispatch: the
    literals, then the renderer of the type id in :data:`_PRIMITIVE_JSON`)."""
    if info in _LITERALS:
        return _LITERALS[info]
    render = _PRIMITIVE_JSON.get(info)
    if render is None:
        raise malformed(f"unknown primitive type id {info} at byte {pos}")
    return render(value, pos, info, zone_id)


# Each renderer below is called as render(value, pos, info, zone_id) for the primitive at
# ``pos`` and returns its JSON text.


def _int_json(value: bytes, pos: int, info: int, zone_id: str) -> str:
    width, what = _INT_TYPES[info]
    return str(read_int(value, pos + 1, width, what))


def _double_json(value: bytes, pos: int, info: int, zone_id: str) -> str:
    read_uint(value, pos + 1, 8, "double")
    return _format_double(struct.unpack_from("<d", value, pos + 1)[0])


def _float_json(value: bytes, pos: int, info: int, zone_id: str) -> str:
    read_uint(value, pos + 1, 4, "float")
    return _format_float(struct.unpack_from("<f", value, pos + 1)[0])


def _date_json(value: bytes, pos: int, info: int, zone_id: str) -> str:
    return '"' + _format_date(read_int(value, pos + 1, 4, "date")) + '"'


def _timestamp_json(value: bytes, pos: int, info: int, zone_id: str) -> str:
    return '"' + _format_instant(read_int(value, pos + 1, 8, "timestamp") * 1000, zone_id) + '"'


def _timestamp_ntz_json(value: bytes, pos: int, info: int, zone_id: str) -> str:
    return '"' + _format_local(read_int(value, pos + 1, 8, "timestamp_ntz") * 1000) + '"'


def _timestamp_nanos_json(value: bytes, pos: int, info: int, zone_id: str) -> str:
    return '"' + _format_instant(read_int(value, pos + 1, 8, "timestamp"), zone_id) + '"'


def _timestamp_ntz_nanos_json(value: bytes, pos: int, info: int, zone_id: str) -> str:
    return '"' + _format_local(read_int(value, pos + 1, 8, "timestamp_ntz")) + '"'


def _time_json(value: bytes, pos: int, info: int, zone_id: str) -> str:
    micros = read_int(value, pos + 1, 8, "time")
    if not 0 <= micros < 86_400_000_000:
        raise malformed(f"time of day {micros} µs out of range at byte {pos}")
    return '"' + _format_time_of_day(micros * 1000) + '"'


def _binary_json(value: bytes, pos: int, info: int, zone_id: str) -> str:
    return '"' + base64.b64encode(_sized_bytes(value, pos, "binary")).decode("ascii") + '"'


def _string_json(value: bytes, pos: int, info: int, zone_id: str) -> str:
    return _json_string(_utf8(_sized_bytes(value, pos, "string")))


def _uuid_json(value: bytes, pos: int, info: int, zone_id: str) -> str:
    if pos + 17 > len(value):
        raise malformed(f"uuid at byte {pos} runs past the end")
    return '"' + str(uuid.UUID(bytes=bytes(value[pos + 1 : pos + 17]))) + '"'


def _decimal_json(value: bytes, pos: int, info: int, zone_id: str) -> str:
    width, max_precision = {T_DECIMAL4: (4, 9), T_DECIMAL8: (8, 18), T_DECIMAL16: (16, 38)}[info]
    scale = read_uint(value, pos + 1, 1, "decimal scale")
    unscaled = read_int(value, pos + 2, width, "decimal")
    if scale > max_precision or abs(unscaled) >= 10**max_precision:
        raise malformed(f"decimal out of range (scale {scale}) at byte {pos}")
    return _format_decimal(unscaled, scale)


# primitive type id -> its renderer (null, true and false are the constants in _LITERALS)
_PRIMITIVE_JSON: dict[int, Callable[[bytes, int, int, str], str]] = {
    **dict.fromkeys(_INT_TYPES, _int_json),
    T_DOUBLE: _double_json,
    T_FLOAT: _float_json,
    **dict.fromkeys((T_DECIMAL4, T_DECIMAL8, T_DECIMAL16), _decimal_json),
    T_DATE: _date_json,
    T_TIMESTAMP: _timestamp_json,
    T_TIMESTAMP_NTZ: _timestamp_ntz_json,
    T_TIMESTAMP_NANOS: _timestamp_nanos_json,
    T_TIMESTAMP_NTZ_NANOS: _timestamp_ntz_nanos_json,
    T_TIME: _time_json,
    T_BINARY: _binary_json,
    T_STRING: _string_json,
    T_UUID: _uuid_json,
}


def _sized_bytes(value: bytes, pos: int, what: str) -> bytes:
    """The bytes of a binary or long string primitive (a 4-byte length, then the data)."""
    size = read_uint(value, pos + 1, 4, f"{what} length")
    if pos + 5 + size > len(value):
        raise malformed(f"{what} at byte {pos} runs past the end")
    return value[pos + 5 : pos + 5 + size]


def _utf8(data: bytes) -> str:
    try:
        return bytes(data).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise malformed("string is not valid UTF-8") from exc


def decode_to_json(value: bytes, metadata: bytes, *, zone_id: str = "UTC") -> str:
    """The Variant (``value``, ``metadata``) as JSON text, formatted like Spark's
    ``to_json`` on a variant: object fields in stored order (sorted by key),
    doubles/floats as Java prints them (``1.0E20``; NaN/Infinity quoted), decimals
    without trailing zeros, dates/timestamps as quoted ISO strings (timestamps with
    time zone rendered in ``zone_id``, default UTC, with a ``+HH:MM`` offset), binary
    as quoted base64, UUIDs in canonical form. Types Spark does not know (time,
    nanosecond timestamps) use the same layouts.

    Raises :class:`~delta_pyds.errors.MalformedVariantError` for a malformed encoding.
    """
    value = bytes(value)
    meta = VariantMetadata(bytes(metadata))
    out: list[str] = []
    _to_json(value, 0, meta, out, zone_id, 0)
    return "".join(out)
