"""Copy-on-write DML on change-data-feed tables (change data files in ``_change_data``,
read back by pydelta and by deltalake), MERGE's change data is in test_merge.py."""

from __future__ import annotations

import glob
import os

import pytest
from dml_engines import dml_engine  # noqa: F401  (autouse: native and python engines)
from dml_helpers import change_rows, make_cdf_table, same_cdf_rows

from delta_pyds import DeltaTable  # noqa: E402
from delta_pyds.table.snapshot import Snapshot  # noqa: E402

_make = make_cdf_table
_changes = change_rows
_same_rows = same_cdf_rows


@pytest.mark.parametrize("mapping", [False, True])
def test_copy_on_write_dml_writes_change_data(spark, tmp_path, mapping):
    path = _make(str(tmp_path / "t"), mapping=mapping)
    t = DeltaTable.forPath(spark, path)
    v = Snapshot.load(path).version
    t.delete("id in (3, 13)")
    assert sorted(_changes(spark, path, v + 1, not mapping)) == [(3, 1, "n3", "delete"), (13, 1, "n13", "delete")]
    cdc = glob.glob(os.path.join(path, "_change_data", "*", "*.parquet"))
    assert cdc and all(os.path.basename(os.path.dirname(f)).startswith(("p=", "col-")) for f in cdc)
    t.update("id = 4", {"name": "'four'"})
    assert sorted(_changes(spark, path, v + 2, not mapping)) == [
        (4, 0, "four", "update_postimage"),
        (4, 0, "n4", "update_preimage"),
    ]
    src = spark.createDataFrame([(5, 1, "five"), (6, 0, "gone"), (100, 0, "new")], "id long, p long, name string")
    (
        t.alias("t")
        .merge(src.alias("s"), "t.id = s.id")
        .whenMatchedDelete("s.name = 'gone'")
        .whenMatchedUpdateAll()
        .whenNotMatchedInsertAll()
        .execute()
    )
    assert sorted(_changes(spark, path, v + 3, not mapping)) == [
        (5, 1, "five", "update_postimage"),
        (5, 1, "n5", "update_preimage"),
        (6, 0, "n6", "delete"),
        (100, 0, "new", "insert"),
    ]
    rows = {r[0]: r for r in _same_rows(spark, path)}
    assert len(rows) == 30 - 3 + 1 and rows[4][2] == "four" and rows[5][2] == "five"


def test_failed_cdc_commit_leaves_no_files(spark, tmp_path, monkeypatch):
    path = _make(str(tmp_path / "t"))
    before = set(glob.glob(os.path.join(path, "**", "*.parquet"), recursive=True))
    from delta_pyds.transaction import commit as transaction

    monkeypatch.setattr(
        transaction.Transaction, "commit", lambda self, *a, **k: (_ for _ in ()).throw(RuntimeError("lost"))
    )
    with pytest.raises(RuntimeError, match="lost"):
        DeltaTable.forPath(spark, path).update("id < 5", {"name": "'x'"})
    after = set(glob.glob(os.path.join(path, "**", "*.parquet"), recursive=True))
    assert after == before
