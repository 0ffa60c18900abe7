"""A small copy-on-write MERGE in one Spark job (issue 47;
delta_pyds.spark.commands.merge.single_pass): the rewrite of every candidate file joined with
the source observes what phase 1 would find. Each case runs beside the two-phase plan (the
single pass turned off) on a copy of the same table: the rows (the data source, read_delta and
deltalake), the commit's metrics and the files left on disk are the same; only the job count
differs, and never upwards. Also: a target row matched twice is refused with nothing left
written, and a condition Spark cannot observe runs the two-phase plan."""

from __future__ import annotations

import logging
import shutil

import pytest
from deltalake import write_deltalake
from helpers import DML_COLS, deltalake_table, dml_data, parquet_files, row_ids, spark_jobs, spark_rows

from delta_pyds import DeltaTable, read_delta
from delta_pyds.errors import MergeMultipleMatchesError
from delta_pyds.spark.commands.merge.probe import LITERAL_IDS
from delta_pyds.spark.session.conf import DML_ENGINE_CONF, KEY_PRUNING_CONF, SINGLE_PASS_CONF

# commit metrics that must agree between the single pass and the two-phase plan (times left out;
# the files added may differ: the single pass writes the inserted rows in a job of their own)
SAME = (
    "numSourceRows",
    "numTargetRowsInserted",
    "numTargetRowsUpdated",
    "numTargetRowsDeleted",
    "numTargetRowsMatchedUpdated",
    "numTargetRowsMatchedDeleted",
    "numTargetRowsCopied",
    "numOutputRows",
    "numTargetFilesRemoved",
    "numTargetBytesRemoved",
    "numTargetFilesBeforeSkipping",
    "numTargetFilesAfterSkipping",
)
ONE_JOB = "one job (its rewrite kept)"
REWRITTEN = "one job (rewrite deleted)"


def _make(path: str) -> str:
    for i in range(4):  # 4 files of 50 rows: ids 0..199
        write_deltalake(path, dml_data(i * 50, 50), mode="append")
    return path


def _source(spark, ids: list[int]):
    rows = [(i, i % 3, f"s{i}", -float(i)) for i in ids]
    return spark.createDataFrame(rows, "id long, part long, name string, value double")


def _upsert(t, src):
    t.alias("t").merge(src.alias("s"), "t.id = s.id").whenMatchedUpdateAll().whenNotMatchedInsertAll().execute()


def _mixed(t, src):
    (
        t.alias("t")
        .merge(src.alias("s"), "t.id = s.id")
        .whenMatchedDelete("s.id % 5 = 0")
        .whenMatchedUpdate("s.id % 5 = 1", set={"name": "s.name", "value": "t.value + 100"})
        .whenNotMatchedInsert("s.id % 2 = 0", values={c: f"s.{c}" for c in DML_COLS})
        .execute()
    )


def _update_only(t, src):
    t.alias("t").merge(src.alias("s"), "t.id = s.id").whenMatchedUpdate(set={"name": "'u'"}).execute()


def _delete_all(t, src):
    t.alias("t").merge(src.alias("s"), "t.id = s.id").whenMatchedDelete().execute()


MERGES = {"upsert": _upsert, "mixed": _mixed, "update_only": _update_only, "delete_all": _delete_all}


def _run(spark, path: str, merge: str, ids: list[int], *, single: bool) -> int:
    """Runs one merge of a source holding ``ids`` with the single pass on or off; returns its
    Spark jobs."""
    spark.conf.set(SINGLE_PASS_CONF, str(16 << 20) if single else "0")
    try:
        return spark_jobs(spark, lambda: MERGES[merge](DeltaTable.forPath(spark, path), _source(spark, ids)))
    finally:
        spark.conf.unset(SINGLE_PASS_CONF)


def _uncommitted(path: str) -> list[str]:
    """Data files on disk that no commit adds (left behind)."""
    import glob
    import json
    import os
    from urllib.parse import unquote

    added = set()
    for log in glob.glob(os.path.join(path, "_delta_log", "*.json")):
        with open(log) as f:
            added |= {unquote(a["add"]["path"]) for a in map(json.loads, f) if "add" in a}
    return [p for p in parquet_files(path) if p not in added]


def _outcome(spark, path: str):
    t = DeltaTable.forPath(spark, path)
    versions = t.history().count()
    last = t.history(1).collect()[0]
    metrics = {k: v for k, v in (last.operationMetrics or {}).items() if k in SAME}
    rows = spark_rows(spark.read.format("pydelta").load(path).select(*DML_COLS))
    assert rows == spark_rows(read_delta(spark, path).select(*DML_COLS))
    theirs = sorted(tuple(r[c] for c in DML_COLS) for r in deltalake_table(path).select(DML_COLS).to_pylist())
    assert sorted(tuple(r) for r in rows) == theirs
    assert _uncommitted(path) == []
    return versions, metrics, rows


@pytest.fixture
def engine(spark):
    """Spark's own reader and writer (the single pass is tried only on them)."""
    spark.conf.set(DML_ENGINE_CONF, "native")
    try:
        yield spark
    finally:
        spark.conf.unset(DML_ENGINE_CONF)


@pytest.fixture(autouse=True)
def key_pruning(spark):
    """The source's keys prune the candidates (one job that also counts the source: the single
    pass is tried only then); these tables are under the size that turns it on by itself."""
    spark.conf.set(KEY_PRUNING_CONF, "0")
    try:
        yield
    finally:
        spark.conf.unset(KEY_PRUNING_CONF)


CASES = [
    # (merge, source ids, the single pass's log line; None: not tried, no candidate file)
    ("upsert", [3, 60, 120, 170, 250, 251], ONE_JOB),  # every file touched, two inserts
    ("upsert", [3, 4, 250], ONE_JOB),  # the one candidate the keys leave is touched
    ("upsert", [3, 100, 101], ONE_JOB),  # the key set leaves files 0 and 2, both touched
    ("upsert", [500, 501], None),  # no candidate: the inserts alone
    ("mixed", [5, 6, 55, 61, 105, 111, 160, 166, 300, 301], ONE_JOB),
    ("mixed", [5, 57, 105, 155], REWRITTEN),  # 57 matches, but no clause changes it: file 1 untouched
    ("update_only", [1, 51, 101, 151], ONE_JOB),
    ("delete_all", [0, 50, 100, 150, 199], ONE_JOB),
    # more source rows than the literal set, some unmatched: inserts by an anti-join
    ("upsert", list(range(0, 200, 7)) + list(range(1000, 1000 + LITERAL_IDS)), ONE_JOB),
]


@pytest.mark.parametrize(("merge", "ids", "said"), CASES)
def test_single_pass_commits_what_the_two_phase_plan_commits(engine, tmp_path, caplog, merge, ids, said):
    spark = engine
    one, two = str(tmp_path / "one"), str(tmp_path / "two")
    _make(one)
    shutil.copytree(one, two)
    two_jobs = _run(spark, two, merge, ids, single=False)
    caplog.set_level(logging.INFO, logger="delta_pyds.spark.commands.merge")
    one_jobs = _run(spark, one, merge, ids, single=True)
    log = "\n".join(r.getMessage() for r in caplog.records)
    assert (ONE_JOB in log, REWRITTEN in log) == (said == ONE_JOB, said == REWRITTEN), log
    assert _outcome(spark, one) == _outcome(spark, two)
    if said == ONE_JOB:
        assert one_jobs <= two_jobs, (one_jobs, two_jobs)


@pytest.mark.parametrize("why", ["no_source_count", "python_engine"])
def test_without_the_source_count_or_spark_s_reader_the_two_phase_plan_runs(spark, tmp_path, caplog, why):
    """Without a source count (these small tables run no key-pruning job by default) or with
    the target read by Python workers, Spark plans the join as a shuffle (no size to broadcast
    by), whose stages run as jobs of their own: the single pass would save none."""
    if why == "no_source_count":
        spark.conf.unset(KEY_PRUNING_CONF)
    else:
        spark.conf.set(DML_ENGINE_CONF, "python")
    path = _make(str(tmp_path / "t"))
    caplog.set_level(logging.INFO, logger="delta_pyds.spark.commands.merge")
    try:
        _run(spark, path, "upsert", [3, 60, 120, 170], single=True)
    finally:
        spark.conf.unset(DML_ENGINE_CONF)
    log = "\n".join(r.getMessage() for r in caplog.records)
    assert ONE_JOB not in log and REWRITTEN not in log, log
    assert DeltaTable.forPath(spark, path).history(1).collect()[0].operationMetrics["numTargetRowsUpdated"] == "4"


@pytest.mark.parametrize(("merge", "fewer"), [("upsert", True), ("update_only", True), ("mixed", False)])
def test_a_cached_source_merges_in_fewer_jobs(engine, tmp_path, merge, fewer):
    """A source Spark knows the size of (cached, as a CDC batch often is) is broadcast at once:
    the single pass's write is the job phase 1 would have run, so one job fewer when every
    source row matches (a CDC batch of updates); with rows to insert, their write is a job of
    its own, and the count is at most the two-phase plan's."""
    spark = engine
    one, two = str(tmp_path / "one"), str(tmp_path / "two")
    _make(one)
    shutil.copytree(one, two)
    src = _source(spark, [3, 60, 120, 170] if fewer else [5, 6, 55, 61, 105, 111, 160, 166, 300, 301]).cache()
    src.count()
    counts = []
    try:
        for path, single in ((two, False), (one, True)):
            spark.conf.set(SINGLE_PASS_CONF, str(16 << 20) if single else "0")
            try:
                counts.append(spark_jobs(spark, lambda p=path: MERGES[merge](DeltaTable.forPath(spark, p), src)))
            finally:
                spark.conf.unset(SINGLE_PASS_CONF)
    finally:
        src.unpersist()
    assert _outcome(spark, one) == _outcome(spark, two)
    assert counts[1] < counts[0] if fewer else counts[1] <= counts[0], counts


def test_a_target_row_matched_twice_is_refused_with_nothing_left(spark, tmp_path, caplog):
    path = _make(str(tmp_path / "t"))
    before = parquet_files(path)
    caplog.set_level(logging.INFO, logger="delta_pyds.spark.commands.merge")
    with pytest.raises(MergeMultipleMatchesError):
        _run(spark, path, "upsert", [3, 3, 60, 120, 170], single=True)
    assert REWRITTEN in "\n".join(r.getMessage() for r in caplog.records)
    assert parquet_files(path) == before
    assert DeltaTable.forPath(spark, path).history().count() == 4


def test_an_unconditional_delete_counts_a_row_matched_twice_once(engine, tmp_path):
    spark = engine
    one, two = str(tmp_path / "one"), str(tmp_path / "two")
    _make(one)
    shutil.copytree(one, two)
    ids = [0, 0, 50, 100, 150, 150, 150]
    _run(spark, two, "delete_all", ids, single=False)
    _run(spark, one, "delete_all", ids, single=True)
    got = _outcome(spark, one)
    assert got == _outcome(spark, two)
    assert got[1]["numTargetRowsDeleted"] == "4"


def test_a_row_tracking_table_keeps_its_row_ids(spark, tmp_path, caplog):
    from delta_pyds.write.plan import commit_arrow

    one, two = str(tmp_path / "one"), str(tmp_path / "two")
    for i in range(4):
        commit_arrow(one, dml_data(i * 50, 50), options={"delta.enableRowTracking": "true"})
    shutil.copytree(one, two)
    ids = [3, 60, 120, 170, 250]
    caplog.set_level(logging.INFO, logger="delta_pyds.spark.commands.merge")
    for path, single in ((one, True), (two, False)):
        _run(spark, path, "upsert", ids, single=single)
    assert ONE_JOB in "\n".join(r.getMessage() for r in caplog.records)
    assert row_ids(one) == row_ids(two)
    assert len(row_ids(one)) == 201
    assert _outcome(spark, one) == _outcome(spark, two)


def test_a_clause_condition_with_a_subquery_commits_what_the_two_phase_plan_commits(spark, tmp_path):
    one, two = str(tmp_path / "one"), str(tmp_path / "two")
    _make(one)
    shutil.copytree(one, two)
    src = _source(spark, [3, 60, 120, 170, 250])
    spark.createDataFrame([(3,), (120,)], "id long").createOrReplaceTempView("pydelta_single_pass_keys")
    try:
        for path, single in ((one, True), (two, False)):
            spark.conf.set(SINGLE_PASS_CONF, str(16 << 20) if single else "0")
            try:
                (
                    DeltaTable.forPath(spark, path)
                    .alias("t")
                    .merge(src.alias("s"), "t.id = s.id")
                    .whenMatchedUpdate("t.id IN (SELECT id FROM pydelta_single_pass_keys)", set={"name": "'q'"})
                    .whenMatchedDelete()
                    .execute()
                )
            finally:
                spark.conf.unset(SINGLE_PASS_CONF)
    finally:
        spark.catalog.dropTempView("pydelta_single_pass_keys")
    got = _outcome(spark, one)
    assert got == _outcome(spark, two)
    names = {r.id: r.name for r in read_delta(spark, one).collect()}
    assert sorted(i for i, n in names.items() if n == "q") == [3, 120]
    assert 60 not in names and 170 not in names


# partition values Spark escapes in paths, and Unicode
VALUES = ["10:00", "x/y", "50%", "#1", "it's", "tab\there", "ü€", "a=b"]


def test_a_table_partitioned_by_escaped_values_under_an_odd_root(engine, tmp_path, caplog):
    """The single pass on a table partitioned by values Spark escapes in paths, under a root
    with a space and Unicode (deltalake reads a "%" in a local root as an escape): the same
    rows (both read paths, deltalake, DuckDB) and metrics as the two-phase plan, nothing left
    uncommitted."""
    import pyarrow as pa

    from delta_pyds.write.plan import commit_arrow

    spark = engine
    one, two = str(tmp_path / "t ü one"), str(tmp_path / "t ü two")
    for i, v in enumerate(VALUES):
        ids = list(range(i * 25, i * 25 + 25))
        data = dml_data(i * 25, 25).drop_columns(["name"]).append_column("name", pa.array([v] * len(ids)))
        commit_arrow(one, data.select(DML_COLS), options={"partitionBy": "name"})
    shutil.copytree(one, two)
    rows = [(i, i % 3, VALUES[i // 25] if i < 200 else "ü€", -float(i)) for i in (3, 30, 80, 130, 180, 199, 300)]
    src = spark.createDataFrame(rows, "id long, part long, name string, value double")
    caplog.set_level(logging.INFO, logger="delta_pyds.spark.commands.merge")
    for path, single in ((one, True), (two, False)):
        spark.conf.set(SINGLE_PASS_CONF, str(16 << 20) if single else "0")
        try:
            _upsert(DeltaTable.forPath(spark, path), src)
        finally:
            spark.conf.unset(SINGLE_PASS_CONF)
    assert ONE_JOB in "\n".join(r.getMessage() for r in caplog.records)
    got = _outcome(spark, one)
    assert got == _outcome(spark, two)
    assert len(got[2]) == 201
