"""Spark without the store's Hadoop connector (this pyspark: no hadoop-aws jar, so no
``s3a://``): ``write_delta``, ``read_delta`` and ``DeltaTable`` delete / update / merge /
optimize on an ``s3://`` table (SeaweedFS) fall back to the Python-worker path and succeed;
the tables read back identically through deltalake (its own S3 client) and both read paths;
nothing is left behind in the bucket; ``spark.pydelta.dml.engine=native`` raises
:class:`NativeReadUnavailable` naming the store; a fallback decided after planning reads
the planned version."""

from __future__ import annotations

import logging
import uuid

import pytest
from helpers import deltalake_s3_rows, spark_rows

from delta_pyds import DeltaTable, read_delta, write_delta
from delta_pyds.spark.native.engine import NativeReadUnavailable
from delta_pyds.spark.session.conf import DML_ENGINE_CONF
from delta_pyds.storage.store import Storage


def _check(spark, server, url, expected) -> None:
    """Both read paths and deltalake give ``expected`` (id, p, s); no staging directory
    or stray file is left in the table root."""
    opts = server.spark_options()
    expected = sorted(expected)
    assert deltalake_s3_rows(server, url) == expected
    via_source = spark.read.format("pydelta").options(**opts).load(url).select("id", "p", "s")
    assert sorted(tuple(r) for r in spark_rows(via_source)) == expected
    native = read_delta(spark, url, **opts).select("id", "p", "s")
    assert sorted(tuple(r) for r in spark_rows(native)) == expected
    storage = Storage(url, server.options)
    top = {e.name for e in storage.list_dir(storage.root)}
    assert not [n for n in top if n.startswith("_") and n != "_delta_log"], top


def _rows(spark, start, n, s="a"):
    return spark.range(start, start + n).selectExpr("id", "cast(id % 2 as int) p", f"'{s}' s")


def test_write_delta_and_read_delta_fall_back(spark, s3_server, caplog):
    url = s3_server.url(f"fallback/{uuid.uuid4().hex}")
    opts = s3_server.spark_options()
    with caplog.at_level(logging.WARNING, logger="delta_pyds.spark.native.write"):
        write_delta(_rows(spark, 0, 10), url, partitionBy="p", **opts)
    assert any("through the pydelta data source" in r.getMessage() for r in caplog.records)
    # remembered for this session and scheme: later operations do not ask Spark again
    from delta_pyds.spark.native.locations import spark_target

    location, reason = spark_target(spark, Storage(url, s3_server.options))
    assert location is None and "s3a://" in (reason or ""), reason
    write_delta(_rows(spark, 10, 5, "b"), url, **opts)
    _check(spark, s3_server, url, [(i, i % 2, "a" if i < 10 else "b") for i in range(15)])
    write_delta(_rows(spark, 100, 4, "o"), url, mode="overwrite", **opts)
    _check(spark, s3_server, url, [(i, i % 2, "o") for i in range(100, 104)])
    storage = Storage(url, s3_server.options)
    assert storage.fs.exists(storage.join("p=1"))  # partitioned by the first write
    # mode error on an existing table refuses; ignore writes nothing
    with pytest.raises(Exception, match="(?i)exist"):
        write_delta(_rows(spark, 0, 1), url, mode="error", **opts)
    assert write_delta(_rows(spark, 0, 1), url, mode="ignore", **opts) is None
    _check(spark, s3_server, url, [(i, i % 2, "o") for i in range(100, 104)])


@pytest.mark.parametrize("dv", [False, True], ids=["copy-on-write", "deletion-vectors"])
def test_dml_falls_back_to_python_workers(spark, s3_server, dv):
    url = s3_server.url(f"fallback-dml/{uuid.uuid4().hex}")
    opts = s3_server.spark_options()
    props = {"delta.enableDeletionVectors": "true"} if dv else {}
    spark.conf.unset(DML_ENGINE_CONF)
    for i in range(3):  # three files, written by the data source (the DML is under test)
        _rows(spark, i * 10, 10).coalesce(1).write.format("pydelta").mode("append").options(
            **opts, **(props if i == 0 else {})
        ).save(url)
    dt = DeltaTable.forPath(spark, url, hadoopConf=s3_server.options)
    expected = {i: (i, i % 2, "a") for i in range(30)}

    dt.delete("id < 3")
    for i in range(3):
        del expected[i]
    _check(spark, s3_server, url, list(expected.values()))

    dt.update("id >= 25", {"s": "'u'"})
    for i in range(25, 30):
        expected[i] = (i, i % 2, "u")
    _check(spark, s3_server, url, list(expected.values()))

    source = spark.range(28, 33).selectExpr("id", "cast(id % 2 as int) p", "'m' s")
    (
        dt.alias("t")
        .merge(source.alias("x"), "t.id = x.id")
        .whenMatchedUpdate(set={"s": "x.s"})
        .whenNotMatchedInsertAll()
        .execute()
    )
    for i in range(28, 33):
        expected[i] = (i, i % 2, "m")
    _check(spark, s3_server, url, list(expected.values()))

    metrics = dt.optimize().executeCompaction()
    assert metrics is not None
    _check(spark, s3_server, url, list(expected.values()))
    assert dt._rewriter.engine == "python"  # every step ran on Python workers


def test_native_engine_raises_naming_the_store(spark, s3_server):
    url = s3_server.url(f"fallback-native/{uuid.uuid4().hex}")
    opts = s3_server.spark_options()
    _rows(spark, 0, 4).write.format("pydelta").mode("append").options(**opts).save(url)
    dt = DeltaTable.forPath(spark, url, hadoopConf=s3_server.options)
    spark.conf.set(DML_ENGINE_CONF, "native")
    try:
        with pytest.raises(NativeReadUnavailable, match=f"{s3_server.bucket}/fallback-native"):
            dt.delete("id = 1")
    finally:
        spark.conf.unset(DML_ENGINE_CONF)
    _check(spark, s3_server, url, [(i, i % 2, "a") for i in range(4)])


def test_unreachable_reason_classifies_only_missing_filesystems():
    from delta_pyds.spark.native.locations import SparkLocation, unreachable_reason

    location = SparkLocation("s3a://bucket/t", "s3a://bucket/t")
    assert unreachable_reason(RuntimeError("PATH_NOT_FOUND: s3a://bucket/t"), location) is None
    outer = RuntimeError("An error occurred while calling o95.parquet.")
    outer.__cause__ = RuntimeError("java.lang.ClassNotFoundException: Class org.apache.hadoop.fs.s3a.S3AFileSystem")
    reason = unreachable_reason(outer, location)
    assert reason is not None and "s3a://bucket/t" in reason and "S3AFileSystem" in reason


def test_merge_into_empty_table_falls_back_at_the_write(spark, s3_server, caplog):
    """A scan of no files never lists the store, so the first thing Spark is asked to do is
    the native write: its failure falls back to Python workers too (a new session: nothing
    remembered yet)."""
    url = s3_server.url(f"fallback-empty/{uuid.uuid4().hex}")
    opts = s3_server.spark_options()
    _rows(spark, 0, 0).write.format("pydelta").mode("append").options(**opts).save(url)
    session = spark.newSession()
    session.conf.set("spark.sql.session.timeZone", "UTC")
    dt = DeltaTable.forPath(session, url, hadoopConf=s3_server.options)
    source = session.range(0, 3).selectExpr("id", "cast(id % 2 as int) p", "'m' s")
    with caplog.at_level(logging.WARNING, logger="delta_pyds.spark.commands.rewriter"):
        dt.alias("t").merge(source.alias("x"), "t.id = x.id").whenNotMatchedInsertAll().execute()
    assert any("rows written by Python workers" in r.getMessage() for r in caplog.records)
    _check(spark, s3_server, url, [(i, i % 2, "m") for i in range(3)])


def test_a_fallback_after_planning_reads_the_planned_version(spark, tmp_path, monkeypatch):
    """Spark fails to reach the store only when the planned scan is built: the data source
    then reads the version read_delta planned, not a commit that landed in between."""
    import delta_pyds.spark.native.read as native_read

    url = str(tmp_path / "t")
    write_delta(_rows(spark, 0, 3), url)

    def unreachable_after_a_commit(*args, **kwargs):
        write_delta(_rows(spark, 100, 2, "later"), url)
        raise RuntimeError("org.apache.hadoop.fs.UnsupportedFileSystemException: No FileSystem for scheme")

    monkeypatch.setattr(native_read, "native_dataframe", unreachable_after_a_commit)
    monkeypatch.setattr(native_read, "remember_unreachable", lambda *args: None)  # not for this session
    rows = read_delta(spark, url).select("id", "p", "s")
    assert sorted(tuple(r) for r in spark_rows(rows)) == [(i, i % 2, "a") for i in range(3)]
