"""Optimized writes of write_delta (delta.autoOptimize.optimizeWrite and
spark.databricks.delta.optimizeWrite.*): the rows shuffled by the partition columns so each
partition gets one file instead of one per input task; the session conf wins over the table
property; a bad binSize is refused before anything is written; the same rows either way
(the data source, read_delta and deltalake agree)."""

from __future__ import annotations

import contextlib

import pytest
from helpers import deltalake_table, spark_rows
from pyspark.sql import functions as F

from delta_pyds import SettingValueError, read_delta, write_delta
from delta_pyds.table.snapshot import Snapshot

ENABLED = "spark.databricks.delta.optimizeWrite.enabled"
BIN = "spark.databricks.delta.optimizeWrite.binSize"


@contextlib.contextmanager
def confs(spark, values):
    try:
        for k, v in values.items():
            spark.conf.set(k, v)
        yield
    finally:
        for k in values:
            spark.conf.unset(k)


def _df(spark):
    # 8 input tasks, each holding rows of all 4 partitions
    return spark.range(0, 400, numPartitions=8).select("id", (F.col("id") % 4).alias("p"))


def _files_per_partition(path):
    counts = {}
    for v in Snapshot.load(path).files.column("partition_values").to_pylist():
        counts[v["p"]] = counts.get(v["p"], 0) + 1
    return counts


def _same_rows(spark, path):
    ours = spark_rows(spark.read.format("pydelta").load(path).select("id", "p"))
    assert ours == spark_rows(read_delta(spark, path).select("id", "p"))
    assert sorted(r[0] for r in ours) == list(range(400))
    assert sorted(deltalake_table(path).column("id").to_pylist()) == list(range(400))


def test_the_session_conf_gives_one_file_per_partition(spark, tmp_path):
    plain, optimized = str(tmp_path / "plain"), str(tmp_path / "opt")
    write_delta(_df(spark), plain, partitionBy="p")
    assert _files_per_partition(plain) == {"0": 8, "1": 8, "2": 8, "3": 8}
    with confs(spark, {ENABLED: "true"}):
        write_delta(_df(spark), optimized, partitionBy="p")
    assert _files_per_partition(optimized) == {"0": 1, "1": 1, "2": 1, "3": 1}
    assert spark.conf.get("spark.sql.adaptive.advisoryPartitionSizeInBytes", None) != str(512 << 20)
    _same_rows(spark, optimized)


def test_the_table_property_and_the_conf_turning_it_off(spark, tmp_path):
    path = str(tmp_path / "t")
    write_delta(_df(spark), path, partitionBy="p", **{"delta.autoOptimize.optimizeWrite": "true"})
    assert _files_per_partition(path) == {"0": 1, "1": 1, "2": 1, "3": 1}
    with confs(spark, {ENABLED: "false"}):
        write_delta(_df(spark), path, mode="overwrite")
    assert _files_per_partition(path) == {"0": 8, "1": 8, "2": 8, "3": 8}
    _same_rows(spark, path)


def test_a_bad_bin_size_is_refused_before_writing(spark, tmp_path):
    path = str(tmp_path / "t")
    write_delta(_df(spark), path, partitionBy="p")
    with confs(spark, {ENABLED: "true", BIN: "lots"}), pytest.raises(SettingValueError, match="optimizeWrite.binSize"):
        write_delta(_df(spark), path)
    assert Snapshot.load(path).version == 0
