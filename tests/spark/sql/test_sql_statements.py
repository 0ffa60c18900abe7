"""delta_pyds.sql: Delta's statements, each compared with the same operation through the
Python API (DeltaTable) on a twin table."""

from __future__ import annotations

import os

import pytest

import delta_pyds
from delta_pyds import DeltaTable, MissingPropertyError, SqlParseError
from delta_pyds.log.history import history
from delta_pyds.table.snapshot import Snapshot
from tests.helpers import spark_rows


@pytest.fixture
def twins(spark, tmp_path):
    """Two identical tables (three commits, partitioned by part): one for SQL, one for the API."""
    paths = []
    for name in ("sql", "api"):
        path = str(tmp_path / name)
        for k in range(3):
            df = spark.createDataFrame(
                [(i, f"n{i}", i % 2) for i in range(k * 4, k * 4 + 4)], "id long, name string, part long"
            )
            delta_pyds.write_delta(df, path, mode="append", partitionBy="part")
        paths.append(path)
    return paths


def _rows(spark, path):
    return spark_rows(delta_pyds.read_delta(spark, path))


def _last_op(path):
    return history(path, limit=1)[0]["operation"]


def test_delete_and_update_match_the_api(spark, twins):
    s, a = twins
    got = delta_pyds.sql(spark, f"DELETE FROM delta.`{s}` WHERE id % 3 = 0;")
    DeltaTable.forPath(spark, a).delete("id % 3 = 0")
    assert got.columns == ["num_affected_rows"] and got.collect()[0][0] == 4
    assert _rows(spark, s) == _rows(spark, a) and _last_op(s) == _last_op(a) == "DELETE"

    got = delta_pyds.sql(spark, f"UPDATE delta.`{s}` AS t SET t.name = upper(name), part = 7 WHERE t.id > 8")
    DeltaTable.forPath(spark, a).update("id > 8", {"name": "upper(name)", "part": "7"})
    assert got.collect()[0].num_affected_rows == 2  # 10 and 11 (9 is deleted)
    assert _rows(spark, s) == _rows(spark, a) and _last_op(s) == "UPDATE"

    got = delta_pyds.sql(spark, f"DELETE FROM delta.`{s}` WHERE id = 12345")
    assert got.collect()[0].num_affected_rows == 0


def test_history_detail_show(spark, twins):
    s, _ = twins
    hist = delta_pyds.sql(spark, f"DESCRIBE HISTORY delta.`{s}` LIMIT 2")
    api = DeltaTable.forPath(spark, s).history(2)
    assert hist.columns == api.columns and [r.version for r in hist.collect()] == [2, 1]
    detail = delta_pyds.sql(spark, f"DESC DETAIL '{s}'").collect()[0]
    api = DeltaTable.forPath(spark, s).detail().collect()[0]
    assert detail.partitionColumns == ["part"] and detail.numFiles == api.numFiles
    cols = delta_pyds.sql(spark, f"SHOW COLUMNS IN delta.`{s}`")
    assert [r.col_name for r in cols.collect()] == ["id", "name", "part"]


def test_properties_and_constraints(spark, twins):
    s, a = twins
    delta_pyds.sql(spark, f"ALTER TABLE delta.`{s}` SET TBLPROPERTIES ('delta.appendOnly' = 'false', 'k' = 'v')")
    DeltaTable.forPath(spark, a).setProperties({"delta.appendOnly": "false", "k": "v"})
    assert Snapshot.load(s).configuration == Snapshot.load(a).configuration
    shown = {r.key: r.value for r in delta_pyds.sql(spark, f"SHOW TBLPROPERTIES delta.`{s}`").collect()}
    assert shown["k"] == "v" and shown["delta.appendOnly"] == "false"
    one = delta_pyds.sql(spark, f"SHOW TBLPROPERTIES delta.`{s}` ('k')").collect()
    assert [(r.key, r.value) for r in one] == [("k", "v")]

    delta_pyds.sql(spark, f"ALTER TABLE delta.`{s}` UNSET TBLPROPERTIES ('k')")
    assert "k" not in Snapshot.load(s).configuration
    with pytest.raises(MissingPropertyError, match="no properties"):
        delta_pyds.sql(spark, f"ALTER TABLE delta.`{s}` UNSET TBLPROPERTIES ('k')")
    delta_pyds.sql(spark, f"ALTER TABLE delta.`{s}` UNSET TBLPROPERTIES IF EXISTS ('k')")

    delta_pyds.sql(spark, f"ALTER TABLE delta.`{s}` ADD CONSTRAINT idPositive CHECK (id >= 0)")
    assert Snapshot.load(s).configuration["delta.constraints.idpositive"] == "id >= 0"
    from delta_pyds import ConstraintViolationError

    version = Snapshot.load(s).version
    with pytest.raises(ConstraintViolationError, match="4 existing rows violate it"):
        delta_pyds.sql(spark, f"ALTER TABLE delta.`{s}` ADD CONSTRAINT small CHECK (id < 8)")
    assert Snapshot.load(s).version == version  # nothing committed
    with pytest.raises(ConstraintViolationError):  # the constraint is enforced on write
        delta_pyds.write_delta(spark.createDataFrame([(-1, "x", 0)], "id long, name string, part long"), s)
    delta_pyds.sql(spark, f"ALTER TABLE delta.`{s}` DROP CONSTRAINT idPositive")
    assert "delta.constraints.idpositive" not in Snapshot.load(s).configuration
    delta_pyds.sql(spark, f"ALTER TABLE delta.`{s}` DROP CONSTRAINT IF EXISTS idPositive")


def test_optimize_vacuum_restore(spark, twins):
    s, a = twins
    got = delta_pyds.sql(spark, f"OPTIMIZE delta.`{s}` WHERE part = 0 ZORDER BY (id)")
    api = DeltaTable.forPath(spark, a).optimize().where("part = 0").executeZOrderBy("id")
    assert got.columns == api.columns
    assert got.collect()[0].metrics.numFilesAdded == api.collect()[0].metrics.numFilesAdded == 1
    assert _rows(spark, s) == _rows(spark, a)

    live_size = {p: sum(Snapshot.load(p).files.column("size").to_pylist()) for p in twins}
    got = delta_pyds.sql(spark, f"RESTORE TABLE delta.`{s}` TO VERSION AS OF 1")
    api = DeltaTable.forPath(spark, a).restoreToVersion(1)
    assert got.columns == api.columns
    # the twins' Z-ordered files may differ by a few bytes (Parquet encoding of the same rows):
    # the removed size is checked against each table's own files, the rest must be equal
    (g,), (w,) = got.collect(), api.collect()
    restored = {"table_size_after_restore", "num_of_files_after_restore", "num_restored_files", "restored_files_size"}
    assert {k: g[k] for k in restored} == {k: w[k] for k in restored}
    assert g.num_removed_files == w.num_removed_files
    for row, path in ((g, s), (w, a)):
        assert row.removed_files_size == live_size[path] + row.restored_files_size - row.table_size_after_restore
    assert _rows(spark, s) == _rows(spark, a) and len(_rows(spark, s)) == 8

    spark.conf.set("spark.databricks.delta.retentionDurationCheck.enabled", "false")
    try:
        dry = delta_pyds.sql(spark, f"VACUUM delta.`{s}` RETAIN 0 HOURS DRY RUN").collect()
        assert dry and all(os.path.exists(r.path.removeprefix("file:")) for r in dry)
        delta_pyds.sql(spark, f"VACUUM '{s}' RETAIN 0 HOURS")
        assert not any(os.path.exists(r.path.removeprefix("file:")) for r in dry)
    finally:
        spark.conf.unset("spark.databricks.delta.retentionDurationCheck.enabled")
    assert len(_rows(spark, s)) == 8


def test_generate_and_convert(spark, twins, tmp_path):
    s, _ = twins
    delta_pyds.sql(spark, f"GENERATE symlink_format_manifest FOR TABLE delta.`{s}`")
    assert os.path.isdir(os.path.join(s, "_symlink_format_manifest"))
    pq = str(tmp_path / "pq")
    spark.range(5).selectExpr("id", "id % 2 AS p").write.partitionBy("p").parquet(pq)
    delta_pyds.sql(spark, f"CONVERT TO DELTA parquet.`{pq}` PARTITIONED BY (p long)")
    assert Snapshot.load(pq).partition_columns == ["p"]
    assert sorted(r.id for r in delta_pyds.sql(spark, f"SELECT id FROM delta.`{pq}`").collect()) == list(range(5))


def test_statement_errors_change_nothing(spark, twins):
    s, _ = twins
    version = Snapshot.load(s).version
    for bad, where in (
        (f"DELETE FROM delta.`{s}` WHERE", "expected a condition"),
        (f"UPDATE delta.`{s}` SET WHERE id = 1", "expected an expression"),
        (f"UPDATE delta.`{s}` SET name = WHERE id = 1", "no value for name"),
        (f"OPTIMIZE delta.`{s}` ZORDER id", "unexpected text"),
        (f"RESTORE delta.`{s}` TO VERSION AS OF x", "expected a non-negative integer"),
        (f"ALTER TABLE delta.`{s}` RENAME TO x", "expected SET TBLPROPERTIES"),
        (f"DELETE FROM delta.`{s}@v1` WHERE id = 1", "time travel"),
    ):
        with pytest.raises(SqlParseError, match=where):
            delta_pyds.sql(spark, bad)
    assert Snapshot.load(s).version == version
