"""Snapshot reuse across statements (delta_pyds.table.latest): a statement after another on the
same table reads only the commits made since (the log is not replayed per statement), and
stays correct when another writer (deltalake) changed the table in between."""

from __future__ import annotations

import os

import pytest
from dml_helpers import agree_with_deltalake, make_dml_table

from delta_pyds import DeltaTable
from delta_pyds.storage.store import Storage
from delta_pyds.table import latest

pytestmark = pytest.mark.engine_independent


def log_reads(monkeypatch) -> list[str]:
    """Names of the _delta_log files the driver reads through Storage.read_many from now on."""
    names: list[str] = []
    original = Storage.read_many

    def spy(storage, paths, *, sizes=None):
        names.extend(os.path.basename(p) for p in paths if "_delta_log" in p)
        return original(storage, paths, sizes=sizes)

    monkeypatch.setattr(Storage, "read_many", spy)
    return names


def test_a_second_statement_reads_only_the_new_commits(spark, tmp_path, monkeypatch):
    latest.forget()
    path = make_dml_table(str(tmp_path / "t"), files=2, rows_per_file=20)
    t = DeltaTable.forPath(spark, path)
    t.delete("id = 1")  # version 1; the snapshot of version 1 is kept after its commit is read
    t.update("id = 2", {"value": "value + 1"})  # version 2
    reads = log_reads(monkeypatch)
    t.delete("id = 3")  # version 3: starts from the kept version 2
    snapshot_reads = [n for n in reads if n.endswith(".json") and n[:20].isdigit()]
    older = [n for n in snapshot_reads if int(n[:20]) < 2]
    assert older == [], f"statement 3 read commits before version 2: {snapshot_reads}"
    agree_with_deltalake(spark, path, [i for i in range(40) if i not in (1, 3)])


def test_another_writer_between_statements(spark, tmp_path):
    deltalake = pytest.importorskip("deltalake")
    latest.forget()
    path = make_dml_table(str(tmp_path / "t"), files=2, rows_per_file=20)
    t = DeltaTable.forPath(spark, path)
    t.delete("id = 1")
    deltalake.DeltaTable(path).delete("id = 5")
    t.delete("id = 7")
    deltalake.DeltaTable(path).delete("id < 3")
    t.update("id = 10", {"value": "value + 1"})
    agree_with_deltalake(spark, path, [i for i in range(40) if i not in (0, 1, 2, 5, 7)])
    assert t.toDF().count() == 35
