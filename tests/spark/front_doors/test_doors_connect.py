"""The read front doors and ``spark.sql`` of test_reads.py from a Spark Connect client (one local
Connect server in a subprocess running one script; its results come back as JSON): statements that
are not Delta's reach Spark's ``sql`` with the same text, args and kwargs (a recording wrapper of the
original) and give Spark's rows; Delta statements through ``spark.sql`` agree with ``delta_pyds.sql``
on a twin table; reads by name with time travel and the change feed, batch and streaming; the
errors users catch as ``AnalysisException``; ``writeStream.format("delta").start(path)`` on the native
sink, exactly once across a replayed batch, and ``toTable(name)``."""

from __future__ import annotations

import json
import os
import subprocess
import sys

SCRIPT = r"""
import json, os, sys
from pyspark.sql import SparkSession
from pyspark.errors import AnalysisException
spark = SparkSession.builder.remote("local[1]").config("spark.sql.session.timeZone", "UTC").getOrCreate()
assert type(spark).__module__.startswith("pyspark.sql.connect"), type(spark)
import delta_pyds
from delta_pyds import DeltaTable
from delta_pyds.spark.front_doors import sql_door
root = sys.argv[1]
delta_pyds.register(spark)
out = {}
rows = lambda df: sorted(tuple(r) for r in df.collect())
# the door over a recording wrapper of Spark's own sql
door, original, calls = spark.sql, spark.sql.__delta_pyds_original__, []
def recording(sqlQuery, args=None, **kwargs):
    calls.append((sqlQuery, args, kwargs))
    return original(sqlQuery, args, **kwargs)
spark.sql = recording
sql_door.install(spark)
original("CREATE TABLE pq (id INT) USING parquet")
original("INSERT INTO pq VALUES (1), (2), (3)")
frame = spark.range(3)
same, every_call = [], []
for text, args, kwargs in [
    ("SELECT 1 AS x", None, {}),
    ("SELECT * FROM pq WHERE id > :lo", {"lo": 1}, {}),
    ("SELECT id FROM {df} WHERE id > ?", [0], {"df": frame}),
]:
    calls.clear()
    got = rows(spark.sql(text, args, **kwargs))
    every_call += calls
    user = [c for c in calls if not c[0].startswith("SHOW TABLE EXTENDED")]
    same.append(len(user) == 1 and user[0][0] == text and user[0][1] is args
                and all(user[0][2][k] is v for k, v in kwargs.items()) and got == rows(original(text, args, **kwargs)))
out["same"] = same
out["select1_calls"] = len([c for c in every_call if c[0] == "SELECT 1 AS x"])  # once, and no lookup for it
spark.sql = door
# Delta statements through spark.sql, a twin through delta_pyds.sql
a, b = root + "/a", root + "/b"
for p in (a, b):
    delta_pyds.write_delta(spark.createDataFrame([(i, f"n{i}") for i in range(4)], "id long, v string"), p)
agree = []
for text in ["INSERT INTO delta.`{p}` VALUES (4, 'n4')", "UPDATE delta.`{p}` SET v = 'u' WHERE id = 1",
             "DELETE FROM delta.`{p}` WHERE id = 0",
             "MERGE INTO delta.`{p}` t USING (SELECT 2L AS id, 'm' AS v) s ON t.id = s.id"
             " WHEN MATCHED THEN UPDATE SET *"]:
    agree.append(spark.sql(text.format(p=a)).collect() == delta_pyds.sql(spark, text.format(p=b)).collect())
out["agree"] = agree
out["rows"] = rows(spark.sql(f"SELECT * FROM delta.`{a}`"))
out["twin"] = rows(delta_pyds.read_delta(spark, b))
out["history"] = [r.operation for r in spark.sql(f"DESCRIBE HISTORY delta.`{a}`").collect()]
# reads by name
spark.sql("CREATE TABLE t (id BIGINT, v STRING) USING delta TBLPROPERTIES (delta.enableChangeDataFeed = true)")
spark.sql("INSERT INTO t VALUES (1, 'a'), (2, 'b')")
spark.sql("UPDATE t SET v = 'B' WHERE id = 2")
out["table"] = rows(spark.table("t"))
out["read_table"] = rows(spark.read.format("delta").table("t"))
out["v1"] = rows(spark.read.format("delta").option("versionAsOf", 1).table("t"))
cdf = spark.read.format("delta").option("readChangeFeed", "true").option("startingVersion", 2).table("t")
out["cdf"] = sorted((r.id, r.v, r._change_type) for r in cdf.collect())
q = spark.readStream.table("t").writeStream.format("memory").queryName("doors_q").trigger(availableNow=True).start()
q.awaitTermination(120)
out["stream"] = rows(spark.sql("SELECT * FROM doors_q"))
out["parquet_table"] = rows(spark.table("pq"))
# writeStream.format("delta").start(path): the native sink (foreachBatch in a server-side worker),
# run twice with Spark's last commit log entry removed in between (the replay commits nothing)
def native_stream():
    q = (spark.readStream.table("t").writeStream.format("delta").option("checkpointLocation", root + "/ck")
         .trigger(availableNow=True).start(root + "/streamed"))
    q.awaitTermination(300)
    return q
q = native_stream()
os.remove(root + "/ck/commits/0")
os.remove(root + "/ck/commits/.0.crc")
native_stream()
streamed = root + "/streamed"
q2 = (spark.readStream.table("t").writeStream.format("delta").option("checkpointLocation", root + "/ck2")
      .trigger(availableNow=True).toTable("streamed_t"))  # a new managed table, then start at its location
q2.awaitTermination(300)
out["to_table"] = [q2.lastProgress["sink"]["description"].split("[")[0], rows(spark.table("streamed_t"))]
out["native_stream"] = [q.lastProgress["sink"]["description"].split("[")[0],
                        rows(delta_pyds.read_delta(spark, streamed)),
                        [r.operation for r in DeltaTable.forPath(spark, streamed).history().collect()]]
# format("delta").load through Spark's Parquet reader: _metadata columns
loaded = spark.read.format("delta").load(a).select("id", "_metadata.file_name", "_metadata.file_path")
out["metadata"] = sorted((r.id, r.file_path.endswith("/" + r.file_name)) for r in loaded.collect())
# errors
os.makedirs(root + "/empty")
def caught(f):
    try:
        f()
        return None
    except AnalysisException as exc:
        return str(exc)[:6000]  # a data source error names its cause after the traceback
    except Exception as exc:
        return "NOT AN AnalysisException: " + type(exc).__name__ + " " + str(exc)[:300]
out["forPath"] = caught(lambda: DeltaTable.forPath(spark, root + "/empty"))
out["forName"] = caught(lambda: DeltaTable.forName(spark, "missing_t"))
out["sql_missing"] = caught(lambda: spark.sql(f"SELECT * FROM delta.`{root}/empty`").collect())
out["load_missing"] = caught(lambda: spark.read.format("delta").load(root + "/empty").collect())
print(json.dumps(out))
spark.stop()
"""


def test_doors_from_a_spark_connect_client(tmp_path):
    script = tmp_path / "doors_connect.py"
    script.write_text(SCRIPT)
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, TZ="UTC")
    env.pop("SPARK_REMOTE", None)
    result = subprocess.run(
        [sys.executable, str(script), str(tmp_path)], capture_output=True, text=True, env=env, timeout=900, cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr[-4000:]
    got = json.loads(result.stdout.strip().splitlines()[-1])
    assert got["same"] == [True, True, True] and got["select1_calls"] == 1
    assert got["agree"] == [True] * 4
    assert got["rows"] == got["twin"] == [[1, "u"], [2, "m"], [3, "n3"], [4, "n4"]]
    assert got["history"][:2] == ["MERGE", "DELETE"]
    assert got["table"] == got["read_table"] == [[1, "a"], [2, "B"]]
    assert got["v1"] == [[1, "a"], [2, "b"]]
    assert got["cdf"] == [[2, "B", "update_postimage"], [2, "b", "update_preimage"]]
    assert got["stream"] == [[1, "a"], [2, "B"]]
    assert got["parquet_table"] == [[1], [2], [3]]
    assert got["native_stream"] == ["ForeachBatchSink", [[1, "a"], [2, "B"]], ["STREAMING UPDATE"]]
    assert got["to_table"] == ["ForeachBatchSink", [[1, "a"], [2, "B"]]]
    assert got["metadata"] == [[i, True] for i in (1, 2, 3, 4)]
    assert got["forPath"].startswith("[DELTA_MISSING_DELTA_TABLE] `")
    assert got["forPath"].endswith("is not a Delta table.")
    assert got["forName"] == "[DELTA_MISSING_DELTA_TABLE] `missing_t` is not a Delta table."
    assert got["sql_missing"] is not None and not got["sql_missing"].startswith("NOT AN")
    assert got["load_missing"] is not None and not got["load_missing"].startswith("NOT AN")
    assert "is not a Delta table" in got["load_missing"] or "TableNotFoundError" in got["load_missing"]
