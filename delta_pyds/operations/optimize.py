"""OPTIMIZE planning: which files a compaction or Z-order rewrites, and in which bins.

Guarantees:

* ``where`` selects partitions only (a condition over partition columns; anything else
  is refused by :func:`delta_pyds.write.plan.partition_predicate`);
* compaction bin-packs, per partition, the files smaller than the target size (and every
  file with a deletion vector) into bins of at most about the target size, smallest
  first; a bin of one file is rewritten only if that file has a deletion vector;
* Z-order puts every file of each selected partition in one bin; its columns must be
  numeric, date or timestamp data columns (not partition columns), and a clustered
  table is never Z-ordered (as in delta-spark);
* a purge (delta-spark's ``REORG TABLE ... APPLY (PURGE)``) puts each file with a deletion
  vector in its own bin, and no other file;
* :func:`optimize_metrics` is delta-spark's ``OptimizeMetrics`` of a run. No Spark."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence

import pyarrow as pa

from delta_pyds.errors import ArgumentValueError
from delta_pyds.expressions.ast import columns_of
from delta_pyds.expressions.parser import parse_expression
from delta_pyds.protocol.action_types import AddFile
from delta_pyds.protocol.clustering import dotted
from delta_pyds.protocol.schema import StructType
from delta_pyds.protocol.stats import stats_columns
from delta_pyds.table.snapshot import Snapshot
from delta_pyds.write.partition_match import partition_predicate

DEFAULT_TARGET_FILE_SIZE = 128 * 1024 * 1024
_ZORDER_TYPES = (
    "byte",
    "short",
    "integer",
    "long",
    "float",
    "double",
    "date",
    "timestamp",
    "timestamp_ntz",
    "string",
)


def zorder_columns(snap: Snapshot, cols: Sequence[str], *, clustered: Sequence[Sequence[str]] | None) -> list[str]:
    """The table's names of the Z-order columns ``cols`` (matched case-insensitively);
    raises ValueError for a clustered table (``clustered``: its clustering columns, None
    when not clustered), an unknown or partition column, or a type that has no order."""
    if clustered is not None:
        raise ArgumentValueError(
            f"executeZOrderBy: the table is clustered by "
            f"{', '.join(dotted(p) for p in clustered) or 'no columns'}; Z-ordering "
            "a clustered table is not allowed (as in delta-spark): executeCompaction "
            "clusters the rows it rewrites by the clustering columns"
        )
    lowered = {f.name.lower(): f for f in snap.schema.fields}
    pset = {c.lower() for c in snap.partition_columns}
    for c in cols:
        f = lowered.get(c.lower())
        if f is None:
            raise ArgumentValueError(f"executeZOrderBy: {c} is not a column of the table")
        if c.lower() in pset:
            raise ArgumentValueError(
                f"executeZOrderBy: {c} is a partition column; Z-ordering can only be performed "
                "on data columns (delta-spark: DELTA_ZORDERING_ON_PARTITION_COLUMN)"
            )
        if getattr(f.type, "name", None) not in _ZORDER_TYPES and not str(getattr(f.type, "name", "")).startswith(
            "decimal"
        ):
            raise ArgumentValueError(
                f"executeZOrderBy: {c} has type {f.type}; only numeric, date, timestamp and string columns"
                " are supported"
            )
    return [lowered[c.lower()].name for c in cols]


def in_partitions(active: pa.Table, snap: Snapshot, where: str) -> pa.Table:
    """The rows of ``active`` (file actions) in the partitions the SQL ``where`` selects."""
    node = parse_expression(where)
    pset = {c.lower() for c in snap.partition_columns}
    data = sorted(".".join(p) for p in columns_of(node) if p[0].lower() not in pset or len(p) > 1)
    if data:
        raise ArgumentValueError(
            f"optimize().where({where!r}): Predicate references non-partition column "
            f"{', '.join(repr(c) for c in data)}. Only the partition columns may be referenced: "
            f"[{', '.join(snap.partition_columns)}] (delta-spark: DELTA_NON_PARTITION_COLUMN_REFERENCE)"
        )
    pred = partition_predicate(node, snap.schema, snap.partition_columns, snap.column_mapping_mode)
    keep = pred(active.column("partitionValues").to_pylist()) if active.num_rows else []
    return active.filter(pa.array(keep, pa.bool_())) if active.num_rows else active


def compaction_bins(
    active: pa.Table, *, target_size: int, min_files: int, every_file: bool, small_size: int | None = None
) -> list[list[int]]:
    """Bins of row indexes of ``active`` (file actions), each rewritten as one task: per
    partition, small files (smaller than ``small_size``, default ``target_size``, or with
    a DV) packed up to ``target_size``, bins of fewer than ``min_files`` files dropped
    unless one has a DV; with ``every_file`` (Z-order), one bin per partition with every file."""
    small = target_size if small_size is None else small_size
    pv = active.column("partitionValues").to_pylist()
    sizes = active.column("size").to_pylist()
    dvs = active.column("deletionVector").to_pylist()
    groups: dict = {}
    for i, (v, s, d) in enumerate(zip(pv, sizes, dvs)):
        if every_file or s < small or d:
            groups.setdefault(json.dumps(v, sort_keys=True), []).append(i)
    bins = []
    for members in groups.values():
        if every_file:
            bins.append(members)
            continue
        members.sort(key=lambda i: sizes[i])
        current: list[int] = []
        total = 0
        for i in members:
            if current and total + sizes[i] > target_size:
                bins.append(current)
                current, total = [], 0
            current.append(i)
            total += sizes[i]
        if current:
            bins.append(current)
    if not every_file:
        bins = [b for b in bins if len(b) >= min_files or any(dvs[i] for i in b)]
    return bins


def purge_bins(active: pa.Table) -> list[list[int]]:
    """One bin per file of ``active`` (file actions) that has a deletion vector."""
    return [[i] for i, d in enumerate(active.column("deletionVector").to_pylist()) if d]


def _size_metrics(sizes: list[int]) -> dict:
    if not sizes:
        return {"min": None, "max": None, "avg": 0.0, "totalFiles": 0, "totalSize": 0}
    return {
        "min": min(sizes),
        "max": max(sizes),
        "avg": sum(sizes) / len(sizes),
        "totalFiles": len(sizes),
        "totalSize": sum(sizes),
    }


def optimize_metrics(
    removed: pa.Table,
    adds: list[AddFile],
    bins: list,
    considered: int,
    started_ms: int,
    zorder: Sequence[str] | None,
    schema: StructType,
) -> dict:
    """delta-spark's ``OptimizeMetrics`` (the ``metrics`` struct OPTIMIZE returns) of a run
    that rewrote the files ``removed`` (file actions) as ``adds``, in ``bins``."""
    removed_sizes = [int(s) for s in removed.column("size").to_pylist()] if removed.num_rows else []
    added_sizes = [int(a["size"]) for a in adds]
    partitions = (
        len({json.dumps(v, sort_keys=True) for v in removed.column("partitionValues").to_pylist()})
        if removed.num_rows
        else 0
    )
    zstats = None
    if zorder:
        zstats = {
            "strategyName": "all",
            "inputCubeFiles": {"num": 0, "size": 0},
            "inputOtherFiles": {"num": len(removed_sizes), "size": sum(removed_sizes)},
            "inputNumCubes": 0,
            "mergedFiles": {"num": len(removed_sizes), "size": sum(removed_sizes)},
            "numOutputCubes": partitions,
            "mergedNumCubes": None,
        }
    leaves = stats_columns(schema, {}, "none")
    return {
        "numFilesAdded": len(adds),
        "numFilesRemoved": len(removed_sizes),
        "filesAdded": _size_metrics(added_sizes),
        "filesRemoved": _size_metrics(removed_sizes),
        "partitionsOptimized": partitions,
        "zOrderStats": zstats,
        "numBatches": len(bins) if removed_sizes else 0,
        "totalConsideredFiles": considered,
        "totalFilesSkipped": considered - len(removed_sizes),
        "preserveInsertionOrder": False,
        "numFilesSkippedToReduceWriteAmplification": 0,
        "numBytesSkippedToReduceWriteAmplification": 0,
        "startTimeMs": started_ms,
        "endTimeMs": int(time.time() * 1000),
        "totalClusterParallelism": 0,
        "totalScheduledTasks": 0,
        "numTableColumns": len(schema.fields),
        "numTableColumnsWithStats": len(leaves),
    }
