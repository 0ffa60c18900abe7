"""History, tombstones, VACUUM planning and the inspection CLI, without Spark."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from conftest import table_path

from delta_pyds.log.history import history
from delta_pyds.operations.vacuum import vacuum
from delta_pyds.table.snapshot import Snapshot


def _log_actions(path):
    """(version, action) pairs from a table's JSON commits: the independent reference."""
    out = []
    log_dir = os.path.join(path, "_delta_log")
    for name in sorted(os.listdir(log_dir)):
        if name.endswith(".json") and len(name) == 25:
            with open(os.path.join(log_dir, name)) as f:
                out += [(int(name[:20]), json.loads(line)) for line in f if line.strip()]
    return out


def test_tombstones_are_removes_never_re_added():
    path = table_path("delta-rs/simple_table")
    state = {}
    for _, action in _log_actions(path):
        if "add" in action:
            state[action["add"]["path"]] = ("add", None)
        elif "remove" in action:
            state[action["remove"]["path"]] = ("remove", action["remove"].get("deletionTimestamp"))
    expected = sorted(p for p, (kind, _) in state.items() if kind == "remove")
    tomb = Snapshot.load(path).tombstones
    assert sorted(tomb.column("path").to_pylist()) == expected


def test_history_lists_every_commit_newest_first():
    path = table_path("delta-rs/simple_table")
    records = history(path)
    assert [r["version"] for r in records] == [4, 3, 2, 1, 0]
    ops = {v: a["commitInfo"].get("operation") for v, a in _log_actions(path) if "commitInfo" in a}
    assert {r["version"]: r["operation"] for r in records} == ops
    assert all(records[i]["timestamp"] > records[i + 1]["timestamp"] for i in range(4))
    assert [r["version"] for r in history(path, limit=2)] == [4, 3]


def _age_all_files(path, seconds_ago=30 * 86400):
    import time

    t = time.time() - seconds_ago
    for root, _dirs, files in os.walk(path):
        for f in files:
            os.utime(os.path.join(root, f), (t, t))


def test_vacuum_is_a_dry_run_by_default_and_refuses_short_retention(copy_table):
    path = copy_table("delta-rs/simple_table")
    _age_all_files(path)
    snap = Snapshot.load(path)
    with pytest.raises(ValueError, match="deletedFileRetentionDuration"):
        vacuum(snap, retention_hours=1)
    before = sorted(os.listdir(path))
    result = vacuum(snap)  # 7 days; tombstones in this table are years old
    assert result.dry_run and len(result.files) == 32
    assert sorted(os.listdir(path)) == before


def test_vacuum_deletes_only_unreferenced_old_files_and_latest_still_reads(copy_table, spark):
    path = copy_table("delta-rs/simple_table")
    _age_all_files(path)
    snap = Snapshot.load(path)
    active = set(snap.files.column("path").to_pylist())
    expected_rows = sorted(r.id for r in spark.read.format("pydelta").load(path).collect())
    result = vacuum(snap, dry_run=False)
    remaining = {f for f in os.listdir(path) if f.endswith(".parquet")}
    assert remaining == active
    assert len(result.files) == 32 and not (set(result.files) & active)
    assert sorted(r.id for r in spark.read.format("pydelta").load(path).collect()) == expected_rows
    with pytest.raises(Exception, match="missing"):
        spark.read.format("pydelta").option("versionAsOf", 0).load(path).collect()


def test_vacuum_keeps_files_of_recent_tombstones(copy_table):
    path = copy_table("delta-rs/simple_table")
    _age_all_files(path)
    snap = Snapshot.load(path)
    tomb = snap.tombstones.to_pylist()
    newest = max(t["deletionTimestamp"] for t in tomb)
    # pretend "now" is just after the newest tombstone: those files are inside the window
    result = vacuum(snap, now_ms=newest + 1000, retention_hours=1, enforce_retention=False)
    recent = {t["path"] for t in tomb if t["deletionTimestamp"] > newest + 1000 - 3_600_000}
    assert recent and not (recent & set(result.files))


def test_vacuum_keeps_deletion_vector_files(copy_table):
    path = copy_table("delta-rs/table-with-dv-small")
    _age_all_files(path)
    snap = Snapshot.load(path)
    result = vacuum(snap, retention_hours=0, enforce_retention=False)
    assert not any(f.startswith("deletion_vector_") for f in result.files)
    assert any(f.startswith("deletion_vector_") for f in os.listdir(path))


def test_cli_commands():
    path = table_path("delta-rs/simple_table")

    def run(*args):
        return subprocess.run([sys.executable, "-m", "delta_pyds", *args], capture_output=True, text=True)

    out = run("history", path, "--limit", "1")
    assert out.returncode == 0 and json.loads(out.stdout.splitlines()[0])["version"] == 4
    out = run("files", path)
    assert len(out.stdout.splitlines()) == Snapshot.load(path).files.num_rows
    out = run("protocol", path)
    assert json.loads(out.stdout)["minReaderVersion"] == 1
    out = run("schema", path, "--version", "0")
    assert json.loads(out.stdout)["schema"]["fields"][0]["name"] == "id"
    out = run("vacuum", path)
    assert out.returncode == 0 and "would delete" in out.stderr
    out = run("files", "/nonexistent/table")
    assert out.returncode == 1 and "[DELTA_MISSING_DELTA_TABLE] /nonexistent/table is not a Delta table" in out.stderr


def test_vacuum_enters_underscore_partitions_and_stale_staging_but_not_hidden_dirs(tmp_path):
    # as delta-spark's isHiddenDirectory: a partition column named "_p" is data, not hidden;
    # a native write's staging directory left by a dead driver is cleaned once old
    import pyarrow as pa

    from delta_pyds.write.plan import commit_arrow

    path = str(tmp_path / "t")
    commit_arrow(path, pa.table({"_p": ["a", "b"], "v": [1, 2]}), options={"partitionBy": "_p"})
    commit_arrow(path, pa.table({"_p": ["a"], "v": [3]}), mode="overwrite")  # tombstones _p=b
    orphans = [
        os.path.join(path, "_p=a", "orphan.parquet"),
        os.path.join(path, "_pydelta_staging-dead", "_p=a", "part-0.parquet"),
    ]
    kept = [
        os.path.join(path, "_other", "x.parquet"),
        os.path.join(path, ".hidden", "x.parquet"),
        os.path.join(path, "_p=a", "_SUCCESS"),
    ]
    for f in orphans + kept:
        os.makedirs(os.path.dirname(f), exist_ok=True)
        open(f, "wb").write(b"x")
    import time

    snap = Snapshot.load(path)
    active = set(snap.files.column("path").to_pylist())
    later = int((time.time() + 40 * 86400) * 1000)  # the tombstones are past the 7 days then
    result = vacuum(snap, dry_run=False, log_commits=False, now_ms=later)
    assert {os.path.join(path, r) for r in result.files} >= set(orphans)
    assert not any(os.path.exists(f) for f in orphans)
    assert all(os.path.exists(f) for f in kept)
    assert all(os.path.exists(os.path.join(path, p)) for p in active)
    assert not any(r.startswith("_p=b/") for r in active)
    assert any(r.startswith("_p=b/") for r in result.files)  # the tombstoned partition's files
