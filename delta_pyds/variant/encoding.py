"""Variant columns: from the physical Parquet layout to the Arrow form Spark expects.

A Delta ``variant`` column is stored in Parquet as a group (read by pyarrow as a
struct) in one of two layouts:

* **unshredded**: ``struct<value: binary, metadata: binary>`` -- the Variant binary
  encoding (apache/parquet-format ``VariantEncoding.md``) as is;
* **shredded** (apache/parquet-format ``VariantShredding.md``, Delta feature
  ``variantShredding``): ``struct<metadata: binary, value: binary (optional),
  typed_value: ... (optional)>`` where ``typed_value`` is a primitive column, a
  struct of shredded fields (each a ``struct<value, typed_value>`` group) or a list
  of shredded elements, recursively.

Spark's Python Data Source API expects a ``VariantType`` column as the Arrow type
:data:`VARIANT_ARROW_TYPE`, which is exactly what
``pyspark.sql.pandas.types.to_arrow_schema`` produces for ``VariantType()``::

    struct<value: binary not null,
           metadata: binary not null (field metadata {b"variant": b"true"})>

(``value`` first, then ``metadata``; the ``variant`` tag on ``metadata`` is how
pyspark recognises the struct as a variant).

Public API:

* :func:`reconstruct_variant` -- one physical variant column (unshredded or shredded)
  to :data:`VARIANT_ARROW_TYPE`; unshredded data keeps its binary buffers (no copy).
* :func:`reconstruct_nested` -- the same applied wherever a target Arrow type holds
  a variant (inside structs, lists and maps).
* :func:`decode_to_json` -- a Variant (value, metadata) as JSON text, formatted as
  Spark's ``to_json`` does.
* :func:`is_variant_type` -- whether an Arrow type is Spark's variant struct.

This module never imports pyspark.
"""

from __future__ import annotations

import base64
import math
import struct
import uuid
from typing import Callable, Optional

import pyarrow as pa
import pyarrow.compute as pc

from delta_pyds.errors import DataFileError

__all__ = [
    "VARIANT_ARROW_TYPE",
    "MalformedVariantError",
    "reconstruct_variant",
    "reconstruct_nested",
    "decode_to_json",
    "is_variant_type",
]

#: The Arrow type Spark's Python Data Source API expects for ``VariantType``
#: (``pyspark.sql.pandas.types.to_arrow_type(VariantType())``).
VARIANT_ARROW_TYPE = pa.struct(
    [
        pa.field("value", pa.binary(), nullable=False),
        pa.field("metadata", pa.binary(), nullable=False, metadata={b"variant": b"true"}),
    ]
)


class MalformedVariantError(DataFileError):
    """Variant data in a data file is malformed: a bad Variant binary encoding, or
    shredded columns that break the Parquet Variant shredding specification."""


# --------------------------------------------------------------------------------------
# Variant binary encoding constants
# --------------------------------------------------------------------------------------

_PRIMITIVE, _SHORT_STR, _OBJECT, _ARRAY = 0, 1, 2, 3

_T_NULL = 0
_T_TRUE = 1
_T_FALSE = 2
_T_INT8 = 3
_T_INT16 = 4
_T_INT32 = 5
_T_INT64 = 6
_T_DOUBLE = 7
_T_DECIMAL4 = 8
_T_DECIMAL8 = 9
_T_DECIMAL16 = 10
_T_DATE = 11
_T_TIMESTAMP = 12  # micros, adjusted to UTC
_T_TIMESTAMP_NTZ = 13  # micros, no time zone
_T_FLOAT = 14
_T_BINARY = 15
_T_STRING = 16
_T_TIME = 17  # micros since midnight, no time zone
_T_TIMESTAMP_NANOS = 18  # nanos, adjusted to UTC
_T_TIMESTAMP_NTZ_NANOS = 19  # nanos, no time zone
_T_UUID = 20  # 16 bytes, big-endian

_VARIANT_NULL = b"\x00"
_MAX_SHORT_STR = 63
_MAX_DECIMAL_PRECISION = 38

# Fixed total sizes (header included) of the fixed-width primitive types.
_FIXED_SIZES = {
    _T_NULL: 1,
    _T_TRUE: 1,
    _T_FALSE: 1,
    _T_INT8: 2,
    _T_INT16: 3,
    _T_INT32: 5,
    _T_INT64: 9,
    _T_DOUBLE: 9,
    _T_DECIMAL4: 6,
    _T_DECIMAL8: 10,
    _T_DECIMAL16: 18,
    _T_DATE: 5,
    _T_TIMESTAMP: 9,
    _T_TIMESTAMP_NTZ: 9,
    _T_FLOAT: 5,
    _T_TIME: 9,
    _T_TIMESTAMP_NANOS: 9,
    _T_TIMESTAMP_NTZ_NANOS: 9,
    _T_UUID: 17,
}


# View types only exist in newer pyarrow versions.
_is_binary_view = getattr(pa.types, "is_binary_view", lambda t: False)
_is_string_view = getattr(pa.types, "is_string_view", lambda t: False)


def _primitive_header(type_id: int) -> int:
    return (type_id << 2) | _PRIMITIVE


def _int_size(n: int) -> int:
    """Smallest unsigned little-endian width (1..4 bytes) holding ``n``."""
    if n <= 0xFF:
        return 1
    if n <= 0xFFFF:
        return 2
    if n <= 0xFFFFFF:
        return 3
    return 4


def _malformed(what: str) -> MalformedVariantError:
    return MalformedVariantError(f"malformed Variant: {what}")


def _read_uint(buf: bytes, pos: int, size: int, what: str) -> int:
    end = pos + size
    if pos < 0 or end > len(buf):
        raise _malformed(f"{what} at byte {pos} runs past the end ({len(buf)} bytes)")
    return int.from_bytes(buf[pos:end], "little", signed=False)


def _read_int(buf: bytes, pos: int, size: int, what: str) -> int:
    end = pos + size
    if pos < 0 or end > len(buf):
        raise _malformed(f"{what} at byte {pos} runs past the end ({len(buf)} bytes)")
    return int.from_bytes(buf[pos:end], "little", signed=True)


# --------------------------------------------------------------------------------------
# Metadata (the key dictionary)
# --------------------------------------------------------------------------------------


class _Metadata:
    """A parsed Variant metadata dictionary, extensible with new keys (appended, so
    existing field ids stay valid)."""

    __slots__ = ("raw", "keys", "index", "original_size", "_extended")

    def __init__(self, raw: bytes):
        self.raw = raw
        if len(raw) < 1:
            raise _malformed("empty metadata")
        header = raw[0]
        version = header & 0x0F
        if version != 1:
            raise _malformed(f"unsupported metadata version {version} (expected 1)")
        offset_size = ((header >> 6) & 0x3) + 1
        dict_size = _read_uint(raw, 1, offset_size, "metadata dictionary size")
        offsets_start = 1 + offset_size
        strings_start = offsets_start + (dict_size + 1) * offset_size
        if strings_start > len(raw):
            raise _malformed(
                f"metadata dictionary of {dict_size} keys does not fit in {len(raw)} bytes"
            )
        keys: list[str] = []
        previous = _read_uint(raw, offsets_start, offset_size, "metadata offset")
        if previous != 0:
            raise _malformed("first metadata dictionary offset is not 0")
        for i in range(dict_size):
            nxt = _read_uint(raw, offsets_start + (i + 1) * offset_size, offset_size, "metadata offset")
            if nxt < previous or strings_start + nxt > len(raw):
                raise _malformed(f"metadata dictionary offset {i + 1} ({nxt}) is out of order or out of range")
            try:
                keys.append(raw[strings_start + previous : strings_start + nxt].decode("utf-8"))
            except UnicodeDecodeError as exc:
                raise _malformed(f"metadata key {i} is not valid UTF-8") from exc
            previous = nxt
        self.keys = keys
        index: dict[str, int] = {}
        for i, key in enumerate(keys):
            index.setdefault(key, i)
        self.index = index
        self.original_size = len(keys)
        self._extended: Optional[bytes] = None

    def key(self, field_id: int) -> str:
        if field_id >= len(self.keys):
            raise _malformed(
                f"field id {field_id} is out of range of the metadata dictionary ({len(self.keys)} keys)"
            )
        return self.keys[field_id]

    def id_for(self, key: str) -> int:
        """The dictionary id of ``key``, appending the key if the dictionary lacks it."""
        field_id = self.index.get(key)
        if field_id is None:
            field_id = len(self.keys)
            self.keys.append(key)
            self.index[key] = field_id
            self._extended = None
        return field_id

    def encoded(self) -> bytes:
        """The metadata bytes: the original ones unless keys were appended."""
        if len(self.keys) == self.original_size:
            return self.raw
        if self._extended is None:
            encoded = [k.encode("utf-8") for k in self.keys]
            total = sum(len(k) for k in encoded)
            size = _int_size(max(total, len(encoded)))
            # version 1, sorted_strings = 0 (appended keys break any prior order)
            parts = [bytes([1 | ((size - 1) << 6)]), len(encoded).to_bytes(size, "little")]
            offset = 0
            for k in encoded:
                parts.append(offset.to_bytes(size, "little"))
                offset += len(k)
            parts.append(offset.to_bytes(size, "little"))
            parts.extend(encoded)
            self._extended = b"".join(parts)
        return self._extended


# --------------------------------------------------------------------------------------
# Reading Variant values
# --------------------------------------------------------------------------------------


def _object_layout(value: bytes, pos: int) -> tuple[int, int, int, int, int, int]:
    """(num_fields, id_size, offset_size, id_start, offset_start, data_start)."""
    header = value[pos] >> 2
    is_large = (header >> 4) & 0x1
    id_size = ((header >> 2) & 0x3) + 1
    offset_size = (header & 0x3) + 1
    size_bytes = 4 if is_large else 1
    num = _read_uint(value, pos + 1, size_bytes, "object size")
    id_start = pos + 1 + size_bytes
    offset_start = id_start + num * id_size
    data_start = offset_start + (num + 1) * offset_size
    if data_start > len(value):
        raise _malformed(f"object header of {num} fields at byte {pos} runs past the end")
    return num, id_size, offset_size, id_start, offset_start, data_start


def _array_layout(value: bytes, pos: int) -> tuple[int, int, int, int]:
    """(num_elements, offset_size, offset_start, data_start)."""
    header = value[pos] >> 2
    is_large = (header >> 2) & 0x1
    offset_size = (header & 0x3) + 1
    size_bytes = 4 if is_large else 1
    num = _read_uint(value, pos + 1, size_bytes, "array size")
    offset_start = pos + 1 + size_bytes
    data_start = offset_start + (num + 1) * offset_size
    if data_start > len(value):
        raise _malformed(f"array header of {num} elements at byte {pos} runs past the end")
    return num, offset_size, offset_start, data_start


def _value_size(value: bytes, pos: int) -> int:
    """Size in bytes of the Variant value starting at ``value[pos]``."""
    if pos >= len(value):
        raise _malformed(f"value at byte {pos} is past the end ({len(value)} bytes)")
    byte = value[pos]
    basic = byte & 0x3
    info = byte >> 2
    if basic == _SHORT_STR:
        return 1 + info
    if basic == _OBJECT:
        num, _, offset_size, _, offset_start, data_start = _object_layout(value, pos)
        end = _read_uint(value, offset_start + num * offset_size, offset_size, "object offset")
        return data_start - pos + end
    if basic == _ARRAY:
        num, offset_size, offset_start, data_start = _array_layout(value, pos)
        end = _read_uint(value, offset_start + num * offset_size, offset_size, "array offset")
        return data_start - pos + end
    fixed = _FIXED_SIZES.get(info)
    if fixed is not None:
        return fixed
    if info in (_T_BINARY, _T_STRING):
        return 5 + _read_uint(value, pos + 1, 4, "binary/string length")
    raise _malformed(f"unknown primitive type id {info} at byte {pos}")


def _object_fields(value: bytes, meta: _Metadata) -> list[tuple[str, bytes]]:
    """The (key, raw value bytes) pairs of the Variant object ``value``."""
    num, id_size, offset_size, id_start, offset_start, data_start = _object_layout(value, 0)
    fields = []
    for i in range(num):
        field_id = _read_uint(value, id_start + i * id_size, id_size, "object field id")
        offset = _read_uint(value, offset_start + i * offset_size, offset_size, "object field offset")
        start = data_start + offset
        end = start + _value_size(value, start)
        if end > len(value):
            raise _malformed(f"object field {i} runs past the end of the value")
        fields.append((meta.key(field_id), value[start:end]))
    return fields


# --------------------------------------------------------------------------------------
# Writing Variant values
# --------------------------------------------------------------------------------------


def _encode_object(fields: list[tuple[str, int, bytes]]) -> bytes:
    """An object from (key, field id, encoded value) triples, fields sorted by key
    (UTF-8 byte order, which is code point order)."""
    fields = sorted(fields, key=lambda f: f[0])
    for (k1, _, _), (k2, _, _) in zip(fields, fields[1:]):
        if k1 == k2:
            raise MalformedVariantError(f"object field {k1!r} is defined twice")
    num = len(fields)
    data_size = sum(len(f[2]) for f in fields)
    is_large = num > 0xFF
    id_size = _int_size(max((f[1] for f in fields), default=0))
    offset_size = _int_size(data_size)
    header = _OBJECT | ((offset_size - 1) << 2) | ((id_size - 1) << 4) | (int(is_large) << 6)
    parts = [bytes([header]), num.to_bytes(4 if is_large else 1, "little")]
    parts.extend(f[1].to_bytes(id_size, "little") for f in fields)
    offset = 0
    for f in fields:
        parts.append(offset.to_bytes(offset_size, "little"))
        offset += len(f[2])
    parts.append(offset.to_bytes(offset_size, "little"))
    parts.extend(f[2] for f in fields)
    return b"".join(parts)


def _encode_array(elements: list[bytes]) -> bytes:
    num = len(elements)
    data_size = sum(len(e) for e in elements)
    is_large = num > 0xFF
    offset_size = _int_size(data_size)
    header = _ARRAY | ((offset_size - 1) << 2) | (int(is_large) << 4)
    parts = [bytes([header]), num.to_bytes(4 if is_large else 1, "little")]
    offset = 0
    for e in elements:
        parts.append(offset.to_bytes(offset_size, "little"))
        offset += len(e)
    parts.append(offset.to_bytes(offset_size, "little"))
    parts.extend(elements)
    return b"".join(parts)


def _encode_string(data: bytes) -> bytes:
    if len(data) <= _MAX_SHORT_STR:
        return bytes([(len(data) << 2) | _SHORT_STR]) + data
    return bytes([_primitive_header(_T_STRING)]) + len(data).to_bytes(4, "little") + data


def _encode_binary(data: bytes) -> bytes:
    return bytes([_primitive_header(_T_BINARY)]) + len(data).to_bytes(4, "little") + data


def _int_encoder(type_id: int, width: int) -> Callable[[int], bytes]:
    header = bytes([_primitive_header(type_id)])

    def encode(v: int) -> bytes:
        return header + v.to_bytes(width, "little", signed=True)

    return encode


# --------------------------------------------------------------------------------------
# Shredded columns
# --------------------------------------------------------------------------------------


def _plain(arr: pa.Array) -> pa.Array:
    """Strip extension and dictionary encodings that do not change the values."""
    if isinstance(arr, pa.ExtensionArray) and not _is_uuid_extension(arr.type):
        arr = arr.storage
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    return arr


def _is_uuid_extension(t: pa.DataType) -> bool:
    return isinstance(t, pa.ExtensionType) and t.extension_name == "arrow.uuid"


def _binary_list(arr: pa.Array, what: str) -> list:
    """A binary-like column as a Python list of bytes / None."""
    arr = _plain(arr)
    t = arr.type
    if not (pa.types.is_binary(t) or pa.types.is_large_binary(t) or _is_binary_view(t)):
        raise MalformedVariantError(f"{what} must be binary, found {t}")
    return arr.to_pylist()


def _validity(arr: pa.Array) -> Optional[list]:
    """Per-row validity of ``arr`` as a list of bools, or None when nothing is null."""
    if arr.null_count == 0:
        return None
    return arr.is_valid().to_pylist()


def _split_group(arr: pa.StructArray, path: str, allowed: tuple[str, ...]) -> dict[str, pa.Array]:
    """The named children of a shredding group; `_`-prefixed fields are ignored,
    any other unknown field is an error."""
    out: dict[str, pa.Array] = {}
    for i, field in enumerate(arr.type):
        name = field.name
        if name in allowed:
            if name in out:
                raise MalformedVariantError(f"{path}: field {name!r} appears twice")
            out[name] = arr.field(i)
        elif not name.startswith("_"):
            raise MalformedVariantError(
                f"{path}: unexpected field {name!r} in a shredded Variant group "
                f"(expected {', '.join(allowed)})"
            )
    return out


class _Group:
    """A ``struct<value: binary, typed_value: ...>`` shredding group."""

    __slots__ = ("path", "valid", "value", "typed")

    def __init__(self, arr: pa.Array, path: str, children: Optional[dict] = None):
        self.path = path
        arr = _plain(arr)
        if children is None:
            if not pa.types.is_struct(arr.type):
                raise MalformedVariantError(
                    f"{path}: a shredded Variant field must be a group of value/typed_value, found {arr.type}"
                )
            children = _split_group(arr, path, ("value", "typed_value"))
            self.valid = _validity(arr)
        else:
            self.valid = None
        if "value" not in children and "typed_value" not in children:
            raise MalformedVariantError(f"{path}: shredded Variant group has neither value nor typed_value")
        self.value = _binary_list(children["value"], f"{path}.value") if "value" in children else None
        typed = children.get("typed_value")
        self.typed = _typed_node(typed, f"{path}.typed_value") if typed is not None else None

    def encode(self, i: int, meta: _Metadata) -> Optional[bytes]:
        """The encoded Variant at row ``i``, or None when it is missing."""
        if self.valid is not None and not self.valid[i]:
            return None  # a null group: treat like value and typed_value both null
        value = self.value[i] if self.value is not None else None
        typed = self.typed
        if typed is not None and typed.is_valid(i):
            return typed.encode(i, meta, value)
        return value


class _Typed:
    __slots__ = ("path", "valid")

    def is_valid(self, i: int) -> bool:
        return self.valid is None or self.valid[i]

    def encode(self, i: int, meta: _Metadata, value: Optional[bytes]) -> bytes:  # pragma: no cover
        raise NotImplementedError


class _NullTyped(_Typed):
    """A typed_value column of Arrow type null: always null (as if absent)."""

    def __init__(self, path: str):
        self.path = path

    def is_valid(self, i: int) -> bool:
        return False


class _PrimitiveTyped(_Typed):
    __slots__ = ("items", "encoder")

    def __init__(self, arr: pa.Array, path: str):
        self.path = path
        self.valid = _validity(arr)
        self.items, self.encoder = _primitive_items(arr, path)

    def encode(self, i: int, meta: _Metadata, value: Optional[bytes]) -> bytes:
        if value is not None:
            raise MalformedVariantError(
                f"{self.path}: both value and typed_value are set for a shredded primitive "
                f"(row {i}); only partially shredded objects may have both"
            )
        return self.encoder(self.items[i])


class _ObjectTyped(_Typed):
    __slots__ = ("fields", "names")

    def __init__(self, arr: pa.StructArray, path: str):
        self.path = path
        self.valid = _validity(arr)
        fields = []
        seen = set()
        for i, field in enumerate(arr.type):
            if field.name in seen:
                raise MalformedVariantError(f"{path}: shredded field {field.name!r} appears twice")
            seen.add(field.name)
            fields.append((field.name, _Group(arr.field(i), f"{path}.{field.name}")))
        self.fields = fields
        self.names = frozenset(seen)

    def encode(self, i: int, meta: _Metadata, value: Optional[bytes]) -> bytes:
        out: list[tuple[str, int, bytes]] = []
        for name, group in self.fields:
            encoded = group.encode(i, meta)
            if encoded is not None:
                out.append((name, meta.id_for(name), encoded))
        if value is not None:
            # A partially shredded object: merge the residual object's fields.
            if len(value) == 0 or (value[0] & 0x3) != _OBJECT:
                raise MalformedVariantError(
                    f"{self.path}: typed_value is a shredded object but value is not a Variant "
                    f"object (row {i})"
                )
            for key, raw in _object_fields(value, meta):
                if key in self.names:
                    raise MalformedVariantError(
                        f"{self.path}: field {key!r} is both shredded and present in the residual "
                        f"value object (row {i})"
                    )
                out.append((key, meta.id_for(key), raw))
        return _encode_object(out)


class _ArrayTyped(_Typed):
    __slots__ = ("offsets", "element")

    def __init__(self, arr: pa.Array, path: str):
        self.path = path
        self.valid = _validity(arr)
        self.offsets = arr.offsets.to_pylist()
        self.element = _Group(arr.values, f"{path}.element")

    def encode(self, i: int, meta: _Metadata, value: Optional[bytes]) -> bytes:
        if value is not None:
            raise MalformedVariantError(
                f"{self.path}: both value and typed_value are set for a shredded array (row {i})"
            )
        element = self.element
        elements = []
        for j in range(self.offsets[i], self.offsets[i + 1]):
            encoded = element.encode(j, meta)
            # Array elements cannot be missing; the spec says a missing Variant where a
            # value is required reads as Variant null.
            elements.append(_VARIANT_NULL if encoded is None else encoded)
        return _encode_array(elements)


def _typed_node(arr: pa.Array, path: str) -> _Typed:
    arr = _plain(arr)
    t = arr.type
    if pa.types.is_null(t):
        return _NullTyped(path)
    if pa.types.is_struct(t):
        return _ObjectTyped(arr, path)
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return _ArrayTyped(arr, path)
    return _PrimitiveTyped(arr, path)


def _fixed_width_ints(arr: pa.Array, width: int) -> list:
    """Little-endian signed integers of ``width`` bytes from a fixed-width array's data
    buffer (used for decimals, whose Python conversion would go through Decimal)."""
    data = arr.buffers()[1]
    raw = data.to_pybytes() if data is not None else b""
    offset = arr.offset
    valid = _validity(arr)
    out = []
    for i in range(len(arr)):
        if valid is not None and not valid[i]:
            out.append(None)
        else:
            start = (offset + i) * width
            out.append(int.from_bytes(raw[start : start + width], "little", signed=True))
    return out


def _primitive_items(arr: pa.Array, path: str) -> tuple[list, Callable]:
    """Python values of a shredded primitive column and the function encoding one."""
    t = arr.type
    if pa.types.is_boolean(t):
        true_, false_ = bytes([_primitive_header(_T_TRUE)]), bytes([_primitive_header(_T_FALSE)])
        return arr.to_pylist(), lambda v: true_ if v else false_
    if pa.types.is_int8(t):
        return arr.to_pylist(), _int_encoder(_T_INT8, 1)
    if pa.types.is_int16(t):
        return arr.to_pylist(), _int_encoder(_T_INT16, 2)
    if pa.types.is_int32(t):
        return arr.to_pylist(), _int_encoder(_T_INT32, 4)
    if pa.types.is_int64(t):
        return arr.to_pylist(), _int_encoder(_T_INT64, 8)
    if pa.types.is_float32(t):
        header = bytes([_primitive_header(_T_FLOAT)])
        return arr.to_pylist(), lambda v: header + struct.pack("<f", v)
    if pa.types.is_float64(t):
        header = bytes([_primitive_header(_T_DOUBLE)])
        return arr.to_pylist(), lambda v: header + struct.pack("<d", v)
    if pa.types.is_decimal(t):
        precision, scale = t.precision, t.scale
        if precision > _MAX_DECIMAL_PRECISION or scale < 0 or scale > precision:
            raise MalformedVariantError(
                f"{path}: {t} cannot be a Variant decimal (precision at most 38, 0 <= scale <= precision)"
            )
        if precision <= 9:
            type_id, width = _T_DECIMAL4, 4
        elif precision <= 18:
            type_id, width = _T_DECIMAL8, 8
        else:
            type_id, width = _T_DECIMAL16, 16
        prefix = bytes([_primitive_header(type_id), scale])
        items = _fixed_width_ints(arr, t.byte_width)
        return items, lambda v: prefix + v.to_bytes(width, "little", signed=True)
    if pa.types.is_date32(t):
        return arr.cast(pa.int32()).to_pylist(), _int_encoder(_T_DATE, 4)
    if pa.types.is_date64(t):
        millis = arr.cast(pa.int64()).to_pylist()
        return [None if v is None else v // 86_400_000 for v in millis], _int_encoder(_T_DATE, 4)
    if pa.types.is_timestamp(t):
        ints = arr.cast(pa.int64()).to_pylist()
        utc = t.tz is not None
        if t.unit == "ns":
            type_id = _T_TIMESTAMP_NANOS if utc else _T_TIMESTAMP_NTZ_NANOS
        else:
            type_id = _T_TIMESTAMP if utc else _T_TIMESTAMP_NTZ
            factor = {"s": 1_000_000, "ms": 1_000, "us": 1}[t.unit]
            if factor != 1:
                ints = [None if v is None else v * factor for v in ints]
        return ints, _int_encoder(type_id, 8)
    if pa.types.is_time(t):
        if t.unit == "ns":
            raise MalformedVariantError(f"{path}: {t} is not a Variant type (TIME must be MICROS)")
        ints = arr.cast(pa.int64() if pa.types.is_time64(t) else pa.int32()).to_pylist()
        factor = {"s": 1_000_000, "ms": 1_000, "us": 1}[t.unit]
        if factor != 1:
            ints = [None if v is None else v * factor for v in ints]
        return ints, _int_encoder(_T_TIME, 8)
    if pa.types.is_string(t) or pa.types.is_large_string(t) or _is_string_view(t):
        return arr.cast(pa.large_binary()).to_pylist(), _encode_string
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or _is_binary_view(t):
        return arr.to_pylist(), _encode_binary
    if _is_uuid_extension(t) or (pa.types.is_fixed_size_binary(t) and t.byte_width == 16):
        # Parquet UUID is FIXED_LEN_BYTE_ARRAY(16), which pyarrow reads as
        # fixed_size_binary(16) (or the arrow.uuid extension type).
        storage = arr.storage if isinstance(arr, pa.ExtensionArray) else arr
        header = bytes([_primitive_header(_T_UUID)])
        return storage.to_pylist(), lambda v: header + v
    raise MalformedVariantError(f"{path}: {t} is not a type a shredded Variant may use")


# --------------------------------------------------------------------------------------
# Public: reconstruction
# --------------------------------------------------------------------------------------


def _as_binary(arr: pa.Array) -> pa.Array:
    if arr.type == pa.binary():
        return arr
    return arr.cast(pa.binary())


def _assemble(column: pa.Array, value: pa.Array, metadata: pa.Array) -> pa.StructArray:
    """The result struct: ``value``/``metadata`` must be non-null wherever ``column``
    is valid; nulls under null rows become empty binaries."""
    if value.null_count:
        value = value.fill_null(b"")
    if metadata.null_count:
        metadata = metadata.fill_null(b"")
    mask = column.is_null() if column.null_count else None
    return pa.StructArray.from_arrays([value, metadata], fields=list(VARIANT_ARROW_TYPE), mask=mask)


def _reconstruct_chunk(column: pa.Array) -> pa.StructArray:
    column = _plain(column)
    if pa.types.is_null(column.type):
        n = len(column)
        empty = pa.array([b""] * n, pa.binary())
        return pa.StructArray.from_arrays(
            [empty, empty], fields=list(VARIANT_ARROW_TYPE), mask=pa.array([True] * n)
        )
    if not pa.types.is_struct(column.type):
        raise MalformedVariantError(f"a Variant column must be a struct, found {column.type}")
    children = _split_group(column, "variant", ("metadata", "value", "typed_value"))
    if "metadata" not in children:
        raise MalformedVariantError("a Variant column has no metadata field")
    metadata = _as_binary(_plain(children.pop("metadata")))
    valid = column.is_valid() if column.null_count else None

    def valid_and(mask: pa.Array) -> pa.Array:
        return mask if valid is None else pc.and_(valid, mask)

    if metadata.null_count and pc.any(valid_and(metadata.is_null())).as_py():
        raise MalformedVariantError("Variant metadata is null in a non-null Variant value")

    if "value" in children:
        value = _as_binary(_plain(children["value"]))
    else:
        value = pa.nulls(len(column), pa.binary())
    # Rows not shredded: value as is; a missing top-level value is Variant null.
    if value.null_count:
        value = pc.coalesce(value, pa.scalar(_VARIANT_NULL, pa.binary()))

    typed = children.get("typed_value")
    if typed is None or typed.null_count == len(typed):
        return _assemble(column, value, metadata)
    typed = _plain(typed)
    shredded = valid_and(typed.is_valid())
    rows = [i for i, s in enumerate(shredded.to_pylist()) if s]
    if not rows:
        return _assemble(column, value, metadata)
    node = _Group(column, "variant", children=children)

    raw_metadata = metadata.to_pylist()
    cache: dict[bytes, _Metadata] = {}
    new_values: list[bytes] = []
    new_metadata: list[bytes] = []
    metadata_changed = False
    for i in rows:
        raw = raw_metadata[i]
        meta = cache.get(raw)
        if meta is None:
            meta = cache[raw] = _Metadata(raw)
        new_values.append(node.typed.encode(i, meta, node.value[i] if node.value is not None else None))
        if len(meta.keys) != meta.original_size:
            metadata_changed = True  # a shredded key was missing from the dictionary
        new_metadata.append(meta.encoded())
    value = pc.replace_with_mask(value, shredded, pa.array(new_values, pa.binary()))
    if metadata_changed:
        metadata = pc.replace_with_mask(metadata, shredded, pa.array(new_metadata, pa.binary()))
    return _assemble(column, value, metadata)


def reconstruct_variant(column):
    """Rebuild a Variant column read from Parquet as :data:`VARIANT_ARROW_TYPE`.

    ``column`` is the physical column as pyarrow reads it: unshredded
    ``struct<value, metadata>`` (binary children, any field order) or shredded
    ``struct<metadata, value?, typed_value?>`` per the Parquet Variant shredding
    spec. Fields whose names start with ``_`` are ignored; any other unknown field is
    an error. A null struct row stays null (SQL NULL); a non-null row with neither
    ``value`` nor ``typed_value`` reads as Variant null.

    Unshredded rows keep their binary buffers (no copy of the data). Shredded rows
    are rebuilt in Python: objects get their shredded fields merged with the residual
    ``value`` object, sorted by key, with field ids from the row's own metadata
    dictionary (a key missing from it is appended). A ``pa.ChunkedArray`` is rebuilt
    chunk by chunk and returned as a ``pa.ChunkedArray``.

    Raises :class:`MalformedVariantError` (a :class:`~delta_pyds.errors.DataFileError`)
    for data that breaks the spec: null metadata, a shredded field also present in
    the residual object, a residual that is not an object next to a shredded object,
    both ``value`` and ``typed_value`` set for a primitive or array, or a
    ``typed_value`` of a type Variant cannot hold.
    """
    if isinstance(column, pa.ChunkedArray):
        return pa.chunked_array(
            [_reconstruct_chunk(chunk) for chunk in column.chunks], type=VARIANT_ARROW_TYPE
        )
    if not isinstance(column, pa.Array):
        raise TypeError(f"reconstruct_variant expects a pyarrow Array, got {type(column).__name__}")
    return _reconstruct_chunk(column)


def is_variant_type(t: pa.DataType) -> bool:
    """Whether ``t`` is Spark's Arrow type for a variant: a struct with binary
    ``value`` and ``metadata`` fields, ``metadata`` tagged ``{b"variant": b"true"}``
    (the test pyspark itself uses)."""
    if not pa.types.is_struct(t):
        return False
    names = {f.name: f for f in t}
    meta = names.get("metadata")
    return (
        "value" in names
        and meta is not None
        and meta.metadata is not None
        and meta.metadata.get(b"variant") == b"true"
    )


def reconstruct_nested(column, target_type: pa.DataType):
    """Apply :func:`reconstruct_variant` wherever ``target_type`` holds a variant
    (:func:`is_variant_type`), walking structs (children by name), lists and maps.
    Other parts of ``column`` are returned as they are; ``column`` may be a
    ``pa.ChunkedArray``."""
    if isinstance(column, pa.ChunkedArray):
        return pa.chunked_array(
            [_nested_chunk(chunk, target_type) for chunk in column.chunks], type=target_type
        )
    return _nested_chunk(column, target_type)


def _contains_variant(t: pa.DataType) -> bool:
    if is_variant_type(t):
        return True
    if pa.types.is_struct(t):
        return any(_contains_variant(f.type) for f in t)
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return _contains_variant(t.value_type)
    if pa.types.is_map(t):
        return _contains_variant(t.key_type) or _contains_variant(t.item_type)
    return False


def _nested_chunk(arr: pa.Array, target: pa.DataType) -> pa.Array:
    if not _contains_variant(target):
        return arr
    if is_variant_type(target):
        return _reconstruct_chunk(arr)
    arr = _plain(arr)
    mask = arr.is_null() if arr.null_count else None
    if pa.types.is_struct(target):
        if not pa.types.is_struct(arr.type):
            raise DataFileError(f"expected a struct column for {target}, found {arr.type}")
        by_name = {f.name: i for i, f in enumerate(arr.type)}
        children = []
        for field in target:
            if field.name not in by_name:
                raise DataFileError(f"struct column has no field {field.name!r}")
            children.append(_nested_chunk(arr.field(by_name[field.name]), field.type))
        return pa.StructArray.from_arrays(children, fields=list(target), mask=mask)
    if pa.types.is_map(target):
        if not pa.types.is_map(arr.type):
            raise DataFileError(f"expected a map column for {target}, found {arr.type}")
        keys = _nested_chunk(arr.keys, target.key_type)
        items = _nested_chunk(arr.items, target.item_type)
        return pa.MapArray.from_arrays(arr.offsets, keys, items, type=target, mask=mask)
    if not (pa.types.is_list(arr.type) or pa.types.is_large_list(arr.type)):
        raise DataFileError(f"expected a list column for {target}, found {arr.type}")
    values = _nested_chunk(arr.values, target.value_type)
    cls = pa.LargeListArray if pa.types.is_large_list(target) else pa.ListArray
    return cls.from_arrays(arr.offsets, values, type=target, mask=mask)


# --------------------------------------------------------------------------------------
# Public: JSON
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


def _to_json(value: bytes, pos: int, meta: _Metadata, out: list, zone_id: str, depth: int) -> None:
    if pos >= len(value):
        raise _malformed(f"value at byte {pos} is past the end ({len(value)} bytes)")
    if depth > 500:
        raise _malformed("nesting too deep")
    byte = value[pos]
    basic = byte & 0x3
    info = byte >> 2
    if basic == _SHORT_STR:
        end = pos + 1 + info
        if end > len(value):
            raise _malformed(f"short string at byte {pos} runs past the end")
        out.append(_json_string(_utf8(value[pos + 1 : end])))
        return
    if basic == _OBJECT:
        num, id_size, offset_size, id_start, offset_start, data_start = _object_layout(value, pos)
        out.append("{")
        for i in range(num):
            if i:
                out.append(",")
            field_id = _read_uint(value, id_start + i * id_size, id_size, "object field id")
            offset = _read_uint(value, offset_start + i * offset_size, offset_size, "object field offset")
            out.append(_json_string(meta.key(field_id)))
            out.append(":")
            _to_json(value, data_start + offset, meta, out, zone_id, depth + 1)
        out.append("}")
        return
    if basic == _ARRAY:
        num, offset_size, offset_start, data_start = _array_layout(value, pos)
        out.append("[")
        for i in range(num):
            if i:
                out.append(",")
            offset = _read_uint(value, offset_start + i * offset_size, offset_size, "array offset")
            _to_json(value, data_start + offset, meta, out, zone_id, depth + 1)
        out.append("]")
        return
    # primitives
    if info == _T_NULL:
        out.append("null")
    elif info == _T_TRUE:
        out.append("true")
    elif info == _T_FALSE:
        out.append("false")
    elif info == _T_INT8:
        out.append(str(_read_int(value, pos + 1, 1, "int8")))
    elif info == _T_INT16:
        out.append(str(_read_int(value, pos + 1, 2, "int16")))
    elif info == _T_INT32:
        out.append(str(_read_int(value, pos + 1, 4, "int32")))
    elif info == _T_INT64:
        out.append(str(_read_int(value, pos + 1, 8, "int64")))
    elif info == _T_DOUBLE:
        _read_uint(value, pos + 1, 8, "double")
        out.append(_format_double(struct.unpack_from("<d", value, pos + 1)[0]))
    elif info == _T_FLOAT:
        _read_uint(value, pos + 1, 4, "float")
        out.append(_format_float(struct.unpack_from("<f", value, pos + 1)[0]))
    elif info in (_T_DECIMAL4, _T_DECIMAL8, _T_DECIMAL16):
        width, max_precision = {_T_DECIMAL4: (4, 9), _T_DECIMAL8: (8, 18), _T_DECIMAL16: (16, 38)}[info]
        scale = _read_uint(value, pos + 1, 1, "decimal scale")
        unscaled = _read_int(value, pos + 2, width, "decimal")
        if scale > max_precision or abs(unscaled) >= 10**max_precision:
            raise _malformed(f"decimal out of range (scale {scale}) at byte {pos}")
        out.append(_format_decimal(unscaled, scale))
    elif info == _T_DATE:
        out.append('"' + _format_date(_read_int(value, pos + 1, 4, "date")) + '"')
    elif info == _T_TIMESTAMP:
        out.append('"' + _format_instant(_read_int(value, pos + 1, 8, "timestamp") * 1000, zone_id) + '"')
    elif info == _T_TIMESTAMP_NTZ:
        out.append('"' + _format_local(_read_int(value, pos + 1, 8, "timestamp_ntz") * 1000) + '"')
    elif info == _T_TIMESTAMP_NANOS:
        out.append('"' + _format_instant(_read_int(value, pos + 1, 8, "timestamp"), zone_id) + '"')
    elif info == _T_TIMESTAMP_NTZ_NANOS:
        out.append('"' + _format_local(_read_int(value, pos + 1, 8, "timestamp_ntz")) + '"')
    elif info == _T_TIME:
        micros = _read_int(value, pos + 1, 8, "time")
        if not 0 <= micros < 86_400_000_000:
            raise _malformed(f"time of day {micros} µs out of range at byte {pos}")
        out.append('"' + _format_time_of_day(micros * 1000) + '"')
    elif info == _T_BINARY:
        size = _read_uint(value, pos + 1, 4, "binary length")
        if pos + 5 + size > len(value):
            raise _malformed(f"binary at byte {pos} runs past the end")
        out.append('"' + base64.b64encode(value[pos + 5 : pos + 5 + size]).decode("ascii") + '"')
    elif info == _T_STRING:
        size = _read_uint(value, pos + 1, 4, "string length")
        if pos + 5 + size > len(value):
            raise _malformed(f"string at byte {pos} runs past the end")
        out.append(_json_string(_utf8(value[pos + 5 : pos + 5 + size])))
    elif info == _T_UUID:
        if pos + 17 > len(value):
            raise _malformed(f"uuid at byte {pos} runs past the end")
        out.append('"' + str(uuid.UUID(bytes=bytes(value[pos + 1 : pos + 17]))) + '"')
    else:
        raise _malformed(f"unknown primitive type id {info} at byte {pos}")


def _utf8(data: bytes) -> str:
    try:
        return bytes(data).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _malformed("string is not valid UTF-8") from exc


def decode_to_json(value: bytes, metadata: bytes, *, zone_id: str = "UTC") -> str:
    """The Variant (``value``, ``metadata``) as JSON text, formatted like Spark's
    ``to_json`` on a variant: object fields in stored order (sorted by key),
    doubles/floats as Java prints them (``1.0E20``; NaN/Infinity quoted), decimals
    without trailing zeros, dates/timestamps as quoted ISO strings (timestamps with
    time zone rendered in ``zone_id``, default UTC, with a ``+HH:MM`` offset), binary
    as quoted base64, UUIDs in canonical form. Types Spark does not know (time,
    nanosecond timestamps) use the same layouts.

    Raises :class:`MalformedVariantError` for a malformed encoding.
    """
    value = bytes(value)
    meta = _Metadata(bytes(metadata))
    out: list[str] = []
    _to_json(value, 0, meta, out, zone_id, 0)
    return "".join(out)
