"""Spark reads and writes of tables on object stores (SeaweedFS S3, Azurite,
fake-gcs-server), with storage options given as ``storage.<key>`` data source options:
reads must equal the reads of the same tables on local disk, written tables must read
back (and, on S3, through deltalake's own client); concurrent writers lose no commit;
filesystems without an atomic create are refused for writes."""

from __future__ import annotations

import pytest
from conftest import table_path
from helpers import pydelta_write, spark_rows

from delta_pyds.storage.store import Storage

TABLES = [
    "delta-rs/delta-0.8.0-partitioned",  # partition columns
    "delta-rs/table-with-dv-small",  # deletion vectors
    "kernel-rs/v2-checkpoints-parquet-with-sidecars",  # v2 checkpoint + sidecars, '%' in names
]

_UPLOADED: dict = {}


@pytest.fixture(scope="session")
def remote_tables(object_store):
    """The test tables, uploaded once per server: name -> URL."""
    key = object_store.kind
    if key not in _UPLOADED:
        _UPLOADED[key] = {name: object_store.upload_dir(table_path(name), f"tables/{name}") for name in TABLES}
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
    remote = read(spark, remote_tables[name], object_store.spark_options()).where("year = '2021' and value > '4'")
    assert spark_rows(remote) == spark_rows(local)
    assert remote.count() > 0


def test_sql_temporary_view_with_storage_options(spark, object_store, remote_tables):
    name = "delta-rs/delta-0.8.0-partitioned"
    opts = ", ".join(f"`{k}` '{v}'" for k, v in object_store.spark_options().items())
    view = f"pydelta_remote_{object_store.kind}"
    spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW {view} USING pydelta OPTIONS (path '{remote_tables[name]}', {opts})")
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
    opts = {
        "storage.Key": s3_server.options["key"],
        "storage.SECRET": s3_server.options["secret"],
        "storage.endpointUrl": s3_server.options["endpoint_url"],
    }
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


# ------------------------------------------------------------------------- writes
def _deltalake_s3(server, url):
    """The table as deltalake (delta-rs, its own S3 client) reads it."""
    from deltalake import DeltaTable
    from helpers import deltalake_s3_options

    return DeltaTable(url, storage_options=deltalake_s3_options(server))


def test_spark_writes_append_overwrite_partitioned(spark, object_store):
    import uuid

    url = object_store.url(f"written/{uuid.uuid4().hex}")
    opts = object_store.spark_options()
    first = spark.range(0, 20).selectExpr("id", "cast(id % 3 as int) p", "concat('s', id) s")
    pydelta_write(first, url, **opts, partitionBy="p")
    pydelta_write(spark.range(20, 30).selectExpr("id", "cast(id % 3 as int) p", "concat('s', id) s"), url, **opts)
    expected = [(i, i % 3, f"s{i}") for i in range(30)]
    assert spark_rows(read(spark, url, opts)) == sorted(expected, key=repr)
    # replaceWhere on the partition column, then a full overwrite; time travel still reads v1
    pydelta_write(
        spark.range(100, 103).selectExpr("id", "1 p", "'r' s"), url, **opts, mode="overwrite", replaceWhere="p = 1"
    )
    expected_v2 = [r for r in expected if r[1] != 1] + [(i, 1, "r") for i in range(100, 103)]
    assert spark_rows(read(spark, url, opts)) == sorted(expected_v2, key=repr)
    pydelta_write(spark.range(5).selectExpr("id", "cast(id % 3 as int) p", "'o' s"), url, **opts, mode="overwrite")
    assert spark_rows(read(spark, url, opts)) == sorted([(i, i % 3, "o") for i in range(5)], key=repr)
    assert spark_rows(read(spark, url, opts, versionAsOf=1)) == sorted(expected, key=repr)
    storage = Storage(url, object_store.options)
    names = {e.name for e in storage.list_dir(storage.join("_delta_log"))}
    assert {f"{v:020d}.json" for v in range(4)} <= names
    # the partition directories are Hive-style, under the bucket
    assert storage.fs.exists(storage.join("p=1"))
    if object_store.kind == "s3":  # an independent reader with its own S3 client
        rows = _deltalake_s3(object_store, url).to_pyarrow_table().to_pylist()
        assert sorted((r["id"], r["p"], r["s"]) for r in rows) == [(i, i % 3, "o") for i in range(5)]


def _s3_appender(url, options, worker, commits, queue):
    import pyarrow as pa

    from delta_pyds.write.plan import commit_arrow

    stats = []
    for k in range(commits):
        result = commit_arrow(
            url, pa.table({"w": [worker], "k": [k]}), options={**{f"storage.{o}": v for o, v in options.items()}}
        )
        stats.append((result.version, result.attempts))
    queue.put(stats)


def test_concurrent_spark_free_writers_on_s3_lose_no_commit(s3_server):
    """Four processes append through the full transaction path (rebase, retry) to the
    same S3 table: every append is a version of its own and every row is there."""
    import multiprocessing
    import uuid

    import pyarrow as pa

    from delta_pyds.table.snapshot import Snapshot
    from delta_pyds.write.plan import commit_arrow

    url = s3_server.url(f"concurrent/{uuid.uuid4().hex}")
    storage_opts = {f"storage.{o}": v for o, v in s3_server.options.items()}
    commit_arrow(url, pa.table({"w": [-1], "k": [-1]}), options=storage_opts)
    writers, commits = 4, 3
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    procs = [ctx.Process(target=_s3_appender, args=(url, s3_server.options, w, commits, queue)) for w in range(writers)]
    for p in procs:
        p.start()
    results = [queue.get(timeout=300) for _ in procs]
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    versions = sorted(v for stats in results for v, _ in stats)
    assert versions == list(range(1, writers * commits + 1))  # one version per append
    assert any(a > 1 for stats in results for _, a in stats)  # they did race
    snap = Snapshot.load(url, options=s3_server.options)
    assert snap.version == writers * commits and snap.files.num_rows == writers * commits + 1
    rows = _deltalake_s3(s3_server, url).to_pyarrow_table().to_pylist()
    assert sorted((r["w"], r["k"]) for r in rows) == [(-1, -1)] + [
        (w, k) for w in range(writers) for k in range(commits)
    ]


def test_filesystems_without_atomic_create_are_refused_end_to_end(spark, tmp_path):
    """fsspec's simplecache (over local files) has no atomic create-if-absent: a Spark
    write fails before any task runs, naming why and the opt-in; nothing is written.
    With allowUnsafeCommits=true the same write works."""
    local = tmp_path / "t"
    url = f"simplecache://{local}"
    opts = {"storage.target_protocol": "file"}
    df = spark.range(4).selectExpr("id", "concat('v', id) s")
    with pytest.raises(Exception) as info:
        pydelta_write(df, url, **opts)
    message = str(info.value)
    assert "no atomic create-if-absent" in message and "allowUnsafeCommits" in message
    assert not local.exists() or not any(local.rglob("*"))
    (local / "_delta_log").mkdir(parents=True)  # simplecache does not create directories
    pydelta_write(df, url, **opts, allowUnsafeCommits="true")
    assert spark_rows(read(spark, str(local))) == [(i, f"v{i}") for i in range(4)]
