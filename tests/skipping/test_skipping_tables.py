"""Data skipping on real tables with statistics written by delta-spark, Databricks,
delta-rs and kernel writers (tests/data, copied byte-identical from ../shared/tables).

For every predicate the independent answer is computed by reading the data files with
pyarrow and evaluating the predicate on every row (Spark semantics): every file holding a
matching row must be kept, and the expected number of files must be pruned."""

from __future__ import annotations

import datetime as dt
import os
from decimal import Decimal

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from conftest import table_path
from helpers import ts
from test_skipping import spark_eval

from delta_pyds.expressions import predicates as P
from delta_pyds.protocol.schema import StructType, to_arrow_type
from delta_pyds.skipping.files import prune_files, select_row_groups
from delta_pyds.table.snapshot import Snapshot


# ------------------------------------------------------------------------ the answer
def _leaves(schema: StructType, mode: str, prefix=(), physical=()):
    for f in schema.fields:
        path, phys = prefix + (f.name,), physical + (f.physical_name(mode),)
        if isinstance(f.type, StructType):
            yield from _leaves(f.type, mode, path, phys)
        else:
            yield path, phys, f


def _column(table: pa.Table, physical: tuple):
    if physical[0] not in table.column_names:
        return None
    arr = table.column(physical[0]).combine_chunks()
    for name in physical[1:]:
        if not pa.types.is_struct(arr.type) or arr.type.get_field_index(name) < 0:
            return None
        arr = pc.struct_field(arr, [arr.type.get_field_index(name)])
    return arr


def _partition_value(raw, dtype):
    if raw is None or raw == "":
        return None
    if dtype.simple_string() in ("long", "integer", "short", "byte"):
        return int(raw)
    return raw


def file_rows(snapshot: Snapshot, row: dict) -> list[dict]:
    """Every physical row of one data file as {logical column path: value}."""
    mode = snapshot.column_mapping_mode
    table = pq.read_table(os.path.join(snapshot.table_root, row["path"]))
    partition_names = {c.lower() for c in snapshot.partition_columns}
    columns = {}
    for path, phys, f in _leaves(snapshot.schema, mode):
        if len(path) == 1 and path[0].lower() in partition_names:
            value = _partition_value((row.get("partition_values") or {}).get(phys[0]), f.type)
            columns[path] = [value] * table.num_rows
            continue
        arr = _column(table, phys)
        if arr is None:
            columns[path] = [None] * table.num_rows
            continue
        target = to_arrow_type(f.type)
        if arr.type != target:
            arr = arr.cast(target, safe=False)  # older narrower types, INT96 nanoseconds
        columns[path] = arr.to_pylist()
    return [{p: columns[p][i] for p in columns} for i in range(table.num_rows)]


def check(name: str, preds: list, expected_kept: int):
    snapshot = Snapshot.load(table_path(name))
    files = snapshot.files
    out, report = prune_files(
        files,
        preds,
        schema=snapshot.schema,
        partition_columns=snapshot.partition_columns,
        column_mapping_mode=snapshot.column_mapping_mode,
    )
    kept = set(out.column("path").to_pylist())
    matching = set()
    for row in files.to_pylist():
        if any(all(spark_eval(p, r) is True for p in preds) for r in file_rows(snapshot, row)):
            matching.add(row["path"])
    assert matching <= kept, f"pruned files that hold matching rows: {sorted(matching - kept)}"
    assert len(kept) == expected_kept, (report, sorted(kept), sorted(matching))
    assert report.files_kept == expected_kept
    return report


# --------------------------------------------------------------------------- tables
@pytest.mark.parametrize(
    "preds, expected",
    [
        ([P.EqualTo("id", 150)], 1),
        ([P.GreaterThan("id", 450)], 2),
        ([P.Or(P.LessThan("id", 50), P.GreaterThan("id", 550))], 2),
        ([P.Not(P.GreaterThanOrEqual("id", 101))], 1),
        ([P.In("id", [5, 305])], 2),
        ([P.EqualTo("name", "name_250")], 2),  # lexicographic: name_1..name_99 holds it too
        ([P.LessThan("salary", 60100)], 1),
        ([P.IsNull("name")], 0),
        ([P.GreaterThan("ts_col", ts(1970, 1, 1, 0, 0, 10))], 6),  # within the 59 s widening
        ([P.GreaterThan("ts_col", ts(1970, 1, 1, 0, 1, 8))], 2),
        ([P.GreaterThan("ts_col", ts(1970, 1, 1, 0, 1, 12))], 0),
        ([P.GreaterThan("id", 100), P.LessThan("age", 20)], 0),
    ],
)
def test_parsed_stats_checkpoint_and_json(preds, expected):
    # files 0-3 get stats_parsed from the v3 checkpoint, files 4-5 JSON stats
    check("kernel-rs/parsed-stats", preds, expected)


@pytest.mark.parametrize(
    "preds, expected",
    [
        # file 2 holds 00:00:04.000500 but its stats say max 00:00:04.000
        ([P.GreaterThan("ts_col", ts(1970, 1, 1, 0, 0, 4, 400))], 3),
        ([P.EqualTo("ts_col", ts(1970, 1, 1, 0, 0, 4, 500))], 3),
        ([P.GreaterThan("ts_col", ts(1970, 1, 1, 0, 1, 8))], 0),
        ([P.LessThan("ts_col", ts(1969, 12, 31, 23, 59, 59))], 3),
        ([P.LessThan("ts_col", ts(1969, 12, 31, 23, 58, 59))], 0),
        ([P.EqualTo("id", 4)], 1),
    ],
)
def test_timestamp_truncation_stats(preds, expected):
    check("kernel-rs/timestamp-truncation-stats", preds, expected)


@pytest.mark.parametrize(
    "preds, expected",
    [
        ([P.EqualTo("byte_col", 3)], 1),
        ([P.EqualTo("byte_col", 9)], 0),
        ([P.GreaterThan("short_col", 500)], 0),
        ([P.In("int_col", [3000, 9999])], 1),
        ([P.LessThan("long_col", 10000)], 0),
        ([P.EqualTo("float_col", 3.140000104904175)], 1),  # float 3.14f, stats say 3.14
        ([P.LessThan("float_col", 1.4)], 0),
        ([P.GreaterThan("double_col", 6.28)], 1),  # '>' never prunes on a double max (NaN)
        ([P.EqualTo("double_col", 7.0)], 0),
        ([P.LessThan("date_col", dt.date(2023, 1, 15))], 0),
        ([P.EqualTo("date_col", dt.date(2023, 12, 31))], 1),
        ([P.EqualTo("timestamp_col", ts(2024, 12, 25))], 1),
        ([P.GreaterThan("timestamp_ntz_col", dt.datetime(2025, 1, 1))], 0),
        ([P.EqualTo("string_col", "delta")], 1),
        ([P.EqualTo("string_col", "zeta")], 0),
        ([P.StartsWith("string_col", "g")], 1),
        ([P.StartsWith("string_col", "h")], 0),
        ([P.GreaterThan("decimal_col", Decimal("999.99"))], 0),
        ([P.EqualTo("decimal_col", Decimal("456.78"))], 1),
        ([P.EqualTo(("nested_struct", "inner_int"), 30)], 1),
        ([P.EqualTo(("nested_struct", "inner_int"), 60)], 0),
        ([P.StartsWith(("nested_struct", "inner_string"), "nested_")], 1),
        ([P.EqualTo("boolean_col", True)], 1),
        ([P.EqualTo("binary_col", b"\x00")], 1),
        ([P.IsNull("byte_col")], 1),
        ([P.IsNull("array_col")], 1),
        ([P.IsNotNull("map_col")], 1),
        ([P.Not(P.EqualTo("string_col", "beta"))], 1),
    ],
)
def test_all_types_with_column_mapping(preds, expected):
    check("kernel-rs/stats-writing-all-types/delta", preds, expected)


@pytest.mark.parametrize(
    "preds, expected",
    [
        ([P.EqualTo("byte_long", 1)], 1),
        ([P.GreaterThan("byte_long", 100)], 1),
        ([P.GreaterThan("int_long", 2), P.LessThan("int_long", 10)], 0),
        ([P.EqualTo("float_double", 3.4000000953674316)], 1),  # old file: float stats "3.4"
        ([P.EqualTo("byte_double", 5.0)], 1),
        ([P.GreaterThan("int_double", 7.5)], 2),
        ([P.EqualTo("decimal_decimal_same_scale", Decimal("123.45"))], 1),
        ([P.EqualTo("decimal_decimal_greater_scale", Decimal("12345678901.23456"))], 1),
        ([P.LessThan("decimal_decimal_greater_scale", Decimal("67.89"))], 0),
        ([P.EqualTo("int_decimal", Decimal(3))], 1),
        ([P.GreaterThan("long_decimal", 5)], 1),
        ([P.EqualTo("short_decimal", Decimal("12345.6"))], 1),
        ([P.EqualTo("date_timestamp_ntz", dt.datetime(2024, 9, 9))], 1),
        ([P.GreaterThan("date_timestamp_ntz", dt.datetime(2024, 9, 9, 12))], 1),
    ],
)
def test_type_widening(preds, expected):
    check("kernel-rs/type-widening", preds, expected)


@pytest.mark.parametrize(
    "preds, expected",
    [
        ([P.EqualTo("year", "2021")], 3),
        ([P.In("month", ["1", "2"])], 3),
        ([P.GreaterThan("day", "3")], 3),
        ([P.Not(P.EqualTo("year", "2020"))], 3),
        ([P.Or(P.And(P.EqualTo("year", "2020"), P.EqualTo("month", "2")), P.EqualTo("day", "20"))], 3),
        ([P.EqualTo("YEAR", "2020"), P.EqualTo("Month", "1")], 1),
        ([P.EqualTo("value", "x")], 6),  # no stats in this table
        ([P.EqualTo("year", "2019")], 0),
    ],
)
def test_partitioned_without_stats(preds, expected):
    report = check("delta-rs/delta-0.8.0-partitioned", preds, expected)
    assert report.pruned_by_stats == 0


@pytest.mark.parametrize(
    "preds, expected",
    [
        ([P.IsNull("n")], 2),
        ([P.IsNotNull("n")], 2),
        ([P.EqualTo("n", "non-null")], 1),
        ([P.EqualTo("part", 1)], 1),
        ([P.GreaterThanOrEqual("part", 1), P.GreaterThan("id", 13)], 1),
        ([P.GreaterThan("value", "value-9")], 0),
        ([P.Or(P.EqualTo("part", 0), P.EqualTo("n", "non-null-mix"))], 2),
    ],
)
def test_mixed_nulls(preds, expected):
    check("kernel-rs/mixed-nulls", preds, expected)


@pytest.mark.parametrize(
    "preds, expected",
    [
        ([P.EqualTo("Company Very Short", "BME")], 1),
        ([P.EqualTo(("company very short",), "BMS")], 1),
        ([P.EqualTo("Super Name", "Timothy Lamb")], 1),
        ([P.StartsWith("Super Name", "A")], 1),
        ([P.GreaterThan("Super Name", "Z")], 0),
    ],
)
def test_column_mapping_partitions(preds, expected):
    check("delta-rs/table_with_column_mapping", preds, expected)


@pytest.mark.parametrize(
    "preds, expected",
    [
        ([P.IsNull("k")], 1),
        ([P.EqualTo("k", "A")], 1),
        ([P.Not(P.EqualTo("k", "A"))], 0),
        ([P.EqualNullSafe("k", None)], 1),
        ([P.Not(P.EqualNullSafe("k", "A"))], 1),
    ],
)
def test_null_partition(preds, expected):
    check("delta-rs/delta-0.8.0-null-partition", preds, expected)


@pytest.mark.parametrize(
    "preds, expected",
    [
        ([P.EqualTo("value", 5)], 1),
        ([P.GreaterThan("value", 9)], 0),
        ([P.IsNull("value")], 1),  # tightBounds=false: no conclusion from nullCount
        ([P.IsNotNull("value")], 1),
    ],
)
def test_deletion_vector_wide_bounds(preds, expected):
    check("delta-rs/table-with-dv-small", preds, expected)


@pytest.mark.parametrize(
    "preds, expected",
    [
        ([P.EqualTo("integer", 3)], 1),
        ([P.GreaterThan("integer", 10)], 1),
        ([P.EqualTo("decimal", Decimal("-5.678"))], 12),
        ([P.EqualTo("decimal", Decimal("5.678"))], 0),
        ([P.EqualTo("date", dt.date(2022, 10, 25))], 0),
        ([P.GreaterThan("timestamp", ts(2022, 10, 24, 23))], 12),  # within the 59 s widening
        ([P.GreaterThan("timestamp", ts(2022, 10, 24, 23, 2))], 0),
        ([P.EqualTo(("nested_struct", "struct_element", "nested_struct_element"), "nope")], 0),
        ([P.IsNull("null")], 12),
        ([P.IsNotNull("null")], 0),
        ([P.IsNotNull(("struct_of_array_of_map", "struct_element"))], 12),
        ([P.EqualTo("new_column", 1)], 11),  # only the file written after the column was added has stats
    ],
)
def test_struct_only_stats_in_checkpoint(preds, expected):
    check("delta-rs/delta-1.2.1-only-struct-stats", preds, expected)


@pytest.mark.parametrize(
    "preds, expected",
    [
        ([P.GreaterThan("BIG_DATE", ts(9999, 12, 30, 12))], 1),
        ([P.EqualTo("NORMAL_DATE", ts(2022, 2, 1))], 1),
        ([P.LessThan("SOME_VALUE", 2)], 1),
    ],
)
def test_edge_timestamps(preds, expected):
    check("delta-rs/table_with_edge_timestamps", preds, expected)


# -------------------------------------------------------------------- row groups
@pytest.mark.parametrize(
    "pred, expected",
    [
        (P.EqualTo(("numeric", "ints", "int64"), 1000000002), [0]),
        (P.EqualTo(("numeric", "ints", "int64"), 5), []),
        (P.LessThan(("numeric", "ints", "int8"), 0), []),
        (P.EqualTo(("chrono", "timestamp"), ts(2000, 1, 1)), [0]),  # INT96: no statistics
        (P.GreaterThan(("chrono", "timestamp_ntz"), dt.datetime(1970, 1, 2, 0, 4)), []),
        (P.GreaterThanOrEqual(("chrono", "timestamp_ntz"), dt.datetime(1970, 1, 2, 0, 4)), [0]),
        (P.LessThan(("chrono", "date32"), dt.date(1971, 1, 1)), []),
        (P.EqualTo(("numeric", "decimals", "decimal32"), Decimal("13.032")), [0]),
        (P.GreaterThan(("numeric", "decimals", "decimal128"), Decimal("15.128")), []),
        (P.EqualTo(("numeric", "decimals", "decimal64"), Decimal("11.064")), [0]),
        (P.StartsWith(("varlen", "utf8"), "f"), []),
        (P.In(("varlen", "utf8"), ["b", "zz"]), [0]),
        (P.EqualTo("bool", False), [0]),
        (P.GreaterThan(("numeric", "floats", "float64"), 2e15), [0]),  # NaN could be there
        (P.LessThan(("numeric", "floats", "float32"), 100.0), []),
        (P.EqualTo("missing", 1), [0]),  # not in the file
        (P.IsNull(("numeric", "ints", "int16")), []),
        (P.IsNull("bool"), [0]),
    ],
)
def test_row_group_skipping_table(pred, expected):
    snapshot = Snapshot.load(table_path("kernel-rs/parquet_row_group_skipping"))
    path = os.path.join(snapshot.table_root, snapshot.files.column("path")[0].as_py())
    metadata = pq.ParquetFile(path).metadata
    selected = select_row_groups(
        metadata, [pred], schema=snapshot.schema, column_mapping_mode=snapshot.column_mapping_mode
    )
    assert selected == expected
    rows = file_rows(snapshot, snapshot.files.to_pylist()[0])
    if any(spark_eval(pred, r) is True for r in rows):
        assert selected == [0]
    # the file-level stats of this table hold only numRecords: nothing is pruned there
    out, _ = prune_files(
        snapshot.files, [pred], schema=snapshot.schema, partition_columns=[], column_mapping_mode="none"
    )
    assert out.num_rows == 1
