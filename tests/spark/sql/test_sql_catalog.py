"""delta_pyds.sql by catalog name (the shared session's in-memory catalog): CREATE [OR REPLACE]
TABLE / CTAS / REPLACE TABLE / CREATE TABLE ... LOCATION making real entries, every Delta
statement and queries on ``db.t`` and ``spark_catalog.db.t``, DESCRIBE [EXTENDED], ALTER TABLE
RENAME, SHOW TABLES, DROP TABLE (a managed table's data goes, an external table's stays). Each
test works in its own database located in tmp_path."""

from __future__ import annotations

import os
import uuid

import pytest

import delta_pyds
from delta_pyds import DeltaTable
from delta_pyds.errors import TableExistsError, TableNotFoundError


@pytest.fixture
def db(spark, tmp_path):
    name = f"sqldb_{uuid.uuid4().hex[:8]}"
    spark.sql(f"CREATE DATABASE {name} LOCATION '{tmp_path}/{name}.db'")
    yield name
    spark.sql(f"DROP DATABASE {name} CASCADE")


def rows(df):
    return sorted(tuple(r) for r in df.collect())


def kind(spark, db, table):
    row = [r for r in spark.sql(f"SHOW TABLE EXTENDED IN {db} LIKE '{table}'").collect() if r.tableName == table]
    return dict(line.split(": ", 1) for line in row[0].information.splitlines() if ": " in line)["Type"]


def test_create_statements_make_catalog_entries(spark, db, tmp_path):
    sql = lambda s, *a: delta_pyds.sql(spark, s, *a)  # noqa: E731
    sql(f"CREATE TABLE {db}.m (id BIGINT NOT NULL, v STRING COMMENT 'the v') USING delta PARTITIONED BY (v)")
    assert kind(spark, db, "m") == "MANAGED" and os.path.isdir(f"{tmp_path}/{db}.db/m/_delta_log")
    with pytest.raises(TableExistsError):
        sql(f"CREATE TABLE {db}.m (id BIGINT) USING delta")
    sql(f"CREATE TABLE IF NOT EXISTS {db}.m (x INT) USING delta")  # nothing happens
    assert DeltaTable.forName(spark, f"{db}.m").toDF().columns == ["id", "v"]
    sql(f"CREATE TABLE spark_catalog.{db}.c USING delta AS SELECT id, id * 2 AS d FROM range(3)")
    assert rows(sql(f"SELECT * FROM {db}.c")) == [(0, 0), (1, 2), (2, 4)]
    sql(f"CREATE OR REPLACE TABLE {db}.c USING delta AS SELECT 'x' AS s")
    assert rows(sql(f"SELECT * FROM {db}.c")) == [("x",)]
    sql(f"REPLACE TABLE {db}.c (k INT) USING delta")
    assert sql(f"SELECT * FROM {db}.c").columns == ["k"]
    with pytest.raises(TableNotFoundError):
        sql(f"REPLACE TABLE {db}.nothing (k INT) USING delta")
    ext = str(tmp_path / "ext")
    sql(f"CREATE TABLE {db}.e (id INT) USING delta LOCATION '{ext}'")
    assert kind(spark, db, "e") == "EXTERNAL"
    again = str(tmp_path / "again")
    delta_pyds.write_delta(spark.range(2), again)
    sql(f"CREATE TABLE {db}.`again` USING delta LOCATION '{again}'")
    assert kind(spark, db, "again") == "EXTERNAL" and sql(f"SELECT count(*) AS n FROM {db}.again").first().n == 2
    with pytest.raises(TableNotFoundError, match="no Delta table there"):
        sql(f"CREATE TABLE {db}.none USING delta LOCATION '{tmp_path}/none'")
    described = {}
    for r in sql(f"DESCRIBE EXTENDED {db}.m").collect():
        described.setdefault(r.col_name, (r.data_type, r.comment))
    assert described["id"] == ("bigint", None) and described["v"] == ("string", "the v")
    assert described["# Partition Information"] == ("", "")
    assert described["Name"][0] == f"spark_catalog.{db}.m" and described["Type"][0] == "MANAGED"
    assert described["Provider"][0] == "delta" and described["Location"][0] == f"{tmp_path}/{db}.db/m"


def test_delta_statements_and_queries_take_names(spark, db, tmp_path):
    sql = lambda s, *a: delta_pyds.sql(spark, s, *a)  # noqa: E731
    delta_pyds.write_delta(spark.createDataFrame([(i, f"n{i}") for i in range(6)], "id long, v string"), name=f"{db}.t")
    delta_pyds.write_delta(spark.createDataFrame([(1, "x"), (9, "y")], "id long, v string"), name=f"{db}.s")
    t = f"spark_catalog.{db}.t"
    assert sql(f"INSERT INTO {db}.t VALUES (6, 'n6')").first().num_inserted_rows == 1
    assert sql(f"DELETE FROM {t} WHERE id = 2").first().num_affected_rows == 1
    assert sql(f"UPDATE {db}.t SET v = upper(v) WHERE id > 4").first().num_affected_rows == 2
    sql(
        f"MERGE INTO {t} AS a USING {db}.s AS b ON a.id = b.id"
        " WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"
    )
    expected = [(0, "n0"), (1, "x"), (3, "n3"), (4, "n4"), (5, "N5"), (6, "N6"), (9, "y")]
    assert rows(sql(f"SELECT * FROM {db}.t")) == expected
    joined = sql(f"SELECT a.id FROM {db}.t a JOIN {t} VERSION AS OF 0 b ON a.id = b.id WHERE a.id < :n", {"n": 2})
    assert rows(joined) == [(0,), (1,)]
    assert [r.operation for r in sql(f"DESCRIBE HISTORY {db}.t").collect()][0] == "MERGE"
    assert sql(f"DESCRIBE DETAIL {t}").first().location == f"{tmp_path}/{db}.db/t"
    sql(f"OPTIMIZE {db}.t")
    sql(f"RESTORE TABLE {db}.t TO VERSION AS OF 0")
    assert rows(sql(f"SELECT id FROM {db}.t")) == [(i,) for i in range(6)]
    sql(f"ALTER TABLE {db}.t SET TBLPROPERTIES ('k' = 'v')")
    assert sql(f"SHOW TBLPROPERTIES {db}.t ('k')").first().value == "v"
    assert sql(f"VACUUM {db}.t RETAIN 168 HOURS DRY RUN").count() == 0


def test_rename_show_and_drop(spark, db, tmp_path):
    sql = lambda s, *a: delta_pyds.sql(spark, s, *a)  # noqa: E731
    sql(f"CREATE TABLE {db}.m USING delta AS SELECT 1 AS id")
    ext = str(tmp_path / "ext")
    sql(f"CREATE TABLE {db}.e USING delta LOCATION '{ext}' AS SELECT 2 AS id")
    sql(f"ALTER TABLE {db}.m RENAME TO {db}.m2")
    assert rows(sql(f"SELECT id FROM {db}.m2")) == [(1,)]
    assert os.path.isdir(f"{tmp_path}/{db}.db/m2/_delta_log") and not os.path.exists(f"{tmp_path}/{db}.db/m")
    # SHOW TABLES also lists the session's temporary views (as Spark's does): other tests' views
    tables = lambda: sorted(r.tableName for r in sql(f"SHOW TABLES IN {db}").collect() if not r.isTemporary)  # noqa: E731
    assert tables() == ["e", "m2"]
    sql(f"DROP TABLE {db}.m2")
    assert not os.path.exists(f"{tmp_path}/{db}.db/m2")  # managed: the data goes with the entry
    sql(f"DROP TABLE {db}.e")
    assert DeltaTable.isDeltaTable(spark, ext)  # external: the data stays
    sql(f"DROP TABLE IF EXISTS {db}.e")
    assert tables() == []
