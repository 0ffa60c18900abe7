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
* :func:`is_variant_type` -- whether an Arrow type is Spark's variant struct.

Guarantees: data that breaks the shredding spec raises
:class:`~delta_pyds.variant.encoding.MalformedVariantError` (a
:class:`~delta_pyds.errors.DataFileError`); a null row stays null. The binary encoding
itself lives in :mod:`delta_pyds.variant.encoding`. This module never imports pyspark.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any, cast

import pyarrow as pa
import pyarrow.compute as pc

from delta_pyds.errors import DataFileError, MalformedVariantError
from delta_pyds.variant.encoding import (
    MAX_DECIMAL_PRECISION,
    OBJECT,
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
    T_TIME,
    T_TIMESTAMP,
    T_TIMESTAMP_NANOS,
    T_TIMESTAMP_NTZ,
    T_TIMESTAMP_NTZ_NANOS,
    T_TRUE,
    T_UUID,
    VARIANT_NULL,
    VariantMetadata,
    encode_array,
    encode_binary,
    encode_object,
    encode_string,
    int_encoder,
    object_fields,
    primitive_header,
)

__all__ = [
    "VARIANT_ARROW_TYPE",
    "is_variant_type",
    "reconstruct_nested",
    "reconstruct_variant",
]

#: The Arrow type Spark's Python Data Source API expects for ``VariantType``
#: (``pyspark.sql.pandas.types.to_arrow_type(VariantType())``).
VARIANT_ARROW_TYPE = pa.struct(
    [
        pa.field("value", pa.binary(), nullable=False),
        pa.field("metadata", pa.binary(), nullable=False, metadata={b"variant": b"true"}),
    ]
)

# View types only exist in newer pyarrow versions.
_is_binary_view = getattr(pa.types, "is_binary_view", lambda t: False)
_is_string_view = getattr(pa.types, "is_string_view", lambda t: False)

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


def _validity(arr: pa.Array) -> list | None:
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
                f"{path}: unexpected field {name!r} in a shredded Variant group (expected {', '.join(allowed)})"
            )
    return out


class _Group:
    """A ``struct<value: binary, typed_value: ...>`` shredding group."""

    __slots__ = ("path", "valid", "value", "typed")

    def __init__(self, arr: pa.Array, path: str, children: dict | None = None):
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

    def encode(self, i: int, meta: VariantMetadata) -> bytes | None:
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
    path: str
    valid: Any  # the validity as a list of bools, None when every row is valid

    def is_valid(self, i: int) -> bool:
        return self.valid is None or self.valid[i]

    def encode(self, i: int, meta: VariantMetadata, value: bytes | None) -> bytes:  # pragma: no cover
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

    def encode(self, i: int, meta: VariantMetadata, value: bytes | None) -> bytes:
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

    def encode(self, i: int, meta: VariantMetadata, value: bytes | None) -> bytes:
        out: list[tuple[str, int, bytes]] = []
        for name, group in self.fields:
            encoded = group.encode(i, meta)
            if encoded is not None:
                out.append((name, meta.id_for(name), encoded))
        if value is not None:
            # A partially shredded object: merge the residual object's fields.
            if len(value) == 0 or (value[0] & 0x3) != OBJECT:
                raise MalformedVariantError(
                    f"{self.path}: typed_value is a shredded object but value is not a Variant object (row {i})"
                )
            for key, raw in object_fields(value, meta):
                if key in self.names:
                    raise MalformedVariantError(
                        f"{self.path}: field {key!r} is both shredded and present in the residual "
                        f"value object (row {i})"
                    )
                out.append((key, meta.id_for(key), raw))
        return encode_object(out)


class _ArrayTyped(_Typed):
    __slots__ = ("offsets", "element")

    def __init__(self, arr: pa.Array, path: str):
        self.path = path
        self.valid = _validity(arr)
        self.offsets = arr.offsets.to_pylist()
        self.element = _Group(arr.values, f"{path}.element")

    def encode(self, i: int, meta: VariantMetadata, value: bytes | None) -> bytes:
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
            elements.append(VARIANT_NULL if encoded is None else encoded)
        return encode_array(elements)


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
    out: list[int | None] = []
    for i in range(len(arr)):
        if valid is not None and not valid[i]:
            out.append(None)
        else:
            start = (offset + i) * width
            out.append(int.from_bytes(raw[start : start + width], "little", signed=True))
    return out


def _primitive_items(arr: pa.Array, path: str) -> tuple[list, Callable]:
    """Python values of a shredded primitive column and the function encoding one
    (:func:`_number_encoder` for booleans, integers and floats; a
    :class:`~delta_pyds.variant.encoding.MalformedVariantError` for a type a shredded Variant
    may not use)."""
    t = arr.type
    encoder = _number_encoder(t)
    if encoder is not None:
        return arr.to_pylist(), encoder
    if pa.types.is_decimal(t):
        return _decimal_items(arr, path)
    if pa.types.is_date32(t):
        return arr.cast(pa.int32()).to_pylist(), int_encoder(T_DATE, 4)
    if pa.types.is_date64(t):
        millis = arr.cast(pa.int64()).to_pylist()
        return [None if v is None else v // 86_400_000 for v in millis], int_encoder(T_DATE, 4)
    if pa.types.is_timestamp(t):
        return _timestamp_items(arr)
    if pa.types.is_time(t):
        return _time_items(arr, path)
    if pa.types.is_string(t) or pa.types.is_large_string(t) or _is_string_view(t):
        return arr.cast(pa.large_binary()).to_pylist(), encode_string
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or _is_binary_view(t):
        return arr.to_pylist(), encode_binary
    if _is_uuid_extension(t) or (pa.types.is_fixed_size_binary(t) and t.byte_width == 16):
        # Parquet UUID is FIXED_LEN_BYTE_ARRAY(16), which pyarrow reads as
        # fixed_size_binary(16) (or the arrow.uuid extension type).
        storage = arr.storage if isinstance(arr, pa.ExtensionArray) else arr
        header = bytes([primitive_header(T_UUID)])
        return storage.to_pylist(), lambda v: header + v
    raise MalformedVariantError(f"{path}: {t} is not a type a shredded Variant may use")


def _number_encoder(t: pa.DataType) -> Callable | None:
    """The encoder of one value of a boolean, integer or floating-point column of type ``t``
    (its Python values as they are), or None for any other type."""
    if pa.types.is_boolean(t):
        true_, false_ = bytes([primitive_header(T_TRUE)]), bytes([primitive_header(T_FALSE)])
        return lambda v: true_ if v else false_
    if pa.types.is_int8(t):
        return int_encoder(T_INT8, 1)
    if pa.types.is_int16(t):
        return int_encoder(T_INT16, 2)
    if pa.types.is_int32(t):
        return int_encoder(T_INT32, 4)
    if pa.types.is_int64(t):
        return int_encoder(T_INT64, 8)
    if pa.types.is_float32(t):
        header = bytes([primitive_header(T_FLOAT)])
        return lambda v: header + struct.pack("<f", v)
    if pa.types.is_float64(t):
        header = bytes([primitive_header(T_DOUBLE)])
        return lambda v: header + struct.pack("<d", v)
    return None


def _decimal_items(arr: pa.Array, path: str) -> tuple[list, Callable]:
    """A shredded decimal column: unscaled ints, encoded as the narrowest Variant decimal
    its precision fits."""
    t = arr.type
    precision, scale = t.precision, t.scale
    if precision > MAX_DECIMAL_PRECISION or scale < 0 or scale > precision:
        raise MalformedVariantError(
            f"{path}: {t} cannot be a Variant decimal (precision at most 38, 0 <= scale <= precision)"
        )
    if precision <= 9:
        type_id, width = T_DECIMAL4, 4
    elif precision <= 18:
        type_id, width = T_DECIMAL8, 8
    else:
        type_id, width = T_DECIMAL16, 16
    prefix = bytes([primitive_header(type_id), scale])
    items = _fixed_width_ints(arr, t.byte_width)
    return items, lambda v: prefix + v.to_bytes(width, "little", signed=True)


def _timestamp_items(arr: pa.Array) -> tuple[list, Callable]:
    """A shredded timestamp column: microseconds (nanoseconds for ``ns``), with or without
    time zone as its type says."""
    t = arr.type
    ints = arr.cast(pa.int64()).to_pylist()
    utc = t.tz is not None
    if t.unit == "ns":
        type_id = T_TIMESTAMP_NANOS if utc else T_TIMESTAMP_NTZ_NANOS
    else:
        type_id = T_TIMESTAMP if utc else T_TIMESTAMP_NTZ
        factor = {"s": 1_000_000, "ms": 1_000, "us": 1}[t.unit]
        if factor != 1:
            ints = [None if v is None else v * factor for v in ints]
    return ints, int_encoder(type_id, 8)


def _time_items(arr: pa.Array, path: str) -> tuple[list, Callable]:
    """A shredded TIME column: microseconds since midnight (``ns`` is not a Variant time)."""
    t = arr.type
    if t.unit == "ns":
        raise MalformedVariantError(f"{path}: {t} is not a Variant type (TIME must be MICROS)")
    ints = arr.cast(pa.int64() if pa.types.is_time64(t) else pa.int32()).to_pylist()
    factor = {"s": 1_000_000, "ms": 1_000, "us": 1}[t.unit]
    if factor != 1:
        ints = [None if v is None else v * factor for v in ints]
    return ints, int_encoder(T_TIME, 8)


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
        return pa.StructArray.from_arrays([empty, empty], fields=list(VARIANT_ARROW_TYPE), mask=pa.array([True] * n))
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
        value = pc.coalesce(value, pa.scalar(VARIANT_NULL, pa.binary()))

    typed = children.get("typed_value")
    if typed is None or typed.null_count == len(typed):
        return _assemble(column, value, metadata)
    typed = _plain(typed)
    shredded = valid_and(typed.is_valid())
    rows = [i for i, s in enumerate(shredded.to_pylist()) if s]
    if not rows:
        return _assemble(column, value, metadata)
    node = _Group(column, "variant", children=children)
    typed_node = cast(_Typed, node.typed)  # children holds a typed_value (checked above)

    raw_metadata = metadata.to_pylist()
    cache: dict[bytes, VariantMetadata] = {}
    new_values: list[bytes] = []
    new_metadata: list[bytes] = []
    metadata_changed = False
    for i in rows:
        raw = raw_metadata[i]
        meta = cache.get(raw)
        if meta is None:
            meta = cache[raw] = VariantMetadata(raw)
        new_values.append(typed_node.encode(i, meta, node.value[i] if node.value is not None else None))
        if len(meta.keys) != meta.original_size:
            metadata_changed = True  # a shredded key was missing from the dictionary
        new_metadata.append(meta.encoded())
    value = pc.replace_with_mask(value, shredded, pa.array(new_values, pa.binary()))
    if metadata_changed:
        metadata = pc.replace_with_mask(metadata, shredded, pa.array(new_metadata, pa.binary()))
    return _assemble(column, value, metadata)


def reconstruct_variant(column: pa.Array | pa.ChunkedArray) -> pa.Array:
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
        return pa.chunked_array([_reconstruct_chunk(chunk) for chunk in column.chunks], type=VARIANT_ARROW_TYPE)
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
        "value" in names and meta is not None and meta.metadata is not None and meta.metadata.get(b"variant") == b"true"
    )


def reconstruct_nested(column: pa.Array | pa.ChunkedArray, target_type: pa.DataType) -> pa.Array:
    """Apply :func:`reconstruct_variant` wherever ``target_type`` holds a variant
    (:func:`is_variant_type`), walking structs (children by name), lists and maps.
    Other parts of ``column`` are returned as they are; ``column`` may be a
    ``pa.ChunkedArray``."""
    if isinstance(column, pa.ChunkedArray):
        return pa.chunked_array([_nested_chunk(chunk, target_type) for chunk in column.chunks], type=target_type)
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
