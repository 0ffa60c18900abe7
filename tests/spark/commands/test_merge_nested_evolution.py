"""MERGE withSchemaEvolution adds nested struct fields as delta-spark does (SchemaMergingUtils
.mergeSchemas through ResolveDeltaMergeInto): a source struct's new field is appended to the
table's struct, nullable, in the same commit, also inside arrays of structs and map values;
rows already in the table read null there. Checked through both read paths, deltalake and SQL."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest

import delta_pyds
from delta_pyds import DeltaTable
from delta_pyds.table.snapshot import Snapshot
from tests.helpers import deltalake_table, spark_rows, table_version

TARGET = "id long, s struct<a: int>, arr array<struct<a: int>>, m map<string, struct<a: int>>"
SOURCE = (
    "id long, s struct<a: int, b: string>, arr array<struct<a: int, b: string>>,"
    " m map<string, struct<a: int, b: string>>"
)


@pytest.fixture
def tables(spark, tmp_path):
    target, source = str(tmp_path / "t"), str(tmp_path / "s")
    rows = [(i, (i,), [(i,)], {"k": (i,)}) for i in range(3)]
    delta_pyds.write_delta(spark.createDataFrame(rows, TARGET), target)
    src = [(i, (10 * i, f"b{i}"), [(10 * i, f"b{i}")], {"k": (10 * i, f"b{i}")}) for i in (1, 5)]
    delta_pyds.write_delta(spark.createDataFrame(src, SOURCE), source)
    return target, source


def _struct_fields(schema: dict, *path: str) -> list[tuple[str, bool]]:
    t: dict = schema
    for p in path:
        if p == "element":
            t = t["elementType"]
        elif p == "value":
            t = t["valueType"]
        else:
            t = next(f for f in t["fields"] if f["name"] == p)["type"]
    return [(f["name"], f["nullable"]) for f in t["fields"]]


def _check(spark, target: str, before: int) -> None:
    assert table_version(target) == before + 1  # one commit: schema and rows together
    schema = json.loads(Snapshot.load(target).metadata.schema_string)
    for path in (("s",), ("arr", "element"), ("m", "value")):
        assert _struct_fields(schema, *path) == [("a", True), ("b", True)], path
    want = [
        (0, (0, None), [(0, None)], {"k": (0, None)}),
        (1, (10, "b1"), [(10, "b1")], {"k": (10, "b1")}),
        (2, (2, None), [(2, None)], {"k": (2, None)}),
        (5, (50, "b5"), [(50, "b5")], {"k": (50, "b5")}),
    ]
    native = spark_rows(delta_pyds.read_delta(spark, target))
    source_path = spark_rows(spark.read.format("pydelta").load(target))
    evolved = TARGET.replace("a: int>", "a: int, b: string>")
    assert native == source_path == spark_rows(spark.createDataFrame(want, evolved))
    # deltalake 1.6.6 cannot read the map column of the older files (DataFusion: "Cannot cast
    # struct field 'm' from ... Struct(a) to ... Struct(a, b)"): compared without it
    from deltalake import DeltaTable as DL
    from deltalake import QueryBuilder

    dl = pa.table(QueryBuilder().register("t", DL(target)).execute("SELECT id, s, arr FROM t").read_all()).to_pylist()
    assert sorted((r["id"], r["s"]["b"], r["arr"][0]["b"]) for r in dl) == [
        (0, None, None),
        (1, "b1", "b1"),
        (2, None, None),
        (5, "b5", "b5"),
    ]


def test_update_all_insert_all_add_nested_fields(spark, tables):
    target, source = tables
    before = table_version(target)
    got = (
        DeltaTable.forPath(spark, target)
        .alias("t")
        .merge(delta_pyds.read_delta(spark, source).alias("s"), "t.id = s.id")
        .withSchemaEvolution()
        .whenMatchedUpdateAll()
        .whenNotMatchedInsertAll()
        .execute()
        .collect()
    )
    assert (got[0].num_updated_rows, got[0].num_inserted_rows) == (1, 1)
    _check(spark, target, before)


def test_sql_merge_with_schema_evolution_adds_nested_fields(spark, tables):
    target, source = tables
    before = table_version(target)
    delta_pyds.sql(
        spark,
        f"MERGE WITH SCHEMA EVOLUTION INTO delta.`{target}` t USING delta.`{source}` s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *",
    )
    _check(spark, target, before)


def test_a_source_struct_missing_a_field_gets_null_there(spark, tmp_path):
    target, source = str(tmp_path / "t"), str(tmp_path / "s")
    delta_pyds.write_delta(spark.createDataFrame([(1, (1, "x"))], "id long, s struct<a: int, c: string>"), target)
    delta_pyds.write_delta(spark.createDataFrame([(1, ("y", 2.5))], "id long, s struct<c: string, d: double>"), source)
    (
        DeltaTable.forPath(spark, target)
        .alias("t")
        .merge(delta_pyds.read_delta(spark, source).alias("s"), "t.id = s.id")
        .withSchemaEvolution()
        .whenMatchedUpdateAll()
        .execute()
    )
    schema = json.loads(Snapshot.load(target).metadata.schema_string)
    assert _struct_fields(schema, "s") == [("a", True), ("c", True), ("d", True)]
    want = spark_rows(spark.createDataFrame([(1, (None, "y", 2.5))], "id long, s struct<a: int, c: string, d: double>"))
    assert spark_rows(delta_pyds.read_delta(spark, target)) == want
    assert deltalake_table(target).to_pylist() == [{"id": 1, "s": {"a": None, "c": "y", "d": 2.5}}]
