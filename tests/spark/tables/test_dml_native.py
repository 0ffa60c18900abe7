"""DML on Spark's own engine: which engine runs (native, or the Python-worker fallback where
Spark's reader cannot serve the table), UPDATE with deletion vectors (matched rows marked,
only the changed rows written), and tables it writes reading back the same through the
data source, ``read_delta`` and deltalake."""

from __future__ import annotations

import logging
import os

import pyarrow as pa
import pytest
from deltalake import write_deltalake
from dml_engines import dml_engine  # noqa: F401  (autouse: native and python engines)
from helpers import DML_COLS, deltalake_table, dml_data, parquet_files, spark_rows

from delta_pyds import DeltaTable, read_delta
from delta_pyds.spark.native.read import NativeReadUnavailable
from delta_pyds.spark.tables.merge_pruning import KEY_PRUNING_CONF
from delta_pyds.spark.tables.native_rows import DML_ENGINE_CONF
from delta_pyds.table.snapshot import Snapshot

COLS = DML_COLS
_data = dml_data
_data_files = parquet_files


def _make(path, files=4, rows_per_file=50, dv=True, partition=False, config=None, writer="deltalake"):
    conf = dict(config or {})
    if dv:
        conf["delta.enableDeletionVectors"] = "true"
    for i in range(files):
        if writer == "pydelta":  # features deltalake cannot write (row tracking), paths it refuses
            from delta_pyds.write.plan import write_arrow

            write_arrow(path, _data(i * rows_per_file, rows_per_file), options=conf if i == 0 else None)
            continue
        write_deltalake(
            path,
            _data(i * rows_per_file, rows_per_file),
            mode="append",
            configuration=(conf or None) if i == 0 else None,
            partition_by=["part"] if partition else None,
        )
    return path


def _three_ways(spark, path):
    """The table's rows through the data source, read_delta and deltalake (all equal)."""
    ours = spark_rows(spark.read.format("pydelta").load(path).select(*COLS))
    native = spark_rows(read_delta(spark, path).select(*COLS))
    theirs = sorted(tuple(r[c] for c in COLS) for r in deltalake_table(path).select(COLS).to_pylist())
    assert ours == native
    assert sorted(tuple(r) for r in ours) == theirs
    return {r[0]: r for r in ours}


@pytest.mark.parametrize("partition", [False, True])
def test_update_with_deletion_vectors_marks_rows_and_writes_only_changed_rows(spark, tmp_path, partition):
    """delta-spark's UPDATE with delta.enableDeletionVectors=true: the old files stay, the
    matching rows are marked in (merged) deletion vectors, only updated rows are written."""
    path = _make(str(tmp_path / "t"), partition=partition)
    t = DeltaTable.forPath(spark, path)
    t.delete("id = 7")  # an existing vector the update's marks merge with
    before = set(_data_files(path))
    t.update("id % 10 = 3 OR id = 8", {"name": "concat('u', name)", "value": "value + 1000"})
    after = set(_data_files(path))
    assert before <= after  # nothing rewritten: every old data file is still there
    new_files = after - before
    m = t.history(1).collect()[0].operationMetrics
    hit = [i for i in range(200) if i % 10 == 3 or i == 8]
    assert m["numUpdatedRows"] == str(len(hit)) and m["numCopiedRows"] == "0"
    assert m["numAddedFiles"] == str(len(new_files))
    assert int(m["numDeletionVectorsAdded"]) >= 4 and int(m["numDeletionVectorsUpdated"]) >= 1
    snap = Snapshot.load(path)
    assert snap.files.num_rows == len(after)
    assert sum(pq_rows(os.path.join(path, f)) for f in new_files) == len(hit)  # only changed rows written
    rows = _three_ways(spark, path)
    assert 7 not in rows and len(rows) == 199
    assert rows[3][2] == "un3" and rows[3][3] == 1001.5 and rows[8][2] == "un8"
    assert rows[4][2] == "n4" and rows[4][3] == 2.0


def pq_rows(path):
    import pyarrow.parquet as pq

    return pq.ParquetFile(path).metadata.num_rows


def test_update_with_deletion_vectors_keeps_row_ids_and_change_feed(spark, tmp_path):
    """UPDATE with DVs on a tracked table with the change feed: updated rows keep their row
    ids and take the commit's version; pre/post images are written."""
    path = _make(
        str(tmp_path / "t"),
        files=2,
        rows_per_file=20,
        config={"delta.enableRowTracking": "true", "delta.enableChangeDataFeed": "true"},
        writer="pydelta",
    )
    t = DeltaTable.forPath(spark, path)
    t.update("id IN (1, 25)", {"value": "-1.0"})
    v = Snapshot.load(path).version
    changes = (
        spark.read.format("pydelta")
        .option("readChangeFeed", "true")
        .option("startingVersion", v)
        .load(path)
        .select("id", "value", "_change_type")
        .collect()
    )
    got = sorted((r.id, r.value, r._change_type) for r in changes)
    assert got == [
        (1, -1.0, "update_postimage"),
        (1, 0.5, "update_preimage"),
        (25, -1.0, "update_postimage"),
        (25, 12.5, "update_preimage"),
    ]
    rows = _three_ways(spark, path)
    assert rows[1][3] == -1.0 and rows[25][3] == -1.0 and len(rows) == 40
    # row ids survive the rewrite (deltalake agrees on the ids of untouched rows)
    from delta_pyds.operations.row_tracking import row_tracking_columns

    snap = Snapshot.load(path)
    id_col, version_col = row_tracking_columns(snap)
    import pyarrow.parquet as pq

    materialized = {}
    for f in snap.files.to_pylist():
        if f["deletion_vector"] is None:
            tbl = pq.read_table(os.path.join(path, f["path"]))
            for i, rid, ver in zip(
                tbl.column("id").to_pylist(), tbl.column(id_col).to_pylist(), tbl.column(version_col).to_pylist()
            ):
                materialized[i] = (rid, ver)
    # the base row ids of deltalake's two files are 0 and 20: row id = position
    assert materialized == {1: (1, None), 25: (25, None)}


def test_fallback_where_spark_cannot_read_and_native_refuses(spark, tmp_path, dml_engine, caplog):  # noqa: F811
    """A table path with glob characters (Spark would expand them): DML falls back to the
    Python workers with a logged reason; spark.pydelta.dml.engine=native refuses instead."""
    path = _make(str(tmp_path / "a[1]"), files=2, rows_per_file=10, dv=False, writer="pydelta")
    t = DeltaTable.forPath(spark, path)
    if dml_engine == "native":
        with pytest.raises(NativeReadUnavailable, match="glob characters"):
            t.delete("id = 3")
        spark.conf.set(DML_ENGINE_CONF, "auto")
    with caplog.at_level(logging.WARNING, logger="delta_pyds.spark.tables.dml"):
        t.delete("id = 3")
    if dml_engine == "native":
        assert any("rows through Python workers" in r.getMessage() for r in caplog.records)
    assert sorted(r.id for r in t.toDF().collect()) == [i for i in range(20) if i != 3]


def test_engine_conf_is_checked(spark, tmp_path):
    path = _make(str(tmp_path / "t"), files=1, rows_per_file=5, dv=False)
    spark.conf.set(DML_ENGINE_CONF, "fast")
    with pytest.raises(ValueError, match="spark.pydelta.dml.engine: expected one of auto, native, python"):
        DeltaTable.forPath(spark, path).delete("id = 1")


@pytest.fixture
def key_pruning_always(spark):
    """Source-key pruning also for these small tables (by default only from 16 MiB of files)."""
    spark.conf.set(KEY_PRUNING_CONF, "0")
    yield
    spark.conf.unset(KEY_PRUNING_CONF)


def test_merge_prunes_target_files_by_source_key_ranges(spark, tmp_path, key_pruning_always):
    """A 1,000-row source whose keys fall in 2 of 40 files reads (after skipping) and
    rewrites only those 2 files; a source key set prunes the same way, an all-null key
    source reads none."""
    path = str(tmp_path / "t")
    for f in range(40):
        write_deltalake(path, _data(f * 1000, 1000), mode="append")
    t = DeltaTable.forPath(spark, path)
    src = spark.range(10_500, 11_500).selectExpr("id", "id % 3 AS part", "'m' AS name", "-1.0D AS value")
    t.alias("t").merge(src.alias("s"), "t.id = s.id").whenMatchedUpdateAll().whenNotMatchedInsertAll().execute()
    m = t.history(1).collect()[0].operationMetrics
    assert m["numTargetFilesBeforeSkipping"] == "40" and m["numTargetFilesAfterSkipping"] == "2"
    assert m["numTargetFilesRemoved"] == "2" and m["numTargetRowsUpdated"] == "1000"
    assert m["numTargetRowsInserted"] == "0"
    # a handful of keys in 3 files, with a target-side literal conjunct and new keys
    few = spark.createDataFrame(
        [(5, 2, "a", 0.0), (20_001, 0, "b", 0.0), (39_999, 0, "c", 0.0), (50_000, 2, "d", 0.0)], COLS
    )
    t.alias("t").merge(
        few.alias("s"), "s.id = t.id AND t.value >= 0"
    ).whenMatchedDelete().whenNotMatchedInsertAll().execute()
    m = t.history(1).collect()[0].operationMetrics
    assert m["numTargetFilesAfterSkipping"] == "3" and m["numTargetFilesRemoved"] == "3"
    assert m["numTargetRowsDeleted"] == "3" and m["numTargetRowsInserted"] == "1"
    rows = _three_ways(spark, path)
    assert len(rows) == 40_000 - 3 + 1 and rows[10_600][2] == "m" and 20_001 not in rows and 50_000 in rows
    nulls = spark.createDataFrame([(None, 0, "x", 0.0)], "id long, part long, name string, value double")
    t.alias("t").merge(nulls.alias("s"), "t.id = s.id").whenNotMatchedInsertAll().execute()
    m = t.history(1).collect()[0].operationMetrics
    assert m["numTargetFilesAfterSkipping"] == "0" and m["numTargetRowsInserted"] == "1"


def test_merge_with_deletion_vectors_marks_rows_and_writes_only_changed_rows(spark, tmp_path):
    """delta-spark's MERGE with delta.enableDeletionVectors=true: updated and deleted target
    rows are marked in (merged) deletion vectors; only updated and inserted rows are written."""
    path = _make(str(tmp_path / "t"), files=4, rows_per_file=50)
    t = DeltaTable.forPath(spark, path)
    t.delete("id = 60")  # an existing vector to merge with
    before = set(_data_files(path))
    src = spark.createDataFrame(
        [(10, 1, "upd", 1.0), (61, 1, "gone", 0.0), (150, 0, "upd", 2.0), (500, 2, "new", 3.0)], COLS
    )
    (
        t.alias("t")
        .merge(src.alias("s"), "t.id = s.id")
        .whenMatchedDelete("s.name = 'gone'")
        .whenMatchedUpdateAll()
        .whenNotMatchedInsertAll()
        .execute()
    )
    after = set(_data_files(path))
    assert before <= after  # no file rewritten
    assert sum(pq_rows(os.path.join(path, f)) for f in after - before) == 3  # 2 updated + 1 inserted
    m = t.history(1).collect()[0].operationMetrics
    assert m["numTargetRowsCopied"] == "0" and m["numTargetFilesRemoved"] == "0"
    assert m["numTargetDeletionVectorsAdded"] == "3" and m["numTargetDeletionVectorsUpdated"] == "1"
    assert m["numTargetRowsUpdated"] == "2" and m["numTargetRowsDeleted"] == "1" and m["numTargetRowsInserted"] == "1"
    rows = _three_ways(spark, path)
    assert len(rows) == 200 - 2 + 1
    assert rows[10][2] == "upd" and rows[150][3] == 2.0 and rows[500][2] == "new" and 61 not in rows and 60 not in rows


def test_merge_source_keys_are_merged_across_tasks_and_nan_keys_prune_nothing(spark, tmp_path, key_pruning_always):
    """The source's key bounds and key set come from per-task parts: 80 distinct keys in
    4 tasks (each under the key-set limit) prune by their range to 2 of 5 files; a NaN key
    (equal to NaN in Spark's join) keeps the file holding a NaN value."""
    path = str(tmp_path / "t")
    for f in range(4):
        write_deltalake(path, _data(f * 50, 50), mode="append")
    nan = pa.table({"id": [1000], "part": [1], "name": ["x"], "value": [float("nan")]})
    write_deltalake(path, nan.cast(_data(0, 1).schema), mode="append")
    t = DeltaTable.forPath(spark, path)
    src = spark.range(0, 100, numPartitions=4).where("id < 80")
    src = src.selectExpr("id", "id % 3 AS part", "'m' AS name", "-1.0D AS value")
    t.alias("t").merge(src.alias("s"), "t.id = s.id").whenMatchedUpdateAll().execute()
    m = t.history(1).collect()[0].operationMetrics
    assert m["numTargetFilesAfterSkipping"] == "2" and m["numTargetRowsUpdated"] == "80"
    keys = spark.createDataFrame([(0, 0, "n", float("nan")), (1, 0, "n", 75.0)], COLS)
    t.alias("t").merge(keys.alias("s"), "t.value = s.value").whenMatchedUpdate(set={"name": "'hit'"}).execute()
    m = t.history(1).collect()[0].operationMetrics
    assert m["numTargetRowsUpdated"] == "2"
    for df in (read_delta(spark, path), spark.read.format("pydelta").load(path)):
        names = {r.id: r.name for r in df.collect()}
        assert names[1000] == "hit" and names[150] == "hit" and names[1] == "m" and len(names) == 201
