"""Partition values: the protocol's string serialization to and from typed Arrow arrays.

Guarantees: ``parse_partition_values`` turns a column of serialized partition values
into an Arrow array of the partition column's type, vectorised; ``None`` and the empty
string are null; timestamps are read as UTC whether written as
``YYYY-MM-DD HH:MM:SS[.ffffff]`` or ISO-8601 with ``Z``/offset; booleans are exactly
``true``/``false`` in any case; values that do not parse raise
:class:`CorruptLogError` naming the column (never a default such as false). ``serialize_partition_value``
writes the form delta-spark writes. Partition directory names (Hive style, which the
log never relies on) are spelled once here: :data:`HIVE_DEFAULT_PARTITION` for a null or
empty value, :func:`escape_path_name` over :data:`HIVE_ESCAPED_CHARACTERS` (and
:func:`escape_directory_values`, the same over an Arrow column), and its inverse
:func:`unescape_path_name`.
"""

from __future__ import annotations

import datetime as dt
import decimal
import re
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from delta_pyds.errors import CorruptLogError, SchemaError
from delta_pyds.protocol.schema import (
    ArrayType,
    DataType,
    DecimalType,
    MapType,
    PrimitiveType,
    StructField,
    StructType,
    is_void_type,
    to_arrow_type,
)

_OFFSET_RE = r"(Z|z|[+-]\d\d(:?\d\d)?)$"

HIVE_DEFAULT_PARTITION = "__HIVE_DEFAULT_PARTITION__"
"""The directory name of a null or empty partition value (Hive's and Spark's)."""

HIVE_ESCAPED_CHARACTERS = frozenset(chr(c) for c in range(0x20)) | frozenset("\"#%'*/:=?\\\x7f{[]^")
"""Characters written as ``%XX`` in partition directory names: Spark's
(``ExternalCatalogUtils.charToEscape``: 0x01-0x1F and ``"#%'*/:=?\\`` DEL ``{[]^``) plus NUL,
which Spark leaves but no filesystem accepts in a name (Spark's own write of such a value
fails). The log keeps the real value in ``partitionValues``."""


def escape_path_name(text: str) -> str:
    """``text`` as a partition directory name component (column name or value)."""
    return "".join(f"%{ord(ch):02X}" if ch in HIVE_ESCAPED_CHARACTERS else ch for ch in text)


# '%' first, so that the escapes added after it stay intact
_ESCAPE_ORDER = sorted(HIVE_ESCAPED_CHARACTERS, key=lambda ch: (ch != "%", ch))
_ESCAPED_TEXT = re.compile(r"%([0-9A-Fa-f]{2})")


def escape_directory_values(values: pa.Array) -> pa.Array:
    """Serialized partition values as :func:`escape_path_name` spells them in a directory
    name, vectorised; nulls and empty strings as :data:`HIVE_DEFAULT_PARTITION`."""
    out = values.cast(pa.string())
    for ch in _ESCAPE_ORDER:
        out = pc.replace_substring(out, ch, f"%{ord(ch):02X}")
    out = pc.if_else(pc.equal(out, ""), pa.scalar(None, pa.string()), out)
    return pc.fill_null(out, HIVE_DEFAULT_PARTITION)


def unescape_path_name(text: str) -> str:
    """The inverse of :func:`escape_path_name` (Spark's ``ExternalCatalogUtils.unescapePathName``):
    every ``%XX`` becomes the character."""
    return _ESCAPED_TEXT.sub(lambda m: chr(int(m.group(1), 16)), text)


def parse_partition_values(values: pa.Array, dtype: DataType, *, column: str = "?") -> pa.Array:
    """Serialized partition values (strings, possibly null) -> typed Arrow array."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if pa.types.is_null(values.type):
        return pa.nulls(len(values), to_arrow_type(dtype))
    values = values.cast(pa.string())
    values = pc.if_else(pc.equal(values, ""), pa.scalar(None, pa.string()), values)
    target = to_arrow_type(dtype)
    try:
        if isinstance(dtype, PrimitiveType) and dtype.name in ("timestamp", "timestamp_ntz"):
            return _parse_timestamps(values, dtype.name == "timestamp")
        if isinstance(dtype, PrimitiveType) and dtype.name == "binary":
            return values.cast(pa.binary())
        if isinstance(dtype, PrimitiveType) and dtype.name == "boolean":
            return _parse_booleans(values, column)
        if isinstance(dtype, DecimalType):
            return _parse_decimals(values, dtype)
        return values.cast(target)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, decimal.InvalidOperation, ValueError) as exc:
        raise CorruptLogError(
            f"partition values of column {column!r} are not valid {dtype.simple_string()} values: {exc}"
        ) from None


def _parse_booleans(values: pa.Array, column: str) -> pa.Array:
    """``true``/``false`` in any case (as Spark casts strings); anything else is refused,
    never read as false."""
    lowered = pc.utf8_lower(values)
    valid = pc.or_kleene(pc.equal(lowered, "true"), pc.equal(lowered, "false"))
    if not pc.all(pc.fill_null(valid, True), min_count=0).as_py():  # empty: all valid (not null)
        bad = values.filter(pc.invert(pc.fill_null(valid, True)))[0].as_py()
        raise CorruptLogError(
            f"partition values of column {column!r} are not valid boolean values: {bad!r} is neither true nor false"
        )
    return pc.equal(lowered, "true")


def _parse_timestamps(values: pa.Array, utc: bool) -> pa.Array:
    values = pc.replace_substring(values, "T", " ")
    has_offset = pc.match_substring_regex(values, _OFFSET_RE)
    if utc:
        normalized = pc.replace_substring_regex(values, r"[Zz]$", "+00:00")
        normalized = pc.if_else(has_offset, normalized, pc.binary_join_element_wise(normalized, "+00:00", ""))
        return _cast_fraction(normalized, pa.timestamp("us", tz="UTC"))
    stripped = pc.replace_substring_regex(values, _OFFSET_RE, "")
    return _cast_fraction(stripped, pa.timestamp("us"))


def _cast_fraction(values: pa.Array, target: pa.DataType) -> pa.Array:
    # Arrow parses up to nanoseconds; parse at ns then truncate to us (delta-spark
    # writes at most microseconds).
    ns = pa.timestamp("ns", tz=target.tz)
    try:
        return values.cast(target)
    except pa.ArrowInvalid:
        return values.cast(ns).cast(target, safe=False)


def _parse_decimals(values: pa.Array, dtype: DecimalType) -> pa.Array:
    try:
        return values.cast(
            pa.decimal128(dtype.precision, dtype.scale)
            if dtype.precision <= 38
            else pa.decimal256(dtype.precision, dtype.scale)
        )
    except pa.ArrowInvalid:
        quantum = decimal.Decimal(1).scaleb(-dtype.scale)
        py = [None if v is None else decimal.Decimal(v).quantize(quantum) for v in values.to_pylist()]
        return pa.array(py, pa.decimal128(dtype.precision, dtype.scale))


def serialize_partition_value(value: Any, dtype: DataType) -> str | None:
    """A Python value of a partition column -> the string stored in ``partitionValues``."""
    if value is None:
        return None
    if isinstance(dtype, PrimitiveType):
        if dtype.name == "boolean":
            return "true" if value else "false"
        if dtype.name == "timestamp":
            if isinstance(value, dt.datetime):
                stamp: dt.datetime = value
                if stamp.tzinfo is not None:
                    stamp = stamp.astimezone(dt.timezone.utc).replace(tzinfo=None)
                return stamp.strftime("%Y-%m-%d %H:%M:%S.%f")
        if dtype.name == "timestamp_ntz" and isinstance(value, dt.datetime):
            return value.strftime("%Y-%m-%d %H:%M:%S.%f")
        if dtype.name == "date" and isinstance(value, dt.date):
            return value.isoformat()
        if dtype.name == "binary" and isinstance(value, (bytes, bytearray)):
            return bytes(value).decode("utf-8", errors="surrogateescape")
        if dtype.name in ("float", "double"):
            return repr(float(value)) if value == value else "NaN"
    if isinstance(dtype, DecimalType):
        return format(decimal.Decimal(value), "f")
    return str(value)


def partition_field(schema: StructType, name: str, *, argument: str, missing: str) -> StructField:
    """The field of ``schema`` a partition column ``name`` names; a :class:`SchemaError`
    naming ``argument`` when there is none (``missing`` says what was searched) or when its
    type cannot be a partition column (struct, array, map, variant, void)."""
    f = schema.get(name)
    if f is None:
        raise SchemaError(f"{argument}: column {name!r} is not in {missing} (columns: {', '.join(schema.names)})")
    if (
        isinstance(f.type, (StructType, ArrayType, MapType))
        or is_void_type(f.type)
        or (isinstance(f.type, PrimitiveType) and f.type.name == "variant")
    ):
        raise SchemaError(
            f"{argument}: column {f.name} has type {f.type.simple_string()}, which cannot be a partition column"
        )
    return f
