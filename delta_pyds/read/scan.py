"""Scan planning: from a snapshot's file table to small, picklable input partitions.

Guarantees: every active file (after optional skipping) lands in exactly one
partition; partitions are bin-packed by bytes the way Spark packs file splits
(``size + open_cost`` per file, a partition closes before it would exceed the split
size, which is lowered so that every core gets work, at most ``max_partition_bytes``);
each partition holds only what executors need (path, size, partition values,
deletion vector descriptor, row tracking ids) as plain column lists, which pickle far
faster than one object per file or than many small Arrow tables.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

DEFAULT_MAX_PARTITION_BYTES = 128 * 1024 * 1024
DEFAULT_OPEN_COST_BYTES = 4 * 1024 * 1024


@dataclass(frozen=True)
class FileTask:
    """One file to read, on an executor."""

    path: str  # as in the log, URI-decoded (relative to the table root or absolute)
    size: int
    partition_values: tuple[str | None, ...]  # serialized, in partition column order
    deletion_vector: dict | None  # the log's descriptor (camelCase keys)
    base_row_id: int | None = None
    default_row_commit_version: int | None = None


def split_size(
    total_bytes: int, n_files: int, *, max_partition_bytes: int, open_cost: int, parallelism: int | None
) -> int:
    parallelism = parallelism or os.cpu_count() or 1
    bytes_per_core = (total_bytes + n_files * open_cost) // parallelism
    return min(max_partition_bytes, max(open_cost, bytes_per_core))


@dataclass
class PartitionFiles:
    """The files of one input partition, column by column (plain lists pickle fast)."""

    path: list
    size: list
    partition_values: list  # one list per partition column (physical order), or []
    deletion_vector: list | None  # None when no file of the partition has one
    base_row_id: list | None
    default_row_commit_version: list | None

    def __len__(self) -> int:
        return len(self.path)


def plan_partitions(
    files: pa.Table,
    physical_partition_columns: Sequence[str] = (),
    *,
    max_partition_bytes: int = DEFAULT_MAX_PARTITION_BYTES,
    open_cost: int = DEFAULT_OPEN_COST_BYTES,
    parallelism: int | None = None,
) -> list[PartitionFiles]:
    """Bin-packs the rows of a file table into partitions (largest files first)."""
    if max_partition_bytes <= 0 or open_cost < 0:
        raise ValueError("maxPartitionBytes must be > 0 and openCostInBytes >= 0")
    n = files.num_rows
    if n == 0:
        return []
    sizes = pc.fill_null(files.column("size"), 0).to_numpy()
    split = split_size(
        int(sizes.sum()), n, max_partition_bytes=max_partition_bytes, open_cost=open_cost, parallelism=parallelism
    )
    order = np.argsort(-sizes, kind="stable")
    starts = [0]
    current, current_size = 0, 0
    for pos, size in enumerate(sizes[order].tolist()):
        if current and current_size + size > split:
            starts.append(pos)
            current, current_size = 0, 0
        current += 1
        current_size += size + open_cost
    starts.append(n)
    ordered = files.take(pa.array(order))

    def column(name: str) -> list | None:
        col = ordered.column(name) if name in ordered.column_names else None
        if col is None or col.null_count == n:
            return None
        return col.to_pylist()

    paths = ordered.column("path").to_pylist()
    size_list = sizes[order].tolist()
    pvs = []
    if physical_partition_columns:
        pv = ordered.column("partition_values").combine_chunks()
        pvs = [pc.struct_field(pv, c).to_pylist() for c in physical_partition_columns]
    dvs, bases, drcvs = column("deletion_vector"), column("base_row_id"), column("default_row_commit_version")

    def cut(values: list | None, a: int, b: int) -> list | None:
        return None if values is None else values[a:b]

    return [
        PartitionFiles(
            paths[a:b], size_list[a:b], [v[a:b] for v in pvs], cut(dvs, a, b), cut(bases, a, b), cut(drcvs, a, b)
        )
        for a, b in zip(starts[:-1], starts[1:])
    ]


def iter_tasks(files: PartitionFiles) -> Iterator[FileTask]:
    """The files of one planned partition, as tasks (on the executor)."""
    for i in range(len(files)):
        yield FileTask(
            files.path[i],
            files.size[i],
            tuple(v[i] for v in files.partition_values),
            files.deletion_vector[i] if files.deletion_vector is not None else None,
            files.base_row_id[i] if files.base_row_id is not None else None,
            files.default_row_commit_version[i] if files.default_row_commit_version is not None else None,
        )
