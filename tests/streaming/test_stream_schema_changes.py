"""A stream never crosses a non-additive schema change (delta-spark's DeltaSource rules without
a schema tracking log): a column renamed or dropped (and re-added) under column mapping stops a
restarted query and a running one with StreamingSchemaChangeError
(DELTA_STREAMING_INCOMPATIBLE_SCHEMA_CHANGE_USE_SCHEMA_LOG); additive changes, enabling column
mapping and, on type widening tables, files older than a widening are read on."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest
from test_streaming import Stream

from delta_pyds.errors import StreamingError, StreamingSchemaChangeError
from delta_pyds.operations.schema_changes import add_columns, alter_column, drop_columns, rename_column
from delta_pyds.write.plan import commit_arrow

CLASS = "DELTA_STREAMING_INCOMPATIBLE_SCHEMA_CHANGE_USE_SCHEMA_LOG"


def _write(path, **columns):
    commit_arrow(path, pa.table(columns), options={"delta.columnMapping.mode": "name"})


def _ids(path, ids, **extra):
    _write(path, id=pa.array(ids, pa.int64()), v=pa.array([f"v{i}" for i in ids]), **extra)


def _mapped_table(path):
    _ids(path, [1, 2])
    return Stream(path)


@pytest.mark.parametrize("change", ["rename", "drop", "drop and re-add"])
def test_a_restart_across_a_non_additive_change_is_refused(tmp_path, change):
    path = str(tmp_path / "t")
    s = _mapped_table(path)
    s.drain()  # then the query stops
    _ids(path, [3])  # written before the change: the stream has not read it yet
    if change == "rename":
        rename_column(path, "v", "w")
    else:
        drop_columns(path, ["v"])
        if change == "drop and re-add":
            add_columns(path, [("v", "string", None)])
    s.restart()
    at_start = rf"^\[{CLASS}\] .*(renamed|dropped).*when the stream \(re\)started"
    with pytest.raises(StreamingSchemaChangeError, match=at_start):
        s.step()
    assert [r[0] for r in s.all_rows()] == [1, 2]  # nothing read under the new schema
    with pytest.raises(StreamingSchemaChangeError, match=CLASS):  # nor on the next restart
        s.restart()
        s.step()


@pytest.mark.parametrize("change", ["rename", "drop and re-add"])
def test_a_restart_right_after_a_non_additive_change_is_refused(tmp_path, change):
    # nothing written between the last batch and the change: the restart would read only new-schema
    # files, after delivering old-schema ones; a new query starting at the change reads on
    path = str(tmp_path / "t")
    s = _mapped_table(path)
    s.drain()
    if change == "rename":
        rename_column(path, "v", "w")
        _write(path, id=pa.array([3], pa.int64()), w=pa.array(["w3"]))
    else:
        drop_columns(path, ["v"])
        add_columns(path, [("v", "string", None)])
        _ids(path, [3])
    s.restart()
    with pytest.raises(StreamingSchemaChangeError, match=rf"^\[{CLASS}\] .*when the stream \(re\)started"):
        s.step()
    fresh = Stream(path, startingVersion=1)
    fresh.drain()
    assert [r[0] for r in fresh.all_rows()] == [3]


@pytest.mark.parametrize("change", ["rename", "drop"])
def test_a_running_stream_stops_at_a_non_additive_change(tmp_path, change):
    path = str(tmp_path / "t")
    s = _mapped_table(path)
    s.drain()
    if change == "rename":
        rename_column(path, "v", "w")
    else:
        drop_columns(path, ["v"])
    with pytest.raises(StreamingSchemaChangeError, match=rf"^\[{CLASS}\] .*during the stream"):
        s.step()


def test_a_nested_rename_is_non_additive(tmp_path):
    path = str(tmp_path / "t")
    _write(path, id=pa.array([1], pa.int64()), s=pa.array([{"a": 1}], pa.struct([("a", pa.int64())])))
    s = Stream(path)
    s.drain()
    _write(path, id=pa.array([2], pa.int64()), s=pa.array([{"a": 2}], pa.struct([("a", pa.int64())])))
    rename_column(path, "s.a", "b")
    s.restart()
    with pytest.raises(StreamingSchemaChangeError, match="column s.a was renamed to s.b"):
        s.step()


def test_an_added_column_is_read_on_after_a_restart(tmp_path):
    path = str(tmp_path / "t")
    s = _mapped_table(path)
    s.drain()
    _ids(path, [3])
    add_columns(path, [("x", "string", None)])
    _ids(path, [4], x=pa.array(["d"]))
    s.restart()
    s.drain()
    assert s.all_rows() == [(1, "v1", None), (2, "v2", None), (3, "v3", None), (4, "v4", "d")]


def test_enabling_column_mapping_is_additive_and_removing_it_is_not():
    from delta_pyds.protocol.actions import Metadata
    from delta_pyds.streaming.schema_checks import non_additive_change

    def meta(mode, physical):
        field = {"name": "a", "type": "long", "nullable": True, "metadata": {}}
        if physical:
            field["metadata"] = {"delta.columnMapping.id": 1, "delta.columnMapping.physicalName": physical}
        conf = {"delta.columnMapping.mode": mode} if mode else {}
        return Metadata("t", json.dumps({"type": "struct", "fields": [field]}), configuration=conf)

    assert non_additive_change(meta(None, None), meta("name", "a")) is None  # upgrade keeps the names
    assert non_additive_change(meta(None, None), meta("name", "col-x")) == "column a was dropped"
    assert non_additive_change(meta("name", "a"), meta(None, None)) == "column mapping was removed"
    assert non_additive_change(meta(None, None), meta(None, None)) is None


def test_files_older_than_a_type_widening_are_read_widened(tmp_path):
    path = str(tmp_path / "t")
    commit_arrow(path, pa.table({"id": pa.array([1], pa.int32())}), options={"delta.enableTypeWidening": "true"})
    s = Stream(path)
    s.drain()
    commit_arrow(path, pa.table({"id": pa.array([2], pa.int32())}))
    alter_column(path, "id", data_type="long")
    commit_arrow(path, pa.table({"id": pa.array([3], pa.int64())}))
    s.restart()
    s.drain()
    assert [r[0] for r in s.all_rows()] == [1, 2, 3]


def test_a_type_change_met_by_a_running_stream_asks_for_a_restart(tmp_path):
    path = str(tmp_path / "t")
    commit_arrow(path, pa.table({"id": pa.array([1], pa.int32())}), options={"delta.enableTypeWidening": "true"})
    s = Stream(path)
    s.drain()
    alter_column(path, "id", data_type="long")
    commit_arrow(path, pa.table({"id": pa.array([2], pa.int64())}))
    with pytest.raises(StreamingError, match="changed type.*restart the query") as err:
        s.step()
    assert not isinstance(err.value, StreamingSchemaChangeError)
    s.restart()
    s.drain()
    assert [r[0] for r in s.all_rows()] == [1, 2]


def test_a_change_feed_stream_restarted_right_after_a_rename_is_refused(tmp_path):
    path = str(tmp_path / "t")
    commit_arrow(
        path,
        pa.table({"id": pa.array([1], pa.int64()), "v": pa.array(["v1"])}),
        options={"delta.columnMapping.mode": "name", "delta.enableChangeDataFeed": "true"},
    )
    s = Stream(path, readChangeFeed="true")
    s.drain()
    rename_column(path, "v", "w")
    commit_arrow(path, pa.table({"id": pa.array([2], pa.int64()), "w": pa.array(["w2"])}))
    s.restart()
    with pytest.raises(StreamingSchemaChangeError, match=CLASS):
        s.step()
