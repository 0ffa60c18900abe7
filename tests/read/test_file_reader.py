"""Executor-side file reading without Spark: physical -> logical columns, missing columns,
column mapping by name and by field id, widening casts, partition values, DV masks."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from helpers import field, struct

from delta_pyds.errors import DataFileError
from delta_pyds.protocol.schema import parse_type, to_arrow_schema
from delta_pyds.read.file_reader import ReadSpec, read_file
from delta_pyds.read.scan import FileTask
from delta_pyds.storage.store import Storage


def read_all(tmp_path, table: pa.Table, schema_json, *, mode="none", partitions=(), values=(), dv=None):
    pq.write_table(table, tmp_path / "f.parquet")
    schema = parse_type(schema_json)
    spec = ReadSpec(
        storage=Storage(str(tmp_path)),
        output=schema,
        arrow_schema=to_arrow_schema(schema),
        partition_columns=tuple(partitions),
        column_mapping_mode=mode,
    )
    task = FileTask("f.parquet", 1, tuple(values), dv)
    batches = list(read_file(spec, task))
    return pa.Table.from_batches(batches, schema=spec.arrow_schema)


def test_missing_columns_and_nested_fields_read_as_null(tmp_path):
    data = pa.table({"a": [1, 2], "s": pa.array([{"x": 1}, None], pa.struct([("x", pa.int64())]))})
    schema = struct(
        field("a", "long"), field("b", "string"), field("s", struct(field("x", "long"), field("y", "double")))
    )
    got = read_all(tmp_path, data, schema).to_pylist()
    assert got == [{"a": 1, "b": None, "s": {"x": 1, "y": None}}, {"a": 2, "b": None, "s": None}]


def test_column_mapping_name_mode_nested(tmp_path):
    inner = pa.struct([("col-inner", pa.int32())])
    data = pa.table({"col-a": pa.array([1], pa.int32()), "col-s": pa.array([{"col-inner": 7}], inner)})
    schema = struct(
        field("A", "integer", "col-a", 1), field("S", struct(field("inner", "integer", "col-inner", 3)), "col-s", 2)
    )
    assert read_all(tmp_path, data, schema, mode="name").to_pylist() == [{"A": 1, "S": {"inner": 7}}]


def test_column_mapping_id_mode_uses_field_ids(tmp_path):
    f1 = pa.field("renamed-on-disk", pa.int64(), metadata={b"PARQUET:field_id": b"5"})
    data = pa.Table.from_arrays([pa.array([10, 20])], schema=pa.schema([f1]))
    schema = struct(field("v", "long", "col-v", 5))
    assert read_all(tmp_path, data, schema, mode="id").column("v").to_pylist() == [10, 20]


def test_widening_casts(tmp_path):
    data = pa.table(
        {
            "i": pa.array([1], pa.int8()),
            "f": pa.array([1.5], pa.float32()),
            "d": pa.array([dt.date(2024, 1, 2)]),
            "dec": pa.array([3], pa.int32()),
            "ts": pa.array([1], pa.timestamp("ns", tz="UTC")),
            "s": pa.array(["x"], pa.large_string()),
        }
    )
    schema = struct(
        field("i", "long"),
        field("f", "double"),
        field("d", "timestamp_ntz"),
        field("dec", "decimal(12,2)"),
        field("ts", "timestamp"),
        field("s", "string"),
    )
    row = read_all(tmp_path, data, schema).to_pylist()[0]
    assert row == {
        "i": 1,
        "f": 1.5,
        "d": dt.datetime(2024, 1, 2),
        "dec": __import__("decimal").Decimal("3.00"),
        "ts": dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc),
        "s": "x",
    }


def test_partition_columns_materialized(tmp_path):
    data = pa.table({"v": [1, 2, 3]})
    schema = struct(field("v", "long"), field("day", "date"), field("p", "string"))
    got = read_all(tmp_path, data, schema, partitions=("day", "p"), values=("2024-02-29", None))
    assert got.column("day").to_pylist() == [dt.date(2024, 2, 29)] * 3
    assert got.column("p").to_pylist() == [None] * 3


def test_deletion_vector_removes_rows(tmp_path):
    from delta_pyds.protocol.deletion_vectors import inline_descriptor

    data = pa.table({"v": list(range(10))})
    dv = inline_descriptor([0, 3, 9]).to_dict()
    got = read_all(tmp_path, data, struct(field("v", "long")), dv=dv)
    assert got.column("v").to_pylist() == [1, 2, 4, 5, 6, 7, 8]


def test_deletion_vector_beyond_file_is_an_error(tmp_path):
    from delta_pyds.errors import DeletionVectorError
    from delta_pyds.protocol.deletion_vectors import inline_descriptor

    dv = inline_descriptor([50]).to_dict()
    # checked against the file's row count before the vector is expanded (issue 16)
    with pytest.raises(DeletionVectorError, match="deletes row 50.*only 2 rows"):
        read_all(tmp_path, pa.table({"v": [1, 2]}), struct(field("v", "long")), dv=dv)


def test_missing_and_corrupt_data_files(tmp_path):
    schema = parse_type(struct(field("v", "long")))
    spec = ReadSpec(
        storage=Storage(str(tmp_path)), output=schema, arrow_schema=to_arrow_schema(schema), partition_columns=()
    )
    with pytest.raises(DataFileError, match="missing"):
        list(read_file(spec, FileTask("nope.parquet", 1, (), None)))
    (tmp_path / "bad.parquet").write_bytes(b"garbage")
    with pytest.raises(DataFileError, match="not a readable Parquet file"):
        list(read_file(spec, FileTask("bad.parquet", 1, (), None)))


def test_incompatible_physical_type_is_a_clear_error(tmp_path):
    with pytest.raises(DataFileError, match="column .v. as string.*declared type long"):
        read_all(tmp_path, pa.table({"v": ["not a number"]}), struct(field("v", "long")))
