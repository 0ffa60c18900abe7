"""Bad-input corpus (issue 9): real tables from tests/data, broken on purpose in a
temporary copy. Each breakage must produce its *named* error — a
:mod:`delta_pyds.errors` subclass whose message names the file, version, option or
feature — or, where the protocol says so, be tolerated with the right answer. Never a
raw traceback from deep inside, never silently wrong rows."""

from __future__ import annotations

import json
import os
import re
import shutil

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import table_path
from helpers import deltalake_table
from table_files import (
    copy,
    edit_actions,
    file_paths,
    latest_commit,
    log_file,
    memory_cap,
    read_lines,
    read_rows,
    write_lines,
)

from delta_pyds.errors import (
    ColumnTypeError,
    CorruptCheckpointError,
    CorruptLogError,
    DataFileError,
    DeletionVectorError,
    DeltaError,
    TableNotFoundError,
    UnsupportedFeatureError,
)
from delta_pyds.protocol.schema import to_arrow_schema
from delta_pyds.read.file_reader import ReadSpec, read_file
from delta_pyds.read.options import ReadOptions
from delta_pyds.read.scan import FileTask
from delta_pyds.storage.store import Storage
from delta_pyds.table.snapshot import Snapshot

SIMPLE = "delta-rs/simple_table"  # 5 commits, no checkpoint, no partitions
CHECKPOINTED = "delta-rs/simple_table_with_checkpoint"  # checkpoint at 10, commits 0..10
MULTI_PART = "kernel-rs/v1-multi-part-struct-stats-only"  # 3-part checkpoint at 5
V2_SIDECARS = "kernel-rs/v2-checkpoints-json-with-sidecars"  # v2 checkpoints 1..6 with sidecars
DV_TABLE = "delta-rs/table-with-dv-small"  # one file, DV deleting 2 of 10 rows
PARTITIONED = "delta-rs/delta-0.8.0-partitioned"


@pytest.fixture(autouse=True)
def _no_foreign_exceptions():
    """Every failure in this file must be a DeltaError or a ValueError (options)."""
    yield


# ------------------------------------------------------------ commits: JSON shape
def test_baselines(tmp_path):
    t = copy(tmp_path, SIMPLE)
    assert Snapshot.load(t).version == 4
    assert len(file_paths(t)) == 5
    assert read_rows(copy(tmp_path, DV_TABLE)).num_rows == 8


def test_truncated_last_commit_line(tmp_path):
    t = copy(tmp_path, SIMPLE)
    path = latest_commit(t)
    data = open(path, "rb").read().rstrip(b"\n")
    open(path, "wb").write(data[:-15])  # a writer died mid-line (non-atomic store)
    with pytest.raises(CorruptLogError, match=r"00000000000000000004\.json") as exc:
        Snapshot.load(t).files
    assert "JSON" in str(exc.value)
    # earlier versions stay readable
    assert Snapshot.load(t, version=3).version == 3
    file_paths(t, version=3)


def test_invalid_json_line(tmp_path):
    t = copy(tmp_path, SIMPLE)
    path = log_file(t, 2)
    lines = read_lines(path)
    lines.insert(1, '{"add": {"path": "x.parquet", "size": 1,,}}')
    write_lines(path, lines)
    with pytest.raises(CorruptLogError, match=r"line 2 in .*00000000000000000002\.json is not valid JSON"):
        Snapshot.load(t).files


def test_invalid_json_in_protocol_line(tmp_path):
    t = copy(tmp_path, SIMPLE)
    path = log_file(t, 0)
    lines = read_lines(path)
    lines = [line[:-3] if '"protocol"' in line else line for line in lines]
    write_lines(path, lines)
    with pytest.raises(CorruptLogError, match=r"00000000000000000000\.json is not valid JSON"):
        Snapshot.load(t)


def test_commit_that_is_a_json_array(tmp_path):
    t = copy(tmp_path, SIMPLE)
    path = log_file(t, 3)
    actions = [json.loads(line) for line in read_lines(path)]
    write_lines(path, [json.dumps(actions)])
    with pytest.raises(CorruptLogError, match=r"00000000000000000003\.json is not a JSON object"):
        Snapshot.load(t).files


def test_commit_line_that_is_a_scalar(tmp_path):
    t = copy(tmp_path, SIMPLE)
    path = log_file(t, 1)
    write_lines(path, read_lines(path) + ["42"])
    with pytest.raises(CorruptLogError, match=r"00000000000000000001\.json is not a JSON object"):
        Snapshot.load(t).files


def test_blank_lines_and_missing_final_newline_are_tolerated(tmp_path):
    t = copy(tmp_path, SIMPLE)
    expected = file_paths(t)
    path = log_file(t, 2)
    lines = read_lines(path)
    write_lines(path, [""] + lines[:1] + ["", "  "] + lines[1:], final_newline=False)
    assert file_paths(t) == expected


def test_empty_commit_file_is_an_empty_commit(tmp_path):
    # an empty commit carries no actions: the state is the previous version's
    t = copy(tmp_path, SIMPLE)
    before = file_paths(t, version=3)
    expected = file_paths(t)
    open(log_file(t, 3), "w").close()
    snap = Snapshot.load(t, version=3)
    assert snap.version == 3
    assert set(snap.files.column("path").to_pylist()) == file_paths(t, version=2)
    assert before  # sanity
    assert expected


def test_missing_protocol(tmp_path):
    t = copy(tmp_path, SIMPLE)
    edit_actions(log_file(t, 0), lambda acts: [a for a in acts if "protocol" not in a])
    with pytest.raises(CorruptLogError, match="no protocol action found for version 4"):
        Snapshot.load(t)


def test_missing_metadata(tmp_path):
    t = copy(tmp_path, SIMPLE)
    edit_actions(log_file(t, 0), lambda acts: [a for a in acts if "metaData" not in a])
    with pytest.raises(CorruptLogError, match="no metaData action found for version 4"):
        Snapshot.load(t)


def test_malformed_protocol_and_metadata(tmp_path):
    t = copy(tmp_path, SIMPLE)
    path = log_file(t, 0)
    original = read_lines(path)
    edit_actions(path, lambda acts: [{"protocol": {"minReaderVersion": "one"}} if "protocol" in a else a for a in acts])
    with pytest.raises(CorruptLogError, match=r"malformed protocol action in .*00000000000000000000\.json"):
        Snapshot.load(t)
    write_lines(path, original)
    edit_actions(path, lambda acts: [{"metaData": {"id": "x"}} if "metaData" in a else a for a in acts])
    with pytest.raises(CorruptLogError, match=r"malformed metaData action in .*00000000000000000000\.json"):
        Snapshot.load(t)
    write_lines(path, original)
    edit_actions(
        path,
        lambda acts: [
            {"metaData": {**a["metaData"], "schemaString": "{not json"}} if "metaData" in a else a for a in acts
        ],
    )
    with pytest.raises(DeltaError):
        Snapshot.load(t)


def test_unsupported_reader_feature_names_the_feature(tmp_path):
    t = copy(tmp_path, SIMPLE)
    edit_actions(
        log_file(t, 0),
        lambda acts: [
            {
                "protocol": {
                    "minReaderVersion": 3,
                    "minWriterVersion": 7,
                    "readerFeatures": ["fancyNewThing"],
                    "writerFeatures": ["fancyNewThing"],
                }
            }
            if "protocol" in a
            else a
            for a in acts
        ],
    )
    with pytest.raises(UnsupportedFeatureError, match="fancyNewThing") as exc:
        Snapshot.load(t)
    assert "fancyNewThing" in exc.value.features


def test_duplicate_add_in_one_commit_is_reconciled(tmp_path):
    t = copy(tmp_path, SIMPLE)
    expected = file_paths(t)
    path = log_file(t, 4)
    lines = read_lines(path)
    adds = [line for line in lines if line.startswith('{"add"')]
    assert adds
    write_lines(path, lines + adds)
    snap = Snapshot.load(t)
    assert snap.files.num_rows == len(expected)  # one row per logical file, not per action
    assert set(snap.files.column("path").to_pylist()) == expected


def test_gap_in_versions(tmp_path):
    t = copy(tmp_path, SIMPLE)
    os.remove(log_file(t, 2))
    with pytest.raises(CorruptLogError, match=r"missing commit 00000000000000000002\.json"):
        Snapshot.load(t)
    # versions before the gap are still readable
    assert Snapshot.load(t, version=1).version == 1


def test_no_commit_zero_and_no_checkpoint(tmp_path):
    from delta_pyds.errors import VersionNotFoundError

    t = copy(tmp_path, SIMPLE)
    os.remove(log_file(t, 0))
    with pytest.raises(VersionNotFoundError, match="commit 0"):
        Snapshot.load(t)


def test_empty_log_dir_is_not_a_table(tmp_path):
    t = copy(tmp_path, SIMPLE)
    shutil.rmtree(os.path.join(t, "_delta_log"))
    os.mkdir(os.path.join(t, "_delta_log"))
    with pytest.raises(TableNotFoundError, match="no commits"):
        Snapshot.load(t)


def test_unknown_actions_and_fields_are_tolerated(tmp_path):
    t = copy(tmp_path, SIMPLE)
    expected = file_paths(t)
    path = log_file(t, 4)

    def mutate(acts):
        out = [{"futureAction": {"x": 1, "nested": {"a": [1, 2]}}}]
        for a in acts:
            if "add" in a:
                a = {"add": {**a["add"], "someNewField": {"k": "v"}, "anotherOne": [1]}, "topLevelExtra": 3}
            if "remove" in a:
                a = {"remove": {**a["remove"], "unknownRemoveField": True}}
            out.append(a)
        out.append({"commitInfo": {"whatever": [1, {"x": None}]}})
        return out

    edit_actions(path, mutate)
    assert file_paths(t) == expected


@pytest.mark.parametrize(
    "field_name, value, what",
    [
        ("size", "429", None),  # a numeric string is coerced, like a JSON reader would
        ("size", "big", "expected an integer"),
        ("size", 4.5, "expected an integer"),
        ("size", [1], "expected an integer"),
        ("partitionValues", "not-an-object", "expected an object"),
        ("partitionValues", [1, 2], "expected an object"),
        ("dataChange", "yes", "expected a boolean"),
        ("deletionVector", "x", "expected an object"),
        ("modificationTime", {"a": 1}, "expected an integer"),
    ],
)
def test_wrong_types_in_add(tmp_path, field_name, value, what):
    t = copy(tmp_path, SIMPLE)
    expected = file_paths(t)
    path = log_file(t, 4)

    def mutate(acts):
        first = True
        out = []
        for a in acts:
            if "add" in a and first:
                a = {"add": {**a["add"], field_name: value}}
                first = False
            out.append(a)
        return out

    edit_actions(path, mutate)
    if what is None:
        assert file_paths(t) == expected
    else:
        with pytest.raises(CorruptLogError, match=rf"00000000000000000004\.json.*{what}"):
            Snapshot.load(t).files


def test_stats_not_a_string_is_kept_as_json_text(tmp_path):
    # stats must be a JSON string; an object is tolerated as its JSON text, and skipping
    # stays correct (it parses the text like any other stats string)
    t = copy(tmp_path, SIMPLE)
    path = log_file(t, 4)
    edit_actions(
        path, lambda acts: [{"add": {**a["add"], "stats": {"numRecords": 1}}} if "add" in a else a for a in acts]
    )
    files = Snapshot.load(t).files
    stats = [s for s in files.column("stats").to_pylist() if s is not None]
    assert stats and all(json.loads(s) == {"numRecords": 1} for s in stats)


def test_add_without_path(tmp_path):
    t = copy(tmp_path, SIMPLE)
    edit_actions(
        log_file(t, 4),
        lambda acts: acts + [{"add": {"size": 3, "partitionValues": {}, "modificationTime": 1, "dataChange": True}}],
    )
    with pytest.raises(CorruptLogError, match="no path"):
        Snapshot.load(t).files


def test_partition_value_types_wrong_in_partitioned_table(tmp_path):
    t = copy(tmp_path, PARTITIONED)
    path = latest_commit(t)
    edit_actions(
        path, lambda acts: [{"add": {**a["add"], "partitionValues": ["2020", "1"]}} if "add" in a else a for a in acts]
    )
    with pytest.raises(CorruptLogError, match="expected an object"):
        Snapshot.load(t).files


# ------------------------------------------------------------ checkpoints
def test_checkpoint_garbage_falls_back_to_commits(tmp_path):
    t = copy(tmp_path, CHECKPOINTED)
    expected = file_paths(t)
    with open(log_file(t, 10, "checkpoint.parquet"), "wb") as f:
        f.write(b"this is not parquet at all")
    assert file_paths(t) == expected


def test_checkpoint_truncated_falls_back_to_commits(tmp_path):
    t = copy(tmp_path, CHECKPOINTED)
    expected = file_paths(t)
    cp = log_file(t, 10, "checkpoint.parquet")
    data = open(cp, "rb").read()
    open(cp, "wb").write(data[: len(data) // 2])
    assert file_paths(t) == expected
    assert read_rows(t).num_rows == read_rows(table_path(CHECKPOINTED)).num_rows


def test_checkpoint_garbage_without_commits_is_a_clear_error(tmp_path):
    t = copy(tmp_path, CHECKPOINTED)
    for v in range(10):
        os.remove(log_file(t, v))
    assert file_paths(t)  # the intact checkpoint alone is enough
    with open(log_file(t, 10, "checkpoint.parquet"), "wb") as f:
        f.write(b"PAR1 garbage PAR1")
    with pytest.raises(CorruptCheckpointError, match=r"00000000000000000010\.checkpoint\.parquet"):
        Snapshot.load(t).files


def test_last_checkpoint_garbage_is_ignored(tmp_path):
    t = copy(tmp_path, CHECKPOINTED)
    expected = file_paths(t)
    with open(os.path.join(t, "_delta_log", "_last_checkpoint"), "w") as f:
        f.write("{{{ garbage")
    assert file_paths(t) == expected


def test_last_checkpoint_pointing_to_missing_checkpoint_is_ignored(tmp_path):
    t = copy(tmp_path, CHECKPOINTED)
    expected = file_paths(t)
    with open(os.path.join(t, "_delta_log", "_last_checkpoint"), "w") as f:
        f.write(json.dumps({"version": 99, "size": 3}))
    assert file_paths(t) == expected
    os.remove(log_file(t, 10, "checkpoint.parquet"))
    with open(os.path.join(t, "_delta_log", "_last_checkpoint"), "w") as f:
        f.write(json.dumps({"version": 10, "size": 3}))
    assert file_paths(t) == expected


def test_multi_part_checkpoint_with_missing_part(tmp_path):
    t = copy(tmp_path, MULTI_PART)
    expected = file_paths(t)
    os.remove(os.path.join(t, "_delta_log", "00000000000000000005.checkpoint.0000000002.0000000003.parquet"))
    assert file_paths(t) == expected  # incomplete checkpoint: not used, commits replayed
    for v in range(5):
        os.remove(log_file(t, v))
    from delta_pyds.errors import VersionNotFoundError

    with pytest.raises(
        VersionNotFoundError, match="commit 0 is gone.*checkpoint.* at version 5 exist but are incomplete"
    ):
        Snapshot.load(t).files


def test_multi_part_checkpoint_with_corrupt_part(tmp_path):
    t = copy(tmp_path, MULTI_PART)
    expected = file_paths(t)
    with open(
        os.path.join(t, "_delta_log", "00000000000000000005.checkpoint.0000000003.0000000003.parquet"), "wb"
    ) as f:
        f.write(b"garbage")
    assert file_paths(t) == expected


def test_v2_checkpoint_with_missing_sidecar(tmp_path):
    t = copy(tmp_path, V2_SIDECARS)
    expected = file_paths(t)
    sidecars = os.path.join(t, "_delta_log", "_sidecars")
    for name in os.listdir(sidecars):
        if name.startswith("00000000000000000006."):
            os.remove(os.path.join(sidecars, name))
            break
    assert file_paths(t) == expected  # falls back to the v5 checkpoint + commit 6
    # without the commits, the missing sidecar is a clear error naming it
    for v in range(7):
        os.remove(log_file(t, v))
        for other in os.listdir(os.path.join(t, "_delta_log")):
            if other.startswith(f"{v:020d}.checkpoint") and v < 6:
                os.remove(os.path.join(t, "_delta_log", other))
    with pytest.raises(CorruptCheckpointError, match=r"_sidecars/00000000000000000006\.checkpoint.*missing"):
        Snapshot.load(t).files


# ------------------------------------------------------------ deletion vectors
def _dv_file(t: str) -> str:
    return next(os.path.join(t, n) for n in os.listdir(t) if n.startswith("deletion_vector_"))


def test_dv_bad_checksum(tmp_path):
    t = copy(tmp_path, DV_TABLE)
    path = _dv_file(t)
    data = bytearray(open(path, "rb").read())
    data[-1] ^= 0xFF  # the stored CRC-32
    open(path, "wb").write(bytes(data))
    with pytest.raises(DeletionVectorError, match=r"deletion_vector_.*\.bin.*checksum mismatch"):
        read_rows(t)


def test_dv_bad_payload(tmp_path):
    t = copy(tmp_path, DV_TABLE)
    path = _dv_file(t)
    data = bytearray(open(path, "rb").read())
    data[12] ^= 0xFF  # inside the bitmap: the checksum catches it
    open(path, "wb").write(bytes(data))
    with pytest.raises(DeletionVectorError, match="checksum mismatch"):
        read_rows(t)


def test_dv_out_of_range_offset(tmp_path):
    t = copy(tmp_path, DV_TABLE)
    edit_actions(
        log_file(t, 1),
        lambda acts: [
            {"add": {**a["add"], "deletionVector": {**a["add"]["deletionVector"], "offset": 10_000}}}
            if "add" in a
            else a
            for a in acts
        ],
    )
    with pytest.raises(DeletionVectorError, match=r"deletion_vector_.*out of range"):
        read_rows(t)


def test_dv_negative_offset(tmp_path):
    t = copy(tmp_path, DV_TABLE)
    edit_actions(
        log_file(t, 1),
        lambda acts: [
            {"add": {**a["add"], "deletionVector": {**a["add"]["deletionVector"], "offset": -5}}} if "add" in a else a
            for a in acts
        ],
    )
    with pytest.raises(DeletionVectorError, match="non-negative"):
        read_rows(t)


def test_dv_missing_file(tmp_path):
    t = copy(tmp_path, DV_TABLE)
    os.remove(_dv_file(t))
    with pytest.raises(DeletionVectorError, match=r"deletion_vector_.*does not exist"):
        read_rows(t)


def test_dv_cardinality_mismatch(tmp_path):
    t = copy(tmp_path, DV_TABLE)
    edit_actions(
        log_file(t, 1),
        lambda acts: [
            {"add": {**a["add"], "deletionVector": {**a["add"]["deletionVector"], "cardinality": 3}}}
            if "add" in a
            else a
            for a in acts
        ],
    )
    with pytest.raises(DeletionVectorError, match="cardinality 3"):
        read_rows(t)


def test_dv_unknown_storage_type(tmp_path):
    t = copy(tmp_path, DV_TABLE)
    edit_actions(
        log_file(t, 1),
        lambda acts: [
            {"add": {**a["add"], "deletionVector": {**a["add"]["deletionVector"], "storageType": "z"}}}
            if "add" in a
            else a
            for a in acts
        ],
    )
    with pytest.raises(DeletionVectorError, match="storageType 'z'"):
        read_rows(t)


# ------------------------------------------------------------ data files
def _first_data_file(t: str) -> str:
    rel = Snapshot.load(t).files.column("path")[0].as_py()
    return os.path.join(t, rel)


def test_data_file_missing(tmp_path):
    t = copy(tmp_path, SIMPLE)
    path = _first_data_file(t)
    os.remove(path)
    with pytest.raises(DataFileError, match=rf"{os.path.basename(path)}.*missing"):
        read_rows(t)


def test_data_file_not_parquet(tmp_path):
    t = copy(tmp_path, SIMPLE)
    path = _first_data_file(t)
    open(path, "wb").write(b"hello, I am a CSV file\n1,2,3\n")
    with pytest.raises(DataFileError, match=rf"{os.path.basename(path)} is not a readable Parquet file"):
        read_rows(t)


def test_data_file_truncated(tmp_path):
    t = copy(tmp_path, SIMPLE)
    path = _first_data_file(t)
    data = open(path, "rb").read()
    open(path, "wb").write(data[: len(data) - 20])
    with pytest.raises(DataFileError, match=os.path.basename(path)):
        read_rows(t)


def test_data_file_with_mismatched_schema(tmp_path):
    t = copy(tmp_path, SIMPLE)  # id: long
    path = _first_data_file(t)
    pq.write_table(pa.table({"id": pa.array(["one", "two"])}), path)
    with pytest.raises(DataFileError, match=r"stores column .id. as string.*declared type long"):
        read_rows(t)


def test_data_file_with_overflowing_values(tmp_path):
    t = copy(tmp_path, DV_TABLE)  # value: int
    path = _first_data_file(t)
    pq.write_table(pa.table({"value": pa.array([2**40] * 10, pa.int64())}), path)
    snap = Snapshot.load(t)
    if snap.schema.field("value").type.simple_string() == "int":
        with pytest.raises(DataFileError):
            read_rows(t)


# ------------------------------------------------------------ paths
def test_dotdot_path_escaping_the_root_is_refused(tmp_path):
    t = copy(tmp_path, SIMPLE)
    outside = tmp_path / "outside.parquet"
    shutil.copy(_first_data_file(t), outside)
    edit_actions(
        log_file(t, 4),
        lambda acts: (
            acts
            + [
                {
                    "add": {
                        "path": "../outside.parquet",
                        "partitionValues": {},
                        "size": 1,
                        "modificationTime": 1,
                        "dataChange": True,
                    }
                }
            ]
        ),
    )
    with pytest.raises(CorruptLogError, match=r"\.\./outside\.parquet.*table root"):
        Snapshot.load(t).files


def test_encoded_dotdot_path_is_refused(tmp_path):
    t = copy(tmp_path, SIMPLE)
    edit_actions(
        log_file(t, 4),
        lambda acts: (
            acts
            + [
                {
                    "add": {
                        "path": "a/%2E%2E/%2E%2E/etc/passwd",
                        "partitionValues": {},
                        "size": 1,
                        "modificationTime": 1,
                        "dataChange": True,
                    }
                }
            ]
        ),
    )
    with pytest.raises(CorruptLogError, match="table root"):
        Snapshot.load(t).files


def test_dotdot_inside_the_root_is_refused_too(tmp_path):
    # a/../b stays inside the root, but the protocol only allows plain relative paths;
    # refusing every '..' segment is the simple, safe rule
    t = copy(tmp_path, SIMPLE)
    edit_actions(
        log_file(t, 4),
        lambda acts: (
            acts
            + [
                {
                    "add": {
                        "path": "a/../b.parquet",
                        "partitionValues": {},
                        "size": 1,
                        "modificationTime": 1,
                        "dataChange": True,
                    }
                }
            ]
        ),
    )
    with pytest.raises(CorruptLogError, match=r"'\.\.'"):
        Snapshot.load(t).files


def test_absolute_uri_paths_are_allowed(tmp_path):
    t = copy(tmp_path, SIMPLE)
    outside = tmp_path / "elsewhere" / "abs.parquet"
    outside.parent.mkdir()
    pq.write_table(pa.table({"id": pa.array([100, 101], pa.int64())}), outside)
    n = read_rows(t).num_rows
    edit_actions(
        log_file(t, 4),
        lambda acts: (
            acts
            + [
                {
                    "add": {
                        "path": f"file://{outside}",
                        "partitionValues": {},
                        "size": os.path.getsize(outside),
                        "modificationTime": 1,
                        "dataChange": True,
                    }
                }
            ]
        ),
    )
    assert read_rows(t).num_rows == n + 2


def test_dotdot_in_a_file_name_is_fine(tmp_path):
    # '..' as part of a name (not a whole segment) is an ordinary file name
    t = copy(tmp_path, SIMPLE)
    os.mkdir(os.path.join(t, "x..y"))
    src = os.path.join(t, "x..y", "a..b.parquet")
    pq.write_table(pa.table({"id": pa.array([100, 101], pa.int64())}), src)
    n = read_rows(t).num_rows
    edit_actions(
        log_file(t, 4),
        lambda acts: (
            acts
            + [
                {
                    "add": {
                        "path": "x..y/a..b.parquet",
                        "partitionValues": {},
                        "size": os.path.getsize(src),
                        "modificationTime": 1,
                        "dataChange": True,
                    }
                }
            ]
        ),
    )
    assert read_rows(t).num_rows == n + 2


def test_dotdot_in_remove_does_not_matter(tmp_path):
    # a remove never opens its path; it only cancels an add with the same key
    t = copy(tmp_path, SIMPLE)
    expected = file_paths(t)
    edit_actions(
        log_file(t, 4),
        lambda acts: acts + [{"remove": {"path": "../not-there.parquet", "deletionTimestamp": 1, "dataChange": True}}],
    )
    assert file_paths(t) == expected


# ------------------------------------------------------------ read options
@pytest.mark.parametrize(
    "options, name",
    [
        ({}, "path"),
        ({"path": "/x", "versionAsOf": "abc"}, "versionAsOf"),
        ({"path": "/x", "versionAsOf": "-1"}, "versionAsOf"),
        ({"path": "/x", "versionAsOf": "1", "timestampAsOf": "2020-01-01"}, "timestampAsOf"),
        ({"path": "/x", "columns": " , "}, "columns"),
        ({"path": "/x", "maxPartitionBytes": "0"}, "maxPartitionBytes"),
        ({"path": "/x", "maxpartitionbytes": "lots"}, "maxPartitionBytes"),
        ({"path": "/x", "openCostInBytes": "-3"}, "openCostInBytes"),
        ({"path": "/x", "parallelism": "0"}, "parallelism"),
        ({"path": "/x", "batchRows": "1.5"}, "batchRows"),
        ({"path": "/x", "filterPushdown": "maybe"}, "filterPushdown"),
    ],
)
def test_invalid_read_options_name_the_option(options, name):
    with pytest.raises(ValueError, match=rf"option[s]? .*{name}"):
        ReadOptions.parse(options)


def test_version_beyond_latest_and_bad_timestamp(tmp_path):
    from delta_pyds.errors import VersionNotFoundError

    t = copy(tmp_path, SIMPLE)
    with pytest.raises(VersionNotFoundError, match="version 99.*latest version of the table is 4"):
        Snapshot.load(t, version=99)
    with pytest.raises((VersionNotFoundError, ValueError), match="not-a-time|timestamp"):
        Snapshot.load(t, timestamp="not-a-time")


def test_not_a_table(tmp_path):
    with pytest.raises(TableNotFoundError, match="no Delta table"):
        Snapshot.load(str(tmp_path / "nothing-here"))


def test_spark_read_of_a_broken_table_names_the_error(tmp_path, spark):
    """One end-to-end check: a bad option and a corrupt log surface through Spark with
    the named error's message (Spark wraps Python exceptions in its own)."""
    t = copy(tmp_path, SIMPLE)
    with pytest.raises(Exception, match="option versionAsOf"):
        spark.read.format("pydelta").option("versionAsOf", "abc").load(t).collect()
    os.remove(log_file(t, 2))
    with pytest.raises(Exception, match=r"CorruptLogError.*missing commit 00000000000000000002\.json"):
        spark.read.format("pydelta").load(t).collect()


# ------------------------------------------------------------ found by tests/test_fuzz_log.py
def test_invalid_utf8_in_a_commit(tmp_path):
    # Arrow's JSON reader does not validate UTF-8: without a check the bad bytes reached
    # the path strings (UnicodeDecodeError later, or a wrong path)
    t = copy(tmp_path, SIMPLE)
    path = log_file(t, 4)
    data = open(path, "rb").read()
    i = data.index(b'"path":"') + 9
    open(path, "wb").write(data[:i] + b"\x80\xff" + data[i:])
    with pytest.raises(CorruptLogError, match=r"00000000000000000004\.json is not valid JSON"):
        Snapshot.load(t).files


def test_infinity_as_an_integer(tmp_path):
    t = copy(tmp_path, SIMPLE)
    path = log_file(t, 4)
    text = open(path).read()
    open(path, "w").write(text.replace('"size":', '"size":Infinity,"x":', 1))
    with pytest.raises(CorruptLogError, match=r"00000000000000000004\.json: expected an integer, got inf"):
        Snapshot.load(t).files


def test_action_split_over_two_lines(tmp_path):
    t = copy(tmp_path, SIMPLE)
    path = log_file(t, 4)
    lines = read_lines(path)
    write_lines(path, [lines[0][:1], lines[0][1:]] + lines[1:])  # "{" then the rest
    with pytest.raises(CorruptLogError, match=r"line 1 in .*00000000000000000004\.json is not valid JSON"):
        Snapshot.load(t).files


def test_two_actions_on_one_line(tmp_path):
    t = copy(tmp_path, SIMPLE)
    path = log_file(t, 4)
    lines = read_lines(path)
    write_lines(path, [lines[0] + " " + lines[1]] + lines[2:])
    with pytest.raises(CorruptLogError, match=r"line 1 in .*00000000000000000004\.json is not valid JSON"):
        Snapshot.load(t).files


def test_checkpoint_listing_a_file_twice_yields_it_once(tmp_path):
    t = copy(tmp_path, CHECKPOINTED)
    expected = file_paths(t)
    cp = log_file(t, 10, "checkpoint.parquet")
    table = pq.read_table(cp)
    adds = table.filter(pa.compute.is_valid(table.column("add")))
    pq.write_table(pa.concat_tables([table, adds]), cp)
    files = Snapshot.load(t).files
    assert files.num_rows == len(expected)
    assert set(files.column("path").to_pylist()) == expected


def test_read_file_refuses_dotdot_paths_from_any_planner(tmp_path):
    # the change data feed and streams build tasks without Snapshot.files: the executor
    # side checks too
    t = copy(tmp_path, SIMPLE)
    snap = Snapshot.load(t)
    spec = ReadSpec(
        storage=snap.storage, output=snap.schema, arrow_schema=to_arrow_schema(snap.schema), partition_columns=()
    )
    for bad in ("../outside.parquet", "a/../../b.parquet", "a\\..\\b.parquet"):
        with pytest.raises(DataFileError, match="'..' segment"):
            list(read_file(spec, FileTask(bad, 1, (), None)))
    # task paths are canonical (delta_pyds.protocol.paths): absolute ones are allowed, merely absent here
    with pytest.raises(DataFileError, match="missing"):
        list(read_file(spec, FileTask(f"{tmp_path}/../nowhere.parquet", 1, (), None)))
    with pytest.raises(DataFileError, match="file: URI"):  # canonical("file:../outside.parquet")
        list(read_file(spec, FileTask("file://../outside.parquet", 1, (), None)))
    # a canonical "file:../x" is the relative name of directory "file:.." below the root (the
    # log spelled it "file%3A../x"): it stays inside the root, merely absent here
    with pytest.raises(DataFileError, match="missing"):
        list(read_file(spec, FileTask("file:../outside.parquet", 1, (), None)))


def test_relative_deletion_vector_prefix_cannot_escape_the_root(tmp_path):
    from delta_pyds.errors import DeletionVectorError
    from delta_pyds.protocol.deletion_vectors import DeletionVectorDescriptor
    from delta_pyds.storage.store import Storage

    good = DeletionVectorDescriptor("u", "ab" + "0" * 20, 1, 10, 1)
    assert good.absolute_path(Storage(str(tmp_path))).startswith(str(tmp_path))
    for prefix in ("../", "..", "a/b"):
        bad = DeletionVectorDescriptor("u", prefix + "0" * 20, 1, 10, 1)
        with pytest.raises(DeletionVectorError, match="leave"):
            bad.absolute_path(Storage(str(tmp_path)))


# ------------------------------------------------------------ issue 16: wrong data with no error
def _read_one(tmp_path, data: pa.Table, fields: list[dict], *, mode: str = "none", **write_kw) -> pa.Table:
    """Reads one Parquet file holding ``data`` as a table of the declared ``fields``."""
    from delta_pyds.protocol.schema import parse_schema

    pq.write_table(data, tmp_path / "f.parquet", **write_kw)
    schema = parse_schema(json.dumps({"type": "struct", "fields": fields}))
    spec = ReadSpec(
        storage=Storage(str(tmp_path)),
        output=schema,
        arrow_schema=to_arrow_schema(schema),
        partition_columns=(),
        column_mapping_mode=mode,
    )
    return pa.Table.from_batches(list(read_file(spec, FileTask("f.parquet", 1, (), None))), schema=spec.arrow_schema)


def _f(name, type_, nullable=True, physical=None):
    meta = {"delta.columnMapping.physicalName": physical} if physical else {}
    return {"name": name, "type": type_, "nullable": nullable, "metadata": meta}


_LONGS = pa.array([0, 1, 2], pa.int64())


@pytest.mark.parametrize(
    "physical,declared",
    [
        (_LONGS, "boolean"),
        (_LONGS, "timestamp"),
        (_LONGS, "timestamp_ntz"),
        (_LONGS, "string"),
        (_LONGS, "date"),
        (_LONGS, "integer"),
        (_LONGS, "double"),
        (_LONGS, "binary"),
        (_LONGS, "decimal(10,0)"),
        (pa.array(["a", "b", "c"]), "long"),
        (pa.array([1.5, 2.5, 3.5]), "long"),
        (pa.array([1.5, 2.5, 3.5]), "float"),
        (pa.array([True, False, True]), "integer"),
        (pa.array([1, 2, 3], pa.date32()), "timestamp"),
        (pa.array([1, 2, 3], pa.date32()), "integer"),
        (pa.array([1, 2, 3], pa.timestamp("us")), "date"),
        (pa.array([1, 2, 3], pa.timestamp("us")), "long"),
        (pa.array([1, 2, 3], pa.int32()), "float"),
        (pa.array([b"a", b"b", b"c"]), "long"),
        (pa.array([1, 2, 3], pa.decimal128(10, 2)), "decimal(10,4)"),  # fewer integer digits
        (pa.array([1, 2, 3], pa.decimal128(10, 2)), "decimal(12,1)"),  # fewer fraction digits
        (pa.array([1, 2, 3], pa.decimal128(10, 2)), "double"),
        (pa.array([[1], [2], []], pa.list_(pa.int64())), "long"),
        (_LONGS, {"type": "array", "elementType": "long", "containsNull": True}),
        (_LONGS, {"type": "struct", "fields": [_f("x", "long")]}),
    ],
)
def test_declared_type_contradicting_the_file_is_refused(tmp_path, physical, declared):
    with pytest.raises(ColumnTypeError) as exc:
        _read_one(tmp_path, pa.table({"c": physical}), [_f("c", declared)])
    msg = str(exc.value)
    kind = str(physical.type).split("<")[0]
    assert "f.parquet" in msg and "'c'" in msg and kind in msg
    assert exc.value.column == "c" and exc.value.physical.split("<")[0] == kind
    assert exc.value.file.endswith("f.parquet")


@pytest.mark.parametrize(
    "physical,declared,column",
    [
        (
            pa.array([[1], None], pa.list_(pa.int64())),
            {"type": "array", "elementType": "boolean", "containsNull": True},
            "c.element",
        ),
        (
            pa.array([[("k", 1)], None], pa.map_(pa.string(), pa.int64())),
            {"type": "map", "keyType": "string", "valueType": "timestamp", "valueContainsNull": True},
            "c.value",
        ),
        (
            pa.array([[(1, 1)], None], pa.map_(pa.int64(), pa.int64())),
            {"type": "map", "keyType": "string", "valueType": "long", "valueContainsNull": True},
            "c.key",
        ),
        (
            pa.array([{"x": 1}, None], pa.struct([("x", pa.int64())])),
            {"type": "struct", "fields": [_f("x", "string")]},
            "c.x",
        ),
        (
            pa.array([{"s": {"y": 1}}], pa.struct([("s", pa.struct([("y", pa.int64())]))])),
            {"type": "struct", "fields": [_f("s", {"type": "struct", "fields": [_f("y", "boolean")]})]},
            "c.s.y",
        ),
    ],
)
def test_nested_type_contradictions_name_the_nested_column(tmp_path, physical, declared, column):
    with pytest.raises(ColumnTypeError, match=rf"column '{column}'") as exc:
        _read_one(tmp_path, pa.table({"c": physical}), [_f("c", declared)])
    assert exc.value.column == column


def test_allowed_physical_types_still_read(tmp_path):
    """Regression guard for the check above: every encoding and widening the protocol
    allows keeps reading, with the right values."""
    data = pa.table(
        {
            "b": pa.array([1, 2], pa.int32()),  # Spark's byte: INT32 annotated INT(8), or plain INT32
            "s": pa.array([1, 2], pa.int8()),  # byte -> short
            "i": pa.array([1, 2], pa.int16()),  # short -> int
            "l": pa.array([1, 2], pa.int32()),  # int -> long
            "u": pa.array([1, 2], pa.uint16()),  # unsigned 16 -> int
            "d": pa.array([1.5, 2.5], pa.float32()),  # float -> double
            "di": pa.array([1, 2], pa.int32()),  # int -> double
            "dec": pa.array([1, 2], pa.int32()),  # int -> decimal(10 + k1, k2)
            "decl": pa.array([1, 2], pa.int64()),  # long -> decimal(20 + k1, k2)
            "decw": pa.array([1, 2], pa.decimal128(5, 2)),  # decimal(p, s) -> decimal(p + k1, s + k2)
            "ntz": pa.array([0, 1], pa.date32()),  # date -> timestamp_ntz
            "tns": pa.array([1_000, 2_000], pa.timestamp("ns", tz="UTC")),
            "tms": pa.array([1, 2], pa.timestamp("ms")),
            "str": pa.array([b"x", b"y"], pa.binary()),  # BINARY without UTF8 annotation
            "lstr": pa.array(["x", "y"], pa.large_string()),
            "dict": pa.array(["x", "y"]).dictionary_encode(),
            "nul": pa.nulls(2),  # an all-null column of an unknown type
            "lst": pa.array([[1], None], pa.list_(pa.int32())),  # nested widening
            "mp": pa.array([[("k", 1.0)], None], pa.map_(pa.string(), pa.float32())),
            "st": pa.array([{"x": 1}, None], pa.struct([("x", pa.int16())])),
        }
    )
    fields = [
        _f("b", "byte"),
        _f("s", "short"),
        _f("i", "integer"),
        _f("l", "long"),
        _f("u", "integer"),
        _f("d", "double"),
        _f("di", "double"),
        _f("dec", "decimal(12,2)"),
        _f("decl", "decimal(22,2)"),
        _f("decw", "decimal(7,3)"),
        _f("ntz", "timestamp_ntz"),
        _f("tns", "timestamp"),
        _f("tms", "timestamp"),
        _f("str", "string"),
        _f("lstr", "string"),
        _f("dict", "string"),
        _f("nul", "date"),
        _f("lst", {"type": "array", "elementType": "long", "containsNull": True}),
        _f("mp", {"type": "map", "keyType": "string", "valueType": "double", "valueContainsNull": True}),
        _f("st", {"type": "struct", "fields": [_f("x", "long")]}),
    ]
    out = _read_one(tmp_path, data, fields).to_pylist()
    import datetime as dt
    import decimal

    assert out[0]["b"] == 1 and out[1]["u"] == 2 and out[0]["di"] == 1.0
    assert out[1]["decl"] == decimal.Decimal("2.00") and out[0]["decw"] == decimal.Decimal("1.000")
    assert out[1]["ntz"] == dt.datetime(1970, 1, 2)
    assert out[0]["tns"] == dt.datetime(1970, 1, 1, 0, 0, 0, 1, tzinfo=dt.timezone.utc)
    assert out[1]["str"] == "y" and out[0]["dict"] == "x" and out[0]["nul"] is None
    assert out[0]["lst"] == [1] and out[0]["mp"] == [("k", 1.0)] and out[0]["st"] == {"x": 1}


def test_int96_and_column_mapping_renames_still_read(tmp_path):
    import datetime as dt

    data = pa.table({"col-1": pa.array([dt.datetime(2020, 1, 1)], pa.timestamp("us"))})
    out = _read_one(
        tmp_path, data, [_f("when", "timestamp", physical="col-1")], mode="name", use_deprecated_int96_timestamps=True
    )
    assert out.column("when").to_pylist() == [dt.datetime(2020, 1, 1, tzinfo=dt.timezone.utc)]


def test_narrowing_int32_to_byte_out_of_range_names_the_column(tmp_path):
    with pytest.raises(DataFileError, match=r"column 'b'.*f\.parquet"):
        _read_one(tmp_path, pa.table({"b": pa.array([1, 300], pa.int32())}), [_f("b", "byte")])


def test_missing_non_nullable_column_is_an_error(tmp_path):
    data = pa.table({"a": [1, 2]})
    with pytest.raises(DataFileError, match=r"f\.parquet has no column 'b'.*NOT NULL"):
        _read_one(tmp_path, data, [_f("a", "long"), _f("b", "long", nullable=False)])
    # a column added later by schema evolution is nullable: null in the old file
    out = _read_one(tmp_path, data, [_f("a", "long"), _f("b", "long")])
    assert out.column("b").to_pylist() == [None, None]


def test_missing_non_nullable_nested_field_is_an_error(tmp_path):
    data = pa.table({"s": pa.array([{"x": 1}], pa.struct([("x", pa.int64())]))})
    inner = {"type": "struct", "fields": [_f("x", "long"), _f("y", "long", nullable=False)]}
    with pytest.raises(DataFileError, match=r"no column 's\.y'"):
        _read_one(tmp_path, data, [_f("s", inner)])
    # the whole (nullable) struct missing: null, its non-nullable child does not matter
    out = _read_one(tmp_path, pa.table({"a": [1]}), [_f("a", "long"), _f("t", inner)])
    assert out.column("t").to_pylist() == [None]


def test_boolean_partition_value_other_than_true_false_is_refused(tmp_path):
    from delta_pyds.protocol.partition_values import parse_partition_values
    from delta_pyds.protocol.schema import PrimitiveType

    ok = parse_partition_values(pa.array(["true", "FALSE", "True", None, ""]), PrimitiveType("boolean"), column="p")
    assert ok.to_pylist() == [True, False, True, None, None]
    for bad in ("maybe", "1", "yes", " true"):
        with pytest.raises(CorruptLogError, match=r"'p'.*boolean"):
            parse_partition_values(pa.array(["true", bad]), PrimitiveType("boolean"), column="p")


def test_boolean_partition_value_maybe_in_a_table(tmp_path):
    t = copy(tmp_path, SIMPLE)
    from delta_pyds.protocol.schema import parse_schema

    snap = Snapshot.load(t)
    edit_actions(
        log_file(t, 0),
        lambda acts: [
            {
                "metaData": {
                    **a["metaData"],
                    "partitionColumns": ["flag"],
                    "schemaString": json.dumps(
                        {
                            "type": "struct",
                            "fields": [
                                *parse_schema(a["metaData"]["schemaString"]).to_json()["fields"],
                                _f("flag", "boolean"),
                            ],
                        }
                    ),
                }
            }
            if "metaData" in a
            else a
            for a in acts
        ],
    )
    for v in range(5):  # commit 4's own add has no rows: give every add the value
        edit_actions(
            log_file(t, v),
            lambda acts: [
                {"add": {**a["add"], "partitionValues": {"flag": "maybe"}}} if "add" in a else a for a in acts
            ],
        )
    assert snap.version == 4
    with pytest.raises(CorruptLogError, match=r"'flag'.*boolean.*maybe"):
        read_rows(t)


@pytest.mark.parametrize("value", ["value", ["a", 1], [None], {"a": 1}, 7])
def test_partition_columns_not_a_list_of_strings_is_refused(tmp_path, value):
    t = copy(tmp_path, SIMPLE)
    edit_actions(
        log_file(t, 0),
        lambda acts: [
            {"metaData": {**a["metaData"], "partitionColumns": value}} if "metaData" in a else a for a in acts
        ],
    )
    with pytest.raises(
        CorruptLogError, match=r"00000000000000000000\.json.*partitionColumns must be an array of strings"
    ):
        Snapshot.load(t).files


@pytest.mark.parametrize("names", [("id", "ID"), ("Value", "vALUE")])
def test_columns_differing_only_in_case_are_refused(tmp_path, names):
    from delta_pyds.errors import SchemaError
    from delta_pyds.protocol.schema import parse_schema

    schema = json.dumps({"type": "struct", "fields": [_f(names[0], "long"), _f(names[1], "string")]})
    with pytest.raises(SchemaError, match=rf"{names[0]}.*{names[1]}"):
        parse_schema(schema)
    nested = json.dumps({"type": "struct", "fields": [_f("s", json.loads(schema))]})
    with pytest.raises(SchemaError, match=r"s\."):
        parse_schema(nested)
    t = copy(tmp_path, SIMPLE)
    edit_actions(
        log_file(t, 0),
        lambda acts: [{"metaData": {**a["metaData"], "schemaString": schema}} if "metaData" in a else a for a in acts],
    )
    with pytest.raises(SchemaError):
        Snapshot.load(t).schema


# ------------------------------------------------------------ issue 16: memory and time bombs
def test_multi_part_checkpoint_name_claiming_a_billion_parts(tmp_path):
    t = copy(tmp_path, SIMPLE)
    bomb = os.path.join(t, "_delta_log", "00000000000000000000.checkpoint.0000000001.1000000000.parquet")
    open(bomb, "wb").write(b"PAR1")
    expected = file_paths(table_path(SIMPLE))
    with memory_cap():
        assert file_paths(t) == expected  # an incomplete checkpoint is ignored
    # with nothing else to read it is a named error, still without materialising the parts
    os.remove(log_file(t, 0))
    with memory_cap(), pytest.raises(DeltaError):
        Snapshot.load(t).files


def test_multi_part_checkpoint_complete_with_odd_part_numbers_is_not_complete(tmp_path):
    from delta_pyds.log.files import parse_log_file_name
    from delta_pyds.log.segment import complete_checkpoints

    names = [
        "00000000000000000005.checkpoint.0000000000.0000000002.parquet",
        "00000000000000000005.checkpoint.0000000002.0000000002.parquet",
    ]
    assert complete_checkpoints([parse_log_file_name(n) for n in names]) == {}
    names[0] = "00000000000000000005.checkpoint.0000000001.0000000002.parquet"
    assert list(complete_checkpoints([parse_log_file_name(n) for n in names])) == [5]


def _give_dv(t: str, descriptor: dict) -> None:
    edit_actions(
        latest_commit(t),
        lambda acts: [{"add": {**a["add"], "deletionVector": descriptor}} if "add" in a else a for a in acts],
    )


def _range_bitmap(n: int):
    from pyroaring import BitMap64

    bm = BitMap64()
    bm.add_range(0, n)
    return bm


def test_dv_file_claiming_2_pow_32_rows_is_refused_before_expansion(tmp_path):
    from delta_pyds.protocol.deletion_vectors import write_deletion_vectors

    t = copy(tmp_path, DV_TABLE)  # one file of 10 rows
    (desc,) = write_deletion_vectors(Storage(t), [_range_bitmap(2**32)])
    assert desc.size_in_bytes < 1 << 20 and desc.cardinality == 2**32
    _give_dv(t, desc.to_dict())
    with memory_cap(), pytest.raises(DeletionVectorError, match=r"deletes row 4294967295.*only 10 rows"):
        read_rows(t)


def test_dv_whose_descriptor_understates_a_huge_bitmap_is_refused_before_expansion(tmp_path):
    from delta_pyds.protocol.deletion_vectors import write_deletion_vectors

    t = copy(tmp_path, DV_TABLE)
    (desc,) = write_deletion_vectors(Storage(t), [_range_bitmap(2**32)])
    _give_dv(t, {**desc.to_dict(), "cardinality": 2})
    with memory_cap(), pytest.raises(DeletionVectorError, match=r"holds 4294967296 rows.*cardinality 2"):
        read_rows(t)


def test_inline_dv_with_2_pow_36_rows_is_refused_before_expansion(tmp_path):
    from delta_pyds.protocol.deletion_vectors import inline_descriptor, load_deleted_rows

    t = copy(tmp_path, DV_TABLE)
    desc = inline_descriptor(_range_bitmap(2**36))
    _give_dv(t, desc.to_dict())
    with memory_cap(), pytest.raises(DeletionVectorError, match=r"only 10 rows"):
        read_rows(t)
    # without a known file size (DML, change data feed), a default bound applies
    with memory_cap(), pytest.raises(DeletionVectorError, match=r"deletes 68719476736 rows, more than"):
        load_deleted_rows(None, desc)


def test_schema_nested_500_levels_is_a_named_error(tmp_path):
    from delta_pyds.errors import SchemaError
    from delta_pyds.protocol.schema import MAX_TYPE_DEPTH, parse_schema

    t = copy(tmp_path, SIMPLE)
    inner = '"long"'
    for _ in range(500):  # built as text: json.dumps itself would overflow the stack
        inner = '{"type":"struct","fields":[{"name":"a","type":' + inner + ',"nullable":true,"metadata":{}}]}'
    edit_actions(
        log_file(t, 0),
        lambda acts: [{"metaData": {**a["metaData"], "schemaString": inner}} if "metaData" in a else a for a in acts],
    )
    with pytest.raises(SchemaError, match=r"nested deeper than 100 levels"):
        Snapshot.load(t).schema
    # deeper than the JSON parser's own recursion limit
    text = (
        '{"type":"struct","fields":[{"name":"a","type":'
        + '{"type":"array","elementType":' * 100_000
        + '"long"'
        + ',"containsNull":true}' * 100_000
        + ',"nullable":true,"metadata":{}}]}'
    )
    with pytest.raises(SchemaError, match=r"nested deeper"):
        parse_schema(text)
    ok: dict | str = "long"
    for _ in range(MAX_TYPE_DEPTH - 1):
        ok = {"type": "array", "elementType": ok, "containsNull": True}
    assert parse_schema(json.dumps({"type": "struct", "fields": [_f("a", ok)]}))


def test_commit_file_that_is_a_fifo_is_refused_not_waited_on(tmp_path):
    from delta_pyds.errors import UnsafeFileError

    t = copy(tmp_path, SIMPLE)
    os.remove(log_file(t, 4))
    os.mkfifo(log_file(t, 4))  # opening it for reading would block until a writer comes
    with pytest.raises(UnsafeFileError, match=r"00000000000000000004\.json is not a regular file"):
        Snapshot.load(t).files
    assert Snapshot.load(t, version=3).version == 3


def test_commit_file_linked_to_dev_zero_is_refused(tmp_path):
    from delta_pyds.errors import UnsafeFileError

    t = copy(tmp_path, SIMPLE)
    os.remove(log_file(t, 4))
    os.symlink("/dev/zero", log_file(t, 4))
    with memory_cap(), pytest.raises(UnsafeFileError, match=r"00000000000000000004\.json is not a regular file"):
        Snapshot.load(t).files


def test_commit_larger_than_the_bound_is_refused(tmp_path):
    from delta_pyds.errors import UnsafeFileError

    t = copy(tmp_path, SIMPLE)
    size = max(os.path.getsize(log_file(t, v)) for v in range(5))
    with pytest.raises(
        UnsafeFileError, match=rf"\.json is {size} bytes, more than the {size - 1} bytes.*maxLogFileBytes"
    ):
        Snapshot.load(Storage(t, {"maxLogFileBytes": str(size - 1)})).files
    assert Snapshot.load(Storage(t, {"maxLogFileBytes": str(size)})).version == 4
    with pytest.raises(ValueError, match="maxLogFileBytes"):
        Storage(t, {"maxLogFileBytes": "lots"})


def test_log_file_bound_on_an_object_store_uses_the_listed_size(tmp_path):
    """On object stores every object is a 'regular file': the listing's size decides,
    before the object is fetched."""
    import uuid

    import fsspec

    from delta_pyds.errors import UnsafeFileError

    root = f"memory://bound-{uuid.uuid4().hex}/t"
    fs = fsspec.filesystem("memory")
    src = table_path(SIMPLE)
    for name in sorted(os.listdir(os.path.join(src, "_delta_log"))):
        if not name.endswith(".json"):
            continue
        fs.pipe_file(f"{root}/_delta_log/{name}", open(os.path.join(src, "_delta_log", name), "rb").read())
    assert Snapshot.load(Storage(root)).version == 4
    with pytest.raises(UnsafeFileError, match=r"00000000000000000000\.json is \d+ bytes"):
        Snapshot.load(Storage(root, {"maxLogFileBytes": "100"}))


def test_last_checkpoint_that_is_a_fifo_is_ignored(tmp_path):
    t = copy(tmp_path, CHECKPOINTED)
    hint = os.path.join(t, "_delta_log", "_last_checkpoint")
    if os.path.exists(hint):
        os.remove(hint)
    os.mkfifo(hint)
    assert Snapshot.load(t).version == 10


def test_checkpoint_that_is_a_fifo_falls_back_to_commits(tmp_path):
    t = copy(tmp_path, CHECKPOINTED)
    expected = file_paths(table_path(CHECKPOINTED))
    cp = log_file(t, 10, "checkpoint.parquet")
    os.remove(cp)
    os.mkfifo(cp)
    assert file_paths(t) == expected


def test_data_file_that_is_a_fifo_is_refused(tmp_path):
    from delta_pyds.errors import UnsafeFileError

    t = copy(tmp_path, SIMPLE)
    path = _first_data_file(t)
    os.remove(path)
    os.mkfifo(path)
    with pytest.raises(UnsafeFileError, match=os.path.basename(path)):
        read_rows(t)


def test_deletion_vector_file_that_is_a_fifo_is_refused(tmp_path):
    t = copy(tmp_path, DV_TABLE)
    dv = _dv_file(t)
    os.remove(dv)
    os.mkfifo(dv)
    with pytest.raises(DeletionVectorError, match="not a regular file"):
        read_rows(t)


# ------------------------------------------------------------ issue 16: errors that should be named
@pytest.mark.parametrize("decimal", ["decimal(99,0)", "decimal(0,0)", "decimal(10,11)", "decimal(10,-1)"])
def test_invalid_decimal_type_names_the_column(tmp_path, decimal):
    from delta_pyds.errors import SchemaError

    t = copy(tmp_path, SIMPLE)
    schema = json.dumps({"type": "struct", "fields": [_f("id", "long"), _f("amount", decimal)]})
    edit_actions(
        log_file(t, 0),
        lambda acts: [{"metaData": {**a["metaData"], "schemaString": schema}} if "metaData" in a else a for a in acts],
    )
    with pytest.raises(SchemaError, match=rf"{re.escape(decimal)} of column 'amount'"):
        read_rows(t)


@pytest.mark.parametrize("field_name", ["readerFeatures", "writerFeatures"])
@pytest.mark.parametrize("value", ["deletionVectors", {"deletionVectors": True}, ["deletionVectors", 3]])
def test_protocol_features_not_an_array_of_strings_are_malformed(tmp_path, field_name, value):
    t = copy(tmp_path, SIMPLE)
    edit_actions(
        log_file(t, 0),
        lambda acts: [
            {
                "protocol": {
                    "minReaderVersion": 3,
                    "minWriterVersion": 7,
                    "readerFeatures": [],
                    "writerFeatures": [],
                    field_name: value,
                }
            }
            if "protocol" in a
            else a
            for a in acts
        ],
    )
    with pytest.raises(CorruptLogError, match=rf"malformed protocol action.*{field_name} must be an array"):
        Snapshot.load(t)


def test_partition_value_with_nul_is_written_escaped_and_read_back(tmp_path):
    from delta_pyds.write.plan import commit_arrow

    t = str(tmp_path / "nul")
    values = ["a\x00b", "\x00", "c"]
    commit_arrow(t, pa.table({"p": values, "v": [1, 2, 3]}), options={"partitionBy": "p"})
    dirs = sorted(d for d in os.listdir(t) if d.startswith("p="))
    assert dirs == ["p=%00", "p=a%00b", "p=c"]
    got = sorted(read_rows(t).to_pylist(), key=lambda r: r["v"])
    assert [r["p"] for r in got] == values

    other = sorted(deltalake_table(t).to_pylist(), key=lambda r: r["v"])
    assert [r["p"] for r in other] == values


def test_winning_commits_are_read_within_the_bound_on_object_stores():
    """A concurrent winner larger than maxLogFileBytes is refused by size from the listing,
    before it is read, also where the filesystem cannot say 'regular file' (memory://)."""
    import uuid as _uuid

    import fsspec

    from delta_pyds.errors import UnsafeFileError
    from delta_pyds.storage.store import Storage
    from delta_pyds.transaction.commit import Transaction
    from delta_pyds.write.plan import commit_arrow

    root = f"memory://bound-{_uuid.uuid4().hex[:8]}/t"
    commit_arrow(root, pa.table({"id": pa.array([1], pa.int64())}))
    storage = Storage(root, {"maxLogFileBytes": "4096"})
    txn = Transaction(storage, Snapshot.load(storage))
    txn.add_files([])
    big = json.dumps({"commitInfo": {"operation": "WRITE", "padding": "x" * 8192}}) + "\n"
    fsspec.filesystem("memory").pipe_file(f"{root}/_delta_log/{1:020d}.json", big.encode())
    with pytest.raises(UnsafeFileError, match="maxLogFileBytes"):
        txn.commit("WRITE")


# ------------------------------------------------------------ deletion vectors, both read paths
def _bitmap(rows):
    from pyroaring import BitMap64

    return BitMap64(rows)


def _inline(bitmap, **override) -> dict:
    from delta_pyds.protocol.deletion_vectors import inline_descriptor

    return {**inline_descriptor(bitmap).to_dict(), **override}


def _stored(t: str, bitmap, **override) -> dict:
    from delta_pyds.protocol.deletion_vectors import write_deletion_vectors

    (desc,) = write_deletion_vectors(Storage(t), [bitmap])
    return {**desc.to_dict(), **override}


def _flip_checksum(t: str) -> dict:
    before = set(os.listdir(t))
    desc = _stored(t, _bitmap([1, 2]))
    (name,) = set(os.listdir(t)) - before
    path = os.path.join(t, name)
    data = bytearray(open(path, "rb").read())
    data[-1] ^= 0xFF  # the stored CRC-32
    open(path, "wb").write(bytes(data))
    return desc


# hostile deletion vectors on the 10-row file of DV_TABLE: name -> (make descriptor, message)
HOSTILE_DVS = {
    "inline claiming 100 rows of 10": (lambda t: _inline(_range_bitmap(100)), r"100 rows.*only 10 rows"),
    "inline claiming 15M rows of 10": (lambda t: _inline(_range_bitmap(15_000_000)), r"only 10 rows"),
    "inline claiming 60M rows of 10": (lambda t: _inline(_range_bitmap(60_000_000)), r"only 10 rows"),
    "row index 10 of 10 rows": (lambda t: _inline(_bitmap([3, 10])), r"deletes row 10.*only 10 rows"),
    "stored, row index 2**40": (lambda t: _stored(t, _bitmap([1, 2**40])), r"deletes row 1099511627776"),
    "understated cardinality": (lambda t: _inline(_bitmap(range(8)), cardinality=2), r"holds 8 rows.*cardinality 2"),
    "corrupt checksum": (_flip_checksum, r"checksum mismatch"),
    "bad magic": (lambda t: _inline(_bitmap([1]), pathOrInlineDv="0" * 20, sizeInBytes=16), r"magic number"),
}


@pytest.mark.parametrize("name", sorted(HOSTILE_DVS))
def test_hostile_deletion_vectors_are_refused_by_both_read_paths(tmp_path, spark, name):
    """The data source and the native read (read_delta) refuse the same hostile vectors
    with DeletionVectorError (the native path naming the data file, before any bitmap is
    expanded past the file's rows), never fewer rows or an out-of-memory error."""
    from delta_pyds import read_delta

    make, message = HOSTILE_DVS[name]
    t = copy(tmp_path, DV_TABLE)
    _give_dv(t, make(t))
    with pytest.raises(DeletionVectorError, match=message):
        read_rows(t)
    with pytest.raises(Exception, match="DeletionVectorError") as source_exc:
        spark.read.format("pydelta").load(t).collect()
    assert re.search(message, str(source_exc.value), re.S)
    with pytest.raises(DeletionVectorError, match=message) as native_exc:
        read_delta(spark, t, native="require").collect()
    assert re.search(r"data file file:/\S+\.parquet", str(native_exc.value))
