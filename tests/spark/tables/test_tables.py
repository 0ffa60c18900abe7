"""DeltaTable (delta_pyds.spark.tables): history, detail, vacuum, restore, properties, delete,
update, optimize — checked against deltalake (delta-rs) after every operation."""

from __future__ import annotations

import glob
import json
import os

import deltalake
import pyarrow as pa
import pytest
from deltalake import write_deltalake  # noqa: E402
from dml_engines import dml_engine  # noqa: F401  (autouse: native and python engines)
from helpers import DML_COLS, arrow_rows, deltalake_table, dml_data, parquet_files, spark_rows

from delta_pyds import DeltaTable  # noqa: E402
from delta_pyds.errors import DeltaError  # noqa: E402
from delta_pyds.table.snapshot import Snapshot  # noqa: E402

COLS = DML_COLS
_data = dml_data
_data_files = parquet_files


def _make(path, files=5, rows_per_file=100, dv=True, partition=False):
    conf = {"delta.enableDeletionVectors": "true"} if dv else None
    for i in range(files):
        write_deltalake(
            path,
            _data(i * rows_per_file, rows_per_file),
            mode="append",
            configuration=conf if i == 0 else None,
            partition_by=["part"] if partition else None,
        )
    return path


def _agree(spark, path, expected=None):
    """pydelta and deltalake read the same rows (and, if given, the expected ids)."""
    ours = spark_rows(DeltaTable.forPath(spark, path).toDF().select(*COLS))
    theirs = arrow_rows(deltalake_table(path), COLS)
    assert ours == theirs
    if expected is not None:
        assert sorted(r[0] for r in ours) == sorted(expected)
    return ours


def test_for_path_history_detail(spark, tmp_path):
    path = _make(str(tmp_path / "t"), files=2, rows_per_file=10)
    assert DeltaTable.isDeltaTable(spark, path)
    assert not DeltaTable.isDeltaTable(spark, str(tmp_path))
    with pytest.raises(Exception):
        DeltaTable.forPath(spark, str(tmp_path / "nothing"))
    t = DeltaTable.forPath(spark, path)
    assert t.toDF().count() == 20
    h = t.history().collect()
    assert [r.version for r in h] == [1, 0]
    assert t.history(1).count() == 1
    assert h[0].operation == "WRITE" and h[0].timestamp is not None
    d = t.detail().collect()[0]
    assert d.format == "delta" and d.numFiles == 2 and d.sizeInBytes > 0
    assert d.properties["delta.enableDeletionVectors"] == "true"
    assert "deletionVectors" in d.tableFeatures
    assert d.minReaderVersion == 3 and d.minWriterVersion == 7
    assert d.location.endswith("t")


@pytest.fixture
def dv_files(spark):
    """Deletion vectors always in files (never inline), as delta-spark writes them."""
    spark.conf.set("spark.pydelta.deletionVectors.inlineMaxBytes", "0")
    yield
    spark.conf.unset("spark.pydelta.deletionVectors.inlineMaxBytes")


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


def test_delete_with_deletion_vectors_rewrites_no_data_file(spark, tmp_path, dv_files):
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


@pytest.mark.slow
def test_optimize_then_vacuum(spark, tmp_path, dv_files):
    path = _make(str(tmp_path / "t"), files=50, rows_per_file=20, partition=True)
    t = DeltaTable.forPath(spark, path)
    t.delete("id % 7 = 0")
    before = _agree(spark, path)
    assert Snapshot.load(path).files.num_rows == 150
    res = t.optimize().executeCompaction().collect()[0]
    m = res.metrics  # delta-spark's shape: path, metrics struct
    assert m.numFilesRemoved == 150 and m.numFilesAdded == 3
    snap = Snapshot.load(path)
    assert snap.files.num_rows == 3
    assert all(d is None for d in snap.files.column("deletion_vector").to_pylist())
    assert _agree(spark, path) == before
    h = t.history(1).collect()[0]
    assert h.operation == "OPTIMIZE"
    # the commit is dataChange=false
    log = os.path.join(path, "_delta_log", f"{snap.version:020d}.json")
    actions = [json.loads(line) for line in open(log)]
    assert all(not a[k]["dataChange"] for a in actions for k in ("add", "remove") if k in a)
    # vacuum: refuses short retention, a dry run lists, then it deletes the old files
    # (behaviour change: vacuum() deletes by default, as delta-spark's does)
    n_files = len(_data_files(path))
    assert t.vacuum(dryRun=True).count() == 0  # everything is inside the default 7 day window
    with pytest.raises(ValueError):
        t.vacuum(0)
    would = t.vacuum(0, dryRun=True, enforceRetention=False).collect()
    assert (
        len(would) == 150 + 1 and len(_data_files(path)) == n_files
    )  # 150 data files + 1 DV file; a dry run deletes nothing
    t.vacuum(0, enforceRetention=False)
    assert len(_data_files(path)) == 3
    assert not glob.glob(os.path.join(path, "deletion_vector_*.bin"))
    assert _agree(spark, path) == before


def test_restore_and_properties(spark, tmp_path):
    path = _make(str(tmp_path / "t"), files=3, rows_per_file=10)
    t = DeltaTable.forPath(spark, path)
    v_full = Snapshot.load(path).version
    t.delete("id >= 5")
    write_deltalake(path, _data(100, 5), mode="append")
    _agree(spark, path, list(range(5)) + list(range(100, 105)))
    t.restoreToVersion(v_full)
    _agree(spark, path, list(range(30)))
    assert t.history(1).collect()[0].operation == "RESTORE"
    t.restore(version=v_full + 1)  # back to the state after the delete
    _agree(spark, path, list(range(5)))
    v = t.setProperties({"delta.logRetentionDuration": "interval 60 days", "custom.owner": "me"})
    conf = Snapshot.load(path, version=v).configuration
    assert conf["delta.logRetentionDuration"] == "interval 60 days" and conf["custom.owner"] == "me"
    assert conf["delta.enableDeletionVectors"] == "true"
    _agree(spark, path, list(range(5)))


def test_restore_fails_when_files_were_vacuumed(spark, tmp_path):
    path = _make(str(tmp_path / "t"), files=2, rows_per_file=10, dv=False)
    t = DeltaTable.forPath(spark, path)
    t.delete("id < 10")  # removes the first file
    t.vacuum(0, dryRun=False, enforceRetention=False)
    v = Snapshot.load(path).version
    with pytest.raises(DeltaError, match="VACUUM"):
        t.restoreToVersion(0)
    assert Snapshot.load(path).version == v


def test_concurrent_blind_append_does_not_fail_delete(spark, tmp_path, monkeypatch):
    path = _make(str(tmp_path / "t"), files=2, rows_per_file=10)
    t = DeltaTable.forPath(spark, path)
    from delta_pyds.transaction import commit as transaction
    from delta_pyds.write.plan import write_arrow

    real = transaction.Transaction.commit
    fired = []

    def racing_commit(self, *args, **kwargs):
        if not fired:
            fired.append(1)
            # a winner at the same version: pydelta's append says isBlindAppend=true (delta-rs
            # 1.6 writes no isBlindAppend, so its appends count as possible rewrites)
            write_arrow(path, _data(1000, 3))
        return real(self, *args, **kwargs)

    monkeypatch.setattr(transaction.Transaction, "commit", racing_commit)
    t.delete("id = 3")
    _agree(spark, path, [i for i in range(20) if i != 3] + [1000, 1001, 1002])
    assert t.history(1).collect()[0].operation == "DELETE"


def test_concurrent_delete_of_same_file_conflicts(spark, tmp_path, monkeypatch):
    path = _make(str(tmp_path / "t"), files=1, rows_per_file=10, dv=False)
    t = DeltaTable.forPath(spark, path)
    from delta_pyds.errors import ConcurrentModificationError
    from delta_pyds.transaction import commit as transaction

    real = transaction.Transaction.commit
    fired = []

    def racing_commit(self, *args, **kwargs):
        if not fired:
            fired.append(1)
            deltalake.DeltaTable(path).delete("id = 1")
        return real(self, *args, **kwargs)

    monkeypatch.setattr(transaction.Transaction, "commit", racing_commit)
    with pytest.raises(ConcurrentModificationError):
        t.delete("id = 3")
    _agree(spark, path, [i for i in range(10) if i != 1])


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


def test_column_mapping_and_partitions(spark, tmp_path):
    from delta_pyds.write.plan import write_arrow

    path = str(tmp_path / "cm")
    for i in range(4):
        write_arrow(
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


def test_delete_and_update_skip_files(spark, tmp_path):
    path = _make(str(tmp_path / "t"), files=5, rows_per_file=100, partition=True)
    t = DeltaTable.forPath(spark, path)
    t.delete("id >= 120 AND id < 130 AND id % 2 = 0 AND NOT (part = 5)")
    assert t.lastSkipping.files_kept == 3  # only the files of 100..199 (one per partition)
    expected = [i for i in range(500) if not (120 <= i < 130 and i % 2 == 0)]
    _agree(spark, path, expected)
    t.delete("part = 1 OR id IN (7, 8)")
    # partition 1 (5 files) + the first file of partitions 0 and 2 (stats 0..99 cannot exclude 7, 8)
    assert t.lastSkipping.files_kept == 5 + 2
    expected = [i for i in expected if not (i % 3 == 1 or i in (7, 8))]
    _agree(spark, path, expected)
    t.update("id < 3.5", {"name": "'low'"})  # 3.5 cannot be pruned exactly on a long: all files
    assert sum(r.name == "low" for r in t.toDF().collect()) == len([i for i in expected if i < 3.5])
    _agree(spark, path, expected)


def test_skipping_predicates_translation():
    from delta_pyds.expressions.to_predicates import skipping_predicates
    from delta_pyds.protocol.schema import parse_schema

    schema = parse_schema(
        json.dumps(
            {
                "type": "struct",
                "fields": [
                    {"name": "id", "type": "long", "nullable": True, "metadata": {}},
                    {"name": "s", "type": "string", "nullable": True, "metadata": {}},
                    {"name": "d", "type": "date", "nullable": True, "metadata": {}},
                ],
            }
        )
    )

    def tr(c):
        return [str(p) for p in skipping_predicates(c, schema)]

    assert tr("id % 10 = 3") == []
    assert tr("id < 5 AND id % 2 = 0") == ["id < 5"]
    assert tr("NOT (id = 1 AND id % 2 = 0)") == []  # NOT of a partial translation is unsafe
    assert tr("NOT (id = 1)") == ["NOT (id = 1)"]
    assert tr("3 < id") == ["id > 3"]
    assert tr("id < 0.5") == []  # not exact on a long column
    assert tr("id = 1 OR s LIKE 'a%'") == []
    assert tr("d = DATE'2024-01-01' AND s IS NULL") == ["(d = datetime.date(2024, 1, 1)) AND (s IS NULL)"]
    assert tr("d > '2024-01-01'") == []  # string vs date: left to Spark


def test_merge_upsert(spark, tmp_path):
    path = _make(str(tmp_path / "t"), files=3, rows_per_file=10)
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
    rows = {r[0]: r for r in _agree(spark, path)}
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
    rows = {r[0]: r for r in _agree(spark, path)}
    assert rows[1] == (1, 0, "one", 1.0) and rows[200] == (200, None, "TWO HUNDRED", None)


def test_restore_to_timestamp_reads_a_time_without_offset_in_the_session_zone(spark, tmp_path):
    """As delta-spark: '2023-11-15 07:14:00' in a session at Asia/Tokyo is 22:14 UTC."""
    path = _make(str(tmp_path / "t"), files=2, rows_per_file=5, dv=False)
    base = 1_700_000_000  # 2023-11-14T22:13:20Z
    for v in range(2):
        os.utime(os.path.join(path, "_delta_log", f"{v:020d}.json"), (base + 100 * v,) * 2)
    t = DeltaTable.forPath(spark, path)
    t.delete("id < 3")
    saved = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", "Asia/Tokyo")
    try:
        t.restoreToTimestamp("2023-11-15 07:14:00")  # version 0 (version 1 if read in UTC)
        _agree(spark, path, list(range(5)))
        t.restoreToTimestamp("2023-11-15 07:15:00")  # version 1
        _agree(spark, path, list(range(10)))
    finally:
        spark.conf.set("spark.sql.session.timeZone", saved)


def test_restore_to_timestamp_and_vacuum_protocol_check(spark, tmp_path, dv_files):
    import time

    path = _make(str(tmp_path / "t"), files=2, rows_per_file=5)
    t = DeltaTable.forPath(spark, path)
    time.sleep(0.05)
    stamp = t.history(1).collect()[0].timestamp
    time.sleep(0.05)
    t.delete("id < 3")
    t.restoreToTimestamp(stamp)
    _agree(spark, path, list(range(10)))
    with pytest.raises(ValueError):
        t.restore()
    t.setProperties({"delta.feature.vacuumProtocolCheck": "supported"})
    snap = Snapshot.load(path)
    assert "vacuumProtocolCheck" in snap.protocol.writer_features
    assert "delta.feature.vacuumProtocolCheck" not in snap.configuration
    # restore re-added every data file: only the delete's deletion vector file is garbage
    would = [r.path for r in t.vacuum(0, dryRun=True, enforceRetention=False).collect()]
    assert len(would) == 1 and os.path.basename(would[0]).startswith("deletion_vector_")
    assert would[0] == "file:" + os.path.join(path, os.path.basename(would[0]))  # full paths, as delta-spark
    assert glob.glob(os.path.join(path, "deletion_vector_*.bin"))  # a dry run
    t.vacuum(0, dryRun=False, enforceRetention=False)
    assert not glob.glob(os.path.join(path, "deletion_vector_*.bin"))
    # (deltalake 1.6 refuses tables with vacuumProtocolCheck: pydelta only)
    assert sorted(r.id for r in t.toDF().collect()) == list(range(10))


def _row_ids(spark, path):
    """data id -> (row id, row commit version), from the files themselves: the materialized
    columns where set, else baseRowId + position / defaultRowCommitVersion."""
    import pyarrow.parquet as pq

    from delta_pyds.protocol.deletion_vectors import DeletionVectorDescriptor, load_deleted_rows

    snap = Snapshot.load(path)
    conf = snap.configuration
    id_col = conf["delta.rowTracking.materializedRowIdColumnName"]
    ver_col = conf["delta.rowTracking.materializedRowCommitVersionColumnName"]
    out = {}
    for f in snap.files.to_pylist():
        table = pq.read_table(os.path.join(path, f["path"]))
        deleted = (
            set(load_deleted_rows(snap.storage, DeletionVectorDescriptor.from_dict(f["deletion_vector"])))
            if f["deletion_vector"]
            else set()
        )
        for pos, row in enumerate(table.to_pylist()):
            if pos in deleted:
                continue
            rid = row.get(id_col)
            ver = row.get(ver_col)
            out[row["id"]] = (
                rid if rid is not None else f["base_row_id"] + pos,
                ver if ver is not None else f["default_row_commit_version"],
            )
    return out


@pytest.mark.parametrize("dv", [False, True])
def test_dml_preserves_row_ids_on_row_tracking_tables(spark, tmp_path, dv):
    from delta_pyds.write.plan import write_arrow

    path = str(tmp_path / "rt")
    props = {"delta.enableRowTracking": "true", "delta.enableDeletionVectors": str(dv).lower()}
    write_arrow(path, _data(0, 5), options=props)
    write_arrow(path, _data(5, 5))
    t = DeltaTable.forPath(spark, path)
    start = _row_ids(spark, path)
    assert start == {i: (i, 0 if i < 5 else 1) for i in range(10)}
    t.delete("id = 1")  # DV (dv=True) or rewrite of the rest of the file
    v = Snapshot.load(path).version
    assert _row_ids(spark, path) == {i: start[i] for i in range(10) if i != 1}
    t.update("id = 3", {"name": "'three'"})
    ids = _row_ids(spark, path)
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
    ids = _row_ids(spark, path)
    assert ids[4] == (4, v + 2) and 5 not in ids and ids[6] == start[6] and ids[0] == start[0]
    assert ids[100][0] > 9 and ids[100][1] == v + 2
    t.optimize().executeCompaction()
    assert Snapshot.load(path).num_files == 1 and _row_ids(spark, path) == ids
    assert len({r for r, _ in ids.values()}) == len(ids)  # unique
    hwm = json.loads(Snapshot.load(path).domain_metadata["delta.rowTracking"])["rowIdHighWaterMark"]
    assert max(r for r, _ in ids.values()) <= hwm
    _agree(spark, path, expected=list(ids))
    t.restoreToVersion(0)  # the original file comes back with its own row ids
    assert _row_ids(spark, path) == {i: (i, 0) for i in range(5)}


def test_optimize_zorder_and_where(spark, tmp_path):
    import datetime

    path = str(tmp_path / "z")
    from delta_pyds.write.plan import write_arrow

    for i in range(6):
        d = _data(i * 40, 40)
        d = d.append_column("day", pa.array([datetime.date(2024, 1, 1 + (j * 7) % 28) for j in range(40)]))
        write_arrow(path, d, options={"partitionBy": "part", "delta.enableDeletionVectors": "true"})
    t = DeltaTable.forPath(spark, path)
    t.delete("id % 5 = 0")
    before = _agree(spark, path)
    with pytest.raises(ValueError):
        t.optimize().executeZOrderBy("name")
    with pytest.raises(ValueError):
        t.optimize().executeZOrderBy("part")
    m = t.optimize().where("part = 1").executeZOrderBy("id", "day").collect()[0].metrics
    assert m.numFilesRemoved == 6 and m.numFilesAdded == 1
    assert _agree(spark, path) == before
    h = t.history(1).collect()[0]
    assert h.operation == "OPTIMIZE" and json.loads(h.operationParameters["zOrderBy"]) == ["id", "day"]
    snap = Snapshot.load(path)
    assert snap.files.num_rows == 13  # 6 + 6 untouched, 1 rewritten
    t.optimize().executeCompaction()
    assert Snapshot.load(path).files.num_rows == 3
    assert _agree(spark, path) == before
