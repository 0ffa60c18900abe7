"""Compaction of small files with pyarrow alone: each bin of files read and written in one
process (an executor task of OPTIMIZE, or the committing process of an auto compaction).

Guarantees:

* compaction evaluates no user expression, so a bin's output holds exactly the rows of
  its input files: every row of each file minus the rows its deletion vector deletes
  (the vector is read and checked by :func:`delta_pyds.read.file_reader.read_file`),
  columns read by physical name or field id and written as the table's write path writes
  them (column mapping, statistics, partition directories, compression);
* each bin is written as one file (bins hold at most about the target size), the bin's
  only output: :func:`compact_bin` returns its add action with ``dataChange=false``, and
  deletes what it wrote if it fails;
* :func:`local_compaction_refusal` names why a table's compaction needs Spark (row
  tracking, whose row ids a rewrite must carry; clustering, whose rows a rewrite sorts):
  those tables are never compacted here. No Spark."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace

import pyarrow as pa

from delta_pyds.protocol.action_types import AddFile
from delta_pyds.protocol.clustering import table_clustering
from delta_pyds.protocol.features import is_enabled
from delta_pyds.protocol.table_properties import ROW_TRACKING_SUSPENDED, is_true
from delta_pyds.read.file_reader import ReadSpec, read_file
from delta_pyds.read.scan import FileTask, iter_tasks, plan_partitions
from delta_pyds.read.scan_plan import read_spec, visible_schema
from delta_pyds.table.snapshot import Snapshot
from delta_pyds.transaction.staged_files import delete_on_failure
from delta_pyds.write.parquet_writer import WriteSpec, write_task
from delta_pyds.write.rewrite import plan_rewrite

_ONE_PARTITION = 1 << 62
READ_THREADS = 4
READ_AHEAD = 8  # files read ahead of the writer (a bin holds at most about the target size)
COALESCE_ROWS = 1 << 17  # small files' batches are handed to the writer joined up to this many rows
COALESCE_BYTES = 32 << 20  # or this many bytes


@dataclass
class BinCompactor:
    """What a task compacting bins needs (pickled into each task, so kept small)."""

    read: ReadSpec
    write: WriteSpec


def local_compaction_refusal(snap: Snapshot) -> str | None:
    """Why ``snap``'s files cannot be compacted with pyarrow alone (None when they can)."""
    if is_enabled(snap.protocol, "rowTracking") and not is_true(snap.configuration, ROW_TRACKING_SUSPENDED):
        return "the table tracks row ids (a rewrite carries them through Spark)"
    if table_clustering(snap.schema, snap.domain_metadata, snap.column_mapping_mode) is not None:
        return "the table is clustered (a rewrite sorts its rows by the clustering columns)"
    return None


def bin_compactor(snap: Snapshot, target_file_size: int) -> BinCompactor:
    """The read and write specs of compacting ``snap``'s files into files of about
    ``target_file_size`` bytes (the write planned as every rewrite is)."""
    output = visible_schema(snap.schema)
    write = plan_rewrite(snap.storage, snap.schema, target_file_size=target_file_size, snapshot=snap).spec
    if write is None:  # pragma: no cover  (a rewrite of an existing table always has a spec)
        raise RuntimeError("internal: a compaction's write has no spec")
    # a bin (at most about the target size) is written as one file
    write = replace(write, max_records_per_file=None, target_file_size=None, _derived={})
    return BinCompactor(read_spec(snap, output), write)


def bin_tasks(snap: Snapshot, files: pa.Table) -> list[FileTask]:
    """The read tasks of ``files`` (rows of ``snap.files``), one per file."""
    groups = plan_partitions(
        files, snap.physical_partition_columns, max_partition_bytes=_ONE_PARTITION, open_cost=0, parallelism=1
    )
    return [t for g in groups for t in iter_tasks(g)]


def compact_bin(compactor: BinCompactor, tasks: Sequence[FileTask], *, task_id: int = 0) -> list[AddFile]:
    """Reads the files of one bin and writes their rows as new files; their add actions
    (``dataChange=false``)."""

    def read(task: FileTask) -> list[pa.RecordBatch]:
        return list(read_file(compactor.read, task))

    def batches() -> Iterator[pa.RecordBatch]:
        # small files cost their open and footer more than their rows: read a few ahead in
        # threads (pyarrow decodes without the GIL), in order
        with ThreadPoolExecutor(max_workers=READ_THREADS) as pool:
            pending: deque = deque(pool.submit(read, t) for t in tasks[:READ_AHEAD])
            rest = iter(tasks[READ_AHEAD:])
            while pending:
                done = pending.popleft().result()
                nxt = next(rest, None)
                if nxt is not None:
                    pending.append(pool.submit(read, nxt))
                yield from done

    adds = write_task(compactor.write, coalesced(batches()), task_id=task_id).adds
    for a in adds:
        a["dataChange"] = False
    return adds


def coalesced(
    batches: Iterable[pa.RecordBatch], *, rows: int = COALESCE_ROWS, nbytes: int = COALESCE_BYTES
) -> Iterator[pa.RecordBatch]:
    """The rows of ``batches`` (one schema), in order, in batches of at least ``rows`` rows or
    ``nbytes`` bytes (but the last): a small file's batch costs the writer as much per
    batch (conversion, statistics, a Parquet write call) as a large one."""
    buffer: list[pa.RecordBatch] = []
    held_rows = held_bytes = 0
    for batch in batches:
        buffer.append(batch)
        held_rows += batch.num_rows
        held_bytes += batch.nbytes
        if held_rows >= rows or held_bytes >= nbytes:
            yield from _combined(buffer)
            buffer, held_rows, held_bytes = [], 0, 0
    if buffer:
        yield from _combined(buffer)


def _combined(batches: list[pa.RecordBatch]) -> list[pa.RecordBatch]:
    if len(batches) == 1:
        return batches
    return pa.Table.from_batches(batches).combine_chunks().to_batches()


def rewrite_locally(snap: Snapshot, active: pa.Table, bins: list[list[int]], target: int) -> list[AddFile]:
    """The rows of each bin of ``active`` (file actions) rewritten in this process."""
    compactor = bin_compactor(snap, target)
    paths = active.column("path").to_pylist()
    wanted = {paths[i] for b in bins for i in b}
    files = snap.files
    rows = pa.array([p in wanted for p in files.column("path").to_pylist()], pa.bool_())
    by_path = {t.path: t for t in bin_tasks(snap, files.filter(rows))}
    adds: list[AddFile] = []
    with delete_on_failure(snap.storage, adds):
        for b, members in enumerate(bins):
            adds.extend(compact_bin(compactor, [by_path[paths[i]] for i in members], task_id=b))
    return adds
