"""UPDATE and MERGE recompute generated columns from the rows' new values, as delta-spark does
(a generated partition column moves the row to its new partition), on both DML engines and with
deletion vectors on and off; a generated column set to a value its expression does not give
fails like delta-spark's CHECK and commits nothing. deltalake reads the same rows."""

from __future__ import annotations

import datetime as dt

import pytest
from dml_engines import dml_engine  # noqa: F401  (both engines: autouse)
from helpers import deltalake_table

import delta_pyds
from delta_pyds import ConstraintViolationError, DeltaTable
from delta_pyds.table.snapshot import Snapshot
from tests.helpers import table_version

COLS = ["id", "v", "ts", "day", "vlen"]


def _table(spark, path, dv):
    delta_pyds.sql(
        spark,
        f"CREATE TABLE delta.`{path}` (id BIGINT, v STRING, ts TIMESTAMP, "
        "day DATE GENERATED ALWAYS AS (CAST(ts AS DATE)), vlen INT GENERATED ALWAYS AS (length(v))) "
        f"USING delta PARTITIONED BY (day) TBLPROPERTIES ('delta.enableDeletionVectors' = '{str(dv).lower()}')",
    )
    rows = [
        (1, "a", dt.datetime(2024, 1, 1, 10)),
        (2, "bb", dt.datetime(2024, 1, 1, 11)),
        (3, "c", dt.datetime(2024, 1, 2, 9)),
    ]
    delta_pyds.write_delta(spark.createDataFrame(rows, "id long, v string, ts timestamp"), path)
    return DeltaTable.forPath(spark, path)


def _rows(spark, path):
    """The rows through both read paths and deltalake (all equal), by id."""
    source = sorted(tuple(r) for r in spark.read.format("pydelta").load(path).select(*COLS).collect())
    native = sorted(tuple(r) for r in delta_pyds.read_delta(spark, path).select(*COLS).collect())
    t = deltalake_table(path)
    theirs = sorted(zip(*(t.column(c).to_pylist() for c in COLS)))
    theirs = [(i, v, ts.replace(tzinfo=None) if ts.tzinfo else ts, d, n) for i, v, ts, d, n in theirs]
    assert source == native == theirs
    return {r[0]: r for r in source}


def _file_of(path, row_id):
    """(partition values, stats) of the live file holding ``row_id`` (one row per file here)."""
    import json

    snap = Snapshot.load(path)
    files = snap.files.to_pylist()
    for f in files:
        stats = json.loads(f["stats"])
        if stats["minValues"]["id"] <= row_id <= stats["maxValues"]["id"] and not f.get("deletion_vector"):
            return f["partition_values"], stats
    raise AssertionError(f"no file holds id {row_id}")


@pytest.mark.parametrize("dv", [False, True])
def test_update_recomputes_generated_columns_and_moves_the_row(spark, tmp_path, dv):
    path = str(tmp_path / "t")
    t = _table(spark, path, dv)
    t.update("id = 1", {"ts": "timestamp'2024-02-03 08:00:00'", "v": "'xyz'"})
    rows = _rows(spark, path)
    assert rows[1] == (1, "xyz", dt.datetime(2024, 2, 3, 8), dt.date(2024, 2, 3), 3)
    assert rows[2] == (2, "bb", dt.datetime(2024, 1, 1, 11), dt.date(2024, 1, 1), 2)
    pv, stats = _file_of(path, 1)
    assert pv == {"day": "2024-02-03"}
    assert (stats["minValues"]["vlen"], stats["maxValues"]["vlen"]) == (3, 3)
    # setting a generated column to what its expression gives is allowed
    t.update("id = 3", {"v": "'dddd'", "vlen": "4"})
    assert _rows(spark, path)[3][4] == 4


@pytest.mark.parametrize("dv", [False, True])
def test_update_setting_a_generated_column_to_another_value_fails(spark, tmp_path, dv):
    path = str(tmp_path / "t")
    t = _table(spark, path, dv)
    before = table_version(path)
    with pytest.raises(ConstraintViolationError, match="generated column day must equal CAST\\(ts AS DATE\\)"):
        t.update("id = 1", {"ts": "timestamp'2024-02-03 08:00:00'", "day": "DATE'2024-01-01'"})
    assert table_version(path) == before
    assert _rows(spark, path)[1][3] == dt.date(2024, 1, 1)


@pytest.mark.parametrize("dv", [False, True])
@pytest.mark.parametrize("clauses", ["explicit", "all"])
def test_merge_recomputes_generated_columns_of_updated_and_inserted_rows(spark, tmp_path, dv, clauses):
    path = str(tmp_path / "t")
    t = _table(spark, path, dv)
    src = spark.createDataFrame(
        [(2, "qq", dt.datetime(2024, 3, 4, 1)), (9, "nine", dt.datetime(2024, 5, 6, 7))],
        "id long, v string, ts timestamp",
    )
    m = t.alias("t").merge(src.alias("s"), "t.id = s.id")
    if clauses == "explicit":
        m = m.whenMatchedUpdate(set={"ts": "s.ts", "v": "s.v"}).whenNotMatchedInsert(
            values={"id": "s.id", "v": "s.v", "ts": "s.ts"}
        )
    else:
        m = m.whenMatchedUpdateAll().whenNotMatchedInsertAll()
    m.execute()
    rows = _rows(spark, path)
    assert rows[2] == (2, "qq", dt.datetime(2024, 3, 4, 1), dt.date(2024, 3, 4), 2)
    assert rows[9] == (9, "nine", dt.datetime(2024, 5, 6, 7), dt.date(2024, 5, 6), 4)
    assert rows[1] == (1, "a", dt.datetime(2024, 1, 1, 10), dt.date(2024, 1, 1), 1)
    assert _file_of(path, 2)[0] == {"day": "2024-03-04"}
    pv, stats = _file_of(path, 9)
    assert pv == {"day": "2024-05-06"} and stats["maxValues"]["vlen"] == 4


@pytest.mark.parametrize("dv", [False, True])
def test_merge_setting_a_generated_column_to_another_value_fails(spark, tmp_path, dv):
    path = str(tmp_path / "t")
    t = _table(spark, path, dv)
    before = table_version(path)
    src = spark.createDataFrame([(1, dt.datetime(2024, 3, 4, 1))], "id long, ts timestamp")
    with pytest.raises(ConstraintViolationError, match="generated column day must equal"):
        t.alias("t").merge(src.alias("s"), "t.id = s.id").whenMatchedUpdate(
            set={"ts": "s.ts", "day": "DATE'2020-01-01'"}
        ).execute()
    with pytest.raises(ConstraintViolationError, match="generated column vlen must equal"):
        t.alias("t").merge(src.alias("s"), "t.id = s.id + 100").whenNotMatchedInsert(
            values={"id": "s.id + 100", "v": "'x'", "ts": "s.ts", "vlen": "7"}
        ).execute()
    assert table_version(path) == before
