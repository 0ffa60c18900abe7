"""delta-spark parity of ``DeltaTable``: argument checking, the result shapes of merge,
optimize and vacuum, merge schema evolution, upgradeTableProtocol, add/dropFeatureSupport,
convertToDelta, generate and calls from other threads — written as a delta-spark user
calls them, checked on the log and with deltalake (delta-rs)."""

from __future__ import annotations

import datetime
import glob
import os
import threading

import pyarrow as pa
import pytest
from helpers import deltalake_table
from pyspark.sql import functions as F

from delta_pyds import DeltaTable
from delta_pyds.errors import ColumnNotFoundError, FeatureDropError, UnsupportedFeatureError
from delta_pyds.protocol import features
from delta_pyds.table.snapshot import Snapshot
from delta_pyds.write.plan import commit_arrow


def _table(path, n=10, files=1, **options):
    for i in range(files):
        ids = list(range(i * n, (i + 1) * n))
        commit_arrow(
            path,
            pa.table({"id": pa.array(ids, pa.int64()), "p": pa.array([j % 2 for j in ids], pa.int64())}),
            options={"partitionBy": "p", **options},
        )
    return path


def _ids(spark, path):
    return sorted(r.id for r in spark.read.format("pydelta").load(path).collect())


# --------------------------------------------------------------- argument checks
def test_argument_checks_like_delta_spark(spark, tmp_path):
    dt = DeltaTable.forPath(spark, _table(str(tmp_path / "t")))
    src = spark.createDataFrame([(1, 0)], "id long, p long")
    with pytest.raises(TypeError, match="condition"):
        dt.delete(1)
    with pytest.raises(TypeError, match="condition"):
        dt.update(1, {"id": "1"})
    with pytest.raises(ValueError, match="'set' cannot be None"):
        dt.update("id = 1")
    with pytest.raises(TypeError, match="set"):
        dt.update(set=["id"])
    with pytest.raises(TypeError, match="set"):
        dt.update(set={"id": 1})  # values must be Column or SQL strings, as in delta-spark
    with pytest.raises(TypeError, match="set"):
        dt.update(set={1: "1"})
    with pytest.raises(ValueError, match="'source' in merge cannot be None"):
        dt.merge(None, "t.id = s.id")
    with pytest.raises(TypeError, match="source"):
        dt.merge([(1, 0)], "t.id = s.id")
    with pytest.raises(ValueError, match="'condition'"):
        dt.merge(src, None)
    with pytest.raises(TypeError, match="condition"):
        dt.merge(src, 1)
    builder = dt.alias("t").merge(src.alias("s"), "t.id = s.id")
    with pytest.raises(TypeError, match="set"):
        builder.whenMatchedUpdate(set={"id": 1})
    with pytest.raises(ValueError, match="cannot be None"):
        builder.whenMatchedUpdate()
    with pytest.raises(TypeError, match="values"):
        builder.whenNotMatchedInsert(values={"id": 2})
    with pytest.raises(TypeError, match="condition"):
        builder.whenMatchedDelete(condition=5)
    with pytest.raises(TypeError, match="version"):
        dt.restoreToVersion("0")
    with pytest.raises(ValueError, match="version"):  # delta-spark raises ValueError here: both hold
        dt.restoreToVersion("0")
    with pytest.raises(TypeError, match="timestamp"):
        dt.restoreToTimestamp(12342323232)
    with pytest.raises(ValueError, match="readerVersion"):
        dt.upgradeTableProtocol("1", 2)
    with pytest.raises(ValueError, match="writerVersion"):
        dt.upgradeTableProtocol(1, [3])
    # the dict as the only positional argument is the condition: set is missing (delta-spark's
    # python/delta/tables.py checks the mapping first: ValueError "... cannot be None")
    with pytest.raises(ValueError, match="^'set' cannot be None$"):
        dt.update({"id": "1"})
    with pytest.raises(ValueError, match="^'set' in whenMatchedUpdate cannot be None$"):
        builder.whenMatchedUpdate({"id": "s.id"})
    with pytest.raises(ValueError, match="^'values' in whenNotMatchedInsert cannot be None$"):
        builder.whenNotMatchedInsert({"id": "s.id"})
    with pytest.raises(ValueError, match="^'set' in whenNotMatchedBySourceUpdate cannot be None$"):
        builder.whenNotMatchedBySourceUpdate({"id": "1"})
    for bad in (12345, [12345], {}, []):
        with pytest.raises(ValueError, match="featureName needs to be a string"):
            dt.addFeatureSupport(bad)
        with pytest.raises(ValueError, match="featureName needs to be a string"):
            dt.dropFeatureSupport(bad)
    with pytest.raises(ValueError, match="truncateHistory needs to be a boolean"):
        dt.dropFeatureSupport("appendOnly", truncateHistory="yes")
    with pytest.raises(TypeError):
        dt.optimize().where(1)
    with pytest.raises(TypeError):
        dt.vacuum("1")
    assert Snapshot.load(dt._path).version == 0  # nothing was committed
    # Columns are accepted wherever SQL strings are
    dt.update(F.col("id") == 1, {"id": F.lit(100)})
    dt.delete(F.col("id") == 2)
    assert _ids(spark, dt._path) == [0, 3, 4, 5, 6, 7, 8, 9, 100]


# ------------------------------------------------------------------------- merge
def test_merge_returns_delta_spark_metrics_and_evolves_schema(spark, tmp_path):
    path = _table(str(tmp_path / "t"))
    dt = DeltaTable.forPath(spark, path)
    src = spark.createDataFrame([(1, 1, "one"), (2, 0, "two"), (50, 0, "new")], "id long, p long, tag string")
    res = dt.alias("t").merge(src.alias("s"), "t.id = s.id").whenMatchedUpdateAll().whenNotMatchedInsertAll().execute()
    assert res.columns == ["num_affected_rows", "num_updated_rows", "num_deleted_rows", "num_inserted_rows"]
    assert tuple(res.collect()[0]) == (3, 2, 0, 1)
    assert spark.read.format("pydelta").load(path).columns == ["id", "p"]  # no evolution: tag ignored
    # nothing changes: zeros, and no commit
    v = Snapshot.load(path).version
    none = dt.alias("t").merge(src.alias("s"), "t.id = s.id and s.id < 0").whenMatchedDelete().execute()
    assert tuple(none.collect()[0]) == (0, 0, 0, 0) and Snapshot.load(path).version == v
    # withSchemaEvolution: the new source column is added, old rows get null
    res = (
        dt.alias("t")
        .merge(src.alias("s"), "t.id = s.id")
        .withSchemaEvolution()
        .whenMatchedUpdateAll()
        .whenNotMatchedInsertAll()
        .execute()
    )
    assert tuple(res.collect()[0]) == (3, 3, 0, 0)
    df = spark.read.format("pydelta").load(path)
    assert df.columns == ["id", "p", "tag"]
    tags = {r.id: r.tag for r in df.collect()}
    assert tags[1] == "one" and tags[50] == "new" and tags[3] is None and len(tags) == 11
    dl = deltalake_table(path)
    assert dict(zip(dl.column("id").to_pylist(), dl.column("tag").to_pylist())) == tags
    # explicit set of a new column with evolution; without it the column is unknown
    src2 = spark.createDataFrame([(3, 1, 7)], "id long, p long, score int")
    with pytest.raises(ValueError, match="score"):
        dt.alias("t").merge(src2.alias("s"), "t.id = s.id").whenMatchedUpdate(set={"score": "s.score"}).execute()
    dt.alias("t").merge(src2.alias("s"), "t.id = s.id").withSchemaEvolution().whenMatchedUpdate(
        set={"score": "s.score"}
    ).execute()
    scores = {r.id: r.score for r in spark.read.format("pydelta").load(path).collect()}
    assert scores[3] == 7 and scores[1] is None


# ---------------------------------------------------------------------- optimize
def test_optimize_result_shape_and_errors(spark, tmp_path):
    path = _table(str(tmp_path / "t"), n=4, files=3)
    dt = DeltaTable.forPath(spark, path)
    with pytest.raises(ValueError, match="non-partition column"):
        dt.optimize().where("id = 1").executeCompaction()
    with pytest.raises(ValueError, match="partition column"):
        dt.optimize().executeZOrderBy("p")
    res = dt.optimize().where("p = 0").executeCompaction()
    assert res.columns == ["path", "metrics"]
    row = res.collect()[0]
    assert row.path == Snapshot.load(path).table_root
    m = row.metrics
    assert (m.numFilesAdded, m.numFilesRemoved, m.partitionsOptimized, m.totalConsideredFiles) == (1, 3, 1, 3)
    assert m.filesRemoved.totalFiles == 3 and m.filesAdded.totalFiles == 1 and m.zOrderStats is None
    assert m.filesRemoved.totalSize > 0 and m.filesAdded.min == m.filesAdded.max
    assert m.numBatches == 1 and m.startTimeMs <= m.endTimeMs
    # nothing to do: the same shape, zero counts
    again = dt.optimize().where("p = 0").executeCompaction().collect()[0].metrics
    assert (again.numFilesAdded, again.numFilesRemoved, again.numBatches) == (0, 0, 0)
    z = dt.optimize().executeZOrderBy("id").collect()[0].metrics
    assert z.zOrderStats is not None and z.zOrderStats.strategyName == "all" and z.numFilesRemoved == 4
    assert _ids(spark, path) == list(range(12))


# ------------------------------------------------------------------------ vacuum
def test_vacuum_deletes_by_default_with_the_retention_check(spark, tmp_path):
    path = _table(str(tmp_path / "t"), n=4, files=3)
    dt = DeltaTable.forPath(spark, path)
    dt.optimize().executeCompaction()
    data = lambda: sorted(glob.glob(os.path.join(path, "p=*", "*.parquet")))  # noqa: E731
    assert len(data()) == 8
    with pytest.raises(ValueError, match="retentionDurationCheck"):
        dt.vacuum(0)
    dry = dt.vacuum(0, dryRun=True, enforceRetention=False).collect()
    assert len(dry) == 6 and all(r.path.startswith("file:" + path) for r in dry) and len(data()) == 8
    spark.conf.set("spark.databricks.delta.retentionDurationCheck.enabled", "false")
    try:
        res = dt.vacuum(0)  # delta-spark's call: deletes
    finally:
        spark.conf.unset("spark.databricks.delta.retentionDurationCheck.enabled")
    assert res.columns == ["path"] and [r.path for r in res.collect()] == ["file:" + Snapshot.load(path).table_root]
    assert len(data()) == 2
    ops = [r.operation for r in dt.history(2).collect()]
    assert ops == ["VACUUM END", "VACUUM START"]
    assert _ids(spark, path) == list(range(12))
    assert sorted(deltalake_table(path).column("id").to_pylist()) == list(range(12))


# ------------------------------------------------------------ protocol, features
def test_upgrade_table_protocol_like_delta_spark(spark, tmp_path):
    path = _table(str(tmp_path / "t"))
    dt = DeltaTable.forPath(spark, path)
    assert dt.upgradeTableProtocol(1, 3) is None
    p = Snapshot.load(path).protocol
    assert (p.min_reader_version, p.min_writer_version) == (1, 3)
    v = Snapshot.load(path).version
    dt.upgradeTableProtocol(1, 2)  # lower than the table's: a no-op, not an error
    dt.upgradeTableProtocol(1, 3)
    assert Snapshot.load(path).version == v
    dt.upgradeTableProtocol(2, 5)
    p = Snapshot.load(path).protocol
    assert (p.min_reader_version, p.min_writer_version) == (2, 5)


def test_add_and_drop_feature_support(spark, tmp_path):
    path = _table(str(tmp_path / "t"), n=6, files=2)
    dt = DeltaTable.forPath(spark, path)
    dt.addFeatureSupport("deletionVectors")
    snap = Snapshot.load(path)
    assert "deletionVectors" in snap.protocol.reader_features and snap.protocol.min_reader_version == 3
    with pytest.raises(UnsupportedFeatureError, match="madeUpFeature"):
        dt.addFeatureSupport("madeUpFeature")
    with pytest.raises(TypeError):
        dt.dropFeatureSupport("deletionVectors", truncateHistory="yes")
    dt.setProperties({"delta.enableDeletionVectors": "true"})
    dt.delete("id = 3")
    assert any(Snapshot.load(path).files.column("deletion_vector").to_pylist())
    # first call: DVs turned off and purged, but the history still has them
    with pytest.raises(FeatureDropError, match="truncateHistory=True"):
        dt.dropFeatureSupport("deletionVectors")
    snap = Snapshot.load(path)
    assert not any(snap.files.column("deletion_vector").to_pylist())
    assert snap.configuration["delta.enableDeletionVectors"] == "false"
    assert features.is_enabled(snap.protocol, "deletionVectors")
    assert _ids(spark, path) == [i for i in range(12) if i != 3]
    # a writer feature drops at once
    dt.addFeatureSupport("changeDataFeed")
    dt.dropFeatureSupport("changeDataFeed")
    assert not features.is_enabled(Snapshot.load(path).protocol, "changeDataFeed")
    with pytest.raises(FeatureDropError, match="does not have"):
        dt.dropFeatureSupport("changeDataFeed")


# -------------------------------------------------------------- convert, generate
def test_convert_spark_written_parquet_to_delta(spark, tmp_path):
    root = str(tmp_path / "pq")
    df = spark.createDataFrame(
        [(1, "a", datetime.datetime(2024, 1, 1, 12, 0), 0), (2, None, None, 1), (3, "c", None, 1)],
        "id long, name string, ts timestamp, part int",
    )
    df.write.partitionBy("part").parquet(root)  # Spark's own Parquet, INT96 timestamps
    dt = DeltaTable.convertToDelta(spark, f"parquet.`{root}`", "part int")
    assert isinstance(dt, DeltaTable)
    out = spark.read.format("pydelta").load(root)
    assert sorted(tuple(r) for r in out.select("id", "name", "ts", "part").collect()) == sorted(
        tuple(r) for r in df.collect()
    )
    assert dict(out.dtypes)["ts"] == "timestamp"
    assert dt.history(1).collect()[0].operation == "CONVERT"
    dl = deltalake_table(root)
    assert sorted(dl.column("id").to_pylist()) == [1, 2, 3]
    # the converted table takes writes like any other
    spark.createDataFrame([(4, "d", None, 0)], df.schema).write.format("pydelta").mode("append").save(root)
    assert sorted(r.id for r in spark.read.format("pydelta").load(root).collect()) == [1, 2, 3, 4]
    assert sorted(deltalake_table(root).column("id").to_pylist()) == [1, 2, 3, 4]
    # an existing Delta table is returned as is; other formats and names are refused
    v = Snapshot.load(root).version
    DeltaTable.convertToDelta(spark, f"parquet.`{root}`", "part int")
    assert Snapshot.load(root).version == v
    with pytest.raises(ValueError, match="parquet"):
        DeltaTable.convertToDelta(spark, f"orc.`{root}`")
    with pytest.raises(ValueError, match="parquet.`path`"):
        DeltaTable.convertToDelta(spark, "some_table")


def test_generate_symlink_manifest(spark, tmp_path):
    path = _table(str(tmp_path / "t"))
    DeltaTable.forPath(spark, path).generate("symlink_format_manifest")
    manifests = sorted(glob.glob(os.path.join(path, "_symlink_format_manifest", "p=*", "manifest")))
    assert [os.path.basename(os.path.dirname(m)) for m in manifests] == ["p=0", "p=1"]
    listed = sorted(line for m in manifests for line in open(m).read().split())
    files = sorted("file:" + p for p in glob.glob(os.path.join(path, "p=*", "*.parquet")))
    assert listed == files
    # Spark reads exactly the table's rows through the manifest's files
    assert sorted(r.id for r in spark.read.parquet(*[x[len("file:") :] for x in listed]).collect()) == list(range(10))
    with pytest.raises(ValueError, match="symlink_format_manifest"):
        DeltaTable.forPath(spark, path).generate("hive")


# -------------------------------------------------------------------- threads
def test_calls_from_another_thread_run_under_the_tables_session(spark, tmp_path):
    path = _table(str(tmp_path / "t"))
    other = spark.newSession()
    jvm = spark._jvm.SparkSession
    seen = {}

    def active():
        a = jvm.getActiveSession()
        return a.get() if a.isDefined() else None

    def work():
        seen["start"] = active()  # a new thread has no active session
        dt = DeltaTable.forPath(other, path)  # no Spark job: only the call itself can set it
        seen["forPath"] = active()
        dt.upgradeTableProtocol(1, 3)
        seen["upgrade"] = active()
        seen["ids"] = sorted(r.id for r in other.read.format("pydelta").load(path).collect())
        dt.delete("id = 0")

    t = threading.Thread(target=work)
    t.start()
    t.join()
    assert seen["start"] is None
    assert seen["forPath"].equals(other._jsparkSession) and seen["upgrade"].equals(other._jsparkSession)
    assert seen["ids"] == list(range(10))
    assert _ids(spark, path) == list(range(1, 10))


def test_restore_returns_delta_spark_metrics(spark, tmp_path):
    path = _table(str(tmp_path / "t"))
    dt = DeltaTable.forPath(spark, path)
    dt.delete("id < 5")
    res = dt.restoreToVersion(0)
    assert res.columns == [
        "table_size_after_restore",
        "num_of_files_after_restore",
        "num_removed_files",
        "num_restored_files",
        "removed_files_size",
        "restored_files_size",
    ]
    row = res.collect()[0]
    assert (row.num_of_files_after_restore, row.num_restored_files) == (2, 2)
    assert _ids(spark, path) == list(range(10))
    assert dt.history(1).collect()[0].operationMetrics["numRestoredFiles"] == "2"


def test_merge_schema_evolution_with_column_mapping_and_change_feed(spark, tmp_path):
    path = _table(str(tmp_path / "t"), **{"delta.columnMapping.mode": "name", "delta.enableChangeDataFeed": "true"})
    dt = DeltaTable.forPath(spark, path)
    src = spark.createDataFrame([(1, 1, "one"), (70, 0, "new")], "id long, p long, tag string")
    res = (
        dt.alias("t")
        .merge(src.alias("s"), "t.id = s.id")
        .withSchemaEvolution()
        .whenMatchedUpdateAll()
        .whenNotMatchedInsertAll()
        .execute()
    )
    assert tuple(res.collect()[0]) == (2, 1, 0, 1)
    snap = Snapshot.load(path)
    tag = snap.schema.field("tag")
    assert tag.metadata.get("delta.columnMapping.physicalName")  # a mapped new column
    rows = {r.id: r.tag for r in spark.read.format("pydelta").load(path).collect()}
    assert rows[1] == "one" and rows[70] == "new" and rows[2] is None and len(rows) == 11
    changes = (
        spark.read.format("pydelta")
        .option("readChangeFeed", "true")
        .option("startingVersion", snap.version)
        .load(path)
        .collect()
    )
    kinds = sorted((r.id, r._change_type, r.tag) for r in changes)
    assert kinds == [(1, "update_postimage", "one"), (1, "update_preimage", None), (70, "insert", "new")]


# ------------------------------------------------- set keys and unresolved names (#24)
STRUCT_AB = pa.struct([("a", pa.int64()), ("b", pa.int64())])


def _struct_table(path):
    commit_arrow(
        path,
        pa.table(
            {
                "id": pa.array([1, 2, 3], pa.int64()),
                "my col": pa.array([1, 2, 3], pa.int64()),
                "st": pa.array(
                    [{"a": i, "b": 0} for i in (1, 2, 3)], pa.struct([("a", pa.int64()), ("b", pa.int64())])
                ),
            }
        ),
        options={"delta.columnMapping.mode": "name"},
    )
    return path


def _rows_both_ways(spark, path):
    ours = sorted((r.id, r["my col"], r.st.a, r.st.b) for r in DeltaTable.forPath(spark, path).toDF().collect())
    theirs = deltalake_table(path).to_pylist()
    assert ours == sorted((r["id"], r["my col"], r["st"]["a"], r["st"]["b"]) for r in theirs)
    return ours


def test_update_and_merge_accept_quoted_and_nested_set_keys_like_delta_spark(spark, tmp_path):
    dt = DeltaTable.forPath(spark, _struct_table(str(tmp_path / "t")))
    dt.update(set={"`my col`": "`my col` * 10"})  # no condition: every row
    assert _rows_both_ways(spark, dt._path) == [(1, 10, 1, 0), (2, 20, 2, 0), (3, 30, 3, 0)]
    dt.update("id = 1", {"st.b": "st.a + 100", "ST.`a`": "-1"})  # struct fields, any case
    dt.update(condition="id = 2", set={"`st`.b": "7"})
    assert _rows_both_ways(spark, dt._path) == [(1, 10, -1, 101), (2, 20, 2, 7), (3, 30, 3, 0)]
    src = spark.createDataFrame([(3, 5)], "id long, v long")
    dt.alias("t").merge(src.alias("s"), "t.id = s.id").whenMatchedUpdate(
        set={"t.st.b": "s.v", "`my col`": "s.v * 2"}
    ).execute()
    dt.alias("t").merge(src.alias("s"), "t.id = s.id").whenMatchedUpdate(set={"st.a": "s.v + 1"}).execute()
    assert _rows_both_ways(spark, dt._path) == [(1, 10, -1, 101), (2, 20, 2, 7), (3, 10, 6, 5)]
    with pytest.raises(ColumnNotFoundError, match=r"st\.nope is not a column of struct column st"):
        dt.update(set={"st.nope": "1"})
    with pytest.raises(ValueError, match="conflicts with st"):
        dt.update(set={"st": "st", "st.b": "1"})
    with pytest.raises(ValueError, match="unclosed backtick"):
        dt.update(set={"`my col": "1"})


def test_unresolved_names_in_dml_suggest_only_table_columns(spark, tmp_path):
    from pyspark.errors import AnalysisException

    dt = DeltaTable.forPath(spark, _table(str(tmp_path / "t")))
    src = spark.createDataFrame([(1, 0)], "id long, p long")
    calls = [
        lambda: dt.delete("nope = 1"),
        lambda: dt.update("nope = 1", {"id": "1"}),
        lambda: dt.update("id = 1", {"id": "nope + 1"}),
        lambda: dt.alias("t").merge(src.alias("s"), "t.nope = s.id").whenMatchedDelete().execute(),
        lambda: dt.alias("t").merge(src.alias("s"), "t.id = s.id").whenMatchedUpdate(set={"id": "nope"}).execute(),
    ]
    for call in calls:
        with pytest.raises(AnalysisException) as e:
            call()
        assert "nope" in str(e.value) and "__pydelta" not in str(e.value), str(e.value)[:500]
    assert _ids(spark, dt._path) == list(range(10))
    # the checks do not refuse a valid merge: inserts and not-matched-by-source clauses
    new = spark.createDataFrame([(1, 0), (42, 0)], "id long, p long")
    dt.alias("t").merge(new.alias("s"), "t.id = s.id").whenNotMatchedInsert(
        condition="s.id > 40", values={"id": "s.id", "p": "s.p"}
    ).whenNotMatchedBySourceDelete("t.id >= 9").execute()
    assert _ids(spark, dt._path) == list(range(9)) + [42]


# ------------------------------------------- the parity differences of issue 26
def test_issue26_parity_messages_as_delta_spark_tests_expect(spark, tmp_path):
    """The messages and error classes delta-spark's own Python and Scala tests look for
    (test_deltatable.py, DeltaTableSuite), asserted as those tests do (substring)."""
    path = str(tmp_path / "t")
    for v in range(3):
        df = spark.createDataFrame([("a", v), ("b", v)], "key string, value long")
        df.write.format("pydelta").mode("append").option("partitionBy", "key").save(path)
    dt = DeltaTable.forPath(spark, path)
    with pytest.raises(UnsupportedFeatureError) as err:
        dt.addFeatureSupport("abc")
    assert "DELTA_UNSUPPORTED_FEATURES_IN_CONFIG" in str(err.value)
    with pytest.raises(UnsupportedFeatureError) as err:
        dt.dropFeatureSupport("abc")
    assert "DELTA_FEATURE_DROP_UNSUPPORTED_CLIENT_FEATURE" in str(err.value)
    with pytest.raises(ValueError) as err:
        dt.restoreToTimestamp("05/04/1999")
    assert "The provided timestamp ('05/04/1999') cannot be converted to a valid timestamp" in str(err.value)
    with pytest.raises(TypeError) as err:
        dt.restoreToTimestamp(12342323232)
    assert "timestamp needs to be a string but got '<class 'int'>'" in str(err.value)
    with pytest.raises(TypeError) as err:
        dt.restoreToVersion("0")
    assert "version needs to be an int but got '<class 'str'>'" in str(err.value)
    # optimize().where() on a data column: accepted by where(), raised when executed
    builder = dt.optimize().where("value = 1")
    with pytest.raises(ValueError) as err:
        builder.executeCompaction()
    assert "Predicate references non-partition column 'value'. Only the partition columns may be referenced: [key]" in (
        str(err.value)
    )
    assert Snapshot.load(path).version == 2  # nothing committed
    # the predicate in the history is spelled as given (delta-spark: ["key = 'a'"])
    dt.optimize().where("key = 'a'").executeCompaction()
    assert dt.history(1).collect()[0].operationParameters["predicate"] == "[\"key = 'a'\"]"
    # already held before issue 26's parity work: a lower protocol is a no-op, a wrong
    # dataType is delta-spark's TypeError
    before = Snapshot.load(path).protocol
    assert dt.upgradeTableProtocol(1, 1) is None
    assert Snapshot.load(path).protocol == before
    with pytest.raises(TypeError):
        DeltaTable.create(spark).location(str(tmp_path / "b")).addColumn("a", 1)
