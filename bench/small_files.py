"""The ``smallfiles`` benchmark: what auto compaction and optimized writes do to the file count
and to the next scan.

* ``sink``: a streaming query of 200 micro-batches (one small source commit each,
  ``maxFilesPerTrigger=1``) into a ``pydelta`` sink, with ``delta.autoOptimize.autoCompact``
  on and off: files left, the run's time, then a full scan (``read_delta`` aggregate) of each;
* ``optimized write``: ``write_delta`` of 2M x scale rows from 8 tasks into a 50-partition
  table, with ``spark.databricks.delta.optimizeWrite.enabled`` on and off: files written,
  the write's time, then a full scan of each.

Both tables of a pair hold the same rows (checked)."""

from __future__ import annotations

import os
import shutil
import time

import pyarrow as pa
from tables import DATA

BATCHES = 200


def _scan(spark, path):
    from pyspark.sql import functions as F

    from delta_pyds import read_delta

    t = time.perf_counter()
    r = read_delta(spark, path).agg(F.count("*"), F.sum("id")).collect()[0]
    return time.perf_counter() - t, (r[0], r[1])


def _files(path):
    from delta_pyds.table.snapshot import Snapshot

    return Snapshot.load(path).files.num_rows


def _best_scan(spark, path, reps):
    runs = [_scan(spark, path) for _ in range(max(2, reps))]
    return min(r[0] for r in runs[1:]), runs[-1][1]


def sink(suite) -> None:
    from delta_pyds.write.plan import commit_arrow

    spark = suite.spark
    root = os.path.join(DATA, "smallfiles")
    src = os.path.join(root, "src")
    if not os.path.isdir(os.path.join(src, "_delta_log")):
        shutil.rmtree(src, ignore_errors=True)
        for b in range(BATCHES):
            ids = pa.array(range(b * 1000, (b + 1) * 1000), pa.int64())
            commit_arrow(src, pa.table({"id": ids, "v": pa.array([f"v{b}"] * 1000)}))
    out = {}
    for name, on in (("off", False), ("on", True)):
        dst, ck = os.path.join(root, f"sink-{name}"), os.path.join(root, f"ck-{name}")
        shutil.rmtree(dst, ignore_errors=True)
        shutil.rmtree(ck, ignore_errors=True)
        empty = pa.table({"id": pa.array([], pa.int64()), "v": pa.array([], pa.string())})
        commit_arrow(dst, empty, options={"delta.autoOptimize.autoCompact": "true"} if on else {})
        t = time.perf_counter()
        q = (
            spark.readStream.format("pydelta")
            .option("maxFilesPerTrigger", "1")
            .load(src)
            .writeStream.format("pydelta")
            .option("checkpointLocation", ck)
            .trigger(availableNow=True)
            .start(dst)
        )
        q.awaitTermination()
        seconds = time.perf_counter() - t
        scan, result = _best_scan(spark, dst, suite.reps)
        out[name] = (seconds, _files(dst), scan, result)
        print(f"[smallfiles] sink autoCompact {name}: {seconds:.1f}s, {out[name][1]} files, scan {scan:.3f}s")
    if out["on"][3] != out["off"][3]:
        raise SystemExit(f"smallfiles sink: results differ: {out}")
    suite.record(
        "smallfiles",
        f"streaming sink, {BATCHES} micro-batches: full scan after, autoCompact on vs off "
        f"({out['on'][1]} vs {out['off'][1]} files)",
        "on",
        "off",
        out["on"][2],
        out["off"][2],
        files_on=out["on"][1],
        files_off=out["off"][1],
        stream_seconds_on=out["on"][0],
        stream_seconds_off=out["off"][0],
    )


def optimized_write(suite) -> None:
    from pyspark.sql import functions as F

    from delta_pyds import write_delta

    spark = suite.spark
    n = int(2_000_000 * suite.scale)
    df = spark.range(0, n, numPartitions=8).select("id", (F.col("id") % 50).alias("p"), F.rand(3).alias("x"))
    out = {}
    for name, on in (("off", "false"), ("on", "true")):
        path = os.path.join(DATA, "smallfiles", f"ow-{name}")
        times = []
        for _ in range(max(2, suite.reps)):
            shutil.rmtree(path, ignore_errors=True)
            spark.conf.set("spark.databricks.delta.optimizeWrite.enabled", on)
            try:
                t = time.perf_counter()
                write_delta(df, path, partitionBy="p")
                times.append(time.perf_counter() - t)
            finally:
                spark.conf.unset("spark.databricks.delta.optimizeWrite.enabled")
        scan, result = _best_scan(spark, path, suite.reps)
        out[name] = (min(times[1:]), _files(path), scan, result)
        print(f"[smallfiles] optimizeWrite {name}: write {out[name][0]:.2f}s, {out[name][1]} files, scan {scan:.3f}s")
    if out["on"][3] != out["off"][3]:
        raise SystemExit(f"smallfiles optimized write: results differ: {out}")
    for what, i in (("write", 0), ("next full scan", 2)):
        suite.record(
            "smallfiles",
            f"write_delta {n:,} rows from 8 tasks into 50 partitions: {what}, optimizeWrite on vs off "
            f"({out['on'][1]} vs {out['off'][1]} files)",
            "on",
            "off",
            out["on"][i],
            out["off"][i],
            files_on=out["on"][1],
            files_off=out["off"][1],
        )


def run(suite) -> None:
    parts = [p.strip() for p in os.environ.get("PYDELTA_BENCH_SMALLFILES", "sink,write").split(",") if p.strip()]
    if "sink" in parts:
        sink(suite)
    if "write" in parts:
        optimized_write(suite)
