"""Executor-side writing: Arrow batches in, Parquet data files and add actions out.

One call of :func:`write_task` handles one Spark task. For every batch it brings the
columns to the table's logical shape (names, order, types; missing columns null,
generated columns computed), enforces the write's rules (:mod:`delta_pyds.write.constraints`),
splits the rows by partition values, and buffers them per partition; buffers are
written as large row groups (default up to 128 MiB of Arrow data) into one open file
per partition, rolled over at ``targetFileSize`` / ``maxRecordsPerFile``. Parquet
encoding runs on one background thread per task (pyarrow releases the GIL), so it
overlaps with receiving the next batches; at most one row group waits for it.

Guarantees:

* data files get unique names (a UUID per file, plus the task id) under Hive-style
  partition directories (``col=value``, escaped as Spark escapes them; null as
  ``__HIVE_DEFAULT_PARTITION__``; physical column names under column mapping), are
  never overwritten, and hold the physical columns only (no partition columns unless
  the table materializes them), every field nullable, with Parquet field ids under
  column mapping, timestamps as INT64 microseconds (UTC-adjusted for ``timestamp``);
* each returned add action has ``path`` (URI-encoded, relative), ``partitionValues``
  (protocol serialization; timestamps as ISO-8601 UTC), ``size``,
  ``modificationTime``, ``dataChange`` and ``stats`` (see :mod:`delta_pyds.protocol.stats`);
* if anything fails, the files this task wrote are deleted before the error
  propagates (a killed task may still leave files: no log entry names them).
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import posixpath
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import quote

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from delta_pyds.protocol.action_types import AddFile
from delta_pyds.protocol.identity import IdentityGenerator
from delta_pyds.protocol.partition_values import HIVE_DEFAULT_PARTITION, escape_path_name, serialize_partition_value
from delta_pyds.protocol.schema import DataType, PrimitiveType, StructType, is_void_type
from delta_pyds.protocol.schema_evolution import conform_input, logical_arrow_schema, physical_arrow_schema, to_physical
from delta_pyds.protocol.stats import FileStats, StatsColumn
from delta_pyds.storage.store import Storage
from delta_pyds.transaction.staged_files import cleanup_on_failure
from delta_pyds.write.constraints import WriteChecks

if TYPE_CHECKING:
    from concurrent.futures import ThreadPoolExecutor

log = logging.getLogger(__name__)

DEFAULT_ROW_GROUP_BYTES = 128 << 20
MAX_PENDING_WRITES = 1
DEFAULT_ROW_GROUP_ROWS = 4 << 20
DEFAULT_BUFFER_BYTES = 512 << 20
MAX_OPEN_FILES = 64

_URI_SAFE = "/=:@!$&'()*+,;-._~"


def encode_path(relative: str) -> str:
    """A relative filesystem path as the URI string stored in ``add.path``."""
    return quote(relative, safe=_URI_SAFE)


def partition_dir(physical_names: Sequence[str], values: Sequence[str | None]) -> str:
    parts = []
    for name, value in zip(physical_names, values):
        v = HIVE_DEFAULT_PARTITION if value is None or value == "" else escape_path_name(value)
        parts.append(f"{escape_path_name(name)}={v}")
    return "/".join(parts)


def serialize_value(value: Any, dtype: DataType) -> str | None:
    """A partition value as the string stored in ``partitionValues``."""
    if value is None:
        return None
    if isinstance(dtype, PrimitiveType):
        if dtype.name == "timestamp":
            if value.tzinfo is not None:
                value = value.astimezone(dt.timezone.utc).replace(tzinfo=None)
            return value.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        if dtype.name == "timestamp_ntz":
            return value.strftime("%Y-%m-%d %H:%M:%S.%f")
        if dtype.name == "binary":
            return bytes(value).decode("latin-1")
        if dtype.name == "string":
            return value or None  # the protocol reads "" as null; write it as null (as Spark does)
    return serialize_partition_value(value, dtype)


@dataclass
class WriteSpec:
    """What every task of a write needs; pickled into each Spark task, so kept small."""

    storage: Storage
    table_schema: StructType  # logical, the whole table
    input_columns: tuple[str, ...]  # the DataFrame's columns, in order
    partition_columns: tuple[str, ...] = ()  # logical names
    column_mapping_mode: str = "none"
    stats_columns: tuple[StatsColumn, ...] = ()
    tight_bounds: bool = False
    compression: str = "snappy"
    target_file_size: int | None = None
    max_records_per_file: int | None = None
    materialize_partition_columns: bool = False
    checks: WriteChecks | None = None
    identity: tuple = ()  # IdentityColumn: identity columns this write generates
    directory: str = ""  # under the table root, e.g. "_change_data" for change data files
    row_group_bytes: int = DEFAULT_ROW_GROUP_BYTES
    buffer_bytes: int = DEFAULT_BUFFER_BYTES
    # derived (computed lazily on the executor)
    _derived: dict = field(default_factory=dict, repr=False)

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_derived"] = {}
        return state

    @property
    def derived(self) -> dict:
        if not self._derived:
            self._derive()
        return self._derived

    def _derive(self) -> None:
        schema = self.table_schema
        lowered = {c.lower(): i for i, c in enumerate(self.input_columns)}
        pset = {c.lower() for c in self.partition_columns}
        data_fields = [
            f
            for f in schema.fields
            if (self.materialize_partition_columns or f.name.lower() not in pset) and not is_void_type(f.type)
        ]
        field_index = {f.name.lower(): i for i, f in enumerate(schema.fields)}
        self._derived.update(
            logical_schema=logical_arrow_schema(schema),
            input_index=[lowered.get(f.name.lower()) for f in schema.fields],
            data_fields=data_fields,
            data_index=[field_index[f.name.lower()] for f in data_fields],
            physical_schema=physical_arrow_schema(data_fields, self.column_mapping_mode),
            partition_index=[field_index[c.lower()] for c in self.partition_columns],
            partition_fields=[schema.field(c) for c in self.partition_columns],
            physical_partition_names=[
                schema.field(c).physical_name(self.column_mapping_mode) for c in self.partition_columns
            ],
        )


@dataclass
class TaskResult:
    adds: list  # add action dicts
    num_rows: int = 0
    identity: dict = field(default_factory=dict)  # identity column -> extreme generated value


def write_task(spec: WriteSpec, batches: Iterable[pa.RecordBatch], *, task_id: int = 0, attempt: int = 0) -> TaskResult:
    """Writes one task's batches; returns the add actions of the files written."""
    writer = _TaskWriter(spec, task_id)
    with cleanup_on_failure(writer.abort, what="the files of a failed write task"):
        for batch in batches:
            if batch.num_rows:
                writer.write(batch)
        writer.close()
    return TaskResult(writer.adds, writer.num_rows, dict(writer.identity.marks) if writer.identity is not None else {})


def to_logical(spec: WriteSpec, batch: pa.RecordBatch) -> pa.RecordBatch:
    """A batch as Spark sends it -> the table's logical columns, in table order."""
    d = spec.derived
    arrays = []
    n = batch.num_rows
    for f, target, src in zip(spec.table_schema.fields, d["logical_schema"], d["input_index"]):
        if src is None:
            arrays.append(pa.nulls(n, target.type))
        else:
            arr = batch.column(src)
            arrays.append(arr if arr.type == target.type else conform_input(arr, f.type, target.type, column=f.name))
    return pa.RecordBatch.from_arrays(arrays, schema=d["logical_schema"])


# ---------------------------------------------------------------------------- files
_DICTIONARY_SAMPLE_ROWS = 1 << 16
# A column chunk's dictionary stops growing past this many bytes of values and the rest of
# the chunk is written plain. Spark's writer (parquet-mr) stops at 1 MiB counting a 4-byte
# length per string, which is about where 512 KiB of short strings ends up: high-cardinality
# strings fall back like in Spark's files (same size), at ~20% less encoding time than
# pyarrow's 1 MiB default (measured on a 2.5M-row, 100k-distinct-string column).
DICTIONARY_PAGE_BYTES = 512 << 10


def dictionary_columns(table: pa.Table) -> list[str] | bool:
    """The columns worth dictionary-encoding, judged on the first rows a file gets.

    Parquet writers try a dictionary for every column and fall back to plain encoding
    once it outgrows its page; for fixed-width columns whose first 64k rows hold no
    repeated value (ids, timestamps, measurements) that attempt costs encoding time and
    makes the file bigger. Those columns are written plain; strings, binaries, booleans,
    nested columns and any column with repeats keep the dictionary. Only a performance
    choice: every encoding reads back identically."""
    plain = set()
    sample = table.slice(0, _DICTIONARY_SAMPLE_ROWS)
    for name, column in zip(table.column_names, sample.columns):
        t = column.type
        if not (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_temporal(t) or pa.types.is_decimal(t)):
            continue
        valid = len(column) - column.null_count
        if valid >= 1024 and pc.count_distinct(column).as_py() == valid:
            plain.add(name)
    if not plain:
        return True
    return [n for n in _leaf_paths(table.schema) if n.split(".", 1)[0] not in plain]


def _leaf_paths(schema: pa.Schema) -> list[str]:
    """Parquet leaf column paths of an Arrow schema (as the writer names them)."""
    import io

    buf = io.BytesIO()
    pq.write_table(schema.empty_table(), buf, use_compliant_nested_type=True)
    buf.seek(0)
    parquet_schema = pq.ParquetFile(buf).schema
    return [parquet_schema.column(i).path for i in range(len(parquet_schema))]


class _OpenFile:
    def __init__(
        self, spec: WriteSpec, rel_dir: str, partition_values: dict, task_id: int, first: pa.Table | None = None
    ):
        self.spec = spec
        name = f"part-{task_id:05d}-{uuid.uuid4()}.c000.{_codec_suffix(spec.compression)}parquet"
        self.rel = posixpath.join(rel_dir, name) if rel_dir else name
        self.full = spec.storage.join(self.rel)
        self.partition_values = partition_values
        self.stats = FileStats(spec.stats_columns, tight_bounds=spec.tight_bounds)
        self.rows = 0
        storage = spec.storage
        if storage.protocol == "file":
            os.makedirs(os.path.dirname(self.full), exist_ok=True)
            self.sink = open(self.full, "wb")
        else:
            self.sink = storage.fs.open(self.full, "wb")
        self.writer = pq.ParquetWriter(
            self.sink,
            spec.derived["physical_schema"],
            compression=spec.compression,
            use_dictionary=dictionary_columns(first) if first is not None else True,
            dictionary_pagesize_limit=DICTIONARY_PAGE_BYTES,
            store_decimal_as_integer=True,
            use_compliant_nested_type=True,
        )

    def write(self, table: pa.Table) -> None:
        self.writer.write_table(table, row_group_size=max(table.num_rows, 1))
        for b in table.to_batches():
            self.stats.update(b)
        self.rows += table.num_rows

    @property
    def size(self) -> int:
        try:
            return self.sink.tell()
        except (OSError, ValueError):  # pragma: no cover
            return 0

    def close(self) -> AddFile:
        self.writer.close()
        metadata = self.writer.writer.metadata if hasattr(self.writer, "writer") else None
        size = self.sink.tell()
        self.sink.close()
        if metadata is None:  # pragma: no cover - older pyarrow
            metadata = pq.ParquetFile(self.spec.storage.open_input(self.full)).metadata
        return {
            "path": encode_path(self.rel),
            "partitionValues": dict(self.partition_values),
            "size": size,
            "modificationTime": int(time.time() * 1000),
            "dataChange": True,
            "stats": self.stats.to_json(metadata),
        }

    def discard(self) -> None:
        try:
            self.writer.close()
        except Exception:
            pass
        try:
            self.sink.close()
        except Exception:
            pass
        self.spec.storage.delete(self.full)


def _codec_suffix(codec: str) -> str:
    return "" if codec == "none" else f"{codec}."


class _Partition:
    def __init__(self, key: tuple, rel_dir: str, values: dict) -> None:
        self.key = key
        self.rel_dir = rel_dir
        self.values = values
        self.buffer: list[pa.RecordBatch] = []
        self.buffered_bytes = 0
        self.buffered_rows = 0
        self.file: _OpenFile | None = None
        self.last_used = 0


class _TaskWriter:
    def __init__(self, spec: WriteSpec, task_id: int):
        self.spec = spec
        self.task_id = task_id
        self.partitions: dict = {}
        self.adds: list[AddFile] = []
        self.written: list[str] = []
        self.num_rows = 0
        self.buffered = 0
        self.tick = 0
        self._open_parts: list[_Partition] = []  # touched by the file thread only
        d = spec.derived
        self.checks = spec.checks if spec.checks else None
        self.identity = IdentityGenerator(spec.identity, task_id) if spec.identity else None
        self.data_index = d["data_index"]
        self.physical_schema = d["physical_schema"]
        self.row_group_bytes = spec.row_group_bytes
        self._pool: ThreadPoolExecutor | None = None
        self._pending: deque = deque()
        if spec.target_file_size:
            self.row_group_bytes = max(1 << 20, min(self.row_group_bytes, spec.target_file_size))

    # -- batches ------------------------------------------------------------------
    def write(self, batch: pa.RecordBatch) -> None:
        logical = to_logical(self.spec, batch)
        if self.identity is not None:
            logical = self.identity.fill(logical)
        if self.checks is not None:
            logical = self.checks.apply(logical)
        self.num_rows += logical.num_rows
        for key, values, part in self._split(logical):
            self._buffer(key, values, self._physical(part))

    def _physical(self, logical: pa.RecordBatch) -> pa.RecordBatch:
        fields = self.spec.derived["data_fields"]
        arrays = []
        for f, i, target in zip(fields, self.data_index, self.physical_schema):
            arr = logical.column(i)
            arrays.append(
                arr if arr.type == target.type else to_physical(arr, f.type, target.type, self.spec.column_mapping_mode)
            )
        return pa.RecordBatch.from_arrays(arrays, schema=self.physical_schema)

    def _split(self, batch: pa.RecordBatch) -> Iterator:
        d = self.spec.derived
        pidx = d["partition_index"]
        if not pidx:
            yield (), (), batch
            return
        n = batch.num_rows
        codes: Any = None  # int64 codes, set by the loop (pidx is not empty)
        dictionaries = []
        for i in pidx:
            enc = pc.dictionary_encode(batch.column(i), null_encoding="encode")
            idx = enc.indices.to_numpy(zero_copy_only=False).astype(np.int64)
            dictionaries.append(enc.dictionary)
            size = max(len(enc.dictionary), 1)
            codes = idx if codes is None else codes * size + idx
        first = int(codes[0])
        if (codes == first).all():
            yield self._key_of(batch, pidx, 0) + (batch,)
            return
        order = np.argsort(codes, kind="stable")
        sorted_codes = codes[order]
        bounds = np.flatnonzero(np.diff(sorted_codes)) + 1
        starts = np.concatenate([[0], bounds])
        ends = np.concatenate([bounds, [n]])
        taken = batch.take(pa.array(order))
        for s, e in zip(starts, ends):
            part = taken.slice(int(s), int(e - s))
            yield self._key_of(part, pidx, 0) + (part,)

    def _key_of(self, batch: pa.RecordBatch, pidx: Sequence[int], row: int) -> tuple:
        d = self.spec.derived
        values = []
        for i, f in zip(pidx, d["partition_fields"]):
            values.append(serialize_value(batch.column(i)[row].as_py(), f.type))
        key = tuple(values)
        return key, values

    # -- buffering ------------------------------------------------------------------
    def _buffer(self, key: tuple, values: list[str | None], part: pa.RecordBatch) -> None:
        p = self.partitions.get(key)
        if p is None:
            d = self.spec.derived
            names = d["physical_partition_names"]
            rel_dir = partition_dir(names, values) if names else ""
            if self.spec.directory:
                rel_dir = posixpath.join(self.spec.directory, rel_dir) if rel_dir else self.spec.directory
            p = _Partition(key, rel_dir, dict(zip(names, values)))
            self.partitions[key] = p
        self.tick += 1
        p.last_used = self.tick
        size = part.nbytes
        p.buffer.append(part)
        p.buffered_bytes += size
        p.buffered_rows += part.num_rows
        self.buffered += size
        if p.buffered_bytes >= self.row_group_bytes or p.buffered_rows >= DEFAULT_ROW_GROUP_ROWS:
            self._flush(p)
        elif self.buffered > self.spec.buffer_bytes:
            largest = max(self.partitions.values(), key=lambda x: x.buffered_bytes)
            self._flush(largest)

    def _flush(self, p: _Partition) -> None:
        """Hands the partition's buffered rows to the file thread as one row group."""
        if not p.buffer:
            return
        table = pa.Table.from_batches(p.buffer, schema=self.physical_schema)
        self.buffered -= p.buffered_bytes
        p.buffer, p.buffered_bytes, p.buffered_rows = [], 0, 0
        self._submit(self._write_rows, p, table)

    # -- the file thread: every file operation runs there, in submission order, so
    # encoding overlaps with receiving the next batches (pyarrow releases the GIL) --
    def _submit(self, fn: Callable[..., Any], *args: Any) -> None:
        if self._pool is None:
            from concurrent.futures import ThreadPoolExecutor

            self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="pydelta-writer")
        while self._pending and self._pending[0].done():
            self._pending.popleft().result()  # re-raises a failure of the file thread
        if len(self._pending) >= MAX_PENDING_WRITES:
            self._pending.popleft().result()
        self._pending.append(self._pool.submit(fn, *args))

    def _drain(self) -> None:
        while self._pending:
            self._pending.popleft().result()

    def _write_rows(self, p: _Partition, table: pa.Table) -> None:
        limit = self.spec.max_records_per_file
        offset = 0
        while offset < table.num_rows:
            if p.file is None:
                self._open(p, table.slice(offset))
            file = cast(_OpenFile, p.file)  # opened above
            take = table.num_rows - offset
            if limit:
                take = min(take, limit - file.rows)
            file.write(table.slice(offset, take))
            offset += take
            if (limit and file.rows >= limit) or (
                self.spec.target_file_size and file.size >= self.spec.target_file_size
            ):
                self._close_file(p)

    def _open(self, p: _Partition, first: pa.Table | None = None) -> None:
        if len(self._open_parts) >= MAX_OPEN_FILES:
            victim = min(self._open_parts, key=lambda x: x.last_used)
            self._close_file(victim)
        p.file = _OpenFile(self.spec, p.rel_dir, p.values, self.task_id, first)
        self.written.append(p.file.full)
        self._open_parts.append(p)

    def _close_file(self, p: _Partition) -> None:
        if p.file is None:
            return
        if p.file.rows:
            self.adds.append(p.file.close())
        else:
            p.file.discard()
        p.file = None
        self._open_parts.remove(p)

    def _close_all(self) -> None:
        for p in list(self._open_parts):
            self._close_file(p)

    def close(self) -> None:
        for p in self.partitions.values():
            self._flush(p)
        self._submit(self._close_all)
        self._drain()
        self._shutdown()

    def _shutdown(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None

    def abort(self) -> None:
        """Waits for the file thread, discards open files and deletes the files written.
        The write's failure is the caller's to report, so a failure of a pending file
        operation is dropped; an interrupt (``KeyboardInterrupt``, ``SystemExit``) while
        waiting is not: the cleanup still runs, then it is raised."""
        interrupted: BaseException | None = None
        for fut in self._pending:
            try:
                fut.result()
            except Exception:  # the file thread's failure: the write failed anyway
                pass
            except BaseException as exc:  # an interrupt: cleaned up, then raised
                interrupted = interrupted or exc
        self._pending.clear()
        self._shutdown()
        for p in list(self._open_parts):
            cast(_OpenFile, p.file).discard()  # open parts have a file
            p.file = None
        self._open_parts.clear()
        for path in self.written:
            try:
                self.spec.storage.delete(path)
            except Exception:  # pragma: no cover - best effort
                log.warning("could not delete %s after a failed write", path)
        if interrupted is not None:
            raise interrupted
