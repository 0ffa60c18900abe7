"""Small-DML latency: per operation on a 40,000-row, 4-file table, the wall time (median
of ``--reps`` runs after one warm-up run, each on a fresh copy of the table), the number
of Spark jobs and stages it ran (``statusTracker`` by job group) and the time the driver's
Python spent outside JVM calls (planning, log replay, commit: wall time minus the time
spent waiting in py4j calls, which include Spark's analysis and the jobs).

    python bench/dml_latency.py [--reps N] [--ops delete,update,...]

Run by ``python bench/run.py dml`` as its latency rows, or alone (this command) to see
where a small DML's time goes. Job counts are the stable number on a shared machine;
times are noisy.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from tables import DATA, dml_table, merge_source  # noqa: E402

OPS = ("delete", "update", "delete-dv", "update-dv", "merge", "merge-insert", "merge-dv")
COND = "grp < 10"


class JvmClock:
    """Accumulates the seconds the driver spends waiting in py4j calls."""

    def __init__(self, spark):
        self.client = spark.sparkContext._gateway._gateway_client
        self.inner = self.client.send_command
        self.seconds = 0.0

        def send(*args, **kwargs):
            t = time.perf_counter()
            try:
                return self.inner(*args, **kwargs)
            finally:
                self.seconds += time.perf_counter() - t

        self.client.send_command = send

    def close(self) -> None:
        self.client.send_command = self.inner


def tables() -> dict[str, str]:
    return {
        "plain": dml_table(os.path.join(DATA, "dml-40k"), 40_000, 4),
        "dv": dml_table(os.path.join(DATA, "dml-dv-40k"), 40_000, 4, {"delta.enableDeletionVectors": "true"}),
    }


def operations(spark):
    """name -> (table kind, fn(path))."""
    from delta_pyds import DeltaTable

    src = spark.createDataFrame(merge_source(40_000, 0.05).to_pandas()).cache()
    src.count()

    def merge(p):
        (
            DeltaTable.forPath(spark, p)
            .alias("t")
            .merge(src.alias("s"), "t.id = s.id")
            .whenMatchedUpdateAll()
            .whenNotMatchedInsertAll()
            .execute()
        )

    def merge_insert(p):  # insert-only: no phase 1 (an anti-join and an append)
        DeltaTable.forPath(spark, p).alias("t").merge(src.alias("s"), "t.id = s.id").whenNotMatchedInsertAll().execute()

    return {
        "delete": ("plain", lambda p: DeltaTable.forPath(spark, p).delete(COND)),
        "update": ("plain", lambda p: DeltaTable.forPath(spark, p).update(COND, {"val": "val + 1"})),
        "delete-dv": ("dv", lambda p: DeltaTable.forPath(spark, p).delete(COND)),
        "update-dv": ("dv", lambda p: DeltaTable.forPath(spark, p).update(COND, {"val": "val + 1"})),
        "merge": ("plain", merge),
        "merge-insert": ("plain", merge_insert),
        "merge-dv": ("dv", merge),
    }


def measure(spark, fn, base: str, work: str, reps: int) -> dict:
    """Median wall seconds, jobs, stages and Python seconds of ``fn`` over ``reps`` runs
    (after one warm-up), each on a fresh copy of ``base``."""
    sc = spark.sparkContext
    tracker = sc.statusTracker()
    walls, pys, jobs, stages = [], [], [], []
    for i in range(reps + 1):
        shutil.rmtree(work, ignore_errors=True)
        shutil.copytree(base, work)
        group = f"pydelta-latency-{time.time_ns()}"
        sc.setJobGroup(group, "dml latency")
        clock = JvmClock(spark)
        t = time.perf_counter()
        try:
            fn(work)
        finally:
            wall = time.perf_counter() - t
            clock.close()
            sc.setJobGroup("", "")
        ids = tracker.getJobIdsForGroup(group)
        n_stages = 0
        for j in ids:
            info = tracker.getJobInfo(j)
            n_stages += len(info.stageIds) if info is not None else 0
        if i == 0:
            continue  # warm-up
        walls.append(wall)
        pys.append(wall - clock.seconds)
        jobs.append(len(ids))
        stages.append(n_stages)
    shutil.rmtree(work, ignore_errors=True)
    return {
        "seconds": statistics.median(walls),
        "python_seconds": statistics.median(pys),
        "jobs": max(jobs),
        "stages": max(stages),
    }


def run(spark, reps: int = 3, ops=OPS) -> list[dict]:
    paths = tables()
    fns = operations(spark)
    work = os.path.join(DATA, "dml-latency-work")
    rows = []
    for op in ops:
        kind, fn = fns[op]
        r = measure(spark, fn, paths[kind], work, reps)
        r["operation"] = op
        rows.append(r)
        print(
            f"[latency] {op:10s} {r['seconds']:.3f}s  jobs {r['jobs']}  stages {r['stages']}  "
            f"python {r['python_seconds']:.3f}s",
            flush=True,
        )
    return rows


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reps", type=int, default=3, help="timed runs after one warm-up (default 3)")
    parser.add_argument("--ops", default=",".join(OPS), help=f"comma-separated, any of {', '.join(OPS)}")
    args = parser.parse_args(argv)
    ops = [o.strip() for o in args.ops.split(",") if o.strip()]
    unknown = [o for o in ops if o not in OPS]
    if unknown:
        parser.error(f"unknown operation(s) {', '.join(unknown)}: expected any of {', '.join(OPS)}")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("TZ", "UTC")
    from pyspark.sql import SparkSession

    import delta_pyds

    spark = (
        SparkSession.builder.master("local[2]")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.memory", "2g")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    delta_pyds.register(spark)
    run(spark, args.reps, ops)
    spark.stop()


if __name__ == "__main__":
    main()
