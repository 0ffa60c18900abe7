"""Partition value (de)serialization per the protocol, without Spark."""

from __future__ import annotations

import datetime as dt
import decimal

import pyarrow as pa
import pytest

from delta_pyds.errors import CorruptLogError
from delta_pyds.protocol.partition_values import parse_partition_values, serialize_partition_value
from delta_pyds.protocol.schema import DecimalType, PrimitiveType

UTC = dt.timezone.utc


@pytest.mark.parametrize(
    "type_name,raw,expected",
    [
        ("string", ["a b", "", None, "ü/=%"], ["a b", None, None, "ü/=%"]),
        ("long", ["-9223372036854775808", "0", None], [-9223372036854775808, 0, None]),
        ("integer", ["12", ""], [12, None]),
        ("short", ["-3"], [-3]),
        ("byte", ["127"], [127]),
        ("double", ["1.5", "NaN", "-Infinity", "1e300"], [1.5, "nan", float("-inf"), 1e300]),
        ("float", ["2.5"], [2.5]),
        ("boolean", ["true", "false", "TRUE", None], [True, False, True, None]),
        ("date", ["2021-02-28", "0001-01-01"], [dt.date(2021, 2, 28), dt.date(1, 1, 1)]),
        ("binary", ["abc"], [b"abc"]),
        (
            "timestamp",
            [
                "2021-01-01 10:00:00",
                "2021-01-01 10:00:00.123456",
                "2021-01-01T10:00:00.5Z",
                "2021-01-01 12:00:00+02:00",
                None,
            ],
            [
                dt.datetime(2021, 1, 1, 10, tzinfo=UTC),
                dt.datetime(2021, 1, 1, 10, 0, 0, 123456, tzinfo=UTC),
                dt.datetime(2021, 1, 1, 10, 0, 0, 500000, tzinfo=UTC),
                dt.datetime(2021, 1, 1, 10, tzinfo=UTC),
                None,
            ],
        ),
        ("timestamp_ntz", ["2021-01-01 10:00:00.000001"], [dt.datetime(2021, 1, 1, 10, 0, 0, 1)]),
    ],
)
def test_parse(type_name, raw, expected):
    got = parse_partition_values(pa.array(raw, pa.string()), PrimitiveType(type_name)).to_pylist()
    if "nan" in expected:
        assert got[1] != got[1]
        got[1] = expected[1] = "nan"
    assert got == expected


def test_parse_decimal_and_all_null():
    assert parse_partition_values(pa.array(["1.50", "-2", None]), DecimalType(5, 2)).to_pylist() == [
        decimal.Decimal("1.50"),
        decimal.Decimal("-2.00"),
        None,
    ]
    assert parse_partition_values(pa.nulls(2), PrimitiveType("long")).to_pylist() == [None, None]


def test_unparseable_value_names_the_column():
    with pytest.raises(CorruptLogError, match="'year'"):
        parse_partition_values(pa.array(["20x1"]), PrimitiveType("integer"), column="year")


@pytest.mark.parametrize(
    "value,type_,expected",
    [
        (None, PrimitiveType("string"), None),
        (True, PrimitiveType("boolean"), "true"),
        (dt.date(2020, 1, 2), PrimitiveType("date"), "2020-01-02"),
        (dt.datetime(2020, 1, 2, 3, 4, 5, 6, tzinfo=UTC), PrimitiveType("timestamp"), "2020-01-02 03:04:05.000006"),
        (
            dt.datetime(2020, 1, 2, 5, 4, 5, tzinfo=dt.timezone(dt.timedelta(hours=2))),
            PrimitiveType("timestamp"),
            "2020-01-02 03:04:05.000000",
        ),
        (decimal.Decimal("1.50"), DecimalType(4, 2), "1.50"),
        (7, PrimitiveType("long"), "7"),
    ],
)
def test_serialize_round_trips(value, type_, expected):
    text = serialize_partition_value(value, type_)
    assert text == expected
    if value is not None:
        back = parse_partition_values(pa.array([text]), type_).to_pylist()[0]
        assert back == value


@pytest.mark.parametrize(
    "type_", [PrimitiveType(n) for n in ("boolean", "long", "string", "date", "timestamp")] + [DecimalType(5, 2)]
)
def test_parse_no_values(type_):
    """Zero values (pruning left no file) parse to an empty column, never an error (issue #44
    item 10: ``pc.all`` of an empty array is null, and the boolean check read it as a bad value)."""
    out = parse_partition_values(pa.array([], pa.string()), type_, column="b")
    assert len(out) == 0


def test_boolean_partitioned_table_with_nothing_left_after_pruning(tmp_path):
    """The core read plans of a table partitioned by a boolean column when pruning keeps no
    file: an empty plan (the native plan parses the partition values of zero files)."""
    from delta_pyds.expressions.to_predicates import skipping_predicates
    from delta_pyds.read.native_plan import plan_native_scan
    from delta_pyds.storage.store import Storage
    from delta_pyds.table.snapshot import Snapshot
    from delta_pyds.write.plan import commit_arrow

    path = str(tmp_path / "t")
    data = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "b": pa.array([True, False, None])})
    commit_arrow(path, data, options={"partitionBy": "b"})
    snap = Snapshot.load(Storage(path))
    for condition in ("id = 999", "b IS NULL AND id = 1", "b = true AND id > 5"):
        plan = plan_native_scan(snap, predicates=skipping_predicates(condition, snap.schema))
        assert plan.files.num_rows == 0, condition
    assert plan_native_scan(snap, predicates=skipping_predicates("b IS NULL", snap.schema)).files.num_rows == 1
