"""The latest snapshot kept between statements (delta_pyds.table.latest) and extended from the
commits after it (Snapshot.extend): always what a fresh Snapshot.load gives, on the reference
tables of other engines at every version and under other writers (deltalake), and reading only
the new commits."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import time

import pyarrow as pa
import pytest
from conftest import DATA, table_path

from delta_pyds.errors import DeltaError
from delta_pyds.log.segment import list_log
from delta_pyds.operations.arrow_write import write_arrow
from delta_pyds.storage.store import Storage
from delta_pyds.table import latest
from delta_pyds.table.latest import latest_snapshot
from delta_pyds.table.snapshot import Snapshot
from delta_pyds.table.state import file_actions

ALL_TABLES = sorted(
    f"{src}/{name}"
    for src in ("delta-rs", "kernel-rs")
    for name in os.listdir(os.path.join(DATA, src))
    if os.path.isdir(os.path.join(DATA, src, name, "_delta_log"))
)


def state(snap: Snapshot) -> dict:
    """Everything a reader or writer takes from a snapshot, comparable: ``stats`` as the
    number of records (a checkpoint may respell the JSON or hold only ``stats_parsed``, its
    second spelling) and the metadata's schema parsed (a checkpoint may respell it too)."""
    files = snap.files
    order = sorted(range(files.num_rows), key=lambda i: (files["path"][i].as_py(), str(files["deletion_vector"][i])))
    rows = []
    for row in files.take(pa.array(order, pa.int64())).to_pylist():
        parsed = row.pop("stats_parsed", None)
        text = row.pop("stats")
        row["num_records"] = json.loads(text).get("numRecords") if text else (parsed or {}).get("numRecords")
        rows.append(row)
    tomb = snap.tombstones
    meta = snap.metadata
    return {
        "version": snap.version,
        "protocol": snap.protocol,
        "metadata": (dataclasses.replace(meta, schema_string=""), json.loads(meta.schema_string)),
        "files": rows,
        "txns": snap.app_transactions,
        "domains": snap.domain_metadata,
        "tombstones": sorted(tomb.column("path").to_pylist()),
        "scan_files": sorted(snap.scan_files.column("path").to_pylist()),
    }


def loadable(path: str) -> Snapshot | None:
    try:
        return Snapshot.load(path)
    except DeltaError:
        return None  # a table whose latest version this package refuses (tested elsewhere)


# kernel-rs's fixture for checkpoint-only statistics: its checkpoint was written apart from its
# commits (another metadata id and configuration, no stats), so a replay of its commits and its
# checkpoint disagree; readers trust the checkpoint, an extension never skips one (a newer
# checkpoint means a fresh load), so no extension meets this
INCONSISTENT = {"kernel-rs/parquet_row_group_skipping"}


@pytest.mark.parametrize("name", [t for t in ALL_TABLES if t not in INCONSISTENT])
def test_extending_any_version_gives_the_fresh_latest(name, tmp_path):
    """For every commit version v of a real table, v's snapshot extended with the commits
    after it equals the latest snapshot loaded afresh (removes, re-adds, DVs, metadata and
    protocol changes, txns and domains of other engines' logs)."""
    fresh = loadable(table_path(name))
    if fresh is None:
        pytest.skip("this package refuses the table's latest version (tested elsewhere)")
    listing = list_log(fresh.storage)
    commits = {f.version: f for f in listing if f.kind == "commit"}
    expected = state(fresh)
    tried = 0
    for v in sorted(commits):
        if v == fresh.version or any(u not in commits for u in range(v + 1, fresh.version + 1)):
            continue
        try:
            base = Snapshot.load(fresh.storage, version=v)
        except DeltaError:
            continue  # that version cannot be rebuilt (commit 0 cleaned up, ...)
        extended = Snapshot.extend(base, [commits[u] for u in range(v + 1, fresh.version + 1)])
        assert state(extended) == expected, f"extended from version {v}"
        same_writer_view(extended, fresh)
        tried += 1
    print(f"{name}: extended from {tried} versions")
    if name in MUST_EXTEND:  # not vacuous where the log has versions to extend from
        assert tried >= 2


# tables with removes, DVs, checkpoints, metadata changes, txns or domains in their commits
MUST_EXTEND = {
    "delta-rs/checkpoint-v2-table",
    "kernel-rs/parsed-stats",
}


def rows(n: int, start: int = 0) -> pa.Table:
    return pa.table(
        {"id": pa.array(range(start, start + n), pa.int64()), "s": [f"v{i}" for i in range(start, start + n)]}
    )


class ReadSpy:
    """The paths read through Storage.read_many while it is installed."""

    def __init__(self, monkeypatch):
        self.paths: list[str] = []
        original = Storage.read_many

        def spy(storage, paths, *, sizes=None):
            self.paths.extend(paths)
            return original(storage, paths, sizes=sizes)

        monkeypatch.setattr(Storage, "read_many", spy)

    def log_files(self) -> list[str]:
        return sorted(os.path.basename(p) for p in self.paths if "_delta_log" in p)


@pytest.fixture(autouse=True)
def no_kept_snapshots():
    latest.forget()
    yield
    latest.forget()


def test_a_second_statement_reads_only_the_new_commits(tmp_path, monkeypatch):
    path = str(tmp_path / "t")
    write_arrow(path, rows(3))
    first = latest_snapshot(Storage(path))
    assert first.files.num_rows == 1
    deltalake = pytest.importorskip("deltalake")  # another writer: none of this package's post-commit work
    deltalake.write_deltalake(path, rows(2, 10), mode="append")
    deltalake.write_deltalake(path, rows(2, 20), mode="append")
    spy = ReadSpy(monkeypatch)
    second = latest_snapshot(Storage(path))
    # the kept version's commit (its digest) and the two new commits, nothing before
    assert spy.log_files() == ["00000000000000000000.json", "00000000000000000001.json", "00000000000000000002.json"]
    assert second.version == 2
    assert state(second) == state(Snapshot.load(path))
    spy.paths.clear()
    assert latest_snapshot(Storage(path)) is second  # nothing new: the same object
    assert spy.log_files() == ["00000000000000000002.json"]


def test_other_writers_changes_are_seen(tmp_path):
    """deltalake appends, overwrites, deletes, updates, merges and checkpoints between our
    calls: each call equals a fresh load."""
    deltalake = pytest.importorskip("deltalake")
    path = str(tmp_path / "t")
    write_arrow(path, rows(5))
    latest_snapshot(Storage(path))
    steps = [
        lambda: deltalake.write_deltalake(path, rows(3, 100), mode="append"),
        lambda: deltalake.DeltaTable(path).delete("id < 2"),
        lambda: deltalake.DeltaTable(path).update({"s": "'x'"}, predicate="id = 3"),
        lambda: deltalake.write_deltalake(path, rows(4, 200), mode="overwrite"),
        lambda: deltalake.DeltaTable(path).create_checkpoint(),
        lambda: deltalake.write_deltalake(path, rows(1, 300), mode="append"),
        lambda: write_arrow(path, rows(2, 400)),
        lambda: deltalake.DeltaTable(path).optimize.compact(),
        lambda: deltalake.write_deltalake(
            path, rows(4, 500), mode="overwrite", schema_mode="overwrite", partition_by=["s"]
        ),
        lambda: deltalake.write_deltalake(path, rows(2, 600), mode="append"),
        lambda: deltalake.DeltaTable(path).delete("id = 600"),
    ]
    for step in steps:
        step()
        got = latest_snapshot(Storage(path))
        assert state(got) == state(Snapshot.load(path))
        same_writer_view(got, Snapshot.load(path))


def state_actions(snap: Snapshot) -> tuple:
    """The writer's view (raw paths, tombstones) as sorted rows."""
    acts = file_actions(snap)
    return tuple(sorted(map(str, t.to_pylist())) for t in (acts.active, acts.tombstones))


# what a remove repeats of its add and what identifies a file (a checkpoint may respell
# ``stats``, ``dataChange``, ``modificationTime`` and ``tags``)
WRITER_KEYS = ("raw_path", "path", "size", "deletionVector", "partitionValues", "baseRowId", "defaultRowCommitVersion")


def writer_rows(active: pa.Table) -> list[str]:
    return sorted(str({k: r.get(k) for k in WRITER_KEYS}) for r in active.to_pylist())


def same_writer_view(extended: Snapshot, fresh: Snapshot) -> None:
    """The writer's active files (raw paths) are equal; the tombstones of a commit replay hold
    those a checkpoint holds (a checkpoint drops expired ones and respells their fields; the
    checkpoint writer filters by retention again)."""
    ext, new = file_actions(extended), file_actions(fresh)
    assert writer_rows(ext.active) == writer_rows(new.active)
    assert set(new.tombstones.column("raw_path").to_pylist()) <= set(ext.tombstones.column("raw_path").to_pylist())


def test_a_table_created_again_at_the_same_path_is_loaded_afresh(tmp_path):
    path = str(tmp_path / "t")
    write_arrow(path, rows(3))
    write_arrow(path, rows(3, 10))
    old = latest_snapshot(Storage(path))
    shutil.rmtree(path)
    time.sleep(0.01)
    write_arrow(path, rows(1, 50))
    write_arrow(path, pa.table({"id": pa.array([7], pa.int64()), "s": ["x"]}))
    got = latest_snapshot(Storage(path))
    assert got is not old and got.version == 1
    assert state(got) == state(Snapshot.load(path))
    assert sorted(got.files.column("path").to_pylist()) != sorted(old.files.column("path").to_pylist())


def test_the_kept_version_rewritten_in_place_is_detected(tmp_path):
    """Same version, same size, same modification time, other bytes: the digest decides."""
    path = str(tmp_path / "t")
    write_arrow(path, rows(3))
    kept = latest_snapshot(Storage(path))
    log0 = os.path.join(path, "_delta_log", "00000000000000000000.json")
    stat = os.stat(log0)
    data = open(log0, "rb").read()
    swapped = data.replace(b'"v0"', b'"w0"', 1) if b'"v0"' in data else data[:-2] + b" \n"
    assert len(swapped) == len(data) and swapped != data
    with open(log0, "wb") as f:
        f.write(swapped)
    os.utime(log0, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    got = latest_snapshot(Storage(path))
    assert got is not kept


def test_a_gap_or_a_newer_checkpoint_loads_afresh(tmp_path, monkeypatch):
    deltalake = pytest.importorskip("deltalake")
    path = str(tmp_path / "t")
    write_arrow(path, rows(2))
    kept = latest_snapshot(Storage(path))
    for i in range(3):
        deltalake.write_deltalake(path, rows(1, 10 + i), mode="append")
    deltalake.DeltaTable(path).create_checkpoint()
    calls = []
    original = Snapshot.extend.__func__

    def spy(cls, base, commits):
        calls.append(len(commits))
        return original(cls, base, commits)

    monkeypatch.setattr(Snapshot, "extend", classmethod(spy))
    got = latest_snapshot(Storage(path))
    assert calls == [] and got is not kept  # the checkpoint: a fresh load
    assert state(got) == state(Snapshot.load(path))


def test_memory_is_bounded(tmp_path):
    for i in range(latest.MAX_TABLES + 3):
        p = str(tmp_path / f"t{i}")
        write_arrow(p, rows(1))
        latest_snapshot(Storage(p))
    assert len(latest._KEPT) == latest.MAX_TABLES


def test_kept_files_are_bounded_in_rows(tmp_path, monkeypatch):
    monkeypatch.setattr(latest, "MAX_FILES", 3)
    for i in range(3):
        p = str(tmp_path / f"t{i}")
        write_arrow(p, rows(1))
        write_arrow(p, rows(1, 5))
        latest_snapshot(Storage(p)).files  # two files each, built
    latest_snapshot(Storage(str(tmp_path / "t2")))
    assert len(latest._KEPT) == 1  # 2 + 2 rows would pass the bound


def test_the_checkpoint_after_a_commit_replays_only_the_new_commit(tmp_path, monkeypatch):
    """The checkpoint of the version just committed is built on the table's kept snapshot
    brought up to date by that commit: commits 0-8 are not read again, and it holds what the
    checkpoint of a fresh load holds (a remove and ten files among them)."""
    import pyarrow.parquet as pq

    from delta_pyds.transaction.checkpoint_writer import checkpoint_table, write_checkpoint

    deltalake = pytest.importorskip("deltalake")
    path = str(tmp_path / "t")
    for i in range(9):
        write_arrow(path, rows(2, 10 * i))
    deltalake.DeltaTable(path).delete("id = 10")  # version 9, another writer: a remove to keep
    # what a statement reads (version 9): its files as writers take them (DML, conflict checks)
    assert file_actions(latest_snapshot(Storage(path))).active.num_rows == 9
    no_checkpoint = deltalake.PostCommitHookProperties(create_checkpoint=False)
    deltalake.write_deltalake(path, rows(2, 100), mode="append", post_commithook_properties=no_checkpoint)
    spy = ReadSpy(monkeypatch)
    write_checkpoint(Storage(path), 10)  # what the commit of version 10 does after it
    # the kept version's commit (its digest) and the new one, nothing before
    assert set(spy.log_files()) == {"00000000000000000009.json", "00000000000000000010.json"}
    written = pq.read_table(os.path.join(path, "_delta_log", "00000000000000000010.checkpoint.parquet"))
    fresh, _ = checkpoint_table(Snapshot.load(path, version=10))

    def actions(t: pa.Table) -> list:
        out = []
        for row in t.to_pylist():
            for kind, action in row.items():
                if action is not None:
                    out.append((kind, json.dumps(action, sort_keys=True, default=str)))
        return sorted(out)

    assert actions(written) == actions(fresh)
    kinds = [k for k, _ in actions(written)]
    assert (kinds.count("add"), kinds.count("remove")) == (10, 1)
