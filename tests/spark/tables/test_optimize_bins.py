"""OPTIMIZE on Spark's own writer writes exactly one file per bin: the bins of delta-spark's
bin packing (per partition, files sorted by size, packed greedily up to the target size,
single-file bins left alone), each bin's rows routed to a task of its own (no two bins
share a hash partition). Rows read back equal through the data source, read_delta and
deltalake."""

from __future__ import annotations

import os

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from deltalake import write_deltalake
from helpers import spark_rows
from pyspark.sql import functions as F

from delta_pyds import DeltaTable, read_delta
from delta_pyds.spark.tables.native_rows import DML_ENGINE_CONF
from delta_pyds.table.snapshot import Snapshot


def _delta_spark_bins(sizes_by_partition: dict, target: int) -> int:
    """The number of bins delta-spark's OptimizeExecutor.groupFilesIntoBins makes (files
    under the target, per partition, sorted by size, a bin closed when the next file
    would exceed the target; bins of one file dropped)."""
    count = 0
    for sizes in sizes_by_partition.values():
        bins, current, total = [], [], 0
        for s in sorted(x for x in sizes if x < target):
            if current and total + s > target:
                bins.append(current)
                current, total = [], 0
            current.append(s)
            total += s
        if current:
            bins.append(current)
        count += sum(1 for b in bins if len(b) > 1)
    return count


def test_bin_keys_land_on_their_own_partition(spark):
    """The keys are checked against Spark's own hash partitioning, not only our murmur3."""
    from delta_pyds.spark.tables.optimize import bin_keys, spark_partition_of

    for n in (1, 2, 3, 7, 16, 50):
        keys = bin_keys(n)
        assert len(set(keys)) == n and [spark_partition_of(k, n) for k in keys] == list(range(n))
        df = spark.createDataFrame([(k,) for k in keys], "k int").repartition(n, "k")
        got = df.select("k", F.spark_partition_id().alias("p")).collect()
        assert {r["k"]: r["p"] for r in got} == {k: b for b, k in enumerate(keys)}


@pytest.mark.parametrize("partitioned", [False, True])
def test_optimize_writes_one_file_per_bin(spark, tmp_path, partitioned):
    path = str(tmp_path / "t")
    rows = 0
    for i in range(12):  # 12 small files (6 per partition when partitioned)
        n = 200 + 37 * i
        t = pa.table(
            {
                "id": pa.array(range(rows, rows + n), pa.int64()),
                "p": pa.array([i % 2] * n, pa.int64()),
                "s": pa.array([f"row-{j}-{i}" for j in range(n)]),
            }
        )
        rows += n
        write_deltalake(path, t, mode="append", partition_by=["p"] if partitioned else None)
    snap = Snapshot.load(path)
    sizes = snap.files.column("size").to_pylist()
    pvs = snap.files.column("partition_values").to_pylist() if partitioned else [None] * len(sizes)
    by_part: dict = {}
    for s, v in zip(sizes, pvs):
        by_part.setdefault(repr(v), []).append(s)
    target = int(sum(sizes) / len(sizes) * 3.5)  # about 3 files a bin
    expected_bins = _delta_spark_bins(by_part, target)
    assert expected_bins >= 3
    before = spark_rows(read_delta(spark, path).select("id", "p", "s"))
    spark.conf.set(DML_ENGINE_CONF, "native")
    try:
        res = DeltaTable.forPath(spark, path).optimize().option("targetFileSize", target).executeCompaction()
    finally:
        spark.conf.unset(DML_ENGINE_CONF)
    m = res.collect()[0].metrics
    assert m.numBatches == expected_bins
    assert m.numFilesAdded == expected_bins, f"{m.numFilesAdded} files for {expected_bins} bins"
    after = Snapshot.load(path)
    old = pc.is_in(after.files.column("path"), value_set=snap.files.column("path").combine_chunks())
    added = after.files.filter(pc.invert(old))
    assert added.num_rows == expected_bins
    assert all(s <= target * 1.5 for s in added.column("size").to_pylist())
    assert all(os.path.exists(os.path.join(path, p)) for p in added.column("path").to_pylist())
    ours = spark_rows(spark.read.format("pydelta").load(path).select("id", "p", "s"))
    assert ours == before == spark_rows(read_delta(spark, path).select("id", "p", "s"))
    from deltalake import DeltaTable as DL

    theirs = sorted(tuple(r.values()) for r in DL(path).to_pyarrow_table().select(["id", "p", "s"]).to_pylist())
    assert sorted(tuple(r) for r in ours) == theirs


def test_zorder_bin_larger_than_target_is_split_near_target(spark, tmp_path):
    """A Z-order bin holds every file of the partition: Spark's writer splits it by a row
    limit (the bin's rows per target size) instead of writing one oversized file."""
    path = str(tmp_path / "t")
    for i in range(6):
        ids = range(i * 500, (i + 1) * 500)
        write_deltalake(
            path, pa.table({"id": pa.array(ids, pa.int64()), "v": pa.array([j % 97 for j in ids])}), mode="append"
        )
    snap = Snapshot.load(path)
    total = sum(snap.files.column("size").to_pylist())
    target = total // 3
    spark.conf.set(DML_ENGINE_CONF, "native")
    try:
        DeltaTable.forPath(spark, path).optimize().option("targetFileSize", target).executeZOrderBy("id", "v")
    finally:
        spark.conf.unset(DML_ENGINE_CONF)
    after = Snapshot.load(path)
    cap = -(-3000 * target // total)
    assert after.files.num_rows == -(-3000 // cap) >= 3
    assert sorted(spark_rows(read_delta(spark, path).select("id", "v"))) == sorted((j, j % 97) for j in range(3000))
