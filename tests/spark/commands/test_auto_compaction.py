"""Auto compaction after every writer (write_delta, the pydelta data source, the streaming sink,
DELETE, UPDATE, MERGE): the session confs spark.databricks.delta.autoCompact.* (enabled wins
over the table property, minNumFiles) and the table property delta.autoOptimize.autoCompact
(the switch of the data source and the sink, which get no session conf, beside the confs'
names given as write options), the OPTIMIZE
commit with auto=true in the history, and the compacted table read identically through the
data source, read_delta and deltalake. Races and the settings' rules: tests/operations/test_auto_compact.py."""

from __future__ import annotations

import contextlib

import pyarrow as pa
import pytest
from dml_helpers import COLS, make_dml_table
from helpers import deltalake_table, spark_rows
from pyspark.sql import functions as F

from delta_pyds import DeltaTable, read_delta, write_delta
from delta_pyds.table.snapshot import Snapshot
from delta_pyds.write.plan import commit_arrow

ON = "spark.databricks.delta.autoCompact.enabled"
MIN_FILES = "spark.databricks.delta.autoCompact.minNumFiles"


@contextlib.contextmanager
def session_confs(spark, **confs):
    keys = {k.replace("__", "."): v for k, v in confs.items()}
    try:
        for k, v in keys.items():
            spark.conf.set(k, v)
        yield
    finally:
        for k in keys:
            spark.conf.unset(k)


def _three_ways(spark, path, cols):
    ours = spark_rows(spark.read.format("pydelta").load(path).select(*cols))
    native = spark_rows(read_delta(spark, path).select(*cols))
    theirs = sorted(tuple(r[c] for c in cols) for r in deltalake_table(path).select(cols).to_pylist())
    assert ours == native
    assert sorted(tuple(r) for r in ours) == theirs
    return ours


def _last_operation(spark, path):
    h = DeltaTable.forPath(spark, path).history(1).collect()[0]
    return h.operation, dict(h.operationParameters or {})


def _ids_df(spark, start, n, parts=1):
    return spark.range(start, start + n).select(F.col("id"), (F.col("id") % 2).alias("p")).repartition(parts)


def test_write_delta_with_the_session_conf(spark, tmp_path):
    path = str(tmp_path / "t")
    with session_confs(spark, **{ON: "true", MIN_FILES: "3"}):
        write_delta(_ids_df(spark, 0, 10), path, partitionBy="p")
        write_delta(_ids_df(spark, 10, 10), path)
        assert _last_operation(spark, path)[0] == "WRITE"
        write_delta(_ids_df(spark, 20, 10), path)  # the third small file in each partition
    op, params = _last_operation(spark, path)
    assert op == "OPTIMIZE" and params["auto"] == "true" and params["zOrderBy"] == "[]"
    snap = Snapshot.load(path)
    assert snap.version == 3 and snap.files.num_rows == 2  # one file per partition
    assert sorted(r[0] for r in _three_ways(spark, path, ["id", "p"])) == list(range(30))


def test_the_session_conf_false_turns_off_the_table_property(spark, tmp_path):
    path = str(tmp_path / "t")
    with session_confs(spark, **{ON: "false", MIN_FILES: "2"}):
        write_delta(_ids_df(spark, 0, 10), path, **{"delta.autoOptimize.autoCompact": "true"})
        write_delta(_ids_df(spark, 10, 10), path)
    assert _last_operation(spark, path)[0] == "WRITE"
    with session_confs(spark, **{MIN_FILES: "2"}):  # unset: the property decides
        write_delta(_ids_df(spark, 20, 10), path)
    assert _last_operation(spark, path)[0] == "OPTIMIZE"
    assert Snapshot.load(path).files.num_rows == 1


def test_the_data_source_follows_the_table_property(spark, tmp_path):
    path = str(tmp_path / "t")
    # 50 files (the default minNumFiles) in one write: the data source sees no session conf
    df = _ids_df(spark, 0, 100, parts=50).drop("p")
    df.write.format("pydelta").mode("append").option("delta.autoOptimize.autoCompact", "true").save(path)
    op, params = _last_operation(spark, path)
    assert op == "OPTIMIZE" and params["auto"] == "true"
    assert Snapshot.load(path).files.num_rows == 1
    plain = str(tmp_path / "plain")
    df.write.format("pydelta").mode("append").save(plain)
    assert _last_operation(spark, plain)[0] == "WRITE" and Snapshot.load(plain).files.num_rows == 50
    assert sorted(r[0] for r in _three_ways(spark, path, ["id"])) == list(range(100))


def test_the_data_source_takes_the_confs_as_write_options(spark, tmp_path):
    """No session conf reaches a Python data source's commit: the confs' names are options."""
    path = str(tmp_path / "t")

    def append(start, **options):
        w = _ids_df(spark, start, 10).drop("p").write.format("pydelta").mode("append")
        for k, v in options.items():
            w = w.option(k, v)
        w.save(path)

    with session_confs(spark, **{ON: "true", MIN_FILES: "2"}):  # invisible to the data source
        append(0)
        append(10)
    assert _last_operation(spark, path)[0] == "WRITE"
    append(20, **{ON: "true", MIN_FILES: "3"})
    op, params = _last_operation(spark, path)
    assert op == "OPTIMIZE" and params["auto"] == "true"
    assert Snapshot.load(path).files.num_rows == 1
    with pytest.raises(Exception, match="minNumFiles"):  # a bad value fails before data moves
        append(30, **{MIN_FILES: "lots"})
    assert sorted(r[0] for r in _three_ways(spark, path, ["id"])) == list(range(30))
    prop = str(tmp_path / "prop")  # the table property on, the option false wins
    commit_arrow(prop, pa.table({"id": pa.array([-1], pa.int64())}), options={"delta.autoOptimize.autoCompact": "true"})
    for start in (0, 10):
        _ids_df(spark, start, 10).drop("p").write.format("pydelta").mode("append").option(ON, "false").option(
            MIN_FILES, "2"
        ).save(prop)
    assert _last_operation(spark, prop)[0] == "WRITE" and Snapshot.load(prop).files.num_rows == 3


def test_the_streaming_sink_follows_the_table_property(spark, tmp_path):
    src, dst, ck = (str(tmp_path / n) for n in ("src", "dst", "ck"))
    commit_arrow(src, pa.table({"id": pa.array(range(100), pa.int64())}))
    commit_arrow(dst, pa.table({"id": pa.array([], pa.int64())}), options={"delta.autoOptimize.autoCompact": "true"})
    q = (
        spark.readStream.format("pydelta")
        .load(src)
        .repartition(50)
        .writeStream.format("pydelta")
        .option("checkpointLocation", ck)
        .trigger(availableNow=True)
        .start(dst)
    )
    q.awaitTermination()
    op, _ = _last_operation(spark, dst)
    assert op == "OPTIMIZE"
    assert Snapshot.load(dst).files.num_rows == 1
    assert sorted(r[0] for r in _three_ways(spark, dst, ["id"])) == list(range(100))


@pytest.mark.slow
def test_delete_update_and_merge_each_trigger_it(spark, tmp_path):
    path = make_dml_table(str(tmp_path / "t"), files=4, rows_per_file=10, dv=True)
    t = DeltaTable.forPath(spark, path)
    with session_confs(spark, **{ON: "true", MIN_FILES: "2"}):
        t.delete("id % 7 = 0")  # deletion vectors on the 4 files: compacted with them applied
        assert _last_operation(spark, path)[0] == "OPTIMIZE"
        snap = Snapshot.load(path)
        assert snap.files.num_rows == 1 and snap.files.column("deletion_vector").to_pylist() == [None]
        t.update("id = 1", {"name": "'one'"})
        assert _last_operation(spark, path)[0] == "OPTIMIZE"
        src = spark.createDataFrame([(2, "two"), (100, "new")], "id long, name string")
        t.alias("t").merge(src.alias("s"), "t.id = s.id").whenMatchedUpdate(set={"name": "s.name"}).execute()
        assert _last_operation(spark, path)[0] == "OPTIMIZE"
    rows = {r[0]: r for r in _three_ways(spark, path, COLS)}
    assert 7 not in rows and rows[1][2] == "one" and rows[2][2] == "two" and 100 not in rows
    assert Snapshot.load(path).files.num_rows == 1


def test_a_row_tracking_table_is_compacted_by_spark(spark, tmp_path):
    # pyarrow alone cannot carry row ids: OPTIMIZE's Spark rewrite does (its own tests check the ids)
    path = str(tmp_path / "t")
    commit_arrow(path, pa.table({"id": pa.array(range(5), pa.int64())}), options={"delta.enableRowTracking": "true"})
    with session_confs(spark, **{ON: "true", MIN_FILES: "2"}):
        write_delta(spark.range(5, 10), path)
    assert _last_operation(spark, path)[0] == "OPTIMIZE"
    assert Snapshot.load(path).files.num_rows == 1
    assert sorted(r[0] for r in _three_ways(spark, path, ["id"])) == list(range(10))
