"""The Spark-free half of the native writer: partition directories decoded exactly,
statistics from footers alone, staged files moved into the table (no JVM)."""

from __future__ import annotations

import json
import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from delta_pyds.protocol.schema import PrimitiveType, StructField, StructType
from delta_pyds.protocol.stats import FileStats, stats_columns, stats_from_footer
from delta_pyds.storage.store import Storage
from delta_pyds.write.native_files import (
    STAGING_PREFIX,
    collect_staged,
    discard,
    partition_values_of,
    physical_schema,
    staging_name,
)
from delta_pyds.write.parquet_writer import partition_dir

HOSTILE = ["a/b", "x=y", "p%q", "%41", "é€😀", " sp ", "h#a", "q'\"", "{[]}^*?\\", "\x01", "\x7f", None, "ok"]


@pytest.mark.parametrize("value", HOSTILE)
def test_partition_directories_decode_to_the_value(value):
    rel = partition_dir(["p", "a=b"], [value, "1"])
    assert partition_values_of(rel, ["p", "a=b"]) == {"p": value, "a=b": "1"}


def test_partition_directories_must_name_the_columns():
    with pytest.raises(ValueError, match="does not match"):
        partition_values_of("q=1", ["p"])
    with pytest.raises(ValueError, match="does not match"):
        partition_values_of("", ["p"])
    assert partition_values_of("", []) == {}


def _schema(*fields):
    return StructType(tuple(StructField(n, t) for n, t in fields))


def test_footer_stats_equal_the_writers_stats(tmp_path):
    """Footer-only stats agree with the stats the Arrow writer collects from the data;
    pyarrow leaves NaN out of min/max, so a float column gets no max from its footer."""
    schema = StructType(
        (
            StructField("x", PrimitiveType("double")),
            StructField("s", PrimitiveType("string")),
            StructField("st", StructType((StructField("a", PrimitiveType("long")),))),
        )
    )
    cols = stats_columns(schema, {}, "none")
    table = pa.table(
        {
            "x": [1.0, 5.0, 2.0, None],
            "s": ["b" * 40, None, "a", "c"],
            "st": [{"a": 1}, None, {"a": None}, {"a": 7}],
        }
    )
    path = str(tmp_path / "f.parquet")
    pq.write_table(table, path, row_group_size=2)
    meta = pq.ParquetFile(path).metadata
    mine = json.loads(stats_from_footer(meta, cols))
    collected = FileStats(cols)
    for b in table.to_batches():
        collected.update(b)
    theirs = json.loads(collected.to_json(meta))
    assert mine["maxValues"] == {k: v for k, v in theirs["maxValues"].items() if k != "x"}
    assert mine["minValues"] == theirs["minValues"] and mine["nullCount"] == theirs["nullCount"]
    assert mine["minValues"]["x"] == 1.0
    assert "x" not in mine["maxValues"]
    assert mine["nullCount"] == {"x": 1, "s": 1, "st": {"a": 2}}
    assert mine["maxValues"]["s"] == "c"


def test_physical_schema_carries_field_ids_for_spark():
    meta = {"delta.columnMapping.id": 3, "delta.columnMapping.physicalName": "col-3"}
    inner = StructField(
        "b", PrimitiveType("long"), True, {"delta.columnMapping.id": 4, "delta.columnMapping.physicalName": "col-4"}
    )
    schema = StructType((StructField("a", StructType((inner,)), False, meta),))
    out = physical_schema(schema.fields, "id")
    assert json.loads(out.json()) == {
        "type": "struct",
        "fields": [
            {
                "name": "col-3",
                "type": {
                    "type": "struct",
                    "fields": [
                        {"name": "col-4", "type": "long", "nullable": True, "metadata": {"parquet.field.id": 4}}
                    ],
                },
                "nullable": True,
                "metadata": {"parquet.field.id": 3},
            }
        ],
    }


def test_staged_files_move_into_place_and_empty_files_are_dropped(tmp_path):
    root = str(tmp_path / "t")
    storage = Storage(root)
    staging = staging_name()
    assert staging.startswith(STAGING_PREFIX)
    d = os.path.join(root, staging, "p=a%2Fb")
    os.makedirs(d)
    pq.write_table(pa.table({"x": [3, 1]}), os.path.join(d, "part-0.parquet"))
    pq.write_table(pa.table({"x": pa.array([], pa.int64())}), os.path.join(d, "part-1.parquet"))
    open(os.path.join(d, ".part-0.parquet.crc"), "w").close()
    os.makedirs(os.path.join(root, staging, "_temporary", "0"))
    pq.write_table(pa.table({"x": [9]}), os.path.join(root, staging, "_temporary", "0", "part-9.parquet"))
    cols = stats_columns(_schema(("x", PrimitiveType("long"))), {}, "none")
    result = collect_staged(storage, staging, physical_partition_names=["p"], stats_columns=cols)
    assert [a["path"] for a in result.adds] == ["p=a%252Fb/part-0.parquet"]
    assert result.adds[0]["partitionValues"] == {"p": "a/b"} and result.num_rows == 2
    assert json.loads(result.adds[0]["stats"])["minValues"] == {"x": 1}
    assert os.path.exists(os.path.join(root, "p=a%2Fb", "part-0.parquet"))
    discard(storage, staging, result.moved)
    assert os.listdir(root) == ["p=a%2Fb"] and os.listdir(os.path.join(root, "p=a%2Fb")) == []


def test_partition_columns_starting_with_an_underscore_are_collected(tmp_path):
    root = str(tmp_path / "t")
    storage = Storage(root)
    staging = staging_name()
    d = os.path.join(root, staging, "_p=1")
    os.makedirs(d)
    pq.write_table(pa.table({"x": [1]}), os.path.join(d, "part-0.parquet"))
    result = collect_staged(storage, staging, physical_partition_names=["_p"], stats_columns=[])
    assert [a["partitionValues"] for a in result.adds] == [{"_p": "1"}]
