"""Where a DML statement's time goes on the driver (issue 47, item 1): each statement of the ``dml``
benchmark (DELETE, UPDATE, MERGE, the 10k-row CDC MERGE; the same tables as bench/dml.py) run once
warm and unprofiled (its wall time), then once under ``cProfile``, with the time split into phases:

* ``snapshot``: log listing and replay (``load_snapshot`` / ``Snapshot.load`` / ``Snapshot.extend``);
* ``pruning``: statistics-based file pruning (``prune_files``);
* ``commit``: the commit (actions, put-if-absent, conflict checks and retries), checkpoint included;
* ``checkpoint``: writing a checkpoint (its share of ``commit``);
* ``auto compaction``: the post-commit compaction;
* ``py4j``: every round trip to the JVM (Spark's analysis and planning of each DataFrame call, and
  its jobs), wherever it is made;
* ``spark jobs``: the wall time of the Spark jobs the statement ran (their submission to completion,
  from Spark's status REST API), a part of ``py4j``;
* ``python``: the profiled wall time minus ``py4j``: the driver's own Python (plan building, the
  phases above without their JVM calls).

A phase's seconds include the JVM calls made inside it (``inclusive``); ``cProfile`` slows the
driver's Python, so the profiled wall is printed next to the unprofiled one. Run::

    python bench/dml_phases.py [--scale 0.1] [--parts delete,update,merge,cdc]

from the repository root (``PYDELTA_BENCH_DIR`` holds the tables, as for bench/run.py); it prints
one table row per statement and phase.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import shutil
import sys
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

PHASES = {
    "snapshot": [
        ("delta_pyds/read/scan_plan.py", "load_snapshot"),
        ("delta_pyds/read/scan_plan.py", "cached_snapshot"),
        ("delta_pyds/table/snapshot.py", "load"),
        ("delta_pyds/table/snapshot.py", "extend"),
    ],
    "pruning": [("delta_pyds/skipping/files.py", "prune_files")],
    "commit": [("delta_pyds/transaction/commit.py", "commit")],
    "checkpoint": [("delta_pyds/transaction/checkpoint_writer.py", "write_checkpoint")],
    "auto compaction": [("delta_pyds/operations/auto_compact.py", "auto_compact")],
    "py4j": [("py4j/clientserver.py", "send_command"), ("py4j/java_gateway.py", "send_command")],
}


def inclusive(stats: pstats.Stats, entries: list[tuple[str, str]]) -> float:
    """Seconds spent in calls of the ``entries`` functions made from outside them (no double count
    when one entry calls another)."""
    raw = stats.stats  # type: ignore[attr-defined]
    keys = {k for k in raw if any(k[0].endswith(f) and k[2] == n for f, n in entries)}
    total = 0.0
    for key in keys:
        callers = raw[key][4]
        total += sum(v[3] for caller, v in callers.items() if caller not in keys)
        if not callers:
            total += raw[key][3]
    return total


def job_seconds(spark, after: int) -> tuple[float, int]:
    """Summed wall seconds of the Spark jobs with an id above ``after`` (Spark's REST API) and the
    newest job id."""
    sc = spark.sparkContext
    url = f"{sc.uiWebUrl}/api/v1/applications/{sc.applicationId}/jobs"
    with urllib.request.urlopen(url, timeout=30) as r:
        jobs = json.loads(r.read())

    def ms(stamp: str) -> float:
        import datetime

        return datetime.datetime.strptime(stamp.replace("GMT", "+0000"), "%Y-%m-%dT%H:%M:%S.%f%z").timestamp()

    newest = max([j["jobId"] for j in jobs], default=after)
    spent = sum(
        ms(j["completionTime"]) - ms(j["submissionTime"])
        for j in jobs
        if j["jobId"] > after and "completionTime" in j and "submissionTime" in j
    )
    return spent, newest


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--parts", default="delete,update,merge,cdc")
    args = parser.parse_args(argv)

    from dml import FILES, cdc_source
    from pyspark.sql import SparkSession
    from tables import DATA, dml_table, merge_source

    import delta_pyds
    from delta_pyds import DeltaTable

    spark = (
        SparkSession.builder.master("local[2]")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "8")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    delta_pyds.register(spark)
    rows = int(4_000_000 * args.scale)
    base = dml_table(os.path.join(DATA, f"dml-{rows}"), rows, FILES)
    work = os.path.join(DATA, "dml-phases-work")
    merge_df = spark.createDataFrame(merge_source(rows, 0.05).to_pandas()).cache()
    cdc_df = spark.createDataFrame(cdc_source(rows).to_pandas()).cache()
    merge_df.count(), cdc_df.count()

    def upsert(source):
        return lambda p: (
            DeltaTable.forPath(spark, p)
            .alias("t")
            .merge(source.alias("s"), "t.id = s.id")
            .whenMatchedUpdateAll()
            .whenNotMatchedInsertAll()
            .execute()
        )

    statements = {
        "delete": lambda p: DeltaTable.forPath(spark, p).delete("grp < 10"),
        "update": lambda p: DeltaTable.forPath(spark, p).update("grp < 10", {"val": "val + 1"}),
        "merge": upsert(merge_df),
        "cdc": upsert(cdc_df),
    }
    print(f"rows {rows}, files {FILES}; seconds (phases inclusive of their JVM calls)")
    header = ["statement", "wall", "profiled", *PHASES, "spark jobs", "python"]
    print(" | ".join(header))
    for name in [p.strip() for p in args.parts.split(",") if p.strip()]:
        run = statements[name]

        def fresh() -> str:
            shutil.rmtree(work, ignore_errors=True)
            shutil.copytree(base, work)
            return work

        run(fresh())  # warm-up: Spark's code paths and the JIT
        t = time.perf_counter()
        run(fresh())
        wall = time.perf_counter() - t
        path = fresh()
        _, newest = job_seconds(spark, -1)
        profiler = cProfile.Profile()
        t = time.perf_counter()
        profiler.runcall(run, path)
        profiled = time.perf_counter() - t
        jobs, _ = job_seconds(spark, newest)
        stats = pstats.Stats(profiler)
        phases = {k: inclusive(stats, v) for k, v in PHASES.items()}
        cells = [wall, profiled, *phases.values(), jobs, profiled - phases["py4j"]]
        print(" | ".join([name] + [f"{c:.3f}" for c in cells]), flush=True)
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
