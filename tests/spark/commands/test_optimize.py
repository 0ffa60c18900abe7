"""OPTIMIZE: compaction (deletion vectors applied, a dataChange=false commit, then vacuum),
Z-order with a partition filter, and the bins on Spark's own writer: exactly one file per
bin of delta-spark's bin packing (per partition, files sorted by size, packed greedily up to
the target size, single-file bins left alone), each bin's rows routed to a task of its own,
a Z-order bin larger than the target split near it; compaction bins read and written by
pyarrow in the driver and in Spark tasks (spark.pydelta.optimize.localMaxBytes=0). Rows read
back equal through the data
source, read_delta and deltalake. The compaction and Z-order tests run on both DML engines
(the ``each_dml_engine`` fixture)."""

from __future__ import annotations

import glob
import json
import os
import shutil

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from deltalake import write_deltalake
from dml_engines import each_dml_engine  # noqa: F401  (a fixture)
from dml_helpers import agree_with_deltalake, dv_files, make_dml_table  # noqa: F401  (dv_files: a fixture)
from helpers import deltalake_table, dml_data, parquet_files, spark_rows
from pyspark.sql import functions as F

from delta_pyds import DeltaTable, read_delta
from delta_pyds.spark.session.conf import DML_ENGINE_CONF, LOCAL_MAX_BYTES_CONF
from delta_pyds.table.snapshot import Snapshot

_make = make_dml_table
_agree = agree_with_deltalake
_data = dml_data
_data_files = parquet_files


@pytest.mark.slow
@pytest.mark.usefixtures("each_dml_engine")
def test_optimize_then_vacuum(spark, tmp_path, dv_files):  # noqa: F811  (the imported fixture)
    path = _make(str(tmp_path / "t"), files=50, rows_per_file=20, partition=True)
    t = DeltaTable.forPath(spark, path)
    t.delete("id % 7 = 0")
    before = _agree(spark, path)
    assert Snapshot.load(path).files.num_rows == 150
    res = t.optimize().executeCompaction().collect()[0]
    m = res.metrics  # delta-spark's shape: path, metrics struct
    assert m.numFilesRemoved == 150 and m.numFilesAdded == 3
    snap = Snapshot.load(path)
    assert snap.files.num_rows == 3
    assert all(d is None for d in snap.files.column("deletion_vector").to_pylist())
    assert _agree(spark, path) == before
    h = t.history(1).collect()[0]
    assert h.operation == "OPTIMIZE"
    # the commit is dataChange=false
    log = os.path.join(path, "_delta_log", f"{snap.version:020d}.json")
    actions = [json.loads(line) for line in open(log)]
    assert all(not a[k]["dataChange"] for a in actions for k in ("add", "remove") if k in a)
    # vacuum: refuses short retention, a dry run lists, then it deletes the old files
    # (behaviour change: vacuum() deletes by default, as delta-spark's does)
    n_files = len(_data_files(path))
    assert t.vacuum(dryRun=True).count() == 0  # everything is inside the default 7 day window
    with pytest.raises(ValueError):
        t.vacuum(0)
    would = t.vacuum(0, dryRun=True, enforceRetention=False).collect()
    assert (
        len(would) == 150 + 1 and len(_data_files(path)) == n_files
    )  # 150 data files + 1 DV file; a dry run deletes nothing
    t.vacuum(0, enforceRetention=False)
    assert len(_data_files(path)) == 3
    assert not glob.glob(os.path.join(path, "deletion_vector_*.bin"))
    assert _agree(spark, path) == before


@pytest.mark.usefixtures("each_dml_engine")
def test_optimize_zorder_and_where(spark, tmp_path):
    import datetime

    path = str(tmp_path / "z")
    from delta_pyds.write.plan import commit_arrow

    for i in range(6):
        d = _data(i * 40, 40)
        d = d.append_column("day", pa.array([datetime.date(2024, 1, 1 + (j * 7) % 28) for j in range(40)]))
        commit_arrow(path, d, options={"partitionBy": "part", "delta.enableDeletionVectors": "true"})
    t = DeltaTable.forPath(spark, path)
    t.delete("id % 5 = 0")
    before = _agree(spark, path)
    with pytest.raises(ValueError):
        t.optimize().executeZOrderBy("part")
    m = t.optimize().where("part = 1").executeZOrderBy("id", "day").collect()[0].metrics
    assert m.numFilesRemoved == 6 and m.numFilesAdded == 1
    assert _agree(spark, path) == before
    h = t.history(1).collect()[0]
    assert h.operation == "OPTIMIZE" and json.loads(h.operationParameters["zOrderBy"]) == ["id", "day"]
    snap = Snapshot.load(path)
    assert snap.files.num_rows == 13  # 6 + 6 untouched, 1 rewritten
    t.optimize().executeCompaction()
    assert Snapshot.load(path).files.num_rows == 3
    assert _agree(spark, path) == before


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
    from delta_pyds.spark.commands.optimize import bin_keys, spark_partition_of

    for n in (1, 2, 3, 7, 16, 50):
        keys = bin_keys(n)
        assert len(set(keys)) == n and [spark_partition_of(k, n) for k in keys] == list(range(n))
        df = spark.createDataFrame([(k,) for k in keys], "k int").repartition(n, "k")
        got = df.select("k", F.spark_partition_id().alias("p")).collect()
        assert {r["k"]: r["p"] for r in got} == {k: b for b, k in enumerate(keys)}


@pytest.mark.parametrize("partitioned", [False, True])
@pytest.mark.parametrize("in_tasks", [False, True])  # pyarrow bins in the driver / in Spark tasks
def test_optimize_writes_one_file_per_bin(spark, tmp_path, partitioned, in_tasks):
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
    if in_tasks:
        spark.conf.set(LOCAL_MAX_BYTES_CONF, "0")
    try:
        res = DeltaTable.forPath(spark, path).optimize().option("targetFileSize", target).executeCompaction()
    finally:
        spark.conf.unset(DML_ENGINE_CONF)
        spark.conf.unset(LOCAL_MAX_BYTES_CONF)
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


def test_zorder_key_is_the_morton_code_of_quantile_buckets(spark):
    """The Z-order key, computed independently in Python: each column's bucket is the number
    of its distinct approximate-quantile bounds below the value (null: 0; NaN above every
    number, as Spark orders it; dates as epoch microseconds), and the key interleaves the
    buckets' 8 bits, the first column's lowest."""
    import datetime as dt

    from delta_pyds.spark.commands.zorder import with_zorder_key

    df = spark.range(3000).selectExpr(
        "id",
        "(id * 7919) % 1200 AS x",
        "CASE WHEN id % 13 = 0 THEN NULL WHEN id % 17 = 0 THEN double('NaN') ELSE CAST(id % 101 AS DOUBLE) END AS z",
        "date_add(DATE'2020-01-01', CAST(id % 400 AS INT)) AS d",
        "CAST(NULL AS DOUBLE) AS n",  # no bounds at all: bucket 0 everywhere
    )
    cols = ["x", "z", "d", "n"]
    probe = df.select(
        F.col("x").cast("double").alias("x"),
        "z",
        F.unix_micros(F.col("d").cast("timestamp")).cast("double").alias("d"),
        "n",
    )
    quantiles = probe.approxQuantile(cols, [j / 256 for j in range(1, 256)], 0.001)
    bounds = [sorted({b for b in q if b is not None}) for q in quantiles]
    assert len(bounds[0]) > 200 and not bounds[3]
    got = {r.id: r.k for r in with_zorder_key(df, cols, "k").select("id", "k").collect()}
    epoch = dt.date(1970, 1, 1)
    for row in df.collect():
        values = [float(row.x), row.z, (row.d - epoch).days * 86_400_000_000.0, row.n]
        key = 0
        for i, (v, bs) in enumerate(zip(values, bounds)):
            if v is None:
                bucket = 0
            elif v != v:  # NaN
                bucket = sum(1 for b in bs if b == b)
            else:
                bucket = sum(1 for b in bs if v > b)
            for bit in range(8):
                key |= ((bucket >> bit) & 1) << (bit * len(cols) + i)
        assert got[row.id] == key, (row, values)
    assert len(set(got.values())) > 1000


def test_zorder_key_runs_in_generated_code(spark):
    """The Z-order key has no lambda (Spark interprets higher-order functions: 255 lambda
    calls a row and column made a 336k-row ZORDER take 27 s) and no expression larger than
    one search step (a 255-comparison CASE tree made a method too large for the JVM's
    compiler); the helper columns are gone."""
    from delta_pyds.spark.commands.zorder import with_zorder_key

    df = spark.range(2000).selectExpr("id", "(id * 7919) % 1200 AS x", "CAST(id % 97 AS STRING) AS s")
    keyed = with_zorder_key(df, ["x", "s"], "k")
    assert keyed.columns == ["id", "x", "s", "k"]
    plan = keyed._jdf.queryExecution().optimizedPlan().toString().lower()
    assert "lambda" not in plan and "case when" not in plan
    assert plan.count("element_at") >= 2 * 8  # the search: 8 steps a column
    assert len({r.k for r in keyed.collect()}) > 500


def test_a_string_zorder_key_orders_as_its_utf8_prefix_number(spark):
    """A string column's buckets are those of the big-endian number of its first 6 UTF-8 bytes
    (zero-padded): the search compares the bytes, the quantiles come from the numbers, and both
    order alike (multi-byte characters, short strings, a prefix shared past 6 bytes, nulls)."""
    from delta_pyds.spark.commands.zorder import with_zorder_key

    words = ["", "a", "ab", "abcdef", "abcdefZ", "abcdefA", "é", "éa", "€x", "z" * 9, "\U0001f600", "A\x00B"]
    df = spark.range(3000).selectExpr(
        "id",
        f"CASE WHEN id % 31 = 0 THEN NULL ELSE concat(element_at(array({', '.join(repr(w) for w in words)}), "
        f"CAST(id % {len(words)} + 1 AS INT)), CAST(id % 211 AS STRING)) END AS s",
    )
    number = "CAST(conv(rpad(hex(substring(encode(s, 'UTF-8'), 1, 6)), 12, '0'), 16, 10) AS DOUBLE)"
    by_string = {r.id: r.k for r in with_zorder_key(df, ["s"], "k").select("id", "k").collect()}
    by_number = {r.id: r.k for r in with_zorder_key(df.selectExpr("id", f"{number} AS s"), ["s"], "k").collect()}
    assert by_string == by_number
    assert len(set(by_string.values())) > 100


def test_zorder_by_a_string_column(spark, tmp_path):
    """Strings Z-order as delta-spark and deltalake Z-order them (they were refused): by their
    order (here 100 distinct values with distinct 6-byte prefixes, each its own bucket, so the
    one rewritten file holds them sorted); the rows are unchanged (the data source and deltalake
    agree)."""
    import random

    import pyarrow.parquet as pq

    path = str(tmp_path / "zs")
    words = [f"{w:03d}-é{w * 7 % 13}" for w in range(100)]
    rng = random.Random(7)
    from delta_pyds.write.plan import commit_arrow

    for _ in range(4):
        rows = [rng.choice(words) for _ in range(250)]
        commit_arrow(path, pa.table({"s": rows, "n": list(range(250))}))
    before = sorted(deltalake_table(path).to_pylist(), key=lambda r: (r["s"], r["n"]))
    m = DeltaTable.forPath(spark, path).optimize().executeZOrderBy("s").collect()[0].metrics
    assert m.numFilesRemoved == 4 and m.numFilesAdded == 1
    snap = Snapshot.load(path)
    (name,) = snap.files.column("path").to_pylist()
    values = pq.read_table(os.path.join(path, name)).column("s").to_pylist()
    assert values == sorted(values)
    after = sorted(deltalake_table(path).to_pylist(), key=lambda r: (r["s"], r["n"]))
    assert after == before
    assert sorted(tuple(r) for r in spark.read.format("pydelta").load(path).collect()) == sorted(
        (r["s"], r["n"]) for r in before
    )


def _zorder_rows(spark, path, cols):
    """The table's rows through the data source, read_delta and deltalake (asserted equal)."""
    ours = sorted(tuple(r.asDict()[c] for c in cols) for r in spark.read.format("pydelta").load(path).collect())
    native = sorted(tuple(r.asDict()[c] for c in cols) for r in read_delta(spark, path).collect())
    theirs = sorted(tuple(r[c] for c in cols) for r in deltalake_table(path).to_pylist())
    assert ours == native == theirs
    return ours


def test_zorder_with_escaped_partitions_and_a_hostile_column_name(spark, tmp_path):
    """ZORDER BY a column whose name has a backquote, a dot and Unicode, on a table partitioned
    by values Spark escapes, under a root with a space and Unicode: each partition (a bin of
    its own, Spark's shuffle routes its rows) and then one partition alone (one task, no
    shuffle) is rewritten sorted, the rows unchanged on both read paths and in deltalake."""
    from helpers import SPARK_ESCAPED

    path = str(tmp_path / "z root ü€")
    name = "we`ird.ná-me"
    parts = ["a b", "x/y", "50%", "ü€", "it's", "a=b", "\t#1", "".join(SPARK_ESCAPED[:8])]
    for k in range(2):
        rows = [(p, f"{(i * 7919 + k) % 500:03d}é", i) for p in parts for i in range(k * 60, k * 60 + 60)]
        write_deltalake(
            path,
            pa.table({"p": [r[0] for r in rows], name: [r[1] for r in rows], "n": [r[2] for r in rows]}),
            partition_by=["p"],
            mode="append",
        )
    cols = ["p", name, "n"]
    before = _zorder_rows(spark, path, cols)
    m = DeltaTable.forPath(spark, path).optimize().executeZOrderBy(name, "n").collect()[0].metrics
    assert (m.numFilesRemoved, m.numFilesAdded) == (2 * len(parts), len(parts))
    assert _zorder_rows(spark, path, cols) == before
    write_deltalake(path, pa.table({"p": ["x/y"], name: ["000é"], "n": [-1]}), partition_by=["p"], mode="append")
    before = _zorder_rows(spark, path, cols)
    m = DeltaTable.forPath(spark, path).optimize().where("p = 'x/y'").executeZOrderBy(name, "n").collect()[0].metrics
    assert (m.numFilesRemoved, m.numFilesAdded) == (2, 1)
    assert _zorder_rows(spark, path, cols) == before


def test_a_lone_small_bin_is_zordered_without_a_shuffle(spark, tmp_path, monkeypatch):
    """One bin of at most ONE_TASK_MAX_BYTES is read, sorted and written by one task: fewer
    Spark jobs than routing its rows through a shuffle (ONE_TASK_MAX_BYTES = 0), the same rows
    in the same file order."""
    import pyarrow.parquet as pq
    from helpers import spark_jobs

    import delta_pyds.spark.commands.optimize as optimize

    base = str(tmp_path / "base")
    for k in range(4):
        ids = list(range(k * 500, k * 500 + 500))
        write_deltalake(base, pa.table({"id": ids, "x": [(i * 7919) % 1000 for i in ids]}), mode="append")
    jobs, files = {}, {}
    for how, limit in (("one task", optimize.ONE_TASK_MAX_BYTES), ("shuffle", 0)):
        path = str(tmp_path / how)
        shutil.copytree(base, path)
        monkeypatch.setattr(optimize, "ONE_TASK_MAX_BYTES", limit)
        table = DeltaTable.forPath(spark, path)
        jobs[how] = spark_jobs(spark, lambda table=table: table.optimize().executeZOrderBy("x", "id"))
        (name,) = Snapshot.load(path).files.column("path").to_pylist()
        files[how] = pq.read_table(os.path.join(path, name)).column("id").to_pylist()
    assert jobs["one task"] < jobs["shuffle"], jobs
    assert files["one task"] == files["shuffle"]
    assert sorted(files["shuffle"]) == list(range(2000))
