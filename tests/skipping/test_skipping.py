"""Data skipping (delta_pyds.skipping.files and .row_groups over delta_pyds.expressions.predicates):
unit tests on hand-built file tables and Parquet files, plus property tests that pruning
never drops a file (or row group) holding a matching row."""

from __future__ import annotations

import datetime as dt
import decimal
import json
import math
from decimal import Decimal

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from helpers import field, make_schema, struct, ts
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from delta_pyds.expressions import predicates as P
from delta_pyds.skipping.files import SkippingReport, prune_files, select_row_groups

UTC = dt.timezone.utc


# ============================================================================ helpers
def stats_json(num_records=None, mins=None, maxs=None, nulls=None, tight=None, **extra):
    obj = {}
    if num_records is not None:
        obj["numRecords"] = num_records
    if mins is not None:
        obj["minValues"] = mins
    if maxs is not None:
        obj["maxValues"] = maxs
    if nulls is not None:
        obj["nullCount"] = nulls
    if tight is not None:
        obj["tightBounds"] = tight
    obj.update(extra)
    return json.dumps(obj)


def make_files(stats, partitions=None, partition_names=None, stats_parsed=None, dv=None):
    n = len(stats)
    cols = {
        "path": pa.array([f"f{i}" for i in range(n)], pa.string()),
        "size": pa.array([100] * n, pa.int64()),
        "modification_time": pa.array([0] * n, pa.int64()),
    }
    if partition_names is not None:
        ptype = pa.struct([(name, pa.string()) for name in partition_names])
        cols["partition_values"] = pa.array(partitions, ptype)
    cols["stats"] = pa.array(stats, pa.string())
    if stats_parsed is not None:
        cols["stats_parsed"] = stats_parsed
    dv_type = pa.struct(
        [
            ("storageType", pa.string()),
            ("pathOrInlineDv", pa.string()),
            ("offset", pa.int32()),
            ("sizeInBytes", pa.int32()),
            ("cardinality", pa.int64()),
        ]
    )
    cols["deletion_vector"] = pa.array(dv if dv is not None else [None] * n, dv_type)
    cols["base_row_id"] = pa.nulls(n, pa.int64())
    cols["default_row_commit_version"] = pa.nulls(n, pa.int64())
    return pa.table(cols)


def kept(files, preds, schema, partition_columns=(), mode="none"):
    if not isinstance(preds, (list, tuple)):
        preds = [preds]
    out, report = prune_files(
        files, preds, schema=schema, partition_columns=list(partition_columns), column_mapping_mode=mode
    )
    assert report.total_files == files.num_rows
    assert report.files_kept == out.num_rows
    assert report.pruned_by_partition + report.pruned_by_stats + report.files_kept == report.total_files
    return [int(p[1:]) for p in out.column("path").to_pylist()]


LONG = make_schema(field("id", "long"))


def long_files(*ranges):
    """One file per (min, max) range of column id, 10 records, no nulls."""
    return make_files([stats_json(10, {"id": lo}, {"id": hi}, {"id": 0}) for lo, hi in ranges])


# ================================================================ basic comparisons
@pytest.mark.parametrize(
    "pred, expected",
    [
        (P.EqualTo("id", 0), []),
        (P.EqualTo("id", 1), [0]),
        (P.EqualTo("id", 10), [0]),
        (P.EqualTo("id", 11), [1]),
        (P.EqualTo("id", 21), []),
        (P.LessThan("id", 1), []),
        (P.LessThan("id", 2), [0]),
        (P.LessThan("id", 12), [0, 1]),
        (P.LessThanOrEqual("id", 0), []),
        (P.LessThanOrEqual("id", 1), [0]),
        (P.LessThanOrEqual("id", 11), [0, 1]),
        (P.GreaterThan("id", 20), []),
        (P.GreaterThan("id", 19), [1]),
        (P.GreaterThan("id", 10), [1]),
        (P.GreaterThan("id", 9), [0, 1]),
        (P.GreaterThanOrEqual("id", 21), []),
        (P.GreaterThanOrEqual("id", 20), [1]),
        (P.GreaterThanOrEqual("id", 10), [0, 1]),
    ],
)
def test_comparisons_on_min_max(pred, expected):
    assert kept(long_files((1, 10), (11, 20)), pred, LONG) == expected


def test_not_equal_prunes_only_single_value_files():
    files = long_files((5, 5), (5, 6))
    assert kept(files, P.Not(P.EqualTo("id", 5)), LONG) == [1]
    assert kept(files, P.Not(P.EqualTo("id", 6)), LONG) == [0, 1]


def test_conjunction_of_predicates():
    files = long_files((1, 10), (11, 20), (21, 30))
    assert kept(files, [P.GreaterThan("id", 5), P.LessThan("id", 15)], LONG) == [0, 1]
    # each predicate is tested on its own: a contradiction inside one range is not detected
    assert kept(files, [P.GreaterThan("id", 15), P.LessThan("id", 12)], LONG) == [1]
    assert kept(files, [P.GreaterThan("id", 25), P.LessThan("id", 12)], LONG) == []


def test_no_predicates_and_empty_table():
    files = long_files((1, 10))
    out, report = prune_files(files, [], schema=LONG, partition_columns=[], column_mapping_mode="none")
    assert out.num_rows == 1 and report == SkippingReport(1, 1, 0, 0)
    empty = files.slice(0, 0)
    out, report = prune_files(
        empty, [P.EqualTo("id", 1)], schema=LONG, partition_columns=[], column_mapping_mode="none"
    )
    assert out.num_rows == 0 and report.total_files == 0


def test_report_counts_and_str():
    schema = make_schema(field("id", "long"), field("p", "string"))
    files = make_files(
        [
            stats_json(10, {"id": 1}, {"id": 5}, {"id": 0}),
            stats_json(10, {"id": 6}, {"id": 9}, {"id": 0}),
            stats_json(10, {"id": 1}, {"id": 9}, {"id": 0}),
        ],
        [{"p": "a"}, {"p": "a"}, {"p": "b"}],
        ["p"],
    )
    out, report = prune_files(
        files,
        [P.EqualTo("p", "a"), P.LessThan("id", 3)],
        schema=schema,
        partition_columns=["p"],
        column_mapping_mode="none",
    )
    assert out.column("path").to_pylist() == ["f0"]
    assert report == SkippingReport(total_files=3, files_kept=1, pruned_by_partition=1, pruned_by_stats=1)
    assert report.files_pruned == 2
    assert str(report) == ("data skipping kept 1 of 3 files (pruned 1 by partition values, 1 by statistics)")


def test_result_keeps_all_columns_and_order():
    files = long_files((1, 10), (11, 20), (21, 30))
    out, _ = prune_files(
        files, [P.GreaterThan("id", 10)], schema=LONG, partition_columns=[], column_mapping_mode="none"
    )
    assert out.schema == files.schema
    assert out.column("path").to_pylist() == ["f1", "f2"]


# ================================================================ missing / partial stats
def test_missing_and_partial_stats_keep_files():
    files = make_files(
        [
            None,  # no stats at all
            "",  # empty string
            "{}",  # empty object
            stats_json(10),  # numRecords only
            stats_json(10, {"id": 50}, None, {"id": 0}),  # min only
            stats_json(10, None, {"id": 5}, {"id": 0}),  # max only
            stats_json(10, {"id": 50}, {"id": 60}, {"id": 0}),  # full: prunable
        ]
    )
    assert kept(files, P.EqualTo("id", 100), LONG) == [0, 1, 2, 3, 4]
    assert kept(files, P.EqualTo("id", 1), LONG) == [0, 1, 2, 3, 5]
    assert kept(files, P.IsNull("id"), LONG) == [0, 1, 2, 3]


def test_malformed_stats_keep_only_those_files():
    files = make_files(
        [
            stats_json(10, {"id": 1}, {"id": 2}, {"id": 0}),
            '{"numRecords": 10, "minValues": {"id": "oops"}, "maxValues": {"id": 2}}',  # wrong type
            "not json at all",
            '{"numRecords": 10, "minValues": {"id": 1}',  # truncated
            "[1, 2, 3]",
            stats_json(10, {"id": 1}, {"id": 2}, {"id": 0}),
            '{"numRecords":\n 10, "minValues": {"id": 1}, "maxValues": {"id": 2}, "nullCount": {"id": 0}}',
        ]
    )
    assert kept(files, P.EqualTo("id", 100), LONG) == [1, 2, 3, 4]


def test_blank_and_multi_line_stats_stay_aligned():
    files = make_files(
        [
            "   ",
            stats_json(10, {"id": 1}, {"id": 2}, {"id": 0}),
            '{"numRecords": 10}\n{"numRecords": 10}',  # two objects: must not shift the rows
            stats_json(10, {"id": 100}, {"id": 200}, {"id": 0}),
            "\t",
            stats_json(10, {"id": 1}, {"id": 2}, {"id": 0}),
        ]
    )
    assert kept(files, P.EqualTo("id", 150), LONG) == [0, 2, 3, 4]
    assert kept(files, P.EqualTo("id", 1), LONG) == [0, 1, 2, 4, 5]


def test_stats_of_other_columns_only():
    schema = make_schema(field("a", "long"), field("b", "long"))
    # column b is beyond the indexed columns (dataSkippingNumIndexedCols): no stats for it
    files = make_files([stats_json(10, {"a": 1}, {"a": 2}, {"a": 0})])
    assert kept(files, P.EqualTo("b", 100), schema) == [0]
    assert kept(files, P.IsNull("b"), schema) == [0]
    assert kept(files, P.IsNotNull("b"), schema) == [0]
    assert kept(files, P.EqualTo("a", 100), schema) == []


def test_zero_records_file_is_pruned():
    files = make_files([stats_json(0), stats_json(0, tight=False), stats_json(5)])
    assert kept(files, P.EqualTo("id", 1), LONG) == [2]
    assert kept(files, P.IsNull("id"), LONG) == [2]


# ========================================================================= nested stats
def test_nested_struct_stats():
    schema = make_schema(field("s", struct(field("x", "long"), field("t", struct(field("y", "string"))))))
    files = make_files(
        [
            stats_json(
                10, {"s": {"x": 1, "t": {"y": "a"}}}, {"s": {"x": 5, "t": {"y": "c"}}}, {"s": {"x": 0, "t": {"y": 0}}}
            ),
            stats_json(
                10, {"s": {"x": 6, "t": {"y": "d"}}}, {"s": {"x": 9, "t": {"y": "f"}}}, {"s": {"x": 2, "t": {"y": 10}}}
            ),
            stats_json(10, {"s": {}}, {"s": None}, {}),
        ]
    )
    assert kept(files, P.EqualTo(("s", "x"), 7), schema) == [1, 2]
    assert kept(files, P.EqualTo(("s", "t", "y"), "b"), schema) == [0, 2]
    assert kept(files, P.IsNull(("s", "x")), schema) == [1, 2]
    assert kept(files, P.IsNotNull(("s", "t", "y")), schema) == [0, 2]
    # a predicate on the struct itself, or on a path that is not a field: keep
    assert kept(files, P.IsNull(("s",)), schema) == [0, 1, 2]
    assert kept(files, P.EqualTo(("s", "nope"), 1), schema) == [0, 1, 2]
    assert kept(files, P.EqualTo(("s", "x", "deeper"), 1), schema) == [0, 1, 2]


# ======================================================================= column mapping
def test_column_mapping_physical_names_and_case_insensitive_columns():
    schema = make_schema(
        field("Id", "long", physical="col-1", **{"delta.columnMapping.id": 1}),
        field("Part", "string", physical="col-2", **{"delta.columnMapping.id": 2}),
        field("nested", struct(field("Inner", "long", physical="col-4")), physical="col-3"),
    )
    files = make_files(
        [
            stats_json(
                10,
                {"col-1": 1, "col-3": {"col-4": 1}},
                {"col-1": 5, "col-3": {"col-4": 1}},
                {"col-1": 0, "col-3": {"col-4": 0}},
            ),
            stats_json(
                10,
                {"col-1": 6, "col-3": {"col-4": 2}},
                {"col-1": 9, "col-3": {"col-4": 2}},
                {"col-1": 0, "col-3": {"col-4": 0}},
            ),
            # keyed by the logical name: not this table's stats, must not be used
            stats_json(10, {"Id": 100}, {"Id": 100}, {"Id": 0}),
        ],
        [{"col-2": "x"}, {"col-2": "y"}, {"col-2": "x"}],
        ["col-2"],
    )
    for mode in ("name", "id"):
        assert kept(files, P.EqualTo("Id", 7), schema, ["Part"], mode) == [1, 2]
        assert kept(files, P.EqualTo("id", 7), schema, ["Part"], mode) == [1, 2]
        assert kept(files, P.EqualTo("Part", "x"), schema, ["Part"], mode) == [0, 2]
        assert kept(files, P.EqualTo("PART", "y"), schema, ["Part"], mode) == [1]
        assert kept(files, P.EqualTo(("NESTED", "inner"), 2), schema, ["Part"], mode) == [1, 2]
    # without column mapping the same stats are not found under the logical names
    assert kept(files, P.EqualTo("Id", 100), schema, ["Part"], "none") == [0, 1, 2]


# =================================================================== string truncation
STR = make_schema(field("s", "string"))


def str_files(*bounds):
    return make_files([stats_json(10, {"s": lo}, {"s": hi}, {"s": 0}) for lo, hi in bounds])


def java_truncate_max(x: str, prefix: int = 32) -> str:
    """delta-spark's StatisticsCollection.truncateMaxStringAgg (Java UTF-16 semantics),
    followed by Spark's UTF-16 -> UTF-8 conversion (a lone surrogate becomes '?')."""
    units = x.encode("utf-16-le")
    codes = [int.from_bytes(units[i : i + 2], "little") for i in range(0, len(units), 2)]
    if len(codes) <= prefix:
        return x
    out = codes[:prefix]
    for c in codes[prefix:]:
        if c >= 0xFFFD:
            out.append(c)
        else:
            break
    out.append(0xFFFD)
    chars, i = [], 0
    while i < len(out):
        c = out[i]
        if 0xD800 <= c < 0xDC00 and i + 1 < len(out) and 0xDC00 <= out[i + 1] < 0xE000:
            chars.append(chr(0x10000 + ((c - 0xD800) << 10) + (out[i + 1] - 0xDC00)))
            i += 2
            continue
        chars.append("?" if 0xD800 <= c < 0xE000 else chr(c))
        i += 1
    return "".join(chars)


def test_delta_spark_truncated_max_string():
    actual = "a" * 40
    files = str_files(("a" * 32, java_truncate_max(actual)))
    assert java_truncate_max(actual) == "a" * 32 + "\ufffd"
    assert kept(files, P.EqualTo("s", actual), STR) == [0]
    assert kept(files, P.GreaterThan("s", "a" * 35), STR) == [0]
    assert kept(files, P.GreaterThanOrEqual("s", actual), STR) == [0]
    assert kept(files, P.GreaterThan("s", "a" * 32 + "\ufffd" + "zz"), STR) == [0]  # values may start with more a's
    # beyond the prefix every value is smaller
    assert kept(files, P.EqualTo("s", "a" * 31 + "b"), STR) == []
    assert kept(files, P.GreaterThan("s", "b"), STR) == []
    assert kept(files, P.StartsWith("s", "a" * 31 + "b"), STR) == []
    assert kept(files, P.StartsWith("s", "a" * 36), STR) == [0]
    # a truncated max is never used for !=
    assert kept(str_files(("a" * 32, "a" * 32 + "\ufffd")), P.Not(P.EqualTo("s", "a" * 32)), STR) == [0]


def test_truncated_max_with_characters_above_the_tie_breaker():
    actual = "a" * 32 + "\uffff\uffffb"
    stored = java_truncate_max(actual)
    assert stored == "a" * 32 + "\uffff\uffff\ufffd"
    files = str_files(("a" * 32, stored))
    assert kept(files, P.EqualTo("s", actual), STR) == [0]
    assert kept(files, P.GreaterThan("s", "a" * 32 + "\uffff\uffff"), STR) == [0]


def test_truncated_max_split_surrogate_pair():
    # the 32nd UTF-16 unit is the high half of an emoji: delta-spark stores '?' + U+FFFD,
    # which is SMALLER than the real value; skipping must not trust it
    actual = "a" * 31 + "\U0001f600zz"
    stored = java_truncate_max(actual)
    assert stored == "a" * 31 + "?\ufffd"
    files = str_files(("a" * 31, stored))
    assert kept(files, P.EqualTo("s", actual), STR) == [0]
    assert kept(files, P.GreaterThan("s", "a" * 31 + "\U0001f600"), STR) == [0]
    assert kept(files, P.EqualTo("s", "a" * 30 + "b"), STR) == []
    # supplementary characters after the prefix (code point > U+FFFD) must not be lost either
    actual2 = "a" * 32 + "\U0001f600"
    stored2 = java_truncate_max(actual2)
    assert stored2 == "a" * 32 + "\ufffd" and actual2 > stored2
    assert kept(str_files(("a" * 32, stored2)), P.EqualTo("s", actual2), STR) == [0]


def test_kernel_style_truncated_max_and_short_tie_breaker_prefix():
    # delta-kernel-rs: 32 chars + 0x7F (or U+10FFFF)
    files = str_files(("b" * 32, "b" * 32 + "\x7f"), ("b" * 32, "b" * 32 + "\U0010ffff"))
    assert kept(files, P.EqualTo("s", "b" * 32 + "\x7f\x7f"), STR) == [0, 1]
    assert kept(files, P.EqualTo("s", "b" * 32 + "\U0010ffff\U0010ffff"), STR) == [0, 1]
    assert kept(files, P.EqualTo("s", "c"), STR) == []
    # a writer configured with a short prefix (spark.databricks.delta.stats.skipping.strings.prefixLength)
    files = str_files(("abcd", "abcd\ufffd"))
    assert kept(files, P.EqualTo("s", "abcdzzzz"), STR) == [0]
    assert kept(files, P.EqualTo("s", "abce"), STR) == []


def test_untruncated_strings_are_exact():
    files = str_files(("apple", "banana"), ("cherry", "date"))
    assert kept(files, P.GreaterThan("s", "banana"), STR) == [1]
    assert kept(files, P.GreaterThanOrEqual("s", "banana"), STR) == [0, 1]
    assert kept(files, P.EqualTo("s", "bananas"), STR) == []
    assert kept(files, P.LessThan("s", "apple"), STR) == []
    assert kept(files, P.LessThan("s", "apples"), STR) == [0]
    assert kept(files, P.In("s", ["coconut", "zebra"]), STR) == [1]
    # a max of exactly 32 characters may be truncated (no tie-breaker): only its prefix counts
    m = "0123456789abcdef0123456789abcdef"
    files = str_files((m, m))
    assert kept(files, P.EqualTo("s", m), STR) == [0]
    assert kept(files, P.EqualTo("s", m + "0"), STR) == [0]
    assert kept(files, P.EqualTo("s", "1"), STR) == []


def test_truncated_min_is_a_lower_bound():
    # delta-spark stores the first 32 characters of the min
    files = str_files(("m" * 32, "n"))
    assert kept(files, P.LessThan("s", "m" * 32), STR) == []
    assert kept(files, P.LessThanOrEqual("s", "m" * 32), STR) == [0]
    assert kept(files, P.EqualTo("s", "m" * 40), STR) == [0]


def test_starts_with():
    files = str_files(("apple", "banana"), ("cherry", "date"))
    assert kept(files, P.StartsWith("s", "b"), STR) == [0]
    assert kept(files, P.StartsWith("s", "a"), STR) == [0]
    assert kept(files, P.StartsWith("s", "app"), STR) == [0]
    assert kept(files, P.StartsWith("s", "aa"), STR) == []
    assert kept(files, P.StartsWith("s", "bz"), STR) == []
    assert kept(files, P.StartsWith("s", "d"), STR) == [1]
    assert kept(files, P.StartsWith("s", ""), STR) == [0, 1]
    assert kept(files, P.Not(P.StartsWith("s", "b")), STR) == [0, 1]  # NOT StartsWith: keep
    # StartsWith on a non-string column is not understood: keep
    assert kept(long_files((1, 2)), P.StartsWith("id", "1"), LONG) == [0]


# =========================================================================== timestamps
TS = make_schema(field("ts", "timestamp"), field("ntz", "timestamp_ntz"))


def test_timestamp_stats_are_widened_for_truncation():
    files = make_files(
        [
            stats_json(
                2,
                {"ts": "1970-01-01T00:00:03.000Z", "ntz": "1970-01-01T00:00:03.000"},
                {"ts": "1970-01-01T00:00:04.000Z", "ntz": "1970-01-01T00:00:04.000"},
                {"ts": 0, "ntz": 0},
            )
        ]
    )
    # the real max may be 04.000999 (millisecond truncation) and writers truncated offsets
    # to minutes: up to 59 s either way must be kept
    assert kept(files, P.GreaterThan("ts", ts(1970, 1, 1, 0, 0, 4, 500)), TS) == [0]
    assert kept(files, P.GreaterThan("ts", ts(1970, 1, 1, 0, 0, 4, 999)), TS) == [0]
    assert kept(files, P.EqualTo("ts", ts(1970, 1, 1, 0, 0, 4, 999)), TS) == [0]
    assert kept(files, P.GreaterThanOrEqual("ts", ts(1970, 1, 1, 0, 1, 3)), TS) == [0]
    assert kept(files, P.GreaterThan("ts", ts(1970, 1, 1, 0, 1, 4)), TS) == []
    assert kept(files, P.LessThan("ts", ts(1970, 1, 1, 0, 0, 2)), TS) == [0]
    assert kept(files, P.LessThan("ts", ts(1969, 12, 31, 23, 59, 3)), TS) == []
    assert kept(files, P.GreaterThan("ntz", dt.datetime(1970, 1, 1, 0, 0, 4, 999)), TS) == [0]
    assert kept(files, P.GreaterThan("ntz", dt.datetime(1970, 1, 1, 0, 1, 5)), TS) == []
    assert kept(files, P.LessThan("ntz", dt.datetime(1969, 12, 31, 23, 59, 3)), TS) == []
    # widened bounds are never equal: != cannot prune
    single = make_files(
        [stats_json(1, {"ts": "2020-01-01T00:00:00.000Z"}, {"ts": "2020-01-01T00:00:00.000Z"}, {"ts": 0})]
    )
    assert kept(single, P.Not(P.EqualTo("ts", ts(2020, 1, 1))), TS) == [0]


def test_timestamp_literal_kinds_must_match_column():
    files = make_files(
        [
            stats_json(
                1,
                {"ts": "2020-01-01T00:00:00.000Z", "ntz": "2020-01-01T00:00:00.000"},
                {"ts": "2020-01-01T00:00:00.000Z", "ntz": "2020-01-01T00:00:00.000"},
                {"ts": 0, "ntz": 0},
            )
        ]
    )
    # naive literal for TIMESTAMP, aware literal for TIMESTAMP_NTZ, date literal: not understood
    assert kept(files, P.GreaterThan("ts", dt.datetime(2030, 1, 1)), TS) == [0]
    assert kept(files, P.GreaterThan("ntz", ts(2030, 1, 1)), TS) == [0]
    assert kept(files, P.GreaterThan("ts", dt.date(2030, 1, 1)), TS) == [0]
    # aware literals in another zone are converted to UTC
    plus2 = dt.timezone(dt.timedelta(hours=2))
    assert kept(files, P.GreaterThan("ts", dt.datetime(2020, 1, 1, 3, 0, tzinfo=plus2)), TS) == []
    assert kept(files, P.GreaterThan("ts", dt.datetime(2020, 1, 1, 1, 59, 30, tzinfo=plus2)), TS) == [0]


def test_timestamp_stats_with_offsets_and_edge_values():
    files = make_files(
        [
            stats_json(1, {"ts": "2020-01-01T01:00:00.000+01:00"}, {"ts": "2020-01-01T01:00:00.000+01:00"}, {"ts": 0}),
            stats_json(1, {"ts": "9999-12-31T00:00:00.000Z"}, {"ts": "9999-12-31T00:00:00.000Z"}, {"ts": 0}),
        ]
    )
    assert kept(files, P.EqualTo("ts", ts(2020, 1, 1)), TS) == [0]
    assert kept(files, P.GreaterThan("ts", ts(2020, 1, 1, 0, 5)), TS) == [1]
    assert kept(files, P.GreaterThan("ts", ts(9999, 12, 31, 0, 0, 58)), TS) == [1]
    assert kept(files, P.GreaterThan("ts", ts(9999, 12, 31, 0, 1, 0)), TS) == []


# ============================================================================ floats / NaN
FLT = make_schema(field("d", "double"), field("f", "float"))


def test_nan_in_float_stats():
    files = make_files(
        [
            stats_json(3, {"d": 1.0}, {"d": "NaN"}, {"d": 0}),  # delta-spark: NaN is the max
            stats_json(3, {"d": "NaN"}, {"d": "NaN"}, {"d": 0}),  # all NaN
            stats_json(3, {"d": 1.0}, {"d": 5.0}, {"d": 0}),  # NaN-excluding writer, may hold NaN
            stats_json(3, {"d": "-Infinity"}, {"d": "Infinity"}, {"d": 0}),
        ]
    )
    # NaN > 100 in Spark: no file may be dropped on its max
    assert kept(files, P.GreaterThan("d", 100.0), FLT) == [0, 1, 2, 3]
    assert kept(files, P.GreaterThanOrEqual("d", 100.0), FLT) == [0, 1, 2, 3]
    assert kept(files, P.Not(P.EqualTo("d", 1.0)), FLT) == [0, 1, 2, 3]
    # but NaN never equals or is below a number: the min still works, and the max for =
    assert kept(files, P.LessThan("d", 0.5), FLT) == [1, 3]
    assert kept(files, P.EqualTo("d", 100.0), FLT) == [0, 1, 3]
    assert kept(files, P.EqualTo("d", 0.5), FLT) == [1, 3]
    assert kept(files, P.In("d", [0.5, 100.0]), FLT) == [0, 1, 3]
    assert kept(files, P.In("d", [0.5, 0.7]), FLT) == [1, 3]
    # a NaN literal proves nothing
    nan = float("nan")
    for pred in (
        P.EqualTo("d", nan),
        P.LessThan("d", nan),
        P.LessThanOrEqual("d", nan),
        P.In("d", [nan]),
        P.GreaterThan("d", nan),
    ):
        assert kept(files, pred, FLT) == [0, 1, 2, 3]


def test_float_column_stats_have_float32_slack():
    # float 3.14f is 3.1400001049041748 as a double; stats JSON says 3.14
    files = make_files(
        [stats_json(1, {"f": 3.14}, {"f": 3.14}, {"f": 0}), stats_json(1, {"f": 10.0}, {"f": 20.0}, {"f": 0})]
    )
    assert kept(files, P.EqualTo("f", 3.1400001049041748), FLT) == [0]
    assert kept(files, P.LessThanOrEqual("f", 3.1399998), FLT) == [0]
    assert kept(files, P.EqualTo("f", 3.2), FLT) == []
    assert kept(files, P.LessThan("f", 3.0), FLT) == []
    assert kept(files, P.LessThan("f", 9.99), FLT) == [0]
    assert kept(files, P.LessThan("f", 10.0), FLT) == [0, 1]  # the slack keeps the boundary


def test_int_and_decimal_literals_on_float_columns_and_vice_versa():
    files = make_files([stats_json(1, {"d": 1.5}, {"d": 2.5}, {"d": 0})])
    assert kept(files, P.EqualTo("d", 2), FLT) == [0]
    assert kept(files, P.EqualTo("d", 3), FLT) == []
    assert kept(files, P.EqualTo("d", Decimal("3.5")), FLT) == []
    assert kept(files, P.EqualTo("d", True), FLT) == [0]  # bool literal: not understood
    lf = long_files((1, 10))
    assert kept(lf, P.EqualTo("id", 20.0), LONG) == []  # integral float
    assert kept(lf, P.GreaterThan("id", 9.5), LONG) == [0]  # non-integral: not understood
    assert kept(lf, P.GreaterThan("id", 19.5), LONG) == [0]
    assert kept(lf, P.EqualTo("id", "5"), LONG) == [0]  # wrong type: keep
    assert kept(lf, P.EqualTo("id", True), LONG) == [0]
    assert kept(lf, P.EqualTo("id", 2**70), LONG) == [0]  # out of range: keep


# ========================================================================= null handling
def test_null_only_files():
    files = make_files(
        [
            stats_json(10, {}, {}, {"id": 10}),  # all null, no min/max
            stats_json(10, {"id": 1}, {"id": 5}, {"id": 0}),
            stats_json(10, {"id": 1}, {"id": 5}, {"id": 3}),
        ]
    )
    for pred in (
        P.EqualTo("id", 3),
        P.LessThan("id", 100),
        P.GreaterThan("id", -1),
        P.Not(P.EqualTo("id", 3)),
        P.In("id", [1, 3]),
        P.Not(P.In("id", [7])),
    ):
        assert 0 not in kept(files, pred, LONG), pred
    assert kept(files, P.IsNull("id"), LONG) == [0, 2]
    assert kept(files, P.IsNotNull("id"), LONG) == [1, 2]
    assert kept(files, P.EqualNullSafe("id", None), LONG) == [0, 2]
    assert kept(files, P.Not(P.EqualNullSafe("id", None)), LONG) == [1, 2]


def test_null_counts_missing_keep():
    files = make_files(
        [
            stats_json(10, {"id": 1}, {"id": 5}),  # no nullCount
            stats_json(None, {"id": 1}, {"id": 5}, {"id": 0}),  # no numRecords
            stats_json(None, {}, {}, {"id": 10}),
        ]
    )
    assert kept(files, P.IsNull("id"), LONG) == [0, 2]
    assert kept(files, P.IsNotNull("id"), LONG) == [0, 1, 2]
    assert kept(files, P.EqualTo("id", 9), LONG) == [2]


def test_tight_bounds_false():
    files = make_files(
        [
            stats_json(10, {}, {}, {"id": 10}, tight=False),  # wide: maybe not all null
            stats_json(10, {"id": 1}, {"id": 5}, {"id": 0}, tight=False),  # bounds still valid
            stats_json(10, {"id": 1}, {"id": 5}, {"id": 0}, tight=True),
            stats_json(10, {}, {}, {"id": 10}, tight=True),
        ],
        dv=[
            {"storageType": "u", "pathOrInlineDv": "x", "offset": 1, "sizeInBytes": 10, "cardinality": 2},
            {"storageType": "u", "pathOrInlineDv": "y", "offset": 1, "sizeInBytes": 10, "cardinality": 2},
            None,
            None,
        ],
    )
    assert kept(files, P.IsNotNull("id"), LONG) == [0, 1, 2]
    assert kept(files, P.IsNull("id"), LONG) == [0, 1, 3]
    assert kept(files, P.EqualTo("id", 3), LONG) == [0, 1, 2]
    assert kept(files, P.EqualTo("id", 9), LONG) == [0]
    assert kept(files, P.GreaterThan("id", 5), LONG) == [0]


# ======================================================================== type widening
def test_stats_written_in_a_narrower_type():
    schema = make_schema(
        field("l", "long"),
        field("d", "double"),
        field("dec", "decimal(20,5)"),
        field("ntz", "timestamp_ntz"),
        field("dd", "double", **{"delta.typeChanges": [{"fromType": "float", "toType": "double", "tableVersion": 2}]}),
    )
    files = make_files(
        [
            # old file: byte/int/float/decimal(10,2)/date stats
            stats_json(
                1,
                {"l": 1, "d": 5, "dec": 67.89, "ntz": "2024-09-09", "dd": 3.4},
                {"l": 1, "d": 5, "dec": 67.89, "ntz": "2024-09-09", "dd": 3.4},
                {"l": 0, "d": 0, "dec": 0, "ntz": 0, "dd": 0},
            ),
            # new file: stats in the widened types
            stats_json(
                1,
                {
                    "l": 9223372036854775807,
                    "d": 1.234567890123,
                    "dec": 12345678901.23456,
                    "ntz": "2024-09-09T12:34:56.123",
                    "dd": 1.234567890123,
                },
                {
                    "l": 9223372036854775807,
                    "d": 1.234567890123,
                    "dec": 12345678901.23456,
                    "ntz": "2024-09-09T12:34:56.123",
                    "dd": 1.234567890123,
                },
                {"l": 0, "d": 0, "dec": 0, "ntz": 0, "dd": 0},
            ),
        ]
    )
    assert kept(files, P.EqualTo("l", 1), schema) == [0]
    assert kept(files, P.GreaterThan("l", 2), schema) == [1]
    assert kept(files, P.EqualTo("d", 5.0), schema) == [0]
    assert kept(files, P.EqualTo("dec", Decimal("67.89")), schema) == [0]
    assert kept(files, P.EqualTo("dec", Decimal("12345678901.23456")), schema) == [1]
    assert kept(files, P.GreaterThan("dec", 100), schema) == [1]
    assert kept(files, P.EqualTo("dec", Decimal("67.891")), schema) == []
    assert kept(files, P.EqualTo("ntz", dt.datetime(2024, 9, 9)), schema) == [0]
    assert kept(files, P.GreaterThan("ntz", dt.datetime(2024, 9, 9, 12)), schema) == [1]
    # the old float 3.4f is 3.4000000953674316: float32 slack on a double widened from float
    assert kept(files, P.EqualTo("dd", 3.4000000953674316), schema) == [0]


def test_stats_that_do_not_parse_in_the_current_type_keep_the_file():
    schema = make_schema(field("n", "long"), field("day", "date"), field("dec", "decimal(5,2)"))
    files = make_files(
        [
            stats_json(
                1,
                {"n": "abc", "day": "not a date", "dec": 1.2345},
                {"n": 1.5, "day": "2020-13-45", "dec": 1},
                {"n": 0, "day": 0, "dec": 0},
            ),
            stats_json(
                1,
                {"n": 1, "day": "2020-01-01", "dec": 1.5},
                {"n": 1, "day": "2020-01-01", "dec": 1.5},
                {"n": 0, "day": 0, "dec": 0},
            ),
        ]
    )
    assert kept(files, P.EqualTo("n", 100), schema) == [0]
    assert kept(files, P.EqualTo("day", dt.date(2021, 1, 1)), schema) == [0]
    assert kept(files, P.EqualTo("dec", Decimal("9.99")), schema) == [0]
    assert kept(files, P.EqualTo("day", dt.date(2020, 1, 1)), schema) == [0, 1]


def test_date_stats_with_an_invalid_value_only_affect_that_file():
    schema = make_schema(field("day", "date"))
    files = make_files(
        [
            stats_json(1, {"day": "2020-02-30"}, {"day": "2020-03-01"}, {"day": 0}),
            stats_json(1, {"day": "2020-01-01"}, {"day": "2020-01-31"}, {"day": 0}),
        ]
    )
    assert kept(files, P.EqualTo("day", dt.date(2020, 2, 1)), schema) == [0]
    assert kept(files, P.GreaterThan("day", dt.datetime(2020, 2, 1)), schema) == [0, 1]  # datetime literal: keep


# ========================================================================= partitions
PSCHEMA = make_schema(
    field("id", "long"),
    field("p", "string"),
    field("n", "integer"),
    field("day", "date"),
    field("t", "timestamp"),
    field("b", "boolean"),
    field("f", "double"),
    field("bin", "binary"),
    field("dec", "decimal(5,2)"),
)
PCOLS = ["p", "n", "day", "t", "b", "f", "bin", "dec"]


def part_files():
    rows = [
        {
            "p": "a",
            "n": "1",
            "day": "2020-01-01",
            "t": "2020-01-01 10:00:00",
            "b": "true",
            "f": "1.5",
            "bin": "x",
            "dec": "1.50",
        },
        {
            "p": "b",
            "n": "2",
            "day": "2020-01-02",
            "t": "2020-01-01T10:00:00.000001Z",
            "b": "false",
            "f": "NaN",
            "bin": "y",
            "dec": "2",
        },
        {"p": None, "n": None, "day": None, "t": None, "b": None, "f": None, "bin": None, "dec": None},
        {"p": "", "n": "", "day": "", "t": "", "b": "", "f": "", "bin": "", "dec": ""},
    ]
    return make_files([None] * 4, rows, PCOLS)


@pytest.mark.parametrize(
    "pred, expected",
    [
        (P.EqualTo("p", "a"), [0]),
        (P.Not(P.EqualTo("p", "a")), [1]),  # NOT(NULL = 'a') is NULL: null partitions pruned
        (P.IsNull("p"), [2, 3]),  # empty string is null
        (P.IsNotNull("p"), [0, 1]),
        (P.EqualNullSafe("p", None), [2, 3]),
        (P.EqualNullSafe("p", "b"), [1]),
        (P.Not(P.EqualNullSafe("p", "b")), [0, 2, 3]),
        (P.In("p", ["a", None]), [0]),
        (P.In("p", [None]), []),
        (P.Not(P.In("p", ["a"])), [1]),
        (P.StartsWith("p", "b"), [1]),
        (P.GreaterThan("n", 1), [1]),
        (P.LessThanOrEqual("n", 1), [0]),
        (P.In("n", list(range(2, 40))), [1]),  # long IN list
        (P.Not(P.In("n", list(range(2, 40)))), [0]),
        (P.EqualTo("day", dt.date(2020, 1, 2)), [1]),
        (P.GreaterThan("t", ts(2020, 1, 1, 10)), [1]),  # partition timestamps are exact
        (P.EqualTo("t", ts(2020, 1, 1, 10)), [0]),
        (P.EqualTo("b", False), [1]),
        (P.EqualTo("b", True), [0]),
        (P.EqualTo("f", 1.5), [0, 1]),  # NaN partitions are never pruned
        (P.GreaterThan("f", 100.0), [1]),
        (P.EqualTo("bin", b"y"), [1]),
        (P.EqualTo("dec", Decimal("2.00")), [1]),
        (P.EqualTo("dec", 2), [1]),
        (P.GreaterThan("dec", Decimal("1.505")), [1]),
        (P.Or(P.EqualTo("p", "a"), P.EqualTo("n", 2)), [0, 1]),
        (P.And(P.EqualTo("p", "a"), P.EqualTo("n", 2)), []),
        (P.Not(P.Or(P.EqualTo("p", "a"), P.IsNull("p"))), [1]),
        (P.Not(P.And(P.EqualTo("p", "a"), P.EqualTo("n", 1))), [1]),
        (P.EqualTo("p", None), []),  # = NULL is never TRUE
        (P.Not(P.LessThan("n", None)), []),
    ],
)
def test_partition_values(pred, expected):
    assert kept(part_files(), pred, PSCHEMA, PCOLS) == expected


def test_partition_and_stats_combined_and_case_insensitive_partition_names():
    schema = make_schema(field("Id", "long"), field("Region", "string"))
    files = make_files(
        [
            stats_json(10, {"Id": 1}, {"Id": 5}, {"Id": 0}),
            stats_json(10, {"Id": 6}, {"Id": 9}, {"Id": 0}),
            stats_json(10, {"Id": 1}, {"Id": 9}, {"Id": 0}),
        ],
        [{"Region": "eu"}, {"Region": "us"}, {"Region": "us"}],
        ["Region"],
    )
    assert kept(files, P.Or(P.EqualTo("region", "eu"), P.GreaterThan("id", 8)), schema, ["region"]) == [0, 1, 2]
    assert kept(files, P.Or(P.EqualTo("region", "eu"), P.LessThan("id", 3)), schema, ["region"]) == [0, 2]
    assert kept(files, P.And(P.EqualTo("region", "us"), P.LessThan("id", 3)), schema, ["REGION"]) == [2]


def test_unparsable_partition_values_keep():
    schema = make_schema(field("n", "integer"))
    files = make_files([None, None], [{"n": "1"}, {"n": "oops"}], ["n"])
    assert kept(files, P.EqualTo("n", 5), schema, ["n"]) == [0, 1]
    # partition column missing from the struct: keep
    files = make_files([None], [{"other": "1"}], ["other"])
    assert kept(files, P.EqualTo("n", 5), schema, ["n"]) == [0]


# ========================================================================= NOT / OR / IN
def test_not_is_pushed_through_and_or_and_comparisons():
    files = long_files((1, 10), (11, 20), (5, 5))
    assert kept(files, P.Not(P.LessThan("id", 11)), LONG) == [1]
    assert kept(files, P.Not(P.LessThanOrEqual("id", 10)), LONG) == [1]
    assert kept(files, P.Not(P.GreaterThan("id", 10)), LONG) == [0, 2]
    assert kept(files, P.Not(P.GreaterThanOrEqual("id", 11)), LONG) == [0, 2]
    assert kept(files, P.Not(P.Not(P.EqualTo("id", 15))), LONG) == [1]
    assert kept(files, P.Not(P.And(P.GreaterThanOrEqual("id", 1), P.LessThanOrEqual("id", 10))), LONG) == [1]
    assert kept(files, P.Not(P.Or(P.LessThan("id", 11), P.GreaterThan("id", 15))), LONG) == [1]
    assert kept(files, P.Not(P.In("id", [5, 6])), LONG) == [0, 1]
    assert kept(files, P.Not(P.In("id", list(range(40)))), LONG) == [0, 1]
    assert kept(files, P.Not(P.In("id", list(range(6, 40)))), LONG) == [0, 1, 2]
    assert kept(files, P.Not(P.IsNull("id")), LONG) == [0, 1, 2]
    assert kept(files, P.Not(P.IsNotNull("id")), LONG) == []
    assert kept(files, P.Not(P.EqualNullSafe("id", 5)), LONG) == [0, 1]


def test_or_needs_both_sides():
    files = long_files((1, 10), (11, 20), (21, 30))
    assert kept(files, P.Or(P.EqualTo("id", 5), P.EqualTo("id", 25)), LONG) == [0, 2]
    assert kept(files, P.Or(P.EqualTo("id", 5), P.EqualTo("nope", 25)), LONG) == [0, 1, 2]
    assert kept(files, P.Or(P.EqualTo("id", 5), P.EqualTo("id", None)), LONG) == [0]
    assert kept(files, P.And(P.EqualTo("id", 5), P.EqualTo("nope", 25)), LONG) == [0]


def test_in_lists():
    files = long_files((1, 10), (11, 20), (21, 30))
    assert kept(files, P.In("id", [0, 31]), LONG) == []
    assert kept(files, P.In("id", [0, 15, 31]), LONG) == [1]
    assert kept(files, P.In("id", [None, 25]), LONG) == [2]
    assert kept(files, P.In("id", [None]), LONG) == []
    assert kept(files, P.In("id", []), LONG) == []
    # long lists use their range
    assert kept(files, P.In("id", list(range(100, 200))), LONG) == []
    assert kept(files, P.In("id", [0] + list(range(100, 200))), LONG) == [0, 1, 2]
    assert kept(files, P.In("id", list(range(12, 50))), LONG) == [1, 2]
    assert kept(files, P.In("id", [1, "x"]), LONG) == [0, 1, 2]  # a literal of the wrong type: keep


def test_equal_null_safe():
    files = make_files(
        [
            stats_json(10, {"id": 5}, {"id": 5}, {"id": 0}),
            stats_json(10, {"id": 5}, {"id": 5}, {"id": 2}),
            stats_json(10, {"id": 1}, {"id": 3}, {"id": 0}),
        ]
    )
    assert kept(files, P.EqualNullSafe("id", 5), LONG) == [0, 1]
    assert kept(files, P.EqualNullSafe("id", None), LONG) == [1]
    assert kept(files, P.Not(P.EqualNullSafe("id", 5)), LONG) == [1, 2]
    assert kept(files, P.Not(P.EqualNullSafe("id", None)), LONG) == [0, 1, 2]


def test_unknown_predicates_and_columns_keep():
    class Weird:
        column = ("id",)

    files = long_files((1, 10))
    assert kept(files, Weird(), LONG) == [0]
    assert kept(files, "id = 5", LONG) == [0]
    assert kept(files, P.Not(Weird()), LONG) == [0]
    assert kept(files, P.EqualTo("missing", 100), LONG) == [0]
    assert kept(files, [Weird(), P.EqualTo("id", 100)], LONG) == []


def test_boolean_and_binary_columns_use_counts_only():
    schema = make_schema(
        field("b", "boolean"),
        field("bin", "binary"),
        field("arr", {"type": "array", "elementType": "long", "containsNull": True}),
    )
    files = make_files(
        [
            stats_json(4, {"b": True, "bin": "x"}, {"b": True, "bin": "x"}, {"b": 0, "bin": 0, "arr": 4}),
            stats_json(4, {}, {}, {"b": 4, "bin": 4, "arr": 0}),
        ]
    )
    assert kept(files, P.EqualTo("b", False), schema) == [0]
    assert kept(files, P.EqualTo("bin", b"y"), schema) == [0]
    assert kept(files, P.IsNull("b"), schema) == [1]
    assert kept(files, P.IsNull("arr"), schema) == [0]
    assert kept(files, P.IsNotNull("arr"), schema) == [1]


# =========================================================================== stats_parsed
def test_stats_parsed_is_used_and_json_is_the_fallback():
    sp_type = pa.struct(
        [
            ("numRecords", pa.int64()),
            ("minValues", pa.struct([("id", pa.int32()), ("ts", pa.timestamp("ns"))])),
            ("maxValues", pa.struct([("id", pa.int32()), ("ts", pa.timestamp("ns"))])),
            ("nullCount", pa.struct([("id", pa.int64()), ("ts", pa.int64())])),
        ]
    )
    schema = make_schema(field("id", "long"), field("ts", "timestamp"))
    parsed = pa.array(
        [
            {
                "numRecords": 10,
                "minValues": {"id": 1, "ts": dt.datetime(2020, 1, 1)},
                "maxValues": {"id": 5, "ts": dt.datetime(2020, 1, 1)},
                "nullCount": {"id": 0, "ts": 0},
            },
            None,
            {
                "numRecords": 10,
                "minValues": {"id": None, "ts": None},
                "maxValues": {"id": None, "ts": None},
                "nullCount": {"id": None, "ts": None},
            },
            None,
        ],
        sp_type,
    )
    files = make_files(
        [
            None,  # stats only as struct
            stats_json(10, {"id": 6}, {"id": 9}, {"id": 0}),  # stats only as JSON
            stats_json(10, {"id": 50}, {"id": 60}, {"id": 0}),  # struct with nulls: JSON fills in
            None,  # nothing
        ],
        stats_parsed=parsed,
    )
    assert kept(files, P.EqualTo("id", 3), schema) == [0, 3]
    assert kept(files, P.EqualTo("id", 7), schema) == [1, 3]
    assert kept(files, P.EqualTo("id", 55), schema) == [2, 3]
    assert kept(files, P.IsNull("id"), schema) == [3]
    assert kept(files, P.GreaterThan("ts", ts(2020, 1, 2)), schema) == [1, 2, 3]


# ========================================================================== performance
def test_many_files_vectorised():
    n = 20_000
    stats = [stats_json(10, {"id": i * 10}, {"id": i * 10 + 9}, {"id": 0}) for i in range(n)]
    files = make_files(stats)
    assert kept(files, P.EqualTo("id", 12345), LONG) == [1234]
    assert len(kept(files, P.LessThan("id", 100), LONG)) == 10


def test_core_modules_do_not_import_pyspark():
    import subprocess
    import sys

    code = (
        "import sys; sys.modules['pyspark'] = None; import delta_pyds.expressions.predicates, delta_pyds.skipping.files"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# ===================================================================== select_row_groups
def write_groups(tmp_path, table, row_group_size, name="f.parquet", **kwargs):
    path = tmp_path / name
    pq.write_table(table, path, row_group_size=row_group_size, **kwargs)
    return pq.ParquetFile(path).metadata


def groups(metadata, preds, schema, mode="none"):
    if not isinstance(preds, (list, tuple)):
        preds = [preds]
    return select_row_groups(metadata, preds, schema=schema, column_mapping_mode=mode)


def test_row_groups_ints_strings_nested(tmp_path):
    schema = make_schema(field("id", "long"), field("s", "string"), field("st", struct(field("x", "integer"))))
    table = pa.table(
        {
            "id": pa.array(range(30), pa.int64()),
            "s": [f"v{i:02d}" for i in range(30)],
            "st": pa.array([{"x": i // 10} for i in range(30)], pa.struct([("x", pa.int32())])),
        }
    )
    md = write_groups(tmp_path, table, 10)
    assert md.num_row_groups == 3
    assert groups(md, P.EqualTo("id", 15), schema) == [1]
    assert groups(md, P.GreaterThan("id", 9), schema) == [1, 2]
    assert groups(md, P.Not(P.GreaterThan("id", 9)), schema) == [0]
    assert groups(md, P.EqualTo("s", "v25"), schema) == [2]
    assert groups(md, P.StartsWith("s", "v1"), schema) == [1]
    assert groups(md, P.EqualTo(("st", "x"), 0), schema) == [0]
    assert groups(md, P.In(("st", "x"), [0, 2]), schema) == [0, 2]
    assert groups(md, P.IsNull("id"), schema) == []
    assert groups(md, P.EqualTo("missing", 1), schema) == [0, 1, 2]
    assert groups(md, [], schema) == [0, 1, 2]


def test_row_groups_column_mapping(tmp_path):
    schema = make_schema(
        field("Id", "long", physical="col-a"),
        field("S", struct(field("X", "long", physical="col-c")), physical="col-b"),
    )
    table = pa.table(
        {
            "col-a": pa.array(range(20), pa.int64()),
            "col-b": pa.array([{"col-c": i} for i in range(20)], pa.struct([("col-c", pa.int64())])),
        }
    )
    md = write_groups(tmp_path, table, 10)
    assert groups(md, P.EqualTo("id", 12), schema, "name") == [1]
    assert groups(md, P.EqualTo(("s", "x"), 3), schema, "name") == [0]
    assert groups(md, P.EqualTo("id", 12), schema, "none") == [0, 1]  # logical name is not in the file


def test_row_groups_nulls_and_missing_statistics(tmp_path):
    schema = make_schema(field("a", "long"))
    table = pa.table({"a": pa.array([None] * 10 + [1, None] * 5, pa.int64())})
    md = write_groups(tmp_path, table, 10)
    assert groups(md, P.EqualTo("a", 1), schema) == [1]
    assert groups(md, P.IsNull("a"), schema) == [0, 1]
    assert groups(md, P.IsNotNull("a"), schema) == [1]
    md = write_groups(tmp_path, table, 10, name="nostats.parquet", write_statistics=False)
    assert groups(md, P.EqualTo("a", 100), schema) == [0, 1]
    assert groups(md, P.IsNull("a"), schema) == [0, 1]


def test_row_groups_timestamps_dates_decimals(tmp_path):
    schema = make_schema(
        field("t", "timestamp"),
        field("n", "timestamp_ntz"),
        field("d", "date"),
        field("dec", "decimal(8,2)"),
        field("big", "decimal(30,2)"),
        field("tns", "timestamp"),
    )
    base = dt.datetime(2020, 1, 1)
    table = pa.table(
        {
            "t": pa.array([ts(2020, 1, 1) + dt.timedelta(days=i) for i in range(20)], pa.timestamp("us", tz="UTC")),
            "n": pa.array([base + dt.timedelta(days=i) for i in range(20)], pa.timestamp("us")),
            "d": pa.array([base.date() + dt.timedelta(days=i) for i in range(20)], pa.date32()),
            "dec": pa.array([Decimal(i) / 4 for i in range(20)], pa.decimal128(8, 2)),
            "big": pa.array([Decimal(i) / 4 for i in range(20)], pa.decimal128(30, 2)),
            "tns": pa.array([i * 1_000_000_000 + 1 for i in range(20)], pa.timestamp("ns", tz="UTC")),
        }
    )
    for name, kwargs in [("plain.parquet", {}), ("intdec.parquet", {"store_decimal_as_integer": True})]:
        md = write_groups(tmp_path, table, 10, name=name, **kwargs)
        assert groups(md, P.EqualTo("t", ts(2020, 1, 15)), schema) == [1]
        assert groups(md, P.GreaterThan("t", ts(2020, 1, 10)), schema) == [1]  # Parquet stats are exact
        assert groups(md, P.GreaterThanOrEqual("t", ts(2020, 1, 10)), schema) == [0, 1]
        assert groups(md, P.LessThan("n", dt.datetime(2020, 1, 11)), schema) == [0]
        assert groups(md, P.LessThan("n", dt.datetime(2020, 1, 11, 0, 0, 0, 1)), schema) == [0, 1]
        assert groups(md, P.LessThan("n", dt.datetime(2020, 1, 10, 23)), schema) == [0]
        assert groups(md, P.EqualTo("d", dt.date(2020, 1, 3)), schema) == [0]
        assert groups(md, P.EqualTo("dec", Decimal("4.75")), schema) == [1]
        assert groups(md, P.EqualTo("big", Decimal("0.25")), schema) == [0]
        assert groups(md, P.GreaterThan("big", 4), schema) == [1]
        # nanosecond stats: 9.000000001 s is the max of group 0; microsecond literals around it
        assert groups(md, P.GreaterThan("tns", dt.datetime(1970, 1, 1, 0, 0, 9, tzinfo=UTC)), schema) == [0, 1]
        assert groups(md, P.GreaterThan("tns", dt.datetime(1970, 1, 1, 0, 0, 9, 2, tzinfo=UTC)), schema) == [1]


def test_row_groups_int96_timestamps_keep(tmp_path):
    schema = make_schema(field("t", "timestamp"))
    table = pa.table(
        {"t": pa.array([ts(2020, 1, 1) + dt.timedelta(days=i) for i in range(20)], pa.timestamp("us", tz="UTC"))}
    )
    md = write_groups(tmp_path, table, 10, use_deprecated_int96_timestamps=True)
    assert md.row_group(0).column(0).physical_type == "INT96"
    assert groups(md, P.EqualTo("t", ts(2020, 1, 15)), schema) == [0, 1]
    assert groups(md, P.IsNull("t"), schema) == [0, 1]  # pyarrow exposes no statistics at all


def test_row_groups_floats_with_nan(tmp_path):
    schema = make_schema(field("x", "double"), field("f", "float"))
    table = pa.table(
        {
            "x": pa.array([1.0, float("nan")] * 5 + [10.0] * 10),
            "f": pa.array([0.5] * 10 + [float("nan")] * 10, pa.float32()),
        }
    )
    md = write_groups(tmp_path, table, 10)
    assert groups(md, P.GreaterThan("x", 5.0), schema) == [0, 1]  # NaN > 5 and NaN is not in the stats
    assert groups(md, P.EqualTo("x", 5.0), schema) == []
    assert groups(md, P.EqualTo("x", 1.0), schema) == [0]
    assert groups(md, P.LessThan("x", 5.0), schema) == [0]
    assert groups(md, P.EqualTo("f", 0.5), schema) == [0, 1]  # all-NaN chunk: no min/max
    assert groups(md, P.GreaterThan("f", 0.75), schema) == [0, 1]


def test_row_groups_widened_types(tmp_path):
    # a file written before int -> long / date -> timestamp_ntz / decimal widening
    schema = make_schema(
        field("i", "long"), field("n", "timestamp_ntz"), field("dec", "decimal(20,5)"), field("d", "double")
    )
    table = pa.table(
        {
            "i": pa.array(range(20), pa.int32()),
            "n": pa.array([dt.date(2020, 1, 1) + dt.timedelta(days=i) for i in range(20)]),
            "dec": pa.array([Decimal(i) for i in range(20)], pa.decimal128(10, 2)),
            "d": pa.array(range(20), pa.int32()),
        }
    )
    md = write_groups(tmp_path, table, 10)
    assert groups(md, P.EqualTo("i", 12), schema) == [1]
    assert groups(md, P.EqualTo("n", dt.datetime(2020, 1, 3)), schema) == [0]
    assert groups(md, P.EqualTo("dec", Decimal("15")), schema) == [1]
    assert groups(md, P.LessThan("d", 3.5), schema) == [0]


# ======================================================================= property tests
def spark_cmp(a, b):
    """Spark ordering of two non-null values of one type (NaN is the largest double)."""
    if isinstance(a, float) or isinstance(b, float):
        an, bn = isinstance(a, float) and math.isnan(a), isinstance(b, float) and math.isnan(b)
        if an or bn:
            return 0 if an and bn else (1 if an else -1)
    return (a > b) - (a < b)


def spark_eval(pred, row):
    """Three-valued Spark SQL evaluation of a predicate on a row {column path: value}."""
    if isinstance(pred, P.And):
        a, b = spark_eval(pred.left, row), spark_eval(pred.right, row)
        if a is False or b is False:
            return False
        return None if a is None or b is None else True
    if isinstance(pred, P.Or):
        a, b = spark_eval(pred.left, row), spark_eval(pred.right, row)
        if a is True or b is True:
            return True
        return None if a is None or b is None else False
    if isinstance(pred, P.Not):
        v = spark_eval(pred.child, row)
        return None if v is None else not v
    value = row.get(pred.column)
    if isinstance(pred, P.IsNull):
        return value is None
    if isinstance(pred, P.IsNotNull):
        return value is not None
    if isinstance(pred, P.EqualNullSafe):
        if value is None or pred.value is None:
            return value is None and pred.value is None
        return spark_cmp(value, pred.value) == 0
    if isinstance(pred, P.In):
        if value is None:
            return None
        if any(v is not None and spark_cmp(value, v) == 0 for v in pred.values):
            return True
        return None if any(v is None for v in pred.values) else False
    if isinstance(pred, P.StartsWith):
        return None if value is None else value.startswith(pred.prefix)
    if value is None or pred.value is None:
        return None
    c = spark_cmp(value, pred.value)
    return {
        P.EqualTo: c == 0,
        P.LessThan: c < 0,
        P.LessThanOrEqual: c <= 0,
        P.GreaterThan: c > 0,
        P.GreaterThanOrEqual: c >= 0,
    }[type(pred)]


def spark_min_max(values):
    vals = [v for v in values if v is not None]
    if not vals:
        return None, None
    import functools

    ordered = sorted(vals, key=functools.cmp_to_key(spark_cmp))
    return ordered[0], ordered[-1]


def kernel_truncate_max(x: str, prefix: int = 32) -> str:
    """delta-kernel-rs: 32 characters plus 0x7F (or U+10FFFF after a non-ASCII character)."""
    if len(x) <= prefix:
        return x
    return x[:prefix] + ("\x7f" if x[prefix] < "\x7f" else "\U0010ffff")


def json_stat(kind, value, is_max, style="spark"):
    """How a writer puts a min/max into the stats JSON."""
    if kind == "double":
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        return value
    if kind == "string":
        if not is_max:
            return value[:32]
        if style == "kernel":
            return kernel_truncate_max(value)
        if style == "prefix":  # a writer that cuts the max without a tie-breaker
            return value[:32]
        return java_truncate_max(value)
    if kind == "timestamp":
        v = value.astimezone(UTC)
        return v.strftime("%Y-%m-%dT%H:%M:%S.") + f"{v.microsecond // 1000:03d}Z"
    if kind == "date":
        return value.isoformat()
    return value


KINDS = {"long": "long", "double": "double", "string": "string", "timestamp": "timestamp", "date": "date"}

_chars = st.sampled_from(["a", "b", "z", "?", "\ufffd", "\uffff", "\U0001f600", "\U0010ffff", "\u00e9", "A", "\x7f"])
VALUE_STRATEGIES = {
    "long": st.integers(-20, 20),
    "double": st.one_of(
        st.floats(-5, 5, allow_nan=False, width=32).map(float),
        st.sampled_from([float("nan"), float("nan"), float("inf"), -float("inf"), 0.0, -0.0]),
    ),
    "string": st.one_of(
        st.text(_chars, max_size=4),
        st.tuples(st.integers(30, 33), st.text(_chars, min_size=1, max_size=3)).map(lambda t: "a" * t[0] + t[1]),
    ),
    "timestamp": st.integers(0, 4_000_000).map(
        lambda us: dt.datetime(2020, 1, 1, tzinfo=UTC) + dt.timedelta(microseconds=us * 37)
    ),
    "date": st.integers(0, 30).map(lambda d: dt.date(2020, 1, 1) + dt.timedelta(days=d)),
}
STATS_MODES = ["spark", "spark", "none", "nan_excluding", "kernel", "prefix", "wide"]


@st.composite
def table_cases(draw):
    """A column kind and files: (physical rows, visible rows, partition value, nested
    values, stats mode). Visible rows differ from physical rows only in mode "wide"
    (rows deleted by a deletion vector after the stats were written)."""
    kind = draw(st.sampled_from(sorted(KINDS)))
    values = VALUE_STRATEGIES[kind]
    n_files = draw(st.integers(1, 5))
    files = []
    for _ in range(n_files):
        rows = draw(st.lists(st.one_of(st.none(), values), min_size=0, max_size=6))
        part = draw(st.one_of(st.none(), st.integers(0, 3)))
        nested = [draw(st.one_of(st.none(), st.integers(0, 9))) for _ in rows]
        mode = draw(st.sampled_from(STATS_MODES))
        visible = list(range(len(rows)))
        if mode == "wide":
            visible = sorted(draw(st.sets(st.sampled_from(visible))) if rows else [])
        files.append((rows, visible, part, nested, mode))
    return kind, files


def near(kind, v):
    """Values next to v: where truncated or lossy statistics would go wrong."""
    if kind == "long":
        return [v, v - 1, v + 1]
    if kind == "double":
        if math.isnan(v) or math.isinf(v):
            return [v, 0.0]
        return [v, v + 1e-9, v - 1e-9, v + 1e-6, -v]
    if kind == "string":
        return [v, v + "a", v[:-1], v + "\U0001f600", v + "\ufffd", v[:32], v[:31] + "b", v[:-1] + "\uffff"]
    if kind == "timestamp":
        return [v + dt.timedelta(microseconds=d) for d in (0, 1, -1, 500, 999, 1000, -1000, 59_000_000)]
    if kind == "date":
        return [v, v + dt.timedelta(days=1), v - dt.timedelta(days=1)]
    return [v]


def literal_strategy(kind, seen):
    """Literals: random values, values of the data, and values right next to them."""
    values = VALUE_STRATEGIES[kind]
    candidates = [x for _, x in sorted({repr(x): x for v in seen for x in near(kind, v)}.items())]
    if not candidates:
        return values
    exact = [x for _, x in sorted({repr(v): v for v in seen}.items())]
    return st.one_of(values, st.sampled_from(exact), st.sampled_from(exact), st.sampled_from(candidates))


def leaf_strategy(kind, seen=()):
    values = literal_strategy(kind, seen)
    col = ("v",)
    cmp = st.sampled_from(
        [P.EqualTo, P.LessThan, P.LessThanOrEqual, P.GreaterThan, P.GreaterThanOrEqual, P.EqualNullSafe]
    )
    on_v = [
        st.builds(lambda c, v: c(col, v), cmp, values),
        st.builds(lambda c, v: c(col, v), cmp, values),
        st.builds(lambda c, v: c(col, v), cmp, values),
        st.builds(lambda vs: P.In(col, tuple(vs)), st.lists(st.one_of(st.none(), values), max_size=20)),
        st.just(P.IsNull(col)),
        st.just(P.IsNotNull(col)),
    ]
    if kind == "string":
        on_v.append(st.builds(lambda p: P.StartsWith(col, p), st.text(_chars, max_size=3)))
        on_v.append(st.builds(lambda p: P.StartsWith(col, "a" * 30 + p), st.text(_chars, max_size=4)))
        on_v.append(st.builds(lambda v, k: P.StartsWith(col, v[:k]), values, st.integers(0, 40)))
    others = [
        st.builds(lambda c, v: c(("p",), v), cmp, st.one_of(st.none(), st.integers(-1, 4))),
        st.just(P.IsNull(("p",))),
        st.builds(lambda v: P.In(("p",), tuple(v)), st.lists(st.one_of(st.none(), st.integers(0, 3)), max_size=3)),
        st.builds(lambda c, v: c(("s", "x"), v), cmp, st.integers(-1, 10)),
        st.just(P.IsNull(("s", "x"))),
    ]
    return st.one_of(st.one_of(*on_v), st.one_of(*on_v), st.one_of(*on_v), st.one_of(*others))


def predicate_strategy(kind, seen=()):
    leaf = leaf_strategy(kind, seen)
    tree = st.recursive(
        leaf,
        lambda children: st.one_of(
            st.builds(P.Not, children), st.builds(P.And, children, children), st.builds(P.Or, children, children)
        ),
        max_leaves=3,
    )
    return st.one_of(leaf, st.builds(P.Not, leaf), tree)


def build_case(kind, files):
    schema = make_schema(field("v", KINDS[kind]), field("p", "integer"), field("s", struct(field("x", "long"))))
    stats, parts, rows_by_file = [], [], []
    for rows, visible, part, nested, mode in files:
        rows_by_file.append([{("v",): rows[i], ("p",): part, ("s", "x"): nested[i]} for i in visible])
        parts.append({"p": None if part is None else str(part)})
        if mode == "none":
            stats.append(None)
            continue
        vals = list(rows)
        if mode == "nan_excluding":
            vals = [v for v in vals if not (isinstance(v, float) and math.isnan(v))]
        lo, hi = spark_min_max(vals)
        xlo, xhi = spark_min_max(nested)
        mins, maxs = {}, {}
        if lo is not None:
            mins["v"], maxs["v"] = json_stat(kind, lo, False, mode), json_stat(kind, hi, True, mode)
        if xlo is not None:
            mins["s"], maxs["s"] = {"x": xlo}, {"x": xhi}
        nulls = {"v": sum(v is None for v in rows), "s": {"x": sum(x is None for x in nested)}}
        # "wide": stats of the physical rows, some of which a deletion vector removed since
        stats.append(stats_json(len(rows), mins, maxs, nulls, tight=(False if mode == "wide" else None)))
    return schema, make_files(stats, parts, ["p"]), rows_by_file


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_pruning_never_drops_a_matching_file(data):
    kind, files = data.draw(table_cases())
    seen = [v for rows, _, _, _, _ in files for v in rows if v is not None]
    preds = data.draw(st.lists(predicate_strategy(kind, seen), min_size=1, max_size=2))
    schema, table, rows_by_file = build_case(kind, files)
    result = set(kept(table, preds, schema, ["p"]))
    for i, rows in enumerate(rows_by_file):
        if any(all(spark_eval(p, row) is True for p in preds) for row in rows):
            assert i in result, (i, [str(p) for p in preds], rows, table.column("stats")[i])


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(st.data())
def test_row_group_selection_never_drops_a_matching_group(tmp_path, data):
    kind = data.draw(st.sampled_from(sorted(KINDS)))
    values = data.draw(st.lists(st.one_of(st.none(), VALUE_STRATEGIES[kind]), min_size=1, max_size=24))
    preds = data.draw(st.lists(predicate_strategy(kind, [v for v in values if v is not None]), min_size=1, max_size=2))
    arrow_type = {
        "long": pa.int64(),
        "double": pa.float64(),
        "string": pa.string(),
        "timestamp": pa.timestamp("us", tz="UTC"),
        "date": pa.date32(),
    }[kind]
    schema = make_schema(field("v", KINDS[kind]), field("p", "integer"), field("s", struct(field("x", "long"))))
    xs = [i % 7 if i % 5 else None for i in range(len(values))]
    table = pa.table(
        {"v": pa.array(values, arrow_type), "s": pa.array([{"x": x} for x in xs], pa.struct([("x", pa.int64())]))}
    )
    size = data.draw(st.integers(1, 8))
    md = write_groups(tmp_path, table, size, name=f"g{abs(hash(str(values))) % 10_000}.parquet")
    selected = set(groups(md, preds, schema))
    for g in range(md.num_row_groups):
        rows = [
            {("v",): values[i], ("p",): None, ("s", "x"): xs[i]}
            for i in range(g * size, min((g + 1) * size, len(values)))
        ]
        if any(all(spark_eval(p, row) is True for p in preds) for row in rows):
            assert g in selected, (g, [str(p) for p in preds], rows)


# ====================================== pushed values as PySpark hands them over (#24 item 2)
_EXACT = decimal.Context(prec=100)


def _dec(unscaled: int, scale: int) -> decimal.Decimal:
    return decimal.Decimal(unscaled).scaleb(-scale, context=_EXACT)


def _pushed_decimal(unscaled: int, scale: int) -> decimal.Decimal:
    """``unscaled * 10**-scale`` as PySpark's filter pushdown hands it to the reader:
    serialized as a Variant decimal16, then converted by pyspark's own
    ``VariantVal.toPython`` (which rounds to the worker's 28-digit decimal context)."""
    from pyspark.sql.types import VariantVal

    raw = bytes([10 << 2, scale]) + unscaled.to_bytes(16, "little", signed=True)
    return VariantVal(raw, b"\x01\x00\x00").toPython()


def _decimal_files(values):
    return make_files(
        [
            '{"numRecords":1,"minValues":{"d":%s},"maxValues":{"d":%s},"nullCount":{"d":0}}'
            % (format(v, "f"), format(v, "f"))
            for v in values
        ]
    )


_DECIMAL_OPS = ("EqualTo", "EqualNullSafe", "GreaterThan", "GreaterThanOrEqual", "LessThan", "LessThanOrEqual", "In")


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    scale=st.integers(0, 38),
    digits=st.lists(st.integers(-(10**38) + 1, 10**38 - 1), min_size=1, max_size=3),
    op=st.sampled_from(_DECIMAL_OPS),
    pick=st.integers(0, 2),
    delta=st.sampled_from([0, 0, 1, -1, 10**9]),
)
def test_pushed_decimals_never_prune_a_matching_file(scale, digits, op, pick, delta):
    """decimal(38, s) columns, literals of up to 38 digits (more than the 28 PySpark's
    conversion keeps): a file holding a row the exact filter matches is always kept."""
    from pyspark.sql import datasource as ds

    from delta_pyds.spark.datasource.filters import translate_filters

    values = [_dec(u, scale) for u in digits]
    unscaled = max(min(digits[pick % len(digits)] + delta, 10**38 - 1), -(10**38) + 1)
    exact = _dec(unscaled, scale)
    pushed = _pushed_decimal(unscaled, scale)
    schema = make_schema(field("d", f"decimal(38,{scale})"))
    f = ds.In(("d",), (pushed,)) if op == "In" else getattr(ds, op)(("d",), pushed)
    preds, _ = translate_filters([f], schema)
    check = {
        "EqualTo": lambda v: v == exact,
        "EqualNullSafe": lambda v: v == exact,
        "In": lambda v: v == exact,
        "GreaterThan": lambda v: v > exact,
        "GreaterThanOrEqual": lambda v: v >= exact,
        "LessThan": lambda v: v < exact,
        "LessThanOrEqual": lambda v: v <= exact,
    }[op]
    result = set(kept(_decimal_files(values), preds, schema)) if preds else set(range(len(values)))
    for i, v in enumerate(values):
        if check(v):
            assert i in result, (op, str(exact), str(pushed), str(v))


def test_rounded_pushed_decimal_is_not_translated_but_short_ones_are():
    from pyspark.sql import datasource as ds

    from delta_pyds.spark.datasource.filters import translate_filters

    schema = make_schema(field("d", "decimal(38,10)"))
    long_value = decimal.Decimal("1234567890123456789012345678.1234567891")
    pushed = _pushed_decimal(12345678901234567890123456781234567891, 10)
    assert pushed != long_value  # PySpark's conversion rounded it
    preds, _ = translate_filters([ds.EqualTo(("d",), pushed)], schema)
    assert preds == []
    short = decimal.Decimal("12345.6789000000")
    preds, _ = translate_filters([ds.EqualTo(("d",), _pushed_decimal(123456789000000, 10))], schema)
    assert preds == [P.EqualTo(("d",), short)]
    assert kept(_decimal_files([long_value, short]), preds, schema) == [1]


@pytest.mark.parametrize(
    "typ, value, stat",
    [
        ("timestamp", dt.datetime(1, 1, 1, tzinfo=UTC), "0001-01-01T00:00:00.000Z"),
        ("timestamp", dt.datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC), "9999-12-31T23:59:59.999Z"),
        ("timestamp", dt.datetime(2024, 5, 1, 0, 0, 0, 500, tzinfo=UTC), "2024-05-01T00:00:00.000Z"),  # sub-ms
        ("timestamp_ntz", dt.datetime(9999, 12, 31, 23, 59, 59, 999999), "9999-12-31T23:59:59.999"),
        ("date", dt.date(1, 1, 1), "0001-01-01"),
        ("date", dt.date(9999, 12, 31), "9999-12-31"),
        ("string", "a\x00b", "a\x00b"),
        ("string", "\U0001f600\u00e9", "\U0001f600\u00e9"),
        ("double", -0.0, 0.0),
        ("double", 0.0, -0.0),
        ("double", float("inf"), float("inf")),
    ],
)
def test_pushed_edge_values_keep_the_file_holding_them(typ, value, stat):
    from pyspark.sql import datasource as ds

    from delta_pyds.spark.datasource.filters import translate_filters

    schema = make_schema(field("v", typ))
    files = make_files([stats_json(1, {"v": stat}, {"v": stat}, {"v": 0})])
    for f in (ds.EqualTo(("v",), value), ds.GreaterThanOrEqual(("v",), value), ds.LessThanOrEqual(("v",), value)):
        preds, _ = translate_filters([f], schema)
        assert kept(files, preds, schema) == [0], (typ, value, type(f).__name__)
