"""DELETE (DeltaTable.delete): deletion vectors (inline when small, one file otherwise, merged
with existing vectors, no data file rewritten), copy-on-write without them, tables written by
delta-spark, the change feed of a deletion-vector delete, metrics in history — each checked
against deltalake (delta-rs). Runs on both DML engines."""

from __future__ import annotations

import glob
import os

import pytest
from dml_engines import dml_engine  # noqa: F401  (autouse: native and python engines)
from dml_helpers import agree_with_deltalake, dv_files, make_dml_table  # noqa: F401  (dv_files: a fixture)
from helpers import arrow_rows, deltalake_table, parquet_files, spark_rows

from delta_pyds import DeltaTable
from delta_pyds.table.snapshot import Snapshot

_make = make_dml_table
_agree = agree_with_deltalake
_data_files = parquet_files


def test_small_deletion_vectors_are_stored_inline(spark, tmp_path):
    path = _make(str(tmp_path / "t"), files=2, rows_per_file=100)
    t = DeltaTable.forPath(spark, path)
    t.delete("id in (3, 150, 151)")  # a few rows per file: inline
    kinds = {d["storageType"] for d in Snapshot.load(path).files.column("deletion_vector").to_pylist()}
    assert kinds == {"i"} and not glob.glob(os.path.join(path, "deletion_vector_*.bin"))
    t.delete("id % 2 = 0 or id = 5")  # ~50 rows per file: too big for the log, one DV file
    kinds = {d["storageType"] for d in Snapshot.load(path).files.column("deletion_vector").to_pylist()}
    assert kinds == {"u"} and len(glob.glob(os.path.join(path, "deletion_vector_*.bin"))) == 1
    _agree(spark, path, [i for i in range(200) if i % 2 and i not in (3, 5, 151)])
    spark.conf.set("spark.pydelta.deletionVectors.inlineMaxBytes", "many")
    try:
        with pytest.raises(ValueError, match="inlineMaxBytes: expected a number of bytes"):
            t.delete("id = 7")
    finally:
        spark.conf.unset("spark.pydelta.deletionVectors.inlineMaxBytes")


def test_delete_with_deletion_vectors_rewrites_no_data_file(spark, tmp_path, dv_files):  # noqa: F811  (the imported fixture)
    path = _make(str(tmp_path / "t"), files=5, rows_per_file=100)
    before = _data_files(path)
    mtimes = {f: os.path.getmtime(os.path.join(path, f)) for f in before}
    t = DeltaTable.forPath(spark, path)
    t.delete("id % 10 = 3")  # 10% of the rows, in every file
    assert _data_files(path) == before  # no data file written or rewritten
    assert all(os.path.getmtime(os.path.join(path, f)) == mtimes[f] for f in before)
    assert len(glob.glob(os.path.join(path, "deletion_vector_*.bin"))) == 1
    expected = [i for i in range(500) if i % 10 != 3]
    _agree(spark, path, expected)
    snap = Snapshot.load(path)
    assert snap.files.num_rows == 5
    assert all(d is not None for d in snap.files.column("deletion_vector").to_pylist())
    info = t.history(1).collect()[0]
    assert info.operation == "DELETE"
    assert info.operationMetrics["numDeletedRows"] == "50"
    assert info.operationMetrics["numDeletionVectorsAdded"] == "5"
    # a second delete merges with the existing vectors; a fully deleted file is removed
    t.delete("id < 100 OR id = 101")
    expected = [i for i in expected if not (i < 100 or i == 101)]
    _agree(spark, path, expected)
    assert Snapshot.load(path).files.num_rows == 4
    m = t.history(1).collect()[0].operationMetrics
    assert m["numDeletedRows"] == "91" and m["numRemovedFiles"] == "1"
    # no match: no commit
    v = Snapshot.load(path).version
    t.delete("id > 100000")
    assert Snapshot.load(path).version == v


def test_delete_copy_on_write_without_dvs(spark, tmp_path):
    path = _make(str(tmp_path / "t"), files=3, rows_per_file=50, dv=False, partition=True)
    t = DeltaTable.forPath(spark, path)
    from pyspark.sql import functions as F

    t.delete(F.col("name") == "n7")
    _agree(spark, path, [i for i in range(150) if i != 7])
    assert not glob.glob(os.path.join(path, "deletion_vector_*.bin"))
    m = t.history(1).collect()[0].operationMetrics
    assert m["numDeletedRows"] == "1" and m["numRemovedFiles"] == "1" and m["numAddedFiles"] == "1"
    t.delete()  # everything
    _agree(spark, path, [])


def test_delta_spark_table_with_dvs(spark, copy_table):
    """A table written by delta-spark with deletion vectors: delete merges with its vector,
    optimize drops it, and deltalake agrees throughout."""
    path = copy_table("kernel-rs/with-short-dv")
    cols = ["id", "value", "timestamp", "rand"]
    t = DeltaTable.forPath(spark, path)

    def agree():
        ours = spark_rows(t.toDF().select(*cols))
        assert ours == arrow_rows(deltalake_table(path), cols)
        return ours

    before = agree()
    files = _data_files(path)
    t.delete("id % 3 = 0")
    assert _data_files(path) == files
    after = agree()
    assert len(after) == len([r for r in before if r[0] % 3 != 0]) < len(before)
    t.optimize().executeCompaction()
    assert agree() == after
    assert Snapshot.load(path).files.column("deletion_vector").to_pylist() == [None]


def test_dv_delete_feeds_change_data_feed(spark, copy_table):
    path = copy_table("kernel-rs/cdf-table-with-dv")
    t = DeltaTable.forPath(spark, path)
    rows = t.toDF().collect()
    victim = rows[0].value
    v = Snapshot.load(path).version
    t.delete(f"value = {victim}")
    changes = (
        spark.read.format("pydelta")
        .option("readChangeFeed", "true")
        .option("startingVersion", v + 1)
        .load(path)
        .collect()
    )
    assert [(r.value, r._change_type) for r in changes] == [(victim, "delete")]
    assert sorted(r.value for r in t.toDF().collect()) == sorted(r.value for r in rows[1:])
    # copy-on-write UPDATE on the same table: change data files with pre and post images
    t.update(f"value = {rows[1].value}", {"value": "value + 100"})
    changes = (
        spark.read.format("pydelta")
        .option("readChangeFeed", "true")
        .option("startingVersion", v + 2)
        .load(path)
        .collect()
    )
    assert sorted((r.value, r._change_type) for r in changes) == sorted(
        [(rows[1].value, "update_preimage"), (rows[1].value + 100, "update_postimage")]
    )
