"""MERGE's execution shape follows its clauses (as delta-spark's executors): an insert-only
merge (only ``whenNotMatched*`` clauses) runs no phase 1 (an anti-join with the candidate
target rows and an append), with or without deletion vectors and change data, and gives
the rows deltalake's merge gives; every merge reports delta-spark's ``numSourceRows``
(counted by the pruning job, or within phase 1, or by one job over the pinned source); with
deletion vectors the rows to mark come out of phase 1's job (no job of their own)."""

from __future__ import annotations

import pytest
from deltalake import DeltaTable as DLTable
from dml_engines import dml_engine  # noqa: F401  (autouse: native and python engines)
from helpers import DML_COLS, arrow_rows, deltalake_table, dml_data, spark_rows

from delta_pyds import DeltaTable, read_delta
from delta_pyds.cdf.plan import CHANGE_TYPE
from delta_pyds.write.plan import commit_arrow

COLS = DML_COLS
SOURCE = [(i, i % 3, f"s{i}", -float(i)) for i in (3, 55, 120, 250, 251, 260)]  # 3 match, 3 new
SCHEMA = "id long, part long, name string, value double"


def _make(path: str, options: dict) -> str:
    for i in range(4):  # 4 files of 50 rows: ids 0..199
        commit_arrow(path, dml_data(i * 50, 50), options=options)
    return path


def _jobs(spark, group: str, fn) -> int:
    sc = spark.sparkContext
    sc.setJobGroup(group, "merge job count")
    try:
        fn()
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)
    return len(sc.statusTracker().getJobIdsForGroup(group))


# Spark jobs of the insert-only merge below, measured per (engine, with deletion vectors and
# change data): with phase 1 (its join and reduction) 5 / 8 (native), 6 / 9 (python);
# without it 3 / 5 and 5 / 9 (the change data files re-run the anti-join: the inserted rows
# are not pinned). The bound guards against regressions
MAX_INSERT_ONLY_JOBS = {("native", False): 3, ("native", True): 5, ("python", False): 5, ("python", True): 9}


@pytest.mark.parametrize("options", [{}, {"delta.enableDeletionVectors": "true", "delta.enableChangeDataFeed": "true"}])
def test_an_insert_only_merge_runs_no_phase_1(spark, tmp_path, dml_engine, options):  # noqa: F811
    path = _make(str(tmp_path / "t"), options)
    dl_path = _make(str(tmp_path / "dl"), {})
    src = spark.createDataFrame(SOURCE, SCHEMA)
    merge = (
        DeltaTable.forPath(spark, path)
        .alias("t")
        .merge(src.alias("s"), "t.id = s.id")
        .whenNotMatchedInsert("s.id < 260", {"id": "s.id", "part": "s.part", "name": "s.name"})
    )
    jobs = _jobs(spark, f"pydelta-insert-only-{dml_engine}-{len(options)}", merge.execute)
    assert jobs <= MAX_INSERT_ONLY_JOBS[dml_engine, bool(options)], f"{dml_engine}, {options}: {jobs} Spark jobs"

    import pyarrow as pa

    dl_source = pa.Table.from_pylist([dict(zip(COLS, r)) for r in SOURCE])
    (
        DLTable(dl_path)
        .merge(dl_source, "t.id = s.id", source_alias="s", target_alias="t")
        .when_not_matched_insert({"id": "s.id", "part": "s.part", "name": "s.name"}, predicate="s.id < 260")
        .execute()
    )
    expected = arrow_rows(deltalake_table(dl_path), COLS)
    assert len(expected) == 202
    assert spark_rows(read_delta(spark, path).select(*COLS)) == expected
    assert spark_rows(spark.read.format("pydelta").load(path).select(*COLS)) == expected
    assert arrow_rows(deltalake_table(path), COLS) == expected
    m = DeltaTable.forPath(spark, path).history(1).collect()[0].operationMetrics
    assert (m["numSourceRows"], m["numTargetRowsInserted"], m["numTargetRowsUpdated"]) == ("6", "2", "0")
    assert (m["numTargetFilesRemoved"], m["numTargetRowsCopied"], m["numTargetFilesAdded"]) == ("0", "0", "1")
    if options:  # the change data: the two inserts only
        changes = spark.read.format("pydelta").option("readChangeFeed", "true").option("startingVersion", 4).load(path)
        assert sorted((r.id, r[CHANGE_TYPE]) for r in changes.collect()) == [(250, "insert"), (251, "insert")]


def test_an_insert_only_merge_with_nothing_to_insert_commits_nothing(spark, tmp_path):
    path = _make(str(tmp_path / "t"), {})
    src = spark.createDataFrame([r for r in SOURCE if r[0] < 200], SCHEMA)
    out = (
        DeltaTable.forPath(spark, path)
        .alias("t")
        .merge(src.alias("s"), "t.id = s.id")
        .whenNotMatchedInsertAll()
        .execute()
        .collect()[0]
    )
    assert tuple(out) == (0, 0, 0, 0)
    assert DeltaTable.forPath(spark, path).history(1).collect()[0].version == 3


@pytest.mark.parametrize(
    "shape",
    ["keys", "column_condition", "by_source", "insert_only_column_condition"],
)
def test_every_merge_reports_the_source_rows(spark, tmp_path, shape):
    """delta-spark's ``numSourceRows``: from the pruning job (a ``t.k = s.k`` condition),
    from phase 1 (a Column condition: no pruning job; a ``whenNotMatchedBySource`` clause:
    no pruning), or from one job (an insert-only merge without a pruning job)."""
    from pyspark.sql import functions as F

    path = _make(str(tmp_path / "t"), {})
    src = spark.createDataFrame(SOURCE + [(None, 0, "null key", 0.0)], SCHEMA).repartition(3)
    column = F.col("t.id") == F.col("s.id")
    condition = "t.id = s.id" if shape == "keys" else column
    builder = DeltaTable.forPath(spark, path).alias("t").merge(src.alias("s"), condition)
    if shape == "insert_only_column_condition":
        builder.whenNotMatchedInsertAll()
    else:
        builder.whenMatchedUpdate(set={"name": "s.name"}).whenNotMatchedInsertAll()
    if shape == "by_source":
        builder.whenNotMatchedBySourceUpdate("t.id = 0", {"name": "'gone'"})
    builder.execute()
    m = DeltaTable.forPath(spark, path).history(1).collect()[0].operationMetrics
    assert m["numSourceRows"] == "7"
    assert m["numTargetRowsInserted"] == "4"
    updated = {"insert_only_column_condition": "0", "by_source": "4"}.get(shape, "3")
    assert m["numTargetRowsUpdated"] == updated


# Spark jobs of an upsert (3 matched keys, 3 new) into a table with deletion vectors, measured
# on both engines: 7 (native) and 9 (python) when the changed rows' bitmaps were a job of
# their own over phase 1's rows; 6 and 8 with them built by phase 1's reduction
MAX_DV_UPSERT_JOBS = {"native": 6, "python": 8}


def test_a_merge_with_deletion_vectors_marks_the_rows_phase_1_found(spark, tmp_path, dml_engine):  # noqa: F811
    path = _make(str(tmp_path / "t"), {"delta.enableDeletionVectors": "true"})
    src = spark.createDataFrame(SOURCE, SCHEMA)
    merge = (
        DeltaTable.forPath(spark, path)
        .alias("t")
        .merge(src.alias("s"), "t.id = s.id")
        .whenMatchedUpdate("t.id > 3", {"name": "s.name"})
        .whenNotMatchedInsertAll()
    )
    jobs = _jobs(spark, f"pydelta-dv-upsert-{dml_engine}", merge.execute)
    assert jobs <= MAX_DV_UPSERT_JOBS[dml_engine], f"{dml_engine}: {jobs} Spark jobs"
    rows = {r.id: r.name for r in read_delta(spark, path).collect()}
    assert rows == {r.id: r.name for r in spark.read.format("pydelta").load(path).collect()}
    assert rows == {r["id"]: r["name"] for r in deltalake_table(path).to_pylist()}
    assert len(rows) == 203 and rows[3] == "n3" and rows[55] == "s55" and rows[120] == "s120" and rows[250] == "s250"
    m = DeltaTable.forPath(spark, path).history(1).collect()[0].operationMetrics
    assert (m["numTargetRowsUpdated"], m["numTargetRowsInserted"]) == ("2", "3")
    assert m["numTargetDeletionVectorsAdded"] == "2"
    assert m["numTargetRowsCopied"] == "0"
