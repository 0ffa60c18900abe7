"""Delta tables by name across processes and clients: a Hive metastore on the embedded Derby the
pyspark wheel ships, shared by two processes run one after the other (Derby embedded admits one
process at a time), and a Spark Connect client. Each process is a subprocess running one script;
its results come back as JSON and are asserted here.

Hive: process 1 writes an entry shaped as delta-spark writes one (the JVM catalog API: provider
``delta``, EXTERNAL, schema ``struct<>``) while no ``delta`` source is registered, resolves it,
then creates a managed table by SQL, appends to it by name, and creates an external table with
the builder. Process 2 lists, reads, merges into and updates those tables by name, and drops them
(the managed table's data goes, the external table's stays)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from helpers import deltalake_table

HIVE_SESSION = r"""
import json, sys
from pyspark.sql import SparkSession
root = sys.argv[1]
spark = (
    SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
    .config("spark.sql.session.timeZone", "UTC")
    .config("spark.sql.warehouse.dir", root + "/warehouse")
    .config("javax.jdo.option.ConnectionURL", f"jdbc:derby:;databaseName={root}/metastore_db;create=true")
    .enableHiveSupport().getOrCreate()
)
spark.sparkContext.setLogLevel("ERROR")
import delta_pyds
from delta_pyds import DeltaTable
out = {}
def error_of(f):
    try:
        f()
        return None
    except Exception as exc:
        return type(exc).__name__ + ": " + str(exc)[:2000]
"""

CREATOR = (
    HIVE_SESSION
    + r"""
spark.sql("CREATE DATABASE sales")
# an entry as delta-spark's catalog writes it, made through the JVM catalog API, no delta source registered
delta_pyds.write_delta(spark.createDataFrame([(1, "a"), (2, "b")], "id long, v string"), root + "/ds_table")
jvm = spark._jvm
pkg = jvm.org.apache.spark.sql.catalyst.catalog
companion = jvm.java.lang.Class.forName("org.apache.spark.sql.catalyst.catalog.CatalogTable$")
module = companion.getField("MODULE$").get(None)
empty = pkg.CatalogStorageFormat.empty()
storage = pkg.CatalogStorageFormat(
    jvm.scala.Some(jvm.java.net.URI("file:" + root + "/ds_table")),
    empty.inputFormat(), empty.outputFormat(), empty.serde(), False, empty.properties(), jvm.scala.Option.empty(),
)
ident = spark._jsparkSession.sessionState().sqlParser().parseTableIdentifier("sales.ds_orders")
defaults = [getattr(module, "apply$default$%d" % n)() for n in range(6, 23)]
table = pkg.CatalogTable(
    ident, pkg.CatalogTableType.EXTERNAL(), storage, jvm.org.apache.spark.sql.types.StructType(),
    jvm.scala.Some("delta"), *defaults
)
spark._jsparkSession.sessionState().catalog().createTable(table, False, False)
out["ds_spark_select"] = error_of(lambda: spark.sql("SELECT * FROM sales.ds_orders").collect())
out["ds_rows"] = sorted(tuple(r) for r in delta_pyds.read_delta(spark, name="sales.ds_orders").collect())
out["ds_sql"] = [tuple(r) for r in delta_pyds.sql(spark, "SELECT id FROM sales.ds_orders WHERE v = 'b'").collect()]
# this package's own entries
delta_pyds.register(spark)
delta_pyds.sql(spark, "CREATE TABLE sales.orders (id BIGINT, v STRING) USING delta")
delta_pyds.write_delta(spark.createDataFrame([(1, "x"), (2, "y")], "id long, v string"), name="sales.orders")
DeltaTable.create(spark).tableName("sales.ext").location(root + "/ext").addColumn("id", "bigint").execute()
delta_pyds.write_delta(spark.range(3), name="sales.ext", mode="append")
print(json.dumps(out))
spark.stop()
"""
)

READER = (
    HIVE_SESSION
    + r"""
delta_pyds.register(spark)
out["tables"] = sorted(r.tableName for r in spark.sql("SHOW TABLES IN sales").collect())
out["orders"] = sorted(tuple(r) for r in delta_pyds.read_delta(spark, name="sales.orders").collect())
out["detail"] = delta_pyds.sql(spark, "DESCRIBE DETAIL spark_catalog.sales.orders").first().location
delta_pyds.sql(
    spark,
    "MERGE INTO sales.orders t USING (SELECT 2L AS id, 'z' AS v UNION ALL SELECT 3L, 'w') s ON t.id = s.id "
    "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *",
)
out["merged"] = sorted(tuple(r) for r in delta_pyds.sql(spark, "SELECT * FROM sales.orders").collect())
DeltaTable.forName(spark, "sales.ds_orders").update("id = 1", {"v": "'u'"})
out["ds_updated"] = sorted(tuple(r) for r in DeltaTable.forName(spark, "sales.ds_orders").toDF().collect())
out["ext"] = delta_pyds.read_delta(spark, name="sales.ext").count()
# Spark's own front doors after register(): by name, a delta-spark-shaped entry included
out["spark_table"] = sorted(tuple(r) for r in spark.table("sales.orders").collect())
out["spark_sql"] = sorted(tuple(r) for r in spark.sql("SELECT * FROM sales.ds_orders").collect())
out["spark_v0"] = spark.read.format("delta").option("versionAsOf", 1).table("sales.orders").count()
out["spark_update"] = spark.sql("UPDATE sales.orders SET v = 'q' WHERE id = 3").first().num_affected_rows
out["spark_parquet"] = error_of(lambda: spark.sql("CREATE TABLE sales.pq (id INT) USING parquet").collect())
out["spark_parquet_rows"] = spark.sql("INSERT INTO sales.pq VALUES (7)").collect() == [] and [
    tuple(r) for r in spark.table("sales.pq").collect()
]
delta_pyds.sql(spark, "DROP TABLE sales.orders")
delta_pyds.sql(spark, "DROP TABLE sales.ext")
out["after"] = sorted(r.tableName for r in spark.sql("SHOW TABLES IN sales").collect())
print(json.dumps(out))
spark.stop()
"""
)


def run_script(tmp_path, name, text, *args):
    script = tmp_path / name
    script.write_text(text)
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, TZ="UTC")
    result = subprocess.run(
        [sys.executable, str(script), str(tmp_path), *args], capture_output=True, text=True, env=env, timeout=900
    )
    assert result.returncode == 0, result.stderr[-4000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_hive_metastore_shared_by_two_processes(tmp_path):
    first = run_script(tmp_path, "creator.py", CREATOR)
    assert "DATA_SOURCE_NOT_FOUND" in first["ds_spark_select"]  # Spark cannot read it; this package can
    assert first["ds_rows"] == [[1, "a"], [2, "b"]] and first["ds_sql"] == [[2]]
    second = run_script(tmp_path, "reader.py", READER)
    assert second["tables"] == ["ds_orders", "ext", "orders"]
    assert second["orders"] == [[1, "x"], [2, "y"]]
    assert second["detail"] == f"{tmp_path}/warehouse/sales.db/orders"  # managed: under the warehouse
    assert second["merged"] == [[1, "x"], [2, "z"], [3, "w"]]
    assert second["ds_updated"] == [[1, "u"], [2, "b"]]
    assert second["ext"] == 3
    assert second["spark_table"] == [[1, "x"], [2, "z"], [3, "w"]]
    assert second["spark_sql"] == [[1, "u"], [2, "b"]]
    assert second["spark_v0"] == 2  # version 1: the first write_delta
    assert second["spark_update"] == 1
    assert second["spark_parquet"] is None and second["spark_parquet_rows"] == [[7]]  # Spark's own, unchanged
    assert second["after"] == ["ds_orders", "pq"]
    assert not os.path.exists(tmp_path / "warehouse" / "sales.db" / "orders")  # managed: dropped with its data
    assert deltalake_table(str(tmp_path / "ext")).num_rows == 3  # external: kept


CONNECT = r"""
import json, sys
from pyspark.sql import SparkSession
spark = SparkSession.builder.remote("local[1]").config("spark.sql.session.timeZone", "UTC").getOrCreate()
assert type(spark).__module__.startswith("pyspark.sql.connect"), type(spark)
import delta_pyds
from delta_pyds import DeltaTable
root = sys.argv[1]
delta_pyds.register(spark)
out = {}
spark.sql(f"CREATE DATABASE cdb LOCATION '{root}/cdb.db'")
delta_pyds.write_delta(spark.createDataFrame([(i, f"n{i}") for i in range(4)], "id long, v string"), name="cdb.t")
delta_pyds.sql(spark, f"CREATE TABLE cdb.e USING delta LOCATION '{root}/e' AS SELECT 1L AS id")
out["rows"] = sorted(tuple(r) for r in delta_pyds.read_delta(spark, name="cdb.t").collect())
out["deleted"] = delta_pyds.sql(spark, "DELETE FROM spark_catalog.cdb.t WHERE id < 2").first().num_affected_rows
DeltaTable.forName(spark, "cdb.t").update("id = 3", {"v": "'x'"})
query = delta_pyds.sql(spark, "SELECT t.id, t.v, e.id AS e FROM cdb.t t, cdb.e e")
out["query"] = sorted(tuple(r) for r in query.collect())
out["is_delta"] = [DeltaTable.isDeltaTable(spark, "cdb.t"), DeltaTable.isDeltaTable(spark, "cdb.nothing")]
# Spark's own front doors after register()
out["spark_table"] = sorted(tuple(r) for r in spark.table("cdb.t").collect())
v1 = spark.read.format("delta").option("versionAsOf", 1).table("cdb.t")
out["spark_read_v1"] = sorted(tuple(r) for r in v1.collect())
out["spark_delete"] = spark.sql("DELETE FROM cdb.t WHERE id = 3").first().num_affected_rows
out["spark_history"] = [r.operation for r in spark.sql("DESCRIBE HISTORY cdb.t").collect()][:2]
delta_pyds.sql(spark, "ALTER TABLE cdb.t RENAME TO cdb.t2")
delta_pyds.sql(spark, "DROP TABLE cdb.t2")
delta_pyds.sql(spark, "DROP TABLE cdb.e")
out["after"] = [r.tableName for r in delta_pyds.sql(spark, "SHOW TABLES IN cdb").collect()]
print(json.dumps(out))
spark.stop()
"""


@pytest.mark.slow
def test_names_from_a_spark_connect_client(tmp_path):
    got = run_script(tmp_path, "connect_names.py", CONNECT)
    assert got["rows"] == [[0, "n0"], [1, "n1"], [2, "n2"], [3, "n3"]]
    assert got["deleted"] == 2
    assert got["query"] == [[2, "n2", 1], [3, "x", 1]]
    assert got["is_delta"] == [True, False]
    assert got["spark_table"] == [[2, "n2"], [3, "x"]]
    assert got["spark_read_v1"] == [[2, "n2"], [3, "n3"]]  # v0: the one commit of the managed write; v1: the DELETE
    assert got["spark_delete"] == 1 and got["spark_history"] == ["DELETE", "UPDATE"]
    assert got["after"] == []
    assert not os.path.exists(tmp_path / "cdb.db" / "t2") and not os.path.exists(tmp_path / "cdb.db" / "t")
    assert deltalake_table(str(tmp_path / "e")).num_rows == 1
