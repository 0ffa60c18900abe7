"""MERGE through ``DeltaTable.merge`` on both DML engines: an upsert with every clause kind,
whenNotMatchedBySource clauses, an unconditional delete matched by several source rows, source-key
pruning of the target files, deletion vectors (rows marked, only changed rows written); tables read
back the same through pydelta, ``read_delta`` and deltalake. More MERGE shapes:
test_merge_one_pass.py (one evaluation of the source, job bounds), test_merge_shapes.py
(insert-only, ``numSourceRows``), test_merge_nested_evolution.py (schema evolution); SQL MERGE in
tests/spark/sql/test_sql_dml.py."""

from __future__ import annotations

import json
import os

import pyarrow as pa
import pytest
from deltalake import write_deltalake
from dml_engines import dml_engine  # noqa: F401  (autouse: native and python engines)
from dml_helpers import (
    agree_with_deltalake,
    change_rows,
    make_cdf_table,
    make_dml_table,
    parquet_rows,
    rows_three_ways,
    same_cdf_rows,
)
from helpers import DML_COLS, dml_data, parquet_files

from delta_pyds import DeltaTable, read_delta
from delta_pyds.errors import DeltaError
from delta_pyds.spark.session.conf import KEY_PRUNING_CONF
from delta_pyds.table.snapshot import Snapshot


@pytest.fixture
def key_pruning_always(spark):
    """Source-key pruning also for these small tables (by default only from 16 MiB of files)."""
    spark.conf.set(KEY_PRUNING_CONF, "0")
    yield
    spark.conf.unset(KEY_PRUNING_CONF)


def test_merge_upsert(spark, tmp_path):
    path = make_dml_table(str(tmp_path / "t"), files=3, rows_per_file=10)
    t = DeltaTable.forPath(spark, path)
    src = spark.createDataFrame(
        [(5, 0, "five", 55.0), (6, 0, "gone", 0.0), (25, 1, "x", 1.0), (100, 1, "new", 9.0), (101, 2, "skip", 9.0)],
        "id long, part long, name string, value double",
    )
    m = (
        t.alias("t")
        .merge(src.alias("s"), "t.id = s.id")
        .whenMatchedDelete("s.name = 'gone'")
        .whenMatchedUpdate(set={"name": "s.name", "value": "t.value + s.value"})
        .whenNotMatchedInsertAll("s.name <> 'skip'")
        .execute()
        .collect()[0]
    )
    assert (m.num_updated_rows, m.num_deleted_rows, m.num_inserted_rows, m.num_affected_rows) == (2, 1, 1, 4)
    rows = {r[0]: r for r in agree_with_deltalake(spark, path)}
    assert 6 not in rows and 101 not in rows and len(rows) == 30
    assert rows[5][2:] == ("five", 57.5) and rows[25][2:] == ("x", 13.5) and rows[100][1:] == (1, "new", 9.0)
    assert rows[7][2] == "n7"
    assert t.history(1).collect()[0].operation == "MERGE"
    # a target row matched twice is refused
    dup = spark.createDataFrame([(1, 0, "a", 0.0), (1, 0, "b", 0.0)], "id long, part long, name string, value double")
    with pytest.raises(DeltaError, match="several source rows matched the same target row"):
        t.alias("t").merge(dup.alias("s"), "t.id = s.id").whenMatchedUpdateAll().execute()
    # insert with explicit values, update all
    src2 = spark.createDataFrame(
        [(1, 0, "one", 1.0), (200, 2, "two hundred", 2.0)], "id long, part long, name string, value double"
    )
    (
        t.alias("t")
        .merge(src2.alias("s"), "t.id = s.id")
        .whenMatchedUpdateAll()
        .whenNotMatchedInsert(values={"id": "s.id", "name": "upper(s.name)"})
        .execute()
    )
    rows = {r[0]: r for r in agree_with_deltalake(spark, path)}
    assert rows[1] == (1, 0, "one", 1.0) and rows[200] == (200, None, "TWO HUNDRED", None)


def test_merge_prunes_target_files_by_source_key_ranges(spark, tmp_path, key_pruning_always):
    """A 1,000-row source whose keys fall in 2 of 40 files reads (after skipping) and
    rewrites only those 2 files; a source key set prunes the same way, an all-null key
    source reads none."""
    path = str(tmp_path / "t")
    for f in range(40):
        write_deltalake(path, dml_data(f * 1000, 1000), mode="append")
    t = DeltaTable.forPath(spark, path)
    src = spark.range(10_500, 11_500).selectExpr("id", "id % 3 AS part", "'m' AS name", "-1.0D AS value")
    t.alias("t").merge(src.alias("s"), "t.id = s.id").whenMatchedUpdateAll().whenNotMatchedInsertAll().execute()
    m = t.history(1).collect()[0].operationMetrics
    assert m["numTargetFilesBeforeSkipping"] == "40" and m["numTargetFilesAfterSkipping"] == "2"
    assert m["numTargetFilesRemoved"] == "2" and m["numTargetRowsUpdated"] == "1000"
    assert m["numTargetRowsInserted"] == "0"
    # a handful of keys in 3 files, with a target-side literal conjunct and new keys
    few = spark.createDataFrame(
        [(5, 2, "a", 0.0), (20_001, 0, "b", 0.0), (39_999, 0, "c", 0.0), (50_000, 2, "d", 0.0)], DML_COLS
    )
    t.alias("t").merge(
        few.alias("s"), "s.id = t.id AND t.value >= 0"
    ).whenMatchedDelete().whenNotMatchedInsertAll().execute()
    m = t.history(1).collect()[0].operationMetrics
    assert m["numTargetFilesAfterSkipping"] == "3" and m["numTargetFilesRemoved"] == "3"
    assert m["numTargetRowsDeleted"] == "3" and m["numTargetRowsInserted"] == "1"
    rows = rows_three_ways(spark, path)
    assert len(rows) == 40_000 - 3 + 1 and rows[10_600][2] == "m" and 20_001 not in rows and 50_000 in rows
    nulls = spark.createDataFrame([(None, 0, "x", 0.0)], "id long, part long, name string, value double")
    t.alias("t").merge(nulls.alias("s"), "t.id = s.id").whenNotMatchedInsertAll().execute()
    m = t.history(1).collect()[0].operationMetrics
    assert m["numTargetFilesAfterSkipping"] == "0" and m["numTargetRowsInserted"] == "1"


def test_merge_with_deletion_vectors_marks_rows_and_writes_only_changed_rows(spark, tmp_path):
    """delta-spark's MERGE with delta.enableDeletionVectors=true: updated and deleted target
    rows are marked in (merged) deletion vectors; only updated and inserted rows are written."""
    path = make_dml_table(str(tmp_path / "t"), files=4, rows_per_file=50)
    t = DeltaTable.forPath(spark, path)
    t.delete("id = 60")  # an existing vector to merge with
    before = set(parquet_files(path))
    src = spark.createDataFrame(
        [(10, 1, "upd", 1.0), (61, 1, "gone", 0.0), (150, 0, "upd", 2.0), (500, 2, "new", 3.0)], DML_COLS
    )
    (
        t.alias("t")
        .merge(src.alias("s"), "t.id = s.id")
        .whenMatchedDelete("s.name = 'gone'")
        .whenMatchedUpdateAll()
        .whenNotMatchedInsertAll()
        .execute()
    )
    after = set(parquet_files(path))
    assert before <= after  # no file rewritten
    assert sum(parquet_rows(os.path.join(path, f)) for f in after - before) == 3  # 2 updated + 1 inserted
    m = t.history(1).collect()[0].operationMetrics
    assert m["numTargetRowsCopied"] == "0" and m["numTargetFilesRemoved"] == "0"
    assert m["numTargetDeletionVectorsAdded"] == "3" and m["numTargetDeletionVectorsUpdated"] == "1"
    assert m["numTargetRowsUpdated"] == "2" and m["numTargetRowsDeleted"] == "1" and m["numTargetRowsInserted"] == "1"
    rows = rows_three_ways(spark, path)
    assert len(rows) == 200 - 2 + 1
    assert rows[10][2] == "upd" and rows[150][3] == 2.0 and rows[500][2] == "new" and 61 not in rows and 60 not in rows


def test_merge_source_keys_are_merged_across_tasks_and_nan_keys_prune_nothing(spark, tmp_path, key_pruning_always):
    """The source's key bounds and key set come from per-task parts: 80 distinct keys in
    4 tasks (each under the key-set limit) prune by their range to 2 of 5 files; a NaN key
    (equal to NaN in Spark's join) keeps the file holding a NaN value."""
    path = str(tmp_path / "t")
    for f in range(4):
        write_deltalake(path, dml_data(f * 50, 50), mode="append")
    nan = pa.table({"id": [1000], "part": [1], "name": ["x"], "value": [float("nan")]})
    write_deltalake(path, nan.cast(dml_data(0, 1).schema), mode="append")
    t = DeltaTable.forPath(spark, path)
    src = spark.range(0, 100, numPartitions=4).where("id < 80")
    src = src.selectExpr("id", "id % 3 AS part", "'m' AS name", "-1.0D AS value")
    t.alias("t").merge(src.alias("s"), "t.id = s.id").whenMatchedUpdateAll().execute()
    m = t.history(1).collect()[0].operationMetrics
    assert m["numTargetFilesAfterSkipping"] == "2" and m["numTargetRowsUpdated"] == "80"
    keys = spark.createDataFrame([(0, 0, "n", float("nan")), (1, 0, "n", 75.0)], DML_COLS)
    t.alias("t").merge(keys.alias("s"), "t.value = s.value").whenMatchedUpdate(set={"name": "'hit'"}).execute()
    m = t.history(1).collect()[0].operationMetrics
    assert m["numTargetRowsUpdated"] == "2"
    for df in (read_delta(spark, path), spark.read.format("pydelta").load(path)):
        names = {r.id: r.name for r in df.collect()}
        assert names[1000] == "hit" and names[150] == "hit" and names[1] == "m" and len(names) == 201


def test_merge_when_not_matched_by_source(spark, tmp_path):
    path = make_cdf_table(str(tmp_path / "t"), cdf=False)
    t = DeltaTable.forPath(spark, path)
    files_before = set(Snapshot.load(path).files.column("path").to_pylist())
    # the source is the new truth for ids < 10: sync the table to it
    src = spark.createDataFrame(
        [(i, i % 2, f"n{i}") for i in range(10) if i not in (2, 7)] + [(1, 1, "one")], "id long, p long, name string"
    ).where("not (id = 1 and name = 'n1')")
    m = (
        t.alias("t")
        .merge(src.alias("s"), "t.id = s.id")
        .whenMatchedUpdate("t.name <> s.name", {"name": "s.name"})
        .whenNotMatchedBySourceDelete("t.id < 10")
        .whenNotMatchedBySourceUpdate("t.id >= 25", {"name": "concat(t.name, '-old')"})
        .execute()
        .collect()[0]
    )
    # execute() returns delta-spark's four counts; the detailed ones are in the history
    assert tuple(m) == (8, 6, 2, 0)  # num_affected_rows, num_updated_rows, num_deleted_rows, num_inserted_rows
    hm = {k: int(v) for k, v in t.history(1).collect()[0].operationMetrics.items()}
    assert (
        hm["numTargetRowsMatchedUpdated"],
        hm["numTargetRowsNotMatchedBySourceDeleted"],
        hm["numTargetRowsNotMatchedBySourceUpdated"],
        hm["numTargetRowsInserted"],
    ) == (1, 2, 5, 0)
    assert (hm["numTargetRowsUpdated"], hm["numTargetRowsDeleted"]) == (6, 2)
    rows = {r[0]: r for r in same_cdf_rows(spark, path)}
    assert 2 not in rows and 7 not in rows and rows[1][2] == "one" and len(rows) == 28
    assert rows[26][2] == "n26-old" and rows[24][2] == "n24" and rows[12][2] == "n12"
    # files with no changed row (ids 10..19 of the second write) were not rewritten
    files_after = set(Snapshot.load(path).files.column("path").to_pylist())
    kept = files_before & files_after
    snap = Snapshot.load(path)
    stats = {
        p: json.loads(st)
        for p, st in zip(snap.files.column("path").to_pylist(), snap.files.column("stats").to_pylist())
    }
    assert len(kept) == 2 and all(10 <= stats[p]["minValues"]["id"] <= stats[p]["maxValues"]["id"] <= 19 for p in kept)
    last = t.history(1).collect()[0]
    assert last.operation == "MERGE" and "notMatchedBySourcePredicates" in last.operationParameters
    with pytest.raises(ValueError, match="set must name"):
        t.alias("t").merge(src.alias("s"), "t.id = s.id").whenNotMatchedBySourceUpdate(set={})


def test_merge_unconditional_delete_allows_duplicate_source_keys(spark, tmp_path):
    """delta-spark lets several source rows match one target row when the only matched
    clause is an unconditional delete: each matched row is deleted once (one change row)."""
    from delta_pyds.errors import DeltaError

    path = make_cdf_table(str(tmp_path / "t"))
    t = DeltaTable.forPath(spark, path)
    v = Snapshot.load(path).version
    src = spark.createDataFrame(
        [(3, "a"), (3, "b"), (14, "c"), (14, "d"), (14, "e"), (7, "f"), (99, "g"), (99, "h")], "id long, tag string"
    )
    m = (
        t.alias("t")
        .merge(src.alias("s"), "t.id = s.id")
        .whenMatchedDelete()
        .whenNotMatchedBySourceUpdate("t.id = 20", set={"name": "'kept'"})
        .execute()
        .collect()[0]
    )
    assert (m.num_deleted_rows, m.num_updated_rows, m.num_affected_rows) == (3, 1, 4)
    hm = {k: int(v) for k, v in t.history(1).collect()[0].operationMetrics.items()}
    assert (hm["numTargetRowsDeleted"], hm["numTargetRowsMatchedDeleted"], hm["numTargetRowsUpdated"]) == (3, 3, 1)
    rows = same_cdf_rows(spark, path)
    assert sorted(r[0] for r in rows) == sorted(set(range(30)) - {3, 7, 14})
    assert [r[2] for r in rows if r[0] == 20] == ["kept"]
    assert sorted(change_rows(spark, path, v + 1)) == [
        (3, 1, "n3", "delete"),
        (7, 1, "n7", "delete"),
        (14, 0, "n14", "delete"),
        (20, 0, "kept", "update_postimage"),
        (20, 0, "n20", "update_preimage"),
    ]
    # a conditional delete, or a delete with another matched clause, stays ambiguous
    src = spark.createDataFrame([(4, "a"), (4, "b"), (5, "c")], "id long, tag string")
    for build in (
        lambda b: b.whenMatchedDelete("s.tag <> 'x'"),
        lambda b: b.whenMatchedDelete().whenMatchedUpdate(set={"name": "s.tag"}),
    ):
        with pytest.raises(DeltaError, match="DELTA_MULTIPLE_SOURCE_ROW_MATCHING_TARGET_ROW_IN_MERGE"):
            build(t.alias("t").merge(src.alias("s"), "t.id = s.id")).execute()
    assert len(same_cdf_rows(spark, path)) == 27
