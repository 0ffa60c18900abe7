"""UPDATE (DeltaTable.update): copy-on-write, and with deletion vectors as delta-spark does it
(matched rows marked, only the changed rows written, row ids kept, pre/post images in the
change feed); rows read back equal through the data source, read_delta and deltalake.
Runs on both DML engines."""

from __future__ import annotations

import os

import pytest
from dml_engines import dml_engine  # noqa: F401  (autouse: native and python engines)
from dml_helpers import agree_with_deltalake, make_dml_table, parquet_rows, rows_three_ways
from helpers import parquet_files

from delta_pyds import DeltaTable
from delta_pyds.table.snapshot import Snapshot

_make = make_dml_table
_agree = agree_with_deltalake
_three_ways = rows_three_ways
_data_files = parquet_files
pq_rows = parquet_rows


def test_update_copy_on_write(spark, tmp_path):
    path = _make(str(tmp_path / "t"), files=3, rows_per_file=20)
    t = DeltaTable.forPath(spark, path)
    t.delete("id = 5")  # a DV the update must apply
    t.update("id < 10", {"name": "concat('x', name)", "value": "value + 1000"})
    rows = {r.id: r for r in t.toDF().collect()}
    assert 5 not in rows and len(rows) == 59
    assert rows[3].name == "xn3" and rows[3].value == 1001.5
    assert rows[10].name == "n10" and rows[10].value == 5.0
    _agree(spark, path)
    assert t.history(1).collect()[0].operationMetrics["numUpdatedRows"] == "9"
    with pytest.raises(ValueError):
        t.update("id = 1", {"nope": "1"})


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
