"""Read planning keeps statistics resident only when a predicate needs them (issue 25 item 8):
``Snapshot.scan_files`` (no ``stats``/``stats_parsed``, never decoded from a checkpoint) for
scans without data predicates, the full file table for data skipping; both give the same files."""

from __future__ import annotations

import json
import os

import pyarrow as pa
import pytest

from delta_pyds.expressions.predicates import EqualTo, GreaterThan
from delta_pyds.read.native_plan import plan_native_scan
from delta_pyds.read.scan_plan import plan_scan
from delta_pyds.table.snapshot import Snapshot

N_FILES = 6000
STATS_COLUMNS = 24


def _write_log(path: str, *, checkpoint: bool) -> None:
    """N_FILES adds (stats on STATS_COLUMNS long columns) over 4 commits, partitioned by
    ``part``; with ``checkpoint`` deltalake checkpoints commit 2, and commit 3 (JSON) follows."""
    log = os.path.join(path, "_delta_log")
    os.makedirs(log)
    fields = [{"name": "part", "type": "integer", "nullable": True, "metadata": {}}] + [
        {"name": f"c{i}", "type": "long", "nullable": True, "metadata": {}} for i in range(STATS_COLUMNS)
    ]
    meta = {
        "id": "3b8f1f4e-0000-4000-8000-000000000001",
        "format": {"provider": "parquet", "options": {}},
        "schemaString": json.dumps({"type": "struct", "fields": fields}),
        "partitionColumns": ["part"],
        "configuration": {},
        "createdTime": 0,
    }
    per = N_FILES // 4
    for v in range(4):
        lines = []
        if v == 0:
            lines += [
                json.dumps({"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}}),
                json.dumps({"metaData": meta}),
            ]
        lines.append(json.dumps({"commitInfo": {"timestamp": 1_700_000_000_000 + v, "operation": "WRITE"}}))
        for k in range(v * per, (v + 1) * per):
            stats = {
                "numRecords": 100,
                "minValues": {f"c{i}": k * 100 + i for i in range(STATS_COLUMNS)},
                "maxValues": {f"c{i}": k * 100 + 99 + i for i in range(STATS_COLUMNS)},
                "nullCount": {f"c{i}": 0 for i in range(STATS_COLUMNS)},
            }
            add = {
                "path": f"part={k % 5}/f{k}.parquet",
                "partitionValues": {"part": str(k % 5)},
                "size": 1000 + k,
                "modificationTime": 1_700_000_000_000,
                "dataChange": True,
                "stats": json.dumps(stats),
            }
            lines.append(json.dumps({"add": add}))
        if v == 3:  # a remove after the checkpoint
            lines.append(
                json.dumps({"remove": {"path": "part=0/f0.parquet", "deletionTimestamp": 1, "dataChange": True}})
            )
        with open(os.path.join(log, f"{v:020d}.json"), "w") as f:
            f.write("\n".join(lines) + "\n")
        if v == 2 and checkpoint:
            from deltalake import DeltaTable

            DeltaTable(path).create_checkpoint()


@pytest.fixture(scope="module", params=[True, False], ids=["checkpoint", "json"])
def table(request, tmp_path_factory):
    path = str(tmp_path_factory.mktemp("stats") / "t")
    _write_log(path, checkpoint=request.param)
    if request.param:
        assert os.path.exists(os.path.join(path, "_delta_log", f"{2:020d}.checkpoint.parquet"))
    return path


def test_scan_files_are_the_files_without_statistics(table):
    lean = Snapshot.load(table).scan_files
    full = Snapshot.load(table).files
    assert "stats" not in lean.column_names and "stats" in full.column_names
    assert lean.num_rows == N_FILES - 1
    assert lean.equals(full.drop_columns(["stats"]).select(lean.column_names))


def test_a_plan_without_data_predicates_keeps_no_statistics_resident(table):
    """Arrow memory held by a snapshot and its native plan: before, the snapshot held the whole
    ``stats`` text (6000 files x ~1 KB); now only paths, sizes, partition values."""
    stats_bytes = Snapshot.load(table).files.column("stats").nbytes
    assert stats_bytes > 4_000_000
    before = pa.total_allocated_bytes()
    snapshot = Snapshot.load(table)
    plan = plan_native_scan(snapshot, predicates=[EqualTo("part", 3)])
    held = pa.total_allocated_bytes() - before
    assert plan.files.num_rows == N_FILES // 5
    assert held < stats_bytes // 4, f"{held} bytes held, stats {stats_bytes}"


def test_data_predicates_still_prune_by_statistics_on_both_paths(table):
    snapshot = Snapshot.load(table)
    cut = (N_FILES - 10) * 100
    native = plan_native_scan(snapshot, predicates=[GreaterThan("c0", cut)])
    source = plan_scan(snapshot, predicates=[GreaterThan("c0", cut)], with_stats=False)
    assert native.report is not None and native.report.pruned_by_stats == N_FILES - 1 - 10
    assert sorted(native.files.column("__pydelta_log_path").to_pylist()) == sorted(
        source.files.column("path").to_pylist()
    )
    assert len(source.files) == 10


def test_callers_that_need_statistics_still_get_them(table):
    snapshot = Snapshot.load(table)
    assert "stats" in plan_scan(snapshot).files.column_names
    assert "stats" not in plan_scan(snapshot, with_stats=False).files.column_names
