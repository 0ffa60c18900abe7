"""``df.writeStream.format("delta").start(path)`` after ``delta_pyds.register(spark)`` (the front
door of :mod:`delta_pyds.spark.front_doors.stream_writers`): the query runs on the Spark-native
data path (``foreachBatch`` of ``DeltaBatchSink``: Spark's Parquet writer, a driver-side commit per
micro-batch with the sink's ``txn``), and every case the module docstring keeps on pyspark's own
``start`` (the ``pydelta`` sink) stays there. Tables are checked with ``deltalake`` and both of this
package's read paths; crashes are simulated by removing Spark's commit log entry."""

from __future__ import annotations

import glob
import os
from collections import Counter

import deltalake
import pytest
from helpers import deltalake_table, forget_last_spark_commit, write_ids
from pyspark.errors import StreamingQueryException

import delta_pyds
from delta_pyds.table.snapshot import Snapshot


def _source(path, start, n=10):
    write_ids(path, list(range(start, start + n)), with_p=False)


def _stream(spark, src):
    return spark.readStream.format("pydelta").load(src)  # no read limit: pyspark 4.1 has none


def _run(writer, dst=None):
    q = writer.trigger(availableNow=True).start(dst) if dst is not None else writer.trigger(availableNow=True).start()
    q.awaitTermination()
    return q


def _sink(q):
    return q.lastProgress["sink"]["description"]


def _ids(path):
    return Counter(deltalake_table(path).column("id").to_pylist())


def _both_reads(spark, path):
    native = sorted(r.id for r in delta_pyds.read_delta(spark, path).collect())
    source = sorted(r.id for r in spark.read.format("pydelta").load(path).collect())
    assert native == source
    return Counter(native)


def test_start_path_is_native_exactly_once_across_crashes(spark, tmp_path):
    src, dst, ck = (str(tmp_path / n) for n in ("src", "dst", "ck"))

    def run():
        return _run(_stream(spark, src).writeStream.format("delta").option("checkpointLocation", ck), dst)

    for k in range(3):  # one micro-batch per run: one source commit each
        _source(src, 10 * k)
        q = run()
    assert _sink(q).startswith("ForeachBatchSink")  # not the pydelta data source's sink
    snapshot = Snapshot.load(dst)
    assert snapshot.version == 2 and snapshot.app_transactions == {q.id: 2}  # one commit per batch
    history = deltalake.DeltaTable(dst).history()
    assert [h["operation"] for h in history] == ["STREAMING UPDATE"] * 3

    forget_last_spark_commit(ck)  # the driver died after the Delta commit: the replay commits nothing
    run()
    assert Snapshot.load(dst).version == 2

    batch = forget_last_spark_commit(ck)  # ... before the Delta commit
    os.remove(os.path.join(dst, "_delta_log", f"{2:020d}.json"))
    _source(src, 30)
    run()  # batch 2 again (its offsets were logged), then batch 3 ...
    run()  # ... which pyspark 4.1 (no read limits) leaves to the next run
    assert Snapshot.load(dst).app_transactions == {q.id: batch + 1}
    assert _ids(dst) == Counter(range(40)) == _both_reads(spark, dst)


def test_a_query_keeps_its_place_across_the_two_sinks(spark, tmp_path):
    """Batches written by the pydelta sink, then the same checkpoint restarted with format delta
    (and back), each restart replaying the batch Spark did not log as done: one txn app id, every
    row once."""
    src, dst, ck = (str(tmp_path / n) for n in ("src", "dst", "ck"))

    def run(fmt):
        return _run(_stream(spark, src).writeStream.format(fmt).option("checkpointLocation", ck), dst)

    _source(src, 0)
    assert not _sink(run("pydelta")).startswith("ForeachBatchSink")
    for fmt, start in (("delta", 10), ("pydelta", 20)):
        forget_last_spark_commit(ck)
        run(fmt)  # the replay: already in the table, so nothing is committed
        _source(src, start)
        q = run(fmt)
        assert _sink(q).startswith("ForeachBatchSink") == (fmt == "delta")
    assert _ids(dst) == Counter(range(30))
    assert Snapshot.load(dst).version == 2 and set(Snapshot.load(dst).app_transactions) == {q.id}


def test_partition_by_complete_mode_and_options(spark, tmp_path):
    src, dst, agg, ck = (str(tmp_path / n) for n in ("src", "dst", "agg", "ck"))
    _source(src, 0)
    stream = _stream(spark, src).selectExpr("id", "CAST(id % 2 AS STRING) AS p")
    _run(
        stream.writeStream.format("delta")
        .partitionBy("p")
        .option("checkpointLocation", ck)
        .option("userMetadata", "from a stream"),
        dst,
    )
    table = deltalake.DeltaTable(dst)
    assert table.metadata().partition_columns == ["p"]
    assert {h.get("userMetadata") for h in table.history()} == {"from a stream"}
    assert _ids(dst) == Counter(range(10))

    for more in (10, 20):  # complete mode: each batch replaces the table
        q = _run(
            spark.readStream.format("pydelta")
            .load(src)
            .selectExpr("id % 2 AS k")
            .groupBy("k")
            .count()
            .writeStream.format("delta")
            .outputMode("complete")
            .option("checkpointLocation", ck + "-agg"),
            agg,
        )
        assert _sink(q).startswith("ForeachBatchSink")
        _source(src, more)
    assert sorted(tuple(r.values()) for r in deltalake_table(agg).to_pylist()) == [(0, 10), (1, 10)]


def test_txn_app_id_without_a_checkpoint_option(spark, tmp_path):
    src, dst = str(tmp_path / "src"), str(tmp_path / "dst")
    _source(src, 0)
    spark.conf.set("spark.sql.streaming.checkpointLocation", str(tmp_path / "session-ck"))
    try:
        q = _run(_stream(spark, src).writeStream.format("delta").option("txnAppId", "my-app"), dst)
    finally:
        spark.conf.unset("spark.sql.streaming.checkpointLocation")
    assert _sink(q).startswith("ForeachBatchSink")
    assert Snapshot.load(dst).app_transactions == {"my-app": 0}


def test_a_failing_batch_leaves_nothing_in_the_table(spark, tmp_path):
    src, dst, ck = (str(tmp_path / n) for n in ("src", "dst", "ck"))
    _source(src, 0)
    spark.createDataFrame([(1,)], "id long").write.format("delta").save(dst)
    delta_pyds.sql(spark, f"ALTER TABLE delta.`{dst}` ADD CONSTRAINT small CHECK (id < 5)")
    before = set(glob.glob(os.path.join(dst, "**", "*.parquet"), recursive=True))
    with pytest.raises(StreamingQueryException, match="small"):
        _run(_stream(spark, src).select("id").writeStream.format("delta").option("checkpointLocation", ck), dst)
    assert Snapshot.load(dst).version == 1  # the create and the constraint only
    assert set(glob.glob(os.path.join(dst, "**", "*.parquet"), recursive=True)) == before
    assert not [p for p in os.listdir(dst) if p.startswith((".", "_")) and p != "_delta_log"]


@pytest.mark.parametrize(
    "case",
    ["pydelta", "update", "foreachBatch", "no checkpoint", "txnVersion"],
)
def test_the_other_starts_stay_pysparks(spark, tmp_path, case):
    src, dst, ck = (str(tmp_path / n) for n in ("src", "dst", "ck"))
    _source(src, 0)
    writer = _stream(spark, src).writeStream.format("pydelta" if case == "pydelta" else "delta")
    if case != "no checkpoint":
        writer = writer.option("checkpointLocation", ck)
    if case == "pydelta":
        assert not _sink(_run(writer, dst)).startswith("ForeachBatchSink")
        assert _ids(dst) == Counter(range(10))
    elif case == "update":  # delta-spark refuses update mode for its sink; so does the pydelta sink
        with pytest.raises(Exception, match="(?i)update"):
            _run(writer.outputMode("update"), dst)
    elif case == "foreachBatch":  # the user's function is the sink, as in Spark
        seen = []
        q = _run(writer.foreachBatch(lambda df, i: seen.append(df.count())))
        assert sum(seen) == 10 and not os.path.exists(dst)
        assert _sink(q).startswith("ForeachBatchSink")
    elif case == "no checkpoint":  # the pydelta sink's error names the missing option
        spark.conf.set("spark.sql.streaming.checkpointLocation", str(tmp_path / "session-ck"))
        try:
            with pytest.raises(StreamingQueryException, match="checkpointLocation"):
                _run(writer, dst)
        finally:
            spark.conf.unset("spark.sql.streaming.checkpointLocation")
    else:
        with pytest.raises(Exception, match="txnVersion"):
            _run(writer.option("txnVersion", "3"), dst)
