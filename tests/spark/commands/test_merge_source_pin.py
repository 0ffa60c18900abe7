"""MERGE pins its source as delta-spark's ``materializeSource`` does: a local checkpoint whose
blocks are never recomputed from the source, so a non-deterministic source gives both phases
the same rows even when every cache of the session is dropped between them (a cache's blocks,
evicted or lost with an executor, would be recomputed with other values)."""

from __future__ import annotations

import random

import pyarrow as pa
from deltalake import write_deltalake

from delta_pyds import DeltaTable, read_delta
from delta_pyds.spark.commands.merge import builder
from delta_pyds.spark.session.conf import PIN_TARGET_CONF


def test_a_non_deterministic_source_is_read_once_when_caches_are_dropped(spark, tmp_path, monkeypatch):
    from pyspark.sql import functions as F

    path = str(tmp_path / "t")
    for part in range(4):
        ids = list(range(part * 50, (part + 1) * 50))
        write_deltalake(path, pa.table({"id": pa.array(ids, pa.int64()), "val": [0.0] * 50}), mode="append")
    # each source row either matches target row i or is the new key i + 1000, at random: a
    # Python UDF draws again when computed again (rand() would not: Spark fixes its seed)
    key = F.udf(lambda i: i + (0 if random.random() < 0.5 else 1000), "long").asNondeterministic()
    src = spark.range(200).select(key("id").alias("id"), F.lit(1.0).alias("val"))
    phase_2 = builder.write_all_changes

    def after_dropping_caches(*args, **kwargs):
        spark.catalog.clearCache()  # a cached source would be computed again, with other keys
        return phase_2(*args, **kwargs)

    monkeypatch.setattr(builder, "write_all_changes", after_dropping_caches)
    spark.conf.set(PIN_TARGET_CONF, "0")  # phase 2 joins the touched files with the source again
    try:
        t = DeltaTable.forPath(spark, path).alias("t")
        merge = t.merge(src.alias("s"), "t.id = s.id").whenMatchedUpdateAll().whenNotMatchedInsertAll()
        m = merge.execute().collect()[0]
    finally:
        spark.conf.unset(PIN_TARGET_CONF)
    rows = {r.id: r.val for r in read_delta(spark, path).collect()}
    updated = {i for i in range(200) if rows[i] == 1.0}
    inserted = {i - 1000 for i in rows if i >= 1000}
    assert len(rows) == 200 + len(inserted)
    assert updated.isdisjoint(inserted) and updated | inserted == set(range(200))
    assert (m.num_updated_rows, m.num_inserted_rows) == (len(updated), len(inserted))
    assert 0 < len(updated) < 200
