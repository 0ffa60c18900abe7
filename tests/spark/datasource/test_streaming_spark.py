"""Streaming reads through Spark: restarts after crashes deliver every row once, rate
limits per micro-batch, Trigger.AvailableNow, and clear errors for non-append changes."""

from __future__ import annotations

import glob
import os
from collections import Counter

import pyarrow.parquet as pq
import pytest
from helpers import write_ids

from delta_pyds.cdf.reader import read_changes
from delta_pyds.spark.session.compat import STREAM_ADMISSION


class Crash(Exception):
    pass


# pyspark 4.1 has no read limits for Python streaming sources: maxFilesPerTrigger /
# maxBytesPerTrigger are refused there by name (tests/spark/session/test_spark_versions.py checks that)
needs_read_limits = pytest.mark.skipif(
    not STREAM_ADMISSION, reason="read limits need pyspark 4.2+ (refused by name on 4.1, tested there)"
)


def _run(spark, path, checkpoint, out, crash_on_call, **options):
    """One run of the query with Trigger.AvailableNow: each micro-batch is written to
    out/batch=<id> (overwritten when a batch is replayed); the run crashes on its
    ``crash_on_call``-th batch, before writing it, as a process dying mid-batch would."""
    calls = []

    def sink(df, batch_id):
        calls.append(batch_id)
        if crash_on_call and len(calls) == crash_on_call:
            raise Crash(f"simulated crash in batch {batch_id}")
        df.write.mode("overwrite").parquet(os.path.join(out, f"batch={batch_id}"))

    reader = spark.readStream.format("pydelta")
    for k, v in options.items():
        reader = reader.option(k, v)
    query = (
        reader.load(path)
        .writeStream.foreachBatch(sink)
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .start()
    )
    if crash_on_call:
        with pytest.raises(Exception, match="simulated crash"):
            query.awaitTermination()
    else:
        query.awaitTermination()
    return calls


def _delivered(out, columns):
    rows = []
    for f in glob.glob(os.path.join(out, "batch=*", "*.parquet")):
        t = pq.read_table(f)
        rows.extend(tuple(r[c] for c in columns) for r in t.to_pylist())
    return Counter(rows)


@needs_read_limits
def test_change_feed_stream_restarted_three_times_delivers_every_change_once(spark, tmp_path):
    from deltalake import DeltaTable

    path, checkpoint, out = (str(tmp_path / n) for n in ("t", "ck", "out"))
    write_ids(
        path,
        list(range(100)),
        mode="overwrite",
        partition_by=["p"],
        configuration={"delta.enableChangeDataFeed": "true"},
    )
    write_ids(path, list(range(100, 120)))
    options = {"readChangeFeed": "true", "startingVersion": "0", "maxFilesPerTrigger": "4"}
    replayed = []
    for run, change in enumerate(
        [
            lambda: DeltaTable(path).update(predicate="id % 10 = 3", updates={"v": "'u'"}),
            lambda: DeltaTable(path).delete("id % 7 = 0"),
            lambda: write_ids(path, list(range(200, 230))),
        ]
    ):
        calls = _run(spark, path, checkpoint, out, crash_on_call=2 if run else 1, **options)
        replayed.append(calls)
        change()  # new commits arrive while the query is down
    _run(spark, path, checkpoint, out, crash_on_call=None, **options)
    assert all(calls[0] == prev[-1] for prev, calls in zip(replayed, replayed[1:]))  # the crashed batch re-ran
    columns = ["id", "v", "p", "_change_type", "_commit_version"]
    expected = Counter(tuple(r[c] for c in columns) for r in read_changes(path, starting_version=0).to_pylist())
    assert _delivered(out, columns) == expected


@pytest.mark.slow
@needs_read_limits
def test_append_stream_restarted_three_times_delivers_every_row_once(spark, tmp_path):
    path, checkpoint, out = (str(tmp_path / n) for n in ("t", "ck", "out"))
    for k in range(4):
        write_ids(path, list(range(10 * k, 10 * k + 10)))
    for k in range(3):
        _run(spark, path, checkpoint, out, crash_on_call=2, maxFilesPerTrigger="1")
        write_ids(path, list(range(100 + 10 * k, 110 + 10 * k)))
    _run(spark, path, checkpoint, out, crash_on_call=None, maxFilesPerTrigger="1")
    expected = list(range(40)) + list(range(100, 130))
    assert _delivered(out, ["id"]) == Counter((i,) for i in expected)


def _memory_stream(spark, path, name, **options):
    reader = spark.readStream.format("pydelta")
    for k, v in options.items():
        reader = reader.option(k, v)
    query = reader.load(path).writeStream.format("memory").queryName(name).trigger(availableNow=True).start()
    query.awaitTermination()
    return [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]]


@needs_read_limits
def test_rate_limits_per_micro_batch(spark, tmp_path):
    path = str(tmp_path / "t")
    for k in range(5):
        write_ids(path, list(range(10 * k, 10 * k + 10)))  # one 10-row file per commit
    assert _memory_stream(spark, path, "by_files", maxFilesPerTrigger="2") == [20, 20, 10]
    assert _memory_stream(spark, path, "by_bytes", maxBytesPerTrigger="1") == [10] * 5
    assert sorted(r.id for r in spark.sql("select id from by_bytes").collect()) == list(range(50))


def test_non_append_change_fails_with_the_option_to_set(spark, tmp_path):
    from deltalake import DeltaTable

    path = str(tmp_path / "t")
    write_ids(path, list(range(10)))
    DeltaTable(path).delete("id < 3")
    with pytest.raises(Exception, match="skipChangeCommits=true"):
        _memory_stream(spark, path, "fails", startingVersion="0")
    assert _memory_stream(spark, path, "skips", startingVersion="0", skipChangeCommits="true") == [10]


def test_a_restart_across_a_rename_is_refused_and_the_sink_gets_one_schema(spark, tmp_path):
    import delta_pyds
    from delta_pyds import DeltaTable as PyDeltaTable

    path, checkpoint, out = (str(tmp_path / n) for n in ("t", "ck", "out"))
    rows = lambda ids: spark.createDataFrame([(i, f"v{i}") for i in ids], "id long, v string")  # noqa: E731
    delta_pyds.write_delta(rows([1, 2]), path, **{"delta.columnMapping.mode": "name"})
    _run(spark, path, checkpoint, out, crash_on_call=None)
    delta_pyds.write_delta(rows([3]), path)  # not read yet when the column is renamed
    PyDeltaTable.forPath(spark, path).renameColumn("v", "w")
    delta_pyds.write_delta(rows([4]).withColumnRenamed("v", "w"), path)
    with pytest.raises(Exception, match="DELTA_STREAMING_INCOMPATIBLE_SCHEMA_CHANGE_USE_SCHEMA_LOG"):
        _run(spark, path, checkpoint, out, crash_on_call=None)
    delivered = [pq.read_table(f) for f in glob.glob(os.path.join(out, "batch=*", "*.parquet"))]
    assert {tuple(t.column_names) for t in delivered} == {("id", "v")}
    assert _delivered(out, ["id", "v"]) == Counter([(1, "v1"), (2, "v2")])


@pytest.mark.parametrize("change", ["rename", "drop and re-add"])
def test_a_restart_right_after_a_non_additive_change_is_refused(spark, tmp_path, change):
    # the change is the first commit after the last batch: the restarted query would read only
    # files of the new schema, but its sink already holds rows of the old one
    import delta_pyds

    path, checkpoint, out = (str(tmp_path / n) for n in ("t", "ck", "out"))

    def rows(ids, col="v"):
        return spark.createDataFrame([(i, f"{col}{i}") for i in ids], f"id long, {col} string")

    delta_pyds.write_delta(rows([1, 2]), path, **{"delta.columnMapping.mode": "name"})
    _run(spark, path, checkpoint, out, crash_on_call=None)
    q = f"delta.`{path}`"
    if change == "rename":
        delta_pyds.sql(spark, f"ALTER TABLE {q} RENAME COLUMN v TO w")
        delta_pyds.write_delta(rows([3], "w"), path)
    else:
        delta_pyds.sql(spark, f"ALTER TABLE {q} DROP COLUMN v")
        delta_pyds.sql(spark, f"ALTER TABLE {q} ADD COLUMNS (v string)")
        delta_pyds.write_delta(rows([3], "x").withColumnRenamed("x", "v"), path)
    at_start = r"DELTA_STREAMING_INCOMPATIBLE_SCHEMA_CHANGE_USE_SCHEMA_LOG.*when the stream \(re\)started"
    with pytest.raises(Exception, match=at_start):
        _run(spark, path, checkpoint, out, crash_on_call=None)
    delivered = [pq.read_table(f) for f in glob.glob(os.path.join(out, "batch=*", "*.parquet"))]
    assert {tuple(t.column_names) for t in delivered} == {("id", "v")}
    assert _delivered(out, ["id", "v"]) == Counter([(1, "v1"), (2, "v2")])
    # delta-spark's way on: a new query (new checkpoint) from the version of the change
    again = str(tmp_path / "out2")
    _run(spark, path, str(tmp_path / "ck2"), again, crash_on_call=None, startingVersion="1")
    name = "w" if change == "rename" else "v"
    expected = [(3, "w3")] if change == "rename" else [(3, "x3")]
    assert _delivered(again, ["id", name]) == Counter(expected)
