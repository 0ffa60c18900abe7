"""The log segment starts from ``_last_checkpoint`` (delta_pyds.log.segment, .listing).

A valid hint makes the snapshot list ``_delta_log`` from the hint's version on (a
``StartAfter`` listing on S3); a hint that is missing, garbage, torn, stale, or names a
missing or incomplete checkpoint falls back to the whole listing. Either way the snapshot
is the one the whole listing gives: same version, checkpoint, files, protocol and metadata,
also for time travel to versions before the hint and when a newer checkpoint than the
hint exists."""

from __future__ import annotations

import json
import os
import shutil
import uuid

import pytest
from conftest import DATA, table_path
from table_files import copy, file_paths, log_file

from delta_pyds.log.files import LAST_CHECKPOINT, LOG_DIR, last_checkpoint_checksum
from delta_pyds.log.segment import build_log_segment, list_log
from delta_pyds.storage.store import Storage
from delta_pyds.table.snapshot import Snapshot
from delta_pyds.transaction.checkpoint_writer import write_checkpoint

CHECKPOINTED = "delta-rs/simple_table_with_checkpoint"  # checkpoint at 10, commits 0..10
MULTI_PART = "kernel-rs/v1-multi-part-struct-stats-only"  # 3-part checkpoint at 5
SIMPLE = "delta-rs/simple_table"  # commits 0..4, no checkpoint

HINTED_TABLES = sorted(
    os.path.relpath(os.path.dirname(os.path.dirname(p)), DATA)
    for p in (os.path.join(d, LAST_CHECKPOINT) for d, _, _ in os.walk(DATA) if d.endswith(LOG_DIR))
    if os.path.exists(p)
)


def hint_path(table: str) -> str:
    return os.path.join(table, LOG_DIR, LAST_CHECKPOINT)


def write_hint(table: str, content: bytes | str | dict) -> None:
    if isinstance(content, dict):
        content = json.dumps(content)
    with open(hint_path(table), "wb") as f:
        f.write(content.encode() if isinstance(content, str) else content)


def hint_for(version: int) -> dict:
    hint = {"version": version, "size": 1}
    hint["checksum"] = last_checkpoint_checksum(hint)
    return hint


def state(snap: Snapshot) -> tuple:
    """What a reader sees: version, the checkpoint used, protocol, metadata, live files."""
    return (
        snap.version,
        snap.segment.checkpoint_version,
        snap.protocol,
        snap.metadata,
        sorted(snap.files.column("path").to_pylist()),
    )


def without_hint(tmp_path, table: str) -> str:
    """A copy of ``table`` without ``_last_checkpoint`` (read with the whole listing)."""
    dest = str(tmp_path / f"nohint-{uuid.uuid4().hex[:6]}")
    shutil.copytree(table, dest)
    if os.path.exists(hint_path(dest)):
        os.remove(hint_path(dest))
    return dest


@pytest.fixture
def two_checkpoints(tmp_path):
    """simple_table with our checkpoints at 2 and 4; ``_last_checkpoint`` names 4."""
    t = copy(tmp_path, SIMPLE)
    write_checkpoint(Storage(t), 2)
    write_checkpoint(Storage(t), 4)
    assert json.load(open(hint_path(t)))["version"] == 4
    return t


# ------------------------------------------------------------------ the hint is used
def test_the_segment_is_listed_from_the_last_checkpoint(tmp_path):
    t = copy(tmp_path, CHECKPOINTED)
    snap = Snapshot.load(t)
    assert snap.segment.listed_from == 10
    # the listing saw nothing before the checkpoint: commits 0..9 were not listed
    assert [c.version for c in snap.segment.all_commits] == [10]
    assert snap.segment.all_checkpoint_versions == [10]
    whole = Snapshot.load(without_hint(tmp_path, t))
    assert whole.segment.listed_from == 0 and len(whole.segment.all_commits) == 11
    assert state(snap) == state(whole)


def test_list_log_from_a_version_is_the_whole_listing_filtered(two_checkpoints):
    storage = Storage(two_checkpoints)
    whole = list_log(storage)
    for v in range(6):
        assert list_log(storage, from_version=v) == [f for f in whole if f.name >= f"{v:020d}"]
    assert list_log(storage, from_version=10**25) == []


def test_time_travel_before_the_hint_lists_the_whole_log(tmp_path):
    t = copy(tmp_path, CHECKPOINTED)
    whole = without_hint(tmp_path, t)
    for v in (0, 3, 9):
        snap = Snapshot.load(t, version=v)
        assert snap.segment.listed_from == 0
        assert state(snap) == state(Snapshot.load(whole, version=v))
    assert Snapshot.load(t, version=10).segment.listed_from == 10


def test_a_stale_hint_still_finds_the_newest_checkpoint(two_checkpoints, tmp_path):
    t = two_checkpoints
    expected = state(Snapshot.load(without_hint(tmp_path, t)))
    assert expected[1] == 4
    write_hint(t, hint_for(2))  # older than the newest checkpoint
    snap = Snapshot.load(t)
    assert snap.segment.listed_from == 2
    assert state(snap) == expected
    # versions between the hint and the newest checkpoint use the hint's checkpoint
    assert Snapshot.load(t, version=3).segment.checkpoint_version == 2
    assert state(Snapshot.load(t, version=3)) == state(Snapshot.load(without_hint(tmp_path, t), version=3))


def test_an_unreadable_checkpoint_newer_than_the_hint_falls_back_to_the_hints(two_checkpoints, tmp_path):
    t = two_checkpoints
    expected = file_paths(without_hint(tmp_path, t))
    write_hint(t, hint_for(2))
    with open(log_file(t, 4, "checkpoint.parquet"), "wb") as f:
        f.write(b"PAR1 garbage PAR1")
    snap = Snapshot.load(t)
    assert snap.segment.checkpoint_version == 2 and snap.segment.listed_from == 2
    assert set(snap.files.column("path").to_pylist()) == expected


def test_an_unreadable_hinted_checkpoint_falls_back_to_an_older_one(two_checkpoints, tmp_path):
    t = two_checkpoints
    expected = file_paths(without_hint(tmp_path, t))
    with open(log_file(t, 4, "checkpoint.parquet"), "wb") as f:
        f.write(b"PAR1 garbage PAR1")
    snap = Snapshot.load(t)
    assert snap.version == 4 and snap.segment.checkpoint_version == 2 and snap.segment.listed_from == 0
    assert set(snap.files.column("path").to_pylist()) == expected


# ------------------------------------------------------- hints that cannot be trusted
def test_a_hint_naming_a_missing_checkpoint_falls_back(two_checkpoints, tmp_path):
    t = two_checkpoints
    expected = file_paths(without_hint(tmp_path, t))
    os.remove(log_file(t, 4, "checkpoint.parquet"))  # the hint still names 4
    snap = Snapshot.load(t)
    assert (snap.version, snap.segment.checkpoint_version, snap.segment.listed_from) == (4, 2, 0)
    assert set(snap.files.column("path").to_pylist()) == expected


def test_a_hint_naming_an_incomplete_multi_part_checkpoint_falls_back(tmp_path):
    t = copy(tmp_path, MULTI_PART)
    expected = state(Snapshot.load(without_hint(tmp_path, t)))
    assert Snapshot.load(t).segment.listed_from == 5  # the 3 parts are there: the hint is used
    os.remove(os.path.join(t, LOG_DIR, "00000000000000000005.checkpoint.0000000002.0000000003.parquet"))
    snap = Snapshot.load(t)
    assert (snap.segment.checkpoint_version, snap.segment.listed_from) == (None, 0)
    assert state(snap)[2:] == expected[2:] and snap.version == expected[0]


def test_a_hint_past_the_end_of_the_log_falls_back(tmp_path):
    t = copy(tmp_path, CHECKPOINTED)
    expected = state(Snapshot.load(t))
    write_hint(t, hint_for(99))
    snap = Snapshot.load(t)
    assert snap.segment.listed_from == 0 and state(snap) == expected


REAL_HINT = open(os.path.join(table_path(CHECKPOINTED), LOG_DIR, LAST_CHECKPOINT), "rb").read()
BAD_HINTS = {
    "empty": b"",
    "garbage": b"{{{ garbage",
    "torn": REAL_HINT[: len(REAL_HINT) // 2],
    "not an object": b"[10]",
    "string version": b'{"version": "10"}',
    "bool version": b'{"version": true}',
    "float version": b'{"version": 10.0}',
    "negative version": b'{"version": -1}',
    "huge version": b'{"version": 1' + b"0" * 30 + b"}",
    "too many digits": b'{"version": 1' + b"0" * 5000 + b"}",
    "deeply nested": b"[" * 100_000,
    "not utf-8": b'{"version": 10, "x": "\xff\xfe"}',
    "lone surrogate": b'{"version": 10, "x": "\\ud800", "checksum": "0"}',
    "wrong checksum": json.dumps({"version": 5, "size": 1, "checksum": "0" * 32}).encode(),
    "NUL bytes": b"\x00" * 64,
}


@pytest.mark.parametrize("name", sorted(BAD_HINTS))
def test_a_hint_that_cannot_be_trusted_is_ignored(tmp_path, name):
    t = copy(tmp_path, CHECKPOINTED)
    expected = state(Snapshot.load(without_hint(tmp_path, t)))
    write_hint(t, BAD_HINTS[name])
    snap = Snapshot.load(t)
    assert state(snap) == expected
    assert snap.segment.listed_from == 0


def test_a_hint_that_is_a_directory_is_ignored(tmp_path):
    t = copy(tmp_path, CHECKPOINTED)
    expected = state(Snapshot.load(t))
    os.remove(hint_path(t))
    os.mkdir(hint_path(t))
    assert state(Snapshot.load(t)) == expected


def test_a_hint_without_a_checksum_is_used(tmp_path):
    t = copy(tmp_path, CHECKPOINTED)
    write_hint(t, {"version": 10, "size": 3})
    assert Snapshot.load(t).segment.listed_from == 10


# --------------------------------------------------------------- every table we have
@pytest.mark.parametrize("name", HINTED_TABLES)
def test_tables_with_a_hint_load_as_with_the_whole_listing(tmp_path, name):
    t = copy(tmp_path, name)
    whole = without_hint(tmp_path, t)
    try:
        expected = state(Snapshot.load(whole))
    except Exception as exc:  # a table this reader refuses: refused the same way with the hint
        with pytest.raises(type(exc)):
            state(Snapshot.load(t))
        return
    snap = Snapshot.load(t)
    assert state(snap) == expected
    if snap.segment.listed_from:
        assert (snap.segment.checkpoint_version or -1) >= snap.segment.listed_from
        # and time travel to the version before the hint reads the whole log
        before = snap.segment.listed_from - 1
        try:
            old = state(Snapshot.load(whole, version=before))
        except Exception as exc:
            with pytest.raises(type(exc)):
                state(Snapshot.load(t, version=before))
        else:
            assert state(Snapshot.load(t, version=before)) == old


def test_most_hinted_tables_use_their_hint(tmp_path):
    used = [name for name in HINTED_TABLES if _listed_from(table_path(name))]
    assert len(HINTED_TABLES) >= 25 and len(used) >= len(HINTED_TABLES) - 3, sorted(set(HINTED_TABLES) - set(used))


def _listed_from(path: str) -> int:
    try:
        return build_log_segment(Storage(path)).listed_from
    except Exception:
        return 0


# ------------------------------------------------------------------------------- S3
def upload_table(server, local: str) -> str:
    return server.upload_dir(local, f"hint-{uuid.uuid4().hex[:8]}")


def test_s3_lists_from_the_hint_with_start_after(s3_server, two_checkpoints, monkeypatch):
    root = upload_table(s3_server, two_checkpoints)
    storage = Storage(root, {**s3_server.options, "skip_instance_cache": True})
    calls = []
    real = storage.fs.call_s3

    def spy(method, **kwargs):
        calls.append((method, dict(kwargs)))
        if method == "list_objects_v2":
            kwargs["MaxKeys"] = 2  # several pages: the continuation is followed
        return real(method, **kwargs)

    monkeypatch.setattr(storage.fs, "call_s3", spy)
    whole = list_log(storage)
    for v in (0, 2, 3, 4, 5):
        assert list_log(storage, from_version=v) == [f for f in whole if f.name >= f"{v:020d}"]
    lists = [kw for m, kw in calls if m == "list_objects_v2"]
    assert lists[0]["StartAfter"].endswith(f"{LOG_DIR}/{0:020d}")
    assert any("ContinuationToken" in kw for kw in lists)

    calls.clear()
    snap = Snapshot.load(storage)
    assert snap.segment.listed_from == 4
    assert state(snap)[:2] == (4, 4)
    assert sorted(snap.files.column("path").to_pylist()) == sorted(file_paths(two_checkpoints))
    # one start-after listing from the hint's version (pages of 2: several calls), no other
    lists = [kw for m, kw in calls if m == "list_objects_v2"]
    assert lists and {kw["StartAfter"].rsplit("/", 1)[1] for kw in lists} == {f"{4:020d}"}


def test_s3_start_after_failure_falls_back_to_the_whole_listing(s3_server, two_checkpoints, monkeypatch):
    root = upload_table(s3_server, two_checkpoints)
    storage = Storage(root, {**s3_server.options, "skip_instance_cache": True})

    def broken(method, **kwargs):
        raise RuntimeError("no StartAfter here")

    monkeypatch.setattr(storage.fs, "call_s3", broken)
    whole = list_log(storage)
    assert whole and list_log(storage, from_version=3) == [f for f in whole if f.version >= 3]
    snap = Snapshot.load(storage)
    assert (snap.version, snap.segment.checkpoint_version, snap.segment.listed_from) == (4, 4, 4)
