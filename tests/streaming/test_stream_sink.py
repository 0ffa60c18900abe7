"""The streaming sink: each micro-batch one commit with a txn (queryId, batchId) so a
replayed batch is skipped, without Spark (commit_batch) and through Spark
(df.writeStream.format("pydelta")), including crashes before and after the commit."""

from __future__ import annotations

import glob
import json
import os
from collections import Counter

import pyarrow as pa
import pytest
from helpers import forget_last_spark_commit

from delta_pyds.errors import StreamSinkError
from delta_pyds.protocol.schema import PrimitiveType, StructField, StructType
from delta_pyds.streaming.sink import commit_batch, sink_app_id, sink_options
from delta_pyds.table.snapshot import Snapshot
from delta_pyds.write.parquet_writer import write_task
from delta_pyds.write.plan import plan_write

SCHEMA = StructType((StructField("id", PrimitiveType("long")), StructField("s", PrimitiveType("string"))))


def _batch(ids):
    return pa.RecordBatch.from_arrays([pa.array(ids, pa.int64()), pa.array([f"s{i}" for i in ids])], names=["id", "s"])


def _write(path, batch_id, ids, *, complete=False, app="app-1", commit=True, **options):
    plan = plan_write(sink_options({"path": path, **options}, complete=complete), SCHEMA)
    result = write_task(plan.spec, [_batch(ids)])
    if not commit:  # the process died before the commit
        return plan, result.adds
    return commit_batch(plan, SCHEMA, result.adds, batch_id=batch_id, app_id=app, num_rows=result.num_rows)


def _ids(path):
    from helpers import deltalake_table

    return Counter(deltalake_table(path).column("id").to_pylist())


def _data_files(path):
    return {os.path.relpath(f, path) for f in glob.glob(os.path.join(path, "**", "*.parquet"), recursive=True)}


def test_each_batch_is_one_commit_with_a_txn(tmp_path):
    path = str(tmp_path / "t")
    assert _write(path, 0, [1, 2]).version == 0
    assert _write(path, 1, [3]).version == 1
    snapshot = Snapshot.load(path)
    assert snapshot.app_transactions == {"app-1": 1}
    assert _ids(path) == Counter([1, 2, 3])


def test_replayed_batch_is_skipped_and_its_files_deleted(tmp_path):
    path = str(tmp_path / "t")
    _write(path, 0, [1, 2])
    before = _data_files(path)
    assert _write(path, 0, [1, 2]) is None  # a crash after the commit: Spark replays batch 0
    assert _data_files(path) == before
    assert Snapshot.load(path).version == 0
    assert _write(path, 0, [1, 2], app="other-query").version == 1  # another query's batch 0 is new


def test_crash_before_commit_leaves_no_duplicates(tmp_path):
    path = str(tmp_path / "t")
    _write(path, 0, [1])
    _write(path, 1, [2, 3], commit=False)  # files written, commit never happened
    assert _write(path, 1, [2, 3]).version == 1  # the replay commits its own files
    assert _write(path, 2, [4]).version == 2
    assert _ids(path) == Counter([1, 2, 3, 4])


def test_complete_mode_replaces_the_table(tmp_path):
    path = str(tmp_path / "t")
    _write(path, 0, [1, 2], complete=True)
    _write(path, 1, [1, 2, 3], complete=True)
    assert _ids(path) == Counter([1, 2, 3])
    assert _write(path, 1, [9], complete=True) is None


def test_files_written_for_an_older_schema_are_refused(tmp_path):
    path = str(tmp_path / "t")
    _write(path, 0, [1])
    plan, adds = _write(path, 1, [2], commit=False)
    from deltalake import write_deltalake

    write_deltalake(
        path,
        pa.table({"id": pa.array([5], pa.int64()), "s": ["x"], "extra": [1.0]}),
        mode="append",
        schema_mode="merge",
    )
    with pytest.raises(StreamSinkError, match="changed while the streaming query was running"):
        commit_batch(plan, SCHEMA, adds, batch_id=1, app_id="app-1")
    assert not any(os.path.exists(os.path.join(path, a["path"])) for a in adds)


def test_app_id_comes_from_the_query_checkpoint(tmp_path):
    ck = tmp_path / "ck"
    ck.mkdir()
    (ck / "metadata").write_text(json.dumps({"id": "query-42"}))
    assert sink_app_id({"checkpointlocation": str(ck)}) == "query-42"
    assert sink_app_id({"checkpointlocation": str(ck), "txnappid": "mine"}) == "mine"
    with pytest.raises(StreamSinkError, match="checkpointLocation"):
        sink_app_id({})
    with pytest.raises(ValueError, match="txnVersion"):
        sink_options({"path": "/x", "txnVersion": "3"}, complete=False)


# ------------------------------------------------------------------------- Spark
def _source(path, k):
    from deltalake import write_deltalake

    write_deltalake(path, pa.table({"id": pa.array(range(10 * k, 10 * k + 10), pa.int64())}), mode="append")


def test_spark_sink_is_exactly_once_across_crashes(spark, tmp_path):
    src, dst, ck = (str(tmp_path / n) for n in ("src", "dst", "ck"))
    for k in range(3):
        _source(src, k)

    def run():
        q = (
            spark.readStream.format("pydelta")
            .option("maxFilesPerTrigger", "1")
            .load(src)
            .writeStream.format("pydelta")
            .option("checkpointLocation", ck)
            .trigger(availableNow=True)
            .start(dst)
        )
        q.awaitTermination()
        return q.id

    query_id = run()
    assert Snapshot.load(dst).app_transactions == {query_id: 2}
    assert Snapshot.load(dst).version == 2  # one commit per micro-batch

    forget_last_spark_commit(ck)  # crash after the Delta commit: the replay must commit nothing
    run()
    assert Snapshot.load(dst).version == 2

    batch = forget_last_spark_commit(ck)  # crash before the Delta commit
    os.remove(os.path.join(dst, "_delta_log", f"{2:020d}.json"))
    _source(src, 3)
    run()
    snapshot = Snapshot.load(dst)
    assert snapshot.app_transactions == {query_id: batch + 1}
    assert _ids(dst) == Counter(range(40))


def test_spark_sink_complete_mode(spark, tmp_path):
    src, dst, ck = (str(tmp_path / n) for n in ("src", "dst", "ck"))
    for k in range(2):
        _source(src, k)
    for _ in range(2):
        q = (
            spark.readStream.format("pydelta")
            .load(src)
            .selectExpr("id % 2 as k")
            .groupBy("k")
            .count()
            .writeStream.format("pydelta")
            .outputMode("complete")
            .option("checkpointLocation", ck)
            .trigger(availableNow=True)
            .start(dst)
        )
        q.awaitTermination()
        _source(src, 2)
    rows = sorted(tuple(r.values()) for r in __import__("helpers").deltalake_table(dst).to_pylist())
    assert rows == [(0, 15), (1, 15)]
