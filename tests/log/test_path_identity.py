"""What a file is (issue 24, items 5 and 6): every spelling of one data file in the log is
one file, live once, for log replay, both read paths, VACUUM's live set and conflict checks.

Hand-written logs over a real table: one data file added under several spellings (``x``,
``./x``, ``file:///root/x``, ``file:/root/x``, percent-encoded), names whose first segment
looks like a URI scheme (``data%3A1.parquet``, ``data:1.parquet``, ``s3:foo.parquet``,
``k=a/T10%3A00%3A00.parquet``), and a re-add under a new DV after a remove lacking the old
one. Each table is read through the core reader, ``format("pydelta")`` and ``read_delta``
(all must agree), deltalake where it reads the table right, VACUUM (a dry run lists nothing
live; a real one leaves the rows intact) and a conflict check (a concurrent remove under
another spelling of a file the transaction read is a conflict).
"""

from __future__ import annotations

import json
import os
import time
from urllib.parse import unquote

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from helpers import pydelta_read, spark_rows
from table_files import log_file, read_rows

from delta_pyds import read_delta
from delta_pyds.errors import ConcurrentModificationError
from delta_pyds.operations.vacuum import vacuum
from delta_pyds.protocol.deletion_vectors import inline_descriptor
from delta_pyds.table.snapshot import Snapshot
from delta_pyds.table.state import file_actions
from delta_pyds.transaction.checkpoint_writer import write_checkpoint
from delta_pyds.transaction.conflicts import ReadSet, WinningCommit, check
from delta_pyds.write.plan import commit_arrow

LATER = int(time.time() * 1000) + 2 * 86_400_000  # every unreferenced file is old enough


def _base(tmp_path, *, partitioned: bool = False, dv: bool = False) -> str:
    t = str(tmp_path / "t")
    data = {"id": pa.array([1, 2, 3], pa.int64())}
    opts = {}
    if partitioned:
        data["k"] = pa.array(["a", "a", "b"], pa.string())
        opts["partitionBy"] = "k"
    if dv:
        opts["delta.enableDeletionVectors"] = "true"
        opts["delta.enableChangeDataFeed"] = "true"
    commit_arrow(t, pa.table(data), options=opts)
    return t


def _data_file(t: str, name: str, ids: list[int]) -> int:
    """Writes the data file ``name`` (a decoded, root-relative name) and returns its size."""
    p = os.path.join(t, name)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    pq.write_table(pa.table({"id": pa.array(ids, pa.int64())}), p)
    return os.path.getsize(p)


def _add(path: str, size: int, *, pv: dict | None = None, dv: dict | None = None, n: int = 3) -> dict:
    a = {
        "path": path,
        "partitionValues": pv or {},
        "size": size,
        "modificationTime": 1,
        "dataChange": True,
        "stats": json.dumps({"numRecords": n}),
    }
    if dv is not None:
        a["deletionVector"] = dv
    return {"add": a}


def _commit(t: str, actions: list[dict]) -> None:
    version = Snapshot.load(t).version + 1
    with open(log_file(t, version), "w") as f:
        for a in [{"commitInfo": {"timestamp": 1, "operation": "WRITE"}}, *actions]:
            f.write(json.dumps(a) + "\n")


def _ids(table: pa.Table) -> list[int]:
    return sorted(table.column("id").to_pylist())


def _check_everywhere(spark, t: str, expected: list[int]) -> None:
    """Both read paths and the core reader give ``expected``; VACUUM keeps every live file."""
    assert _ids(read_rows(t)) == expected
    ds = sorted(r[0] for r in spark_rows(pydelta_read(spark, t).select("id")))
    native = sorted(r[0] for r in spark_rows(read_delta(spark, t).select("id")))
    assert ds == expected, "format('pydelta')"
    assert native == expected, "read_delta"
    snap = Snapshot.load(t)
    live = {os.path.realpath(snap.storage.resolve(p)) for p in snap.files.column("path").to_pylist()}
    dry = vacuum(snap, retention_hours=0, enforce_retention=False, now_ms=LATER)
    doomed = {os.path.realpath(os.path.join(t, f)) for f in dry.files}
    assert not doomed & live, f"VACUUM would delete live files: {sorted(doomed & live)}"
    vacuum(Snapshot.load(t), retention_hours=0, enforce_retention=False, dry_run=False, now_ms=LATER)
    assert _ids(read_rows(t)) == expected


def _conflicts(t: str, read_path: str, removed_as: str) -> bool:
    """Whether a transaction that read the file ``read_path`` (as the snapshot spells it)
    conflicts with a concurrent commit removing it spelled ``removed_as``."""
    winner = WinningCommit(version=99, removes=[{"path": removed_as, "dataChange": True}])
    try:
        check(
            [winner],
            read=ReadSet(paths={read_path}),
            removed_paths=set(),
            app_id=None,
            app_version=None,
            domains=set(),
            serializable=False,
            creating=False,
            root=Snapshot.load(t).storage.root,
        )
    except ConcurrentModificationError:
        return True
    return False


def _spellings(t: str, encoded: str) -> list[str]:
    return [
        encoded,
        f"./{encoded}",
        f"file://{t}/{encoded}",
        f"file:{t}/{encoded}",
        f"file:///{t.lstrip('/')}/./{encoded}",
    ]


@pytest.mark.parametrize("name", ["x.parquet", "a b.parquet", "sub/x.parquet"])
def test_one_file_added_under_every_spelling_is_read_once(spark, tmp_path, name):
    t = _base(tmp_path)
    size = _data_file(t, name, [10, 11])
    encoded = name.replace(" ", "%20")
    for spelling in _spellings(t, encoded):
        _commit(t, [_add(spelling, size, n=2)])
    snap = Snapshot.load(t)
    assert snap.files.column("path").to_pylist().count(name) == 1
    assert snap.files.num_rows == 2  # the base file and this one
    _check_everywhere(spark, t, [1, 2, 3, 10, 11])
    for a in _spellings(t, encoded):
        assert _conflicts(t, name, a), a
    # a remove under any other spelling removes it
    _commit(t, [{"remove": {"path": f"./{encoded}", "deletionTimestamp": 1, "dataChange": True}}])
    assert _ids(read_rows(t)) == [1, 2, 3]
    assert sorted(r[0] for r in spark_rows(read_delta(spark, t).select("id"))) == [1, 2, 3]


def test_only_dot_slash_spelling_is_live_for_vacuum(spark, tmp_path):
    # the only add names ./x: VACUUM must see x as live (it deleted it before)
    t = _base(tmp_path)
    size = _data_file(t, "x.parquet", [10, 11])
    _commit(t, [_add("./x.parquet", size, n=2)])
    _check_everywhere(spark, t, [1, 2, 3, 10, 11])
    assert os.path.exists(os.path.join(t, "x.parquet"))


@pytest.mark.parametrize(
    "raw",
    ["data%3A1.parquet", "data:1.parquet", "s3:foo.parquet", "s3%3Afoo.parquet", "T10%3A00%3A00.parquet"],
)
def test_names_that_look_like_a_uri_scheme_are_relative_files(spark, tmp_path, raw):
    t = _base(tmp_path)
    name = unquote(raw)
    size = _data_file(t, name, [10, 11])
    _commit(t, [_add(raw, size, n=2)])
    assert name in Snapshot.load(t).files.column("path").to_pylist()
    _check_everywhere(spark, t, [1, 2, 3, 10, 11])
    from deltalake import DeltaTable

    assert _ids(DeltaTable(t).to_pyarrow_table()) == [1, 2, 3, 10, 11]
    assert _conflicts(t, name, raw)
    assert _conflicts(t, name, f"file://{t}/{raw.replace(':', '%3A')}")


def test_time_named_file_in_a_partition_directory(spark, tmp_path):
    t = _base(tmp_path, partitioned=True)
    name = "k=c/T10:00:00.parquet"
    size = _data_file(t, name, [10, 11])
    _commit(t, [_add("k=c/T10%3A00%3A00.parquet", size, pv={"k": "c"}, n=2)])
    _check_everywhere(spark, t, [1, 2, 3, 10, 11])
    from deltalake import DeltaTable

    assert _ids(DeltaTable(t).to_pyarrow_table()) == [1, 2, 3, 10, 11]
    rows = spark_rows(read_delta(spark, t).where("k = 'c'").select("id", "k"))
    assert rows == [(10, "c"), (11, "c")]
    assert _conflicts(t, name, "./k=c/T10%3A00%3A00.parquet")


def test_readd_with_a_new_dv_after_a_remove_lacking_the_old_one_is_live_once(spark, tmp_path):
    t = _base(tmp_path, dv=True)
    size = _data_file(t, "x.parquet", [10, 11, 12])
    dv1 = inline_descriptor([0]).to_dict()  # hides 10
    dv2 = inline_descriptor([1]).to_dict()  # hides 11
    _commit(t, [_add("x.parquet", size, dv=dv1)])
    _commit(
        t,
        [
            {"remove": {"path": "x.parquet", "deletionTimestamp": 1, "dataChange": True}},
            _add("./x.parquet", size, dv=dv2),
        ],
    )
    files = Snapshot.load(t).files
    assert files.column("path").to_pylist().count("x.parquet") == 1
    _check_everywhere(spark, t, [1, 2, 3, 10, 12])
    # removing the live one (with its DV) leaves nothing of x: the superseded add stays dead
    _commit(t, [{"remove": {"path": "x.parquet", "deletionTimestamp": 1, "dataChange": True, "deletionVector": dv2}}])
    assert _ids(read_rows(t)) == [1, 2, 3]
    assert sorted(r[0] for r in spark_rows(pydelta_read(spark, t).select("id"))) == [1, 2, 3]


@pytest.mark.parametrize("checkpoint", [False, True])
def test_writers_remove_a_superseded_file_once(tmp_path, checkpoint):
    # the writer-side state (overwrite, DML, OPTIMIZE, restore) applies the same rule: after
    # an overwrite nothing of x is left, under either DV, and a checkpoint keeps x once
    t = _base(tmp_path, dv=True)
    size = _data_file(t, "x.parquet", [10, 11, 12])
    _commit(t, [_add("x.parquet", size, dv=inline_descriptor([0]).to_dict())])
    _commit(
        t,
        [
            {"remove": {"path": "x.parquet", "deletionTimestamp": 1, "dataChange": True}},
            _add("x.parquet", size, dv=inline_descriptor([1]).to_dict()),
        ],
    )
    if checkpoint:
        snap = Snapshot.load(t)
        write_checkpoint(snap.storage, snap.version)
        assert Snapshot.load(t).files.column("path").to_pylist().count("x.parquet") == 1
        assert _ids(read_rows(t)) == [1, 2, 3, 10, 12]
    state = file_actions(Snapshot.load(t)).active
    assert state.column("path").to_pylist().count("x.parquet") == 1
    commit_arrow(t, pa.table({"id": pa.array([7], pa.int64())}), mode="overwrite")
    assert _ids(read_rows(t)) == [7]


def test_remove_without_the_dv_keeps_the_dv_file_live_as_the_protocol_says(tmp_path):
    # (path, dvId) is the key: a remove lacking the DV does not cancel the add that has it
    t = _base(tmp_path, dv=True)
    size = _data_file(t, "x.parquet", [10, 11, 12])
    _commit(t, [_add("x.parquet", size, dv=inline_descriptor([0]).to_dict())])
    _commit(t, [{"remove": {"path": "./x.parquet", "deletionTimestamp": 1, "dataChange": True}}])
    assert _ids(read_rows(t)) == [1, 2, 3, 11, 12]


def test_change_feed_pairs_a_remove_and_an_add_under_other_spellings(tmp_path):
    # a DV delete whose remove spells the file ./x and whose add spells it file:///root/x is a
    # change of one file: only the newly deleted row is reported, not the whole file twice
    from delta_pyds.cdf.reader import read_changes

    t = _base(tmp_path, dv=True)
    size = _data_file(t, "x.parquet", [10, 11, 12])
    _commit(t, [_add("x.parquet", size)])
    _commit(
        t,
        [
            {"remove": {"path": "./x.parquet", "deletionTimestamp": 1, "dataChange": True}},
            _add(f"file://{t}/x.parquet", size, dv=inline_descriptor([1]).to_dict()),
        ],
    )
    props = Snapshot.load(t).configuration
    assert props.get("delta.enableChangeDataFeed") == "true"
    got = read_changes(t, starting_version=2, ending_version=2)
    assert sorted(zip(got.column("id").to_pylist(), got.column("_change_type").to_pylist())) == [(11, "delete")]


@pytest.mark.slow  # 6 Spark DML jobs per case
@pytest.mark.parametrize("dv", [False, True])
def test_dml_and_optimize_on_odd_spellings(spark, tmp_path, dv):
    # DELETE/UPDATE (copy-on-write and by DV) and OPTIMIZE over files spelled ./x, data%3A1 and
    # file:///root/k: each file is rewritten or removed once, both read paths agree after each
    from delta_pyds import DeltaTable

    t = _base(tmp_path, dv=dv)
    sizes = {n: _data_file(t, n, ids) for n, ids in (("x.parquet", [10, 11]), ("data:1.parquet", [20, 21]))}
    _commit(t, [_add("./x.parquet", sizes["x.parquet"], n=2), _add("data%3A1.parquet", sizes["data:1.parquet"], n=2)])
    _commit(t, [_add(f"file://{t}/x.parquet", sizes["x.parquet"], n=2)])  # x again: still one file
    dt = DeltaTable.forPath(spark, t)
    dt.delete("id IN (10, 20)")
    _check_everywhere(spark, t, [1, 2, 3, 11, 21])
    dt.update("id = 11", {"id": "111"})
    _check_everywhere(spark, t, [1, 2, 3, 21, 111])
    dt.optimize().executeCompaction()
    _check_everywhere(spark, t, [1, 2, 3, 21, 111])
    assert not any(":" in p for p in Snapshot.load(t).files.column("path").to_pylist())
