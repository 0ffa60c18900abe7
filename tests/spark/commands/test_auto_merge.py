"""delta-spark's schema evolution switch ``spark.databricks.delta.schema.autoMerge.enabled``:
an append or overwrite through write_delta evolves the schema as mergeSchema=true does (an
explicit mergeSchema wins), MERGE updateAll/insertAll evolves as WITH SCHEMA EVOLUTION, and
delta_pyds.sql INSERT / MERGE follow; format("pydelta") sees no session conf and takes the
conf's name as a write option, and its schema mismatch error says so. Every table written is
read back by both read paths and deltalake."""

from __future__ import annotations

import contextlib

import pytest
from helpers import arrow_rows, deltalake_table

import delta_pyds
from delta_pyds import DeltaTable
from delta_pyds.errors import SchemaError

AUTO_MERGE = "spark.databricks.delta.schema.autoMerge.enabled"


@contextlib.contextmanager
def auto_merge(spark, value="true"):
    spark.conf.set(AUTO_MERGE, value)
    try:
        yield
    finally:
        spark.conf.unset(AUTO_MERGE)


def _table(spark, path):
    delta_pyds.write_delta(spark.createDataFrame([(1, "a"), (2, "b")], "id long, s string"), path)


def _rows(spark, path, columns=("id", "s", "n")):
    """The table's rows, the same through read_delta, format('pydelta') and deltalake."""
    native = sorted(tuple(r) for r in delta_pyds.read_delta(spark, path).select(*columns).collect())
    source = sorted(tuple(r) for r in spark.read.format("pydelta").load(path).select(*columns).collect())
    rs = sorted(arrow_rows(deltalake_table(path), list(columns)))
    assert native == source == rs
    return native


def _new_column(spark, ids):
    return spark.createDataFrame([(i, f"s{i}", i * 10) for i in ids], "id long, s string, n long")


def test_write_delta_append_evolves_under_the_conf(spark, tmp_path):
    path = str(tmp_path / "t")
    _table(spark, path)
    with pytest.raises(SchemaError, match="autoMerge"):  # off: refused, naming the switch
        delta_pyds.write_delta(_new_column(spark, [3]), path)
    with auto_merge(spark):
        delta_pyds.write_delta(_new_column(spark, [3]), path)
        with pytest.raises(SchemaError, match="mergeSchema"):  # an explicit mergeSchema=false wins
            delta_pyds.write_delta(
                spark.createDataFrame([(4, "x", 1, 2)], "id long, s string, n long, m long"), path, mergeSchema="false"
            )
    assert _rows(spark, path) == [(1, "a", None), (2, "b", None), (3, "s3", 30)]


def test_write_delta_overwrite_evolves_under_the_conf(spark, tmp_path):
    path = str(tmp_path / "t")
    _table(spark, path)
    with auto_merge(spark):
        delta_pyds.write_delta(_new_column(spark, [5]), path, mode="overwrite")
    assert _rows(spark, path) == [(5, "s5", 50)]


def test_the_data_source_takes_the_conf_as_an_option(spark, tmp_path):
    path = str(tmp_path / "t")
    _table(spark, path)
    with auto_merge(spark), pytest.raises(Exception, match="takes it as a write option"):
        _new_column(spark, [3]).write.format("pydelta").mode("append").save(path)
    _new_column(spark, [3]).write.format("pydelta").mode("append").option(AUTO_MERGE, "true").save(path)
    assert _rows(spark, path) == [(1, "a", None), (2, "b", None), (3, "s3", 30)]


def _merge(spark, path):
    source = _new_column(spark, [2, 3])
    (
        DeltaTable.forPath(spark, path)
        .alias("t")
        .merge(source.alias("s"), "t.id = s.id")
        .whenMatchedUpdateAll()
        .whenNotMatchedInsertAll()
        .execute()
    )


def test_merge_update_all_insert_all_evolve_under_the_conf(spark, tmp_path):
    path, plain = str(tmp_path / "t"), str(tmp_path / "plain")
    _table(spark, path)
    _table(spark, plain)
    _merge(spark, plain)  # off: the new column is not added (delta-spark ignores it)
    assert "n" not in delta_pyds.read_delta(spark, plain).columns
    with auto_merge(spark):
        _merge(spark, path)
    assert _rows(spark, path) == [(1, "a", None), (2, "s2", 20), (3, "s3", 30)]


def test_sql_insert_and_merge_evolve_under_the_conf(spark, tmp_path):
    path, merged = str(tmp_path / "t"), str(tmp_path / "m")
    _table(spark, path)
    _table(spark, merged)
    insert = f"INSERT INTO delta.`{path}` SELECT CAST(3 AS BIGINT) AS id, 's3' AS s, CAST(30 AS BIGINT) AS n"
    with pytest.raises(Exception, match="3 columns"):
        delta_pyds.sql(spark, insert)
    _new_column(spark, [2, 3]).createOrReplaceTempView("auto_merge_src")
    merge = (
        f"MERGE INTO delta.`{merged}` t USING auto_merge_src s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"
    )
    with auto_merge(spark):
        delta_pyds.sql(spark, insert)
        delta_pyds.sql(spark, merge)
    assert _rows(spark, path) == [(1, "a", None), (2, "b", None), (3, "s3", 30)]
    assert _rows(spark, merged) == [(1, "a", None), (2, "s2", 20), (3, "s3", 30)]
