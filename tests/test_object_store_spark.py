"""Spark reads of tables on object stores (SeaweedFS S3, Azurite, fake-gcs-server),
with storage options given as ``storage.<key>`` data source options; the answers must
equal the reads of the same tables on local disk."""

from __future__ import annotations

import pytest

from conftest import table_path
from helpers import spark_rows

TABLES = [
    "delta-rs/delta-0.8.0-partitioned",                 # partition columns
    "delta-rs/table-with-dv-small",                     # deletion vectors
    "kernel-rs/v2-checkpoints-parquet-with-sidecars",   # v2 checkpoint + sidecars, '%' in names
]

_UPLOADED: dict = {}


@pytest.fixture(scope="session")
def remote_tables(object_store):
    """The test tables, uploaded once per server: name -> URL."""
    key = object_store.kind
    if key not in _UPLOADED:
        _UPLOADED[key] = {name: object_store.upload_dir(table_path(name), f"tables/{name}")
                          for name in TABLES}
    return _UPLOADED[key]


def read(spark, path, options=None, **more):
    reader = spark.read.format("pydelta")
    for k, v in {**(options or {}), **more}.items():
        reader = reader.option(k, v)
    return reader.load(path)


@pytest.mark.parametrize("name", TABLES)
def test_read_matches_local(spark, object_store, remote_tables, name):
    local = read(spark, table_path(name))
    remote = read(spark, remote_tables[name], object_store.spark_options())
    assert remote.schema == local.schema
    assert spark_rows(remote) == spark_rows(local)


def test_time_travel_and_filters(spark, object_store, remote_tables):
    name = "delta-rs/table-with-dv-small"
    for version in (0, 1):
        local = read(spark, table_path(name), versionAsOf=version)
        remote = read(spark, remote_tables[name], object_store.spark_options(), versionAsOf=version)
        assert spark_rows(remote) == spark_rows(local), version
    name = "delta-rs/delta-0.8.0-partitioned"
    local = read(spark, table_path(name)).where("year = '2021' and value > '4'")
    remote = read(spark, remote_tables[name], object_store.spark_options()).where(
        "year = '2021' and value > '4'")
    assert spark_rows(remote) == spark_rows(local)
    assert remote.count() > 0


def test_sql_temporary_view_with_storage_options(spark, object_store, remote_tables):
    name = "delta-rs/delta-0.8.0-partitioned"
    opts = ", ".join(f"`{k}` '{v}'" for k, v in object_store.spark_options().items())
    view = f"pydelta_remote_{object_store.kind}"
    spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW {view} USING pydelta "
              f"OPTIONS (path '{remote_tables[name]}', {opts})")
    try:
        got = spark.sql(f"SELECT count(*) AS n FROM {view}").collect()[0].n
        assert got == read(spark, table_path(name)).count()
    finally:
        spark.catalog.dropTempView(view)


def test_camel_case_storage_option_keys(spark, s3_server):
    """Spark lowercases option keys (endpointUrl arrives as endpointurl); they are
    matched to the filesystem's parameters ignoring case and underscores."""
    name = "delta-rs/table-with-dv-small"
    url = s3_server.upload_dir(table_path(name), "camel/table")
    opts = {"storage.Key": s3_server.options["key"], "storage.SECRET": s3_server.options["secret"],
            "storage.endpointUrl": s3_server.options["endpoint_url"]}
    assert spark_rows(read(spark, url, opts)) == spark_rows(read(spark, table_path(name)))


def test_secrets_not_in_query_plan_or_errors(spark, s3_server):
    name = "delta-rs/table-with-dv-small"
    url = s3_server.upload_dir(table_path(name), "plan/table")
    df = read(spark, url, s3_server.spark_options())
    plan = df._jdf.queryExecution().toString()
    assert s3_server.options["secret"] not in plan
    bad = {**s3_server.spark_options(), "storage.secret": "not-the-secret-0123456789"}
    with pytest.raises(Exception) as info:
        read(spark, url, bad).collect()
    assert "not-the-secret-0123456789" not in str(info.value)
