"""Spark's own write calls of a Delta format after ``delta_pyds.register(spark)`` (the front
doors of :mod:`delta_pyds.spark.front_doors.writers`), on the shared classic session and its
in-memory catalog: ``save`` in every save mode and spelling, ``partitionBy``, delta-spark's write
options, the keyword forms, ``spark.sql.sources.default``; ``saveAsTable`` and ``insertInto`` by
name; other formats' writes reach Spark unchanged. Rows are checked against ``deltalake`` and the
log (operations, partition columns) against what delta-spark writes."""

from __future__ import annotations

import json
import os
import uuid

import deltalake
import pytest
from helpers import deltalake_table
from pyspark.errors import AnalysisException
from pyspark.sql.readwriter import DataFrameWriter

import delta_pyds
from delta_pyds.errors import TableExistsError
from delta_pyds.spark.front_doors.patching import original

FORMATS = ["delta", "pydelta"]


def rows(path):
    return sorted(tuple(r.values()) for r in deltalake_table(path).to_pylist())


def log(path):
    """(operation, mode parameter, userMetadata) of each commit, oldest first."""
    out = []
    for h in reversed(deltalake.DeltaTable(path).history()):
        out.append((h["operation"], h.get("operationParameters", {}).get("mode"), h.get("userMetadata")))
    return out


def version(path):
    return deltalake.DeltaTable(path).version()


@pytest.fixture
def df(spark):
    return spark.createDataFrame([(1, "a"), (2, "b")], "id long, p string")


@pytest.fixture
def db(spark, tmp_path):
    name = f"fd_{uuid.uuid4().hex[:8]}"
    spark.sql(f"CREATE DATABASE {name} LOCATION '{tmp_path}/{name}.db'")
    yield name
    spark.sql(f"DROP DATABASE {name} CASCADE")


def entry(spark, db, table):
    row = [r for r in spark.sql(f"SHOW TABLE EXTENDED IN {db} LIKE '{table}'").collect() if r.tableName == table][0]
    info = dict(line.split(": ", 1) for line in row.information.splitlines() if ": " in line)
    return info["Provider"], info["Type"], info["Location"].removeprefix("file:")


@pytest.mark.parametrize("fmt", FORMATS)
def test_save_in_every_mode(spark, df, tmp_path, fmt):
    path = str(tmp_path / "t")
    df.write.format(fmt).save(path)  # Spark's default mode: errorifexists, on a new table
    assert rows(path) == [(1, "a"), (2, "b")]
    with pytest.raises(AnalysisException if fmt == "delta" else Exception) as e:
        df.write.format(fmt).save(path)
    assert "already exist" in str(e.value)
    if fmt == "delta":  # delta-spark's error class, also this package's error
        assert e.value.getCondition() == "DELTA_PATH_EXISTS" and isinstance(e.value, TableExistsError)
        assert e.value.getSqlState() == "42K04"
    for spelling in ("error", "ErrorIfExists", "default"):
        with pytest.raises(Exception, match="already exist"):
            df.write.format(fmt).mode(spelling).save(path)
    df.write.format(fmt).mode("IGNORE").save(path)
    assert version(path) == 0
    df.write.format(fmt).mode("Append").save(path)
    assert rows(path) == [(1, "a"), (1, "a"), (2, "b"), (2, "b")]
    df.limit(1).write.format(fmt).mode("overwrite").save(path)
    assert rows(path) == [(1, "a")]
    assert [op[:2] for op in log(path)][1:] == [("WRITE", "Append"), ("WRITE", "Overwrite")]
    assert log(path)[0][0] == "WRITE"  # (delta-spark's mode parameter there is ErrorIfExists; this package's Append)
    df.write.format(fmt).mode("ignore").save(str(tmp_path / "new"))  # ignore on a new path writes
    assert rows(str(tmp_path / "new")) == [(1, "a"), (2, "b")]
    with pytest.raises(Exception, match="INVALID_SAVE_MODE"):
        df.write.format(fmt).mode("sometimes").save(path)


@pytest.mark.parametrize("fmt", FORMATS)
def test_partition_by_options_and_keyword_forms(spark, df, tmp_path, fmt):
    path = str(tmp_path / "t")
    df.write.save(path, format=fmt, mode="errorifexists", partitionBy="p", userMetadata="first")
    dt = deltalake.DeltaTable(path)
    assert dt.metadata().partition_columns == ["p"]
    assert sorted(os.listdir(path)) == ["_delta_log", "p=a", "p=b"]
    more = spark.createDataFrame([(3, "b", True)], "id long, p string, flag boolean")
    more.write.format(fmt).mode("append").option("mergeSchema", True).partitionBy("p").save(path)
    assert rows(path) == [(1, "a", None), (2, "b", None), (3, "b", True)]
    repl = spark.createDataFrame([(9, "b", False)], "id long, p string, flag boolean")
    repl.write.format(fmt).mode("overwrite").options(replaceWhere="p = 'b'", userMetadata="fix b").save(path)
    assert rows(path) == [(1, "a", None), (9, "b", False)]
    dyn = spark.createDataFrame([(7, "a", None)], "id long, p string, flag boolean")
    dyn.write.format(fmt).mode("overwrite").option("partitionOverwriteMode", "dynamic").save(path)
    assert rows(path) == [(7, "a", None), (9, "b", False)]
    for _ in range(2):  # idempotent: the second run of txn version 1 writes nothing
        df.write.format(fmt).mode("append").option("txnAppId", "job").option("txnVersion", 1).save(path)
    assert len(rows(path)) == 4
    assert [op[2] for op in log(path)][:3] == ["first", None, "fix b"]
    other = str(tmp_path / "u")
    spark.range(10, numPartitions=1).write.format(fmt).option("maxRecordsPerFile", 3).option("path", other).save()
    assert len(deltalake.DeltaTable(other).file_uris()) == 4
    spark.range(2).write.format(fmt).mode("overwrite").option("overwriteSchema", "true").save(path)
    assert rows(path) == [(0,), (1,)] and deltalake.DeltaTable(path).metadata().partition_columns == []


def test_the_default_source_can_be_delta(spark, df, tmp_path):
    path = str(tmp_path / "t")
    spark.conf.set("spark.sql.sources.default", "delta")
    try:
        df.write.save(path)
        df.write.mode("append").save(path)
    finally:
        spark.conf.unset("spark.sql.sources.default")
    assert len(rows(path)) == 4 and os.path.isdir(os.path.join(path, "_delta_log"))
    df.write.save(str(tmp_path / "pq"))  # back to parquet
    assert not os.path.exists(tmp_path / "pq" / "_delta_log") and spark.read.parquet(str(tmp_path / "pq")).count() == 2


@pytest.mark.parametrize("fmt", ["parquet", "csv"])
def test_other_formats_reach_spark_unchanged(spark, df, tmp_path, fmt):
    path = str(tmp_path / fmt)
    df.write.format(fmt).partitionBy("p").save(path)
    with pytest.raises(AnalysisException, match="PATH_ALREADY_EXISTS"):
        df.write.format(fmt).save(path)
    df.write.format(fmt).mode("ignore").save(path)
    df.write.mode("append").format(fmt).partitionBy("p").save(path)
    assert spark.read.format(fmt).load(path).count() == 4
    getattr(df.write.mode("overwrite"), fmt)(path)
    assert spark.read.format(fmt).load(path).count() == 2 and not os.path.exists(os.path.join(path, "_delta_log"))


def test_installing_is_idempotent(spark, df, tmp_path):
    first = DataFrameWriter.save
    delta_pyds.register(spark)
    other = spark.newSession()
    delta_pyds.register(other)
    assert DataFrameWriter.save is first  # nothing wrapped twice
    assert original(DataFrameWriter, "save").__module__ == "pyspark.sql.readwriter"
    path = str(tmp_path / "t")
    other.range(3).write.format("delta").save(path)
    assert rows(path) == [(0,), (1,), (2,)]


@pytest.mark.parametrize("fmt", FORMATS)
def test_save_as_table_in_every_mode(spark, df, db, tmp_path, fmt):
    name = f"{db}.managed"
    df.write.format(fmt).partitionBy("p").saveAsTable(name)
    provider, kind, location = entry(spark, db, "managed")
    assert (provider, kind, location) == ("delta", "MANAGED", f"{tmp_path}/{db}.db/managed")
    assert rows(location) == [(1, "a"), (2, "b")]
    assert deltalake.DeltaTable(location).metadata().partition_columns == ["p"]
    with pytest.raises(AnalysisException, match="TABLE_OR_VIEW_ALREADY_EXISTS") as e:
        df.write.format(fmt).saveAsTable(name)
    assert isinstance(e.value, TableExistsError)
    df.write.format(fmt).mode("ignore").saveAsTable(name)
    df.write.format(fmt).mode("append").saveAsTable(name)
    assert len(rows(location)) == 4
    df.limit(1).write.format(fmt).mode("overwrite").saveAsTable(name)
    assert rows(location) == [(1, "a")]
    assert [op[0] for op in log(location)] == ["CREATE TABLE AS SELECT", "WRITE", "WRITE"]
    ext = str(tmp_path / "ext")
    df.write.format(fmt).mode("overwrite").option("path", ext).saveAsTable(f"{db}.ext")
    assert entry(spark, db, "ext") == ("delta", "EXTERNAL", ext)
    assert [op[0] for op in log(ext)] == ["CREATE OR REPLACE TABLE AS SELECT"]
    df.write.format(fmt).mode("append").option("userMetadata", "m").saveAsTable(f"{db}.other")
    assert rows(entry(spark, db, "other")[2]) == [(1, "a"), (2, "b")]
    assert delta_pyds.read_delta(spark, name=f"{db}.ext").count() == 2


def test_insert_into_by_position(spark, db, tmp_path):
    name = f"{db}.t"
    spark.createDataFrame([(1, "a")], "id long, p string").write.format("delta").saveAsTable(name)
    swapped = spark.createDataFrame([(2, "b")], "x long, y string")  # names differ: by position
    swapped.write.insertInto(name)
    spark.createDataFrame([(3, "c")], "id long, p string").write.mode("append").insertInto(name)
    location = entry(spark, db, "t")[2]
    assert rows(location) == [(1, "a"), (2, "b"), (3, "c")]
    swapped.write.insertInto(name, overwrite=True)
    assert rows(location) == [(2, "b")]
    with pytest.raises(AnalysisException, match="INSERT_COLUMN_ARITY_MISMATCH"):
        spark.range(1).write.insertInto(name)
    with pytest.raises(AnalysisException, match="TABLE_OR_VIEW_NOT_FOUND"):
        swapped.write.format("delta").insertInto(f"{db}.missing")
    with pytest.raises(AnalysisException, match="partitionBy"):
        swapped.write.partitionBy("y").insertInto(name)
    assert [op[:2] for op in log(location)] == [
        ("CREATE TABLE AS SELECT", None),
        ("WRITE", "Append"),
        ("WRITE", "Append"),
        ("WRITE", "Overwrite"),
    ]
    # a parquet table's insertInto is Spark's own
    spark.sql(f"CREATE TABLE {db}.pq (id BIGINT, p STRING) USING parquet")
    swapped.write.insertInto(f"{db}.pq")
    assert [tuple(r) for r in spark.table(f"{db}.pq").collect()] == [(2, "b")]
    assert json.loads(json.dumps(entry(spark, db, "pq")[0])) == "parquet"


def test_write_to_every_mode(spark, db, tmp_path):
    from pyspark.sql import functions as F

    name = f"{db}.v2"
    df = spark.createDataFrame([(1, "a"), (2, "b")], "id long, p string")
    df.writeTo(name).using("delta").partitionedBy("p").tableProperty("delta.appendOnly", "false").create()
    location = entry(spark, db, "v2")[2]
    dt = deltalake.DeltaTable(location)
    assert dt.metadata().partition_columns == ["p"] and dt.metadata().configuration == {"delta.appendOnly": "false"}
    with pytest.raises(AnalysisException, match="TABLE_OR_VIEW_ALREADY_EXISTS"):
        df.writeTo(name).using("delta").create()
    spark.createDataFrame([("c", 3)], "p string, id long").writeTo(name).append()  # by name
    assert rows(location) == [(1, "a"), (2, "b"), (3, "c")]
    spark.createDataFrame([(9, "b")], "id long, p string").writeTo(name).overwrite(F.col("p") == "b")
    assert rows(location) == [(1, "a"), (3, "c"), (9, "b")]
    spark.createDataFrame([(7, "c")], "id long, p string").writeTo(name).overwritePartitions()
    assert rows(location) == [(1, "a"), (7, "c"), (9, "b")]
    spark.range(2).writeTo(name).using("pydelta").replace()
    assert rows(location) == [(0,), (1,)] and deltalake.DeltaTable(location).metadata().partition_columns == []
    ext = str(tmp_path / "ext")
    df.writeTo(f"{db}.ext").using("delta").option("path", ext).createOrReplace()
    assert entry(spark, db, "ext") == ("delta", "EXTERNAL", ext) and rows(ext) == [(1, "a"), (2, "b")]
    with pytest.raises(AnalysisException, match="CANNOT_REPLACE_MISSING_TABLE"):
        df.writeTo(f"{db}.missing").using("delta").replace()
    with pytest.raises(AnalysisException, match="TABLE_OR_VIEW_NOT_FOUND"):
        df.writeTo(f"{db}.missing").append()
    with pytest.raises(ValueError, match="not a column name"):
        df.writeTo(f"{db}.t2").using("delta").partitionedBy(F.years("id")).create()
    assert [op[0] for op in log(location)] == [
        "CREATE TABLE AS SELECT",
        "WRITE",
        "WRITE",
        "WRITE",
        "REPLACE TABLE AS SELECT",
    ]
    assert deltalake.DeltaTable(location).history(3)[-1]["operationParameters"]["predicate"] == "[\"(p = 'b')\"]"
    # a parquet table's writeTo is Spark's own
    df.writeTo(f"{db}.pq").using("parquet").create()
    assert spark.table(f"{db}.pq").count() == 2 and entry(spark, db, "pq")[0] == "parquet"
    with pytest.raises(AnalysisException, match="v1 table"):  # Spark's own refusal, unchanged
        df.writeTo(f"{db}.pq").append()


def test_write_stream_to_table(spark, db, tmp_path):
    source = str(tmp_path / "src")
    spark.createDataFrame([(1, "a"), (2, "b")], "id long, p string").write.format("delta").save(source)
    name = f"{db}.sink"
    stream = spark.readStream.format("delta").load(source)
    query = (
        stream.writeStream.format("delta")
        .partitionBy("p")
        .option("checkpointLocation", str(tmp_path / "chk"))
        .trigger(availableNow=True)
        .toTable(name)
    )
    query.awaitTermination()
    provider, kind, location = entry(spark, db, "sink")
    assert (provider, kind) == ("delta", "MANAGED")
    assert rows(location) == [(1, "a"), (2, "b")]
    assert deltalake.DeltaTable(location).metadata().partition_columns == ["p"]
    assert [op[0] for op in log(location)] == ["CREATE TABLE", "STREAMING UPDATE"]
