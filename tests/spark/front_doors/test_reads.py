"""Spark's own read front doors and ``spark.sql`` after ``delta_pyds.register(spark)`` on the shared
classic session (the Spark Connect side: test_doors_connect.py): reads by catalog name with time
travel and change-feed options, batch and streaming; ``spark.sql`` running Delta's statements as
``delta_pyds.sql`` runs them (a twin table through ``delta_pyds.sql`` is the oracle, and deltalake
reads the result) while every other statement reaches Spark's ``sql`` with the same text, args and
kwargs (a recording wrapper of the original) and gives Spark's rows or Spark's error; the errors
users catch as ``AnalysisException``; and a session with a JVM ``delta`` source gets no door."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid

import pytest
from helpers import adds_of, deltalake_table
from pyspark.errors import AnalysisException as ErrorsAnalysisException
from pyspark.sql.utils import AnalysisException

import delta_pyds
from delta_pyds import DeltaTable, NotADeltaTableError, TableNotFoundError
from delta_pyds.spark.front_doors import sql_door


@pytest.fixture
def db(spark, tmp_path):
    name = f"fd_{uuid.uuid4().hex[:8]}"
    spark.sql(f"CREATE DATABASE {name} LOCATION '{tmp_path}/{name}.db'")
    yield name
    spark.sql(f"DROP DATABASE {name} CASCADE")


@pytest.fixture
def recorded(spark):
    """``spark.sql``'s door over a recording wrapper of Spark's original ``sql``: the calls that
    reached Spark, as (text, args, kwargs) objects."""
    door = spark.sql
    original = door.__delta_pyds_original__
    calls = []

    def recording(sqlQuery, args=None, **kwargs):
        calls.append((sqlQuery, args, kwargs))
        return original(sqlQuery, args, **kwargs)

    spark.sql = recording
    sql_door.install(spark)
    try:
        yield calls, original
    finally:
        spark.sql = door


def _rows(df):
    return sorted(tuple(r) for r in df.collect())


def test_non_delta_statements_reach_spark_unchanged(spark, db, recorded):
    calls, original = recorded
    original(f"CREATE TABLE {db}.pq (id INT, v STRING) USING parquet")
    original(f"INSERT INTO {db}.pq VALUES (1, 'a'), (2, 'b'), (3, 'c')")
    calls.clear()
    assert spark.sql("SELECT 1 AS x").collect() == original("SELECT 1 AS x").collect()
    assert calls == [("SELECT 1 AS x", None, {})]  # no look-up, no conf read: one call, as given
    frame = spark.range(5)
    cases = [
        (f"SELECT * FROM {db}.pq WHERE id > :lo", {"lo": 1}, {}),
        (f"SELECT v FROM {db}.pq WHERE id = ?", [2], {}),
        ("SELECT id FROM {df} WHERE id > {lo}", None, {"df": frame, "lo": 2}),
        (f"SELECT a.id FROM {db}.pq a JOIN {{df}} b ON a.id = b.id", None, {"df": frame}),
        (f"INSERT INTO {db}.pq VALUES (:i, 'd')", {"i": 4}, {}),
        (f"SHOW TABLES IN {db}", None, {}),
        (f"DESCRIBE TABLE {db}.pq", None, {}),
    ]
    for text, args, kwargs in cases:
        calls.clear()
        df = spark.sql(text, args, **kwargs)
        user = [c for c in calls if not c[0].startswith("SHOW TABLE EXTENDED")]  # the catalog look-ups
        assert len(user) == 1 and user[0][0] == text and user[0][1] is args, (text, calls)
        assert user[0][2] == kwargs and all(user[0][2][k] is v for k, v in kwargs.items())
        if not text.startswith("INSERT"):
            assert _rows(df) == _rows(original(text, args, **kwargs)), text
    assert _rows(spark.table(f"{db}.pq")) == [(1, "a"), (2, "b"), (3, "c"), (4, "d")]
    # Spark's own error, unchanged, for a statement Spark refuses on a non-Delta table
    with pytest.raises(Exception) as ours:
        spark.sql(f"DELETE FROM {db}.pq WHERE id = 1").collect()
    with pytest.raises(Exception) as sparks:
        original(f"DELETE FROM {db}.pq WHERE id = 1").collect()
    assert type(ours.value) is type(sparks.value) and str(ours.value) == str(sparks.value)
    calls.clear()
    spark.sql("DROP TABLE IF EXISTS no_such_table_here")
    assert calls == [("DROP TABLE IF EXISTS no_such_table_here", None, {})]


def test_the_check_costs_nothing_for_a_statement_without_tables():
    """The door's decision for ``SELECT 1``: a regular-expression search, no tokenizing (timed
    against a no-op original, so Spark's own time is not in it)."""

    class Fake:
        def sql(self, sqlQuery, args=None, **kwargs):
            return sqlQuery

    fake = Fake()
    sql_door.install(fake)
    n = 2000
    start = time.perf_counter()
    for _ in range(n):
        fake.sql("SELECT 1")
    per_call = (time.perf_counter() - start) / n
    assert per_call < 50e-6, per_call  # measured ~1-2 us; a Spark SELECT 1 takes milliseconds


def test_delta_statements_through_spark_sql(spark, tmp_path):
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    for p in (a, b):
        delta_pyds.write_delta(spark.createDataFrame([(i, f"n{i}") for i in range(5)], "id long, v string"), p)
    statements = [
        "INSERT INTO delta.`{p}` VALUES (5, 'n5')",
        "UPDATE delta.`{p}` SET v = upper(v) WHERE id > 3",
        "DELETE FROM delta.`{p}` WHERE id = 0",
        "MERGE INTO delta.`{p}` t USING (SELECT 1L AS id, 'm' AS v UNION ALL SELECT 9L, 'z') s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *",
        "ALTER TABLE delta.`{p}` SET TBLPROPERTIES ('k' = 'v')",
        "OPTIMIZE delta.`{p}`",
    ]
    for text in statements:
        got = spark.sql(text.format(p=a)).collect()
        want = delta_pyds.sql(spark, text.format(p=b)).collect()
        if not text.startswith("OPTIMIZE"):
            assert got == want, text
    rows = _rows(spark.sql(f"SELECT * FROM delta.`{a}`"))
    assert rows == _rows(delta_pyds.read_delta(spark, b))
    assert rows == sorted((r["id"], r["v"]) for r in deltalake_table(a).to_pylist())
    assert _rows(spark.sql(f"SELECT * FROM delta.`{a}` VERSION AS OF 0")) == [(i, f"n{i}") for i in range(5)]
    history = [r.operation for r in spark.sql(f"DESCRIBE HISTORY delta.`{a}`").collect()]
    assert {"MERGE", "DELETE", "UPDATE", "SET TBLPROPERTIES"} <= set(history) and history[-1] == "WRITE"
    props = {r.key: r.value for r in spark.sql(f"SHOW TBLPROPERTIES delta.`{a}`").collect()}
    assert props["k"] == "v"
    assert spark.sql(f"VACUUM '{a}' RETAIN 169 HOURS").collect()[0].path.endswith("/a")
    spark.sql(f"RESTORE TABLE delta.`{a}` TO VERSION AS OF 1")
    assert _rows(spark.sql(f"SELECT * FROM delta.`{a}`")) == [(i, f"n{i}") for i in range(6)]


def test_reads_by_name(spark, db):
    name = f"{db}.t"
    cdf = "TBLPROPERTIES (delta.enableChangeDataFeed = true)"
    spark.sql(f"CREATE TABLE {name} (id BIGINT, v STRING) USING delta {cdf}")
    spark.sql(f"INSERT INTO {name} VALUES (1, 'a'), (2, 'b')")  # v1
    spark.sql(f"UPDATE {name} SET v = 'B' WHERE id = 2")  # v2
    now = [(1, "a"), (2, "B")]
    assert _rows(spark.table(name)) == now
    assert _rows(spark.read.table(name)) == now
    assert _rows(spark.read.format("delta").table(name)) == now
    assert _rows(spark.read.format("delta").option("versionAsOf", 1).table(name)) == [(1, "a"), (2, "b")]
    assert spark.read.option("versionAsOf", 0).table(name).count() == 0
    ts = DeltaTable.forName(spark, name).history().where("version = 1").first().timestamp
    assert _rows(spark.read.option("timestampAsOf", str(ts)).table(name)) == [(1, "a"), (2, "b")]
    changes = (
        spark.read.format("delta")
        .option("readChangeFeed", "true")
        .option("startingVersion", 2)
        .option("endingVersion", 2)
        .table(name)
    )
    assert sorted((r.id, r.v, r._change_type, r._commit_version) for r in changes.collect()) == [
        (2, "B", "update_postimage", 2),
        (2, "b", "update_preimage", 2),
    ]
    location = DeltaTable.forName(spark, name).detail().first().location
    by_path = spark.read.format("delta").option("readChangeFeed", "true").option("startingVersion", 1).load(location)
    assert by_path.count() == 4  # two inserts, a pre- and a post-image
    # streaming by name, plain and change feed
    for reader, want in (
        (spark.readStream.table(name), now),
        (spark.readStream.format("delta").option("readChangeFeed", "true").option("startingVersion", 2), None),
    ):
        df = reader if want is not None else reader.table(name)
        q = df.writeStream.format("memory").queryName(f"q_{uuid.uuid4().hex[:6]}").trigger(availableNow=True).start()
        q.awaitTermination(120)
        got = spark.sql(f"SELECT * FROM {q.name}")
        if want is not None:
            assert _rows(got) == want
        else:
            assert sorted(r._change_type for r in got.collect()) == ["update_postimage", "update_preimage"]


def _scan_kinds(df):
    plan = df._jdf.queryExecution().executedPlan().toString()
    return ("parquet" if "FileScan parquet" in plan else "") + ("python" if "(Python)" in plan else "")


def test_format_delta_load_reads_through_sparks_parquet_reader(spark, tmp_path):
    path = str(tmp_path / "t")
    spark.range(6).selectExpr("id", "id % 2 AS p").write.format("delta").partitionBy("p").save(path)
    spark.range(6, 8).selectExpr("id", "id % 2 AS p").write.format("delta").mode("append").save(path)
    files = sorted(a["path"].rsplit("/", 1)[-1] for v in (0, 1) for a in adds_of(path, v))
    loads = {
        "load(path)": spark.read.format("delta").load(path),
        "option(path)": spark.read.format("delta").option("path", path).load(),
        "load(format=)": spark.read.load(path, format="delta"),
        "versionAsOf": spark.read.format("delta").option("versionAsOf", 0).load(path),
    }
    for door, df in loads.items():
        assert _scan_kinds(df) == "parquet", door
        got = df.select("id", "p", "_metadata.file_path", "_metadata.file_name").collect()
        assert {r.file_name for r in got} <= set(files) and all(r.file_path.endswith(r.file_name) for r in got)
        assert all(f"/p={r.p}/" in r.file_path for r in got), door
        want = range(6) if door == "versionAsOf" else range(8)
        assert sorted(r.id for r in got) == list(want), door
    # the Python data source: format("pydelta"), a schema given, an option the scan does not read
    assert _scan_kinds(spark.read.format("pydelta").load(path)) == "python"
    assert _scan_kinds(spark.read.format("delta").schema("id LONG, p LONG").load(path)) == "python"
    # (the data source warns of the option by name, from its Python worker)
    assert _scan_kinds(spark.read.format("delta").option("notAnOption", "1").load(path)) == "python"


def test_other_names_and_formats_are_sparks(spark, db):
    spark.sql(f"CREATE TABLE {db}.pq (id INT) USING parquet")
    spark.sql(f"INSERT INTO {db}.pq VALUES (7)")
    assert _rows(spark.table(f"{db}.pq")) == [(7,)] and _rows(spark.read.table(f"{db}.pq")) == [(7,)]
    delta_pyds.write_delta(spark.range(3), name=f"{db}.d")
    spark.sql(f"USE {db}")
    try:
        spark.range(9, 10).createOrReplaceTempView("d")  # a temporary view shadows the table, as in Spark
        assert _rows(spark.table("d")) == [(9,)]
        spark.catalog.dropTempView("d")
        assert _rows(spark.table("d")) == [(0,), (1,), (2,)]
    finally:
        spark.sql("USE default")
    with pytest.raises(Exception, match="TABLE_OR_VIEW_NOT_FOUND"):
        spark.table(f"{db}.missing")
    with pytest.raises(Exception, match="CatalogTableReadError|TABLE_OR_VIEW"):  # another format: Spark's own
        spark.read.format("parquet").table(f"{db}.d").collect()


def test_errors_users_catch_as_analysis_exception(spark, tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(AnalysisException, match=r"^\[PATH_NOT_FOUND\] Path does not exist: file:.*/missing\.$"):
        spark.read.load(path=str(tmp_path / "missing"), format="delta")
    with pytest.raises(ErrorsAnalysisException, match=r"^\[DELTA_MISSING_DELTA_TABLE\] `.*/empty` is not a Delta"):
        spark.read.format("delta").load(str(empty))
    with pytest.raises(TableNotFoundError) as e:
        DeltaTable.forPath(spark, str(empty))
    assert isinstance(e.value, AnalysisException) and e.value.getCondition() == "DELTA_MISSING_DELTA_TABLE"
    assert str(e.value) == f"[DELTA_MISSING_DELTA_TABLE] `{empty}` is not a Delta table."
    with pytest.raises(AnalysisException, match=r"`no_db_x`.`t` is not a Delta table\.$"):
        DeltaTable.forName(spark, "no_db_x.t")
    spark.range(1).createOrReplaceTempView("fd_view")
    with pytest.raises(NotADeltaTableError) as e:
        DeltaTable.forName(spark, "fd_view")
    assert isinstance(e.value, AnalysisException)
    with pytest.raises(AnalysisException):
        spark.sql(f"SELECT * FROM delta.`{empty}`")
    with pytest.raises(AnalysisException):
        spark.sql(f"DESCRIBE HISTORY delta.`{empty}`")


JAVA = """
package fakedelta;
public class FakeDelta implements org.apache.spark.sql.sources.DataSourceRegister,
    org.apache.spark.sql.sources.RelationProvider {
  public String shortName() { return "delta"; }
  public org.apache.spark.sql.sources.BaseRelation createRelation(
      org.apache.spark.sql.SQLContext ctx, scala.collection.immutable.Map<String, String> p) {
    throw new IllegalStateException("the JVM delta source answered");
  }
}
"""

JVM_SESSION = r"""
import sys
from pyspark.sql import SparkSession
from pyspark.sql.readwriter import DataFrameReader
builder = SparkSession.builder.master("local[1]").config("spark.jars", sys.argv[1])
spark = builder.config("spark.ui.enabled", "false").getOrCreate()
before = (DataFrameReader.table, DataFrameReader.load)
import delta_pyds
delta_pyds.register(spark)
assert not hasattr(spark.sql, "__delta_pyds_original__"), "spark.sql changed"
assert "sql" not in vars(spark) and "table" not in vars(spark)
assert (DataFrameReader.table, DataFrameReader.load) == before, "reader methods changed"
try:
    spark.read.format("delta").load("/tmp/x").schema
except Exception as exc:
    assert "the JVM delta source answered" in str(exc), exc
print("NO DOORS")
"""


def test_no_door_where_a_jvm_delta_source_exists(tmp_path):
    import pyspark

    (tmp_path / "src" / "fakedelta").mkdir(parents=True)
    (tmp_path / "src" / "fakedelta" / "FakeDelta.java").write_text(JAVA)
    jars = os.path.join(os.path.dirname(pyspark.__file__), "jars", "*")
    classes = tmp_path / "classes"
    subprocess.run(
        ["javac", "-cp", jars, "-d", str(classes), str(tmp_path / "src" / "fakedelta" / "FakeDelta.java")], check=True
    )
    services = classes / "META-INF" / "services"
    services.mkdir(parents=True)
    (services / "org.apache.spark.sql.sources.DataSourceRegister").write_text("fakedelta.FakeDelta\n")
    jar = tmp_path / "fakedelta.jar"
    subprocess.run(["jar", "cf", str(jar), "-C", str(classes), "."], check=True)
    script = tmp_path / "jvm_session.py"
    script.write_text(JVM_SESSION)
    out = subprocess.run([sys.executable, str(script), str(jar)], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0 and "NO DOORS" in out.stdout, out.stderr[-3000:]
