"""Streaming source without Spark: offsets, admission control, commit policies, and the
stream over real tables driven the way Spark drives it (initialOffset, then
latestOffset / partitions per micro-batch), with restarts from saved offsets."""

from __future__ import annotations

import json
import os
import shutil
from collections import Counter

import pyarrow as pa
import pytest
from conftest import table_path
from helpers import deltalake_table

from delta_pyds.cdf.reader import change_read_spec, read_changes, reader_for, with_cdf_columns
from delta_pyds.errors import ChangeDataError, StreamChangeError, StreamingError, VersionNotFoundError
from delta_pyds.read.file_reader import read_file
from delta_pyds.read.options import StreamOptions
from delta_pyds.streaming.offsets import (
    BASE_INDEX,
    AdmissionLimits,
    ChangePolicy,
    IndexedFile,
    StreamOffset,
    commit_decision,
    next_offset,
    take_admitted,
)
from delta_pyds.streaming.source import StreamSource
from delta_pyds.table.snapshot import Snapshot


# ---------------------------------------------------------------------- pure logic
def test_offset_round_trip_and_table_identity():
    o = StreamOffset(5, 2, False, "tid")
    d = o.to_dict()
    assert d == {
        "sourceVersion": 1,
        "reservoirId": "tid",
        "reservoirVersion": 5,
        "index": 2,
        "isStartingVersion": False,
    }
    assert StreamOffset.from_dict(json.loads(json.dumps(d)), "tid") == o
    with pytest.raises(StreamingError, match="replaced"):
        StreamOffset.from_dict(d, "other")
    with pytest.raises(StreamingError, match="not a pydelta stream offset"):
        StreamOffset.from_dict({"offset": 1})


def test_next_offset_moves_past_a_finished_version():
    start = StreamOffset(3, BASE_INDEX, True, "t")
    assert next_offset(start, None) == start
    assert next_offset(start, IndexedFile(3, 4)) == StreamOffset(3, 4, True, "t")
    assert next_offset(start, IndexedFile(3, 9, is_last=True, action=1)) == StreamOffset(4, BASE_INDEX, False, "t")
    assert next_offset(start, IndexedFile(5, 0, action=1)) == StreamOffset(5, 0, False, "t")


def _files(*sizes, version=1):
    return [IndexedFile(version, i, s, i == len(sizes) - 1, object()) for i, s in enumerate(sizes)]


def test_admission_counts_files_and_bytes():
    got = list(take_admitted(_files(1, 1, 1, 1, 1), AdmissionLimits(max_files=2)))
    assert [f.index for f in got] == [0, 1]
    got = list(take_admitted(_files(10, 10, 10), AdmissionLimits(max_bytes=15)))
    assert [f.index for f in got] == [0, 1]  # bytes are a soft limit, checked before each file
    got = list(take_admitted(_files(100, 1), AdmissionLimits(max_bytes=1)))
    assert [f.index for f in got] == [0]  # the first file always fits
    marker = IndexedFile(2, BASE_INDEX)
    got = list(take_admitted([*_files(1), marker, *_files(1, version=2)], AdmissionLimits(max_files=5)))
    assert len(got) == 3 and got[1] is marker  # markers take no capacity


def test_groups_are_admitted_whole():
    group = _files(1, 1, 1, version=2)
    got = list(take_admitted([group], AdmissionLimits(max_files=1)))
    assert got == group  # the first group of a batch always goes in
    got = list(take_admitted([*_files(1), group], AdmissionLimits(max_files=3)))
    assert len(got) == 1  # 1 + 3 > 3: the group waits for the next batch


@pytest.mark.parametrize(
    "policy,has_adds,outcome",
    [
        (ChangePolicy(), False, "ignoreDeletes=true"),
        (ChangePolicy(), True, "skipChangeCommits=true"),
        (ChangePolicy(ignore_deletes=True), False, False),
        (ChangePolicy(ignore_deletes=True), True, "skipChangeCommits=true"),
        (ChangePolicy(ignore_changes=True), True, False),
        (ChangePolicy(skip_change_commits=True), True, True),
        (ChangePolicy(skip_change_commits=True), False, True),
    ],
)
def test_commit_policies(policy, has_adds, outcome):
    if isinstance(outcome, str):
        with pytest.raises(StreamChangeError, match=outcome):
            commit_decision(7, has_adds=has_adds, removed_path="f.parquet", policy=policy)
    else:
        assert commit_decision(7, has_adds=has_adds, removed_path="f.parquet", policy=policy) is outcome
    assert commit_decision(7, has_adds=True, removed_path=None, policy=policy) is False


# ------------------------------------------------------------ driving a stream
class Stream:
    """What Spark does with a source, with a restart whenever asked (a new source from
    the table's current state, resuming from the last committed offset)."""

    def __init__(self, path, **options):
        self.path = path
        self.options = {k.lower(): str(v) for k, v in options.items()}
        self.offset = None
        self.batches: list[list] = []
        self.restart()

    def restart(self):
        snapshot = Snapshot.load(self.path)
        self.opts = StreamOptions.parse(self.options)
        self.source = StreamSource(snapshot.storage, snapshot, self.opts)
        output = with_cdf_columns(snapshot.schema) if self.opts.read_change_feed else snapshot.schema
        self.spec = change_read_spec(snapshot.storage, snapshot, output)
        if self.offset is None:
            self.offset = self.source.initial_offset()

    def limits(self):
        return AdmissionLimits(self.opts.effective_max_files, self.opts.max_bytes)

    def step(self) -> bool:
        end = self.source.latest_offset(self.offset, self.limits())
        if end == self.offset:
            return False
        items = self.source.batch_files(self.offset, end)
        self.batches.append(items)
        self.offset = end
        return True

    def drain(self, restart_every: int | None = None):
        n = 0
        while self.step():
            n += 1
            if restart_every and n % restart_every == 0:
                self.restart()

    def rows(self, batch) -> list:
        out = []
        read_change = reader_for(self.spec)
        for item in batch:
            batches = read_change(item) if self.opts.read_change_feed else read_file(self.spec, item)
            for b in batches:
                out.extend(tuple(r.values()) for r in b.to_pylist())
        return out

    def all_rows(self) -> list:
        return [r for b in self.batches for r in self.rows(b)]


def _append(path, ids, **kwargs):
    from deltalake import write_deltalake

    write_deltalake(
        path,
        pa.table({"id": pa.array(ids, pa.int64()), "p": pa.array([i % 2 for i in ids], pa.int64())}),
        mode="append",
        **kwargs,
    )


def test_snapshot_then_new_commits_exactly_once_across_restarts(tmp_path):
    path = str(tmp_path / "t")
    for k in range(5):
        _append(path, list(range(10 * k, 10 * k + 10)))
    s = Stream(path, maxFilesPerTrigger=3)
    s.drain(restart_every=1)
    assert all(len(b) <= 3 for b in s.batches)
    for k in range(5, 8):  # new commits while the stream is stopped
        _append(path, list(range(10 * k, 10 * k + 10)))
    s.restart()
    s.drain(restart_every=2)
    assert Counter(r[0] for r in s.all_rows()) == Counter(range(80))
    assert s.offset.is_starting_version is False


def test_batch_replanned_after_a_crash_reads_the_same_rows(tmp_path):
    path = str(tmp_path / "t")
    for k in range(4):
        _append(path, list(range(10 * k, 10 * k + 10)))
    s = Stream(path, maxFilesPerTrigger=2)
    start = s.offset
    end = s.source.latest_offset(start, s.limits())
    first = s.rows(s.source.batch_files(start, end))
    _append(path, [100])  # the log moves on before the replay
    s.restart()
    assert s.rows(s.source.batch_files(start, end)) == first


START_MODES = {
    "snapshot": {},
    "startingVersion=1": {"startingVersion": 1},
    "latest": {"startingVersion": "latest"},
    "startingTimestamp": {"startingTimestamp": "2023-11-14T22:14:30Z"},  # version 1
}


def _four_commits(path):
    for k in range(4):
        _append(path, list(range(10 * k, 10 * k + 10)))
    for v in range(4):  # commit times 100 s apart
        os.utime(os.path.join(path, "_delta_log", f"{v:020d}.json"), (1_700_000_000 + 100 * v,) * 2)


@pytest.mark.parametrize("mode", list(START_MODES))
@pytest.mark.parametrize("max_files", [1, 1000])
def test_uncommitted_batch_0_replays_identically_after_new_commits(tmp_path, mode, max_files):
    """Issue 24.1: Spark replays an uncommitted batch 0 from initialOffset() of the restarted
    query; new commits in between must not change what batch 0 reads."""
    path = str(tmp_path / "t")
    _four_commits(path)
    s = Stream(path, maxFilesPerTrigger=max_files, **START_MODES[mode])
    marker = s.offset
    end = json.loads(json.dumps(s.source.latest_offset(marker, s.limits()).to_dict()))  # as Spark logs it
    first = s.rows(s.source.batch_files(marker, StreamOffset.from_dict(end)))
    _append(path, list(range(100, 110)))  # the table moves on while the query is down
    s.restart()
    replay_start = s.source.initial_offset()  # what Spark hands a restarted query for batch 0
    assert replay_start.to_dict() == marker.to_dict()
    assert s.rows(s.source.batch_files(replay_start, StreamOffset.from_dict(end))) == first
    s.offset = StreamOffset.from_dict(end)
    s.batches = [s.source.batch_files(replay_start, s.offset)]
    s.drain()
    expected = {
        "snapshot": range(40),
        "startingVersion=1": range(10, 40),
        "latest": range(0),  # batch 0 is empty: only commits after the start
        "startingTimestamp": range(10, 40),
    }[mode]
    assert Counter(r[0] for r in s.all_rows()) == Counter([*expected, *range(100, 110)])


def test_batch_0_logged_by_older_versions_replays_from_its_end(tmp_path):
    """Offsets written before queryStartVersion existed: the snapshot is the one the end
    offset lies in (delta-spark's rule), so the replayed batch 0 loses no row."""
    path = str(tmp_path / "t")
    _four_commits(path)
    s = Stream(path, maxFilesPerTrigger=2)
    end = s.source.latest_offset(s.offset, s.limits()).to_dict()
    del end["queryStartVersion"]
    _append(path, list(range(100, 110)))
    s.restart()
    s.offset = StreamOffset.from_dict(end)
    s.batches = [s.source.batch_files(s.source.initial_offset(), s.offset)]
    s.drain()
    assert Counter(r[0] for r in s.all_rows()) == Counter([*range(40), *range(100, 110)])


def test_initial_snapshot_applies_deletion_vectors():
    path = table_path("kernel-rs/table-with-dv-small")
    s = Stream(path)
    s.drain()
    assert sorted(r[0] for r in s.all_rows()) == sorted(deltalake_table(path).column("value").to_pylist())


def test_starting_version_and_latest(tmp_path):
    path = str(tmp_path / "t")
    for k in range(3):
        _append(path, [k])
    s = Stream(path, startingVersion=1)
    s.drain()
    assert sorted(r[0] for r in s.all_rows()) == [1, 2]
    latest = Stream(path, startingVersion="latest")
    latest.drain()
    assert latest.all_rows() == []  # batch 0 is empty (it records where the query starts)
    _append(path, [9])
    latest.drain()
    assert latest.all_rows() == [(9, 1)]
    with pytest.raises(VersionNotFoundError, match="startingVersion: version 7 does not exist"):
        Stream(path, startingVersion=7)


def test_starting_timestamp(tmp_path):
    path = str(tmp_path / "t")
    for k in range(3):
        _append(path, [k])
    base = 1_700_000_000
    for v in range(3):
        os.utime(os.path.join(path, "_delta_log", f"{v:020d}.json"), (base + 100 * v,) * 2)
    s = Stream(path, startingTimestamp="2023-11-14T22:14:30Z")  # base + 50 s -> version 1
    s.drain()
    assert sorted(r[0] for r in s.all_rows()) == [1, 2]


def test_bytes_limit_takes_one_file_when_files_are_big(tmp_path):
    path = str(tmp_path / "t")
    for k in range(3):
        _append(path, [k])
    s = Stream(path, maxBytesPerTrigger=1)
    s.drain()
    assert [len(b) for b in s.batches] == [1, 1, 1]


def test_available_now_stops_at_the_target(tmp_path):
    path = str(tmp_path / "t")
    for k in range(3):
        _append(path, [k])
    s = Stream(path, maxFilesPerTrigger=1)
    s.source.prepare_available_now()
    assert s.step()
    _append(path, [99])  # arrives after the target was fixed
    s.drain()
    assert sorted(r[0] for r in s.all_rows()) == [0, 1, 2]


def test_deletes_and_updates_follow_the_options(tmp_path):
    from deltalake import DeltaTable

    path = str(tmp_path / "t")
    _append(path, list(range(10)), partition_by=["p"])
    DeltaTable(path).delete("p = 0")  # removes whole files: a delete-only commit (version 1)
    _append(path, [20, 21])

    with pytest.raises(StreamChangeError, match="deleted data at version 1.*ignoreDeletes"):
        Stream(path, startingVersion=0).drain()
    s = Stream(path, startingVersion=0, ignoreDeletes="true")
    s.drain()
    assert sorted(r[0] for r in s.all_rows()) == list(range(10)) + [20, 21]

    DeltaTable(path).update(predicate="id = 3", updates={"id": "30"})  # rewrites a file (version 3)
    with pytest.raises(StreamChangeError, match="changed existing data at version 3.*skipChangeCommits"):
        Stream(path, startingVersion=0, ignoreDeletes="true").drain()
    skip = Stream(path, startingVersion=0, skipChangeCommits="true")
    skip.drain()
    assert sorted(r[0] for r in skip.all_rows()) == list(range(10)) + [20, 21]
    changes = Stream(path, startingVersion=0, ignoreChanges="true")
    changes.drain()  # re-emits the rewritten file: 30 and its unchanged neighbours again
    assert 30 in [r[0] for r in changes.all_rows()]


def test_schema_change_stops_the_stream(tmp_path):
    from deltalake import write_deltalake

    path = str(tmp_path / "t")
    _append(path, [1])
    s = Stream(path)
    s.drain()
    write_deltalake(
        path,
        pa.table({"id": pa.array([2], pa.int64()), "p": pa.array([0], pa.int64()), "extra": pa.array(["x"])}),
        mode="append",
        schema_mode="merge",
    )
    with pytest.raises(StreamingError, match="schema of the source table changed at version 1.*restart"):
        s.drain()
    s.restart()  # a restart reads with the new schema and carries on from the offset
    s.drain()
    assert s.all_rows()[-1] == (2, 0, "x")


# ------------------------------------------------------------- change feed streams
def _hide_commits(path, first):
    """Moves commits >= first away; returns a function revealing the next one."""
    log_dir = os.path.join(path, "_delta_log")
    hidden = os.path.join(path, "_hidden")
    os.makedirs(hidden)
    names = sorted(n for n in os.listdir(log_dir) if n.endswith(".json") and int(n[:20]) >= first)
    for n in names:
        shutil.move(os.path.join(log_dir, n), os.path.join(hidden, n))
        crc = os.path.join(log_dir, n[:20] + ".crc")
        if os.path.exists(crc):
            os.remove(crc)

    def reveal():
        if not names:
            return False
        n = names.pop(0)
        shutil.move(os.path.join(hidden, n), os.path.join(log_dir, n))
        return True

    return reveal


def _change_rows(rows):
    return Counter(r[:-1] for r in rows)  # without _commit_timestamp


@pytest.mark.parametrize(
    "name", ["kernel-rs/cdf-table-with-dv", "delta-rs/cdf-table-with-cdc-and-dvs", "delta-rs/cdf-table"]
)
def test_change_feed_stream_with_commits_arriving(copy_table, name):
    path = copy_table(name)
    expected = _change_rows(tuple(r.values()) for r in read_changes(path, starting_version=0).to_pylist())
    reveal = _hide_commits(path, 1)
    s = Stream(path, readChangeFeed="true", maxFilesPerTrigger=1)
    s.drain()
    while reveal():
        s.drain(restart_every=1)
        s.restart()
    assert _change_rows(s.all_rows()) == expected


def test_change_feed_stream_starts_with_the_snapshot_as_inserts():
    path = table_path("kernel-rs/cdf-table-with-dv")
    s = Stream(path, readChangeFeed="true")
    s.drain()
    rows = s.all_rows()
    assert sorted(r[0] for r in rows) == list(range(10))  # version 6: every row restored
    assert {(r[1], r[2]) for r in rows} == {("insert", 6)}


def test_change_feed_stream_replays_uncommitted_batch_0_identically(tmp_path):
    path = str(tmp_path / "t")
    _append(path, list(range(10)), configuration={"delta.enableChangeDataFeed": "true"})
    _append(path, list(range(10, 20)))
    s = Stream(path, readChangeFeed="true", maxFilesPerTrigger=1)
    marker = s.offset
    end = StreamOffset.from_dict(json.loads(json.dumps(s.source.latest_offset(marker, s.limits()).to_dict())))
    first = s.rows(s.source.batch_files(marker, end))
    _append(path, list(range(100, 110)))
    s.restart()
    assert first and s.rows(s.source.batch_files(s.source.initial_offset(), end)) == first
    assert {r[3] for r in first} == {1}  # the snapshot's version, as inserts


def test_cdc_commit_is_delivered_in_one_batch():
    path = table_path("delta-rs/cdf-table")
    s = Stream(path, readChangeFeed="true", startingVersion=1, maxFilesPerTrigger=1)
    s.drain()
    by_batch = [Counter(r[4] for r in s.rows(b)) for b in s.batches]
    # each update version keeps its pre- and post-images together
    assert [dict(c) for c in by_batch if c] == [{1: 6}, {2: 6}, {3: 1}]


def test_change_feed_stream_refuses_versions_without_cdf(copy_table):
    path = copy_table("kernel-rs/table-with-cdf")
    os.remove(os.path.join(path, "_delta_log", f"{4:020d}.json"))  # (it makes `id` non-nullable)
    s = Stream(path, readChangeFeed="true", startingVersion=0)
    with pytest.raises(ChangeDataError, match="not recorded for version 2"):
        s.drain()


def test_nullability_tightened_after_old_data_stops_the_stream():
    s = Stream(table_path("kernel-rs/table-with-cdf"), readChangeFeed="true", startingVersion=0)
    with pytest.raises(StreamingError, match="version 0: column 'id' is nullable there but not in the stream"):
        s.drain()


def test_a_batch_ending_before_a_bad_commit_is_still_readable(tmp_path):
    from deltalake import DeltaTable

    path = str(tmp_path / "t")
    _append(path, [1, 2], partition_by=["p"])
    s = Stream(path, startingVersion=0)
    end = s.source.latest_offset(s.offset, s.limits())
    assert (end.version, end.index) == (1, BASE_INDEX)  # past the last file of version 0
    DeltaTable(path).delete("p = 0")  # version 1 only deletes
    assert len(s.source.batch_files(s.offset, end)) == 2  # replanning batch 0 never judges version 1
    with pytest.raises(StreamChangeError, match="version 1"):
        s.source.latest_offset(end, s.limits())
