"""Every reader plans through the read core (delta_pyds.read.scan_plan), so every reader
returns the same rows of a version: the data source, read_delta (Spark's Parquet reader),
DML's scans (Python workers and Spark's reader), the core read in Python, a stream's
first batch and the change feed (net changes from version 0 where the feed is on)."""

from __future__ import annotations

import collections
import os

import pyarrow as pa
import pytest
from conftest import DATA
from helpers import arrow_rows, spark_rows

from delta_pyds.errors import DeltaError
from delta_pyds.read.file_reader import read_file
from delta_pyds.read.options import ReadOptions
from delta_pyds.read.scan import FileTask
from delta_pyds.read.scan_plan import load_snapshot, plan_scan, select_columns
from delta_pyds.table.snapshot import Snapshot

TABLES = sorted(
    os.path.relpath(root, DATA)
    for root, dirs, _ in os.walk(DATA)
    if "_delta_log" in dirs and os.path.relpath(root, DATA).count(os.sep) == 1
)
# every reader on these (features that touch planning: deletion vectors, column mapping in
# both modes, partitions Spark cannot discover, materialized partition columns, type
# widening, void columns, v2 checkpoints with sidecars, the change feed with DVs, variant);
# the other tables are read through the data source, read_delta and the core at two
# versions (the slower readers, streams and DML scans, on every table would cost CI ~15
# minutes for planning paths these tables already cover)
EVERY_READER = {
    "delta-rs/table-with-dv-small",
    "delta-rs/table_with_column_mapping",
    "delta-rs/delta-0.8.0-special-partition",
    "delta-rs/checkpoint-cdf-table",
    "kernel-rs/cdf-column-mapping-id-mode",
    "kernel-rs/cdf-table-with-cdc-and-dvs",
    "kernel-rs/partitioned_with_materialize_feature",
    "kernel-rs/type-widening",
    "kernel-rs/void-column",
    "kernel-rs/v2-checkpoints-parquet-with-sidecars",
    "kernel-rs/timestamp-partitioned-table",
    "kernel-rs/unshredded-variant",
}
CHANGE_ROWS = {"insert": 1, "update_postimage": 1, "delete": -1, "update_preimage": -1}


def loadable(path: str, version: int) -> bool:
    """Whether the version's log replays and its data files are all still there (the
    copied tables keep only some versions' files)."""
    try:
        files = Snapshot.load(path, version=version).files
    except DeltaError:
        return False
    return all(os.path.exists(os.path.join(path, p)) for p in files.column("path").to_pylist())


def versions_of(path: str, latest: int) -> list[int]:
    """The latest version and an older one whose log is still there (if any)."""
    older = next((v for v in (latest - 1, 0) if v >= 0 and loadable(path, v)), None)
    return [latest] if older is None or older == latest else [latest, older]


def core_rows(path: str, version: int) -> list:
    """The version's rows read in Python through the read core (no Spark)."""
    snap = load_snapshot(ReadOptions.parse({"path": path, "versionAsOf": str(version)}))
    scan = plan_scan(snap)
    spec = scan.read_spec()
    pcols = list(snap.physical_partition_columns)
    batches = []
    for f in scan.files.to_pylist():
        pv = tuple((f["partition_values"] or {}).get(c) for c in pcols)
        batches += read_file(spec, FileTask(f["path"], f["size"], pv, f["deletion_vector"]))
    return arrow_rows(pa.Table.from_batches(batches, schema=spec.arrow_schema), scan.output.names)


def dml_rows(spark, path: str, version: int, engine: str) -> list:
    """The rows DML's scan sees (the rewriter's Python-worker or native scan)."""
    from delta_pyds.spark.commands.rewriter import TableRewriter
    from delta_pyds.spark.session.conf import DML_ENGINE_CONF
    from delta_pyds.storage.store import Storage

    storage = Storage(path)
    snap = Snapshot.load(storage, version=version)
    spark.conf.set(DML_ENGINE_CONF, engine)
    try:
        df = TableRewriter(spark, path, {}, storage).scan(snap, snap.files)
    finally:
        spark.conf.unset(DML_ENGINE_CONF)
    names = select_columns(snap.schema, None).names
    return spark_rows(df.select(*[f"`{n}`" for n in names]))


def stream_rows(spark, path: str, tmp_path, name: str) -> list:
    """All rows a stream started now emits (its first batches hold the latest snapshot)."""
    query_name = "core_" + "".join(c if c.isalnum() else "_" for c in name)
    df = spark.readStream.format("pydelta").option("maxFilesPerTrigger", "100000").load(path)
    query = (
        df.writeStream.format("memory")
        .queryName(query_name)
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    try:
        query.awaitTermination()
        return spark_rows(spark.table(query_name))
    finally:
        query.stop()
        spark.catalog.dropTempView(query_name)


def change_feed_rows(spark, path: str, version: int) -> list:
    """The net rows of the change feed from version 0 to ``version``."""
    df = (
        spark.read.format("pydelta")
        .option("readChangeFeed", "true")
        .option("startingVersion", "0")
        .option("endingVersion", str(version))
        .load(path)
    )
    data = [c for c in df.columns if c not in ("_change_type", "_commit_version", "_commit_timestamp")]
    counts: collections.Counter = collections.Counter()
    changes = spark_rows(df.select(*[f"`{c}`" for c in data], "_change_type"))
    for row in changes:
        counts[row[:-1]] += CHANGE_ROWS[row[-1]]
    assert all(n >= 0 for n in counts.values()), "the change feed deletes rows it never inserted"
    return sorted((r for r, n in counts.items() for _ in range(n)), key=repr)


def feed_on_from_start(path: str) -> bool:
    try:
        conf = Snapshot.load(path, version=0).configuration
    except DeltaError:
        return False
    return str(conf.get("delta.enableChangeDataFeed", "")).lower() == "true"


def assert_readers_agree(spark, path: str, tmp_path, name: str, every: bool = True) -> None:
    """Every reader (only the data source, read_delta and the core unless ``every``)
    returns the data source's rows, at the latest and an older version."""
    from delta_pyds import read_delta

    try:
        latest = Snapshot.load(path)
        latest.files  # noqa: B018
    except DeltaError as exc:  # the core refuses it: so must every reader, with the same error
        with pytest.raises(Exception) as source_exc:  # Spark wraps it, or the read door raises delta-spark's
            spark.read.format("pydelta").load(path).collect()
        assert isinstance(source_exc.value, type(exc)) or type(exc).__name__ in str(source_exc.value)
        with pytest.raises(type(exc)):
            read_delta(spark, path).collect()
        return
    if not loadable(path, latest.version):  # a log-only copy: both paths name a missing file
        for read in (lambda: spark.read.format("pydelta").load(path).collect(), lambda: read_delta(spark, path)):
            with pytest.raises(Exception, match="DataFileError|is referenced by the table log but is missing"):
                read()
        return
    variant = '"variant"' in latest.schema.json()
    for version in versions_of(path, latest.version):
        expected = spark_rows(spark.read.format("pydelta").option("versionAsOf", version).load(path))
        assert spark_rows(read_delta(spark, path, versionAsOf=version)) == expected, f"read_delta v{version}"
        if not variant:  # the core's Python read returns variants in their binary encoding
            assert core_rows(path, version) == expected, f"core read v{version}"
        if not every:
            continue
        assert dml_rows(spark, path, version, "python") == expected, f"DML Python scan v{version}"
        if version == latest.version:  # the native scan is plan_native_scan, as read_delta's
            assert dml_rows(spark, path, version, "auto") == expected, f"DML native scan v{version}"
        if feed_on_from_start(path):
            assert change_feed_rows(spark, path, version) == expected, f"change feed 0..{version}"
    if every:
        assert stream_rows(spark, path, tmp_path, name) == spark_rows(spark.read.format("pydelta").load(path))


def test_the_every_reader_tables_exist():
    assert EVERY_READER <= set(TABLES)


@pytest.mark.slow
@pytest.mark.parametrize("name", TABLES)
def test_every_reader_returns_the_same_rows_of_a_version(spark, tmp_path, name):
    assert_readers_agree(spark, os.path.join(DATA, name), tmp_path, name, every=name in EVERY_READER)


HOSTILE_VALUES = ["10:00", "x/y", "50%", "#1", "it's", "tab\there", "ü€", "a=b", "", None]


@pytest.mark.slow
def test_readers_agree_on_a_hostile_table(spark, tmp_path):
    """Column mapping (name), a struct column, partition values that need escaping (and
    null / empty), deletion vectors from DELETE, UPDATE, the change feed on, an append after a
    checkpoint: every reader still returns the same rows at every step."""
    from delta_pyds import DeltaTable
    from delta_pyds.transaction.checkpoint_writer import write_checkpoint
    from delta_pyds.write.plan import commit_arrow

    path = str(tmp_path / "hostile")
    opts = {
        "partitionBy": "k",
        "delta.columnMapping.mode": "name",
        "delta.enableDeletionVectors": "true",
        "delta.enableChangeDataFeed": "true",
    }
    for half in (0, 1):
        ids = list(range(half * 20, half * 20 + 20))
        commit_arrow(
            path,
            pa.table(
                {
                    "id": pa.array(ids, pa.int64()),
                    "k": pa.array([HOSTILE_VALUES[i % len(HOSTILE_VALUES)] for i in ids], pa.string()),
                    "s": pa.array([{"a": i, "b": f"b{i}"} for i in ids]),
                }
            ),
            options=opts if half == 0 else {},
        )
    t = DeltaTable.forPath(spark, path)
    t.delete("id % 7 = 0")
    t.update("id % 5 = 1", {"s": "named_struct('a', -id, 'b', 'u')"})
    snap = Snapshot.load(path)
    write_checkpoint(snap.storage, snap.version)
    commit_arrow(path, pa.table({"id": pa.array([100], pa.int64()), "k": ["x/y"], "s": [{"a": 1, "b": "z"}]}))
    assert any(f for f in Snapshot.load(path).files.column("deletion_vector").to_pylist())
    for version in range(Snapshot.load(path).version + 1):
        rows = spark_rows(spark.read.format("pydelta").option("versionAsOf", version).load(path))
        assert spark_rows(read_delta_at(spark, path, version)) == rows
    assert_readers_agree(spark, path, tmp_path, "hostile")


def read_delta_at(spark, path: str, version: int):
    from delta_pyds import read_delta

    return read_delta(spark, path, versionAsOf=version)


def test_column_selection_is_the_same_on_every_path(spark, tmp_path):
    """``columns`` selects case-insensitively, in the order given, on the data source and the
    native path; an unknown column is the same error on both."""
    from delta_pyds import read_delta

    path = os.path.join(DATA, "delta-rs/delta-0.8.0-partitioned")
    ds = spark.read.format("pydelta").option("columns", "DAY,value").load(path)
    native = read_delta(spark, path, columns="DAY,value")
    assert ds.columns == native.columns == ["day", "value"]
    assert spark_rows(ds) == spark_rows(native)
    with pytest.raises(Exception, match="option columns: nope not in the table; available: "):
        spark.read.format("pydelta").option("columns", "nope").load(path).collect()
    with pytest.raises(ValueError, match="option columns: nope not in the table; available: "):
        read_delta(spark, path, columns="nope")
