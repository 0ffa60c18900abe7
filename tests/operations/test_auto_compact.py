"""Auto compaction without Spark (delta_pyds.operations.auto_compact): the settings and their
priority (session conf over the deprecated delta.autoOptimize over
delta.autoOptimize.autoCompact), which partitions it compacts (those the write added files to,
with minNumFiles files under minFileSize), the OPTIMIZE commit it records (auto: true,
dataChange=false), column mapping kept, and races: a compaction that loses
to a concurrent rewrite commits nothing and loses no row, one that meets a blind append
commits beside it. Rows are compared with deltalake."""

from __future__ import annotations

import json
import os

import pyarrow as pa
import pytest
from deltalake import DeltaTable as DLTable
from deltalake import write_deltalake
from helpers import adds_of, deltalake_table, log_actions, parquet_files

from delta_pyds.errors import SettingValueError
from delta_pyds.operations.auto_compact import (
    ENABLED_CONF,
    MIN_NUM_FILES_CONF,
    TARGET_CONF,
    AutoCompactSettings,
    auto_compact,
    auto_compact_enabled,
)
from delta_pyds.storage.store import Storage
from delta_pyds.table.snapshot import Snapshot
from delta_pyds.write.plan import commit_arrow

ON = {"delta.autoOptimize.autoCompact": "true"}


def _rows(start, n, p):
    return pa.table({"id": pa.array(range(start, start + n), pa.int64()), "p": pa.array([p] * n)})


def _appends(path, count, p="a", *, conf=ON, partitioned=True, start=0):
    """``count`` appends of 5 rows each into partition ``p``; the last commit's result."""
    result = None
    for i in range(count):
        options = {"partitionBy": "p"} if partitioned else {}
        if i == 0 and start == 0:
            options.update(conf)
        result = commit_arrow(path, _rows(start + i * 5, 5, p), options=options)
    return result


def _ids(path):
    """The ids deltalake reads (its query engine: it also reads column-mapped tables)."""
    return sorted(deltalake_table(path).column("id").to_pylist())


def _added(result):
    return [a["add"] for a in result.actions if "add" in a]


def test_settings_defaults_and_bad_values_name_the_conf():
    s = AutoCompactSettings.from_conf({})
    assert (s.enabled, s.min_num_files, s.max_file_size, s.small_file_size) == (None, 50, 128 << 20, 64 << 20)
    assert s.modified_partitions_only
    assert not AutoCompactSettings.from_conf({TARGET_CONF: "table"}).modified_partitions_only
    assert AutoCompactSettings.from_conf({ENABLED_CONF: "TRUE"}).enabled is True
    with pytest.raises(SettingValueError, match="autoCompact.enabled must be one of: true, false"):
        AutoCompactSettings.from_conf({ENABLED_CONF: "yes"})
    with pytest.raises(SettingValueError, match="autoCompact.minNumFiles must be an integer >= 0"):
        AutoCompactSettings.from_conf({MIN_NUM_FILES_CONF: "-1"})


def test_the_session_conf_wins_then_the_deprecated_property_then_auto_compact():
    on, off, unset = AutoCompactSettings(enabled=True), AutoCompactSettings(enabled=False), AutoCompactSettings()
    assert auto_compact_enabled(on, {}) and not auto_compact_enabled(off, ON)
    assert auto_compact_enabled(unset, ON) and not auto_compact_enabled(unset, {})
    assert auto_compact_enabled(unset, {"delta.autoOptimize": "true", "delta.autoOptimize.autoCompact": "false"})
    with pytest.raises(SettingValueError, match="delta.autoOptimize.autoCompact must be true or false"):
        auto_compact_enabled(unset, {"delta.autoOptimize.autoCompact": "auto"})


def test_compacts_the_partitions_the_write_touched_with_enough_small_files(tmp_path):
    path = str(tmp_path / "t")
    _appends(path, 4, "b")
    last = _appends(path, 4, "a", start=100)
    settings = AutoCompactSettings(min_num_files=4)
    before = _ids(path)
    version = auto_compact(Storage(path), last.version, _added(last), settings)
    assert version == last.version + 1
    snap = Snapshot.load(path)
    by_part = {}
    for v in snap.files.column("partition_values").to_pylist():
        by_part[v["p"]] = by_part.get(v["p"], 0) + 1
    assert by_part == {"a": 1, "b": 4}  # only the written partition
    assert _ids(path) == before
    commit = log_actions(path, version)
    info = next(a["commitInfo"] for a in commit if "commitInfo" in a)
    assert info["operation"] == "OPTIMIZE"
    assert info["operationParameters"]["auto"] == "true"  # text, as every operation parameter
    assert json.loads(info["operationParameters"]["predicate"]) == ["((`p` <=> 'a'))"]
    assert all(not a[k]["dataChange"] for a in commit for k in ("add", "remove") if k in a)
    assert DLTable(path).history(1)[0]["operation"] == "OPTIMIZE"


def test_nothing_runs_below_min_num_files_or_with_the_property_off(tmp_path):
    on, off = str(tmp_path / "on"), str(tmp_path / "off")
    last = _appends(on, 3)
    assert auto_compact(Storage(on), last.version, _added(last), AutoCompactSettings(min_num_files=4)) is None
    last = _appends(off, 4, conf={})
    assert auto_compact(Storage(off), last.version, _added(last), AutoCompactSettings(min_num_files=4)) is None
    assert Snapshot.load(off).version == last.version and Snapshot.load(on).files.num_rows == 3
    # a commit that added no file triggers nothing
    assert auto_compact(Storage(on), last.version, [], AutoCompactSettings(min_num_files=1)) is None


def test_column_mapping_and_an_unpartitioned_table(tmp_path):
    path = str(tmp_path / "t")
    conf = {**ON, "delta.columnMapping.mode": "name", "delta.minReaderVersion": "2", "delta.minWriterVersion": "5"}
    last = _appends(path, 5, conf=conf, partitioned=False)
    version = auto_compact(Storage(path), last.version, _added(last), AutoCompactSettings(min_num_files=5))
    assert version == last.version + 1
    assert Snapshot.load(path).files.num_rows == 1
    assert _ids(path) == list(range(25))
    info = next(a["commitInfo"] for a in log_actions(path, version) if "commitInfo" in a)
    assert info["operationParameters"]["predicate"] == "[]"


def test_losing_a_race_to_a_rewrite_commits_nothing_and_loses_no_row(tmp_path):
    path = str(tmp_path / "t")
    last = _appends(path, 4)
    files_before = set(parquet_files(path))
    # a concurrent writer rewrites the partition after the write, before the compaction commits
    write_deltalake(path, _rows(500, 3, "a"), mode="overwrite", partition_by=["p"])
    assert auto_compact(Storage(path), last.version, _added(last), AutoCompactSettings(min_num_files=4)) is None
    snap = Snapshot.load(path)
    assert snap.version == last.version + 1  # the overwrite stands; no compaction commit
    assert _ids(path) == [500, 501, 502]
    # the compaction's own files were deleted: only the appends' and the overwrite's remain
    assert set(parquet_files(path)) - files_before == {a["path"] for a in adds_of(path, snap.version)}


def test_a_concurrent_blind_append_keeps_its_rows(tmp_path):
    path = str(tmp_path / "t")
    last = _appends(path, 4)
    commit_arrow(path, _rows(900, 2, "a"))  # lands before the compaction commits
    version = auto_compact(Storage(path), last.version, _added(last), AutoCompactSettings(min_num_files=4))
    assert version == last.version + 2
    assert _ids(path) == list(range(20)) + [900, 901]
    assert Snapshot.load(path).files.num_rows == 2  # the compacted file and the append's


def test_a_row_tracking_table_is_left_to_spark(tmp_path):
    path = str(tmp_path / "t")
    last = _appends(path, 4, conf={**ON, "delta.enableRowTracking": "true"})
    assert auto_compact(Storage(path), last.version, _added(last), AutoCompactSettings(min_num_files=4)) is None
    assert Snapshot.load(path).version == last.version
    assert not os.path.exists(os.path.join(path, "_delta_log", f"{last.version + 1:020d}.json"))
