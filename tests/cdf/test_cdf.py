"""Change data feed, core (no Spark): per-version planning, DV diffs, ranges, errors,
and the change rows of the CDF test tables (expected rows derived from their logs, as
delta-kernel-rs' tests state them; cross-checked with deltalake's load_cdf where it
reads the table)."""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil

import pyarrow as pa
import pytest
from conftest import table_path

from delta_pyds.cdf.plan import ChangeFile, is_noop_merge, plan_changes, resolve_range, version_changes
from delta_pyds.cdf.reader import read_changes, selected_rows
from delta_pyds.errors import ChangeDataError, VersionNotFoundError
from delta_pyds.log.commits import CommitLog, FileAction
from delta_pyds.protocol.deletion_vectors import inline_descriptor
from delta_pyds.storage.store import Storage
from delta_pyds.table.snapshot import Snapshot


def changes(name, start=0, end=None, columns=None):
    t = read_changes(table_path(name), starting_version=start, ending_version=end)
    columns = columns or [c for c in t.column_names if c != "_commit_timestamp"]
    return sorted(tuple(r[c] for c in columns) for r in t.to_pylist())


def ids(kinds_by_version):
    """{version: {change_type: [ids]}} -> sorted (id, type, version) rows."""
    return sorted(
        (i, kind, v) for v, kinds in kinds_by_version.items() for kind, values in kinds.items() for i in values
    )


# ------------------------------------------------------------------ expected answers
def test_deletion_vectors_removed_and_restored():
    # 0 insert 0..9; 1 delete 0,9; 2 restore 0,9; 3 delete 0,1,4,5; 4 restore 1,4;
    # 5 restore 0,5 and delete 3; 6 restore 3  (each a DV change of the same file)
    expected = ids(
        {
            0: {"insert": range(10)},
            1: {"delete": [0, 9]},
            2: {"insert": [0, 9]},
            3: {"delete": [0, 1, 4, 5]},
            4: {"insert": [1, 4]},
            5: {"insert": [0, 5], "delete": [3]},
            6: {"insert": [3]},
        }
    )
    assert changes("kernel-rs/cdf-table-with-dv") == expected


@pytest.mark.parametrize("name", ["delta-rs/cdf-table", "kernel-rs/cdf-table"])
def test_partitioned_cdc_files(name):
    got = changes(name, columns=["id", "name", "birthday", "_change_type", "_commit_version"])
    d = dt.date
    inserts = [
        (1, "Steve", d(2023, 12, 22)),
        (2, "Bob", d(2023, 12, 23)),
        (3, "Dave", d(2023, 12, 23)),
        (4, "Kate", d(2023, 12, 23)),
        (5, "Emily", d(2023, 12, 24)),
        (6, "Carl", d(2023, 12, 24)),
        (7, "Dennis", d(2023, 12, 24)),
        (8, "Claire", d(2023, 12, 25)),
        (9, "Ada", d(2023, 12, 25)),
        (10, "Borb", d(2023, 12, 25)),
    ]
    expected = [r + ("insert", 0) for r in inserts]
    for i, n in ((2, "Bob"), (3, "Dave"), (4, "Kate")):
        expected += [(i, n, d(2023, 12, 23), "update_preimage", 1), (i, n, d(2023, 12, 22), "update_postimage", 1)]
    for i, n in ((5, "Emily"), (6, "Carl"), (7, "Dennis")):
        expected += [(i, n, d(2023, 12, 24), "update_preimage", 2), (i, n, d(2023, 12, 29), "update_postimage", 2)]
    expected.append((7, "Dennis", d(2023, 12, 29), "delete", 3))
    assert got == sorted(expected)


def test_version_ranges_of_a_simple_table():
    name = "kernel-rs/cdf-table-simple"
    assert changes(name, 0, 0) == ids({0: {"insert": range(10)}})
    assert changes(name, 1, 1) == ids({1: {"delete": range(10)}})
    assert changes(name, 2, 2) == ids({2: {"insert": range(20, 25)}})
    assert changes(name, 0, 2) == ids(
        {0: {"insert": range(10)}, 1: {"delete": range(10)}, 2: {"insert": range(20, 25)}}
    )
    assert changes(name, 1, 99) == changes(name, 1, 2)  # an ending version past the latest is capped


@pytest.mark.parametrize(
    "name,expected",
    [
        (
            "kernel-rs/cdf-table-update-ops",
            {0: {"insert": range(10)}, 1: {"update_pre": range(20, 25)}, 2: {"update_post": range(30, 35)}},
        ),
        ("kernel-rs/cdf-table-data-change", {0: {"insert": range(10)}}),  # dataChange=false is no change
        ("kernel-rs/cdf-table-delete-unconditional", {0: {"insert": range(10)}, 1: {"delete": range(10)}}),
        ("kernel-rs/cdf-table-delete-conditional-all-rows", {0: {"insert": range(10)}, 1: {"delete": range(10)}}),
        ("kernel-rs/cdf-table-delete-conditional-two-rows", {0: {"insert": range(10)}, 1: {"delete": [2, 8]}}),
    ],
)
def test_change_types_of_simple_tables(name, expected):
    assert changes(name) == ids(expected)


def test_partition_columns_of_cdc_files():
    got = changes("kernel-rs/cdf-table-partitioned", columns=["id", "text", "part", "_change_type", "_commit_version"])
    expected = [(i, "old", i % 2, "insert", 0) for i in range(6)]
    expected += [(3, "old", 1, "delete", 1), (1, "old", 1, "update_preimage", 1), (1, "new", 1, "update_postimage", 1)]
    expected += [(i, "old", 0, "delete", 2) for i in (0, 2, 4)]
    assert got == sorted(expected)


def test_column_names_with_dots_and_backticks():
    got = changes("kernel-rs/cdf-table-backtick-column-names")
    struct = {"field": 1, "field.one": 2}
    assert [r[:2] for r in got] == [(1, 10), (2, 10), (3, 10), (4, 10), (5, 10)]
    assert all(r[2] == struct and r[3] == "insert" for r in got)
    assert sorted((r[0], r[4]) for r in got) == [(1, 1), (2, 0), (3, 1), (4, 0), (5, 1)]


@pytest.mark.parametrize(
    "name,expected",
    [
        (
            "kernel-rs/cdf-column-mapping-name-mode",
            [
                (1, "Alice", 100.0, "delete", 4),
                (2, "Bob", 200.0, "update_preimage", 2),
                (2, "Bob", 250.0, "update_postimage", 2),
                (4, "David", 400.0, "insert", 3),
            ],
        ),
        (
            "kernel-rs/cdf-column-mapping-name-mode-3-7",
            [
                (1, "Alice", 100.0, "delete", 4),
                (2, "Bob", 200.0, "update_preimage", 2),
                (2, "Bob", 250.0, "update_postimage", 2),
                (4, "David", 400.0, "insert", 3),
            ],
        ),
        (
            "kernel-rs/cdf-column-mapping-id-mode",
            [
                (2, "Frank", 250.0, "update_preimage", 2),
                (2, "Frank", 275.0, "update_postimage", 2),
                (3, "Grace", 350.0, "delete", 4),
                (4, "Henry", 450.0, "insert", 3),
            ],
        ),
    ],
)
def test_column_mapping(name, expected):
    # CDF was enabled at version 1 of these tables
    assert changes(name, start=1) == sorted(expected)


def test_cdc_files_and_deletion_vectors_in_one_table():
    got = changes("kernel-rs/cdf-table-with-cdc-and-dvs")
    assert len(got) == 43
    assert (3, "insert1-delete1", "delete", 2) in got and (3, "insert1-delete1", "insert", 4) in got
    assert (11, "", "update_postimage", 20) in got
    assert sorted(r for r in got if r[3] == 24) == sorted(
        [
            (3, "update1", "delete", 24),
            (4, "insert1-delete2", "delete", 24),
            (5, "insert2", "delete", 24),
            (2, "update2", "delete", 24),
            (6, "insert3", "delete", 24),
            (9, "merge1-update", "delete", 24),
        ]
    )


DELTALAKE_TABLES = [
    "delta-rs/cdf-table",
    "delta-rs/cdf-table-non-partitioned",
    "delta-rs/cdc_ict_table",
    "delta-rs/cdf-table-with-cdc-and-dvs",
    "delta-rs/simple_table_with_cdc",
    "kernel-rs/cdf-table-with-dv",
    "kernel-rs/cdf-table-non-partitioned",
]


@pytest.mark.parametrize("name", DELTALAKE_TABLES + ["delta-rs/checkpoint-cdf-table@3"])
def test_same_changes_as_deltalake(name):
    from deltalake import DeltaTable

    name, _, start = name.partition("@")
    start = int(start or 0)
    path = table_path(name)
    ref = pa.table(DeltaTable(path).load_cdf(starting_version=start).read_all())
    columns = [c for c in ref.column_names if c != "_commit_timestamp"]
    expected = sorted(tuple(r[c] for c in columns) for r in ref.to_pylist())
    assert changes(name, start, columns=columns) == expected


def test_mapping_mode_without_the_feature_keys_partition_values_as_the_scan_does(tmp_path):
    # deltalake 1.6.6 sets delta.columnMapping.mode=name (and physical names in the schema) but
    # leaves columnMapping out of the protocol: files and partition values use logical names, as
    # the scan reads them; the change feed read its partition values under the physical names (NULL)
    from deltalake import DeltaTable, write_deltalake

    from delta_pyds.read.options import StreamOptions
    from delta_pyds.streaming.source import StreamSource

    path = str(tmp_path / "t")
    data = pa.table({"id": pa.array([1, 2, 3, 4], pa.int64()), "p": ["a", "b", "a", "b"], "v": [10, 20, 30, 40]})
    conf = {
        "delta.columnMapping.mode": "name",
        "delta.enableChangeDataFeed": "true",
        "delta.enableDeletionVectors": "true",
    }
    write_deltalake(path, data, partition_by=["p"], configuration=conf)
    dl = DeltaTable(path)
    dl.delete("id = 1")
    dl.update(updates={"v": "v + 1"}, predicate="id = 2")
    snap = Snapshot.load(path)
    assert snap.column_mapping_mode == "none" and "columnMapping" not in (snap.protocol.writer_features or ())
    assert snap.configuration["delta.columnMapping.mode"] == "name"
    ref = pa.table(dl.load_cdf(starting_version=0).read_all())
    columns = ["id", "p", "v", "_change_type", "_commit_version"]
    expected = sorted(tuple(r[c] for c in columns) for r in ref.to_pylist())
    assert all(r[1] in ("a", "b") for r in expected)
    got = read_changes(path, starting_version=0)
    assert sorted(tuple(r[c] for c in columns) for r in got.to_pylist()) == expected
    # a change-feed stream's commit-by-commit files carry the partition values under the same keys
    source = StreamSource(Storage(path), snap, StreamOptions.parse({"readchangefeed": "true", "startingversion": "1"}))
    start = source.initial_offset()
    items = source.batch_files(start, source.latest_offset(start, None))
    assert items and all(tuple(f.partition_values) in (("a",), ("b",)) for f in items)


# ---------------------------------------------------------------- commit timestamps
def test_in_commit_timestamps_are_commit_timestamps():
    path = table_path("delta-rs/cdc_ict_table")
    t = read_changes(path, starting_version=0)
    by_version = {}
    for v in range(4):
        with open(os.path.join(path, "_delta_log", f"{v:020d}.json")) as f:
            info = json.loads(f.readline())["commitInfo"]
        by_version[v] = info["inCommitTimestamp"]
    for r in t.to_pylist():
        got = r["_commit_timestamp"]
        assert int(got.timestamp() * 1000) == by_version[r["_commit_version"]]
        assert got.tzinfo is not None


def test_timestamps_select_versions(copy_table):
    path = copy_table("kernel-rs/cdf-table-simple")
    base = 1_700_000_000
    for v in range(3):
        os.utime(os.path.join(path, "_delta_log", f"{v:020d}.json"), (base + 100 * v,) * 2)
    log = CommitLog(Storage(path))

    def iso(s):
        return dt.datetime.fromtimestamp(s, dt.timezone.utc).isoformat()

    assert resolve_range(log, starting_timestamp=iso(base + 50)) == (1, 2)  # first commit at or after
    assert resolve_range(log, starting_timestamp=iso(base + 100)) == (1, 2)
    assert resolve_range(log, starting_version=0, ending_timestamp=iso(base + 150)) == (0, 1)
    assert resolve_range(log, starting_timestamp=iso(base + 110), ending_timestamp=iso(base + 150)) == (2, 1)
    assert plan_changes(Storage(path), start=2, end=1).files == []  # between two commits: empty
    with pytest.raises(VersionNotFoundError, match="after the latest commit"):
        resolve_range(log, starting_timestamp=iso(base + 1000))
    t = read_changes(path, starting_version=0)
    assert {(r["_commit_version"], int(r["_commit_timestamp"].timestamp())) for r in t.to_pylist()} == {
        (0, base),
        (1, base + 100),
        (2, base + 200),
    }


# ------------------------------------------------------------------ refused ranges
def test_range_where_cdf_was_off_is_refused():
    with pytest.raises(ChangeDataError, match="not recorded for version 2"):
        read_changes(table_path("kernel-rs/table-with-cdf"), starting_version=0)
    with pytest.raises(ChangeDataError, match="not recorded for version 0"):
        read_changes(table_path("kernel-rs/cdf-column-mapping-name-mode"), starting_version=0)


def test_commits_removed_by_log_cleanup_are_refused():
    with pytest.raises(VersionNotFoundError, match="no longer in the log.*earliest commit still available is 3"):
        read_changes(table_path("delta-rs/checkpoint-cdf-table"), starting_version=0)


@pytest.mark.parametrize(
    "kwargs,error,message",
    [
        ({"starting_version": 9}, VersionNotFoundError, "after the latest version"),
        ({"starting_version": 2, "ending_version": 1}, ValueError, "before the starting version"),
        ({}, ValueError, "startingVersion or startingTimestamp"),
    ],
)
def test_bad_ranges(kwargs, error, message):
    with pytest.raises(error, match=message):
        read_changes(table_path("kernel-rs/cdf-table-simple"), **kwargs)


def test_vacuumed_change_files_are_a_clear_error(copy_table):
    path = copy_table("delta-rs/cdf-table")
    shutil.rmtree(os.path.join(path, "_change_data"))
    with pytest.raises(ChangeDataError, match="version 1.*VACUUM"):
        read_changes(path, starting_version=1)
    assert len(read_changes(path, starting_version=0, ending_version=0)) == 10  # still readable


def test_column_rename_inside_the_range_is_refused(copy_table):
    path = copy_table("kernel-rs/cdf-column-mapping-name-mode")
    log_dir = os.path.join(path, "_delta_log")
    meta = None
    for v in range(5):  # the latest metaData action, copied into a new commit 5 with a rename
        with open(os.path.join(log_dir, f"{v:020d}.json")) as f:
            meta = next((json.loads(x) for x in f if '"metaData"' in x), meta)
    schema = json.loads(meta["metaData"]["schemaString"])
    schema["fields"][1]["name"] = "renamed"
    meta["metaData"]["schemaString"] = json.dumps(schema)
    with open(os.path.join(log_dir, f"{5:020d}.json"), "w") as f:
        f.write(json.dumps(meta) + "\n")
    with pytest.raises(ChangeDataError, match="renamed"):
        read_changes(path, starting_version=1)
    assert len(read_changes(path, starting_version=5)) == 0  # after the rename: fine


# ------------------------------------------------------------ per-version planning
def _add(path, dv=None, data_change=True):
    return FileAction("add", path, 10, (), data_change, dv)


def _remove(path, dv=None, data_change=True):
    return FileAction("remove", path, 10, (), data_change, dv)


def test_cdc_files_win_over_adds_and_removes():
    files = version_changes(3, 0, [_add("a"), FileAction("cdc", "c", 5, (), False), _remove("b")])
    assert [(f.path, f.change_type) for f in files] == [("c", None)]


def test_adds_and_removes_without_cdc_files():
    files = version_changes(
        3, 7, [_add("a"), _remove("b"), _add("x", data_change=False), _remove("y", data_change=False)]
    )
    assert [(f.path, f.change_type, f.version, f.timestamp) for f in files] == [
        ("a", "insert", 3, 7),
        ("b", "delete", 3, 7),
    ]


def test_same_file_removed_and_added_yields_dv_differences():
    d1 = inline_descriptor([0, 1, 4, 5]).to_dict()
    d2 = inline_descriptor([0, 5, 7]).to_dict()
    files = version_changes(1, 0, [_remove("f", d1), _add("f", d2)])
    by_type = {f.change_type: f for f in files}
    storage = Storage("/nonexistent")  # inline DVs need no storage
    assert selected_rows(storage, by_type["delete"]).tolist() == [7]  # in the new DV only
    assert selected_rows(storage, by_type["insert"]).tolist() == [1, 4]  # restored
    only_new = version_changes(1, 0, [_remove("f"), _add("f", d1)])
    assert [(f.change_type, selected_rows(storage, f).tolist()) for f in only_new] == [("delete", [0, 1, 4, 5])]
    only_old = version_changes(1, 0, [_remove("f", d1), _add("f")])
    assert [(f.change_type, selected_rows(storage, f).tolist()) for f in only_old] == [("insert", [0, 1, 4, 5])]
    assert version_changes(1, 0, [_remove("f"), _add("f")]) == []  # rewritten as is: no change
    assert version_changes(1, 0, [_remove("f", d1), _add("f", d1)]) == []


def test_noop_merge_yields_nothing():
    info = {
        "operation": "MERGE",
        "operationMetrics": {"numTargetRowsInserted": "0", "numTargetRowsUpdated": "0", "numTargetRowsDeleted": "0"},
    }
    assert is_noop_merge(info)
    assert version_changes(1, 0, [_remove("a"), _add("b")], info) == []
    info["operationMetrics"]["numTargetRowsUpdated"] = "2"
    assert len(version_changes(1, 0, [_remove("a"), _add("b")], info)) == 2


def test_change_file_reads_only_selected_rows(tmp_path):
    import pyarrow.parquet as pq
    from deltalake import write_deltalake

    from delta_pyds.cdf.reader import change_read_spec, read_change_file, with_cdf_columns
    from delta_pyds.table.snapshot import Snapshot

    path = str(tmp_path / "t")
    write_deltalake(
        path, pa.table({"id": pa.array(range(100), pa.int64())}), configuration={"delta.enableChangeDataFeed": "true"}
    )
    snapshot = Snapshot.load(path)
    file = snapshot.files.column("path")[0].as_py()
    spec = change_read_spec(snapshot.storage, snapshot, with_cdf_columns(snapshot.schema), batch_rows=7)
    f = ChangeFile(
        file,
        1,
        (),
        "delete",
        4,
        1000,
        selected=inline_descriptor([3, 50, 99]).to_dict(),
        excluded=inline_descriptor([50]).to_dict(),
    )
    rows = pa.Table.from_batches(list(read_change_file(spec, f))).to_pylist()
    assert [(r["id"], r["_change_type"], r["_commit_version"]) for r in rows] == [(3, "delete", 4), (99, "delete", 4)]
    assert rows[0]["_commit_timestamp"] == dt.datetime(1970, 1, 1, 0, 0, 1, tzinfo=dt.timezone.utc)
    assert pq.ParquetFile(os.path.join(path, file)).metadata.num_rows == 100
