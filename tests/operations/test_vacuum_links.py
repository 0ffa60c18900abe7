"""VACUUM through symbolic links and of crashed writes' staging directories (issue 24,
items 3 and 8): it lists as delta-spark does but deletes only what is provably garbage."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from helpers import deltalake_table, normalize, sort_key
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from delta_pyds.operations.vacuum import hidden_path, vacuum
from delta_pyds.table.snapshot import Snapshot
from delta_pyds.write.plan import commit_arrow

DAY_MS = 86_400_000
LATER = lambda: int(time.time() * 1000) + 40 * DAY_MS  # noqa: E731 - past every 7-day window


def _parquet(path, rows=(1,)):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    pq.write_table(pa.table({"v": pa.array(list(rows), pa.int64())}), path)


def _both_reads(spark, path):
    from delta_pyds import read_delta

    ds = sorted(
        (tuple(normalize(x) for x in r) for r in spark.read.format("pydelta").load(path).collect()), key=sort_key
    )
    native = sorted((tuple(normalize(x) for x in r) for r in read_delta(spark, path).collect()), key=sort_key)
    assert ds == native
    return ds


def _snapshot_files(path):
    return sorted(Snapshot.load(path).files.column("path").to_pylist())


def test_vacuum_never_deletes_through_links_and_collects_garbage_links(tmp_path, spark):
    path = str(tmp_path / "t")
    commit_arrow(path, pa.table({"k": [1, 2, 3], "v": [10, 20, 30]}), options={"partitionBy": "k"})
    commit_arrow(path, pa.table({"k": [1, 2, 3], "v": [11, 21, 31]}))
    # a live partition directory moved to another disk and linked back (k=1 -> /disk2/k=1)
    disk2 = tmp_path / "disk2"
    disk2.mkdir()
    os.rename(os.path.join(path, "k=1"), disk2 / "k=1")
    os.symlink(disk2 / "k=1", os.path.join(path, "k=1"))
    # a live partition directory moved inside the root and linked (k=2 -> store/k2)
    os.makedirs(os.path.join(path, "store"))
    os.rename(os.path.join(path, "k=2"), os.path.join(path, "store", "k2"))
    os.symlink("store/k2", os.path.join(path, "k=2"))
    expected = _both_reads(spark, path)
    live = _snapshot_files(path)
    # canaries outside the root: reached through garbage links, never touched
    outside = tmp_path / "outside"
    canaries = [
        str(outside / "canary.parquet"),
        str(outside / "sub" / "c2.parquet"),
        str(disk2 / "k=1" / "orphan.parquet"),
    ]
    for c in canaries:
        _parquet(c)
    os.symlink(outside, os.path.join(path, "old_dir_link"))  # garbage link to a directory outside
    os.symlink(outside / "canary.parquet", os.path.join(path, "file_link.parquet"))  # to a file outside
    os.symlink(os.path.join(path, "k=3"), os.path.join(path, "alias"))  # a directory inside
    os.symlink(tmp_path / "nowhere", os.path.join(path, "dangling.parquet"))
    os.symlink(".", os.path.join(path, "loop"))  # a loop back to the root
    os.symlink("..", os.path.join(path, "up"))  # the root's parent: outside
    os.symlink("_delta_log", os.path.join(path, "logalias"))  # hidden content under a visible name
    os.symlink(live[0], os.path.join(path, "live_twin.parquet"))  # a garbage link to a live file
    orphans = [os.path.join(path, "k=3", "orphan.parquet"), os.path.join(path, "store", "k2", "orphan.parquet")]
    for o in orphans:
        _parquet(o)
    log_before = sorted(os.listdir(os.path.join(path, "_delta_log")))
    canary_bytes = {c: open(c, "rb").read() for c in canaries}

    result = vacuum(Snapshot.load(path), dry_run=False, now_ms=LATER(), log_commits=False)

    # garbage: orphans (each once, by its real name), the links that lead nowhere live
    for gone in ("old_dir_link", "file_link.parquet", "dangling.parquet", "live_twin.parquet", "up", "loop", "alias"):
        assert not os.path.lexists(os.path.join(path, gone)), gone
        assert gone in result.files
    assert not any(os.path.exists(o) for o in orphans)
    assert "k=3/orphan.parquet" in result.files and "store/k2/orphan.parquet" in result.files
    assert len(result.files) == len(set(result.files))
    # kept: the live links and every live file, the log, everything outside the root
    assert os.path.islink(os.path.join(path, "k=1")) and os.path.islink(os.path.join(path, "k=2"))
    assert all(os.path.exists(os.path.join(path, p)) for p in live)
    assert sorted(os.listdir(os.path.join(path, "_delta_log"))) == log_before
    # the log's files were listed through "logalias" but are hidden by their real name; the
    # link itself is garbage (unlinking it removes nothing else)
    assert not os.path.lexists(os.path.join(path, "logalias"))
    assert {c: open(c, "rb").read() for c in canaries} == canary_bytes
    assert not any(f.startswith(("k=1/", "k=2/", "store/k2/part")) for f in result.files)
    assert _both_reads(spark, path) == expected

    dl = deltalake_table(path).to_pylist()
    assert sorted((r["k"], r["v"]) for r in dl) == sorted((r[0], r[1]) for r in expected)


def test_vacuum_keeps_a_live_file_link_and_the_links_it_goes_through(tmp_path):
    # a live data file that is itself a link (to a file outside), reached through a chain
    path = str(tmp_path / "t")
    commit_arrow(path, pa.table({"v": [1, 2]}))
    (live,) = _snapshot_files(path)
    outside = tmp_path / "disk2"
    outside.mkdir()
    os.rename(os.path.join(path, live), outside / "real.parquet")
    os.symlink("hop.parquet", os.path.join(path, live))  # live -> hop -> outside/real
    os.symlink(outside / "real.parquet", os.path.join(path, "hop.parquet"))
    result = vacuum(Snapshot.load(path), dry_run=False, now_ms=LATER(), log_commits=False)
    assert result.files == []
    assert os.path.islink(os.path.join(path, "hop.parquet")) and (outside / "real.parquet").exists()
    assert pq.read_table(os.path.join(path, live)).num_rows == 2


def _staged(path, name, rel_files):
    out = []
    for rel in rel_files:
        f = os.path.join(path, name, rel)
        os.makedirs(os.path.dirname(f), exist_ok=True)
        with open(f, "wb") as fh:
            fh.write(b"PAR1 left by a crash")
        out.append(f)
    return out


def _age(paths, seconds):
    t = time.time() - seconds
    for p in paths:
        os.utime(p, (t, t), follow_symlinks=False)


CRASH_LAYOUT = [  # what Spark's committer leaves when the process dies mid-job
    "_temporary/0/_temporary/attempt_202611240000_0001_m_000000_1/k=1/part-00000-x.c000.snappy.parquet",
    "_temporary/0/_temporary/attempt_202611240000_0001_m_000000_1/k=1/.part-00000-x.c000.snappy.parquet.crc",
    "_temporary/0/task_202611240000_0001_m_000001/part-00001-x.c000.snappy.parquet",
    "_temporary/0/task_202611240000_0001_m_000001/.part-00001-x.c000.snappy.parquet.crc",
    "k=2/part-00002-x.c000.snappy.parquet",
    "_SUCCESS",
    "._SUCCESS.crc",
]


def test_vacuum_collects_stale_staging_content_and_keeps_a_fresh_one(tmp_path):
    path = str(tmp_path / "t")
    commit_arrow(path, pa.table({"k": [1], "v": [1]}), options={"partitionBy": "k"})
    stale = _staged(path, f"_pydelta_staging-{uuid.uuid4()}", CRASH_LAYOUT)
    fresh_dir = f"_pydelta_staging-{uuid.uuid4()}"
    fresh = _staged(path, fresh_dir, CRASH_LAYOUT)  # a write in progress
    stale_root = os.path.dirname(stale[-1])
    dirs = [d for d, _, _ in os.walk(stale_root)]
    _age(stale + dirs, 2 * 3600)
    result = vacuum(Snapshot.load(path), dry_run=False, retention_hours=1, enforce_retention=False, log_commits=False)
    assert not any(os.path.exists(f) for f in stale)
    assert not os.path.exists(stale_root)  # emptied directories go too
    assert all(os.path.exists(f) for f in fresh)
    assert len(result.files) == len(CRASH_LAYOUT)
    assert not any(r.startswith(fresh_dir) for r in result.files)
    assert Snapshot.load(path).files.num_rows == 1


@pytest.mark.slow
def test_vacuum_collects_what_sigkilled_write_delta_runs_leave(tmp_path, spark):
    path = str(tmp_path / "t")
    commit_arrow(path, pa.table({"k": [0], "v": [0]}), options={"partitionBy": "k"})
    script = (
        "import sys\n"
        "from pyspark.sql import SparkSession\n"
        "from delta_pyds import write_delta\n"
        "spark = SparkSession.builder.master('local[2]').config('spark.ui.enabled','false').getOrCreate()\n"
        "df = spark.range(0, 400000, numPartitions=8).selectExpr('id % 5 AS k', 'id AS v')\n"
        "while True:\n"
        "    write_delta(df, sys.argv[1], mode='append')\n"
    )
    env = dict(os.environ, PYTHONPATH=os.getcwd())
    kills = 0
    for _ in range(2):
        proc = subprocess.Popen([sys.executable, "-c", script, path], env=env, start_new_session=True)
        try:
            deadline = time.monotonic() + 300
            while time.monotonic() < deadline and proc.poll() is None:
                if any(
                    "_temporary" in d and files
                    for d, _, files in os.walk(path)
                    if "_pydelta_staging-" in d and any(f.endswith(".parquet") for f in files)
                ):
                    break
                time.sleep(0.05)
        finally:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        kills += 1
    leftovers = [os.path.join(d, f) for d, _, fs in os.walk(path) if "_pydelta_staging-" in d for f in fs]
    assert kills == 2 and leftovers, "the writes were not killed mid-write"
    snap = Snapshot.load(path)
    vacuum(snap, dry_run=False, retention_hours=0, enforce_retention=False, now_ms=LATER(), log_commits=False)
    remaining = [os.path.join(d, f) for d, _, fs in os.walk(path) if "_pydelta_staging-" in d for f in fs]
    assert remaining == []
    assert not [n for n in os.listdir(path) if n.startswith("_pydelta_staging-")]

    rows = _both_reads(spark, path)
    assert len(rows) == deltalake_table(path).num_rows >= 1


def test_vacuum_on_an_object_store_is_unchanged(tmp_path):
    root = f"memory://vacuum-{uuid.uuid4().hex}/t"
    commit_arrow(root, pa.table({"v": [1, 2]}))
    import fsspec

    fs = fsspec.filesystem("memory")
    base = root[len("memory://") :]
    fs.pipe_file(f"{base}/orphan.parquet", b"x")
    fs.pipe_file(f"{base}/_pydelta_staging-dead/_temporary/0/part-0.parquet", b"x")
    result = vacuum(
        Snapshot.load(root),
        dry_run=False,
        retention_hours=0,
        enforce_retention=False,
        now_ms=LATER(),
        log_commits=False,
    )
    assert sorted(result.files) == ["_pydelta_staging-dead/_temporary/0/part-0.parquet", "orphan.parquet"]
    assert Snapshot.load(root).files.num_rows == 1


# ---------------------------------------------------------------- fuzzing link trees
_DEEP = int(os.environ.get("DELTA_PYDS_FUZZ_EXAMPLES", "0"))
FUZZ = settings(
    max_examples=_DEEP or 120,
    deadline=None,
    derandomize=not _DEEP,
    suppress_health_check=[HealthCheck.too_slow],
)
NAMES = ["a", "b.parquet", "k=1", "_h", ".d", "_pydelta_staging-x"]
# (kind, parent node, name, link target node or -1 outside / -2 dangling / -3 the root's parent,
#  absolute link?)
NODE = st.tuples(
    st.sampled_from(["dir", "file", "link"]),
    st.integers(0, 20),
    st.sampled_from(NAMES),
    st.integers(-3, 20),
    st.booleans(),
)


def _log(root, live):
    os.makedirs(os.path.join(root, "_delta_log"))
    schema = '{"type":"struct","fields":[{"name":"v","type":"long","nullable":true,"metadata":{}}]}'
    lines = [
        {"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}},
        {
            "metaData": {
                "id": "x",
                "format": {"provider": "parquet", "options": {}},
                "schemaString": schema,
                "partitionColumns": [],
                "configuration": {},
                "createdTime": 0,
            }
        },
    ] + [
        {"add": {"path": p, "partitionValues": {}, "size": 1, "modificationTime": 0, "dataChange": True}} for p in live
    ]
    with open(os.path.join(root, "_delta_log", "00000000000000000000.json"), "w") as f:
        f.write("\n".join(json.dumps(x) for x in lines) + "\n")


def _reachable(root):
    """Every (lexical, root-relative) name under the root that opens as a regular file."""
    from delta_pyds.storage.store import Storage
    from delta_pyds.storage.tree import list_tree

    return sorted(e.rel for e in list_tree(Storage(root)) if os.path.isfile(os.path.join(root, e.rel)))


@FUZZ
@given(nodes=st.lists(NODE, max_size=14), data=st.data())
def test_vacuum_over_random_link_trees_never_loses_live_or_outside_files(nodes, data):
    base = tempfile.mkdtemp()
    try:
        root, outside = os.path.join(base, "t"), os.path.join(base, "outside")
        os.makedirs(root)
        os.makedirs(outside)
        canaries = {os.path.join(outside, n): n.encode() for n in ("c.parquet", "k=1")}
        for c, b in canaries.items():
            with open(c, "wb") as f:
                f.write(b)
        made = [root]  # nodes created so far (index -> path)
        for i, (kind, parent, name, target, absolute) in enumerate(nodes):
            d = made[parent % len(made)]
            if not os.path.isdir(d) or os.path.islink(d):
                d = root
            path = os.path.join(d, f"{name}{i}" if i % 3 else name)
            if os.path.lexists(path):
                continue
            if kind == "dir":
                os.makedirs(path)
            elif kind == "file":
                with open(path, "wb") as f:
                    f.write(path.encode())
            else:
                dest = {-1: outside, -2: os.path.join(base, "nowhere"), -3: base}.get(target)
                if dest is None:
                    dest = made[target % len(made)]
                os.symlink(dest if absolute else os.path.relpath(dest, d), path)
            made.append(path)
        names = _reachable(root)
        live = data.draw(st.lists(st.sampled_from(names), unique=True, max_size=6)) if names else []
        _log(root, live)
        before = {p: open(os.path.join(root, p), "rb").read() for p in live}
        log_before = sorted(os.listdir(os.path.join(root, "_delta_log")))
        vacuum(
            Snapshot.load(root),
            dry_run=False,
            retention_hours=0,
            enforce_retention=False,
            now_ms=LATER(),
            log_commits=False,
        )
        assert {p: open(os.path.join(root, p), "rb").read() for p in live} == before
        assert {c: open(c, "rb").read() for c in canaries} == canaries
        assert sorted(os.listdir(os.path.join(root, "_delta_log"))) == log_before
        assert os.path.isdir(outside) and os.path.isdir(root)
        # liveness: a regular, visible, unreferenced file by its real name is gone
        real_root = os.path.realpath(root)
        live_real = {os.path.realpath(os.path.join(root, p)) for p in live}
        for rel in _reachable(root):
            real = os.path.realpath(os.path.join(root, rel))
            if real.startswith(real_root + "/") and real not in live_real:
                real_rel = real[len(real_root) + 1 :]
                assert hidden_path(real_rel) or hidden_path(rel), rel
    finally:
        shutil.rmtree(base, ignore_errors=True)
