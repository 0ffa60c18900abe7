"""Column positions: ALTER TABLE ADD COLUMNS ... FIRST | AFTER col and ALTER COLUMN ... FIRST |
AFTER col (nested fields too) through delta_pyds.sql, compared with addColumns / alterColumn
with a position on a twin table; both read paths and deltalake return the new order."""

from __future__ import annotations

import json

import pytest

import delta_pyds
from delta_pyds import ColumnNotFoundError, DeltaTable, SchemaChangeError
from delta_pyds.table.snapshot import Snapshot
from tests.helpers import deltalake_table, spark_rows, table_version

SCHEMA = "id long, s struct<a: int, c: int>, name string"


@pytest.fixture
def twins(spark, tmp_path):
    paths = [str(tmp_path / "sql"), str(tmp_path / "api")]
    for p in paths:
        delta_pyds.write_delta(spark.createDataFrame([(1, (10, 30), "x"), (2, (20, 40), "y")], SCHEMA), p)
    return paths


def _order(path):
    schema = json.loads(Snapshot.load(path).metadata.schema_string)
    s = next(f for f in schema["fields"] if f["name"] == "s")
    return [f["name"] for f in schema["fields"]], [f["name"] for f in s["type"]["fields"]]


def test_positions_through_sql_and_the_api(spark, twins):
    s, a = twins
    delta_pyds.sql(spark, f"ALTER TABLE delta.`{s}` ADD COLUMNS (z STRING FIRST, s.b INT AFTER a, w INT AFTER id)")
    DeltaTable.forPath(spark, a).addColumns(
        [("z", "string", None, "FIRST"), ("s.b", "int", None, "AFTER a"), ("w", "int", None, "after id")]
    )
    assert _order(s) == _order(a) == (["z", "id", "w", "s", "name"], ["a", "b", "c"])
    delta_pyds.sql(spark, f"ALTER TABLE delta.`{s}` ALTER COLUMN name FIRST")
    delta_pyds.sql(spark, f"ALTER TABLE delta.`{s}` CHANGE COLUMN s.c AFTER a")
    DeltaTable.forPath(spark, a).alterColumn("name", position="FIRST")
    DeltaTable.forPath(spark, a).alterColumn("s.c", position="AFTER a")
    assert _order(s) == _order(a) == (["name", "z", "id", "w", "s"], ["a", "c", "b"])
    assert Snapshot.load(s).metadata.schema_string == Snapshot.load(a).metadata.schema_string
    native = delta_pyds.read_delta(spark, s)
    source = spark.read.format("pydelta").load(s)
    assert native.columns == source.columns == ["name", "z", "id", "w", "s"]
    assert native.schema["s"].dataType.names == ["a", "c", "b"]
    want = [("x", None, 1, None, (10, 30, None)), ("y", None, 2, None, (20, 40, None))]
    assert spark_rows(native) == spark_rows(source) == spark_rows(spark.createDataFrame(want, native.schema))
    dl = deltalake_table(s)
    assert dl.column_names == ["name", "z", "id", "w", "s"]
    assert sorted((r["id"], list(r["s"])) for r in dl.to_pylist()) == [(1, ["a", "c", "b"]), (2, ["a", "c", "b"])]
    history = DeltaTable.forPath(spark, s).history(1).collect()[0]
    assert history.operation == "CHANGE COLUMN" and history.operationParameters["position"] == "AFTER a"


def test_a_bad_position_is_refused_and_changes_nothing(spark, twins):
    s, a = twins
    before = table_version(s)
    with pytest.raises(ColumnNotFoundError, match="DELTA_COLUMN_NOT_FOUND_IN_SCHEMA.*AFTER nope"):
        delta_pyds.sql(spark, f"ALTER TABLE delta.`{s}` ADD COLUMNS (z STRING AFTER nope)")
    with pytest.raises(ColumnNotFoundError, match="AFTER nope"):
        DeltaTable.forPath(spark, a).alterColumn("s.c", position="AFTER nope")
    with pytest.raises(SchemaChangeError, match="'position' must be None, 'FIRST' or 'AFTER <column>'"):
        DeltaTable.forPath(spark, a).alterColumn("name", position="LAST")
    assert table_version(s) == before
