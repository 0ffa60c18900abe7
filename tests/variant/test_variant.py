"""Tests for delta_pyds.variant: Variant columns from Parquet to Spark's Arrow form.

Ground truth comes from three places:

* real Delta tables written by Spark (tests/data/kernel-rs/unshredded-variant, with the
  expected values kernel-rs ships in ``unshredded-variant.expected.in``, and the delta-rs
  variant tables);
* Parquet files *shredded by Spark itself* in this test (Spark 4's internal
  ``spark.sql.variant.forceShreddingSchemaForTest``), compared with what Spark's own
  reader gives for ``to_json(v)``;
* hand-built shredded Arrow data covering every branch of the shredding spec, checked
  against the JSON Spark's JVM prints for the bytes we produce.
"""

from __future__ import annotations

import datetime
import decimal
import glob
import json
import os
import struct
import sys
import urllib.parse
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from delta_pyds.errors import DataFileError, DeltaError, MalformedVariantError
from delta_pyds.variant import (
    VARIANT_ARROW_TYPE,
    decode_to_json,
    is_variant_type,
    reconstruct_nested,
    reconstruct_variant,
)

DATA = Path(__file__).parent.parent / "data"

# --------------------------------------------------------------------------------------
# A small, independent test-side Variant encoder (not the module's).
# --------------------------------------------------------------------------------------


def build_metadata(keys) -> bytes:
    encoded = [k.encode("utf-8") for k in keys]
    total = sum(map(len, encoded))
    size = 1 if max(total, len(encoded)) < 256 else 4
    out = bytearray([1 | ((size - 1) << 6)])
    out += len(encoded).to_bytes(size, "little")
    off = 0
    for k in encoded:
        out += off.to_bytes(size, "little")
        off += len(k)
    out += off.to_bytes(size, "little")
    for k in encoded:
        out += k
    return bytes(out)


def collect_keys(obj, acc=None) -> list:
    acc = [] if acc is None else acc
    if isinstance(obj, dict):
        for k, v in obj.items():
            if k not in acc:
                acc.append(k)
            collect_keys(v, acc)
    elif isinstance(obj, list):
        for v in obj:
            collect_keys(v, acc)
    return acc


def enc(obj, ids: dict) -> bytes:
    """Encode a JSON-like Python value; object keys get ids from ``ids``. Uses 4-byte
    offsets/ids everywhere (valid, just not minimal) to differ from the module."""
    if obj is None:
        return b"\x00"
    if obj is True:
        return b"\x04"
    if obj is False:
        return b"\x08"
    if isinstance(obj, int):
        for type_id, width in ((3, 1), (4, 2), (5, 4), (6, 8)):
            if -(1 << (8 * width - 1)) <= obj < (1 << (8 * width - 1)):
                return bytes([type_id << 2]) + obj.to_bytes(width, "little", signed=True)
        raise ValueError(obj)
    if isinstance(obj, float):
        return bytes([7 << 2]) + struct.pack("<d", obj)
    if isinstance(obj, decimal.Decimal):
        sign, digits, exp = obj.as_tuple()
        unscaled = int("".join(map(str, digits))) * (-1 if sign else 1)
        return bytes([10 << 2, -exp]) + unscaled.to_bytes(16, "little", signed=True)
    if isinstance(obj, str):
        data = obj.encode("utf-8")
        return bytes([16 << 2]) + len(data).to_bytes(4, "little") + data
    if isinstance(obj, bytes):
        return bytes([15 << 2]) + len(obj).to_bytes(4, "little") + obj
    if isinstance(obj, list):
        elems = [enc(e, ids) for e in obj]
        out = bytearray([3 | (3 << 2) | (1 << 4)]) + len(elems).to_bytes(4, "little")
        off = 0
        for e in elems:
            out += off.to_bytes(4, "little")
            off += len(e)
        out += off.to_bytes(4, "little")
        return bytes(out) + b"".join(elems)
    if isinstance(obj, dict):
        items = sorted(obj.items())
        elems = [enc(v, ids) for _, v in items]
        # values written in reverse order to exercise non-monotonic offsets
        out = bytearray([2 | (3 << 2) | (3 << 4) | (1 << 6)]) + len(items).to_bytes(4, "little")
        for k, _ in items:
            out += ids[k].to_bytes(4, "little")
        sizes = [len(e) for e in elems]
        offsets, off = [0] * len(elems), 0
        for i in reversed(range(len(elems))):
            offsets[i] = off
            off += sizes[i]
        for o in offsets:
            out += o.to_bytes(4, "little")
        out += off.to_bytes(4, "little")
        return bytes(out) + b"".join(reversed(elems))
    raise TypeError(type(obj))


def variant_of(obj, extra_keys=()):
    keys = collect_keys(obj, list(extra_keys))
    ids = {k: i for i, k in enumerate(keys)}
    return enc(obj, ids), build_metadata(keys), ids


def read_object_ids(value: bytes) -> list[int]:
    """Field ids of a top-level Variant object, in stored order."""
    header = value[0] >> 2
    is_large, id_size = (header >> 4) & 1, ((header >> 2) & 3) + 1
    size_bytes = 4 if is_large else 1
    num = int.from_bytes(value[1 : 1 + size_bytes], "little")
    start = 1 + size_bytes
    return [int.from_bytes(value[start + i * id_size : start + (i + 1) * id_size], "little") for i in range(num)]


def metadata_keys(metadata: bytes) -> list[str]:
    size = ((metadata[0] >> 6) & 3) + 1
    n = int.from_bytes(metadata[1 : 1 + size], "little")
    offs = [int.from_bytes(metadata[1 + size * (i + 1) : 1 + size * (i + 2)], "little") for i in range(n + 1)]
    base = 1 + size * (n + 2)
    return [metadata[base + offs[i] : base + offs[i + 1]].decode() for i in range(n)]


def sorted_pairs_hook(pairs):
    keys = [k for k, _ in pairs]
    assert keys == sorted(keys, key=lambda k: k.encode("utf-8")), f"object keys not sorted: {keys}"
    return dict(pairs)


def to_json_rows(arr) -> list:
    arr = arr.combine_chunks() if isinstance(arr, pa.ChunkedArray) else arr
    return [None if r is None else decode_to_json(r["value"], r["metadata"]) for r in arr.to_pylist()]


# --------------------------------------------------------------------------------------
# Arrow builders for shredded columns
# --------------------------------------------------------------------------------------


def group_type(typed: pa.DataType | None, with_value: bool = True) -> pa.DataType:
    fields = []
    if with_value:
        fields.append(pa.field("value", pa.binary()))
    if typed is not None:
        fields.append(pa.field("typed_value", typed))
    return pa.struct(fields)


def object_type(**fields) -> pa.DataType:
    return pa.struct([pa.field(name, t, nullable=False) for name, t in fields.items()])


def list_type(element_group: pa.DataType) -> pa.DataType:
    return pa.list_(pa.field("element", element_group, nullable=False))


def top_type(typed: pa.DataType | None, with_value: bool = True) -> pa.DataType:
    fields = [pa.field("metadata", pa.binary(), nullable=False)]
    if with_value:
        fields.append(pa.field("value", pa.binary()))
    if typed is not None:
        fields.append(pa.field("typed_value", typed))
    return pa.struct(fields)


MD_EMPTY = b"\x01\x00\x00"


# --------------------------------------------------------------------------------------
# The Arrow type Spark expects
# --------------------------------------------------------------------------------------


def test_arrow_type_is_exactly_what_pyspark_expects():
    from pyspark.sql.pandas.types import to_arrow_schema
    from pyspark.sql.types import StructField, StructType, VariantType

    expected = to_arrow_schema(StructType([StructField("v", VariantType())])).field("v").type
    assert VARIANT_ARROW_TYPE.equals(expected, check_metadata=True)
    assert [f.name for f in VARIANT_ARROW_TYPE] == ["value", "metadata"]
    assert [f.nullable for f in VARIANT_ARROW_TYPE] == [False, False]
    assert VARIANT_ARROW_TYPE.field("metadata").metadata == {b"variant": b"true"}
    assert VARIANT_ARROW_TYPE.field("value").metadata is None
    assert is_variant_type(expected)
    assert not is_variant_type(pa.struct([("value", pa.binary()), ("metadata", pa.binary())]))


# --------------------------------------------------------------------------------------
# Real Delta tables
# --------------------------------------------------------------------------------------

REAL_TABLES = [
    ("kernel-rs", "unshredded-variant"),
    ("delta-rs", "spark-variant-checkpoint"),
    ("delta-rs", "spark-shredded-variant-preview-delta"),
]


def table_state(table_dir: Path):
    """Replay the JSON commits: (data file paths, schemaString, protocol)."""
    files: dict[str, None] = {}
    schema = protocol = None
    for commit in sorted((table_dir / "_delta_log").glob("*.json")):
        for line in commit.read_text().splitlines():
            if not line.strip():
                continue
            action = json.loads(line)
            if "add" in action:
                files[action["add"]["path"]] = None
            elif "remove" in action:
                files.pop(action["remove"]["path"], None)
            elif "metaData" in action:
                schema = action["metaData"]["schemaString"]
            elif "protocol" in action:
                protocol = action["protocol"]
    return [table_dir / urllib.parse.unquote(p) for p in files], schema, protocol


def parse_expected(path: Path):
    """kernel-rs' arrow pretty-printed table: (header, sorted rows of cells)."""
    rows = []
    for line in path.read_text().splitlines():
        line = line.strip().rstrip(",")
        if not line.startswith('"|'):
            continue
        cells = [c.strip() for c in line.strip('"').strip("|").split("|")]
        rows.append(cells)
    header, body = rows[0], rows[1:]
    return header, sorted(body)


def render(v, t: pa.DataType) -> str:
    """Arrow-rs pretty format of one value (the format of the .expected.in file)."""
    if v is None:
        return ""
    if is_variant_type(t):
        return f"{{metadata: {v['metadata'].hex()}, value: {v['value'].hex()}}}"
    if pa.types.is_struct(t):
        return "{" + ", ".join(f"{f.name}: {render(v[f.name], f.type)}" for f in t) + "}"
    if pa.types.is_map(t):
        return "{" + ", ".join(f"{k}: {render(x, t.item_type)}" for k, x in v) + "}"
    if pa.types.is_list(t):
        return "[" + ", ".join(render(x, t.value_type) for x in v) + "]"
    return str(v)


def iter_variants(v, t):
    if v is None:
        return
    if is_variant_type(t):
        yield v
    elif pa.types.is_struct(t):
        for f in t:
            yield from iter_variants(v[f.name], f.type)
    elif pa.types.is_map(t):
        for _, x in v:
            yield from iter_variants(x, t.item_type)
    elif pa.types.is_list(t):
        for x in v:
            yield from iter_variants(x, t.value_type)


@pytest.mark.parametrize("source,name", REAL_TABLES)
def test_real_table_matches_kernel_rs_expected(source, name):
    from pyspark.sql.pandas.types import to_arrow_schema
    from pyspark.sql.types import StructType

    files, schema_string, protocol = table_state(DATA / source / name)
    assert files and all(f.exists() for f in files)
    assert any("variant" in f for f in protocol["readerFeatures"])
    # The Arrow schema Spark expects for the table, variant columns included.
    target = to_arrow_schema(StructType.fromJson(json.loads(schema_string)))
    assert sum(1 for f in target if f.type == VARIANT_ARROW_TYPE) == 1  # column v

    header, expected_rows = parse_expected(DATA / "kernel-rs" / "unshredded-variant.expected.in")
    assert header == target.names
    rendered = []
    n_variants = 0
    for path in files:
        table = pq.read_table(path)
        columns = {}
        for field in target:
            col = reconstruct_nested(table.column(field.name), field.type)
            assert col.type.equals(field.type, check_metadata=True)
            columns[field.name] = col.to_pylist()
        for i in range(table.num_rows):
            row_id = columns["id"][i]
            rendered.append([render(columns[f.name][i], f.type) for f in target])
            for f in target:
                for variant in iter_variants(columns[f.name][i], f.type):
                    n_variants += 1
                    assert decode_to_json(variant["value"], variant["metadata"]) == '{"key":%d}' % row_id
    assert sorted(rendered) == expected_rows
    assert len(expected_rows) == 102
    assert n_variants == 102 * 10


def test_real_table_unshredded_path_is_zero_copy():
    files, _, _ = table_state(DATA / "kernel-rs" / "unshredded-variant")
    col = pq.read_table(files[0]).column("v").chunk(0)
    out = reconstruct_variant(col)
    assert out.type.equals(VARIANT_ARROW_TYPE, check_metadata=True)
    # the binary data buffers are the very same memory
    assert out.field("value").buffers()[2].address == col.field("value").buffers()[2].address
    assert out.field("metadata").buffers()[2].address == col.field("metadata").buffers()[2].address


# --------------------------------------------------------------------------------------
# Unshredded and top-level behaviour
# --------------------------------------------------------------------------------------


def test_unshredded_reordered_and_cast_children():
    v1, m1, _ = variant_of({"b": [1, "x"], "a": None})
    v2, m2, _ = variant_of("hello")
    col = pa.StructArray.from_arrays(
        [pa.array([m1, None, m2], pa.large_binary()), pa.array([v1, None, v2], pa.binary_view())],
        names=["metadata", "value"],
        mask=pa.array([False, True, False]),
    )
    out = reconstruct_variant(col)
    assert out.type.equals(VARIANT_ARROW_TYPE, check_metadata=True)
    assert out.to_pylist() == [{"value": v1, "metadata": m1}, None, {"value": v2, "metadata": m2}]
    assert to_json_rows(out) == ['{"a":null,"b":[1,"x"]}', None, '"hello"']
    out.validate(full=True)


def test_top_level_nulls_and_value_only():
    v, m, _ = variant_of([1, 2])
    col = pa.array(
        [
            {"metadata": m, "value": v, "typed_value": None},  # value only: as is
            {"metadata": MD_EMPTY, "value": None, "typed_value": None},  # both null: Variant null
            None,  # SQL NULL
            {"metadata": MD_EMPTY, "value": None, "typed_value": 7},
        ],
        top_type(pa.int64()),
    )
    out = reconstruct_variant(col)
    assert out.to_pylist()[0] == {"value": v, "metadata": m}
    assert out.to_pylist()[1] == {"value": b"\x00", "metadata": MD_EMPTY}
    assert out.is_null().to_pylist() == [False, False, True, False]
    assert to_json_rows(out) == ["[1,2]", "null", None, "7"]
    out.validate(full=True)


def test_metadata_only_group_and_ignored_underscore_fields():
    v, m, _ = variant_of({"k": 1})
    col = pa.array(
        [{"metadata": m, "value": v, "_spark_x": 1}, {"metadata": m, "value": None, "_spark_x": 2}],
        pa.struct([("metadata", pa.binary()), ("value", pa.binary()), ("_spark_x", pa.int32())]),
    )
    assert to_json_rows(reconstruct_variant(col)) == ['{"k":1}', "null"]


def test_null_typed_column_and_null_column():
    col = pa.array([{"metadata": MD_EMPTY, "value": b"\x0c\x01", "typed_value": None}], top_type(pa.null()))
    assert to_json_rows(reconstruct_variant(col)) == ["1"]
    out = reconstruct_variant(pa.nulls(3))
    assert out.type.equals(VARIANT_ARROW_TYPE, check_metadata=True) and out.null_count == 3


# --------------------------------------------------------------------------------------
# Shredded primitives of every type the spec allows
# --------------------------------------------------------------------------------------

UUID_BYTES = bytes(range(16))
LONG_STRING = "é" * 40  # 80 UTF-8 bytes: a long string

# (arrow type, python value, expected JSON, expected Variant primitive type id or
# -1 for short string)
PRIMITIVES = [
    (pa.bool_(), True, "true", 1),
    (pa.bool_(), False, "false", 2),
    (pa.int8(), -128, "-128", 3),
    (pa.int16(), 300, "300", 4),
    (pa.int32(), -70000, "-70000", 5),
    (pa.int64(), 5_000_000_000, "5000000000", 6),
    (pa.int64(), 1, "1", 6),
    (pa.float32(), 1.5, "1.5", 14),
    (pa.float32(), 0.1, "0.1", 14),
    (pa.float32(), 1e10, "1.0E10", 14),
    (pa.float64(), 2.25, "2.25", 7),
    (pa.float64(), 1e20, "1.0E20", 7),
    (pa.float64(), 1e-7, "1.0E-7", 7),
    (pa.float64(), 1234567.0, "1234567.0", 7),
    (pa.float64(), -0.0, "-0.0", 7),
    (pa.float64(), float("nan"), '"NaN"', 7),
    (pa.float64(), float("-inf"), '"-Infinity"', 7),
    (pa.decimal128(9, 2), decimal.Decimal("1.25"), "1.25", 8),
    (pa.decimal128(9, 2), decimal.Decimal("-3.00"), "-3", 8),
    (pa.decimal128(18, 4), decimal.Decimal("3.5000"), "3.5", 9),
    (pa.decimal128(38, 10), decimal.Decimal("12345678901234567890.5000000000"), "12345678901234567890.5", 10),
    (pa.decimal128(38, 0), decimal.Decimal("-" + "9" * 38), "-" + "9" * 38, 10),
    (pa.decimal128(9, 9), decimal.Decimal("0.000000001"), "0.000000001", 8),
    (pa.date32(), datetime.date(2021, 3, 4), '"2021-03-04"', 11),
    (pa.date32(), datetime.date(1, 1, 1), '"0001-01-01"', 11),
    (pa.timestamp("us", tz="UTC"), 1_614_834_367_123_456, '"2021-03-04 05:06:07.123456+00:00"', 12),
    (pa.timestamp("us", tz="UTC"), 1_614_834_367_000_000, '"2021-03-04 05:06:07+00:00"', 12),
    (pa.timestamp("us", tz="UTC"), -1, '"1969-12-31 23:59:59.999999+00:00"', 12),
    (pa.timestamp("us"), 1_614_834_367_120_000, '"2021-03-04 05:06:07.12"', 13),
    (pa.timestamp("ns", tz="UTC"), 1_614_834_367_123_456_789, '"2021-03-04 05:06:07.123456789+00:00"', 18),
    (pa.timestamp("ns"), 1_614_834_367_000_000_001, '"2021-03-04 05:06:07.000000001"', 19),
    (pa.time64("us"), 3_723_000_001, '"01:02:03.000001"', 17),
    (pa.string(), "hello", '"hello"', -1),
    (pa.string(), 'q"\\\n\x01é😀', '"q\\"\\\\\\n\\u0001é😀"', -1),
    (pa.large_string(), LONG_STRING, json.dumps(LONG_STRING, ensure_ascii=False), 16),
    (pa.string_view(), "", '""', -1),
    (pa.binary(), b"\xde\xad\xbe\xef", '"3q2+7w=="', 15),
    (pa.large_binary(), b"", '""', 15),
    (pa.binary(16), UUID_BYTES, '"00010203-0405-0607-0809-0a0b0c0d0e0f"', 20),
    (pa.uuid(), UUID_BYTES, '"00010203-0405-0607-0809-0a0b0c0d0e0f"', 20),
]


def primitive_column(arrow_type, py_value):
    if arrow_type == pa.uuid():
        typed = pa.ExtensionArray.from_storage(pa.uuid(), pa.array([py_value, None, None], pa.binary(16)))
    elif pa.types.is_timestamp(arrow_type) or pa.types.is_time(arrow_type):
        typed = pa.array([py_value, None, None], pa.int64()).cast(arrow_type)
    else:
        typed = pa.array([py_value, None, None], arrow_type)
    metadata = pa.array([MD_EMPTY] * 3, pa.binary())
    value = pa.array([None, b"\x0dabc", b"\x00"], pa.binary())  # typed / "abc" / null
    return pa.StructArray.from_arrays([metadata, value, typed], names=["metadata", "value", "typed_value"])


@pytest.mark.parametrize(
    "arrow_type,py_value,expected_json,type_id",
    PRIMITIVES,
    ids=[f"{i}-{p[0]}" for i, p in enumerate(PRIMITIVES)],
)
def test_shredded_primitive(arrow_type, py_value, expected_json, type_id):
    out = reconstruct_variant(primitive_column(arrow_type, py_value))
    rows = out.to_pylist()
    value = rows[0]["value"]
    if type_id == -1:
        assert value[0] & 3 == 1  # short string
    else:
        assert value[0] & 3 == 0 and value[0] >> 2 == type_id
    assert rows[0]["metadata"] == MD_EMPTY
    assert to_json_rows(out) == [expected_json, '"abc"', "null"]


def test_shredded_primitive_exact_bytes():
    cases = [
        (pa.int8(), 5, b"\x0c\x05"),
        (pa.int32(), 5, b"\x14\x05\x00\x00\x00"),
        (pa.decimal128(9, 2), decimal.Decimal("1.25"), b"\x20\x02" + (125).to_bytes(4, "little")),
        (pa.decimal128(18, 2), decimal.Decimal("-1.25"), b"\x24\x02" + (-125).to_bytes(8, "little", signed=True)),
        (pa.decimal128(20, 2), decimal.Decimal("1.25"), b"\x28\x02" + (125).to_bytes(16, "little")),
        (pa.decimal256(20, 2), decimal.Decimal("1.25"), b"\x28\x02" + (125).to_bytes(16, "little")),
        (pa.string(), "ab", b"\x09ab"),
        (pa.string(), "x" * 64, b"\x40" + (64).to_bytes(4, "little") + b"x" * 64),
        (pa.date32(), datetime.date(1970, 1, 2), b"\x2c\x01\x00\x00\x00"),
        (pa.bool_(), True, b"\x04"),
    ]
    for arrow_type, py_value, expected in cases:
        out = reconstruct_variant(primitive_column(arrow_type, py_value))
        assert out.to_pylist()[0]["value"] == expected, arrow_type
        # the same value at a non-zero offset of a sliced column
        sliced = pa.StructArray.from_arrays(
            [
                pa.array([MD_EMPTY] * 3, pa.binary()),
                pa.array([b"\x00", b"\x00", None], pa.binary()),
                pa.array([None, None, py_value], arrow_type),
            ],
            names=["metadata", "value", "typed_value"],
        ).slice(2)
        assert sliced.offset == 2
        assert reconstruct_variant(sliced).to_pylist()[0]["value"] == expected, arrow_type


# --------------------------------------------------------------------------------------
# Shredded objects
# --------------------------------------------------------------------------------------

EVENT_TYPE = object_type(
    event_type=group_type(pa.string()),
    event_ts=group_type(pa.timestamp("us", tz="UTC")),
)


def test_spec_event_table():
    """The object table of VariantShredding.md, row by row."""
    keys = ["event_type", "event_ts", "email", "error_msg", "click"]
    ids = {k: i for i, k in enumerate(keys)}
    md = build_metadata(keys)
    F = lambda value=None, typed=None: {"value": value, "typed_value": typed}  # noqa: E731
    rows = [
        # fully shredded
        {
            "metadata": md,
            "value": None,
            "typed_value": {"event_type": F(typed="noop"), "event_ts": F(typed=1729794114937)},
        },
        # partially shredded
        {
            "metadata": md,
            "value": enc({"email": "user@example.com"}, ids),
            "typed_value": {"event_type": F(typed="login"), "event_ts": F(typed=1729794146402)},
        },
        # all shredded fields missing
        {
            "metadata": md,
            "value": enc({"error_msg": "malformed: ..."}, ids),
            "typed_value": {"event_type": F(), "event_ts": F()},
        },
        # not an object
        {"metadata": md, "value": enc("malformed: not an object", ids), "typed_value": None},
        # event_type missing
        {
            "metadata": md,
            "value": enc({"click": "_button"}, ids),
            "typed_value": {"event_type": F(), "event_ts": F(typed=1729794240241)},
        },
        # event_type present and null
        {
            "metadata": md,
            "value": None,
            "typed_value": {"event_type": F(value=b"\x00"), "event_ts": F(typed=1729794954163)},
        },
        # event_ts present but not a timestamp
        {
            "metadata": md,
            "value": None,
            "typed_value": {"event_type": F(typed="noop"), "event_ts": F(value=enc("2024-10-24", ids))},
        },
        # empty object
        {"metadata": md, "value": None, "typed_value": {"event_type": F(), "event_ts": F()}},
        # Variant null
        {"metadata": md, "value": b"\x00", "typed_value": None},
        # SQL NULL
        None,
    ]
    out = reconstruct_variant(pa.array(rows, top_type(EVENT_TYPE)))
    assert to_json_rows(out) == [
        '{"event_ts":"%s+00:00","event_type":"noop"}' % _ts(1729794114937),
        '{"email":"user@example.com","event_ts":"%s+00:00","event_type":"login"}' % _ts(1729794146402),
        '{"error_msg":"malformed: ..."}',
        '"malformed: not an object"',
        '{"click":"_button","event_ts":"%s+00:00"}' % _ts(1729794240241),
        '{"event_ts":"%s+00:00","event_type":null}' % _ts(1729794954163),
        '{"event_ts":"2024-10-24","event_type":"noop"}',
        "{}",
        "null",
        None,
    ]
    # Field ids come from the row's own metadata dictionary, sorted by key.
    for row in out.to_pylist()[:3]:
        assert row["metadata"] == md
        names = [keys[i] for i in read_object_ids(row["value"])]
        assert names == sorted(names)
    out.validate(full=True)


def _ts(micros: int) -> str:
    dt = datetime.datetime(1970, 1, 1) + datetime.timedelta(microseconds=micros)
    return dt.isoformat(sep=" ").rstrip("0") if dt.microsecond else dt.isoformat(sep=" ")


def test_nested_objects_null_groups_and_missing_keys_in_metadata():
    inner = object_type(f=group_type(pa.string()))
    outer = object_type(a=group_type(pa.int32()), c=group_type(inner))
    v_extra, _, _ = variant_of(None)
    md = build_metadata(["zz", "a", "c", "f", "g"])  # ids: zz=0 a=1 c=2 f=3 g=4
    ids = {"zz": 0, "a": 1, "c": 2, "f": 3, "g": 4}
    rows = [
        {
            "metadata": md,
            "value": enc({"zz": [1]}, ids),
            "typed_value": {
                "a": {"value": None, "typed_value": 1},
                "c": {"value": enc({"g": True}, ids), "typed_value": {"f": {"value": None, "typed_value": "deep"}}},
            },
        },
        # c present but not an object -> its value; a null group is "missing"
        {
            "metadata": md,
            "value": None,
            "typed_value": {"a": None, "c": {"value": enc([1, 2], ids), "typed_value": None}},
        },
        # inner typed object with the field missing and no residual -> {}
        {
            "metadata": md,
            "value": None,
            "typed_value": {
                "a": {"value": v_extra, "typed_value": None},
                "c": {"value": None, "typed_value": {"f": {"value": None, "typed_value": None}}},
            },
        },
    ]
    out = reconstruct_variant(pa.array(rows, top_type(outer)))
    assert to_json_rows(out) == ['{"a":1,"c":{"f":"deep","g":true},"zz":[1]}', '{"c":[1,2]}', '{"a":null,"c":{}}']
    rows_out = out.to_pylist()
    assert [r["metadata"] for r in rows_out] == [md] * 3

    # Shredded keys absent from the metadata are appended (existing ids unchanged).
    md2 = build_metadata(["zz"])
    col = pa.array(
        [
            {
                "metadata": md2,
                "value": enc({"zz": 1}, {"zz": 0}),
                "typed_value": {"a": {"value": None, "typed_value": 5}, "c": None},
            }
        ],
        top_type(outer),
    )
    row = reconstruct_variant(col).to_pylist()[0]
    assert metadata_keys(row["metadata"]) == ["zz", "a"]
    assert decode_to_json(row["value"], row["metadata"]) == '{"a":5,"zz":1}'


def test_objects_sorted_by_utf8_and_large_objects():
    names = [f"k{i:03d}" for i in range(300)] + ["Z", "é", "a"]
    typed = object_type(**{n: group_type(pa.int64()) for n in names})
    md = build_metadata(list(reversed(names)))
    row = {
        "metadata": md,
        "value": None,
        "typed_value": {n: {"value": None, "typed_value": i} for i, n in enumerate(names)},
    }
    out = reconstruct_variant(pa.array([row], top_type(typed)))
    value = out.to_pylist()[0]["value"]
    assert value[0] & 3 == 2 and (value[0] >> 2) & 0x10  # object, is_large (303 fields)
    decoded = json.loads(decode_to_json(value, md), object_pairs_hook=sorted_pairs_hook)
    assert decoded == {n: i for i, n in enumerate(names)}
    assert list(decoded)[:2] == ["Z", "a"] and list(decoded)[-1] == "é"


# --------------------------------------------------------------------------------------
# Shredded arrays
# --------------------------------------------------------------------------------------


def test_arrays_with_nested_objects_and_missing_elements():
    element = group_type(object_type(a=group_type(list_type(group_type(pa.int64()))), b=group_type(pa.int64())))
    keys = ["a", "b", "c"]
    ids = {k: i for i, k in enumerate(keys)}
    md = build_metadata(keys)
    E = lambda value=None, typed=None: {"value": value, "typed_value": typed}  # noqa: E731
    rows = [
        # the nested example of the spec: [{"a":[1,2,3],"b":100,"c":"unexpected"}, {...}, "not an object"]
        {
            "metadata": md,
            "value": None,
            "typed_value": [
                E(
                    enc({"c": "unexpected"}, ids),
                    {"a": E(typed=[E(typed=1), E(typed=2), E(typed=3)]), "b": E(typed=100)},
                ),
                E(None, {"a": E(typed=[E(typed=4), E(enc("x", ids)), E(b"\x00")]), "b": E(typed=200)}),
                E(enc("not an object", ids), None),
                E(),  # missing element -> Variant null
            ],
        },
        {"metadata": md, "value": None, "typed_value": []},
        {"metadata": md, "value": enc({"a": 1}, ids), "typed_value": None},  # not an array
        None,
    ]
    out = reconstruct_variant(pa.array(rows, top_type(list_type(element))))
    assert to_json_rows(out) == [
        '[{"a":[1,2,3],"b":100,"c":"unexpected"},{"a":[4,"x",null],"b":200},"not an object",null]',
        "[]",
        '{"a":1}',
        None,
    ]
    out.validate(full=True)


def test_large_array_and_sliced_and_chunked_input():
    many = list(range(300))
    rows = [
        {"metadata": MD_EMPTY, "value": None, "typed_value": [{"value": None, "typed_value": i} for i in many]},
        {"metadata": MD_EMPTY, "value": None, "typed_value": [{"value": None, "typed_value": 1}]},
        {"metadata": MD_EMPTY, "value": b"\x0c\x07", "typed_value": None},
        None,
    ]
    col = pa.array(rows, top_type(list_type(group_type(pa.int16()))))
    full = to_json_rows(reconstruct_variant(col))
    assert full == [json.dumps(many, separators=(",", ":")), "[1]", "7", None]
    assert to_json_rows(reconstruct_variant(col.slice(1, 3))) == full[1:]
    chunked = reconstruct_variant(pa.chunked_array([col.slice(0, 2), col.slice(2)]))
    assert isinstance(chunked, pa.ChunkedArray) and chunked.type.equals(VARIANT_ARROW_TYPE, check_metadata=True)
    assert to_json_rows(chunked) == full


def test_reconstruct_nested_inside_lists_structs_maps():
    v1, m1, _ = variant_of({"x": 1})
    inner = pa.array(
        [
            {"metadata": MD_EMPTY, "value": None, "typed_value": 3},
            {"metadata": m1, "value": v1, "typed_value": None},
            None,
        ],
        top_type(pa.int64()),
    )
    lists = pa.ListArray.from_arrays(pa.array([0, 2, 3]), inner, mask=pa.array([False, False]))
    structs = pa.StructArray.from_arrays([inner], names=["v"])
    maps = pa.MapArray.from_arrays(pa.array([0, 1, 3]), pa.array(["a", "b", "c"]), inner)
    target_list = pa.list_(pa.field("element", VARIANT_ARROW_TYPE))
    target_struct = pa.struct([pa.field("v", VARIANT_ARROW_TYPE)])
    target_map = pa.map_(pa.string(), VARIANT_ARROW_TYPE)
    out_l = reconstruct_nested(lists, target_list)
    out_s = reconstruct_nested(structs, target_struct)
    out_m = reconstruct_nested(maps, target_map)
    assert out_l.type.equals(target_list, check_metadata=True)
    assert out_s.type.equals(target_struct, check_metadata=True)
    assert out_m.type.equals(target_map, check_metadata=True)
    j = lambda r: None if r is None else decode_to_json(r["value"], r["metadata"])  # noqa: E731
    assert [[j(x) for x in row] for row in out_l.to_pylist()] == [["3", '{"x":1}'], [None]]
    assert [j(r["v"]) for r in out_s.to_pylist()] == ["3", '{"x":1}', None]
    assert [[(k, j(x)) for k, x in row] for row in out_m.to_pylist()] == [[("a", "3")], [("b", '{"x":1}'), ("c", None)]]
    untouched = pa.array([1, 2])
    assert reconstruct_nested(untouched, pa.int64()) is untouched


# --------------------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------------------


def test_malformed_variant_error_is_a_delta_error():
    assert issubclass(MalformedVariantError, DataFileError)
    assert issubclass(MalformedVariantError, DeltaError)


@pytest.mark.parametrize(
    "typed_type,row,message",
    [
        # residual object repeats a shredded field
        (
            object_type(a=group_type(pa.int64())),
            {
                "metadata": build_metadata(["a"]),
                "value": enc({"a": 1}, {"a": 0}),
                "typed_value": {"a": {"value": None, "typed_value": 2}},
            },
            "both shredded and present",
        ),
        # residual is not an object next to a shredded object
        (
            object_type(a=group_type(pa.int64())),
            {"metadata": MD_EMPTY, "value": b"\x0c\x01", "typed_value": {"a": {"value": None, "typed_value": 2}}},
            "not a Variant object",
        ),
        # both value and typed_value for a primitive
        (pa.int64(), {"metadata": MD_EMPTY, "value": b"\x0c\x01", "typed_value": 2}, "both value and typed_value"),
        # both value and typed_value for an array
        (
            list_type(group_type(pa.int64())),
            {"metadata": MD_EMPTY, "value": b"\x0c\x01", "typed_value": []},
            "both value and typed_value",
        ),
        # null metadata
        (pa.int64(), {"metadata": None, "value": None, "typed_value": 2}, "metadata is null"),
        # bad metadata version
        (pa.int64(), {"metadata": b"\x02\x00\x00", "value": None, "typed_value": 2}, "version"),
        # a type Variant cannot hold
        (pa.uint8(), {"metadata": MD_EMPTY, "value": None, "typed_value": 2}, "uint8"),
        (pa.time64("ns"), {"metadata": MD_EMPTY, "value": None, "typed_value": 2}, "TIME"),
    ],
)
def test_shredding_errors(typed_type, row, message):
    metadata_nullable = pa.struct(
        [pa.field("metadata", pa.binary()), pa.field("value", pa.binary()), pa.field("typed_value", typed_type)]
    )
    col = pa.array([row], metadata_nullable)
    with pytest.raises(MalformedVariantError, match=message):
        reconstruct_variant(col)


def test_schema_errors():
    with pytest.raises(MalformedVariantError, match="unexpected field 'extra'"):
        reconstruct_variant(pa.array([{"metadata": MD_EMPTY, "value": b"\x00", "extra": 1}]))
    with pytest.raises(MalformedVariantError, match="no metadata"):
        reconstruct_variant(pa.array([{"value": b"\x00"}], pa.struct([("value", pa.binary())])))
    with pytest.raises(MalformedVariantError, match="must be a struct"):
        reconstruct_variant(pa.array([b"\x00"]))
    bad_group = object_type(a=pa.struct([("value", pa.binary()), ("other", pa.int32())]))
    with pytest.raises(MalformedVariantError, match="unexpected field 'other'"):
        reconstruct_variant(
            pa.array([{"metadata": MD_EMPTY, "value": None, "typed_value": {"a": None}}], top_type(bad_group))
        )
    with pytest.raises(TypeError):
        reconstruct_variant([1, 2])


@pytest.mark.parametrize(
    "value,metadata,message",
    [
        (b"\x00", b"", "empty metadata"),
        (b"\x00", b"\x02\x00\x00", "version 2"),
        (b"\x00", b"\x01\x05\x00", "does not fit"),
        (b"", MD_EMPTY, "past the end"),
        (b"\x0c", MD_EMPTY, "int8"),
        (b"\x09a", MD_EMPTY, "short string"),
        (bytes([21 << 2]), MD_EMPTY, "unknown primitive type id 21"),
        (b"\x02\x01\x00\x00\x01\x00", MD_EMPTY, "field id 0 is out of range"),
        (b"\x03\x05\x00", MD_EMPTY, "array header"),
        (b"\x09\xff", MD_EMPTY, "short string"),
        (b"\x05\xff", MD_EMPTY, "UTF-8"),
        (bytes([8 << 2, 10]) + (1).to_bytes(4, "little"), MD_EMPTY, "decimal out of range"),
        (bytes([15 << 2]) + (3).to_bytes(4, "little") + b"ab", MD_EMPTY, "binary at byte 0 runs past the end"),
        (bytes([16 << 2]) + (3).to_bytes(4, "little") + b"ab", MD_EMPTY, "string at byte 0 runs past the end"),
        (bytes([15 << 2, 1]), MD_EMPTY, "binary length"),
        (bytes([20 << 2]) + bytes(15), MD_EMPTY, "uuid at byte 0 runs past the end"),
        (bytes([17 << 2]) + (86_400_000_000).to_bytes(8, "little"), MD_EMPTY, "time of day 86400000000"),
        (bytes([16 << 2]) + (2).to_bytes(4, "little") + b"\xff\xfe", MD_EMPTY, "UTF-8"),
    ],
)
def test_decode_errors(value, metadata, message):
    with pytest.raises(MalformedVariantError, match=message):
        decode_to_json(value, metadata)


# --------------------------------------------------------------------------------------
# decode_to_json formatting
# --------------------------------------------------------------------------------------


def test_decode_formatting_edge_cases():
    def prim(type_id, payload):
        return decode_to_json(bytes([type_id << 2]) + payload, MD_EMPTY)

    assert prim(11, struct.pack("<i", 3_000_000)) == '"+10183-09-21"'
    assert prim(11, struct.pack("<i", -800_000)) == '"-0221-09-04"'
    assert prim(12, struct.pack("<q", -62_000_000_000_000_001)) == '"0005-04-19 09:46:39.999999+00:00"'
    assert prim(12, struct.pack("<q", 0)) == '"1970-01-01 00:00:00+00:00"'
    assert prim(7, struct.pack("<d", 0.001)) == "0.001"
    assert prim(7, struct.pack("<d", 0.0001)) == "1.0E-4"
    assert prim(7, struct.pack("<d", 12345678.0)) == "1.2345678E7"
    assert prim(7, struct.pack("<d", 1e300)) == "1.0E300"
    assert prim(14, struct.pack("<f", 3.4028235e38)) == "3.4028235E38"
    assert prim(14, struct.pack("<f", float("inf"))) == '"Infinity"'
    assert prim(9, bytes([0]) + (100).to_bytes(8, "little")) == "100"
    assert prim(9, bytes([2]) + (0).to_bytes(8, "little")) == "0"
    # time zones other than UTC
    ts = struct.pack("<q", 1_614_834_367_000_000)
    assert decode_to_json(bytes([12 << 2]) + ts, MD_EMPTY, zone_id="Asia/Kolkata") == '"2021-03-04 10:36:07+05:30"'
    assert decode_to_json(bytes([12 << 2]) + ts, MD_EMPTY, zone_id="America/New_York") == '"2021-03-04 00:06:07-05:00"'
    # objects and arrays with wider ids/offsets and non-monotonic offsets
    v, m, _ = variant_of({"b": [1, {"c": None}], "a": "x" * 70})
    assert decode_to_json(v, m) == '{"a":"%s","b":[1,{"c":null}]}' % ("x" * 70)
    assert decode_to_json(bytearray(v), memoryview(m)) == decode_to_json(v, m)


# --------------------------------------------------------------------------------------
# Property test: random values, shredded by a test-side shredder, reconstructed.
# --------------------------------------------------------------------------------------

# Shredding schema: ("int64" | "string" | "double" | ("object", {name: schema}) |
# ("array", schema) | None (value only)).
SCHEMA = (
    "object",
    {
        "a": "int64",
        "b": "string",
        "c": ("object", {"d": "double", "e": ("array", "string")}),
        "arr": ("array", ("object", {"x": "int64", "y": None})),
    },
)


def arrow_of(schema) -> pa.DataType | None:
    if schema is None:
        return None
    if schema == "int64":
        return pa.int64()
    if schema == "string":
        return pa.string()
    if schema == "double":
        return pa.float64()
    kind, sub = schema
    if kind == "object":
        return object_type(**{k: group_type(arrow_of(s)) for k, s in sub.items()})
    return list_type(group_type(arrow_of(sub)))


def shred(v, schema, ids):
    """(value bytes or None, typed value or None) per the shredding spec."""
    if schema == "int64" and type(v) is int and -(2**63) <= v < 2**63:
        return None, v
    if schema == "string" and isinstance(v, str):
        return None, v
    if schema == "double" and type(v) is float:
        return None, v
    if isinstance(schema, tuple):
        kind, sub = schema
        if kind == "object" and isinstance(v, dict):
            typed = {}
            for name, s in sub.items():
                if name in v:
                    fv, ft = shred(v[name], s, ids)
                    typed[name] = {"value": fv, "typed_value": ft}
                else:
                    typed[name] = {"value": None, "typed_value": None}
            rest = {k: x for k, x in v.items() if k not in sub}
            return (enc(rest, ids) if rest else None), typed
        if kind == "array" and isinstance(v, list):
            out = []
            for e in v:
                ev, et = shred(e, sub, ids)
                out.append({"value": ev, "typed_value": et})
            return None, out
    return enc(v, ids), None


json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=70),
)
keys = st.sampled_from(["a", "b", "c", "d", "e", "x", "y", "arr", "z", "é"])
json_values = st.recursive(
    json_scalars,
    lambda children: st.one_of(st.lists(children, max_size=4), st.dictionaries(keys, children, max_size=5)),
    max_leaves=25,
)
shreddable = st.one_of(
    json_values,
    st.fixed_dictionaries(
        {},
        optional={
            "a": json_values,
            "b": st.one_of(st.text(max_size=80), json_values),
            "c": st.one_of(
                st.fixed_dictionaries(
                    {},
                    optional={
                        "d": st.floats(allow_nan=False, allow_infinity=False),
                        "e": st.lists(st.text(max_size=5)),
                    },
                ),
                json_values,
            ),
            "arr": st.lists(
                st.one_of(st.fixed_dictionaries({}, optional={"x": st.integers(-5, 5), "y": json_values}), json_values),
                max_size=4,
            ),
            "z": json_values,
        },
    ),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(st.just("SQLNULL"), shreddable), min_size=1, max_size=6))
def test_property_shred_reconstruct_roundtrip(values):
    rows = []
    for v in values:
        if v == "SQLNULL":
            rows.append(None)
            continue
        keys_ = collect_keys(v, list(SCHEMA[1]) + ["d", "e", "x", "y"])
        ids = {k: i for i, k in enumerate(keys_)}
        value, typed = shred(v, SCHEMA, ids)
        rows.append({"metadata": build_metadata(keys_), "value": value, "typed_value": typed})
    col = pa.array(rows, top_type(arrow_of(SCHEMA)))
    out = reconstruct_variant(col)
    assert out.type.equals(VARIANT_ARROW_TYPE, check_metadata=True)
    for v, text in zip(values, to_json_rows(out)):
        if v == "SQLNULL":
            assert text is None
        else:
            assert json.loads(text, object_pairs_hook=sorted_pairs_hook) == v


# --------------------------------------------------------------------------------------
# Spark: shredded files written by Spark, and our bytes read back by Spark's JVM.
# --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def spark():
    import pyspark  # noqa: F401  (a test dependency: fails, never skips, when missing)

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    existing = SparkSession.getActiveSession()
    session = (
        existing
        or SparkSession.builder.master("local[1]")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.shuffle.partitions", "1")
        .getOrCreate()
    )
    if existing is None:
        session.sparkContext.setLogLevel("ERROR")
    yield session
    if existing is None:
        session.stop()


def spark_zone(spark) -> str:
    return spark.conf.get("spark.sql.session.timeZone")


def write_shredded(spark, path: Path, schema: str, select_sql: str) -> None:
    keys = ["spark.sql.variant.writeShredding.enabled", "spark.sql.variant.forceShreddingSchemaForTest"]
    previous = {k: spark.conf.get(k, None) for k in keys}
    try:
        spark.conf.set(keys[0], "true")
        spark.conf.set(keys[1], schema)
        spark.sql(select_sql).coalesce(1).write.parquet(str(path))
    finally:
        for k, v in previous.items():
            if v is None:
                spark.conf.unset(k)
            else:
                spark.conf.set(k, v)


OBJECT_SCHEMA = (
    "bo boolean, i1 tinyint, i2 smallint, i4 int, i8 bigint, f float, d double, "
    "d4 decimal(9,2), d8 decimal(18,4), d16 decimal(38,10), dt date, ts timestamp, "
    "tsn timestamp_ntz, s string, b binary, "
    "c struct<d double, e struct<f string>>, arr array<struct<x bigint, y array<string>>>"
)

JSON_ROWS = [
    '{"i4": 1, "s": "x", "c": {"d": 1.5e0, "e": {"f": "deep", "g": 1}}, '
    '"arr": [{"x": 1, "y": ["p", "q"]}, {"x": "no", "y": "no"}, 5, null, {"z": true}], "extra": {"k": [1, 2]}}',
    '{"i4": "str", "s": null, "c": "notobj", "arr": {}}',
    '{"i4": 2147483648, "i1": 300, "d4": 1.234, "d8": 7, "f": 1.5e0, "bo": 1}',
    "[1, 2, 3]",
    '"scalar"',
    "null",
    None,
    "{}",
    '{"c": {}, "arr": []}',
    '{"arr": [[1], [{"x": 1}]], "s": "%s"}' % ("long string " * 8),
    '{"i4": 7, "c": {"e": null}}',
    '{"c": {"e": {"f": 5}}, "dt": "2020-01-01", "unicode é": "ü"}',
]


def _json_sql(rows, start_id) -> str:
    parts = []
    for i, r in enumerate(rows):
        literal = "null" if r is None else "'" + r.replace("\\", "\\\\").replace("'", "\\'") + "'"
        parts.append(f"({start_id + i}L, {literal})")
    return "select id, parse_json(j) as v from values " + ", ".join(parts) + " as t(id, j)"


TYPED_ROW_SQL = """
select 100L as id, to_variant_object(named_struct(
  'bo', true, 'i1', cast(1 as tinyint), 'i2', cast(300 as smallint), 'i4', 70000,
  'i8', 5000000000L, 'f', cast(0.1 as float), 'd', 1e20d,
  'd4', cast(1.25 as decimal(9,2)), 'd8', cast(3.5 as decimal(18,4)),
  'd16', cast(12345678901234567890.5 as decimal(38,10)), 'dt', date'2021-03-04',
  'ts', timestamp'2021-03-04 05:06:07.123456', 'tsn', timestamp_ntz'2021-03-04 05:06:07',
  's', 'hello', 'b', X'DEADBEEF',
  'c', named_struct('d', 2.5d, 'e', named_struct('f', 'x')),
  'arr', array(named_struct('x', 1L, 'y', array('a', 'b'))))) as v
union all
select 101L as id, to_variant_object(named_struct(
  'i1', 1000, 'f', 2.5d, 'd', cast(1.5 as float), 'dt', timestamp'2021-01-01 00:00:00',
  'ts', date'2021-01-01', 's', X'00', 'b', 'str', 'd16', cast(-0.5 as decimal(2,1)))) as v
"""


def _read_ours(path: Path, zone: str) -> dict:
    files = glob.glob(str(path / "*.parquet"))
    assert len(files) == 1
    table = pq.read_table(files[0])
    vtype = table.schema.field("v").type
    assert "typed_value" in [f.name for f in vtype], "Spark did not shred the column"
    out = reconstruct_variant(table.column("v"))
    assert out.type.equals(VARIANT_ARROW_TYPE, check_metadata=True)
    values = out.combine_chunks().to_pylist() if isinstance(out, pa.ChunkedArray) else out.to_pylist()
    return {
        i: (None if r is None else (decode_to_json(r["value"], r["metadata"], zone_id=zone), r["value"], r["metadata"]))
        for i, r in zip(table.column("id").to_pylist(), values)
    }


def test_spark_shredded_files_and_spark_reads_our_bytes(spark, tmp_path_factory):
    from pyspark.sql.types import LongType, StructField, StructType, VariantType, VariantVal

    zone = spark_zone(spark)
    base = tmp_path_factory.mktemp("variant")
    obj_path, arr_path, scalar_path = base / "obj", base / "arr", base / "scalar"
    write_shredded(spark, obj_path, OBJECT_SCHEMA, _json_sql(JSON_ROWS, 0) + " union all " + TYPED_ROW_SQL)
    write_shredded(
        spark,
        arr_path,
        "array<struct<a int, b array<string>>>",
        _json_sql(
            ['[{"a":1,"b":["x"]},{"b":2},3,null]', '{"not":"array"}', "[]", "null", None, '[{"a":"x","c":{}}]'], 200
        ),
    )
    write_shredded(
        spark, scalar_path, "bigint", _json_sql(["1", '"x"', "2.5e0", "null", None, '{"a":1}', "12345678901"], 300)
    )

    ours: dict = {}
    for p in (obj_path, arr_path, scalar_path):
        ours.update(_read_ours(p, zone))
    theirs = {}
    for p in (obj_path, arr_path, scalar_path):
        for r in spark.read.parquet(str(p)).selectExpr("id", "to_json(v) as j").collect():
            theirs[r.id] = r.j
    assert set(ours) == set(theirs) and len(ours) == len(JSON_ROWS) + 2 + 6 + 7
    assert {i: (o[0] if o else None) for i, o in ours.items()} == theirs

    # Send our reconstructed bytes back to Spark: its JVM decoder must accept them and
    # print the same JSON.
    rows = [(i, None if o is None else VariantVal(o[1], o[2])) for i, o in sorted(ours.items())]
    # Hand-built shredded data (types Spark 4.3 knows; it rejects time / nanosecond
    # timestamps with UNKNOWN_PRIMITIVE_TYPE_IN_VARIANT).
    extra = {}
    next_id = 1000
    for arrow_type, py_value, _expected_json, type_id in PRIMITIVES:
        if type_id in (17, 18, 19):
            continue
        out = reconstruct_variant(primitive_column(arrow_type, py_value)).to_pylist()[0]
        rows.append((next_id, VariantVal(out["value"], out["metadata"])))
        # == expected_json in UTC (checked by test_shredded_primitive)
        extra[next_id] = decode_to_json(out["value"], out["metadata"], zone_id=zone)
        next_id += 1
    event_rows = pa.array(
        [
            {
                "metadata": build_metadata(["event_type", "event_ts", "x"]),
                "value": enc({"x": [1.5, None]}, {"x": 2}),
                "typed_value": {
                    "event_type": {"value": None, "typed_value": "e"},
                    "event_ts": {"value": None, "typed_value": 0},
                },
            }
        ],
        top_type(EVENT_TYPE),
    )
    out = reconstruct_variant(event_rows).to_pylist()[0]
    rows.append((next_id, VariantVal(out["value"], out["metadata"])))
    extra[next_id] = decode_to_json(out["value"], out["metadata"], zone_id=zone)

    schema = StructType([StructField("id", LongType()), StructField("v", VariantType())])
    back = {r.id: r.j for r in spark.createDataFrame(rows, schema).selectExpr("id", "to_json(v) as j").collect()}
    for i, o in ours.items():
        assert back[i] == (None if o is None else o[0])
    for i, expected_json in extra.items():
        assert back[i] == expected_json, (i, back[i], expected_json)
