"""The Spark-native read path (delta_pyds.read_delta, DeltaTable.toDF) against the pydelta
data source: the same rows and column types on every test table, time travel, options,
predicates, deletion vectors, column mapping, hostile partition values and the fallback."""

from __future__ import annotations

import logging
import os
import re
import shutil

import pytest
from conftest import DATA, table_path
from helpers import spark_rows
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType, MapType, StructField, StructType

import delta_pyds
from delta_pyds import DeltaTable, read_delta
from delta_pyds.errors import DeltaError
from delta_pyds.read.native_plan import spark_file_uri, spark_root_uri
from delta_pyds.spark.native.engine import NativeReadUnavailable

ALL_TABLES = sorted(
    os.path.relpath(os.path.dirname(d), DATA) for d, _, _ in os.walk(DATA) if os.path.basename(d) == "_delta_log"
)
# tables Spark's reader cannot serve: read through the data source (and refused by
# native="require")
FALLBACK = {
    "kernel-rs/type-widening": "byte_decimal (byte -> decimal(4,1))",
}


def test_every_test_table_is_listed():
    from helpers import INTEROP_TABLES

    assert len(ALL_TABLES) > 100
    assert set(INTEROP_TABLES) <= set(ALL_TABLES)
    assert "kernel-rs/type-widening" in ALL_TABLES


def nullable(dtype):
    """A Spark type with every nested field nullable (Spark's file sources read so)."""
    if isinstance(dtype, StructType):
        return StructType([StructField(f.name, nullable(f.dataType), True) for f in dtype.fields])
    if isinstance(dtype, ArrayType):
        return ArrayType(nullable(dtype.elementType), True)
    if isinstance(dtype, MapType):
        return MapType(nullable(dtype.keyType), nullable(dtype.valueType), True)
    return dtype


def types(df):
    return [(f.name, nullable(f.dataType)) for f in df.schema.fields]


def same(native, source):
    assert types(native) == types(source)
    assert spark_rows(native) == spark_rows(source)


def uses_spark_parquet(df) -> bool:
    """Whether Spark's own Parquet scan reads the DataFrame (a Python data source lists no
    input files)."""
    return bool(df.inputFiles())


@pytest.mark.parametrize("name", ALL_TABLES)
def test_native_equals_data_source_on_every_table(spark, name):
    path = table_path(name)
    try:
        source = spark.read.format("pydelta").load(path)
        expected = spark_rows(source)
    except Exception as exc:  # a table the source refuses: the native path refuses it too
        with pytest.raises((DeltaError, ValueError)) as native_exc:
            spark_rows(read_delta(spark, path))
        # the same package error (the native path raises it as delta-spark's AnalysisException subclass)
        own = next(c for c in type(native_exc.value).__mro__ if c.__module__ == "delta_pyds.errors")
        assert isinstance(exc, own) or own.__name__ in str(exc)
        return
    if name in FALLBACK:
        with pytest.raises(NativeReadUnavailable, match=FALLBACK[name].replace("(", r"\(").replace(")", r"\)")):
            read_delta(spark, path, native="require")
        native = read_delta(spark, path)
    else:
        native = read_delta(spark, path, native="require")
    assert types(native) == types(source)
    assert spark_rows(native) == expected


def test_to_df_is_native_and_reads_the_table(spark):
    path = table_path("delta-rs/delta-0.8.0-partitioned")
    df = DeltaTable.forPath(spark, path).toDF()
    assert uses_spark_parquet(df)
    same(df, spark.read.format("pydelta").load(path))
    assert delta_pyds.read_delta is read_delta or callable(delta_pyds.read_delta)


def test_time_travel_by_version_and_timestamp(spark, copy_table):
    path = copy_table("delta-rs/simple_table")
    for v in range(5):
        native = read_delta(spark, path, versionAsOf=v)
        assert uses_spark_parquet(native)
        same(native, spark.read.format("pydelta").option("versionAsOf", v).load(path))
    # commit timestamps are the commit files' modification times here: one day apart
    day = 86400
    for v in range(5):
        t = 1_700_000_000 + v * day
        os.utime(os.path.join(path, "_delta_log", f"{v:020d}.json"), (t, t))
    when = "2023-11-16 22:13:20+00:00"  # 1_700_000_000 + 2 days: version 2
    same(
        read_delta(spark, path, timestampAsOf=when),
        spark.read.format("pydelta").option("versionAsOf", 2).load(path),
    )
    with pytest.raises(DeltaError, match="before the earliest"):
        read_delta(spark, path, timestampAsOf="2020-01-01 00:00:00+00:00")


def test_columns_option_and_partition_only_projection(spark):
    path = table_path("delta-rs/delta-0.8.0-partitioned")
    native = read_delta(spark, path, columns="value,year")
    assert native.columns == ["value", "year"]
    same(native, spark.read.format("pydelta").option("columns", "value,year").load(path))
    only_partitions = read_delta(spark, path, columns="year,month")
    same(only_partitions, spark.read.format("pydelta").option("columns", "year,month").load(path))
    with pytest.raises(ValueError, match="nope"):
        read_delta(spark, path, columns="value,nope")


def test_where_prunes_files_and_still_filters_rows(spark, caplog):
    path = table_path("delta-rs/delta-0.8.0-partitioned")
    source = spark.read.format("pydelta").load(path)
    with caplog.at_level(logging.INFO, logger="delta_pyds.spark.native.read"):
        native = read_delta(spark, path, where="year = '2021' and value > '4'")
    assert "kept 3 of 6 files" in caplog.text
    expected = source.where("year = '2021' and value > '4'")
    same(native, expected)
    assert native.count() > 0
    # a glob of the kept files' names: Spark lists exactly them, and needs no per-row filter
    assert len(native.inputFiles()) == 3
    assert "file_path" not in native._jdf.queryExecution().optimizedPlan().toString()
    # a Column condition is applied by Spark only
    same(read_delta(spark, path, where=F.col("value") == "5"), source.where("value = '5'"))


def test_large_tables_keep_the_per_row_file_filter(spark, monkeypatch):
    """Beyond MAX_GLOB_FILES the listing is pruned (and rows filtered) by _metadata.file_path."""
    import delta_pyds.spark.native.read as native_read

    monkeypatch.setattr(native_read, "MAX_GLOB_FILES", 0)
    path = table_path("delta-rs/delta-0.8.0-partitioned")
    native = read_delta(spark, path, where="year = '2021'")
    plan = native._jdf.queryExecution().optimizedPlan().toString()
    assert len(set(re.findall(r"part-[^,)]*\.parquet", plan))) == 3  # the kept files only
    same(native, spark.read.format("pydelta").load(path).where("year = '2021'"))


def test_where_with_statistics_keeps_only_matching_rows(spark):
    path = table_path("delta-rs/simple_table")
    source = spark.read.format("pydelta").load(path)
    native = read_delta(spark, path, where="id >= 7")
    same(native, source.where("id >= 7"))
    assert sorted(r.id for r in native.collect()) == [7, 9]


def test_deletion_vectors_only_dv_files_pay(spark):
    path = table_path("delta-rs/table-with-dv-small")
    native = read_delta(spark, path)
    same(native, spark.read.format("pydelta").load(path))
    plan = native._jdf.queryExecution().analyzed().toString()
    # deleted rows looked up in one array of bits, a scalar subquery
    assert "row_index" in plan and "scalar-subquery" in plan
    # the version before the deletion vector was added reads no row index at all
    v0 = read_delta(spark, path, versionAsOf=0)
    assert "row_index" not in v0._jdf.queryExecution().optimizedPlan().toString()
    same(v0, spark.read.format("pydelta").option("versionAsOf", 0).load(path))
    assert native.count() == v0.count() - 2


@pytest.mark.parametrize(
    "name", ["delta-rs/table-with-dv-small", "kernel-rs/cdf-table-with-dv", "kernel-rs/with-short-dv"]
)
@pytest.mark.parametrize("how", ["udf", "pairs"])
def test_deletion_vectors_other_strategies(spark, monkeypatch, name, how):
    """Beyond MAX_BUCKET_BYTES the vectors are applied by an Arrow UDF in the tasks;
    beyond MAX_KEYED_DV_FILES the bucket join is keyed by (file path, bucket)."""
    import delta_pyds.spark.native.deleted_rows as native_read

    monkeypatch.setattr(native_read, "MAX_LITERAL_DV_ROWS", 0)  # not the literal bit words
    if how == "udf":
        monkeypatch.setattr(native_read, "MAX_BUCKET_BYTES", 0)
    else:
        monkeypatch.setattr(native_read, "MAX_KEYED_DV_FILES", 0)
    path = table_path(name)
    native = read_delta(spark, path, native="require")
    plan = native._jdf.queryExecution().optimizedPlan().toString().lower()
    if "row_index" in plan:  # the version read has deletion vectors
        assert ("__pydelta_dv_words" in plan) is (how == "pairs") and ("__pydelta_dv_path" in plan) is (how == "pairs")
    same(native, spark.read.format("pydelta").load(path))


@pytest.mark.parametrize("mode", ["id", "name", "none"])
def test_column_mapping_modes(spark, mode):
    path = table_path(f"kernel-rs/partition_cm/{mode}")
    same(read_delta(spark, path, native="require"), spark.read.format("pydelta").load(path))


HOSTILE = [
    "a b",
    "50%",
    "%25",
    "x=y",
    "a/b",
    "c:d",
    "ü é",
    "#?[]{}^|`",
    "'quote\"",
    "back\\slash",
    "",
    None,
]


def test_hostile_partition_values(spark, tmp_path):
    path = str(tmp_path / "hostile table %")
    rows = [(i, v) for i, v in enumerate(HOSTILE)]
    df = spark.createDataFrame(rows, "id long, p string")
    df.write.format("pydelta").option("partitionBy", "p").mode("append").save(path)
    source = spark.read.format("pydelta").load(path)
    native = read_delta(spark, path, native="require")
    same(native, source)
    assert sorted((r.id, r.p) for r in native.collect()) == sorted((i, None if v == "" else v) for i, v in rows)
    same(read_delta(spark, path, where="p = 'a b'"), source.where("p = 'a b'"))


def test_hive_directories_use_spark_partition_discovery(spark):
    """Partition directories that read back to the log's values: Spark's partition discovery
    supplies them (no per-row lookup); other layouts join the log's values."""
    path = table_path("delta-rs/delta-0.8.0-partitioned")
    plan = read_delta(spark, path)._jdf.queryExecution().optimizedPlan().toString()
    assert "__pydelta_partition" not in plan and "CASE WHEN" not in plan
    other = table_path("delta-rs/delta-0.8.0-special-partition")
    # 'x=B%20B': an escaped space Spark would decode differently from the log's value
    assert "CASE WHEN" in read_delta(spark, other)._jdf.queryExecution().optimizedPlan().toString()
    dv_partitioned = table_path("kernel-rs/partition_cm/none")
    same(read_delta(spark, dv_partitioned), spark.read.format("pydelta").load(dv_partitioned))


def test_many_partition_values_are_joined(spark, tmp_path):
    path = str(tmp_path / "many")
    df = spark.range(0, 60).selectExpr("id", "cast(id % 30 as int) p", "timestamp_seconds(id * 86400) ts")
    df.write.format("pydelta").option("partitionBy", "p").mode("append").save(path)
    same(read_delta(spark, path), spark.read.format("pydelta").load(path))


def test_timestamp_partitions_are_session_time_zone_proof(spark, tmp_path):
    path = str(tmp_path / "ts")
    df = spark.createDataFrame([(1,), (2,)], "id long").selectExpr(
        "id", "timestamp_seconds(id * 3600 + 1700000000) ts", "cast(timestamp_seconds(id * 60) as timestamp_ntz) ntz"
    )
    df.write.format("pydelta").option("partitionBy", "ts,ntz").mode("append").save(path)
    expected = spark_rows(spark.read.format("pydelta").load(path))
    spark.conf.set("spark.sql.session.timeZone", "America/Los_Angeles")
    try:
        native = read_delta(spark, path, native="require")
        got = spark_rows(native)
        again = spark_rows(spark.read.format("pydelta").load(path))
    finally:
        spark.conf.set("spark.sql.session.timeZone", "UTC")
    assert got == again == expected


def test_spark_spells_file_paths_as_planned(spark, tmp_path):
    """The planner's URIs are exactly Spark's _metadata.file_path for hostile names."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    root = tmp_path / "r o%ot"
    names = ["a b/f #%.parquet", "p=10%3A00/x.parquet", "ü=é/y?z.parquet", "k=[1]{2}/q^|`.parquet", "c=d:e/f.parquet"]
    for name in names:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.table({"id": [1]}), str(root / name))
    got = {
        r.file_path
        for r in spark.read.schema("id long")
        .option("recursiveFileLookup", "true")
        .parquet("file://" + str(root))
        .select("_metadata.file_path")
        .collect()
    }
    planned = {spark_file_uri(spark_root_uri(str(root)), n) for n in names}
    assert got == planned


def test_fallback_for_files_spark_does_not_list(spark, tmp_path, caplog):
    """A file under a '_' directory is hidden from Spark's listing: the data source reads."""
    import json

    path = shutil.copytree(table_path("delta-rs/simple_table"), tmp_path / "t")
    log_file = path / "_delta_log" / "00000000000000000000.json"
    lines = log_file.read_text().splitlines()
    for i, line in enumerate(lines):
        action = json.loads(line)
        if "add" in action:
            old = action["add"]["path"]
            os.makedirs(path / "_hidden", exist_ok=True)
            shutil.move(str(path / old), str(path / "_hidden" / old))
            action["add"]["path"] = "_hidden/" + old
            lines[i] = json.dumps(action)
            break
    log_file.write_text("\n".join(lines) + "\n")
    with pytest.raises(NativeReadUnavailable, match="_hidden"):
        read_delta(spark, str(path), native="require")
    with caplog.at_level(logging.WARNING, logger="delta_pyds.spark.native.read"):
        df = read_delta(spark, str(path))
    assert "through the data source" in caplog.text and "_hidden" in caplog.text
    assert not uses_spark_parquet(df)
    same(df, spark.read.format("pydelta").load(str(path)))


def test_change_feed_goes_through_the_data_source(spark):
    path = table_path("delta-rs/cdf-table")
    native = read_delta(spark, path, readChangeFeed="true", startingVersion=0)
    source = spark.read.format("pydelta").option("readChangeFeed", "true").option("startingVersion", 0).load(path)
    same(native, source)


def test_bad_native_argument(spark):
    with pytest.raises(ValueError, match="native"):
        read_delta(spark, table_path("delta-rs/simple_table"), native="sometimes")


def test_object_store_without_hadoop_connector_falls_back(spark, s3_server, caplog):
    url = s3_server.upload_dir(table_path("delta-rs/table-with-dv-small"), "native/dv")
    options = s3_server.spark_options()
    with caplog.at_level(logging.WARNING, logger="delta_pyds.spark.native.read"):
        df = read_delta(spark, url, **options)
        rows = spark_rows(df)
    local = spark.read.format("pydelta").load(table_path("delta-rs/table-with-dv-small"))
    assert rows == spark_rows(local)
    assert "through the data source" in caplog.text and "s3a" in caplog.text
    assert s3_server.options["secret"] not in caplog.text
    # the credentials went with that read only, never into the session's conf
    bucket = url.split("/")[2]
    assert spark.conf.get(f"fs.s3a.bucket.{bucket}.secret.key", None) is None
    assert s3_server.options["secret"] not in spark.conf.getAll.values()


CONNECT_SCRIPT = """
import json, sys
from pyspark.sql import SparkSession
spark = SparkSession.builder.remote("local[1]").config("spark.sql.session.timeZone", "UTC").getOrCreate()
assert type(spark).__module__.startswith("pyspark.sql.connect"), type(spark)
import delta_pyds
delta_pyds.register(spark)
out = {}
for path in sys.argv[1:]:
    native = delta_pyds.read_delta(spark, path, native="require")
    source = spark.read.format("pydelta").load(path)
    out[path] = {
        "same_rows": sorted(map(repr, native.collect())) == sorted(map(repr, source.collect())),
        "rows": native.count(),
        "types": [f.dataType.simpleString() for f in native.schema]
        == [f.dataType.simpleString() for f in source.schema],
        "native": bool(native.inputFiles()),
    }
print(json.dumps(out))
spark.stop()
"""


@pytest.mark.slow  # a local Spark Connect server in a subprocess
def test_spark_connect_client_plans_and_reads(tmp_path):
    """From a Spark Connect client (a local Connect server in a subprocess): the client plans
    the log, the server's Parquet reader reads; deletion vectors, partitions, column mapping."""
    import json
    import subprocess
    import sys

    script = tmp_path / "connect_native.py"
    script.write_text(CONNECT_SCRIPT)
    names = ["delta-rs/table-with-dv-small", "delta-rs/delta-0.8.0-partitioned", "kernel-rs/cdf-column-mapping-id-mode"]
    env = dict(os.environ, SPARK_TESTING="1", PYSPARK_PYTHON=sys.executable, TZ="UTC")
    result = subprocess.run(
        [sys.executable, str(script), *[table_path(n) for n in names]],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    got = json.loads(result.stdout.strip().splitlines()[-1])
    for name in names:
        entry = got[table_path(name)]
        assert entry == {"same_rows": True, "rows": entry["rows"], "types": True, "native": True}, name
        assert entry["rows"] > 0


def test_missing_data_file_is_an_error_not_fewer_rows(spark, tmp_path):
    """A live file Spark's listing does not find would silently drop out of the file
    filter: it is a DataFileError naming the file, as on the data source path."""
    from delta_pyds.errors import DataFileError

    path = shutil.copytree(table_path("delta-rs/simple_table"), tmp_path / "t")
    from delta_pyds.table.snapshot import Snapshot

    victim = Snapshot.load(str(path)).files.column("path")[0].as_py()
    assert read_delta(spark, str(path)).count() == 3
    os.remove(path / victim)
    with pytest.raises(DataFileError, match=victim.replace(".", r"\.")):
        read_delta(spark, str(path))


BIG_DV_SCRIPT = """
import sys
from pyspark.sql import SparkSession, functions as F
spark = (SparkSession.builder.master("local[2]").config("spark.driver.memory", "1g")
         .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2").getOrCreate())
from delta_pyds import read_delta
row = read_delta(spark, sys.argv[1], native="require").agg(F.count("*"), F.sum("id")).collect()[0]
print("RESULT", row[0], row[1])
"""


@pytest.mark.slow
def test_big_deletion_vector_reads_with_a_1g_driver(tmp_path):
    """One 12M-row file whose deletion vector deletes 10.8M rows (every id not a multiple
    of 10) reads through read_delta on a driver of 1 GB: the vector reaches Spark as 1.5 MB
    of bit buckets (the file's rows / 8), not as 10.8M keys (it was an OutOfMemoryError)."""
    import json
    import subprocess
    import sys

    import numpy as np
    import pyarrow as pa
    from deltalake import write_deltalake
    from pyroaring import BitMap64

    from delta_pyds.protocol.deletion_vectors import write_deletion_vectors
    from delta_pyds.storage.store import Storage

    n = 12_000_000
    t = str(tmp_path / "big-dv")
    write_deltalake(
        t, pa.table({"id": np.arange(n, dtype=np.int64)}), configuration={"delta.enableDeletionVectors": "true"}
    )
    log0 = os.path.join(t, "_delta_log", "00000000000000000000.json")
    (add,) = [json.loads(line)["add"] for line in open(log0) if '"add"' in line]
    deleted = BitMap64(np.arange(n, dtype=np.uint64))
    deleted.difference_update(BitMap64(np.arange(0, n, 10, dtype=np.uint64)))
    (desc,) = write_deletion_vectors(Storage(t), [deleted])
    assert desc.cardinality == 10_800_000
    remove = {"path": add["path"], "deletionTimestamp": 1, "dataChange": True, "size": add["size"]}
    with open(os.path.join(t, "_delta_log", "00000000000000000001.json"), "w") as f:
        f.write(json.dumps({"remove": remove}) + "\n")
        f.write(json.dumps({"add": {**add, "deletionVector": desc.to_dict()}}) + "\n")
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    out = subprocess.run([sys.executable, "-c", BIG_DV_SCRIPT, t], env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    kept = n // 10
    assert f"RESULT {kept} {10 * kept * (kept - 1) // 2}" in out.stdout
