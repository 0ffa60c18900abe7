"""A small copy-on-write DELETE / UPDATE in one Spark job (issue 47;
delta_pyds.spark.commands.single_pass): the rewrite of every candidate file observes which
files held a matching row. Each case runs beside the two-job plan (the single pass turned
off) on a copy of the same table: the rows, the commit's files and counts, and the files
left on disk are the same; only the job count differs, and never upwards."""

from __future__ import annotations

import os
import shutil
import time

import pytest
from helpers import DML_COLS, deltalake_table, parquet_files, spark_rows

from delta_pyds import DeltaTable, read_delta
from delta_pyds.spark.session.conf import DML_ENGINE_CONF, SINGLE_PASS_CONF

# metrics that must agree between the single pass and the two-job plan (times left out)
SAME = (
    "numDeletedRows",
    "numUpdatedRows",
    "numCopiedRows",
    "numRemovedFiles",
    "numAddedFiles",
    "numRemovedBytes",
)


def _make(spark, path: str) -> str:
    from deltalake import write_deltalake
    from helpers import dml_data

    for i in range(4):
        write_deltalake(path, dml_data(i * 50, 50), mode="append")
    return path


def _run(spark, path: str, op: str, cond: str, single: bool) -> int:
    """Runs ``op`` with the single pass on or off; returns its Spark jobs."""
    sc = spark.sparkContext
    group = f"pydelta-single-pass-{time.time_ns()}"
    spark.conf.set(SINGLE_PASS_CONF, str(16 << 20) if single else "0")
    sc.setJobGroup(group, "counted")
    try:
        t = DeltaTable.forPath(spark, path)
        if op == "delete":
            t.delete(cond)
        else:
            t.update(cond, {"value": "value + 1000", "name": "concat('u', name)"})
    finally:
        sc.setJobGroup("", "")
        spark.conf.unset(SINGLE_PASS_CONF)
    return len(sc.statusTracker().getJobIdsForGroup(group))


def _outcome(spark, path: str):
    versions = DeltaTable.forPath(spark, path).history().select("version").collect()
    last = DeltaTable.forPath(spark, path).history(1).collect()[0]
    metrics = {k: v for k, v in (last.operationMetrics or {}).items() if k in SAME}
    rows = spark_rows(spark.read.format("pydelta").load(path).select(*DML_COLS))
    assert rows == spark_rows(read_delta(spark, path).select(*DML_COLS))
    theirs = sorted(tuple(r[c] for c in DML_COLS) for r in deltalake_table(path).select(DML_COLS).to_pylist())
    assert sorted(tuple(r) for r in rows) == theirs
    return len(versions), metrics, rows, len(parquet_files(path))


@pytest.fixture(params=["native", "python"])
def engine(spark, request):
    spark.conf.set(DML_ENGINE_CONF, request.param)
    try:
        yield spark
    finally:
        spark.conf.unset(DML_ENGINE_CONF)


@pytest.mark.parametrize("op", ["delete", "update"])
@pytest.mark.parametrize(
    ("cond", "single_jobs"),
    [
        ("id % 10 = 3", 1),  # a match in every file: the single pass's rewrite is committed
        ("id % 200 = 3", 2),  # a match in one of 4 candidates: its rewrite is deleted, one file rewritten
        ("id % 1000 = 999", 1),  # no match: nothing committed, nothing left
        ("id < 50 AND id % 2 = 0", 1),  # skipping keeps one file, every candidate matches
    ],
)
def test_single_pass_commits_what_the_two_job_plan_commits(engine, tmp_path, op, cond, single_jobs):
    spark = engine
    one = _make(spark, str(tmp_path / "one"))
    two = str(tmp_path / "two")
    shutil.copytree(one, two)
    jobs_one = _run(spark, one, op, cond, single=True)
    jobs_two = _run(spark, two, op, cond, single=False)
    assert _outcome(spark, one) == _outcome(spark, two)
    # the single pass saves the search job exactly when it commits its rewrite
    saved = 1 if cond != "id % 200 = 3" and cond != "id % 1000 = 999" else 0
    assert jobs_one <= jobs_two - saved, f"{op} {cond!r}: {jobs_one} Spark jobs, {jobs_two} in two passes"
    if spark.conf.get(DML_ENGINE_CONF) == "native":  # the Python workers' scan plans its tasks in a job of its own
        assert jobs_one == single_jobs, f"{op} {cond!r}: {jobs_one} Spark jobs in the single pass"


def test_files_of_a_candidate_without_a_match_keep_their_paths(spark, tmp_path):
    """The candidate without a match stays in the table under its own path: the single
    pass's rewrite of it was deleted, not committed."""
    path = _make(spark, str(tmp_path / "t"))
    before = set(DeltaTable.forPath(spark, path).toDF().inputFiles())
    _run(spark, path, "delete", "id % 200 = 3", single=True)
    after = set(DeltaTable.forPath(spark, path).toDF().inputFiles())
    assert len(before - after) == 1 and len(after - before) == 1
    m = DeltaTable.forPath(spark, path).history(1).collect()[0].operationMetrics
    assert (m["numRemovedFiles"], m["numAddedFiles"], m["numDeletedRows"]) == ("1", "1", "1")


def test_a_condition_spark_cannot_observe_runs_the_two_job_plan(spark, tmp_path):
    """A non-deterministic condition (Spark's observed metrics refuse it, or observe it): the
    statement still deletes exactly the matching rows and leaves no stray file."""
    path = _make(spark, str(tmp_path / "t"))
    _run(spark, path, "delete", "id % 10 = 3 AND rand() >= 0", single=True)
    _, metrics, rows, on_disk = _outcome(spark, path)
    assert metrics["numDeletedRows"] == "20"
    assert sorted(r[0] for r in rows) == [i for i in range(200) if i % 10 != 3]
    assert on_disk == 4 + int(metrics["numAddedFiles"])


@pytest.mark.parametrize("op", ["delete", "update"])
@pytest.mark.parametrize(
    "cond",
    [
        "id IN (SELECT k FROM pydelta_single_pass_keys)",  # Spark refuses it in observed metrics
        "id = (SELECT max(k) FROM pydelta_single_pass_keys)",  # a scalar subquery: observed
    ],
)
def test_a_condition_with_a_subquery_runs_the_two_job_plan(engine, tmp_path, op, cond):
    """``observe`` refuses an IN subquery when the metrics are declared (before any write): the
    statement runs the two-job plan; either way it commits what the two-job plan commits."""
    spark = engine
    spark.range(0, 200, 7).withColumnRenamed("id", "k").createOrReplaceTempView("pydelta_single_pass_keys")
    one = _make(spark, str(tmp_path / "one"))
    two = str(tmp_path / "two")
    shutil.copytree(one, two)
    _run(spark, one, op, cond, single=True)
    _run(spark, two, op, cond, single=False)
    assert _outcome(spark, one) == _outcome(spark, two)
    _, metrics, _, _ = _outcome(spark, one)
    assert metrics.get("numDeletedRows", metrics.get("numUpdatedRows")) in ("29", "1")


def test_single_pass_only_below_its_size(spark, tmp_path):
    """Candidates over spark.pydelta.dml.singlePassMaxBytes run the two-job plan."""
    path = _make(spark, str(tmp_path / "t"))
    size = sum(os.path.getsize(os.path.join(path, f)) for f in parquet_files(path))
    spark.conf.set(SINGLE_PASS_CONF, str(size - 1))
    sc = spark.sparkContext
    group = f"pydelta-single-pass-{time.time_ns()}"
    sc.setJobGroup(group, "counted")
    try:
        DeltaTable.forPath(spark, path).delete("id % 10 = 3")
    finally:
        sc.setJobGroup("", "")
        spark.conf.unset(SINGLE_PASS_CONF)
    assert len(sc.statusTracker().getJobIdsForGroup(group)) == 2
