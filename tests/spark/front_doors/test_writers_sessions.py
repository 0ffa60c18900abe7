"""The write front doors in sessions of their own, each a subprocess running one script whose
results come back as JSON (a classic session and a Spark Connect session cannot share a process):
a Spark Connect client, a Hive metastore (embedded Derby), and a session with a JVM ``delta``
source (a tiny ``DataSourceRegister`` compiled here), where ``format("delta")`` must stay Spark's.
Rows are checked against ``deltalake``."""

from __future__ import annotations

import glob
import json
import os
import subprocess
import sys

import deltalake
import pytest
from helpers import deltalake_table

CALLS = r"""
import json, sys
import delta_pyds
from pyspark.errors import AnalysisException
root = sys.argv[1]
delta_pyds.register(spark)
out = {}
def error_of(f):
    try:
        f()
        return None
    except AnalysisException as exc:
        return "AnalysisException " + (exc.getCondition() or "") + " " + str(exc)[:300]
    except Exception as exc:
        return type(exc).__name__ + ": " + str(exc)[:300]
df = spark.createDataFrame([(1, "a"), (2, "b")], "id long, p string")
path = root + "/t"
df.write.format("delta").partitionBy("p").save(path)
out["exists"] = error_of(lambda: df.write.format("delta").save(path))
df.write.format("delta").mode("ignore").save(path)
df.write.save(path, format="delta", mode="Append", userMetadata="two")
df.where("p = 'b'").write.format("pydelta").mode("overwrite").option("replaceWhere", "p = 'b'").save(path)
df.write.format("pydelta").mode("ignore").save(path)
spark.sql(f"CREATE DATABASE db LOCATION '{root}/db.db'")
df.write.format("delta").partitionBy("p").saveAsTable("db.m")
out["table_exists"] = error_of(lambda: df.write.format("delta").saveAsTable("db.m"))
df.write.format("delta").mode("append").saveAsTable("db.m")
spark.createDataFrame([(3, "c")], "x long, y string").write.insertInto("db.m")
df.write.format("delta").mode("overwrite").option("path", root + "/ext").saveAsTable("db.ext")
df.writeTo("db.v2").using("delta").partitionedBy("p").create()
spark.createDataFrame([(9, "b")], "id long, p string").writeTo("db.v2").overwrite(F.col("p") == "b")
df.write.mode("overwrite").parquet(root + "/pq")
out["pq_exists"] = error_of(lambda: df.write.parquet(root + "/pq"))
out["pq_rows"] = spark.read.parquet(root + "/pq").count()
def where(name):
    row = [r for r in spark.sql(f"SHOW TABLE EXTENDED IN db LIKE '{name}'").collect() if r.tableName == name][0]
    info = dict(line.split(": ", 1) for line in row.information.splitlines() if ": " in line)
    return [info["Provider"], info["Type"], info["Location"].removeprefix("file:")]
out["entries"] = {n: where(n) for n in ("m", "ext", "v2")}
print(json.dumps(out))
spark.stop()
"""

CONNECT = (
    r"""
from pyspark.sql import SparkSession, functions as F
spark = SparkSession.builder.remote("local[1]").config("spark.sql.session.timeZone", "UTC").getOrCreate()
assert type(spark).__module__.startswith("pyspark.sql.connect"), type(spark)
"""
    + CALLS
)

HIVE = (
    r"""
import sys
from pyspark.sql import SparkSession, functions as F
root = sys.argv[1]
spark = (
    SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
    .config("spark.sql.session.timeZone", "UTC").config("spark.sql.shuffle.partitions", "1")
    .config("spark.sql.warehouse.dir", root + "/warehouse")
    .config("javax.jdo.option.ConnectionURL", f"jdbc:derby:;databaseName={root}/metastore_db;create=true")
    .enableHiveSupport().getOrCreate()
)
spark.sparkContext.setLogLevel("ERROR")
"""
    + CALLS
)

JVM_DELTA_SOURCE = """
package pydeltatest;
public class FakeDelta extends org.apache.spark.sql.execution.datasources.parquet.ParquetFileFormat {
    @Override public String shortName() { return "delta"; }
}
"""

JVM_DELTA = r"""
import json, sys
from pyspark.sql import SparkSession
root, jar = sys.argv[1], sys.argv[2]
spark = (
    SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
    .config("spark.driver.extraClassPath", jar).getOrCreate()
)
spark.sparkContext.setLogLevel("ERROR")
import delta_pyds
from delta_pyds.spark.datasource.registration import delta_name_checked
delta_pyds.register(spark)
df = spark.createDataFrame([(1, "a"), (2, "b")], "id long, p string")
df.write.format("delta").partitionBy("p").save(root + "/jvm")  # the JVM source's own write (parquet here)
try:
    df.write.format("delta").save(root + "/jvm")
    again = None
except Exception as exc:
    again = str(exc)[:300]
df.write.format("pydelta").mode("errorifexists").save(root + "/ours")
print(json.dumps({"ours": delta_name_checked(spark), "again": again}))
spark.stop()
"""


def run_script(tmp_path, name, text, *args):
    script = tmp_path / name
    script.write_text(text)
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, TZ="UTC")
    result = subprocess.run(
        [sys.executable, str(script), str(tmp_path), *args], capture_output=True, text=True, env=env, timeout=900
    )
    assert result.returncode == 0, result.stderr[-4000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def rows(path):
    return sorted(tuple(r.values()) for r in deltalake_table(path).to_pylist())


def operations(path):
    return [h["operation"] for h in reversed(deltalake.DeltaTable(path).history())]


def check_calls(got, root, managed_root):
    assert got["exists"].startswith("AnalysisException DELTA_PATH_EXISTS")
    assert got["table_exists"].startswith("AnalysisException TABLE_OR_VIEW_ALREADY_EXISTS")
    assert "PATH_ALREADY_EXISTS" in got["pq_exists"] and got["pq_rows"] == 2
    t = str(root / "t")
    assert rows(t) == [(1, "a"), (1, "a"), (2, "b")]
    assert deltalake.DeltaTable(t).metadata().partition_columns == ["p"]
    assert operations(t) == ["WRITE", "WRITE", "WRITE"]
    entries = got["entries"]
    assert entries["m"] == ["delta", "MANAGED", f"{managed_root}/m"]
    assert entries["ext"] == ["delta", "EXTERNAL", str(root / "ext")]
    assert rows(entries["m"][2]) == [(1, "a"), (1, "a"), (2, "b"), (2, "b"), (3, "c")]
    assert deltalake.DeltaTable(entries["m"][2]).metadata().partition_columns == ["p"]
    assert operations(entries["m"][2]) == ["CREATE TABLE AS SELECT", "WRITE", "WRITE"]
    assert operations(str(root / "ext")) == ["CREATE OR REPLACE TABLE AS SELECT"]
    assert rows(entries["v2"][2]) == [(1, "a"), (9, "b")]
    assert operations(entries["v2"][2]) == ["CREATE TABLE AS SELECT", "WRITE"]


@pytest.mark.slow  # a local Spark Connect server in a subprocess
def test_write_front_doors_from_a_spark_connect_client(tmp_path):
    got = run_script(tmp_path, "connect_writes.py", CONNECT)
    check_calls(got, tmp_path, f"{tmp_path}/db.db")


@pytest.mark.slow  # a Hive metastore session in a subprocess
def test_write_front_doors_on_a_hive_metastore(tmp_path):
    got = run_script(tmp_path, "hive_writes.py", HIVE)
    check_calls(got, tmp_path, f"{tmp_path}/db.db")


@pytest.mark.slow  # javac, a jar and a session of its own in a subprocess
def test_a_jvm_delta_source_keeps_format_delta(tmp_path):
    """Where a JVM source has the name ``delta`` (delta-spark's jars), ``format("delta")`` stays
    Spark's: its save modes and ``partitionBy`` reach that source (here a Parquet one), never
    this package; ``format("pydelta")`` is still met."""
    src = tmp_path / "src" / "pydeltatest"
    src.mkdir(parents=True)
    (src / "FakeDelta.java").write_text(JVM_DELTA_SOURCE)
    services = tmp_path / "classes" / "META-INF" / "services"
    services.mkdir(parents=True)
    (services / "org.apache.spark.sql.sources.DataSourceRegister").write_text("pydeltatest.FakeDelta\n")
    import pyspark

    jars = os.pathsep.join(glob.glob(os.path.join(os.path.dirname(pyspark.__file__), "jars", "*.jar")))
    subprocess.run(["javac", "-cp", jars, "-d", str(tmp_path / "classes"), str(src / "FakeDelta.java")], check=True)
    jar = str(tmp_path / "fake-delta.jar")
    subprocess.run(["jar", "cf", jar, "-C", str(tmp_path / "classes"), "."], check=True)
    got = run_script(tmp_path, "jvm_delta.py", JVM_DELTA, jar)
    assert got["ours"] is False
    assert "PATH_ALREADY_EXISTS" in got["again"]  # Spark's own error for a JVM source, not DELTA_PATH_EXISTS
    assert not os.path.exists(tmp_path / "jvm" / "_delta_log")  # the JVM source wrote it
    assert sorted(os.listdir(tmp_path / "jvm"))[-2:] == ["p=a", "p=b"]
    assert rows(str(tmp_path / "ours")) == [(1, "a"), (2, "b")]
