"""Metadata cleanup after checkpoints (delta.logRetentionDuration) and VACUUM's history
commits: the log left behind starts at a checkpoint and every reader agrees."""

from __future__ import annotations

import json
import os
import time

import pyarrow as pa
import pytest
from helpers import arrow_rows, deltalake_table

from delta_pyds.errors import VersionNotFoundError
from delta_pyds.log.cleanup import cleanup_expired_logs, cutoff_ms, plan_cleanup
from delta_pyds.log.files import LogFile
from delta_pyds.log.segment import list_log
from delta_pyds.storage.store import Storage
from delta_pyds.table.snapshot import Snapshot
from delta_pyds.write.plan import commit_arrow

DAY = 86_400


def _log(path):
    return os.path.join(path, "_delta_log")


def _age(path, versions, days):
    """Makes the log files of ``versions`` look ``days`` old."""
    then = time.time() - days * DAY
    for name in os.listdir(_log(path)):
        head = name.split(".", 1)[0]
        if head.isdigit() and int(head) in versions:
            os.utime(os.path.join(_log(path), name), (then, then))


def _versions(path, suffix=".json"):
    """Versions with a log file named <20 digits><suffix>."""
    return sorted(int(n[:20]) for n in os.listdir(_log(path)) if n[:20].isdigit() and n[20:] == suffix)


def _write(path, i, options=None):
    commit_arrow(path, pa.table({"a": [i], "p": [i % 3]}), mode="append", options=options)


def test_expired_commits_are_deleted_up_to_a_checkpoint_and_every_reader_agrees(tmp_path):
    path = str(tmp_path / "t")
    _write(
        path, 0, {"partitionBy": "p", "delta.checkpointInterval": "5", "delta.logRetentionDuration": "interval 2 days"}
    )
    for i in range(1, 12):  # checkpoints at 5 and 10 (cleanup finds nothing expired yet)
        _write(path, i)
    assert _versions(path) == list(range(12))
    _age(path, range(8), days=10)  # versions 0-7 expired, 8-11 recent
    for i in range(12, 16):  # the checkpoint at 15 triggers the cleanup
        _write(path, i)
    # the log now starts at checkpoint 5: the newest checkpoint <= 8 (first unexpired)
    assert _versions(path) == list(range(5, 16))
    assert _versions(path, ".checkpoint.parquet") == [5, 10, 15]
    expected = sorted((i, i % 3) for i in range(16))
    assert sorted(arrow_rows(deltalake_table(path), ["a", "p"])) == expected
    snap = Snapshot.load(path)
    assert snap.version == 15 and snap.files.num_rows == 16
    # time travel: every version from the boundary on still loads, older ones are gone
    assert Snapshot.load(path, version=5).files.num_rows == 6
    assert sorted(arrow_rows(deltalake_table(path, version=7), ["a", "p"])) == sorted((i, i % 3) for i in range(8))
    with pytest.raises(VersionNotFoundError):
        Snapshot.load(path, version=4)
    history = [json.loads(line) for line in open(os.path.join(_log(path), f"{15:020d}.json"))]
    assert history[0]["commitInfo"]["operation"] == "WRITE"


def test_cleanup_is_disabled_by_the_table_property_and_retention_counts(tmp_path):
    path = str(tmp_path / "t")
    _write(
        path,
        0,
        {
            "delta.checkpointInterval": "3",
            "delta.enableExpiredLogCleanup": "false",
            "delta.logRetentionDuration": "interval 1 days",
        },
    )
    for i in range(1, 4):
        _write(path, i)
    _age(path, range(4), days=5)
    for i in range(4, 7):
        _write(path, i)
    assert _versions(path) == list(range(7))  # disabled: nothing deleted
    # default retention is 30 days: 5-day-old commits stay
    other = str(tmp_path / "u")
    _write(other, 0, {"delta.checkpointInterval": "3"})
    for i in range(1, 4):
        _write(other, i)
    _age(other, range(4), days=5)
    for i in range(4, 7):
        _write(other, i)
    assert _versions(other) == list(range(7))
    _age(other, range(7), days=40)
    res = cleanup_expired_logs(Storage(other), {}, up_to=6)
    assert res.boundary == 6 and _versions(other) == [6]
    assert sorted(arrow_rows(deltalake_table(other), ["a"])) == [(i,) for i in range(7)]


def test_checkpoint_protection_keeps_the_history(tmp_path):
    from delta_pyds.protocol.actions import Protocol

    path = str(tmp_path / "t")
    _write(path, 0, {"delta.checkpointInterval": "2"})
    _write(path, 1)
    _write(path, 2)
    _age(path, range(3), days=60)
    protocol = Protocol(3, 7, ["deletionVectors"], ["checkpointProtection", "deletionVectors"])
    conf = {"delta.requireCheckpointProtectionBeforeVersion": "2"}
    res = cleanup_expired_logs(Storage(path), conf, up_to=2, protocol=protocol)
    assert res.deleted == [] and "checkpointProtection" in res.reason
    assert _versions(path) == [0, 1, 2]


def _lf(kind, version, mtime, **kw):
    return LogFile(kind, version, f"{version}.{kind}", f"/x/{version}.{kind}", 1, mtime, **kw)


def test_plan_uses_monotonic_times_and_stops_at_gaps():
    day = 86_400_000
    now = 100 * day
    cut = cutoff_ms({"delta.logRetentionDuration": "interval 10 days"}, now)
    assert cut == 90 * day
    old, new = 50 * day, 99 * day
    files = [_lf("commit", v, old) for v in range(10)] + [
        _lf("checkpoint", v, old, checkpoint_kind="classic") for v in (3, 6, 9)
    ]
    # version 4 was written late (a newer mtime): versions >= 4 count as unexpired
    files[4] = _lf("commit", 4, new)
    boundary, doomed = plan_cleanup(files, cut, up_to=9)
    assert boundary == 3
    assert {(f.kind, f.version) for f in doomed} == {("commit", 0), ("commit", 1), ("commit", 2)}
    # the checkpoint the caller just wrote bounds the cleanup
    files[4] = _lf("commit", 4, old)
    boundary, _ = plan_cleanup(files, cut, up_to=6)
    assert boundary == 6
    # an incomplete multi-part checkpoint is never a boundary
    files = [_lf("commit", v, old) for v in range(5)] + [
        _lf("checkpoint", 4, old, checkpoint_kind="multi", part=1, num_parts=2)
    ]
    assert plan_cleanup(files, cut, up_to=4) == (None, [])


def test_vacuum_records_start_and_end_commits(copy_table):
    from delta_pyds.operations.vacuum import vacuum

    path = copy_table("delta-rs/simple_table")
    then = time.time() - 30 * DAY
    for root, _dirs, files in os.walk(path):
        for f in files:
            os.utime(os.path.join(root, f), (then, then))
    before = Snapshot.load(path)
    result = vacuum(before, dry_run=False)
    assert result.files  # the table has years-old tombstones
    entries = [f for f in list_log(Storage(path)) if f.kind == "commit"]
    start_v, end_v = before.version + 1, before.version + 2
    assert max(f.version for f in entries) == end_v
    start = [json.loads(x) for x in open(os.path.join(_log(path), f"{start_v:020d}.json"))]
    end = [json.loads(x) for x in open(os.path.join(_log(path), f"{end_v:020d}.json"))]
    assert [list(a) for a in start] == [["commitInfo"]] and [list(a) for a in end] == [["commitInfo"]]
    s, e = start[0]["commitInfo"], end[0]["commitInfo"]
    assert s["operation"] == "VACUUM START" and e["operation"] == "VACUUM END"
    assert s["operationParameters"]["retentionCheckEnabled"] == "true"
    assert s["operationParameters"]["defaultRetentionMillis"] == str(7 * 86_400_000)
    assert s["operationMetrics"] == {
        "numFilesToDelete": str(len(result.files)),
        "sizeOfDataToDelete": str(result.bytes),
    }
    assert e["operationParameters"] == {"status": "COMPLETED"}
    assert e["operationMetrics"]["numDeletedFiles"] == str(len(result.files))
    # the files are gone, the table still reads the same everywhere
    assert not any(os.path.exists(os.path.join(path, f)) for f in result.files)
    assert Snapshot.load(path).files.num_rows == before.files.num_rows
    assert len(deltalake_table(path)) == len(deltalake_table(path, before.version))
    # a dry run writes nothing
    vacuum(Snapshot.load(path))
    assert max(f.version for f in list_log(Storage(path)) if f.kind == "commit") == end_v
