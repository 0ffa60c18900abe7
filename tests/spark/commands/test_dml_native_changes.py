"""Change data files and tables with materialized partition columns written by Spark's own
Parquet writer (no row through a Python worker: the Python-worker writer is made to fail),
read back through the change data feed reader, deltalake's ``load_cdf``, the data source
and ``read_delta``."""

from __future__ import annotations

import glob
import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable as DLTable
from deltalake import write_deltalake
from helpers import arrow_rows, deltalake_table, spark_rows

from delta_pyds import DeltaTable, read_delta
from delta_pyds.spark.commands.rewriter import TableRewriter
from delta_pyds.spark.session.conf import DML_ENGINE_CONF
from delta_pyds.table.snapshot import Snapshot

COLS = ["id", "p", "name"]
CHANGE_COLS = ["id", "p", "name", "_change_type", "_commit_version"]


@pytest.fixture
def native_only(spark, monkeypatch):
    """The native engine, with the Python-worker writer failing if anything reaches it."""

    def refuse(self, df, spec, data_change):
        raise AssertionError(f"rows written by Python workers (directory {spec.directory!r})")

    monkeypatch.setattr(TableRewriter, "_python_rewrite", refuse)
    spark.conf.set(DML_ENGINE_CONF, "native")
    try:
        yield spark
    finally:
        spark.conf.unset(DML_ENGINE_CONF)


def _table(ids):
    return pa.table(
        {"id": pa.array(ids, pa.int64()), "p": pa.array([i % 2 for i in ids]), "name": [f"n{i}" for i in ids]}
    )


def _changes(spark, path, version):
    return spark_rows(
        spark.read.format("pydelta")
        .option("readChangeFeed", "true")
        .option("startingVersion", version)
        .load(path)
        .select(*CHANGE_COLS)
    )


@pytest.mark.parametrize("mapping", [False, True])
def test_change_data_files_by_spark_writer(native_only, tmp_path, mapping):
    spark = native_only
    path = str(tmp_path / "t")
    conf = {"delta.enableChangeDataFeed": "true"}
    if mapping:
        conf["delta.columnMapping.mode"] = "name"
    for i, start in enumerate((0, 10, 20)):
        write_deltalake(
            path,
            _table(range(start, start + 10)),
            mode="append",
            partition_by=["p"],
            configuration=conf if not i else None,
        )
    t = DeltaTable.forPath(spark, path)
    v = Snapshot.load(path).version
    t.delete("id in (3, 13)")
    t.update("id = 4", {"name": "'four'"})
    ours = _changes(spark, path, v + 1)
    assert sorted(r[:4] for r in ours) == [
        (3, 1, "n3", "delete"),
        (4, 0, "four", "update_postimage"),
        (4, 0, "n4", "update_preimage"),
        (13, 1, "n13", "delete"),
    ]
    cdc = sorted(glob.glob(os.path.join(path, "_change_data", "*", "*.parquet")))
    assert len(cdc) >= 2
    snap = Snapshot.load(path)
    p_dir = snap.schema.field("p").physical_name(snap.column_mapping_mode)
    for f in cdc:
        assert os.path.basename(os.path.dirname(f)).startswith(p_dir + "=")
        names = pq.read_schema(f).names
        assert "_change_type" in names  # PROTOCOL.md "Change Data Files": the column is in the file
        assert p_dir not in names  # partition values live in the directory and partitionValues
        if mapping:
            assert "name" not in names and snap.schema.field("name").physical_name("name") in names
    if not mapping:  # deltalake reads no change data feed of column-mapped tables
        theirs = arrow_rows(pa.table(DLTable(path).load_cdf(starting_version=v + 1).read_all()), CHANGE_COLS)
        assert ours == theirs
    rows = spark_rows(spark.read.format("pydelta").load(path).select(*COLS))
    assert rows == spark_rows(read_delta(spark, path).select(*COLS))
    assert len(rows) == 28


def test_materialized_partition_columns_by_spark_writer(native_only, tmp_path):
    from delta_pyds.write.plan import commit_arrow

    spark = native_only
    path = str(tmp_path / "t")
    opts = {"partitionBy": '["p"]', "delta.feature.materializePartitionColumns": "supported"}
    commit_arrow(path, _table(range(20)), options=opts)
    commit_arrow(path, _table(range(20, 40)))
    t = DeltaTable.forPath(spark, path)
    t.delete("id % 5 = 0")
    t.update("id = 7", {"name": "'seven'"})
    snap = Snapshot.load(path)
    for rel in snap.files.column("path").to_pylist():
        f = os.path.join(path, rel)
        assert os.path.basename(os.path.dirname(f)).startswith("p=")
        data = pq.read_table(f)
        assert "p" in data.column_names  # the partition column is materialized in the file
        assert set(data.column("p").to_pylist()) == {int(os.path.basename(os.path.dirname(f))[2:])}
    assert not glob.glob(os.path.join(path, "_pydelta_staging-*"))
    expected = sorted((i, i % 2, "seven" if i == 7 else f"n{i}") for i in range(40) if i % 5)
    ours = spark_rows(spark.read.format("pydelta").load(path).select(*COLS))
    assert sorted(ours) == expected
    assert ours == spark_rows(read_delta(spark, path).select(*COLS))
    assert arrow_rows(deltalake_table(path), COLS) == ours
