"""Rebuilding nested Arrow arrays around converted children, shared by the read path
(physical -> logical, :func:`delta_pyds.read.file_reader.conform`) and the write path
(logical -> table types, :func:`delta_pyds.protocol.schema_evolution.conform_input`).

Guarantees: the rebuilt array keeps the input's length, offsets and null mask (sliced
inputs included: list/map offsets are absolute into the full child array, and struct
children are taken with the parent's offset and validity applied), and has exactly
the ``target`` type.
"""

from __future__ import annotations

import pyarrow as pa


def struct_children(arr: pa.StructArray) -> list[pa.Array]:
    """The children of a struct array, aligned with it (``.field()`` ignores the parent's
    offset and validity; ``flatten()`` applies both)."""
    if arr.offset or arr.null_count:
        children: list[pa.Array] = arr.flatten()
        return children
    return [arr.field(i) for i in range(arr.type.num_fields)]


def _mask(arr: pa.Array) -> pa.Array | None:
    return arr.is_null() if arr.null_count else None


def rebuild_list(arr: pa.Array, values: pa.Array, target: pa.DataType) -> pa.Array:
    """A list (or large list) array with its elements replaced by ``values``."""
    offsets = arr.offsets
    if pa.types.is_large_list(arr.type):
        offsets = offsets.cast(pa.int32())
    out = pa.ListArray.from_arrays(offsets, values, mask=_mask(arr))
    return out if out.type == target else out.cast(target)


def rebuild_map(arr: pa.MapArray, keys: pa.Array, items: pa.Array, target: pa.DataType) -> pa.Array:
    """A map array with its keys and values replaced."""
    out = pa.MapArray.from_arrays(arr.offsets, keys, items, mask=_mask(arr))
    return out if out.type == target else out.cast(target)


def rebuild_struct(arr: pa.StructArray, children: list[pa.Array], target: pa.DataType) -> pa.Array:
    """A struct array of ``target``'s fields with the given children and ``arr``'s nulls."""
    return pa.StructArray.from_arrays(children, fields=list(target), mask=_mask(arr))
