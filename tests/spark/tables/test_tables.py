"""DeltaTable (delta_pyds.spark.tables) across operations: table properties and
protocol upgrades with a delete, DML on column-mapped partitioned tables, row ids kept through
delete, update, merge, optimize and restore — checked against deltalake (delta-rs) after every
operation. One operation's own tests are in its file (test_delete.py, test_update.py,
test_optimize.py, test_restore.py, test_history_detail.py, test_merge.py)."""

from __future__ import annotations

import json

import pytest
from dml_engines import dml_engine  # noqa: F401  (autouse: native and python engines)
from dml_helpers import agree_with_deltalake, make_dml_table
from helpers import dml_data, parquet_files, row_ids

from delta_pyds import DeltaTable  # noqa: E402
from delta_pyds.table.snapshot import Snapshot  # noqa: E402

_data = dml_data
_data_files = parquet_files
_make = make_dml_table
_agree = agree_with_deltalake


def test_enable_deletion_vectors_then_delete_and_upgrade_protocol(spark, tmp_path):
    path = _make(str(tmp_path / "t"), files=2, rows_per_file=10, dv=False)
    t = DeltaTable.forPath(spark, path)
    p = Snapshot.load(path).protocol
    t.upgradeProtocol(p.min_reader_version, max(p.min_writer_version, 4))
    assert Snapshot.load(path).protocol.min_writer_version >= 4
    with pytest.raises(ValueError):
        t.upgradeProtocol(1, 1)
    t.setProperties({"delta.enableDeletionVectors": True})
    snap = Snapshot.load(path)
    assert "deletionVectors" in (snap.protocol.writer_features or ())
    before = _data_files(path)
    t.delete("id = 4")
    assert _data_files(path) == before
    _agree(spark, path, [i for i in range(20) if i != 4])
    with pytest.raises(ValueError):
        t.setProperties({"delta.columnMapping.mode": "name"})


def test_column_mapping_and_partitions(spark, tmp_path):
    from delta_pyds.write.plan import commit_arrow

    path = str(tmp_path / "cm")
    for i in range(4):
        commit_arrow(
            path,
            _data(i * 25, 25),
            options={"partitionBy": "part", "delta.columnMapping.mode": "name", "delta.enableDeletionVectors": "true"},
        )
    t = DeltaTable.forPath(spark, path)
    t.delete("part = 1 AND id > 50")
    t.update("name = 'n3'", {"name": "'three'", "part": "7"})
    expected = [i for i in range(100) if not (i % 3 == 1 and i > 50)]
    ours = _agree(spark, path, expected)
    assert [r for r in ours if r[0] == 3] == [(3, 7, "three", 1.5)]
    t.optimize().executeCompaction()
    assert _agree(spark, path, expected) == ours
    assert Snapshot.load(path).files.num_rows == 4  # one per partition (0, 1, 2, 7)


@pytest.mark.parametrize("dv", [False, True])
def test_dml_preserves_row_ids_on_row_tracking_tables(spark, tmp_path, dv):
    from delta_pyds.write.plan import commit_arrow

    path = str(tmp_path / "rt")
    props = {"delta.enableRowTracking": "true", "delta.enableDeletionVectors": str(dv).lower()}
    commit_arrow(path, _data(0, 5), options=props)
    commit_arrow(path, _data(5, 5))
    t = DeltaTable.forPath(spark, path)
    start = row_ids(path)
    assert start == {i: (i, 0 if i < 5 else 1) for i in range(10)}
    t.delete("id = 1")  # DV (dv=True) or rewrite of the rest of the file
    v = Snapshot.load(path).version
    assert row_ids(path) == {i: start[i] for i in range(10) if i != 1}
    t.update("id = 3", {"name": "'three'"})
    ids = row_ids(path)
    assert ids[3] == (3, v + 1) and ids[2] == start[2] and ids[4] == start[4]
    src = spark.createDataFrame(
        [(4, 1, "four", 4.0), (100, 1, "new", 1.0), (5, 2, "gone", 0.0)],
        "id long, part long, name string, value double",
    )
    (
        t.alias("t")
        .merge(src.alias("s"), "t.id = s.id")
        .whenMatchedDelete("s.name = 'gone'")
        .whenMatchedUpdateAll()
        .whenNotMatchedInsertAll()
        .execute()
    )
    ids = row_ids(path)
    assert ids[4] == (4, v + 2) and 5 not in ids and ids[6] == start[6] and ids[0] == start[0]
    assert ids[100][0] > 9 and ids[100][1] == v + 2
    t.optimize().executeCompaction()
    assert Snapshot.load(path).num_files == 1 and row_ids(path) == ids
    assert len({r for r, _ in ids.values()}) == len(ids)  # unique
    hwm = json.loads(Snapshot.load(path).domain_metadata["delta.rowTracking"])["rowIdHighWaterMark"]
    assert max(r for r, _ in ids.values()) <= hwm
    _agree(spark, path, expected=list(ids))
    t.restoreToVersion(0)  # the original file comes back with its own row ids
    assert row_ids(path) == {i: (i, 0) for i in range(5)}
