"""The pydelta source through Spark: options, projection, pinning, SQL views, errors."""

from __future__ import annotations

import os
import shutil

import pytest
from conftest import table_path
from helpers import arrow_rows, deltalake_table, spark_rows

from delta_pyds.errors import TableNotFoundError


def read(spark, path, **options):
    reader = spark.read.format("pydelta")
    for k, v in options.items():
        reader = reader.option(k, v)
    return reader.load(path)


def test_version_as_of_matches_deltalake_at_each_version(spark):
    path = table_path("delta-rs/simple_table")
    for v in range(5):
        df = read(spark, path, versionAsOf=v)
        assert spark_rows(df) == arrow_rows(deltalake_table(path, v), df.columns), v


def test_timestamp_as_of(spark, copy_table):
    path = copy_table("delta-rs/simple_table")
    base = 1_700_000_000
    for v in range(5):
        os.utime(os.path.join(path, "_delta_log", f"{v:020d}.json"), (base + 100 * v,) * 2)
    df = read(spark, path, timestampAsOf="2023-11-14 22:15:00Z")  # base + 100 s -> version 1
    assert spark_rows(df) == arrow_rows(deltalake_table(path, 1), df.columns)


def test_timestamp_without_offset_is_a_time_in_the_session_zone(spark, copy_table):
    """delta-spark reads '2023-11-14 22:15:00' in spark.sql.session.timeZone; a Python data
    source cannot see it, so such a value needs the timeZone option (or an offset) unless
    the version it names is the same in every zone."""
    path = copy_table("delta-rs/simple_table")
    base = 1_700_000_000  # 2023-11-14T22:13:20Z
    for v in range(5):
        os.utime(os.path.join(path, "_delta_log", f"{v:020d}.json"), (base + 100 * v,) * 2)
    v1 = arrow_rows(deltalake_table(path, 1), ["id"])
    with pytest.raises(Exception, match="timeZone") as err:
        read(spark, path, timestampAsOf="2023-11-14 22:15:00").collect()
    assert "spark.sql.session.timeZone" in str(err.value)
    for options in (
        {"timestampAsOf": "2023-11-14T23:15:00+01:00"},
        {"timestampAsOf": "2023-11-15 07:15:00", "timeZone": "Asia/Tokyo"},
        {"timestampAsOf": "2023-11-14 17:15:00", "timeZone": "America/New_York"},
        {"timestampAsOf": "2023-11-14 22:15:00", "timeZone": "UTC"},
    ):
        assert spark_rows(read(spark, path, **options).select("id")) == v1, options
    with pytest.raises(Exception, match="option timeZone"):
        read(spark, path, timestampAsOf="2023-11-14 22:15:00", timeZone="Mars/Olympus").collect()
    # commits days apart: every zone names the same version, no zone needed
    for v in range(5):
        os.utime(os.path.join(path, "_delta_log", f"{v:020d}.json"), (base + 3 * 86400 * v,) * 2)
    assert spark_rows(read(spark, path, timestampAsOf="2023-11-19 00:00:00").select("id")) == v1


@pytest.mark.parametrize(
    "options,message",
    [
        ({"versionAsOf": "99"}, "latest version of the table is 4"),
        ({"versionAsOf": "x"}, "versionAsOf"),
        ({"versionAsOf": "1", "timestampAsOf": "2024-01-01"}, "at most one"),
        ({"timestampAsOf": "2001-01-01"}, "before the earliest"),
        ({"columns": "id,nope"}, "nope not in the table"),
        ({"maxPartitionBytes": "0"}, "maxPartitionBytes"),
        ({"filterPushdown": "maybe"}, "filterPushdown"),
    ],
)
def test_bad_options_name_the_option(spark, options, message):
    with pytest.raises(Exception, match=message):
        read(spark, table_path("delta-rs/simple_table"), **options).collect()


def test_missing_table_is_a_clear_error(spark, tmp_path):
    with pytest.raises(TableNotFoundError, match=r"\[DELTA_MISSING_DELTA_TABLE\] `.*` is not a Delta table") as e:
        read(spark, str(tmp_path)).collect()  # delta-spark's error for a directory without a log
    assert "no Delta table" in str(e.value.__cause__)


def test_columns_option_projects(spark):
    path = table_path("delta-rs/delta-0.8.0-partitioned")
    df = read(spark, path, columns="day,value")
    assert df.columns == ["day", "value"]
    assert spark_rows(df) == arrow_rows(deltalake_table(path), ["day", "value"])


def test_user_schema_projects_and_keeps_order(spark):
    path = table_path("delta-rs/delta-0.8.0-partitioned")
    df = spark.read.format("pydelta").schema("month string, value string").load(path)
    assert df.columns == ["month", "value"]
    assert spark_rows(df) == arrow_rows(deltalake_table(path), ["month", "value"])


def test_column_mapping_projection_by_logical_name(spark):
    path = table_path("delta-rs/table_with_column_mapping")
    df = read(spark, path, columns="Super Name")
    assert sorted(r[0] for r in df.collect()) == sorted(r["Super Name"] for r in deltalake_table(path).to_pylist())


def test_dataframe_is_pinned_to_its_version(spark, copy_table):
    path = copy_table("delta-rs/simple_table")
    log_dir = os.path.join(path, "_delta_log")
    latest = os.path.join(log_dir, f"{4:020d}.json")
    hidden = os.path.join(str(path) + "-v4.json")
    shutil.move(latest, hidden)
    df = read(spark, path)  # pinned at version 3
    expected = arrow_rows(deltalake_table(path, 3), df.columns)
    shutil.move(hidden, latest)  # a new commit lands after load()
    assert spark_rows(df) == expected
    assert spark_rows(read(spark, path)) == arrow_rows(deltalake_table(path, 4), df.columns)


def test_reads_without_filter_pushdown(spark):
    path = table_path("delta-rs/delta-0.8.0-partitioned")
    expected = [r for r in arrow_rows(deltalake_table(path), ["value", "year", "month", "day"]) if r[1] == "2021"]
    spark.conf.set("spark.sql.python.filterPushdown.enabled", "false")
    try:
        df = read(spark, path).where("year = '2021'")
        assert spark_rows(df) == expected
    finally:
        spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
    assert spark_rows(read(spark, path).where("year = '2021'")) == expected


def test_sql_temporary_view(spark):
    path = table_path("delta-rs/delta-0.8.0-partitioned")
    spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW parts USING pydelta OPTIONS (path '{path}')")
    got = spark.sql("SELECT year, count(*) AS n FROM parts GROUP BY year ORDER BY year").collect()
    expected = {}
    for r in deltalake_table(path).to_pylist():
        expected[r["year"]] = expected.get(r["year"], 0) + 1
    assert [(r.year, r.n) for r in got] == sorted(expected.items())


def test_many_files_are_bin_packed(spark):
    path = table_path("kernel-rs/v2-checkpoints-parquet-with-sidecars")  # 101 small files
    df = read(spark, path)
    assert df.rdd.getNumPartitions() <= 4
    assert df.count() == deltalake_table(path).num_rows
    assert read(spark, path, maxPartitionBytes="1", openCostInBytes="0").rdd.getNumPartitions() == 101


def test_deletion_vectors_are_applied(spark):
    path = table_path("delta-rs/table-with-dv-small")
    df = read(spark, path)
    assert df.count() == 8  # 10 rows written, rows 0 and 9 deleted
    assert spark_rows(df) == arrow_rows(deltalake_table(path), df.columns)


def test_empty_table(spark):
    df = read(spark, table_path("delta-rs/delta-0.8-empty"))
    assert df.count() == 0


@pytest.mark.parametrize(
    "name",
    [
        "kernel-rs/unshredded-variant",
        "delta-rs/spark-variant-checkpoint",
        "delta-rs/spark-shredded-variant-preview-delta",
    ],
)
def test_variant_columns_reach_spark_as_variants(spark, name):
    """Spark's own variant functions decode what we hand over (v holds {"key": id})."""
    df = spark.read.format("pydelta").load(table_path(name))
    assert dict(df.dtypes)["v"] == "variant"
    rows = df.selectExpr(
        "id",
        "to_json(v) AS j",
        "variant_get(v, '$.key', 'long') AS k",
        "schema_of_variant(v) AS s",
        "to_json(struct_of_variants.v) AS sj",
    ).collect()
    assert len(rows) == 102
    for r in rows:
        assert r.j == '{"key":%d}' % r.id
        assert r.k == r.id
        assert r.s == "OBJECT<key: BIGINT>"
        assert r.sj in (None, '{"key":%d}' % r.id)


def test_snapshot_cache_never_serves_a_table_recreated_at_the_same_path(tmp_path):
    import shutil

    import pyarrow as pa

    from delta_pyds.spark.datasource.reader import cached_snapshot
    from delta_pyds.storage.store import Storage
    from delta_pyds.write.plan import commit_arrow

    path = str(tmp_path / "t")
    commit_arrow(path, pa.table({"a": [1, 2]}))
    first = set(cached_snapshot(Storage(path), 0).files.column("path").to_pylist())
    shutil.rmtree(path)
    commit_arrow(path, pa.table({"a": [3, 4, 5]}))
    second = set(cached_snapshot(Storage(path), 0).files.column("path").to_pylist())
    assert first.isdisjoint(second)
    assert os.path.exists(os.path.join(path, next(iter(second))))
