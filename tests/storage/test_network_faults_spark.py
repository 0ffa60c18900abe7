"""Spark on S3 behind the fault proxy (:mod:`faults`): appends and overwrites through the data
source, checkpoints, VACUUM, the streaming sink and reads through both read paths
(``write_delta``, DML, OPTIMIZE and RESTORE: :mod:`test_network_faults_dml`),
with faults injected at a rate (seed printed). The table must end up exactly as the
operations say (compared with deltalake reading the store directly), with one commit
per operation, and a write whose commit fails must leave no data file behind."""

from __future__ import annotations

import uuid

import pytest
from faults import Fault, proxied, proxy_fixtures

import delta_pyds
from delta_pyds.spark.tables.delta_table import DeltaTable
from delta_pyds.storage.store import Storage

# quick backoff, and enough retries that a read meeting a fault at every attempt is not what a
# run hits by chance: the streaming sink's commit GETs fail at 0.37 (short body 0.3, 503 0.1), so
# the default 3 retries (4 attempts) lose one read in 50 and a run does dozens (CI failed so
# once); 10 retries: one read in ~60,000. Tests of exhausted retries set max_retries=1.
QUICK = {"backoff_config.init_backoff": "0.01", "backoff_config.max_backoff": "0.05", "max_retries": "10"}


s3_proxy, proxy = proxy_fixtures("s3-spark")


def spark_options(server, proxy) -> dict:
    return {f"storage.{k}": v for k, v in {**proxied(server, proxy), **QUICK}.items()}


def rows(df) -> list:
    return sorted(tuple(r) for r in df.collect())


def data_files(server, url: str) -> list[str]:
    fs = Storage(url, {**server.options, "skip_instance_cache": True}).fs
    return sorted(p for p in fs.find(url) if p.endswith(".parquet") and "_delta_log" not in p)


def commits(server, url: str) -> list[str]:
    storage = Storage(url, {**server.options, "skip_instance_cache": True})
    return [e.name for e in storage.list_dir(storage.join("_delta_log")) if e.name.endswith(".json")]


def deltalake_rows(server, url: str) -> list:
    from deltalake import DeltaTable as RsTable
    from helpers import deltalake_s3_options

    opts = {**deltalake_s3_options(server), "AWS_S3_ALLOW_UNSAFE_RENAME": "true"}
    table = RsTable(url, storage_options=opts).to_pyarrow_table()
    return sorted(zip(*(table.column(n).to_pylist() for n in ("id", "v"))))


def write(df, url, options, mode="append", **more):
    w = df.write.format("pydelta").mode(mode)
    for k, v in {**options, **more}.items():
        w = w.option(k, v)
    w.save(url)


@pytest.mark.slow
def test_table_lifecycle_under_random_faults(spark, s3_server, proxy):
    url = s3_server.url(f"spark-faults-{uuid.uuid4().hex[:8]}")
    options = spark_options(s3_server, proxy)
    proxy.add(
        Fault("lost_response", method="PUT", path=r"_delta_log/\d{20}\.json", count=-1, rate=0.5),
        Fault("status", status=503, count=-1, rate=0.08),
        Fault("status", status=500, method="GET", count=-1, rate=0.03),
        Fault("status", status=429, method="HEAD", count=-1, rate=0.05),
        Fault("truncate", method="GET", count=-1, rate=0.05),
        Fault("short_body", method="GET", path=r"_delta_log/\d{20}\.json", count=-1, rate=0.2),
        Fault("reset_response", method="GET", after_bytes=200, count=-1, rate=0.03),
        Fault("reset_request", method="PUT", after_bytes=100, count=-1, rate=0.05),
    )
    expected = {i: i * 10 for i in range(20)}
    df = spark.createDataFrame(list(expected.items()), "id long, v long")
    write(df, url, options, **{"delta.checkpointInterval": "3"})  # v0
    write(spark.createDataFrame([(i, i) for i in range(20, 30)], "id long, v long"), url, options)  # v1
    expected.update({i: i for i in range(20, 30)})
    expected[30] = 300
    write(spark.createDataFrame(sorted(expected.items()), "id long, v long"), url, options, mode="overwrite")  # v2
    # appends at v3-v4 cross two checkpoints (interval 3); DML: test_network_faults_dml.py
    for k in (3, 4):
        write(spark.createDataFrame([(100 + k, k)], "id long, v long"), url, options)
        expected[100 + k] = k
    table = DeltaTable.forPath(spark, url, {k[len("storage.") :]: v for k, v in options.items()})
    table.vacuum(0.0, enforceRetention=False)
    want = sorted(expected.items())
    reader = spark.read.format("pydelta")
    for k, v in options.items():
        reader = reader.option(k, v)
    assert rows(reader.load(url)) == want
    assert rows(delta_pyds.read_delta(spark, url, **options)) == want
    injected = dict(proxy.counts)
    proxy.clear()
    # v0-v4 writes, v5-v6 VACUUM START and END: none lost, none twice
    assert commits(s3_server, url) == [f"{v:020d}.json" for v in range(7)]
    fs = Storage(url, {**s3_server.options, "skip_instance_cache": True}).fs
    assert fs.exists(f"{url}/_delta_log/{3:020d}.checkpoint.parquet")
    assert deltalake_rows(s3_server, url) == want
    print("faults injected:", injected, "seed:", proxy.seed)
    assert injected.get("lost_response", 0) >= 1 and sum(injected.values()) >= 5


@pytest.mark.slow
def test_streaming_sink_under_faults(spark, s3_server, proxy, tmp_path):
    url = s3_server.url(f"sink-faults-{uuid.uuid4().hex[:8]}")
    options = spark_options(s3_server, proxy)
    src = str(tmp_path / "src")
    for k in range(3):
        df = spark.createDataFrame([(k * 10 + i, k) for i in range(10)], "id long, v long").coalesce(1)
        df.write.format("pydelta").mode("append").save(src)  # one file: one micro-batch
    proxy.add(
        Fault("lost_response", method="PUT", path=r"_delta_log/\d{20}\.json", count=-1, rate=0.5),
        Fault("status", status=503, count=-1, rate=0.1),
        Fault("short_body", method="GET", path=r"_delta_log/\d{20}\.json", count=-1, rate=0.3),
    )
    stream = spark.readStream.format("pydelta").option("maxFilesPerTrigger", "1").load(src).writeStream
    stream = stream.format("pydelta").option("checkpointLocation", str(tmp_path / "ck"))
    for k, v in options.items():
        stream = stream.option(k, v)
    stream.trigger(availableNow=True).start(url).awaitTermination()
    proxy.clear()
    assert commits(s3_server, url) == [f"{v:020d}.json" for v in range(3)]  # one commit per micro-batch
    assert sorted(r[0] for r in deltalake_rows(s3_server, url)) == list(range(30))


def test_failed_commit_leaves_no_data_files_and_no_lost_commit(spark, s3_server, proxy):
    """Every commit PUT is reset before it reaches the store: the write fails with an
    error naming the store, and its data files are deleted."""
    url = s3_server.url(f"failed-{uuid.uuid4().hex[:8]}")
    options = {**spark_options(s3_server, proxy), "storage.max_retries": "1"}
    df = spark.createDataFrame([(1, 1)], "id long, v long")
    write(df, url, options)
    before = data_files(s3_server, url)
    proxy.add(Fault("reset_request", method="PUT", path=r"_delta_log/0+1\.json", after_bytes=50, count=-1))
    with pytest.raises(Exception) as info:
        write(df, url, options)
    assert proxy.endpoint in str(info.value) and "00000000000000000001.json" in str(info.value)
    proxy.clear()
    assert commits(s3_server, url) == [f"{0:020d}.json"]
    assert data_files(s3_server, url) == before


def test_commit_of_unknown_outcome_keeps_its_data_files(spark, s3_server, proxy):
    """The commit PUT lands but its response is lost, and reading it back fails too: the
    writer cannot tell whether it committed. Its data files must stay (deleting them
    would break a table whose log names them); the error says to check the log."""
    url = s3_server.url(f"unknown-{uuid.uuid4().hex[:8]}")
    options = {**spark_options(s3_server, proxy), "storage.max_retries": "1"}
    df = spark.createDataFrame([(1, 1)], "id long, v long")
    write(df, url, options)
    proxy.add(
        Fault("lost_response", method="PUT", path=r"_delta_log/0+1\.json", count=-1),
        Fault("status", status=503, method="GET|HEAD", path=r"_delta_log/0+1\.json", count=-1),
    )
    with pytest.raises(Exception) as info:
        write(df, url, options)
    assert "00000000000000000001.json" in str(info.value)
    proxy.clear()
    assert commits(s3_server, url) == [f"{0:020d}.json", f"{1:020d}.json"]  # it landed
    reader = spark.read.format("pydelta")
    for k, v in options.items():
        reader = reader.option(k, v)
    assert rows(reader.load(url)) == [(1, 1), (1, 1)]  # and its files are all there
