"""Executor-side reading of one data file of a scan into Arrow record batches.

Guarantees for every batch yielded by :func:`read_file`:

* it has exactly the requested output schema (``ReadSpec.arrow_schema``: logical
  names, Spark's Arrow types, same field order and metadata);
* data columns are found by physical name (column mapping ``name``), by Parquet field
  id (``id``) or by name (``none``), recursively inside structs, lists and maps;
  nullable columns missing from an older file are null; a missing non-nullable column
  is a :class:`DataFileError` (Delta never adds a NOT NULL column to existing files);
* only the physical types the protocol allows for a declared type are read
  (:func:`check_file_column`): the same logical type in any Parquet encoding (INT96,
  milli/micro/nanosecond timestamps, INT32/INT64/binary decimals, large or dictionary
  strings, binary for string), type widening (byte->short->int->long, float->double,
  byte/short/int->double, integers and narrower decimals->wider decimals,
  date->timestamp_ntz), recursively inside structs, lists and maps; anything else is a
  :class:`ColumnTypeError` naming the file, the column and both types, never a silent
  cast (an int64 column declared boolean, timestamp or string is refused);
* partition columns are materialised from the log's serialized partition values;
* rows deleted by the file's deletion vector are removed (the vector is read and its
  checksum verified before any row is returned);
* row groups that statistics prove irrelevant are skipped, with row positions kept
  exact for deletion vectors.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from delta_pyds.errors import ColumnTypeError, DataFileError, StoreFaultError
from delta_pyds.protocol.arrow_nested import rebuild_list, rebuild_map, rebuild_struct
from delta_pyds.protocol.partition_values import parse_partition_values
from delta_pyds.protocol.paths import unsafe_reason
from delta_pyds.protocol.schema import (
    PARQUET_FIELD_ID,
    ArrayType,
    DataType,
    DecimalType,
    MapType,
    PrimitiveType,
    StructField,
    StructType,
    is_void_type,
)
from delta_pyds.read.scan import FileTask
from delta_pyds.storage.store import Storage

DEFAULT_BATCH_ROWS = 0  # 0: adaptive, about TARGET_BATCH_BYTES of decoded data per batch
TARGET_BATCH_BYTES = 64 * 1024 * 1024
MIN_BATCH_ROWS, MAX_BATCH_ROWS = 8192, 1 << 20


@dataclass
class ReadSpec:
    """What every task of a scan needs; pickled into each Spark task, so kept small."""

    storage: Storage
    output: StructType  # logical output columns, in order
    arrow_schema: pa.Schema  # the exact Arrow schema to yield
    partition_columns: tuple[str, ...]  # logical names, in the order of FileTask.partition_values
    physical_partition_columns: tuple[str, ...] = ()  # their keys in the log's partitionValues
    column_mapping_mode: str = "none"
    batch_rows: int = DEFAULT_BATCH_ROWS  # 0 = adaptive
    predicates: tuple = ()  # for row-group skipping
    table_schema: StructType | None = None
    partition_index: dict = field(default_factory=dict, init=False)

    def __post_init__(self) -> None:
        self.partition_index = {c.lower(): i for i, c in enumerate(self.partition_columns)}


def read_file(spec: ReadSpec, task: FileTask, *, rows: np.ndarray | None = None) -> Iterator[pa.RecordBatch]:
    """The rows of one file as batches of ``spec.arrow_schema``.

    ``rows`` (optional, sorted unique ``uint64`` row positions in the file) reads exactly
    those rows instead: the task's deletion vector is then not applied (change data feed
    uses it for the rows a deletion vector added or restored)."""
    storage = spec.storage
    _check_inside_root(task.path)
    path = storage.resolve(task.path)
    if rows is not None and len(rows) == 0:
        return
    data_fields = [f for f in spec.output if f.name.lower() not in spec.partition_index]
    try:
        source = storage.open_input(path)
    except FileNotFoundError:
        raise DataFileError(
            f"data file {path} is referenced by the table log but is missing; it may have been "
            "deleted by VACUUM or outside Delta"
        ) from None
    with source:
        pf = _open_parquet(source, path)
        deleted = task_deleted_rows(storage, task, max_rows=pf.metadata.num_rows) if rows is None else None
        file_schema = pf.schema_arrow
        selection = _file_selection(spec, file_schema, data_fields, path)
        columns = sorted({name for _, name in selection if name is not None})
        row_groups = _row_groups(pf, spec)
        rg_starts = np.concatenate(
            [[0], np.cumsum([pf.metadata.row_group(i).num_rows for i in range(pf.metadata.num_row_groups)])]
        )
        if rows is not None:
            row_groups = [rg for rg in row_groups if _any_between(rows, rg_starts[rg], rg_starts[rg + 1])]
        batch_rows = spec.batch_rows or _adaptive_batch_rows(pf.metadata, columns, file_schema)
        for rg in row_groups:
            start = int(rg_starts[rg])
            try:
                batches = pf.iter_batches(batch_size=batch_rows, row_groups=[rg], columns=columns, use_threads=False)
                for batch in batches:
                    n = batch.num_rows
                    out = _kept_rows(_convert(batch, spec, selection, task, n, path), deleted, rows, start, n)
                    start += n
                    if out.num_rows:
                        yield out
            except StoreFaultError:
                raise
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError, OSError) as exc:
                raise DataFileError(f"cannot read data file {path}: {exc}") from None
        _check_row_bounds(path, deleted, rows, pf.metadata.num_rows)


def _open_parquet(source: Any, path: str) -> pq.ParquetFile:
    """The Parquet file open on ``source`` (DataFileError naming ``path`` when it is not one;
    a store that kept failing raises its own error)."""
    try:
        return pq.ParquetFile(source, coerce_int96_timestamp_unit="us")
    except StoreFaultError:  # the store kept failing: not a bad file
        raise
    except (pa.ArrowInvalid, OSError) as exc:
        raise DataFileError(f"data file {path} is not a readable Parquet file: {exc}") from None


def _file_selection(
    spec: ReadSpec, file_schema: pa.Schema, data_fields: list[StructField], path: str
) -> list[tuple[StructField, str | None]]:
    """Per data column of the output, the file's column holding it (None: absent, read as
    nulls), each checked to be readable as the table's type."""
    found = [(f, _find_field(file_schema, f, spec.column_mapping_mode)) for f in data_fields]
    for f, i in found:
        check_file_column(None if i is None else file_schema.field(i).type, f, spec.column_mapping_mode, source=path)
    return [(f, None if i is None else file_schema.field(i).name) for f, i in found]


def _kept_rows(
    out: pa.RecordBatch, deleted: np.ndarray | None, rows: np.ndarray | None, start: int, n: int
) -> pa.RecordBatch:
    """``out`` (the file's ``n`` rows from ``start``) less the rows ``deleted`` names, or only
    the rows ``rows`` names."""
    from delta_pyds.protocol.deletion_vectors import keep_mask

    if deleted is not None:
        mask = keep_mask(deleted, start, n)
        return out if mask.all() else out.filter(pa.array(mask))
    if rows is not None:
        return out.filter(pa.array(~keep_mask(rows, start, n)))
    return out


def _check_row_bounds(path: str, deleted: np.ndarray | None, rows: np.ndarray | None, num_rows: int) -> None:
    """Raises DataFileError when a deletion vector names a row past the file's end."""
    if deleted is not None and len(deleted) and int(deleted[-1]) >= num_rows:
        raise DataFileError(
            f"the deletion vector of {path} deletes row {int(deleted[-1])} but the file has only {num_rows} rows"
        )
    if rows is not None and int(rows[-1]) >= num_rows:
        raise DataFileError(
            f"a deletion vector of {path} names row {int(rows[-1])} but the file has only {num_rows} rows"
        )


def _check_inside_root(path: str) -> None:
    """Refuses a task path :func:`delta_pyds.protocol.paths.unsafe_reason` objects to (a relative
    path leaving the table root, a malformed file: URI). Also checked when the snapshot
    is built; this covers every other way a task is made (change data feed, streaming)."""
    reason = unsafe_reason(path)
    if reason is not None:
        raise DataFileError(f"data file path {path!r} {reason}")


def _any_between(rows: np.ndarray, lo: int, hi: int) -> bool:
    """Whether sorted ``rows`` has a value in [lo, hi)."""
    i = np.searchsorted(rows, np.uint64(lo), side="left")
    return bool(i < len(rows) and rows[i] < np.uint64(hi))


def _adaptive_batch_rows(metadata: pq.FileMetaData, columns: list[str], schema: pa.Schema) -> int:
    """Rows per batch so that a batch decodes to about TARGET_BATCH_BYTES: large batches
    cut the per-batch cost of the Python/JVM hand-over, bounded ones keep memory flat."""
    rows = metadata.num_rows
    if rows <= 0 or metadata.num_row_groups == 0:
        return MIN_BATCH_ROWS
    wanted = set(columns)
    total = 0
    rg = metadata.row_group(0)
    for i in range(rg.num_columns):
        col = rg.column(i)
        if col.path_in_schema.split(".")[0] in wanted:
            total += col.total_uncompressed_size
    per_row = max(1.0, total / max(1, rg.num_rows))
    return int(min(MAX_BATCH_ROWS, max(MIN_BATCH_ROWS, TARGET_BATCH_BYTES // per_row)))


def task_deleted_rows(storage: Storage, task: FileTask, *, max_rows: int | None = None) -> np.ndarray | None:
    if not task.deletion_vector:
        return None
    from delta_pyds.protocol.deletion_vectors import DeletionVectorDescriptor, load_deleted_rows

    return load_deleted_rows(storage, DeletionVectorDescriptor.from_dict(task.deletion_vector), max_rows=max_rows)


def _row_groups(pf: pq.ParquetFile, spec: ReadSpec) -> list[int]:
    all_groups = list(range(pf.metadata.num_row_groups))
    if not spec.predicates or spec.table_schema is None:
        return all_groups
    try:
        from delta_pyds.skipping.files import select_row_groups
    except ImportError:  # pragma: no cover
        return all_groups
    return list(
        select_row_groups(
            pf.metadata, spec.predicates, schema=spec.table_schema, column_mapping_mode=spec.column_mapping_mode
        )
    )


def _find_field(schema: pa.Schema, f: StructField, mode: str) -> int | None:
    """Index of the file column holding logical field ``f``, or None if absent."""
    if mode == "id" and f.field_id is not None:
        for i, pf_field in enumerate(schema):
            meta = pf_field.metadata or {}
            if meta.get(PARQUET_FIELD_ID) is not None and int(meta[PARQUET_FIELD_ID]) == f.field_id:
                return i
    name = f.physical_name(mode)
    i = schema.get_field_index(name)
    if i >= 0:
        return i
    if mode == "none":
        lowered = name.lower()
        matches = [j for j, x in enumerate(schema) if x.name.lower() == lowered]
        if len(matches) == 1:
            return matches[0]
    return None


def _convert(
    batch: pa.RecordBatch, spec: ReadSpec, selection: Any, task: FileTask, n: int, source: str = ""
) -> pa.RecordBatch:
    arrays = []
    data_iter = iter(selection)
    for out_field, target in zip(spec.output, spec.arrow_schema):
        p = spec.partition_index.get(out_field.name.lower())
        if p is not None:
            raw = task.partition_values[p] if p < len(task.partition_values) else None
            value = parse_partition_values(pa.array([raw], pa.string()), out_field.type, column=out_field.name)
            arrays.append(_repeat(value, n, target.type))
            continue
        f, name = next(data_iter)
        if name is None:
            arrays.append(pa.nulls(n, target.type))
            continue
        arrays.append(
            conform(batch.column(name), f.type, target.type, spec.column_mapping_mode, column=f.name, source=source)
        )
    return pa.RecordBatch.from_arrays(arrays, schema=spec.arrow_schema)


def _repeat(value: pa.Array, n: int, target: pa.DataType) -> pa.Array:
    scalar = value[0]
    if not scalar.is_valid:
        return pa.nulls(n, target)
    arr = pa.repeat(scalar, n)
    return arr if arr.type == target else arr.cast(target)


# ------------------------------------------------------------------------- conversion
def conform(
    arr: pa.Array, dtype: DataType, target: pa.DataType, mode: str, *, column: str = "?", source: str = ""
) -> pa.Array:
    """A physical column -> the logical Arrow type ``target`` of Delta type ``dtype``.

    Callers check the physical type first (:func:`check_file_column`); ``column`` and
    ``source`` (the file) name the column in errors (values out of range of a narrowing
    read, invalid UTF-8 in binary read as string)."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if arr.type == target and mode == "none":
        return arr
    if isinstance(dtype, PrimitiveType) and dtype.name == "variant":
        from delta_pyds.variant.shredding import reconstruct_variant

        out = reconstruct_variant(arr)
        return out if out.type == target else out.cast(target)
    if isinstance(dtype, StructType):
        if not pa.types.is_struct(arr.type):
            raise _type_error(source, column, dtype, arr.type)
        children = []
        physical = {arr.type.field(i).name: i for i in range(arr.type.num_fields)}
        for f, tf in zip(dtype.fields, target):
            j = _struct_child(arr.type, f, mode, physical)
            if j is None:
                children.append(pa.nulls(len(arr), tf.type))
            else:
                children.append(
                    conform(
                        _struct_child_array(arr, j), f.type, tf.type, mode, column=f"{column}.{f.name}", source=source
                    )
                )
        return rebuild_struct(arr, children, target)
    if isinstance(dtype, ArrayType):
        if not (pa.types.is_list(arr.type) or pa.types.is_large_list(arr.type)):
            raise _type_error(source, column, dtype, arr.type)
        values = conform(
            arr.values, dtype.element_type, target.value_type, mode, column=f"{column}.element", source=source
        )
        return rebuild_list(arr, values, target)
    if isinstance(dtype, MapType):
        if not pa.types.is_map(arr.type):
            raise _type_error(source, column, dtype, arr.type)
        keys = conform(arr.keys, dtype.key_type, target.key_type, mode, column=f"{column}.key", source=source)
        items = conform(arr.items, dtype.value_type, target.item_type, mode, column=f"{column}.value", source=source)
        return rebuild_map(arr, keys, items, target)
    return _cast_primitive(arr, target, column, source)


def _struct_child(struct_type: pa.StructType, f: StructField, mode: str, physical: dict) -> int | None:
    if mode == "id" and f.field_id is not None:
        for i in range(struct_type.num_fields):
            meta = struct_type.field(i).metadata or {}
            if meta.get(PARQUET_FIELD_ID) is not None and int(meta[PARQUET_FIELD_ID]) == f.field_id:
                return i
    name = f.physical_name(mode)
    if name in physical:
        return physical[name]
    if mode == "none":
        lowered = {k.lower(): v for k, v in physical.items()}
        return lowered.get(name.lower())
    return None


def _struct_child_array(arr: pa.StructArray, j: int) -> pa.Array:
    # .field() ignores the parent's offset/validity; flatten() applies both
    return arr.flatten()[j] if arr.offset or arr.null_count else arr.field(j)


def _cast_primitive(arr: pa.Array, target: pa.DataType, column: str = "?", source: str = "") -> pa.Array:
    if arr.type == target:
        return arr
    if pa.types.is_null(target):
        return pa.nulls(len(arr))
    if pa.types.is_timestamp(target) and pa.types.is_timestamp(arr.type):
        if arr.type.tz is None and target.tz is not None:
            arr = arr.cast(pa.timestamp(arr.type.unit, tz="UTC"))
        elif arr.type.tz is not None and target.tz is None:
            arr = arr.cast(pa.timestamp(arr.type.unit))
        return arr.cast(target, safe=False)  # ns -> us truncates, as Spark does
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
        if arr.type == target:
            return arr
    try:
        return arr.cast(target)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        where = f" of data file {source}" if source else ""
        raise DataFileError(f"cannot read column {column!r}{where}, a {arr.type} column, as {target}: {exc}") from None


# ------------------------------------------------------------------ physical types
_SIGNED_BITS = {pa.int8(): 8, pa.int16(): 16, pa.int32(): 32, pa.int64(): 64}
_UNSIGNED_BITS = {pa.uint8(): 8, pa.uint16(): 16, pa.uint32(): 32, pa.uint64(): 64}
_INTEGER_TARGET_BITS = {"byte": 8, "short": 16, "integer": 32, "long": 64}
# integer digits a decimal needs to hold every value of an integer type: delta-spark widens
# byte, short, int, long to decimal(p, s) with p - s >= 3, 5, 10, 20 (Spark's
# DecimalType.forType; kernel-rs/type-widening has byte -> decimal(4,1)); the protocol text's
# minimum decimal(10 + k1, k2) for byte and short is stricter than the tables that exist
_DECIMAL_DIGITS = {8: 3, 16: 5, 32: 10, 64: 20}
_STRINGS = (pa.types.is_string, pa.types.is_large_string, getattr(pa.types, "is_string_view", lambda t: False))
_BINARIES = (
    pa.types.is_binary,
    pa.types.is_large_binary,
    pa.types.is_fixed_size_binary,
    getattr(pa.types, "is_binary_view", lambda t: False),
)


def check_file_column(
    physical: pa.DataType | None, f: StructField, mode: str, *, source: str = "", column: str | None = None
) -> None:
    """Raises unless data file column ``f`` (``physical``: its Arrow type in the file, None
    when the file lacks it) can be read as ``f``'s declared type without inventing data.

    A missing nullable column (or struct field) reads as null; a missing non-nullable one
    is a :class:`DataFileError`. Types: see :func:`readable_as`."""
    name = f.name if column is None else column
    if physical is None:
        if not f.nullable:
            raise DataFileError(
                f"data file {source} has no column {name!r}, which the table declares NOT NULL "
                f"({f.type.simple_string()}); only nullable columns may be missing from older files"
            )
        return
    _check_type(physical, f.type, mode, source, name)


def _check_type(physical: pa.DataType, dtype: DataType, mode: str, source: str, column: str) -> None:
    if pa.types.is_dictionary(physical):
        physical = physical.value_type
    if pa.types.is_null(physical):  # a column of nulls only (Parquet's UNKNOWN logical type)
        return
    if isinstance(dtype, PrimitiveType) and dtype.name == "variant":
        if not pa.types.is_struct(physical):
            raise _type_error(source, column, dtype, physical)
        return
    if isinstance(dtype, StructType):
        if not pa.types.is_struct(physical):
            raise _type_error(source, column, dtype, physical)
        names = {physical.field(i).name: i for i in range(physical.num_fields)}
        for child in dtype.fields:
            j = _struct_child(physical, child, mode, names)
            check_file_column(
                None if j is None else physical.field(j).type,
                child,
                mode,
                source=source,
                column=f"{column}.{child.name}",
            )
        return
    if isinstance(dtype, ArrayType):
        if not (pa.types.is_list(physical) or pa.types.is_large_list(physical)):
            raise _type_error(source, column, dtype, physical)
        _check_type(physical.value_type, dtype.element_type, mode, source, f"{column}.element")
        return
    if isinstance(dtype, MapType):
        if not pa.types.is_map(physical):
            raise _type_error(source, column, dtype, physical)
        _check_type(physical.key_type, dtype.key_type, mode, source, f"{column}.key")
        _check_type(physical.item_type, dtype.value_type, mode, source, f"{column}.value")
        return
    if not readable_as(physical, dtype):
        raise _type_error(source, column, dtype, physical)


def readable_as(physical: pa.DataType, dtype: DataType) -> bool:
    """Whether a primitive file column of Arrow type ``physical`` may be read as ``dtype``:
    the same logical type, or a widening the protocol's typeWidening feature allows (decimals
    and integers by their steps below, every other primitive by its rule in :data:`_READABLE_AS`)."""
    if pa.types.is_dictionary(physical):
        physical = physical.value_type
    if pa.types.is_null(physical):
        return True
    if isinstance(dtype, DecimalType):
        return _readable_as_decimal(physical, dtype)
    if not isinstance(dtype, PrimitiveType):
        return False
    if is_void_type(dtype):
        return True
    name = dtype.name
    if name in _INTEGER_TARGET_BITS:
        return _readable_as_integer(physical, _INTEGER_TARGET_BITS[name])
    rule = _READABLE_AS.get(name)
    return rule is not None and rule(physical)


def _readable_as_decimal(physical: pa.DataType, dtype: DecimalType) -> bool:
    """A decimal with no more scale and no more integer digits, or an integer type whose every
    value fits (:data:`_DECIMAL_DIGITS`)."""
    if pa.types.is_decimal(physical):
        return dtype.scale >= physical.scale and dtype.precision - dtype.scale >= physical.precision - physical.scale
    bits = _SIGNED_BITS.get(physical) or _UNSIGNED_BITS.get(physical)
    return bits is not None and dtype.precision - dtype.scale >= _DECIMAL_DIGITS[bits]


def _readable_as_integer(physical: pa.DataType, target: int) -> bool:
    """A signed integer no wider than ``target`` bits (or INT32 for byte and short), or an
    unsigned one narrower."""
    if physical in _SIGNED_BITS:
        # Spark writes byte and short as INT32 annotated INT(8)/INT(16); a value out of
        # range fails the (safe) cast
        return _SIGNED_BITS[physical] <= target or (physical == pa.int32() and target < 32)
    return physical in _UNSIGNED_BITS and _UNSIGNED_BITS[physical] < target


def _readable_as_float(physical: pa.DataType) -> bool:
    return pa.types.is_float32(physical) or pa.types.is_float16(physical)


def _readable_as_double(physical: pa.DataType) -> bool:
    return (
        pa.types.is_floating(physical) or _SIGNED_BITS.get(physical, 64) <= 32 or _UNSIGNED_BITS.get(physical, 64) <= 16
    )


def _readable_as_string(physical: pa.DataType) -> bool:
    return any(t(physical) for t in _STRINGS) or any(t(physical) for t in _BINARIES[:2])


def _readable_as_binary(physical: pa.DataType) -> bool:
    return any(t(physical) for t in _BINARIES) or any(t(physical) for t in _STRINGS)


def _readable_as_timestamp_ntz(physical: pa.DataType) -> bool:
    return pa.types.is_timestamp(physical) or pa.types.is_date32(physical)


# a primitive type name (other than decimals and integers) -> which Arrow types read as it
_READABLE_AS: dict[str, Callable[[pa.DataType], bool]] = {
    "boolean": pa.types.is_boolean,
    "float": _readable_as_float,
    "double": _readable_as_double,
    "string": _readable_as_string,
    "binary": _readable_as_binary,
    "date": pa.types.is_date32,
    "timestamp": pa.types.is_timestamp,  # INT96 (naive), millis/micros/nanos, UTC or not
    "timestamp_ntz": _readable_as_timestamp_ntz,
}


def _type_error(source: str, column: str, dtype: DataType, physical: pa.DataType) -> ColumnTypeError:
    declared = dtype.simple_string()
    where = f"data file {source}" if source else "a data file"
    return ColumnTypeError(
        f"{where} stores column {column!r} as {physical}, which cannot be read as the table's "
        f"declared type {declared}: the file does not match the table schema (only the same type "
        "or a protocol type widening is read)",
        file=source,
        column=column,
        declared=declared,
        physical=str(physical),
    )
