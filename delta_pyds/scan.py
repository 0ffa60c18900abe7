"""Scan planning: from a snapshot's file table to small, picklable input partitions.

Guarantees: every active file (after optional skipping) lands in exactly one
partition; partitions are bin-packed by bytes the way Spark packs file splits
(``size + open_cost`` per file, at most ``max_partition_bytes`` per partition, target
split size lowered so that every core gets work); each task carries only what the
executor needs (path, size, partition values, deletion vector descriptor).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Sequence

import pyarrow as pa
import pyarrow.compute as pc

DEFAULT_MAX_PARTITION_BYTES = 128 * 1024 * 1024
DEFAULT_OPEN_COST_BYTES = 4 * 1024 * 1024


@dataclass(frozen=True)
class FileTask:
    path: str  # as in the log, URI-decoded (relative to the table root or absolute)
    size: int
    partition_values: tuple[str | None, ...]  # serialized, in partition column order
    deletion_vector: dict | None  # the log's descriptor (camelCase keys)
    base_row_id: int | None = None
    default_row_commit_version: int | None = None


def file_tasks(files: pa.Table, physical_partition_columns: Sequence[str]) -> list[FileTask]:
    """One task per row of a snapshot file table (columnar -> rows, once, at planning)."""
    n = files.num_rows
    if n == 0:
        return []
    paths = files.column("path").to_pylist()
    sizes = files.column("size").to_pylist()
    if physical_partition_columns:
        pv = files.column("partition_values").combine_chunks()
        cols = [pc.struct_field(pv, c).to_pylist() for c in physical_partition_columns]
        partition_values = list(zip(*cols))
    else:
        partition_values = [()] * n
    dv = files.column("deletion_vector")
    dvs = dv.to_pylist() if dv.null_count < n else [None] * n
    base = files.column("base_row_id")
    bases = base.to_pylist() if base.null_count < n else [None] * n
    drcv = files.column("default_row_commit_version")
    drcvs = drcv.to_pylist() if drcv.null_count < n else [None] * n
    return [FileTask(p, s or 0, tuple(v), d, b, c)
            for p, s, v, d, b, c in zip(paths, sizes, partition_values, dvs, bases, drcvs)]


def bin_pack(tasks: list[FileTask], *, max_partition_bytes: int = DEFAULT_MAX_PARTITION_BYTES,
             open_cost: int = DEFAULT_OPEN_COST_BYTES, parallelism: int | None = None) -> list[list[FileTask]]:
    """Groups tasks into partitions like Spark's FilePartition.getFilePartitions."""
    if not tasks:
        return []
    if max_partition_bytes <= 0 or open_cost < 0:
        raise ValueError("maxPartitionBytes must be > 0 and openCostInBytes >= 0")
    parallelism = parallelism or os.cpu_count() or 1
    total = sum(t.size + open_cost for t in tasks)
    bytes_per_core = total // parallelism
    split = min(max_partition_bytes, max(open_cost, bytes_per_core))
    ordered = sorted(tasks, key=lambda t: t.size, reverse=True)
    partitions: list[list[FileTask]] = []
    current: list[FileTask] = []
    current_size = 0
    for t in ordered:
        if current and current_size + t.size > split:
            partitions.append(current)
            current, current_size = [], 0
        current.append(t)
        current_size += t.size + open_cost
    if current:
        partitions.append(current)
    return partitions


def describe(partitions: list[list[FileTask]]) -> dict[str, Any]:
    return {"partitions": len(partitions), "files": sum(len(p) for p in partitions),
            "bytes": sum(t.size for p in partitions for t in p)}
