"""delta_pyds.sql ALTER TABLE column statements (ADD COLUMNS, RENAME COLUMN, DROP COLUMNS,
ALTER COLUMN COMMENT | SET/DROP NOT NULL | TYPE), each compared with the same change through
the DeltaTable API on a twin table."""

from __future__ import annotations

import pytest

import delta_pyds
from delta_pyds import DeltaTable, SqlParseError
from delta_pyds.errors import ConstraintViolationError, SchemaChangeError
from delta_pyds.table.snapshot import Snapshot
from tests.helpers import pydelta_read, spark_rows


@pytest.fixture
def twins(spark, tmp_path):
    paths = []
    for name in ("sql", "api"):
        path = str(tmp_path / name)
        df = spark.createDataFrame(
            [(i, f"n{i}" if i != 3 else None, (i, f"x{i}"), i % 2) for i in range(6)],
            "id int, name string, s struct<a:int,b:string>, part int",
        )
        delta_pyds.write_delta(df, path, partitionBy="part", **{"delta.columnMapping.mode": "name"})
        paths.append(path)
    return paths


def _same(spark, s, a):
    """Both tables have the same schema (names, types, nullability, comments) and rows, read
    through both read paths."""
    ss, sa = Snapshot.load(s).schema, Snapshot.load(a).schema

    def strip(schema):
        return [(f.name, f.type.simple_string(), f.nullable, f.metadata.get("comment")) for f in schema.fields]

    assert strip(ss) == strip(sa)
    for path in (s, a):
        assert spark_rows(delta_pyds.read_delta(spark, path)) == spark_rows(pydelta_read(spark, path))
    assert spark_rows(delta_pyds.read_delta(spark, s)) == spark_rows(delta_pyds.read_delta(spark, a))
    return ss


def test_add_rename_drop_columns(spark, twins):
    s, a = twins
    t = DeltaTable.forPath(spark, a)
    delta_pyds.sql(
        spark,
        f"ALTER TABLE delta.`{s}` ADD COLUMNS (c BIGINT COMMENT 'cc', `s`.z DECIMAL(10,2), m STRUCT<p:INT, q:STRING>)",
    )
    from pyspark.sql.types import DataType

    t.addColumns([("c", "bigint", "cc"), ("s.z", "decimal(10,2)"), ("m", DataType.fromDDL("struct<p:int,q:string>"))])
    schema = _same(spark, s, a)
    assert schema.names == ["id", "name", "s", "part", "c", "m"]
    delta_pyds.sql(spark, f"ALTER TABLE delta.`{s}` ADD COLUMN d DATE")
    t.addColumns({"d": "date"})
    delta_pyds.sql(spark, f"ALTER TABLE delta.`{s}` RENAME COLUMN s.a TO aa")
    t.renameColumn("s.a", "aa")
    delta_pyds.sql(spark, f"ALTER TABLE delta.`{s}` RENAME COLUMN name TO label")
    t.renameColumn("name", "label")
    delta_pyds.sql(spark, f"ALTER TABLE delta.`{s}` DROP COLUMNS (c, s.b)")
    t.dropColumns(["c", "s.b"])
    delta_pyds.sql(spark, f"ALTER TABLE delta.`{s}` DROP COLUMN IF EXISTS nope")
    schema = _same(spark, s, a)
    assert schema.names == ["id", "label", "s", "part", "m", "d"]
    rows = spark_rows(delta_pyds.read_delta(spark, s).select("id", "label", "s.aa"))
    assert rows[:2] == [(0, "n0", 0), (1, "n1", 1)]
    assert [h["operation"] for h in DeltaTable.forPath(spark, s).history(3).collect()][::-1] == [
        "RENAME COLUMN",
        "RENAME COLUMN",
        "DROP COLUMNS",
    ]
    with pytest.raises(SchemaChangeError, match="partition column"):
        delta_pyds.sql(spark, f"ALTER TABLE delta.`{s}` DROP COLUMN part")
    with pytest.raises(SqlParseError, match="nullable columns only"):
        delta_pyds.sql(spark, f"ALTER TABLE delta.`{s}` ADD COLUMNS (e INT NOT NULL)")
    with pytest.raises(SqlParseError, match="position"):
        delta_pyds.sql(spark, f"ALTER TABLE delta.`{s}` RENAME COLUMN id")


def test_alter_column(spark, twins):
    s, a = twins
    t = DeltaTable.forPath(spark, a)
    delta_pyds.sql(spark, f"ALTER TABLE delta.`{s}` ALTER COLUMN name COMMENT 'the name'")
    t.alterColumn("name", comment="the name")
    version = Snapshot.load(s).version
    with pytest.raises(ConstraintViolationError, match="1 existing rows"):
        delta_pyds.sql(spark, f"ALTER TABLE delta.`{s}` ALTER COLUMN name SET NOT NULL")
    assert Snapshot.load(s).version == version
    delta_pyds.sql(spark, f"ALTER TABLE delta.`{s}` CHANGE id SET NOT NULL")
    t.alterColumn("id", nullable=False)
    _same(spark, s, a)
    assert Snapshot.load(s).schema.field("id").nullable is False
    delta_pyds.sql(spark, f"ALTER TABLE delta.`{s}` ALTER id DROP NOT NULL")
    t.alterColumn("id", nullable=True)
    with pytest.raises(SchemaChangeError, match="delta.enableTypeWidening"):
        delta_pyds.sql(spark, f"ALTER TABLE delta.`{s}` ALTER COLUMN id TYPE BIGINT")
    for path in twins:
        DeltaTable.forPath(spark, path).setProperties({"delta.enableTypeWidening": "true"})
    delta_pyds.sql(spark, f"ALTER TABLE delta.`{s}` ALTER COLUMN id TYPE BIGINT")
    delta_pyds.sql(spark, f"ALTER TABLE delta.`{s}` ALTER COLUMN s.a TYPE DOUBLE")
    t.alterColumn("id", dataType="bigint")
    t.alterColumn("s.a", dataType="double")
    schema = _same(spark, s, a)
    assert schema.field("id").type.simple_string() == "long"
    assert schema.field("name").metadata["comment"] == "the name"
    with pytest.raises(SchemaChangeError, match="not a type widening"):
        delta_pyds.sql(spark, f"ALTER TABLE delta.`{s}` ALTER COLUMN name TYPE INT")
    with pytest.raises(SqlParseError, match="SET NOT NULL"):
        delta_pyds.sql(spark, f"ALTER TABLE delta.`{s}` ALTER COLUMN name RENAME")


def test_cluster_by(spark, tmp_path):
    from delta_pyds.protocol.clustering import table_clustering

    paths = [str(tmp_path / n) for n in ("sql", "api")]
    for path in paths:
        delta_pyds.write_delta(spark.range(10).selectExpr("id", "cast(id as string) AS name"), path)
    s, a = paths
    delta_pyds.sql(spark, f"ALTER TABLE delta.`{s}` CLUSTER BY (id, name)")
    DeltaTable.forPath(spark, a).clusterBy("id", "name")
    for path in paths:
        snap = Snapshot.load(path)
        assert table_clustering(snap.schema, snap.domain_metadata, "none") == [("id",), ("name",)]
    delta_pyds.sql(spark, f"ALTER TABLE delta.`{s}` CLUSTER BY NONE")
    snap = Snapshot.load(s)
    assert table_clustering(snap.schema, snap.domain_metadata, "none") == []
    assert DeltaTable.forPath(spark, s).history(1).collect()[0]["operation"] == "CLUSTER BY"
    _same(spark, s, a)


CONNECT_SCRIPT = r"""
import json, sys
from pyspark.sql import SparkSession
spark = SparkSession.builder.remote("local[1]").config("spark.sql.session.timeZone", "UTC").getOrCreate()
assert type(spark).__module__.startswith("pyspark.sql.connect"), type(spark)
import delta_pyds
from delta_pyds.table.snapshot import Snapshot
delta_pyds.register(spark)
p = sys.argv[1] + "/t"
df = spark.createDataFrame([(i, f"n{i}", (i, "b")) for i in range(4)], "id int, name string, s struct<a:int,b:string>")
df.write.format("pydelta").mode("append").option("delta.columnMapping.mode", "name").save(p)
run = lambda stmt: delta_pyds.sql(spark, stmt.format(t=f"delta.`{p}`")).collect()
run("ALTER TABLE {t} ADD COLUMNS (c BIGINT COMMENT 'cc', s.z STRUCT<q: INT>)")
run("ALTER TABLE {t} RENAME COLUMN name TO label")
run("ALTER TABLE {t} DROP COLUMN s.b")
run("ALTER TABLE {t} ALTER COLUMN id SET NOT NULL")
run("ALTER TABLE {t} ALTER COLUMN label COMMENT 'the label'")
run("ALTER TABLE {t} SET TBLPROPERTIES ('delta.enableTypeWidening' = 'true')")
run("ALTER TABLE {t} ALTER COLUMN id TYPE BIGINT")
run("ALTER TABLE {t} CLUSTER BY (id)")
snap = Snapshot.load(p)
out = {
    "schema": [(f.name, f.type.simple_string(), f.nullable, f.metadata.get("comment")) for f in snap.schema.fields],
    "rows": sorted([r.id, r.label, r.c] for r in delta_pyds.read_delta(spark, p).collect()),
    "source": sorted([r.id, r.label] for r in spark.read.format("pydelta").load(p).collect()),
    "clustering": "delta.clustering" in snap.domain_metadata,
}
print(json.dumps(out))
spark.stop()
"""


@pytest.mark.slow
def test_alter_from_a_spark_connect_client(tmp_path):
    import json
    import os
    import subprocess
    import sys

    script = tmp_path / "connect_alter.py"
    script.write_text(CONNECT_SCRIPT)
    env = dict(os.environ, SPARK_TESTING="1", PYSPARK_PYTHON=sys.executable, TZ="UTC")
    result = subprocess.run(
        [sys.executable, str(script), str(tmp_path)], capture_output=True, text=True, env=env, timeout=900
    )
    assert result.returncode == 0, result.stderr[-3000:]
    got = json.loads(result.stdout.strip().splitlines()[-1])
    assert got["schema"] == [
        ["id", "long", False, None],
        ["label", "string", True, "the label"],
        ["s", "struct<a:integer,z:struct<q:integer>>", True, None],
        ["c", "long", True, "cc"],
    ]
    assert got["rows"] == [[i, f"n{i}", None] for i in range(4)]
    assert got["source"] == [[i, f"n{i}"] for i in range(4)]
    assert got["clustering"]


def test_backquoted_dotted_name_is_one_column(spark, tmp_path):
    path = str(tmp_path / "t")
    df = spark.createDataFrame([(1, 2, (3,))], "id int, `a.b` int, a struct<b:int>")
    delta_pyds.write_delta(df, path, **{"delta.columnMapping.mode": "name"})
    delta_pyds.sql(spark, f"ALTER TABLE delta.`{path}` RENAME COLUMN `a.b` TO ab")
    delta_pyds.sql(spark, f"ALTER TABLE delta.`{path}` RENAME COLUMN a.b TO c")
    schema = Snapshot.load(path).schema
    assert schema.names == ["id", "ab", "a"] and schema.field("a").type.names == ["c"]  # type: ignore[union-attr]
    assert spark_rows(delta_pyds.read_delta(spark, path)) == [(1, 2, (("c", 3),))]
    delta_pyds.sql(spark, f"ALTER TABLE delta.`{path}` DROP COLUMNS (`ab`)")
    assert Snapshot.load(path).schema.names == ["id", "a"]
