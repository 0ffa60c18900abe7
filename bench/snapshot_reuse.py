"""Snapshot reuse (delta_pyds.table.latest) measured: statement after statement on one
table, alternating a statement that finds its table's snapshot kept (brought up to date
from the one commit since) with one that replays the log afresh (``latest.forget()``
first), medians of ``--reps`` each, in one warm process; and the driver-side snapshot
load alone (no Spark) on a table with a checkpoint and up to 9 commits after it.

    TZ=UTC python bench/snapshot_reuse.py [--reps N] [--rows N]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time

import pyarrow as pa

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def snapshot_load_only(root: str, reps: int) -> tuple[float, float]:
    """Seconds for Snapshot.load vs latest_snapshot (one new commit each time), no Spark."""
    from delta_pyds.operations.arrow_write import write_arrow
    from delta_pyds.storage.store import Storage
    from delta_pyds.table import latest
    from delta_pyds.table.snapshot import Snapshot

    path = os.path.join(root, "core")
    for i in range(15):  # a checkpoint at 10 and commits after it
        write_arrow(path, pa.table({"id": pa.array(range(i * 100, i * 100 + 100), pa.int64())}))
    fresh, kept = [], []
    for i in range(reps):
        write_arrow(path, pa.table({"id": pa.array([10_000 + i], pa.int64())}))
        fresh.append(timed(lambda: Snapshot.load(Storage(path)).files))
        _ = latest.latest_snapshot(Storage(path)).files  # keep the current version
        write_arrow(path, pa.table({"id": pa.array([20_000 + i], pa.int64())}))
        kept.append(timed(lambda: latest.latest_snapshot(Storage(path)).files))
    return statistics.median(fresh), statistics.median(kept)


def statement(table, op: str, key: int) -> None:
    if op == "delete":
        table.delete(f"id = {key}")
    else:
        table.update(f"id = {key + 7}", {"val": "val + 1"})


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=9)
    ap.add_argument("--rows", type=int, default=40_000)
    args = ap.parse_args()
    root = tempfile.mkdtemp(prefix="pydelta-reuse-")
    try:
        f, k = snapshot_load_only(root, args.reps)
        print(
            "snapshot load (core, ~15 commits, checkpoint at 10):"
            f" fresh {f * 1000:.1f} ms, kept + 1 commit {k * 1000:.1f} ms"
        )
        from pyspark.sql import SparkSession

        import delta_pyds
        from delta_pyds import DeltaTable
        from delta_pyds.table import latest

        spark = SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false").getOrCreate()
        spark.sparkContext.setLogLevel("ERROR")
        delta_pyds.register(spark)
        path = os.path.join(root, "t")
        df = spark.range(args.rows).selectExpr("id", "id % 1000 AS grp", "CAST(id AS DOUBLE) AS val").repartition(4)
        delta_pyds.write_delta(df, path, mode="overwrite")
        t = DeltaTable.forPath(spark, path)
        for op in ("delete", "update"):
            fresh, kept = [], []
            for i in range(args.reps + 1):
                latest.forget()
                a = timed(lambda i=i, op=op: statement(t, op, i))
                b = timed(lambda i=i, op=op: statement(t, op, args.rows // 2 + i))
                if i:  # the first pair warms up
                    fresh.append(a)
                    kept.append(b)
            print(
                f"{op} on {args.rows} rows: log replayed {statistics.median(fresh):.3f} s, "
                f"snapshot kept {statistics.median(kept):.3f} s (medians of {args.reps}, alternated)"
            )
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
