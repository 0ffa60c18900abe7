"""delta_pyds.sql: ``REORG TABLE ... [WHERE <partition predicate>] APPLY (PURGE)`` rewrites
exactly the files with deletion vectors (of the selected partitions) without their deleted
rows, as delta-spark's one ``REORG`` commit; ``APPLY (UPGRADE UNIFORM ...)`` is refused by name."""

from __future__ import annotations

import json

import pytest

import delta_pyds
from delta_pyds import DeltaTable, SqlParseError
from delta_pyds.errors import UnsupportedFeatureError
from delta_pyds.log.history import history
from delta_pyds.table.snapshot import Snapshot
from tests.helpers import deltalake_table, spark_rows


@pytest.fixture
def dv_table(spark, tmp_path):
    """Partitioned by part (0, 1), two commits, DVs in files of both partitions (the first commit's)."""
    path = str(tmp_path / "t")
    for k in range(2):
        rows = [(i, f"n{i}", i % 2) for i in range(k * 10, k * 10 + 10)]
        df = spark.createDataFrame(rows, "id long, s string, part long")
        delta_pyds.write_delta(df, path, partitionBy="part", **{"delta.enableDeletionVectors": "true"})
    DeltaTable.forPath(spark, path).delete("id IN (2, 3, 4, 5)")  # in the first commit's files only
    return path


def _dv_files(path):
    files = Snapshot.load(path).files.to_pylist()
    return sorted((f["partition_values"]["part"], f["path"]) for f in files if f.get("deletion_vector"))


def _rows(spark, path):
    return spark_rows(delta_pyds.read_delta(spark, path))


def test_reorg_purge_rewrites_the_files_with_deletion_vectors(spark, dv_table):
    path = dv_table
    before, dvs, version = _rows(spark, path), _dv_files(path), Snapshot.load(path).version
    files = set(Snapshot.load(path).files.column("path").to_pylist())
    assert {part for part, _ in dvs} == {"0", "1"} and len(before) == 16 and len(files) > len(dvs)
    result = delta_pyds.sql(spark, f"REORG TABLE delta.`{path}` APPLY (PURGE)").collect()
    assert result[0].metrics.numFilesRemoved == len(dvs) and result[0].metrics.numFilesAdded == len(dvs)
    assert _dv_files(path) == []
    after = Snapshot.load(path)
    assert after.version == version + 1
    now = set(after.files.column("path").to_pylist())
    assert files - now == {p for _, p in dvs} and len(now) == len(files)  # exactly the DV files were replaced
    commit = history(path, limit=1)[0]
    assert commit["operation"] == "REORG"
    assert commit["operationParameters"]["applyPurge"] in ("true", True)
    assert json.loads(commit["operationParameters"]["predicate"]) == []
    assert _rows(spark, path) == before
    assert spark_rows(delta_pyds.read_delta(spark, path)) == spark_rows(spark.read.format("pydelta").load(path))
    lake = deltalake_table(path).to_pylist()
    assert sorted(r["id"] for r in lake) == sorted(r[0] for r in before)
    # nothing left to purge: no commit
    delta_pyds.sql(spark, f"reorg table delta.`{path}` apply (purge)")
    assert Snapshot.load(path).version == version + 1


def test_reorg_where_purges_only_the_selected_partitions(spark, dv_table):
    path = dv_table
    before, dvs = _rows(spark, path), _dv_files(path)
    delta_pyds.sql(spark, f"REORG TABLE delta.`{path}` WHERE part = 0 APPLY (PURGE)")
    assert _dv_files(path) == [d for d in dvs if d[0] == "1"]
    assert json.loads(history(path, limit=1)[0]["operationParameters"]["predicate"]) == ["part = 0"]
    assert _rows(spark, path) == before


def test_reorg_errors_name_the_statement_and_change_nothing(spark, dv_table):
    path = dv_table
    version = Snapshot.load(path).version
    with pytest.raises(UnsupportedFeatureError, match=r"REORG TABLE \.\.\. APPLY \(UPGRADE UNIFORM"):
        delta_pyds.sql(spark, f"REORG TABLE delta.`{path}` APPLY (UPGRADE UNIFORM (ICEBERG_COMPAT_VERSION = 2))")
    for bad, message in (
        (f"REORG TABLE delta.`{path}`", "REORG TABLE <table>"),
        (f"REORG TABLE delta.`{path}` APPLY (ZORDER)", "REORG TABLE <table>"),
        (f"REORG TABLE delta.`{path}` APPLY (PURGE) extra", "unexpected text"),
        (f"REORG delta.`{path}` APPLY (PURGE)", "REORG TABLE <table>"),
    ):
        with pytest.raises(SqlParseError, match=message):
            delta_pyds.sql(spark, bad)
    with pytest.raises(ValueError, match="partition"):
        delta_pyds.sql(spark, f"REORG TABLE delta.`{path}` WHERE id = 1 APPLY (PURGE)")
    assert Snapshot.load(path).version == version
