"""OPTIMIZE: ``DeltaOptimizeBuilder`` (``DeltaTable.optimize()``): compaction, Z-order and
clustering of the rows it rewrites.

Guarantees:

* ``executeCompaction()`` bin-packs small files per partition into files of about the
  target size (plan: :mod:`delta_pyds.operations.optimize`); on a clustered table the
  rewritten rows are sorted by the clustering columns (their Z-order code when all are
  numeric, date or timestamp);
* ``executeZOrderBy(cols)`` rewrites every file of each selected partition with its rows
  along a Z-order curve of ``cols`` (each bucketed into 256 approximate quantiles);
* compaction of a table that needs no Spark for its rewrite (no row tracking, not
  clustered) reads and writes each bin with pyarrow
  (:mod:`delta_pyds.operations.compaction`), exactly one file per bin: in the driver's
  process when the files to rewrite hold at most ``spark.pydelta.optimize.localMaxBytes``
  (default :data:`LOCAL_MAX_BYTES`, 256 MiB), else inside
  Spark tasks (bins spread over the session's parallelism);
* otherwise one Spark task per bin (each bin's rows hash-partitioned to a partition of
  its own; a lone bin of at most :data:`ONE_TASK_MAX_BYTES` is read by that task, with no
  shuffle) and, on Spark's writer, exactly one file per compaction bin; a bin larger than
  the target (Z-order, purge) is split into files of about the target size by a row limit;
* the rewrite has ``dataChange=false``, applies deletion vectors (rewritten files have
  none) and keeps row ids and commit versions on tracked tables;
* ``where`` accepts partition columns only and Z-order data columns only, failing with
  delta-spark's meaning (``DELTA_NON_PARTITION_COLUMN_REFERENCE``,
  ``DELTA_ZORDERING_ON_PARTITION_COLUMN``);
* one ``OPTIMIZE`` commit from the version read (a concurrent blind append does not
  conflict; a concurrent change to a rewritten file does); written files are deleted if
  the commit fails; returns delta-spark's result: one row with the table ``path`` and a
  ``metrics`` struct (``numFilesAdded``, ``numFilesRemoved``, ``filesAdded`` /
  ``filesRemoved`` size metrics, ``partitionsOptimized``, ``zOrderStats``, ``numBatches``,
  ``totalConsideredFiles``, ``totalFilesSkipped``, ...), also when nothing was rewritten;
* :func:`purge_deletion_vectors` rewrites exactly the files that have a deletion vector
  (delta-spark's ``REORG TABLE ... APPLY (PURGE)``), as an ``OPTIMIZE`` commit.
"""

from __future__ import annotations

import json
import time
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from delta_pyds.errors import ArgumentValueError
from delta_pyds.operations.optimize import (
    DEFAULT_TARGET_FILE_SIZE,
    compaction_bins,
    in_partitions,
    optimize_metrics,
    purge_bins,
    zorder_columns,
)
from delta_pyds.protocol.action_types import AddFile
from delta_pyds.spark.commands.rewriter import SCAN_FILE, TableRewriter
from delta_pyds.spark.commands.zorder import with_cluster_key, with_zorder_key
from delta_pyds.transaction.file_actions import sum_size

LOCAL_MAX_BYTES = 256 << 20  # compactions up to this many input bytes run in the driver's process
# a rewrite of one bin of at most this many input bytes runs in one task with no shuffle (the
# scan of a larger one stays parallel, its rows shuffled to the bin's task)
ONE_TASK_MAX_BYTES = 256 << 20

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from delta_pyds.table.snapshot import Snapshot


class DeltaOptimizeBuilder:
    """``DeltaTable.optimize()``: ``.where(partition filter)``, ``.option("targetFileSize", n)``,
    then ``.executeCompaction()``."""

    def __init__(self, rewriter: TableRewriter) -> None:
        self._rewriter = rewriter
        self._where: str | None = None
        self._target = DEFAULT_TARGET_FILE_SIZE
        self._min_files = 2

    def where(self, partitionFilter: str) -> DeltaOptimizeBuilder:
        """Limits the rewrite to the partitions ``partitionFilter`` (SQL over partition
        columns only) selects."""
        if not isinstance(partitionFilter, str):
            raise TypeError(f"'partitionFilter' must be a str (SQL), found {type(partitionFilter)}")
        self._where = partitionFilter
        return self

    def option(self, key: str, value: str | int) -> DeltaOptimizeBuilder:
        if key.lower() in ("targetfilesize", "maxfilesize"):
            self._target = int(value)
            if self._target <= 0:
                raise ArgumentValueError("targetFileSize must be > 0")
        else:
            raise ArgumentValueError(f"optimize: unknown option {key!r} (known: targetFileSize)")
        return self

    def executeCompaction(self) -> DataFrame:
        """Bin-packs files smaller than the target size, per partition, into files of
        about the target size; returns a one-row metrics DataFrame."""
        return self._execute(None)

    def executeZOrderBy(self, *cols: str | list[str] | tuple[str, ...]) -> DataFrame:
        """Rewrites every file of each (selected) partition with its rows clustered along a
        Z-order curve of ``cols`` (numeric, date or timestamp columns; each is bucketed into
        256 approximate quantiles), into files of about the target size."""
        if len(cols) == 1 and isinstance(cols[0], (list, tuple)):
            cols = tuple(cols[0])
        if not cols or len(cols) > 7:
            raise ArgumentValueError("executeZOrderBy: give 1 to 7 columns")
        names: list[str] = []
        for c in cols:
            if not isinstance(c, str):
                raise TypeError(f"executeZOrderBy: column names must be str, found {c!r} of type {type(c)}")
            names.append(c)
        return self._execute(names)

    def _execute(self, zorder: list[str] | None, *, purge: bool = False) -> DataFrame:
        """Chooses the bins, rewrites their files and commits (one ``OPTIMIZE`` commit)."""
        from delta_pyds.protocol.clustering import table_clustering
        from delta_pyds.table.state import file_actions

        started = int(time.time() * 1000)
        snap = self._rewriter.dml_snapshot()
        active = file_actions(snap).active
        clustered = table_clustering(snap.schema, snap.domain_metadata, snap.column_mapping_mode)
        if zorder:
            zorder = zorder_columns(snap, zorder, clustered=clustered)
        if self._where:
            active = in_partitions(active, snap, self._where)
        if purge:
            bins = purge_bins(active)
        else:
            bins = compaction_bins(active, target_size=self._target, min_files=self._min_files, every_file=bool(zorder))
        chosen = sorted(i for b in bins for i in b)
        considered = active.num_rows
        if not chosen:
            return self._result(
                snap, optimize_metrics(active.slice(0, 0), [], bins, considered, started, zorder, snap.schema)
            )
        victims = active.take(pa.array(chosen, pa.int64()))
        adds = self._rewrite_bins(snap, active, victims, bins, zorder, clustered)
        self._commit(snap, victims, adds, bins, zorder, clustered, purge=purge)
        result = optimize_metrics(victims, adds, bins, considered, started, zorder, snap.schema)
        result["endTimeMs"] = int(time.time() * 1000)
        return self._result(snap, result)

    def rewrite_planned(self, snap: Snapshot, active: pa.Table, bins: list[list[int]], target: int) -> list[AddFile]:
        """The files of ``bins`` (row indexes of ``active``, file actions) compacted with
        Spark into files of about ``target`` bytes, uncommitted (auto compaction commits them)."""
        from delta_pyds.protocol.clustering import table_clustering

        self._target = target
        clustered = table_clustering(snap.schema, snap.domain_metadata, snap.column_mapping_mode)
        victims = active.take(pa.array(sorted(i for b in bins for i in b), pa.int64()))
        return self._rewrite_bins(snap, active, victims, bins, None, clustered)

    def _rewrite_bins(
        self,
        snap: Snapshot,
        active: pa.Table,
        victims: pa.Table,
        bins: list[list[int]],
        zorder: list[str] | None,
        clustered: list[tuple[str, ...]] | None,
    ) -> list[AddFile]:
        """Writes the rows of the ``victims`` files, bin by bin, as files of about the
        target size (``dataChange=false``); returns their add actions."""
        rw = self._rewriter
        victim_paths = set(victims.column("path").to_pylist())
        sel = [p in victim_paths for p in snap.files.column("path").to_pylist()]
        scan_files = snap.files.filter(pa.array(sel, pa.bool_()))
        if not zorder and arrow_bins_apply(snap, active, bins, self._target):
            if sum_size(victims) <= local_max_bytes(rw.spark):  # no Spark job: its fixed cost dominates small work
                from delta_pyds.operations.compaction import rewrite_locally

                return rewrite_locally(snap, active, bins, self._target)
            return compact_with_arrow(rw, snap, active, scan_files, bins, self._target)
        spec = rw.write_spec(snap, target_file_size=self._target, row_tracking=True)
        rows_cap = records_per_file(active, bins, self._target)
        if rows_cap is not None:  # Spark's writer rolls files by rows only
            spec = replace(spec, max_records_per_file=rows_cap, _derived={})
        return rw.rewrite(self._binned_rows(snap, active, scan_files, bins, zorder, clustered), spec, False)

    def _commit(
        self,
        snap: Snapshot,
        victims: pa.Table,
        adds: list[AddFile],
        bins: list[list[int]],
        zorder: list[str] | None,
        clustered: list[tuple[str, ...]] | None,
        *,
        purge: bool = False,
    ) -> None:
        """One ``OPTIMIZE`` commit (``REORG`` for a purge, with delta-spark's parameters)
        replacing ``victims`` by ``adds`` (deleted if it fails)."""
        from delta_pyds.transaction.commit import Transaction
        from delta_pyds.transaction.file_actions import remove_actions
        from delta_pyds.transaction.staged_files import delete_on_failure

        rw = self._rewriter
        removes = remove_actions(victims, data_change=False)
        txn = Transaction(rw.storage, snap)
        txn.remove_files(removes)
        txn.add_files(adds)
        predicate = json.dumps([self._where] if self._where else [])
        if purge:
            operation, parameters = "REORG", {"predicate": predicate, "applyPurge": "true"}
        else:
            operation, parameters = (
                "OPTIMIZE",
                {
                    "predicate": predicate,
                    "zOrderBy": json.dumps(zorder or []),
                    **({"clusterBy": json.dumps([".".join(p) for p in clustered])} if clustered else {}),
                    "targetFileSize": str(self._target),
                },
            )
        with delete_on_failure(rw.storage, adds):
            txn.commit(operation, parameters, metrics=_commit_metrics(victims, adds, len(removes), len(bins)))

    def _result(self, snap: Snapshot, metrics: dict[str, Any]) -> DataFrame:
        """delta-spark's OPTIMIZE result: ``path`` and the ``metrics`` struct."""
        return result_frame(self._rewriter.spark, snap.table_root, metrics)

    def _binned_rows(
        self,
        snap: Snapshot,
        active: pa.Table,
        scan_files: pa.Table,
        bins: list[list[int]],
        zorder: list[str] | None,
        clustered: list[tuple[str, ...]] | None,
    ) -> DataFrame:
        """The rows of the files to rewrite, one Spark partition per bin, sorted along the
        Z-order or clustering key; table columns (+ row ids and commit versions, kept)."""
        from pyspark.sql import functions as F

        rw = self._rewriter
        scan = rw.scan(snap, scan_files)
        # the sort key before the shuffle: its quantiles job reads the files' key columns only
        if zorder:
            scan = with_zorder_key(scan, zorder, "__z")
        elif clustered:
            scan = with_cluster_key(scan, clustered, "__z")
        one_task = len(bins) == 1 and sum_size(active.take(pa.array(bins[0], pa.int64()))) <= ONE_TASK_MAX_BYTES
        if one_task:
            df = scan.coalesce(1)  # one task reads, sorts and writes the bin: no shuffle
        else:
            # one Spark task per bin: route each file's rows to its bin's task. Each bin's key
            # is an int that Spark's hash partitioning (pmod(murmur3(key, 42), n)) sends to the
            # bin's own partition, so no two bins share a task (and so a file)
            keys = bin_keys(len(bins))
            bin_of = {active.column("path")[i].as_py(): (b, keys[b]) for b, members in enumerate(bins) for i in members}
            mapping = rw.spark.createDataFrame(
                [(p, b, k) for p, (b, k) in bin_of.items()], f"{SCAN_FILE} string, __bin int, __bin_key int"
            )
            df = scan.join(F.broadcast(mapping), SCAN_FILE).repartition(len(bins), "__bin_key").drop("__bin_key")
        if zorder or clustered:
            df = df.sortWithinPartitions(*([] if one_task else ["__bin"]), "__z").drop("__z")
        return rw.tracked(snap, df)  # table columns (+ row ids and commit versions, kept)


_LONG, _PAIR = pa.int64(), pa.struct([("num", pa.int64()), ("size", pa.int64())])
_SIZE = pa.struct([("min", _LONG), ("max", _LONG), ("avg", pa.float64()), ("totalFiles", _LONG), ("totalSize", _LONG)])
_ZSTATS = pa.struct(
    [
        ("strategyName", pa.string()),
        ("inputCubeFiles", _PAIR),
        ("inputOtherFiles", _PAIR),
        ("inputNumCubes", _LONG),
        ("mergedFiles", _PAIR),
        ("numOutputCubes", _LONG),
        ("mergedNumCubes", _LONG),
    ]
)
_METRIC_TYPES = {
    "filesAdded": _SIZE,
    "filesRemoved": _SIZE,
    "zOrderStats": _ZSTATS,
    "preserveInsertionOrder": pa.bool_(),
}
_METRIC_NAMES = (
    "numFilesAdded numFilesRemoved filesAdded filesRemoved partitionsOptimized zOrderStats numBatches "
    "totalConsideredFiles totalFilesSkipped preserveInsertionOrder numFilesSkippedToReduceWriteAmplification "
    "numBytesSkippedToReduceWriteAmplification startTimeMs endTimeMs totalClusterParallelism "
    "totalScheduledTasks numTableColumns numTableColumnsWithStats"
).split()
# delta-spark's OPTIMIZE result (every field nullable): ``path`` and the ``metrics`` struct
OPTIMIZE_RESULT_SCHEMA = pa.schema(
    [("path", pa.string()), ("metrics", pa.struct([(n, _METRIC_TYPES.get(n, _LONG)) for n in _METRIC_NAMES]))]
)


def result_frame(spark: Any, path: str, metrics: dict[str, Any]) -> DataFrame:
    """The one-row OPTIMIZE result DataFrame (:data:`OPTIMIZE_RESULT_SCHEMA`), made from an
    Arrow table: no DDL to parse and one hand-over to the JVM (a Python row list costs
    several py4j round trips)."""
    return spark.createDataFrame(pa.Table.from_pylist([{"path": path, "metrics": metrics}], OPTIMIZE_RESULT_SCHEMA))


def records_per_file(active: pa.Table, bins: list[list[int]], target: int) -> int | None:
    """A row limit per written file that keeps files near ``target`` bytes when a bin
    holds more than that (Z-order and purge bins hold whole partitions or large files):
    the densest such bin's rows per target size (row counts from the files' statistics);
    None when every bin fits in one file (compaction: exactly one file per bin)."""
    from delta_pyds.transaction.file_actions import add_actions, stat_rows

    sizes = active.column("size").to_pylist()
    limit = None
    for members in bins:
        total = sum(int(sizes[i]) for i in members)
        if total <= target:
            continue
        rows = [
            stat_rows(a, default=None)
            for a in add_actions(active.take(pa.array(members, pa.int64())), data_change=False)
        ]
        if any(r is None for r in rows):
            continue
        cap = max(1, -(-sum(r for r in rows if r is not None) * target // total))
        limit = cap if limit is None else min(limit, cap)
    return limit


def local_max_bytes(spark: Any) -> int:
    """``spark.pydelta.optimize.localMaxBytes``: the most input bytes a compaction rewrites
    in the driver's process (0: always in Spark tasks)."""
    from delta_pyds.spark.session.conf import LOCAL_MAX_BYTES_CONF, byte_count

    return byte_count(spark, LOCAL_MAX_BYTES_CONF, LOCAL_MAX_BYTES)


def arrow_bins_apply(snap: Snapshot, active: pa.Table, bins: list[list[int]], target: int) -> bool:
    """Whether pyarrow tasks compact these bins (:mod:`delta_pyds.operations.compaction`):
    the table needs no Spark for its rewrite and every bin fits in one file of ``target``."""
    from delta_pyds.operations.compaction import local_compaction_refusal

    sizes = active.column("size").to_pylist()
    return local_compaction_refusal(snap) is None and all(sum(int(sizes[i]) for i in b) <= target for b in bins)


def compact_with_arrow(
    rw: TableRewriter, snap: Snapshot, active: pa.Table, scan_files: pa.Table, bins: list[list[int]], target: int
) -> list[AddFile]:
    """Each bin read and written by pyarrow in one Spark task (no Spark row processing: a
    compaction evaluates no expression, so the rows are the files' live rows); the adds."""
    import pickle

    from delta_pyds.operations.compaction import bin_compactor, bin_tasks, compact_bin

    compactor = bin_compactor(snap, target)
    tasks = bin_tasks(snap, scan_files)
    by_path = {t.path: t for t in tasks}
    paths = active.column("path").to_pylist()
    n = max(1, min(len(bins), rw.parallelism()))
    keys = bin_keys(n)
    rows = [(b, keys[b % n], pickle.dumps([by_path[paths[i]] for i in members])) for b, members in enumerate(bins)]

    def run(batches: Any) -> Any:
        for batch in batches:
            for b, blob in zip(batch.column("bin").to_pylist(), batch.column("tasks").to_pylist()):
                adds = compact_bin(compactor, pickle.loads(blob), task_id=b)
                yield pa.RecordBatch.from_pydict({"add": [json.dumps(a) for a in adds]})

    df = rw.spark.createDataFrame(rows, "bin int, __bin_key int, tasks binary").repartition(n, "__bin_key")
    written = df.mapInArrow(run, "add string").collect()
    return [json.loads(r[0]) for r in written]


def bin_keys(n: int) -> list[int]:
    """``n`` ints, the ``b``-th of which Spark's ``repartition(n, col)`` sends to partition
    ``b`` (hash partitioning: ``pmod(murmur3_x86_32(key, seed 42), n)``)."""
    keys: list[int | None] = [None] * n
    missing, k = n, 0
    while missing:
        b = spark_partition_of(k, n)
        if keys[b] is None:
            keys[b] = k
            missing -= 1
        k += 1
    return [int(x) for x in keys if x is not None]


def spark_partition_of(value: int, n: int) -> int:
    """The partition Spark's hash partitioning into ``n`` gives an int ``value``: Murmur3
    x86_32 of the 4-byte int with seed 42 (Spark's ``Murmur3Hash``), non-negative mod n."""
    mask = 0xFFFFFFFF

    def rotl(x: int, r: int) -> int:
        return ((x << r) | (x >> (32 - r))) & mask

    k1 = (value & mask) * 0xCC9E2D51 & mask
    k1 = rotl(k1, 15) * 0x1B873593 & mask
    h1 = 42 ^ k1
    h1 = (rotl(h1, 13) * 5 + 0xE6546B64) & mask
    h1 ^= 4
    h1 ^= h1 >> 16
    h1 = h1 * 0x85EBCA6B & mask
    h1 ^= h1 >> 13
    h1 = h1 * 0xC2B2AE35 & mask
    h1 ^= h1 >> 16
    signed = h1 - (1 << 32) if h1 & 0x80000000 else h1
    return signed % n


def purge_deletion_vectors(rewriter: TableRewriter) -> DataFrame:
    """Rewrites every file that has a deletion vector (without the deleted rows); returns
    the OPTIMIZE result DataFrame."""
    return reorg_purge(DeltaOptimizeBuilder(rewriter))


def reorg_purge(builder: DeltaOptimizeBuilder) -> DataFrame:
    """delta-spark's ``REORG TABLE ... APPLY (PURGE)``: rewrites every file with a deletion
    vector in the builder's partitions (``where``) without its deleted rows, one ``REORG``
    commit (nothing is committed when no file has one); returns the OPTIMIZE result DataFrame."""
    return builder._execute(None, purge=True)


def _commit_metrics(victims: pa.Table, adds: list[AddFile], removed: int, batches: int) -> dict[str, Any]:
    """The ``operationMetrics`` of an OPTIMIZE commit (delta-spark's names)."""
    added_bytes = sum(int(a["size"]) for a in adds)
    return {
        **file_size_percentiles([int(a["size"]) for a in adds]),
        "numFilesAdded": len(adds),
        "numFilesRemoved": removed,
        "filesAdded_totalSize": added_bytes,
        "filesRemoved_totalSize": sum_size(victims),
        "numBatches": batches,
        "numRemovedBytes": sum_size(victims),
        "numAddedBytes": added_bytes,
        "numRemovedFiles": removed,
        "numAddedFiles": len(adds),
        "numDeletionVectorsRemoved": sum(1 for d in victims.column("deletionVector").to_pylist() if d),
    }


def file_size_percentiles(sizes: list[int]) -> dict[str, int]:
    """delta-spark's OPTIMIZE file-size metrics of the added files (``minFileSize``,
    ``p25FileSize``, ``p50FileSize``, ``p75FileSize``, ``maxFileSize``): the sorted sizes at
    indexes ``0``, ``n // 4``, ``n // 2``, ``3n // 4``, ``n - 1``, as its
    ``FileSizeStatsWithHistogram`` picks them; none without added files."""
    if not sizes:
        return {}
    s, n = sorted(sizes), len(sizes)
    return {
        "minFileSize": s[0],
        "p25FileSize": s[n // 4],
        "p50FileSize": s[n // 2],
        "p75FileSize": s[n * 3 // 4],
        "maxFileSize": s[-1],
    }
