"""The ``dataChange`` write option (delta-spark's rearrangement: ``option("dataChange", "false")``):
every add and remove of the commit says ``dataChange=false``, streams skip the commit (delta-io's
examples/python/streaming.py repartitions a streamed table so), the rows stay, and what would change
the table's metadata or rewrite rows by a data filter is refused by delta-spark's error classes."""

from __future__ import annotations

import pytest
from helpers import arrow_rows, deltalake_table, log_actions

from delta_pyds import read_delta, write_delta
from delta_pyds.errors import OptionValueError


def _file_actions(path, version):
    return [a[k] for a in log_actions(path, version) for k in ("add", "remove") if k in a]


@pytest.mark.parametrize("door", ["pydelta", "write_delta"])
def test_a_rearrangement_is_skipped_by_a_stream_and_keeps_the_rows(spark, tmp_path, door):
    path, sink, checkpoint = (str(tmp_path / n) for n in ("t", "sink", "chk"))
    spark.range(10).selectExpr("id", "cast(id % 3 as int) p").write.format("pydelta").partitionBy("p").save(path)

    def stream_once():
        q = (
            spark.readStream.format("pydelta")
            .load(path)
            .writeStream.format("pydelta")
            .option("checkpointLocation", checkpoint)
            .trigger(availableNow=True)
            .start(sink)
        )
        q.awaitTermination()
        assert q.exception() is None, q.exception()

    stream_once()
    rearranged = read_delta(spark, path).repartition(4)
    if door == "pydelta":
        rearranged.write.format("pydelta").mode("overwrite").option("dataChange", "false").save(path)
    else:
        write_delta(rearranged, path, mode="overwrite", dataChange="false")
    actions = _file_actions(path, 1)
    assert actions and all(a["dataChange"] is False for a in actions)
    assert not any("cdc" in a for a in log_actions(path, 1))
    assert sorted(r.id for r in read_delta(spark, path).collect()) == list(range(10))
    assert arrow_rows(deltalake_table(path), ["id"]) == [(i,) for i in range(10)]
    spark.range(10, 12).selectExpr("id", "cast(id % 3 as int) p").write.format("pydelta").mode("append").save(path)
    stream_once()  # the rearrangement is skipped (no "changed existing data" refusal), the append delivered
    assert sorted(r.id for r in read_delta(spark, sink).collect()) == list(range(12))


def test_what_a_rearrangement_cannot_do_is_refused(spark, tmp_path):
    path = str(tmp_path / "t")
    df = spark.range(4).selectExpr("id", "cast(id % 2 as int) p")
    with pytest.raises(OptionValueError, match=r"DELTA_DATA_CHANGE_FALSE.*'Create a Delta table'"):
        write_delta(df, path, dataChange="false", partitionBy="p")
    write_delta(df, path, partitionBy="p")
    with pytest.raises(OptionValueError, match="DELTA_DATA_CHANGE_FALSE.*Overwrite the Delta table schema"):
        write_delta(df, path, mode="overwrite", overwriteSchema="true", dataChange="false")
    with pytest.raises(OptionValueError, match="DELTA_DATA_CHANGE_FALSE.*'Change the Delta table schema'"):
        write_delta(df.selectExpr("*", "1 AS x"), path, mode="append", mergeSchema="true", dataChange="false")
    with pytest.raises(OptionValueError, match="DELTA_REPLACE_WHERE_WITH_FILTER_DATA_CHANGE_UNSET.*id > 1"):
        write_delta(df.where("id > 1"), path, mode="overwrite", replaceWhere="id > 1", dataChange="false")
    with pytest.raises(OptionValueError, match="dataChange"):
        write_delta(df, path, mode="append", dataChange="maybe")
    assert [a for a in log_actions(path, 0) if "add" in a] and not (
        tmp_path / "t" / "_delta_log" / f"{1:020d}.json"
    ).exists()
    # a replaceWhere on partition columns is a rearrangement delta-spark allows
    write_delta(
        read_delta(spark, path).where("p = 1"), path, mode="overwrite", replaceWhere="p = 1", dataChange="false"
    )
    assert all(a["dataChange"] is False for a in _file_actions(path, 1))
    assert sorted(r.id for r in read_delta(spark, path).collect()) == [0, 1, 2, 3]
