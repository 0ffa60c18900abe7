"""``write_delta``, DML, OPTIMIZE and RESTORE on S3 behind the fault proxy (:mod:`faults`).

This Spark has no S3A connector, so on ``s3://`` they run on the Python-worker path
(fsspec in the workers, ``delta_pyds.spark.native.locations``): every data file read and
written, every log read and every commit goes through the proxy, with faults injected at
a bounded rate (seed printed). After the lifecycle the table must hold exactly the rows a
plain computation gives, as deltalake (reading the store directly) and both read paths
see them, with one commit per operation, and no file in the table root that no commit
names (a failed attempt's data or deletion vector files are cleaned up)."""

from __future__ import annotations

import json
import uuid

import pytest
from faults import Fault, proxied, proxy_fixtures
from helpers import deltalake_s3_rows, spark_rows

from delta_pyds import DeltaTable, read_delta, write_delta
from delta_pyds.spark.session.conf import DML_ENGINE_CONF, INLINE_DV_CONF
from delta_pyds.storage.store import Storage

QUICK = {"backoff_config.init_backoff": "0.01", "backoff_config.max_backoff": "0.05"}

s3_proxy, proxy = proxy_fixtures("s3-dml")


def _log(server, url) -> list[list[dict]]:
    """Every commit of the table, read from the store directly."""
    storage = Storage(url, {**server.options, "skip_instance_cache": True})
    entries = [e for e in storage.list_dir(storage.join("_delta_log")) if e.name.endswith(".json")]
    return [[json.loads(line) for line in storage.read_bytes(e.path).splitlines() if line.strip()] for e in entries]


def _unnamed_files(server, url, log: list[list[dict]]) -> list[str]:
    """Files under the table root (outside ``_delta_log``) that no add or remove of any
    commit names, as a data file or a deletion vector file."""
    from delta_pyds.protocol.deletion_vectors import DeletionVectorDescriptor

    storage = Storage(url, {**server.options, "skip_instance_cache": True})
    fs = storage.fs
    named = set()
    for actions in log:
        for action in actions:
            for kind in ("add", "remove"):
                if kind not in action:
                    continue
                named.add(fs._strip_protocol(storage.resolve(action[kind]["path"])))
                dv = action[kind].get("deletionVector")
                if dv:
                    path = DeletionVectorDescriptor.from_dict(dv).absolute_path(storage)
                    if path is not None:
                        named.add(fs._strip_protocol(path))
    log_dir = fs._strip_protocol(storage.join("_delta_log")) + "/"
    return sorted(p for p in fs.find(url) if not p.startswith(log_dir) and p not in named)


def _rows(spark, start, n, s):
    return spark.range(start, start + n).selectExpr("id", "cast(id % 3 as int) p", f"'{s}' s")


@pytest.mark.slow
@pytest.mark.parametrize("dv", [False, True], ids=["copy-on-write", "deletion-vectors"])
def test_write_delta_dml_optimize_restore_under_random_faults(spark, s3_server, proxy, dv, request):
    url = s3_server.url(f"dml-faults-{uuid.uuid4().hex[:8]}")
    # hundreds of log reads at these rates: 5 retries keep a run of faults on one read
    # below one in a million (3 gave StoreFaultError on 4 short bodies in a row)
    storage_options = {**proxied(s3_server, proxy), **QUICK, "max_retries": "5"}
    opts = {f"storage.{k}": v for k, v in storage_options.items()}
    props = {"delta.enableDeletionVectors": "true"} if dv else {}
    spark.conf.unset(DML_ENGINE_CONF)
    spark.conf.set(INLINE_DV_CONF, "0")  # deletion vectors in files: written and read through the proxy
    request.addfinalizer(lambda: spark.conf.unset(INLINE_DV_CONF))
    proxy.add(
        Fault("lost_response", method="PUT", path=r"_delta_log/\d{20}\.json", count=-1, rate=0.4),
        Fault("status", status=503, count=-1, rate=0.05),
        Fault("status", status=500, method="GET", count=-1, rate=0.03),
        Fault("status", status=429, method="HEAD", count=-1, rate=0.03),
        Fault("truncate", method="GET", count=-1, rate=0.03),
        Fault("short_body", method="GET", path=r"_delta_log/\d{20}\.json", count=-1, rate=0.1),
        Fault("short_body", method="GET", path=r"\.parquet|deletion_vector_", count=-1, rate=0.05),
        Fault("reset_response", method="GET", after_bytes=200, count=-1, rate=0.03),
        Fault("reset_request", method="PUT", after_bytes=100, count=-1, rate=0.03),
    )
    states: list[dict] = []
    expected = {i: (i, i % 3, "a") for i in range(20)}
    write_delta(_rows(spark, 0, 20, "a").repartition(2), url, **opts, **props)  # v0
    states.append(dict(expected))
    write_delta(_rows(spark, 20, 10, "b"), url, **opts)  # v1
    expected.update({i: (i, i % 3, "b") for i in range(20, 30)})
    states.append(dict(expected))
    write_delta(_rows(spark, 0, 30, "o").repartition(3), url, mode="overwrite", **opts)  # v2
    expected = {i: (i, i % 3, "o") for i in range(30)}
    states.append(dict(expected))

    table = DeltaTable.forPath(spark, url, hadoopConf=storage_options)
    table.delete("id < 3 or id = 17")  # v3
    for i in (0, 1, 2, 17):
        del expected[i]
    states.append(dict(expected))
    table.update("id >= 25", {"s": "'u'"})  # v4
    expected.update({i: (i, i % 3, "u") for i in range(25, 30)})
    states.append(dict(expected))
    source = _rows(spark, 27, 6, "m")
    (
        table.alias("t")
        .merge(source.alias("x"), "t.id = x.id")
        .whenMatchedUpdate(set={"s": "x.s"})
        .whenNotMatchedInsertAll()
        .execute()
    )  # v5
    expected.update({i: (i, i % 3, "m") for i in range(27, 33)})
    states.append(dict(expected))
    compacted = table.optimize().executeCompaction().first()["metrics"]["numFilesRemoved"]  # v6 (if any)
    states.append(dict(expected))
    table.restoreToVersion(4)  # v7
    expected = dict(states[4])
    assert table._rewriter.engine == "python"  # every step ran on Python workers

    injected = dict(proxy.counts)
    want = sorted(expected.values())
    via_source = spark.read.format("pydelta").options(**opts).load(url).select("id", "p", "s")
    assert sorted(spark_rows(via_source)) == want
    assert sorted(spark_rows(read_delta(spark, url, **opts).select("id", "p", "s"))) == want
    proxy.clear()
    print("faults injected:", injected, "seed:", proxy.seed)
    assert deltalake_s3_rows(s3_server, url) == want
    log = _log(s3_server, url)
    # one commit per operation: none lost, none twice (OPTIMIZE commits when it compacts)
    assert len(log) == (8 if compacted else 7), [c[0]["commitInfo"]["operation"] for c in log]
    operations = [next(a["commitInfo"]["operation"] for a in c if "commitInfo" in a) for c in log]
    assert operations[3:] == ["DELETE", "UPDATE", "MERGE"] + ["OPTIMIZE"] * bool(compacted) + ["RESTORE"], operations
    assert _unnamed_files(s3_server, url, log) == []
    if dv:
        assert any(a.get("add", {}).get("deletionVector") for c in log[3:6] for a in c)
    assert injected.get("lost_response", 0) >= 1 and sum(injected.values()) >= 10, injected


@pytest.mark.parametrize("dv", [False, True], ids=["copy-on-write", "deletion-vectors"])
def test_failed_dml_commit_leaves_no_files(spark, s3_server, proxy, dv, request):
    """Every commit PUT of a DELETE is reset before it reaches the store: the DELETE
    fails with an error naming the store, the table is unchanged, and the data files or
    deletion vector file the DELETE wrote are deleted (no file in the table root is
    named by no commit)."""
    url = s3_server.url(f"dml-failed-{uuid.uuid4().hex[:8]}")
    storage_options = {**proxied(s3_server, proxy), **QUICK, "max_retries": "1"}
    opts = {f"storage.{k}": v for k, v in storage_options.items()}
    props = {"delta.enableDeletionVectors": "true"} if dv else {}
    spark.conf.unset(DML_ENGINE_CONF)
    spark.conf.set(INLINE_DV_CONF, "0")
    request.addfinalizer(lambda: spark.conf.unset(INLINE_DV_CONF))
    _rows(spark, 0, 10, "a").coalesce(1).write.format("pydelta").mode("append").options(**opts, **props).save(url)
    table = DeltaTable.forPath(spark, url, hadoopConf=storage_options)
    proxy.add(Fault("reset_request", method="PUT", path=r"_delta_log/0+1\.json", after_bytes=50, count=-1))
    with pytest.raises(Exception) as info:
        table.delete("id = 3")
    assert proxy.endpoint in str(info.value) and "00000000000000000001.json" in str(info.value)
    proxy.clear()
    log = _log(s3_server, url)
    assert len(log) == 1
    assert _unnamed_files(s3_server, url, log) == []
    assert deltalake_s3_rows(s3_server, url) == [(i, i % 3, "a") for i in range(10)]
