"""Auto compaction after write_arrow (delta_pyds.operations.arrow_write): the table property
turns it on, the write options (the session confs' names: no session here) turn it on or off
and set minNumFiles, the compaction is an OPTIMIZE commit with auto=true, a bad option value
writes nothing, and a compaction that loses a race to a concurrent writer commits nothing and
loses no row. Rows are compared with deltalake."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest
from deltalake import DeltaTable as DLTable
from deltalake import write_deltalake
from helpers import deltalake_table, log_actions, parquet_files

import delta_pyds.operations.auto_compact as auto_compact_module
from delta_pyds.errors import SettingValueError
from delta_pyds.operations.arrow_write import write_arrow
from delta_pyds.operations.auto_compact import CONF_KEYS
from delta_pyds.table.snapshot import Snapshot
from delta_pyds.write.options import AUTO_COMPACT_OPTIONS

PROPERTY = {"delta.autoOptimize.autoCompact": "true"}
ENABLED = "spark.databricks.delta.autoCompact.enabled"
MIN_FILES = "spark.databricks.delta.autoCompact.minNumFiles"


def _rows(start, n, p="a"):
    return pa.table({"id": pa.array(range(start, start + n), pa.int64()), "p": pa.array([p] * n)})


def _ids(path):
    return sorted(deltalake_table(path).column("id").to_pylist())


def _info(path, version):
    return next(a["commitInfo"] for a in log_actions(path, version) if "commitInfo" in a)


def test_the_option_names_are_the_session_confs():
    assert set(AUTO_COMPACT_OPTIONS) == set(CONF_KEYS)


def test_the_table_property_turns_it_on(tmp_path):
    path = str(tmp_path / "t")
    opts = {MIN_FILES: "4"}  # the settings ride on the options; the property switches it on
    write_arrow(path, _rows(0, 5), options={"partitionBy": "p", **PROPERTY, **opts})
    for i in (1, 2):
        r = write_arrow(path, _rows(i * 5, 5), options=opts)
        assert _info(path, r.version)["operation"] == "WRITE"
    last = write_arrow(path, _rows(15, 5), options=opts)  # the fourth small file
    assert _info(path, last.version)["operation"] == "WRITE"  # the user's commit is returned
    snap = Snapshot.load(path)
    assert snap.version == last.version + 1 and snap.files.num_rows == 1
    info = _info(path, snap.version)
    assert info["operation"] == "OPTIMIZE" and info["operationParameters"]["auto"] == "true"
    assert json.loads(info["operationParameters"]["predicate"]) == ["((`p` <=> 'a'))"]
    commit = log_actions(path, snap.version)
    assert all(not a[k]["dataChange"] for a in commit for k in ("add", "remove") if k in a)
    assert DLTable(path).history(1)[0]["operation"] == "OPTIMIZE"
    assert _ids(path) == list(range(20))


def test_the_options_turn_it_on_and_off(tmp_path):
    on, off = str(tmp_path / "on"), str(tmp_path / "off")
    for i in range(3):  # no property: the option turns it on
        last = write_arrow(on, _rows(i * 5, 5), options={ENABLED: "true", MIN_FILES: "3"})
    assert Snapshot.load(on).version == last.version + 1 and Snapshot.load(on).files.num_rows == 1
    for i in range(3):  # the property is on: the option false wins
        last = write_arrow(off, _rows(i * 5, 5), options={**PROPERTY, ENABLED: "FALSE", MIN_FILES: "3"})
    assert Snapshot.load(off).version == last.version and Snapshot.load(off).files.num_rows == 3
    plain = str(tmp_path / "plain")  # neither: off (the default minNumFiles would need 50 anyway)
    for i in range(3):
        last = write_arrow(plain, _rows(i * 5, 5), options={MIN_FILES: "2"})
    assert Snapshot.load(plain).version == last.version
    assert _ids(on) == _ids(off) == _ids(plain) == list(range(15))


def test_a_bad_option_value_writes_nothing(tmp_path):
    path = str(tmp_path / "t")
    write_arrow(path, _rows(0, 5))
    with pytest.raises(SettingValueError, match="minNumFiles"):
        write_arrow(path, _rows(5, 5), options={MIN_FILES: "many"})
    assert Snapshot.load(path).version == 0 and _ids(path) == list(range(5))


def test_losing_a_race_commits_nothing_and_loses_no_row(tmp_path, monkeypatch):
    path = str(tmp_path / "t")
    for i in range(2):
        write_arrow(path, _rows(i * 5, 5), options={"partitionBy": "p", **PROPERTY} if i == 0 else {})
    real = auto_compact_module.rewrite_locally
    before = set(parquet_files(path))

    def rewrite_then_lose(snap, active, bins, target):
        adds = real(snap, active, bins, target)
        # a concurrent writer rewrites the partition before the compaction commits
        write_deltalake(path, _rows(500, 3), mode="overwrite", partition_by=["p"])
        return adds

    monkeypatch.setattr(auto_compact_module, "rewrite_locally", rewrite_then_lose)
    last = write_arrow(path, _rows(10, 5), options={MIN_FILES: "3"})
    snap = Snapshot.load(path)
    assert snap.version == last.version + 1  # the overwrite; no compaction commit
    assert _info(path, snap.version)["operation"] != "OPTIMIZE"
    assert _ids(path) == [500, 501, 502]
    # the compaction's files were deleted: only the write's and the overwrite's are new
    new = set(parquet_files(path)) - before
    assert len(new) == 2
