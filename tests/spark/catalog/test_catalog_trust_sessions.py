"""Catalog names that cannot be redirected, in a Hive metastore (the embedded Derby the pyspark
wheel ships) and from a Spark Connect client (one local Connect server), each a subprocess
running one script whose results come back as JSON: generated hostile comments and
TBLPROPERTIES values never move a by-name operation to another table (the JVM catalog's entry
on the classic Hive session; on Connect, the text reading takes the right location or refuses
with ``AmbiguousCatalogEntryError``), and names compare as Spark's catalog compares them under
``spark.sql.caseSensitive`` (a Hive metastore lower-cases names itself; the in-memory catalog
behind the Connect server keeps ``CS`` and ``cs`` apart)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

COMMON = r"""
import json, random, sys
root = sys.argv[1]
FRAGMENTS = ["\n", "\r\n", "\r", "\u2028", "\x85", "Location: file:{other}", "Provider: parquet", "Type: VIEW",
             "  Location: {other}", "location: {other}", "Provider: delta", "é ü 漢字", ": ", "plain words"]
def hostile(rng, other):
    return "".join(rng.choice(FRAGMENTS) for _ in range(rng.randint(2, 6))).format(other=other)
def error_of(f):
    try:
        f()
        return None
    except Exception as exc:
        return type(exc).__name__ + ": " + str(exc)[:500]
import delta_pyds
from delta_pyds import DeltaTable
from delta_pyds.spark.catalog.lookup import lookup, sql_string, text_lookup
from delta_pyds.spark.front_doors.sql_door import original_sql
out = {}
def hostile_tables(spark, db):
    a, other = root + "/a", root + "/other"
    delta_pyds.write_delta(spark.range(4), a)
    delta_pyds.write_delta(spark.range(100, 103), other)
    rng = random.Random(4)
    for i in range(5):
        # Spark's own statement (delta-spark refuses properties the log lacks): hostile catalog text
        original_sql(spark)(f"CREATE TABLE {db}.h{i} USING delta LOCATION '{a}'"
                            f" COMMENT {sql_string(hostile(rng, other))}"
                            f" TBLPROPERTIES ('p' = {sql_string(hostile(rng, other))})")
    return a, other
def readings(spark, db, n):
    got = []
    for i in range(n):
        try:
            e = text_lookup(spark, (db, f"h{i}"), db, f"h{i}")
            got.append(e.location if e is not None and e.is_delta else repr(e))
        except Exception as exc:
            got.append(type(exc).__name__)
    return got
"""

HIVE = (
    r"""
import sys
from pyspark.sql import SparkSession
spark = (
    SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
    .config("spark.sql.warehouse.dir", sys.argv[1] + "/warehouse")
    .config("javax.jdo.option.ConnectionURL", f"jdbc:derby:;databaseName={sys.argv[1]}/metastore_db;create=true")
    .enableHiveSupport().getOrCreate()
)
spark.sparkContext.setLogLevel("ERROR")
"""
    + COMMON
    + r"""
delta_pyds.register(spark)
spark.sql("CREATE DATABASE hdb")
a, other = hostile_tables(spark, "hdb")
out["jvm"] = [lookup(spark, ("hdb", f"h{i}")).location for i in range(5)]
out["text"] = readings(spark, "hdb", 5)
out["deleted"] = delta_pyds.sql(spark, "DELETE FROM hdb.h0 WHERE id < 2").first().num_affected_rows
out["other"] = delta_pyds.read_delta(spark, other).count()
out["a"] = sorted(r.id for r in delta_pyds.read_delta(spark, name="hdb.h3").collect())
spark.conf.set("spark.sql.caseSensitive", "true")
delta_pyds.write_delta(spark.range(3), root + "/u")
delta_pyds.write_delta(spark.range(10, 12), root + "/l")
spark.sql(f"CREATE TABLE hdb.CS USING delta LOCATION '{root}/u'")
out["second"] = error_of(lambda: spark.sql(f"CREATE TABLE hdb.cs USING delta LOCATION '{root}/l'"))
out["cs"] = [lookup(spark, ("hdb", n)).location for n in ("CS", "cs", "Cs")]
out["cs_text"] = [text_lookup(spark, ("hdb", n), "hdb", n).location for n in ("CS", "cs")]
spark.conf.set("spark.sql.caseSensitive", "false")
delta_pyds.sql(spark, "CREATE TABLE hdb.m USING delta AS SELECT id FROM range(3)")  # committed, then registered
m = lookup(spark, ("hdb", "m"))
out["managed"] = [m.kind, m.location, delta_pyds.read_delta(spark, name="hdb.m").count()]
delta_pyds.sql(spark, "DROP TABLE hdb.m")
out["dropped"] = lookup(spark, ("hdb", "m")) is None
print(json.dumps(out))
spark.stop()
"""
)

CONNECT = (
    r"""
from pyspark.sql import SparkSession
spark = SparkSession.builder.remote("local[1]").getOrCreate()
assert type(spark).__module__.startswith("pyspark.sql.connect"), type(spark)
"""
    + COMMON
    + r"""
delta_pyds.register(spark)
spark.sql(f"CREATE DATABASE cdb LOCATION '{root}/cdb.db'")
a, other = hostile_tables(spark, "cdb")
out["text"] = readings(spark, "cdb", 5)
spark.sql(f"CREATE TABLE cdb.lines USING delta LOCATION '{a}' COMMENT 'x\nLocation: file:{other}'")
out["delete_lines"] = error_of(lambda: delta_pyds.sql(spark, "DELETE FROM cdb.lines WHERE id >= 0"))
out["forname_lines"] = error_of(lambda: DeltaTable.forName(spark, "cdb.lines"))
spark.sql(f"CREATE TABLE cdb.fine USING delta LOCATION '{a}' COMMENT 'fine: words, Location: nowhere'")
out["deleted"] = delta_pyds.sql(spark, "DELETE FROM cdb.fine WHERE id < 2").first().num_affected_rows
out["other"] = delta_pyds.read_delta(spark, other).count()
spark.conf.set("spark.sql.caseSensitive", "true")
delta_pyds.write_delta(spark.range(3), root + "/u")
delta_pyds.write_delta(spark.range(10, 12), root + "/l")
spark.sql(f"CREATE TABLE cdb.CS USING delta LOCATION '{root}/u'")
spark.sql(f"CREATE TABLE cdb.cs USING delta LOCATION '{root}/l'")
out["cs_deleted"] = delta_pyds.sql(spark, "DELETE FROM cdb.cs WHERE id >= 0").first().num_affected_rows
out["upper"] = delta_pyds.read_delta(spark, name="cdb.CS").count()
out["missing"] = error_of(lambda: DeltaTable.forName(spark, "cdb.Cs"))
spark.conf.set("spark.sql.caseSensitive", "false")
delta_pyds.write_delta(spark.range(2), name="cdb.m")  # managed from Connect: registered, committed, checked
out["managed"] = [lookup(spark, ("cdb", "m")).kind, delta_pyds.read_delta(spark, name="cdb.m").count()]
print(json.dumps(out))
spark.stop()
"""
)


def run_script(tmp_path, name, text):
    script = tmp_path / name
    script.write_text(text, encoding="utf-8")
    # SPARK_TESTING: a local Connect server takes an ephemeral port (15002 may be another's)
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, TZ="UTC", SPARK_TESTING="1")
    result = subprocess.run(
        [sys.executable, str(script), str(tmp_path)], capture_output=True, text=True, env=env, timeout=900
    )
    assert result.returncode == 0, result.stderr[-4000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def check_readings(got, a):
    assert all(r == a or r == "AmbiguousCatalogEntryError" for r in got), got  # never another location
    assert "AmbiguousCatalogEntryError" in got


@pytest.mark.slow
def test_hostile_metadata_and_case_in_a_hive_metastore(tmp_path):
    got = run_script(tmp_path, "hive_trust.py", HIVE)
    a = str(tmp_path / "a")
    assert got["jvm"] == [a] * 5
    check_readings(got["text"], a)
    assert (got["deleted"], got["other"], got["a"]) == (2, 3, [2, 3])
    assert "already exists" in got["second"].lower()  # Hive lower-cases: `cs` is `CS`
    assert got["cs"] == [str(tmp_path / "u")] * 3 and got["cs_text"] == [str(tmp_path / "u")] * 2
    assert got["managed"] == ["MANAGED", f"{tmp_path}/warehouse/hdb.db/m", 3] and got["dropped"]
    assert not os.path.exists(tmp_path / "warehouse" / "hdb.db" / "m")


@pytest.mark.slow
def test_hostile_metadata_and_case_from_a_spark_connect_client(tmp_path):
    got = run_script(tmp_path, "connect_trust.py", CONNECT)
    check_readings(got["text"], str(tmp_path / "a"))
    assert "AmbiguousCatalogEntryError" in got["delete_lines"] and "Location" in got["delete_lines"]
    assert "AmbiguousCatalogEntryError" in got["forname_lines"]
    assert (got["deleted"], got["other"]) == (2, 3)  # the other table untouched throughout
    assert (got["cs_deleted"], got["upper"]) == (2, 3)
    assert "DELTA_MISSING_DELTA_TABLE" in got["missing"] and "`Cs`" in got["missing"]  # delta-spark's error
    assert got["managed"] == ["MANAGED", 2]


JVM_SOURCE = """package delta;

public class DefaultSource implements org.apache.spark.sql.sources.RelationProvider,
        org.apache.spark.sql.sources.DataSourceRegister {
    public String shortName() { return "delta"; }
    public org.apache.spark.sql.sources.BaseRelation createRelation(
            org.apache.spark.sql.SQLContext context, scala.collection.immutable.Map<String, String> options) {
        throw new IllegalArgumentException("a JVM delta source: no table at " + options.get("path").get());
    }
}
"""

JVM_DELTA = r"""
import json, sys
from pyspark.sql import SparkSession
spark = (SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
         .config("spark.driver.extraClassPath", sys.argv[2]).getOrCreate())
spark.sparkContext.setLogLevel("ERROR")
import delta_pyds
from delta_pyds.spark.datasource.registration import register_delta_name
out = {"ours": register_delta_name(spark)}
delta_pyds.register(spark)
try:
    spark.read.format("delta").load(sys.argv[1] + "/nothing").schema
except Exception as exc:
    out["read"] = str(exc)[:1000]
print(json.dumps(out))
spark.stop()
"""


@pytest.mark.slow
def test_a_jvm_delta_source_keeps_the_name(tmp_path):
    """A JVM ``delta`` source whose errors echo the path it was given (the probe path names this
    package): the probe is not taken for this package's answer, and ``delta`` stays the JVM's."""
    import pyspark

    javac = shutil.which("javac")
    if javac is None:
        pytest.skip("no javac to build a JVM data source")
    src = tmp_path / "src" / "delta"
    src.mkdir(parents=True)
    (src / "DefaultSource.java").write_text(JVM_SOURCE)
    classes = tmp_path / "classes"
    jars = os.path.join(os.path.dirname(pyspark.__file__), "jars", "*")
    subprocess.run([javac, "-cp", jars, "-d", str(classes), str(src / "DefaultSource.java")], check=True, timeout=300)
    services = classes / "META-INF" / "services"
    services.mkdir(parents=True)
    (services / "org.apache.spark.sql.sources.DataSourceRegister").write_text("delta.DefaultSource\n")
    script = tmp_path / "jvm_delta.py"
    script.write_text(JVM_DELTA)
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, TZ="UTC")
    result = subprocess.run(
        [sys.executable, str(script), str(tmp_path), str(classes)], capture_output=True, text=True, env=env, timeout=900
    )
    assert result.returncode == 0, result.stderr[-4000:]
    got = json.loads(result.stdout.strip().splitlines()[-1])
    assert got["ours"] is False  # was True: the JVM error echoed the probe path, which names delta_pyds
    assert "a JVM delta source: no table at" in got["read"]
