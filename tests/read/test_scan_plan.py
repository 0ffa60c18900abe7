"""The read core without Spark: snapshot from options, column selection, pruning, the
physical read schema and the executor spec, all from one entry."""

from __future__ import annotations

import os
import shutil

import pytest
from conftest import table_path

from delta_pyds.expressions import predicates as P
from delta_pyds.protocol.schema import SPARK_FIELD_ID, PrimitiveType, StructField, StructType
from delta_pyds.read.native_plan import plan_native_scan
from delta_pyds.read.options import ReadOptions
from delta_pyds.read.scan_plan import (
    cached_snapshot,
    load_snapshot,
    plan_scan,
    project_output,
    select_columns,
)
from delta_pyds.storage.store import Storage
from delta_pyds.table.snapshot import Snapshot


def opts(path, **options) -> ReadOptions:
    return ReadOptions.parse({"path": path, **{k: str(v) for k, v in options.items()}})


def test_snapshot_from_options_version_timestamp_and_zone(tmp_path):
    path = str(tmp_path / "t")
    shutil.copytree(table_path("delta-rs/simple_table"), path)
    log = os.path.join(path, "_delta_log")
    for v in range(5):  # commit v at 2024-01-01 00:00 + v hours (UTC)
        stamp = 1704067200 + 3600 * v
        os.utime(os.path.join(log, f"{v:020d}.json"), (stamp, stamp))
    assert load_snapshot(opts(path)).version == 4
    assert load_snapshot(opts(path, versionAsOf=2)).version == 2
    assert load_snapshot(opts(path, timestampAsOf="2024-01-01T02:30:00Z")).version == 2
    # no offset: the timeZone option, else the caller's default zone
    assert load_snapshot(opts(path, timestampAsOf="2024-01-01 03:30:00", timeZone="+01:00")).version == 2
    assert load_snapshot(opts(path, timestampAsOf="2024-01-01 02:30:00"), default_zone="UTC").version == 2
    assert (
        load_snapshot(opts(path, timestampAsOf="2024-01-01 02:30:00", timeZone="UTC"), default_zone="+05:00").version
        == 2
    )
    with pytest.raises(ValueError, match="timestampAsOf"):  # the zone decides the version: refused
        load_snapshot(opts(path, timestampAsOf="2024-01-01 02:30:00"))
    # a pinned version wins over the options and is shared
    pinned = load_snapshot(opts(path, versionAsOf=1), version=3)
    assert pinned.version == 3 and pinned is cached_snapshot(Storage(path), 3)


def test_columns_are_selected_once_for_every_path():
    snap = Snapshot.load(table_path("kernel-rs/void-column"))
    visible = select_columns(snap.schema, None)
    assert all(f.type.to_json() != "void" for f in visible.fields) and len(visible) < len(snap.schema)
    first, second = visible.names[-1], visible.names[0]
    chosen = select_columns(snap.schema, [first.upper(), second])
    assert chosen.names == [first, second]
    assert plan_scan(snap, columns=[first.upper(), second]).output == chosen
    assert [c.name for c in plan_native_scan(snap, columns=[first.upper(), second]).output] == chosen.names
    void = next(f.name for f in snap.schema.fields if f.type.to_json() == "void")
    for columns in (["nope"], [void]):
        message = f"option columns: {columns[0]} not in the table; available: {', '.join(visible.names)}"
        with pytest.raises(ValueError) as a:
            select_columns(snap.schema, columns)
        with pytest.raises(ValueError) as b:
            plan_native_scan(snap, columns=columns)
        assert str(a.value) == str(b.value) == message
    with pytest.raises(ValueError, match="names columns not in the table: nope"):
        project_output(snap.schema, StructType((StructField("nope", PrimitiveType("long"), True),)))


def test_pruning_files_subset_and_physical_schema_agree_with_the_native_plan():
    snap = Snapshot.load(table_path("delta-rs/delta-0.8.0-partitioned"))
    preds = [P.EqualTo("year", "2021")]
    scan = plan_scan(snap, predicates=preds)
    native = plan_native_scan(snap, predicates=preds)
    assert sorted(scan.files.column("path").to_pylist()) == sorted(
        native.files.column("__pydelta_log_path").to_pylist()
    )
    assert scan.report == native.report and scan.report.files_kept < scan.report.total_files
    assert scan.read_schema == native.read_schema and scan.read_schema.names == ["value"]
    subset = snap.files.slice(0, 2)
    assert plan_scan(snap, files=subset).files.num_rows == 2
    # the executor spec reads every row group unless asked to skip (rewrites see every row)
    assert scan.read_spec().predicates == ()
    assert scan.read_spec(skip_row_groups=True).predicates == tuple(preds)
    assert scan.read_spec().partition_columns == tuple(snap.partition_columns)


@pytest.mark.parametrize("mode", ["name", "id"])
def test_physical_read_schema_under_column_mapping(mode):
    snap = Snapshot.load(table_path(f"kernel-rs/cdf-column-mapping-{mode}-mode"))
    scan = plan_scan(snap)
    data = [f for f in scan.output.fields if f.name not in snap.partition_columns]
    assert scan.read_schema.names == [f.physical_name(mode) for f in data]
    if mode == "id":
        assert [f.metadata[SPARK_FIELD_ID] for f in scan.read_schema.fields] == [f.field_id for f in data]
