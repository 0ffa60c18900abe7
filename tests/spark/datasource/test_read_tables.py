"""Reading real tables written by delta-spark and delta-rs through spark.read.format("pydelta"),
cross-checked row by row against the deltalake package (an independent reader)."""

from __future__ import annotations

import datetime

import pytest
from conftest import table_path
from helpers import INTEROP_TABLES, arrow_rows, deltalake_table, spark_rows


@pytest.mark.parametrize("name", INTEROP_TABLES)
def test_rows_match_deltalake(spark, name):
    path = table_path(name)
    df = spark.read.format("pydelta").load(path)
    expected_table = deltalake_table(path)
    columns = df.columns
    assert set(columns) <= set(expected_table.column_names), (columns, expected_table.column_names)
    assert spark_rows(df) == arrow_rows(expected_table, columns)


def test_type_widening_casts_old_files(spark):
    """byte/int -> long, float/int -> double, decimal widening, int -> decimal, date ->
    timestamp_ntz: the old file is read in the widened types (deltalake refuses this table)."""
    df = spark.read.format("pydelta").load(table_path("kernel-rs/type-widening"))
    assert df.schema.simpleString() == (
        "struct<byte_long:bigint,int_long:bigint,float_double:double,byte_double:double,"
        "short_double:double,int_double:double,decimal_decimal_same_scale:decimal(20,2),"
        "decimal_decimal_greater_scale:decimal(20,5),byte_decimal:decimal(4,1),"
        "short_decimal:decimal(6,1),int_decimal:decimal(11,1),long_decimal:decimal(21,1),"
        "date_timestamp_ntz:timestamp_ntz>"
    )
    rows = {r.byte_long: r for r in df.collect()}
    old = rows[1]
    assert (old.int_long, old.byte_double, old.short_double, old.int_double) == (2, 5.0, 6.0, 7.0)
    assert old.float_double == pytest.approx(3.4, rel=1e-7)
    assert str(old.decimal_decimal_same_scale) == "123.45"
    assert str(old.decimal_decimal_greater_scale) == "67.89000"
    assert [str(old.byte_decimal), str(old.short_decimal), str(old.int_decimal), str(old.long_decimal)] == [
        "1.0",
        "2.0",
        "3.0",
        "4.0",
    ]
    assert old.date_timestamp_ntz == datetime.datetime(2024, 9, 9, 0, 0)
    new = rows[9223372036854775807]
    assert str(new.long_decimal) == "123456789012345678.9"
    assert new.date_timestamp_ntz == datetime.datetime(2024, 9, 9, 12, 34, 56, 123456)


def test_int96_timestamps_beyond_nanosecond_range(spark):
    """INT96 timestamps in year 9999 (outside the int64-nanosecond range) read exactly."""
    df = spark.read.format("pydelta").load(table_path("delta-rs/table_with_edge_timestamps"))
    got = sorted((r.SOME_VALUE, r.BIG_DATE, r.NORMAL_DATE) for r in df.collect())
    assert got == [
        (1, datetime.datetime(9999, 12, 31, 0, 0), datetime.datetime(2022, 1, 1, 0, 0)),
        (2, datetime.datetime(9999, 12, 30, 0, 0), datetime.datetime(2022, 2, 1, 0, 0)),
    ]
