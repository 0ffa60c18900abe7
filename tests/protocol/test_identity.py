"""Identity columns: values generated on write (commit_arrow, Spark tasks, MERGE inserts),
high-water marks committed, explicit values refused or kept as the table says, and
DML keeping the values rows have. Checked against deltalake and a Spark-written table."""

from __future__ import annotations

import json
import os

import pyarrow as pa
import pytest
from helpers import arrow_rows, deltalake_table, spark_rows

from delta_pyds import DeltaTable
from delta_pyds.errors import ConstraintViolationError
from delta_pyds.protocol.identity import TASK_SPACING, IdentityGenerator, identity_columns
from delta_pyds.table.snapshot import Snapshot
from delta_pyds.write.plan import commit_arrow


def _identity_table(path, *, start=1, step=1, hwm=None, explicit=False):
    """A table (id long identity, v string) whose log declares the identity column."""
    meta = {"delta.identity.start": start, "delta.identity.step": step, "delta.identity.allowExplicitInsert": explicit}
    if hwm is not None:
        meta["delta.identity.highWaterMark"] = hwm
    schema = {
        "type": "struct",
        "fields": [
            {"name": "id", "type": "long", "nullable": False, "metadata": meta},
            {"name": "v", "type": "string", "nullable": True, "metadata": {}},
        ],
    }
    os.makedirs(os.path.join(path, "_delta_log"))
    with open(os.path.join(path, "_delta_log", f"{0:020d}.json"), "w") as out:
        out.write(
            json.dumps(
                {
                    "protocol": {
                        "minReaderVersion": 1,
                        "minWriterVersion": 7,
                        "writerFeatures": ["identityColumns", "invariants"],
                    }
                }
            )
            + "\n"
        )
        out.write(
            json.dumps(
                {
                    "metaData": {
                        "id": "t",
                        "format": {"provider": "parquet", "options": {}},
                        "schemaString": json.dumps(schema),
                        "partitionColumns": [],
                        "configuration": {},
                        "createdTime": 1,
                    }
                }
            )
            + "\n"
        )


def _hwm(path):
    (col,) = identity_columns(Snapshot.load(path).schema)
    return col.high_water_mark


@pytest.mark.parametrize(
    "start,step,hwm,expected",
    [
        (10, 5, None, [10, 15, 20]),  # a new column starts at start
        (1, 10, 15, [21, 31, 41]),  # a mark off the grid: the next grid value beyond it
        (-1, -2, -3, [-5, -7, -9]),  # a negative step goes down from the mark
        (0, 3, -100, [0, 3, 6]),  # never below start (k >= 0)
    ],
)
def test_write_arrow_generates_values_beyond_the_high_water_mark(tmp_path, start, step, hwm, expected):
    path = str(tmp_path / "t")
    _identity_table(path, start=start, step=step, hwm=hwm)
    commit_arrow(path, pa.table({"v": ["a", "b", "c"]}))
    rows = arrow_rows(deltalake_table(path), ["id", "v"])
    assert sorted(rows) == sorted(zip(expected, "abc"))
    assert _hwm(path) == expected[-1]
    commit_arrow(path, pa.table({"v": ["d"]}))
    assert _hwm(path) == expected[-1] + step
    assert (expected[-1] + step, "d") in arrow_rows(deltalake_table(path), ["id", "v"])


def test_explicit_values_are_refused_unless_the_column_allows_them(tmp_path):
    strict, lenient = str(tmp_path / "strict"), str(tmp_path / "lenient")
    _identity_table(strict)
    with pytest.raises(ValueError, match="identity column id.*allowExplicitInsert=false"):
        commit_arrow(strict, pa.table({"id": [7], "v": ["x"]}))
    assert Snapshot.load(strict).version == 0
    _identity_table(lenient, hwm=3, explicit=True)
    commit_arrow(lenient, pa.table({"id": [100, 2], "v": ["x", "y"]}))
    assert sorted(arrow_rows(deltalake_table(lenient), ["id", "v"])) == [(2, "y"), (100, "x")]
    assert _hwm(lenient) == 3  # explicit values do not move the mark
    log = open(os.path.join(lenient, "_delta_log", f"{1:020d}.json")).read()
    assert '"metaData"' not in log
    commit_arrow(lenient, pa.table({"v": ["z"]}))  # left out: generated
    assert (4, "z") in arrow_rows(deltalake_table(lenient), ["id", "v"])


def test_overflow_fails_the_write_and_leaves_the_table_unchanged(tmp_path):
    path = str(tmp_path / "t")
    _identity_table(path, start=(1 << 63) - 2, step=1)
    with pytest.raises(ConstraintViolationError, match="overflows a long"):
        commit_arrow(path, pa.table({"v": ["a", "b", "c"]}))
    assert Snapshot.load(path).version == 0
    assert [n for n in os.listdir(path) if n.endswith(".parquet")] == []


def test_tasks_number_their_rows_apart():
    (col,) = identity_columns(_schema(start=5, step=2, hwm=9))
    batch = pa.RecordBatch.from_pydict({"id": pa.array([None] * 3, pa.int64()), "v": ["a", "b", "c"]})
    gen = IdentityGenerator((col,), task_id=2)
    out = gen.fill(batch)
    first = 5 + 2 * (3 + 2 * TASK_SPACING)  # k0 = 3 (value 11 is the first beyond 9)
    assert out.column(0).to_pylist() == [first, first + 2, first + 4]
    assert gen.fill(batch.slice(0, 1)).column(0).to_pylist() == [first + 6]
    assert gen.marks == {"id": first + 6}


def _schema(**kw):
    from delta_pyds.protocol.schema import PrimitiveType, StructField, StructType

    meta = {
        "delta.identity.start": kw["start"],
        "delta.identity.step": kw["step"],
        "delta.identity.highWaterMark": kw["hwm"],
        "delta.identity.allowExplicitInsert": False,
    }
    return StructType(
        (StructField("id", PrimitiveType("long"), False, meta), StructField("v", PrimitiveType("string")))
    )


def test_spark_appends_and_merges_into_a_spark_written_identity_table(spark, copy_table):
    """delta-rs's checkpoint-v2-table was written by Databricks with ``id`` GENERATED ALWAYS
    AS IDENTITY (high-water mark 44): our appends and MERGE inserts continue it."""
    path = copy_table("delta-rs/checkpoint-v2-table")
    before = spark_rows(spark.read.format("pydelta").load(path).select("id"))
    assert _hwm(path) == 44 and max(r[0] for r in before) <= 44
    new = (
        spark.createDataFrame([(f"n{i}",) for i in range(6)], "name string")
        .selectExpr("name", "current_timestamp() created_at")
        .repartition(3)
    )
    new.write.format("pydelta").mode("append").save(path)
    df = spark.read.format("pydelta").load(path)
    added = [r["id"] for r in df.where("name like 'n%'").collect()]
    assert len(added) == len(set(added)) == 6 and min(added) > 44
    assert _hwm(path) == max(added)
    assert sorted(r[0] for r in arrow_rows(deltalake_table(path), ["id"])) == sorted(
        r[0] for r in spark_rows(df.select("id"))
    )
    assert df.select("id").distinct().count() == df.count()

    with pytest.raises(Exception, match="allowExplicitInsert=false"):
        spark.createDataFrame([(1, "x")], "id long, name string").write.format("pydelta").mode("append").save(path)

    table = DeltaTable.forPath(spark, path)
    source = spark.createDataFrame([("n0",), ("m1",), ("m2",)], "name string").selectExpr(
        "name", "timestamp'2024-01-01 00:00:00' created_at"
    )
    mark = _hwm(path)
    table.alias("t").merge(
        source.alias("s"), "t.name = s.name"
    ).whenMatchedUpdateAll().whenNotMatchedInsertAll().execute()
    df = spark.read.format("pydelta").load(path)
    merged = {r["name"]: r["id"] for r in df.where("name in ('n0', 'm1', 'm2')").collect()}
    assert merged["n0"] in added  # updateAll kept the generated value
    assert min(merged["m1"], merged["m2"]) > mark and merged["m1"] != merged["m2"]
    assert _hwm(path) == max(merged["m1"], merged["m2"])
    assert df.select("id").distinct().count() == df.count()

    with pytest.raises(ValueError, match="cannot set identity column id"):
        table.update("name = 'm1'", {"id": "0"})
    rows = sorted((r["id"], r["name"]) for r in df.collect() if r["name"] != "m1")
    table.delete("name = 'm1'")
    after = sorted((r["id"], r["name"]) for r in spark.read.format("pydelta").load(path).collect())
    assert after == rows  # rewrites keep the values
    assert sorted(arrow_rows(deltalake_table(path), ["id", "name"])) == after


def _stream(spark, src, dst, ck, sink_format):
    """An availableNow stream of the table ``src`` into ``dst`` through ``sink_format``'s sink."""
    reader = spark.readStream.format("pydelta").load(src)
    writer = reader.writeStream.format(sink_format).option("checkpointLocation", ck)
    return writer.trigger(availableNow=True).start(dst)


def test_streaming_sink_refuses_identity_tables(spark, tmp_path):
    src, dst, ck = (str(tmp_path / n) for n in ("src", "dst", "ck"))
    commit_arrow(src, pa.table({"v": ["a", "b"]}))
    _identity_table(dst)
    query = _stream(spark, src, dst, ck, "pydelta")
    with pytest.raises(Exception, match="streaming sink cannot generate values for identity column"):
        query.awaitTermination()
    assert Snapshot.load(dst).version == 0


def test_native_stream_generates_identity_values_per_batch(spark, tmp_path):
    """format("delta") streams on the native path, which plans each micro-batch afresh: every
    batch's identity values lie above the previous batch's high-water mark."""
    src, dst, ck = (str(tmp_path / n) for n in ("src", "dst", "ck"))
    _identity_table(dst)
    for k in range(3):  # one micro-batch per run: one source commit each
        commit_arrow(src, pa.table({"v": [f"b{k}-{i}" for i in range(4)]}))
        _stream(spark, src, dst, ck, "delta").awaitTermination()
    rows = arrow_rows(deltalake_table(dst), ["id", "v"])
    assert len(rows) == 12 and len({i for i, _ in rows}) == 12
    by_batch = {k: {i for i, v in rows if v.startswith(f"b{k}-")} for k in range(3)}
    assert max(by_batch[0]) < min(by_batch[1]) and max(by_batch[1]) < min(by_batch[2])
    assert _hwm(dst) == max(i for i, _ in rows)


def test_overwrite_schema_replaces_the_identity_declaration(tmp_path):
    path = str(tmp_path / "t")
    _identity_table(path, hwm=5)
    commit_arrow(path, pa.table({"id": [1, 1], "v": ["a", "b"]}), mode="overwrite", options={"overwriteSchema": "true"})
    assert identity_columns(Snapshot.load(path).schema) == ()
    assert sorted(arrow_rows(deltalake_table(path), ["id", "v"])) == [(1, "a"), (1, "b")]
    commit_arrow(path, pa.table({"v": ["c"]}))  # a plain column now: left out means null
    assert (None, "c") in arrow_rows(deltalake_table(path), ["id", "v"])
