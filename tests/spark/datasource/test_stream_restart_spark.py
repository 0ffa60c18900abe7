"""Streaming restarts through Spark at each point of the micro-batch protocol (issue 24.1):
a batch whose offsets were logged is replayed to the same rows whatever the table did in
between, for every starting mode and trigger, so the sink gets each source row once.

Crashes are simulated deterministically: a foreachBatch that raises once (after offsets/N,
before the sink), a CHECK constraint on a pydelta sink that rejects the first attempt,
removing commits/N (after the sink's commit, before Spark's), and one real SIGKILL."""

from __future__ import annotations

import glob
import os
import signal
import subprocess
import sys
import textwrap
from collections import Counter

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from helpers import forget_last_spark_commit, write_ids


def _source(path):
    """Four commits of 10 rows, committed 100 s apart (startingTimestamp below is version 1)."""
    for k in range(4):
        write_ids(path, list(range(10 * k, 10 * k + 10)), with_p=False)
    for v in range(4):
        os.utime(os.path.join(path, "_delta_log", f"{v:020d}.json"), (1_700_000_000 + 100 * v,) * 2)


MODES = {
    "snapshot": ({}, range(40)),
    "startingVersion=1": ({"startingVersion": "1"}, range(10, 40)),
    "latest": ({"startingVersion": "latest"}, range(0)),
    "startingTimestamp": ({"startingTimestamp": "2023-11-14T22:14:30Z"}, range(10, 40)),
}
NEW = list(range(100, 110))  # the commit that lands while the query is down


class Crash(Exception):
    pass


def _reader(spark, path, options):
    reader = spark.readStream.format("pydelta")
    for k, v in options.items():
        reader = reader.option(k, v)
    return reader.load(path)


def _start(writer, trigger):
    if trigger == "availableNow":
        return writer.trigger(availableNow=True).start()
    if trigger == "once":
        return writer.trigger(once=True).start()
    return writer.trigger(processingTime="1 second").start()


def _finish(query, trigger):
    if trigger == "processingTime":
        try:
            query.processAllAvailable()
        finally:
            query.stop()
    else:
        query.awaitTermination()


def _run_foreach(spark, path, checkpoint, out, options, trigger="availableNow", fail_batch=None):
    """One run writing each batch to out/batch=<id> (a replay overwrites it); raises once
    in batch ``fail_batch`` before writing, as a crash between plan and sink would."""
    calls = []

    def sink(df, batch_id):
        calls.append(batch_id)
        if batch_id == fail_batch:
            raise Crash(f"simulated crash in batch {batch_id}")
        df.write.mode("overwrite").parquet(os.path.join(out, f"batch={batch_id}"))

    query = _start(
        _reader(spark, path, options).writeStream.foreachBatch(sink).option("checkpointLocation", checkpoint), trigger
    )
    if fail_batch is not None:
        with pytest.raises(Exception, match="simulated crash"):
            _finish(query, trigger)
    else:
        _finish(query, trigger)
    return calls


def _delivered(out):
    per_batch = {}
    for d in glob.glob(os.path.join(out, "batch=*")):
        ids = [i for f in glob.glob(os.path.join(d, "*.parquet")) for i in pq.read_table(f).column("id").to_pylist()]
        per_batch[int(d.rsplit("=", 1)[1])] = ids
    return per_batch


CASES = [(mode, "availableNow", {}, 0) for mode in MODES] + [
    ("snapshot", "once", {}, 0),
    ("snapshot", "processingTime", {}, 0),
    ("snapshot", "availableNow", {"maxFilesPerTrigger": "1"}, 0),
    ("snapshot", "availableNow", {"maxFilesPerTrigger": "1"}, 2),  # a later batch
    ("startingTimestamp", "availableNow", {"maxBytesPerTrigger": "1"}, 1),
    ("snapshot", "processingTime", {"maxBytesPerTrigger": "1"}, 1),
]


@pytest.mark.parametrize(("mode", "trigger", "limits", "fail_batch"), CASES)
def test_batch_failed_once_is_replayed_to_the_same_rows_after_a_new_commit(
    spark, tmp_path, mode, trigger, limits, fail_batch
):
    path, checkpoint, out = (str(tmp_path / n) for n in ("t", "ck", "out"))
    _source(path)
    options, expected = MODES[mode]
    options = {**options, **limits}
    calls = _run_foreach(spark, path, checkpoint, out, options, trigger, fail_batch=fail_batch)
    assert calls[-1] == fail_batch
    write_ids(path, NEW, with_p=False)
    for _ in range(3 if trigger == "once" else 1):  # Trigger.Once: the replayed batch, then one more
        calls = _run_foreach(spark, path, checkpoint, out, options, trigger)
    batches = _delivered(out)
    assert sorted(batches) == list(range(len(batches)))  # no batch id missing
    delivered = Counter(i for ids in batches.values() for i in ids)
    assert delivered == Counter([*expected, *NEW])
    if mode != "latest":
        assert batches[fail_batch], "the replayed batch must not be empty"


def _run_sink(spark, path, checkpoint, target, options):
    writer = _reader(spark, path, options).writeStream.format("pydelta").option("checkpointLocation", checkpoint)
    writer.trigger(availableNow=True).start(target).awaitTermination()


def _target_ids(target):
    from deltalake import DeltaTable

    return Counter(DeltaTable(target).to_pyarrow_table().column("id").to_pylist())


@pytest.mark.parametrize(
    ("mode", "limits"), [("snapshot", {}), ("snapshot", {"maxFilesPerTrigger": "1"}), ("startingTimestamp", {})]
)
def test_crash_after_the_sink_commit_before_commits_n(spark, tmp_path, mode, limits):
    """The sink committed batch N (its txn is in the target) but Spark did not log commits/N:
    the replayed batch is skipped by the sink, and nothing is lost or doubled."""
    path, checkpoint, target = (str(tmp_path / n) for n in ("t", "ck", "target"))
    _source(path)
    options, expected = MODES[mode]
    options = {**options, **limits}
    _run_sink(spark, path, checkpoint, target, options)
    last = forget_last_spark_commit(checkpoint)
    assert last == (3 if limits else 0)
    write_ids(path, NEW, with_p=False)
    _run_sink(spark, path, checkpoint, target, options)  # a new DataFrame, as a new process has
    assert _target_ids(target) == Counter([*expected, *NEW])


def test_sink_check_constraint_failing_batch_0_once(spark, tmp_path):
    """The issue's deterministic case: a CHECK constraint on the pydelta sink rejects batch 0,
    a commit lands on the source, the constraint is dropped and the query restarted."""
    from deltalake import DeltaTable, write_deltalake

    path, checkpoint, target = (str(tmp_path / n) for n in ("t", "ck", "target"))
    _source(path)
    write_deltalake(target, pa.table({"id": pa.array([], pa.int64()), "v": pa.array([], pa.string())}))
    DeltaTable(target).alter.add_constraint({"neg": "id < 0"})
    with pytest.raises(Exception, match="(?i)constraint"):
        _run_sink(spark, path, checkpoint, target, {})
    assert os.path.exists(os.path.join(checkpoint, "offsets", "0"))
    assert not os.path.exists(os.path.join(checkpoint, "commits", "0"))
    write_ids(path, NEW, with_p=False)
    DeltaTable(target).alter.drop_constraint("neg")
    _run_sink(spark, path, checkpoint, target, {})  # a new DataFrame, as a new process has
    assert _target_ids(target) == Counter([*range(40), *NEW])


_KILLED_QUERY = """
import os, sys, time
from pyspark.sql import SparkSession
path, checkpoint, out, ready = sys.argv[1:5]
spark = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").getOrCreate()
def sink(df, batch_id):
    df.write.mode("overwrite").parquet(os.path.join(out, f"batch={batch_id}"))
    open(ready, "w").close()  # batch 0 written, commits/0 not yet: wait to be killed
    while True:
        time.sleep(1)
q = (spark.readStream.format("pydelta").load(path).writeStream.foreachBatch(sink)
     .option("checkpointLocation", checkpoint).trigger(availableNow=True).start())
q.awaitTermination()
"""


@pytest.mark.slow
def test_sigkill_between_plan_and_commit(spark, tmp_path):
    path, checkpoint, out, ready = (str(tmp_path / n) for n in ("t", "ck", "out", "ready"))
    _source(path)
    script = tmp_path / "query.py"
    script.write_text(textwrap.dedent(_KILLED_QUERY))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([os.getcwd(), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen(
        [sys.executable, str(script), path, checkpoint, out, ready], env=env, start_new_session=True
    )
    try:
        for _ in range(600):  # bounded wait for the query to reach the sink
            if os.path.exists(ready) or proc.poll() is not None:
                break
            try:
                proc.wait(timeout=1)
            except subprocess.TimeoutExpired:
                pass
        assert os.path.exists(ready), "the subprocess query never reached batch 0"
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the query and its Python workers / JVM
        proc.wait()
    assert not os.path.exists(os.path.join(checkpoint, "commits", "0"))
    write_ids(path, NEW, with_p=False)
    _run_foreach(spark, path, checkpoint, out, {})
    batches = _delivered(out)
    assert Counter(i for ids in batches.values() for i in ids) == Counter([*range(40), *NEW])
