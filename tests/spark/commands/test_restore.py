"""RESTORE (restoreToVersion, restoreToTimestamp, restore): back to a version or a time (read
in the session time zone when it has no offset), refused when vacuum removed the files it
needs, then vacuum of what it left behind; table properties set alongside. Checked against
deltalake. Runs on both DML engines."""

from __future__ import annotations

import glob
import os

import pytest
from deltalake import write_deltalake
from dml_engines import dml_engine  # noqa: F401  (autouse: native and python engines)
from dml_helpers import agree_with_deltalake, dv_files, make_dml_table  # noqa: F401  (dv_files: a fixture)
from helpers import dml_data

from delta_pyds import DeltaTable
from delta_pyds.errors import DeltaError
from delta_pyds.table.snapshot import Snapshot

_make = make_dml_table
_agree = agree_with_deltalake
_data = dml_data


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


def test_restore_to_timestamp_and_vacuum_protocol_check(spark, tmp_path, dv_files):  # noqa: F811  (the imported fixture)
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
