"""Delta tables by name through Spark's session catalog (the in-memory catalog of the shared
session): name parsing, ``read_delta`` / ``write_delta`` by name, ``DeltaTable.forName`` /
``isDeltaTable`` / ``tableName``, the entries' shape (delta-spark's: provider ``delta``,
location, EXTERNAL or MANAGED, no columns), names resolved per call, and the named error of
Spark's own reads of such a table. Each test works in its own database located in tmp_path."""

from __future__ import annotations

import os
import uuid

import deltalake
import pytest
from helpers import deltalake_table

import delta_pyds
from delta_pyds import DeltaTable
from delta_pyds.errors import (
    ArgumentTypeError,
    NoCatalogError,
    NotADeltaTableError,
    SqlParseError,
    TableExistsError,
    TableNotFoundError,
)
from delta_pyds.spark.catalog.lookup import lookup, parse_name


@pytest.fixture
def db(spark, tmp_path):
    name = f"db_{uuid.uuid4().hex[:8]}"
    spark.sql(f"CREATE DATABASE {name} LOCATION '{tmp_path}/{name}.db'")
    yield name
    spark.sql(f"DROP DATABASE {name} CASCADE")


def info(spark, db, table):
    row = [r for r in spark.sql(f"SHOW TABLE EXTENDED IN {db} LIKE '{table}'").collect() if r.tableName == table][0]
    return dict(line.split(": ", 1) for line in row.information.splitlines() if ": " in line)


def ids(df):
    return sorted(r.id for r in df.collect())


def test_parse_name_takes_spark_identifiers():
    assert parse_name("t") == ("t",)
    assert parse_name("db.t") == ("db", "t")
    assert parse_name("spark_catalog.db.t") == ("spark_catalog", "db", "t")
    assert parse_name("`my db`.`a``b.c`") == ("my db", "a`b.c")
    assert parse_name(" db . t ") == ("db", "t")
    for bad in ("", "a..b", "a.", "`a", "a b", "a/b", "``"):
        with pytest.raises(ArgumentTypeError, match="tableOrViewName"):
            parse_name(bad)


def test_write_and_read_by_name_as_save_as_table(spark, db, tmp_path):
    name = f"{db}.events"
    delta_pyds.write_delta(spark.range(3), name=name)  # a new name: a managed table
    entry = info(spark, db, "events")
    assert (entry["Provider"], entry["Type"]) == ("delta", "MANAGED")
    assert entry["Location"] == f"file:{tmp_path}/{db}.db/events"
    assert "Schema" not in entry  # delta-spark's shape: the log holds the schema
    assert ids(delta_pyds.read_delta(spark, name=name)) == [0, 1, 2]
    delta_pyds.write_delta(spark.range(3, 5), name=f"spark_catalog.{db}.events", mode="append")
    assert ids(delta_pyds.read_delta(spark, name=name, versionAsOf=0)) == [0, 1, 2]
    assert ids(DeltaTable.forName(spark, f"`{db}`.`events`").toDF()) == [0, 1, 2, 3, 4]
    with pytest.raises(TableExistsError, match="TABLE_OR_VIEW_ALREADY_EXISTS"):
        delta_pyds.write_delta(spark.range(1), name=name, mode="error")
    assert delta_pyds.write_delta(spark.range(1), name=name, mode="ignore") is None
    delta_pyds.write_delta(spark.range(7, 9), name=name, mode="overwrite")
    assert ids(delta_pyds.read_delta(spark, name=name)) == [7, 8]
    path = f"{tmp_path}/{db}.db/events"
    assert sorted(deltalake_table(path).column("id").to_pylist()) == [7, 8]
    ext = str(tmp_path / "ext")
    delta_pyds.write_delta(spark.range(2), name=f"{db}.ext", path=ext)  # with a path: external
    assert info(spark, db, "ext")["Type"] == "EXTERNAL"
    assert ids(DeltaTable.forName(spark, f"{db}.ext").toDF()) == [0, 1]


def test_names_resolve_per_call(spark, db, tmp_path):
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    delta_pyds.write_delta(spark.range(1), a)
    delta_pyds.write_delta(spark.range(2), b)
    spark.sql(f"CREATE TABLE {db}.t USING delta LOCATION '{a}'")  # Spark's own SQL: the delta name is ours
    assert DeltaTable.isDeltaTable(spark, f"{db}.t")
    assert delta_pyds.read_delta(spark, name=f"{db}.t").count() == 1
    spark.sql(f"DROP TABLE {db}.t")  # external: the data stays
    assert os.path.isdir(os.path.join(a, "_delta_log"))
    with pytest.raises(TableNotFoundError, match="DELTA_MISSING_DELTA_TABLE") as e:
        DeltaTable.forName(spark, f"{db}.t")
    assert "TABLE_OR_VIEW_NOT_FOUND" in str(e.value.__cause__)
    assert not DeltaTable.isDeltaTable(spark, f"{db}.t")
    spark.sql(f"CREATE TABLE {db}.t USING delta LOCATION '{b}'")
    assert DeltaTable.forName(spark, f"{db}.t").toDF().count() == 2


def test_builder_table_name_modes(spark, db, tmp_path):
    name = f"{db}.built"
    dt = DeltaTable.create(spark).tableName(name).addColumn("id", "bigint").execute()
    assert info(spark, db, "built")["Type"] == "MANAGED" and dt.toDF().columns == ["id"]
    with pytest.raises(TableExistsError):
        DeltaTable.create(spark).tableName(name).addColumn("id", "bigint").execute()
    assert DeltaTable.createIfNotExists(spark).tableName(name).addColumn("x", "int").execute().toDF().columns == ["id"]
    assert DeltaTable.replace(spark).tableName(name).addColumn("x", "int").execute().toDF().columns == ["x"]
    dt = DeltaTable.createOrReplace(spark).tableName(name).addColumn("y", "string").execute()
    assert dt.toDF().columns == ["y"] and [r.operation for r in dt.history().collect()][0] == "CREATE OR REPLACE TABLE"
    with pytest.raises(TableNotFoundError):
        DeltaTable.replace(spark).tableName(f"{db}.nothing").addColumn("x", "int").execute()
    with pytest.raises(TableExistsError, match="not at the location"):
        DeltaTable.createOrReplace(spark).tableName(name).location(str(tmp_path / "else")).addColumn(
            "x", "int"
        ).execute()
    ext = str(tmp_path / "ext")
    DeltaTable.create(spark).tableName(f"{db}.ext").location(ext).addColumn("id", "int").execute()
    assert info(spark, db, "ext")["Location"] == f"file:{ext}"
    assert deltalake.DeltaTable(ext).schema().fields[0].name == "id"
    with pytest.raises(ArgumentTypeError, match="identifier"):
        DeltaTable.create(spark).tableName("a..b")


def test_other_entries_and_catalogs_are_refused_by_name(spark, db, tmp_path):
    spark.sql(f"CREATE TABLE {db}.pq (id INT) USING parquet")
    with pytest.raises(NotADeltaTableError, match=f"DELTA_MISSING_DELTA_TABLE.*`{db}`.`pq`") as e:
        DeltaTable.forName(spark, f"{db}.pq")  # delta-spark's error; the cause names the provider
    assert "provider parquet" in str(e.value.__cause__)
    assert not DeltaTable.isDeltaTable(spark, f"{db}.pq")
    spark.range(1).createOrReplaceTempView("catalog_names_view")
    with pytest.raises(NotADeltaTableError, match="temporary view"):
        delta_pyds.read_delta(spark, name="catalog_names_view")
    with pytest.raises(NoCatalogError, match="spark_catalog"):
        DeltaTable.forName(spark, f"unity.{db}.t")
    with pytest.raises(TableNotFoundError):
        DeltaTable.forName(spark, "no_such_db_here.t")
    with pytest.raises(NotADeltaTableError):  # a name in use by another provider is not overwritten
        delta_pyds.write_delta(spark.range(1), name=f"{db}.pq", mode="overwrite")


def test_spark_reading_a_delta_entry_names_the_way_out(spark, db, tmp_path):
    delta_pyds.write_delta(spark.range(2), name=f"{db}.t")
    entry = lookup(spark, f"{db}.t")
    assert entry is not None and entry.is_delta
    # Spark's own source of the entry cannot read it (Spark 4.3 drops the location) ...
    spark_own_table = spark.table.__delta_pyds_original__
    with pytest.raises(Exception, match="CatalogTableReadError.*read_delta\\(spark, name=name\\)") as e:
        spark_own_table(f"{db}.t").collect()
    assert "DATA_SOURCE_NOT_FOUND" not in str(e.value)
    # ... and register()'s front doors read it by name
    assert sorted(r.id for r in spark.table(f"{db}.t").collect()) == [0, 1]
    assert sorted(r.id for r in spark.sql(f"SELECT * FROM {db}.t").collect()) == [0, 1]
    # format("delta") with a path is this package's source where no JVM delta source exists
    path = str(tmp_path / "by_format")
    spark.range(4).write.format("delta").mode("append").save(path)
    assert spark.read.format("delta").load(path).count() == 4
    assert DeltaTable.isDeltaTable(spark, path)


def test_convert_to_delta_by_name(spark, db, tmp_path):
    pq = str(tmp_path / "pq")
    spark.range(4).write.parquet(pq)
    spark.sql(f"CREATE TABLE {db}.raw (id BIGINT) USING parquet LOCATION '{pq}'")
    dt = DeltaTable.convertToDelta(spark, f"{db}.raw")
    assert ids(dt.toDF()) == [0, 1, 2, 3]
    entry = info(spark, db, "raw")
    assert (entry["Provider"], entry["Type"], entry["Location"]) == ("delta", "EXTERNAL", f"file:{pq}")
    assert ids(delta_pyds.read_delta(spark, name=f"{db}.raw")) == [0, 1, 2, 3]
    spark.sql(f"CREATE TABLE {db}.managed_pq (id BIGINT) USING parquet")
    with pytest.raises(NotADeltaTableError, match="only EXTERNAL parquet"):
        DeltaTable.convertToDelta(spark, f"{db}.managed_pq")


def test_registering_an_existing_table_with_a_comment_and_its_own_properties(spark, db, tmp_path):
    """As delta-spark: ``CREATE TABLE name USING delta LOCATION 'p'`` may carry COMMENT and TBLPROPERTIES;
    the properties must be the table's own (all of them), through delta_pyds.sql and the spark.sql door."""
    path = str(tmp_path / "reg")
    delta_pyds.write_delta(spark.range(3), path)
    delta_pyds.sql(spark, f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES ('delta.appendOnly' = 'false', 'k' = 'v')")
    spark.sql(f"CREATE TABLE {db}.c USING delta COMMENT 'it''s kept' LOCATION '{path}'")  # clauses in any order
    info = spark.sql(f"SHOW TABLE EXTENDED IN {db} LIKE 'c'").collect()[0].information
    assert "Comment: it's kept" in info and "Type: EXTERNAL" in info
    assert DeltaTable.forName(spark, f"{db}.c").toDF().count() == 3
    delta_pyds.sql(
        spark,
        f"CREATE TABLE {db}.p USING delta LOCATION '{path}' TBLPROPERTIES ('k' = 'v', 'delta.appendOnly' = 'false')",
    )
    assert DeltaTable.forName(spark, f"{db}.p").toDF().count() == 3
    for props in ("('k' = 'other', 'delta.appendOnly' = 'false')", "('k' = 'v')"):
        with pytest.raises(Exception, match="DELTA_CREATE_TABLE_WITH_DIFFERENT_PROPERTY") as e:
            spark.sql(f"CREATE TABLE {db}.q USING delta LOCATION '{path}' TBLPROPERTIES {props}")
        assert "k=v" in str(e.value)
        assert lookup(spark, (db, "q")) is None  # nothing registered
    with pytest.raises(SqlParseError, match="COMMENT given twice"):
        delta_pyds.sql(spark, f"CREATE TABLE {db}.r USING delta LOCATION '{path}' COMMENT 'a' COMMENT 'b'")
