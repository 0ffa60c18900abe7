"""The Variant binary encoding (apache/parquet-format ``VariantEncoding.md``), in pure Python.

Holds the basic types (:data:`PRIMITIVE`, :data:`SHORT_STR`, :data:`OBJECT`,
:data:`ARRAY`) and primitive type ids (``T_*``), the metadata dictionary
(:class:`VariantMetadata`), readers of value headers (:func:`object_layout`,
:func:`array_layout`, :func:`object_fields`) and the encoders of objects, arrays,
strings, binaries and integers that :mod:`delta_pyds.variant.shredding` uses to rebuild
shredded values.

Guarantees: every read is bounds-checked, and malformed bytes raise
:class:`MalformedVariantError` (a :class:`~delta_pyds.errors.DataFileError`), never an
``IndexError``; encoders write the smallest offset/id widths the spec allows, object
fields sorted by key; a :class:`VariantMetadata` only ever appends keys, so field ids
already in use stay valid. This module imports neither pyarrow nor pyspark.
"""

from __future__ import annotations

from collections.abc import Callable

from delta_pyds.errors import MalformedVariantError

# --------------------------------------------------------------------------------------
# Variant binary encoding constants
# --------------------------------------------------------------------------------------

PRIMITIVE, SHORT_STR, OBJECT, ARRAY = 0, 1, 2, 3

T_NULL = 0
T_TRUE = 1
T_FALSE = 2
T_INT8 = 3
T_INT16 = 4
T_INT32 = 5
T_INT64 = 6
T_DOUBLE = 7
T_DECIMAL4 = 8
T_DECIMAL8 = 9
T_DECIMAL16 = 10
T_DATE = 11
T_TIMESTAMP = 12  # micros, adjusted to UTC
T_TIMESTAMP_NTZ = 13  # micros, no time zone
T_FLOAT = 14
T_BINARY = 15
T_STRING = 16
T_TIME = 17  # micros since midnight, no time zone
T_TIMESTAMP_NANOS = 18  # nanos, adjusted to UTC
T_TIMESTAMP_NTZ_NANOS = 19  # nanos, no time zone
T_UUID = 20  # 16 bytes, big-endian

VARIANT_NULL = b"\x00"
_MAX_SHORT_STR = 63
MAX_DECIMAL_PRECISION = 38

# Fixed total sizes (header included) of the fixed-width primitive types.
_FIXED_SIZES = {
    T_NULL: 1,
    T_TRUE: 1,
    T_FALSE: 1,
    T_INT8: 2,
    T_INT16: 3,
    T_INT32: 5,
    T_INT64: 9,
    T_DOUBLE: 9,
    T_DECIMAL4: 6,
    T_DECIMAL8: 10,
    T_DECIMAL16: 18,
    T_DATE: 5,
    T_TIMESTAMP: 9,
    T_TIMESTAMP_NTZ: 9,
    T_FLOAT: 5,
    T_TIME: 9,
    T_TIMESTAMP_NANOS: 9,
    T_TIMESTAMP_NTZ_NANOS: 9,
    T_UUID: 17,
}


def primitive_header(type_id: int) -> int:
    return (type_id << 2) | PRIMITIVE


def _int_size(n: int) -> int:
    """Smallest unsigned little-endian width (1..4 bytes) holding ``n``."""
    if n <= 0xFF:
        return 1
    if n <= 0xFFFF:
        return 2
    if n <= 0xFFFFFF:
        return 3
    return 4


def malformed(what: str) -> MalformedVariantError:
    return MalformedVariantError(f"malformed Variant: {what}")


def read_uint(buf: bytes, pos: int, size: int, what: str) -> int:
    end = pos + size
    if pos < 0 or end > len(buf):
        raise malformed(f"{what} at byte {pos} runs past the end ({len(buf)} bytes)")
    return int.from_bytes(buf[pos:end], "little", signed=False)


def read_int(buf: bytes, pos: int, size: int, what: str) -> int:
    end = pos + size
    if pos < 0 or end > len(buf):
        raise malformed(f"{what} at byte {pos} runs past the end ({len(buf)} bytes)")
    return int.from_bytes(buf[pos:end], "little", signed=True)


# --------------------------------------------------------------------------------------
# Metadata (the key dictionary)
# --------------------------------------------------------------------------------------


class VariantMetadata:
    """A parsed Variant metadata dictionary, extensible with new keys (appended, so
    existing field ids stay valid)."""

    __slots__ = ("raw", "keys", "index", "original_size", "_extended")

    def __init__(self, raw: bytes):
        self.raw = raw
        if len(raw) < 1:
            raise malformed("empty metadata")
        header = raw[0]
        version = header & 0x0F
        if version != 1:
            raise malformed(f"unsupported metadata version {version} (expected 1)")
        offset_size = ((header >> 6) & 0x3) + 1
        dict_size = read_uint(raw, 1, offset_size, "metadata dictionary size")
        offsets_start = 1 + offset_size
        strings_start = offsets_start + (dict_size + 1) * offset_size
        if strings_start > len(raw):
            raise malformed(f"metadata dictionary of {dict_size} keys does not fit in {len(raw)} bytes")
        keys: list[str] = []
        previous = read_uint(raw, offsets_start, offset_size, "metadata offset")
        if previous != 0:
            raise malformed("first metadata dictionary offset is not 0")
        for i in range(dict_size):
            nxt = read_uint(raw, offsets_start + (i + 1) * offset_size, offset_size, "metadata offset")
            if nxt < previous or strings_start + nxt > len(raw):
                raise malformed(f"metadata dictionary offset {i + 1} ({nxt}) is out of order or out of range")
            try:
                keys.append(raw[strings_start + previous : strings_start + nxt].decode("utf-8"))
            except UnicodeDecodeError as exc:
                raise malformed(f"metadata key {i} is not valid UTF-8") from exc
            previous = nxt
        self.keys = keys
        index: dict[str, int] = {}
        for i, key in enumerate(keys):
            index.setdefault(key, i)
        self.index = index
        self.original_size = len(keys)
        self._extended: bytes | None = None

    def key(self, field_id: int) -> str:
        if field_id >= len(self.keys):
            raise malformed(f"field id {field_id} is out of range of the metadata dictionary ({len(self.keys)} keys)")
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


def object_layout(value: bytes, pos: int) -> tuple[int, int, int, int, int, int]:
    """(num_fields, id_size, offset_size, id_start, offset_start, data_start)."""
    header = value[pos] >> 2
    is_large = (header >> 4) & 0x1
    id_size = ((header >> 2) & 0x3) + 1
    offset_size = (header & 0x3) + 1
    size_bytes = 4 if is_large else 1
    num = read_uint(value, pos + 1, size_bytes, "object size")
    id_start = pos + 1 + size_bytes
    offset_start = id_start + num * id_size
    data_start = offset_start + (num + 1) * offset_size
    if data_start > len(value):
        raise malformed(f"object header of {num} fields at byte {pos} runs past the end")
    return num, id_size, offset_size, id_start, offset_start, data_start


def array_layout(value: bytes, pos: int) -> tuple[int, int, int, int]:
    """(num_elements, offset_size, offset_start, data_start)."""
    header = value[pos] >> 2
    is_large = (header >> 2) & 0x1
    offset_size = (header & 0x3) + 1
    size_bytes = 4 if is_large else 1
    num = read_uint(value, pos + 1, size_bytes, "array size")
    offset_start = pos + 1 + size_bytes
    data_start = offset_start + (num + 1) * offset_size
    if data_start > len(value):
        raise malformed(f"array header of {num} elements at byte {pos} runs past the end")
    return num, offset_size, offset_start, data_start


def _value_size(value: bytes, pos: int) -> int:
    """Size in bytes of the Variant value starting at ``value[pos]``."""
    if pos >= len(value):
        raise malformed(f"value at byte {pos} is past the end ({len(value)} bytes)")
    byte = value[pos]
    basic = byte & 0x3
    info = byte >> 2
    if basic == SHORT_STR:
        return 1 + info
    if basic == OBJECT:
        num, _, offset_size, _, offset_start, data_start = object_layout(value, pos)
        end = read_uint(value, offset_start + num * offset_size, offset_size, "object offset")
        return data_start - pos + end
    if basic == ARRAY:
        num, offset_size, offset_start, data_start = array_layout(value, pos)
        end = read_uint(value, offset_start + num * offset_size, offset_size, "array offset")
        return data_start - pos + end
    fixed = _FIXED_SIZES.get(info)
    if fixed is not None:
        return fixed
    if info in (T_BINARY, T_STRING):
        return 5 + read_uint(value, pos + 1, 4, "binary/string length")
    raise malformed(f"unknown primitive type id {info} at byte {pos}")


def object_fields(value: bytes, meta: VariantMetadata) -> list[tuple[str, bytes]]:
    """The (key, raw value bytes) pairs of the Variant object ``value``."""
    num, id_size, offset_size, id_start, offset_start, data_start = object_layout(value, 0)
    fields = []
    for i in range(num):
        field_id = read_uint(value, id_start + i * id_size, id_size, "object field id")
        offset = read_uint(value, offset_start + i * offset_size, offset_size, "object field offset")
        start = data_start + offset
        end = start + _value_size(value, start)
        if end > len(value):
            raise malformed(f"object field {i} runs past the end of the value")
        fields.append((meta.key(field_id), value[start:end]))
    return fields


# --------------------------------------------------------------------------------------
# Writing Variant values
# --------------------------------------------------------------------------------------


def encode_object(fields: list[tuple[str, int, bytes]]) -> bytes:
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
    header = OBJECT | ((offset_size - 1) << 2) | ((id_size - 1) << 4) | (int(is_large) << 6)
    parts = [bytes([header]), num.to_bytes(4 if is_large else 1, "little")]
    parts.extend(f[1].to_bytes(id_size, "little") for f in fields)
    offset = 0
    for f in fields:
        parts.append(offset.to_bytes(offset_size, "little"))
        offset += len(f[2])
    parts.append(offset.to_bytes(offset_size, "little"))
    parts.extend(f[2] for f in fields)
    return b"".join(parts)


def encode_array(elements: list[bytes]) -> bytes:
    num = len(elements)
    data_size = sum(len(e) for e in elements)
    is_large = num > 0xFF
    offset_size = _int_size(data_size)
    header = ARRAY | ((offset_size - 1) << 2) | (int(is_large) << 4)
    parts = [bytes([header]), num.to_bytes(4 if is_large else 1, "little")]
    offset = 0
    for e in elements:
        parts.append(offset.to_bytes(offset_size, "little"))
        offset += len(e)
    parts.append(offset.to_bytes(offset_size, "little"))
    parts.extend(elements)
    return b"".join(parts)


def encode_string(data: bytes) -> bytes:
    if len(data) <= _MAX_SHORT_STR:
        return bytes([(len(data) << 2) | SHORT_STR]) + data
    return bytes([primitive_header(T_STRING)]) + len(data).to_bytes(4, "little") + data


def encode_binary(data: bytes) -> bytes:
    return bytes([primitive_header(T_BINARY)]) + len(data).to_bytes(4, "little") + data


def int_encoder(type_id: int, width: int) -> Callable[[int], bytes]:
    header = bytes([primitive_header(type_id)])

    def encode(v: int) -> bytes:
        return header + v.to_bytes(width, "little", signed=True)

    return encode
