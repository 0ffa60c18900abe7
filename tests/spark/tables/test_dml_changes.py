"""Copy-on-write DML on change-data-feed tables (change data files in ``_change_data``,
read back by pydelta and by deltalake), and MERGE's whenNotMatchedBySource clauses."""

from __future__ import annotations

import glob
import json
import os

import pyarrow as pa
import pytest
from deltalake import DeltaTable as DLTable  # noqa: E402
from deltalake import write_deltalake
from dml_engines import dml_engine  # noqa: F401  (autouse: native and python engines)
from helpers import arrow_rows, deltalake_table, spark_rows

from delta_pyds import DeltaTable  # noqa: E402
from delta_pyds.table.snapshot import Snapshot  # noqa: E402

COLS = ["id", "p", "name"]
CHANGE_COLS = ["id", "p", "name", "_change_type", "_commit_version"]


def _make(path, cdf=True, mapping=False):
    conf = {"delta.enableChangeDataFeed": "true"} if cdf else {}
    if mapping:
        conf["delta.columnMapping.mode"] = "name"
    for start in (0, 10, 20):
        ids = list(range(start, start + 10))
        write_deltalake(
            path,
            pa.table(
                {"id": pa.array(ids, pa.int64()), "p": pa.array([i % 2 for i in ids]), "name": [f"n{i}" for i in ids]}
            ),
            mode="append",
            partition_by=["p"],
            configuration=conf if start == 0 else None,
        )
    return path


def _changes(spark, path, version, cross_check=True):
    ours = spark_rows(
        spark.read.format("pydelta")
        .option("readChangeFeed", "true")
        .option("startingVersion", version)
        .load(path)
        .select(*CHANGE_COLS)
    )
    if cross_check:  # deltalake reads no change data feed of column-mapped tables
        theirs = arrow_rows(pa.table(DLTable(path).load_cdf(starting_version=version).read_all()), CHANGE_COLS)
        assert ours == theirs
    return [r[:4] for r in ours]


def _same_rows(spark, path):
    ours = spark_rows(spark.read.format("pydelta").load(path).select(*COLS))
    assert ours == arrow_rows(deltalake_table(path), COLS)
    return ours


@pytest.mark.parametrize("mapping", [False, True])
def test_copy_on_write_dml_writes_change_data(spark, tmp_path, mapping):
    path = _make(str(tmp_path / "t"), mapping=mapping)
    t = DeltaTable.forPath(spark, path)
    v = Snapshot.load(path).version
    t.delete("id in (3, 13)")
    assert sorted(_changes(spark, path, v + 1, not mapping)) == [(3, 1, "n3", "delete"), (13, 1, "n13", "delete")]
    cdc = glob.glob(os.path.join(path, "_change_data", "*", "*.parquet"))
    assert cdc and all(os.path.basename(os.path.dirname(f)).startswith(("p=", "col-")) for f in cdc)
    t.update("id = 4", {"name": "'four'"})
    assert sorted(_changes(spark, path, v + 2, not mapping)) == [
        (4, 0, "four", "update_postimage"),
        (4, 0, "n4", "update_preimage"),
    ]
    src = spark.createDataFrame([(5, 1, "five"), (6, 0, "gone"), (100, 0, "new")], "id long, p long, name string")
    (
        t.alias("t")
        .merge(src.alias("s"), "t.id = s.id")
        .whenMatchedDelete("s.name = 'gone'")
        .whenMatchedUpdateAll()
        .whenNotMatchedInsertAll()
        .execute()
    )
    assert sorted(_changes(spark, path, v + 3, not mapping)) == [
        (5, 1, "five", "update_postimage"),
        (5, 1, "n5", "update_preimage"),
        (6, 0, "n6", "delete"),
        (100, 0, "new", "insert"),
    ]
    rows = {r[0]: r for r in _same_rows(spark, path)}
    assert len(rows) == 30 - 3 + 1 and rows[4][2] == "four" and rows[5][2] == "five"


def test_failed_cdc_commit_leaves_no_files(spark, tmp_path, monkeypatch):
    path = _make(str(tmp_path / "t"))
    before = set(glob.glob(os.path.join(path, "**", "*.parquet"), recursive=True))
    from delta_pyds.transaction import commit as transaction

    monkeypatch.setattr(
        transaction.Transaction, "commit", lambda self, *a, **k: (_ for _ in ()).throw(RuntimeError("lost"))
    )
    with pytest.raises(RuntimeError, match="lost"):
        DeltaTable.forPath(spark, path).update("id < 5", {"name": "'x'"})
    after = set(glob.glob(os.path.join(path, "**", "*.parquet"), recursive=True))
    assert after == before


def test_merge_when_not_matched_by_source(spark, tmp_path):
    path = _make(str(tmp_path / "t"), cdf=False)
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
    rows = {r[0]: r for r in _same_rows(spark, path)}
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

    path = _make(str(tmp_path / "t"))
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
    rows = _same_rows(spark, path)
    assert sorted(r[0] for r in rows) == sorted(set(range(30)) - {3, 7, 14})
    assert [r[2] for r in rows if r[0] == 20] == ["kept"]
    assert sorted(_changes(spark, path, v + 1)) == [
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
    assert len(_same_rows(spark, path)) == 27
