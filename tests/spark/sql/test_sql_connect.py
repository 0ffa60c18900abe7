"""delta_pyds.sql from a Spark Connect client (one local Connect server in a subprocess running
one script; its results come back as JSON and are asserted here): every Delta statement of
docs/sql.md, each compared with the same operation through the Python API on a twin table.

Covered: INSERT INTO, INSERT OVERWRITE [REPLACE WHERE]; queries with VERSION AS OF, TIMESTAMP AS
OF, ``delta.`p@v1``` and a join; DELETE, UPDATE; MERGE (USING a table or a subquery, UPDATE SET *
/ INSERT *, [AND] DELETE, WHEN NOT MATCHED BY SOURCE [AND] DELETE | UPDATE, WITH SCHEMA EVOLUTION
adding a nested field); CREATE TABLE, CREATE TABLE IF NOT EXISTS (no commit), CTAS, REPLACE
TABLE, CREATE TABLE <name> USING delta LOCATION (a catalog entry named by later DELETE, MERGE and
SELECT); DESCRIBE HISTORY [LIMIT n], DESCRIBE DETAIL; OPTIMIZE [WHERE] [ZORDER BY], RESTORE
[TABLE] ... TO VERSION | TIMESTAMP AS OF, VACUUM [RETAIN n HOURS] [DRY RUN]; CONVERT TO DELTA
parquet.`p` PARTITIONED BY, GENERATE symlink_format_manifest; ALTER TABLE SET | UNSET
TBLPROPERTIES, SHOW TBLPROPERTIES, ADD | DROP CONSTRAINT (a violating constraint and a violating
INSERT refused), ADD COLUMNS ... FIRST, RENAME COLUMN and DROP COLUMN (column mapping), ALTER
COLUMN ... AFTER | COMMENT | SET NOT NULL | DROP NOT NULL | TYPE (type widening), CLUSTER BY, DROP
FEATURE, SHOW COLUMNS; and the refusal of Delta statements on temporary views over pydelta.
Schemas are compared in the Delta log (reads are nullable and comment-free, as every Spark file
source reads); at the end the two read paths (``format("pydelta")`` and ``read_delta``) agree on
every table the statements changed."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

SCRIPT = r"""
import json, sys
from pyspark.sql import SparkSession
spark = SparkSession.builder.remote("local[1]").config("spark.sql.session.timeZone", "UTC").getOrCreate()
assert type(spark).__module__.startswith("pyspark.sql.connect"), type(spark)
import delta_pyds
from delta_pyds import DeltaTable
delta_pyds.register(spark)
root = sys.argv[1]
write = lambda df, p: delta_pyds.write_delta(df, p, mode="append")
s, a, src = root + "/s", root + "/a", root + "/src"
for p in (s, a):
    write(spark.createDataFrame([(i, f"n{i}") for i in range(6)], "id long, name string"), p)
out = {}
# the second commit: INSERT INTO through delta_pyds.sql on s, write_delta on its twin a
out["insert"] = delta_pyds.sql(spark, f"INSERT INTO delta.`{s}` VALUES (6, 'n6')").collect()[0].num_inserted_rows
write(spark.createDataFrame([(6, "n6")], "id long, name string"), a)
write(spark.createDataFrame([(1, "x"), (9, "y")], "id long, name string"), src)
rows = lambda p: sorted(tuple(r) for r in delta_pyds.read_delta(spark, p).collect())
q = delta_pyds.sql(
    spark,
    f"SELECT a.id, b.name FROM delta.`{s}` VERSION AS OF 0 a JOIN delta.`{src}` b ON a.id = b.id WHERE a.id > :lo",
    {"lo": 0},
)
out["query"] = [tuple(r) for r in q.collect()]
out["delete"] = delta_pyds.sql(spark, f"DELETE FROM delta.`{s}` WHERE id = 2").collect()[0].num_affected_rows
DeltaTable.forPath(spark, a).delete("id = 2")
out["update"] = delta_pyds.sql(spark, f"UPDATE delta.`{s}` SET name = upper(name) WHERE id > 3").collect()[0][0]
DeltaTable.forPath(spark, a).update("id > 3", {"name": "upper(name)"})
m = delta_pyds.sql(
    spark,
    f"MERGE INTO delta.`{s}` t USING delta.`{src}` s ON t.id = s.id "
    "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *",
)
api = (
    DeltaTable.forPath(spark, a).alias("t")
    .merge(delta_pyds.read_delta(spark, src).alias("s"), "t.id = s.id")
    .whenMatchedUpdateAll().whenNotMatchedInsertAll().execute()
)
out["merge_same"] = m.collect() == api.collect()
out["same_rows"] = rows(s) == rows(a)
out["history"] = [r.operation for r in delta_pyds.sql(spark, f"DESCRIBE HISTORY delta.`{s}`").collect()]
delta_pyds.sql(spark, f"ALTER TABLE delta.`{s}` SET TBLPROPERTIES ('k' = 'v')")
out["props"] = {r.key: r.value for r in delta_pyds.sql(spark, f"SHOW TBLPROPERTIES delta.`{s}`").collect()}.get("k")
c1, c2 = root + "/c1", root + "/c2"
delta_pyds.sql(
    spark,
    f"CREATE TABLE delta.`{c1}` (id BIGINT GENERATED ALWAYS AS IDENTITY, name STRING NOT NULL COMMENT 'n') "
    "USING delta PARTITIONED BY (name) TBLPROPERTIES ('k' = 'v')",
)
from delta_pyds.spark.tables import IdentityGenerator
from delta_pyds.table.snapshot import Snapshot
DeltaTable.create(spark).location(c2).addColumn("id", "BIGINT", generatedAlwaysAs=IdentityGenerator()).addColumn(
    "name", "STRING", nullable=False, comment="n"
).partitionedBy("name").property("k", "v").execute()
m1, m2 = Snapshot.load(c1).metadata, Snapshot.load(c2).metadata
out["create_same"] = (m1.schema_string, m1.partition_columns, m1.configuration) == (
    m2.schema_string, m2.partition_columns, m2.configuration
)
delta_pyds.sql(spark, f"CREATE OR REPLACE TABLE delta.`{c1}` USING delta AS SELECT * FROM delta.`{s}`")
out["ctas_same"] = rows(c1) == rows(s)
# temporary views over pydelta: Spark Connect shows no view options, so the path cannot be found
views = {}
spark.read.format("pydelta").load(s).createOrReplaceTempView("v_whole")
spark.read.format("pydelta").load(s).where("id > 1").createOrReplaceTempView("v_filtered")
for v in ("v_whole", "v_filtered"):
    try:
        delta_pyds.sql(spark, f"DELETE FROM {v} WHERE id = 0")
        views[v] = "ran"
    except Exception as e:
        views[v] = [type(e).__name__, "Spark Connect" in str(e), "DELTA_OPERATION_ON_VIEW_NOT_ALLOWED" in str(e)]
out["views"] = views
out["after_views"] = rows(s) == rows(a)
# column positions, DROP FEATURE and nested schema evolution, each against the API on the twin
delta_pyds.sql(spark, f"ALTER TABLE delta.`{s}` ADD COLUMNS (z STRING FIRST)")
DeltaTable.forPath(spark, a).addColumns([("z", "string", None, "FIRST")])
delta_pyds.sql(spark, f"ALTER TABLE delta.`{s}` ALTER COLUMN name AFTER z")
DeltaTable.forPath(spark, a).alterColumn("name", position="AFTER z")
out["positions"] = [delta_pyds.read_delta(spark, p).columns for p in (s, a)]
for p in (s, a):
    DeltaTable.forPath(spark, p).addFeatureSupport("changeDataFeed")
delta_pyds.sql(spark, f"ALTER TABLE delta.`{s}` DROP FEATURE changeDataFeed")
DeltaTable.forPath(spark, a).dropFeatureSupport("changeDataFeed")
out["drop_feature"] = Snapshot.load(s).protocol == Snapshot.load(a).protocol
n1, n2 = root + "/n1", root + "/n2"
write(spark.createDataFrame([(1, (1,))], "id long, st struct<a: int>"), n1)
write(spark.createDataFrame([(1, (2, "x")), (3, (4, "y"))], "id long, st struct<a: int, b: string>"), n2)
delta_pyds.sql(
    spark,
    f"MERGE WITH SCHEMA EVOLUTION INTO delta.`{n1}` t USING delta.`{n2}` s ON t.id = s.id "
    "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *",
)
out["nested"] = sorted([r.id, r.st.a, r.st.b] for r in delta_pyds.read_delta(spark, n1).collect())
# --- every other statement of issue #26, each against the API on a twin (t: SQL, u: API) ---
import datetime as dt, os
from delta_pyds.log.history import history
from delta_pyds.operations.properties import unset_properties
t, u = root + "/t", root + "/u"
for p in (t, u):
    for lo, hi in ((0, 6), (6, 8)):
        df = spark.createDataFrame([(i, f"n{i}", i % 2) for i in range(lo, hi)], "id long, name string, part long")
        delta_pyds.write_delta(df, p, mode="append", partitionBy="part")
ts0 = {h["version"]: h["timestamp"] for h in history(t)}[0]
stamp = dt.datetime.fromtimestamp(ts0 / 1000, dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
ids = lambda df: sorted(r.id for r in df.collect())
out["tt_timestamp"] = [
    ids(delta_pyds.sql(spark, f"SELECT id FROM delta.`{t}` TIMESTAMP AS OF '{stamp}'")),
    ids(delta_pyds.read_delta(spark, t, timestampAsOf=stamp)),
]
out["tt_at_v"] = [
    ids(delta_pyds.sql(spark, f"SELECT id FROM delta.`{t}@v1` WHERE id > 4")),
    ids(delta_pyds.read_delta(spark, t, versionAsOf=1).where("id > 4")),
]
delta_pyds.sql(spark, f"INSERT OVERWRITE delta.`{t}` REPLACE WHERE part = 0 SELECT 100 AS id, 'r' AS name, 0 AS part")
write_ = lambda df, p, **o: delta_pyds.write_delta(df, p, **o)
r100 = spark.createDataFrame([(100, "r", 0)], "id long, name string, part long")
write_(r100, u, mode="overwrite", replaceWhere="part = 0")
out["replace_where"] = [rows(t), rows(t) == rows(u)]
delta_pyds.sql(spark, f"INSERT OVERWRITE delta.`{t}` SELECT * FROM delta.`{t}@v1`")
write_(delta_pyds.read_delta(spark, u, versionAsOf=1), u, mode="overwrite")
out["overwrite"] = [len(rows(t)), rows(t) == rows(u)]
m = delta_pyds.sql(
    spark,
    f"MERGE INTO delta.`{t}` t USING delta.`{src}` s ON t.id = s.id WHEN MATCHED THEN UPDATE SET name = s.name "
    "WHEN NOT MATCHED BY SOURCE AND t.id > 5 THEN DELETE WHEN NOT MATCHED BY SOURCE THEN UPDATE SET name = 'gone'",
)
api = (
    DeltaTable.forPath(spark, u).alias("t").merge(delta_pyds.read_delta(spark, src).alias("s"), "t.id = s.id")
    .whenMatchedUpdate(set={"name": "s.name"}).whenNotMatchedBySourceDelete("t.id > 5")
    .whenNotMatchedBySourceUpdate(set={"name": "'gone'"}).execute()
)
out["by_source"] = [tuple(m.collect()[0]), m.collect() == api.collect(), rows(t) == rows(u), rows(t)]
out["history_limit"] = [
    [(r.version, r.operation) for r in delta_pyds.sql(spark, f"DESCRIBE HISTORY delta.`{t}` LIMIT 2").collect()],
    [(r.version, r.operation) for r in DeltaTable.forPath(spark, u).history(2).collect()],
]
keep = ("format", "partitionColumns", "numFiles", "minReaderVersion", "minWriterVersion")
d1 = delta_pyds.sql(spark, f"DESCRIBE DETAIL delta.`{t}`").collect()[0]
d2 = DeltaTable.forPath(spark, u).detail().collect()[0]
out["detail"] = [[d1[c] for c in keep], [d2[c] for c in keep], d1.location.rstrip("/").endswith("/t")]
# OPTIMIZE WHERE ZORDER BY, RESTORE, VACUUM [RETAIN] [DRY RUN]
o1 = delta_pyds.sql(spark, f"OPTIMIZE delta.`{t}` WHERE part = 1 ZORDER BY (id)").collect()[0].metrics
o2 = DeltaTable.forPath(spark, u).optimize().where("part = 1").executeZOrderBy("id").collect()[0].metrics
out["optimize"] = [[o.numFilesAdded, o.numFilesRemoved] for o in (o1, o2)] + [rows(t) == rows(u)]
o1 = delta_pyds.sql(spark, f"OPTIMIZE delta.`{t}`").collect()[0].metrics
o2 = DeltaTable.forPath(spark, u).optimize().executeCompaction().collect()[0].metrics
out["optimize_all"] = [[o.numFilesAdded, o.numFilesRemoved] for o in (o1, o2)]
r1 = delta_pyds.sql(spark, f"RESTORE TABLE delta.`{t}` TO VERSION AS OF 1").collect()[0]
r2 = DeltaTable.forPath(spark, u).restoreToVersion(1).collect()[0]
out["restore"] = [[r.num_restored_files, r.num_of_files_after_restore] for r in (r1, r2)] + [
    rows(t) == rows(u), len(rows(t))
]
spark.conf.set("spark.databricks.delta.retentionDurationCheck.enabled", "false")
d1 = [r.path for r in delta_pyds.sql(spark, f"VACUUM delta.`{t}` RETAIN 0 HOURS DRY RUN").collect()]
d2 = [r.path for r in DeltaTable.forPath(spark, u).vacuum(0, dryRun=True).collect()]
exists = lambda ps: all(os.path.exists(x.removeprefix("file:")) for x in ps)
out["vacuum_dry"] = [len(d1), len(d2), exists(d1)]
delta_pyds.sql(spark, f"VACUUM delta.`{t}` RETAIN 0 HOURS")
DeltaTable.forPath(spark, u).vacuum(0)
out["vacuum"] = [any(os.path.exists(x.removeprefix("file:")) for x in d1 + d2), rows(t) == rows(u), len(rows(t))]
delta_pyds.sql(spark, f"VACUUM delta.`{t}`")
spark.conf.unset("spark.databricks.delta.retentionDurationCheck.enabled")
# CONVERT TO DELTA, GENERATE
pq1, pq2 = root + "/pq1", root + "/pq2"
for p in (pq1, pq2):
    spark.range(5).selectExpr("id", "id % 2 AS p").write.partitionBy("p").parquet(p)
delta_pyds.sql(spark, f"CONVERT TO DELTA parquet.`{pq1}` PARTITIONED BY (p long)")
DeltaTable.convertToDelta(spark, f"parquet.`{pq2}`", "p long")
out["convert"] = [Snapshot.load(pq1).partition_columns, rows(pq1), rows(pq1) == rows(pq2)]
delta_pyds.sql(spark, f"GENERATE symlink_format_manifest FOR TABLE delta.`{t}`")
DeltaTable.forPath(spark, u).generate("symlink_format_manifest")
def manifest(p):
    found = []
    for d, _, fs in os.walk(os.path.join(p, "_symlink_format_manifest")):
        for f in fs:
            found += [os.path.relpath(os.path.join(d, f), p)] * len(open(os.path.join(d, f)).read().split())
    return sorted(found)
out["generate"] = [manifest(t), manifest(t) == manifest(u)]
# properties, constraints
for p in (t, u):
    DeltaTable.forPath(spark, p).setProperties({"k1": "a", "k2": "b"})
delta_pyds.sql(spark, f"ALTER TABLE delta.`{t}` UNSET TBLPROPERTIES ('k1')")
unset_properties(u, ["k1"])
delta_pyds.sql(spark, f"ALTER TABLE delta.`{t}` UNSET TBLPROPERTIES IF EXISTS ('nope')")
conf = lambda p: {k: v for k, v in Snapshot.load(p).metadata.configuration.items() if not k.startswith("delta.")}
out["unset"] = [conf(t), conf(t) == conf(u)]
delta_pyds.sql(spark, f"ALTER TABLE delta.`{t}` ADD CONSTRAINT idPositive CHECK (id >= 0)")
DeltaTable.forPath(spark, u).addConstraint("idPositive", "id >= 0")
cons = lambda p: {k: v for k, v in Snapshot.load(p).metadata.configuration.items() if k.startswith("delta.constraints")}
out["add_constraint"] = [cons(t), cons(t) == cons(u)]
try:
    delta_pyds.sql(spark, f"ALTER TABLE delta.`{t}` ADD CONSTRAINT small CHECK (id < 3)")
    out["bad_constraint"] = "ran"
except Exception as e:
    out["bad_constraint"] = [type(e).__name__, cons(t) == cons(u)]
try:
    delta_pyds.sql(spark, f"INSERT INTO delta.`{t}` VALUES (-1, 'neg', 0)")
    out["violating_insert"] = "ran"
except Exception as e:
    out["violating_insert"] = type(e).__name__
delta_pyds.sql(spark, f"ALTER TABLE delta.`{t}` DROP CONSTRAINT idPositive")
DeltaTable.forPath(spark, u).dropConstraint("idPositive")
delta_pyds.sql(spark, f"ALTER TABLE delta.`{t}` DROP CONSTRAINT IF EXISTS idPositive")
out["drop_constraint"] = [cons(t), cons(t) == cons(u)]
# column changes on an unpartitioned pair: column mapping, comments, nullability, widening, clustering
k, w = root + "/k", root + "/w"
for p in (k, w):
    df = spark.createDataFrame([(i, f"n{i}", i, "x") for i in range(4)], "id long, name string, v int, extra string")
    delta_pyds.write_delta(df, p, **{"delta.columnMapping.mode": "name", "delta.enableTypeWidening": "true"})
delta_pyds.sql(spark, f"ALTER TABLE delta.`{k}` RENAME COLUMN name TO label")
DeltaTable.forPath(spark, w).renameColumn("name", "label")
delta_pyds.sql(spark, f"ALTER TABLE delta.`{k}` DROP COLUMN extra")
DeltaTable.forPath(spark, w).dropColumns("extra")
delta_pyds.sql(spark, f"ALTER TABLE delta.`{k}` ALTER COLUMN label COMMENT 'the label'")
DeltaTable.forPath(spark, w).alterColumn("label", comment="the label")
delta_pyds.sql(spark, f"ALTER TABLE delta.`{k}` ALTER COLUMN id SET NOT NULL")
DeltaTable.forPath(spark, w).alterColumn("id", nullable=False)
# the log's schema (reads are nullable and without comments, as every Spark file source reads)
fields = lambda p: [
    [f["name"], f["type"], f["nullable"], f["metadata"].get("comment"), f["metadata"].get("delta.typeChanges")]
    for f in json.loads(Snapshot.load(p).metadata.schema_string)["fields"]
]
out["not_null"] = [fields(k), fields(k) == fields(w)]
delta_pyds.sql(spark, f"ALTER TABLE delta.`{k}` ALTER COLUMN id DROP NOT NULL")
DeltaTable.forPath(spark, w).alterColumn("id", nullable=True)
delta_pyds.sql(spark, f"ALTER TABLE delta.`{k}` ALTER COLUMN v TYPE BIGINT")
DeltaTable.forPath(spark, w).alterColumn("v", dataType="bigint")
out["columns"] = [fields(k), fields(k) == fields(w), rows(k), rows(k) == rows(w)]
delta_pyds.sql(spark, f"ALTER TABLE delta.`{k}` CLUSTER BY (label, id)")
DeltaTable.forPath(spark, w).clusterBy("label", "id")
clus = lambda p: DeltaTable.forPath(spark, p).detail().collect()[0].clusteringColumns
out["cluster"] = [clus(k), clus(w)]
out["show_columns"] = [
    [r[0] for r in delta_pyds.sql(spark, f"SHOW COLUMNS IN delta.`{k}`").collect()],
    DeltaTable.forPath(spark, w).toDF().columns,
]
# CREATE TABLE IF NOT EXISTS (no commit), REPLACE TABLE, and a session name from CREATE TABLE ... LOCATION
vers = lambda p: Snapshot.load(p).version
before = [vers(k), vers(w)]
delta_pyds.sql(spark, f"CREATE TABLE IF NOT EXISTS delta.`{k}` (x INT) USING delta")
DeltaTable.createIfNotExists(spark).location(w).addColumn("x", "INT").execute()
out["if_not_exists"] = [before, [vers(k), vers(w)], fields(k) == fields(w)]
delta_pyds.sql(spark, f"REPLACE TABLE delta.`{k}` (id INT NOT NULL, w DOUBLE COMMENT 'c') USING delta")
DeltaTable.replace(spark).location(w).addColumn("id", "INT", nullable=False).addColumn(
    "w", "DOUBLE", comment="c"
).execute()
out["replace"] = [fields(k), fields(k) == fields(w), rows(k), vers(k) == vers(w)]
delta_pyds.sql(spark, f"CREATE TABLE orders USING delta LOCATION '{t}'")
n = delta_pyds.sql(spark, "DELETE FROM orders WHERE id = 5").collect()[0].num_affected_rows
DeltaTable.forPath(spark, u).delete("id = 5")
out["session_name"] = [n, delta_pyds.sql(spark, "SELECT count(*) AS c FROM orders").collect()[0].c, rows(t) == rows(u)]
m = delta_pyds.sql(
    spark,
    f"MERGE INTO orders t USING (SELECT id, 'sub' AS name FROM delta.`{src}` WHERE id < 5) s ON t.id = s.id "
    "WHEN MATCHED AND t.part = 1 THEN DELETE",
)
api = (
    DeltaTable.forPath(spark, u).alias("t")
    .merge(delta_pyds.read_delta(spark, src).where("id < 5").selectExpr("id", "'sub' name").alias("s"), "t.id = s.id")
    .whenMatchedDelete("t.part = 1").execute()
)
out["merge_subquery"] = [tuple(m.collect()[0]), m.collect() == api.collect(), rows(t) == rows(u)]
r1 = delta_pyds.sql(spark, f"RESTORE delta.`{t}` TO TIMESTAMP AS OF '{stamp}'").collect()[0]
ts0_u = {h["version"]: h["timestamp"] for h in history(u)}[0]  # the twin's own version 0, written later
stamp_u = dt.datetime.fromtimestamp(ts0_u / 1000, dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
r2 = DeltaTable.forPath(spark, u).restoreToTimestamp(stamp_u).collect()[0]
out["restore_ts"] = [r1.num_of_files_after_restore, r2.num_of_files_after_restore, rows(t), rows(t) == rows(u)]
# the two read paths agree on every table the statements changed
ds_rows = lambda p: sorted(tuple(r) for r in spark.read.format("pydelta").load(p).collect())
out["paths_agree"] = [ds_rows(p) == rows(p) for p in (s, t, u, k, pq1, n1)]
print(json.dumps(out))
spark.stop()
"""


@pytest.mark.slow
def test_sql_from_a_spark_connect_client(tmp_path):
    script = tmp_path / "connect_sql.py"
    script.write_text(SCRIPT)
    env = dict(os.environ, SPARK_TESTING="1", PYSPARK_PYTHON=sys.executable, TZ="UTC")
    result = subprocess.run(
        [sys.executable, str(script), str(tmp_path)], capture_output=True, text=True, env=env, timeout=900
    )
    assert result.returncode == 0, result.stderr[-3000:]
    got = json.loads(result.stdout.strip().splitlines()[-1])
    assert got["query"] == [[1, "x"]]
    assert got["insert"] == 1
    assert got["delete"] == 1 and got["update"] == 3
    assert got["merge_same"] and got["same_rows"]
    assert got["history"] == ["MERGE", "UPDATE", "DELETE", "WRITE", "WRITE"]
    assert got["props"] == "v"
    assert got["create_same"] and got["ctas_same"]
    assert got["views"] == {
        "v_whole": ["TemporaryViewError", True, False],
        "v_filtered": ["TemporaryViewError", False, True],
    }
    assert got["after_views"]
    assert got["positions"] == [["z", "name", "id"], ["z", "name", "id"]]
    assert got["drop_feature"]
    assert got["nested"] == [[1, 2, "x"], [3, 4, "y"]]
    # the rest of issue #26's statements, each against the Python API on a twin table
    assert got["tt_timestamp"] == [list(range(6))] * 2
    assert got["tt_at_v"] == [[5, 6, 7]] * 2
    assert got["replace_where"] == [[[1, "n1", 1], [3, "n3", 1], [5, "n5", 1], [7, "n7", 1], [100, "r", 0]], True]
    assert got["overwrite"] == [8, True]
    gone = [[i, "x" if i == 1 else "gone", i % 2] for i in range(6)]
    assert got["by_source"] == [[8, 6, 2, 0], True, True, gone]
    assert got["history_limit"] == [[[4, "MERGE"], [3, "WRITE"]]] * 2
    assert got["detail"] == [["delta", ["part"], 2, 1, 2], ["delta", ["part"], 2, 1, 2], True]
    assert got["optimize"] == [[1, 1], [1, 1], True]
    assert got["optimize_all"][0] == got["optimize_all"][1]
    assert got["restore"] == [[4, 4], [4, 4], True, 8]
    n_dry, n_dry_api, all_there = got["vacuum_dry"]
    assert n_dry == n_dry_api > 0 and all_there
    assert got["vacuum"] == [False, True, 8]
    assert got["convert"] == [["p"], [[i, i % 2] for i in range(5)], True]
    manifests = ["_symlink_format_manifest/part=0/manifest"] * 2 + ["_symlink_format_manifest/part=1/manifest"] * 2
    assert got["generate"] == [manifests, True]
    assert got["unset"] == [{"k2": "b"}, True]
    assert got["add_constraint"] == [{"delta.constraints.idpositive": "id >= 0"}, True]
    assert got["bad_constraint"] == ["ConstraintViolationError", True]
    assert got["violating_insert"] == "ConstraintViolationError"
    assert got["drop_constraint"] == [{}, True]
    label = ["label", "string", True, "the label", None]
    assert got["not_null"] == [[["id", "long", False, None, None], label, ["v", "integer", True, None, None]], True]
    widened = ["v", "long", True, None, [{"fromType": "integer", "toType": "long"}]]
    assert got["columns"] == [
        [["id", "long", True, None, None], label, widened],
        True,
        [[i, f"n{i}", i] for i in range(4)],
        True,
    ]
    assert got["cluster"] == [["label", "id"]] * 2
    assert got["show_columns"] == [["id", "label", "v"]] * 2
    assert got["if_not_exists"] == [[7, 7], [7, 7], True]
    assert got["replace"] == [[["id", "integer", False, None, None], ["w", "double", True, "c", None]], True, [], True]
    assert got["session_name"] == [1, 7, True]
    assert got["merge_subquery"] == [[1, 0, 1, 0], True, True]
    assert got["restore_ts"][0] == got["restore_ts"][1]
    assert got["paths_agree"] == [True] * 6
    assert got["restore_ts"][2:] == [[[i, f"n{i}", i % 2] for i in range(6)], True]
