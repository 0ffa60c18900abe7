"""How the Spark-native read selects a version's files among those Spark lists: the
condition on ``_metadata.file_path`` names the live files (never the complement of a
listing: a file that appears in a later listing must stay out), removed files still on
disk are never opened, and the conditions that split the live files further (deletion
vector files, partition values) name the shorter side within them."""

from __future__ import annotations

import re

import numpy as np
import pyarrow as pa
import pytest
from conftest import table_path
from deltalake import DeltaTable as DLTable
from deltalake import write_deltalake
from helpers import spark_rows

import delta_pyds.spark.native.read as native_read
from delta_pyds import read_delta
from delta_pyds.table.snapshot import Snapshot


@pytest.fixture
def per_row_filter(monkeypatch):
    """No name glob (that path lists exactly the live files): the file_path condition."""
    monkeypatch.setattr(native_read, "MAX_GLOB_FILES", 0)


def _plan(df) -> str:
    return df._jdf.queryExecution().optimizedPlan().toString()


def _names(text: str) -> set[str]:
    return set(re.findall(r"part-[^,)/ ]*\.parquet", text))


def _table_with_removed_files(path: str, partitioned: bool = False) -> tuple[set[str], set[str]]:
    """8 appends, then a delete that rewrites some files; the removed files stay on disk and
    are overwritten with bytes no Parquet reader accepts. Returns (live, removed) names."""
    for i in range(8):
        ids = np.arange(i * 100, (i + 1) * 100, dtype=np.int64)
        table = pa.table({"id": ids, "p": pa.array([f"v{i % 2}"] * 100)})
        write_deltalake(path, table, mode="append", partition_by=["p"] if partitioned else None)
    DLTable(path).delete("id >= 150 and id < 320")
    snapshot = Snapshot.load(path)
    live = {p.rsplit("/", 1)[-1] for p in snapshot.files.column("path").to_pylist()}
    removed = {p.rsplit("/", 1)[-1] for p in snapshot.tombstones.column("path").to_pylist()}
    assert removed and live and not (removed & live)
    for rel in snapshot.tombstones.column("path").to_pylist():
        with open(f"{path}/{rel}", "wb") as f:
            f.write(b"not parquet at all")
    return live, removed


@pytest.mark.parametrize("partitioned", [False, True])
def test_removed_files_are_never_opened(spark, tmp_path, per_row_filter, partitioned):
    path = str(tmp_path / "t")
    live, removed = _table_with_removed_files(path, partitioned)
    native = read_delta(spark, path, native="require")
    named = _names(_plan(native))
    assert named == live  # IN (the live files)
    # the removed files hold garbage: reading them would fail, so they were never opened
    expected = spark_rows(spark.read.format("pydelta").load(path))
    assert spark_rows(native) == expected
    assert sorted(r.id for r in native.collect()) == sorted(DLTable(path).to_pyarrow_table().column("id").to_pylist())
    assert native.count() == 800 - 170


def test_a_file_appearing_after_the_dataframe_is_made_is_never_read(spark, tmp_path, per_row_filter):
    """Every listed file is live when the DataFrame is made; then an uncommitted data file
    appears (a concurrent writer's, or a later commit's) and Spark re-lists the root
    (``refreshByPath`` of the cached DataFrame; Spark Connect re-analyses every query): the
    DataFrame still reads this version's 60 rows, never the new file's."""
    import shutil

    path = str(tmp_path / "t")
    for i in range(6):
        write_deltalake(path, pa.table({"id": np.arange(i * 10, (i + 1) * 10, dtype=np.int64)}), mode="append")
    native = read_delta(spark, path, native="require").cache()
    try:
        assert native.count() == 60
        first = Snapshot.load(path).files.column("path")[0].as_py()
        shutil.copy(f"{path}/{first}", f"{path}/part-99999-uncommitted.parquet")
        spark.catalog.refreshByPath(path)
        assert native.count() == 60
    finally:
        native.unpersist()


def test_few_live_files_among_many_removed_are_named(spark, tmp_path, per_row_filter):
    """An overwrite leaves one live file beside the removed ones: IN (the live file)."""
    path = str(tmp_path / "t")
    for i in range(5):
        write_deltalake(path, pa.table({"id": np.arange(i * 10, (i + 1) * 10, dtype=np.int64)}), mode="append")
    write_deltalake(path, pa.table({"id": np.arange(1000, 1003, dtype=np.int64)}), mode="overwrite")
    live = {p.rsplit("/", 1)[-1] for p in Snapshot.load(path).files.column("path").to_pylist()}
    native = read_delta(spark, path, native="require")
    assert _names(_plan(native)) == live
    assert sorted(r.id for r in native.collect()) == [1000, 1001, 1002]


def test_deletion_vector_files_and_plain_files_split_by_short_conditions(spark, per_row_filter):
    path = table_path("delta-rs/table-with-dv-small")
    native = read_delta(spark, path, native="require")
    assert spark_rows(native) == spark_rows(spark.read.format("pydelta").load(path))


@pytest.mark.parametrize("limit", [0, 4096])
def test_partition_values_by_case_or_join(spark, monkeypatch, per_row_filter, limit):
    """Partition values Spark cannot discover: a CASE over the smaller file sets (the most
    common value in ELSE) or, beyond MAX_CASE_PATHS paths, the broadcast join."""
    monkeypatch.setattr(native_read, "MAX_CASE_PATHS", limit)
    path = table_path("delta-rs/delta-0.8.0-special-partition")
    native = read_delta(spark, path, native="require")
    plan = _plan(native)
    assert ("CASE WHEN" in plan) is (limit > 0)
    assert spark_rows(native) == spark_rows(spark.read.format("pydelta").load(path))
