"""DML against a concurrent commit: a blind append does not fail a DELETE, a concurrent
delete of the same file does (ConcurrentModificationError). Runs on both DML engines."""

from __future__ import annotations

import deltalake
import pytest
from dml_engines import dml_engine  # noqa: F401  (autouse: native and python engines)
from dml_helpers import agree_with_deltalake, make_dml_table
from helpers import dml_data

from delta_pyds import DeltaTable

_make = make_dml_table
_agree = agree_with_deltalake
_data = dml_data


def test_concurrent_blind_append_does_not_fail_delete(spark, tmp_path, monkeypatch):
    path = _make(str(tmp_path / "t"), files=2, rows_per_file=10)
    t = DeltaTable.forPath(spark, path)
    from delta_pyds.transaction import commit as transaction
    from delta_pyds.write.plan import commit_arrow

    real = transaction.Transaction.commit
    fired = []

    def racing_commit(self, *args, **kwargs):
        if not fired:
            fired.append(1)
            # a winner at the same version: pydelta's append says isBlindAppend=true (delta-rs
            # 1.6 writes no isBlindAppend, so its appends count as possible rewrites)
            commit_arrow(path, _data(1000, 3))
        return real(self, *args, **kwargs)

    monkeypatch.setattr(transaction.Transaction, "commit", racing_commit)
    t.delete("id = 3")
    _agree(spark, path, [i for i in range(20) if i != 3] + [1000, 1001, 1002])
    assert t.history(1).collect()[0].operation == "DELETE"


def test_concurrent_delete_of_same_file_conflicts(spark, tmp_path, monkeypatch):
    path = _make(str(tmp_path / "t"), files=1, rows_per_file=10, dv=False)
    t = DeltaTable.forPath(spark, path)
    from delta_pyds.errors import ConcurrentModificationError
    from delta_pyds.transaction import commit as transaction

    real = transaction.Transaction.commit
    fired = []

    def racing_commit(self, *args, **kwargs):
        if not fired:
            fired.append(1)
            deltalake.DeltaTable(path).delete("id = 1")
        return real(self, *args, **kwargs)

    monkeypatch.setattr(transaction.Transaction, "commit", racing_commit)
    with pytest.raises(ConcurrentModificationError):
        t.delete("id = 3")
    _agree(spark, path, [i for i in range(10) if i != 1])
