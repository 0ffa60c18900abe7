"""Cleanup of data files written for a commit that did not happen (delta_pyds.transaction.staged_files):
deleted when the body raises anything (also KeyboardInterrupt), kept when it returns, kept
when a commit names them, and the body's exception is never replaced by the cleanup's."""

from __future__ import annotations

import os

import pyarrow as pa
import pytest

from delta_pyds.storage.store import Storage
from delta_pyds.transaction.staged_files import cleanup_on_failure, delete_on_failure
from delta_pyds.write.plan import write_arrow


def data_file(root, name: str) -> dict:
    """A data file under ``root`` and its add action."""
    path = os.path.join(root, name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(b"PAR1")
    return {"path": name, "size": 4, "partitionValues": {}, "modificationTime": 0, "dataChange": True}


@pytest.fixture
def table(tmp_path):
    root = str(tmp_path / "t")
    write_arrow(root, pa.table({"id": pa.array([1], pa.int64())}))
    return root


def exists(root, add) -> bool:
    return os.path.exists(os.path.join(root, add["path"]))


def test_files_are_deleted_when_the_body_raises(table):
    adds = [data_file(table, "a.parquet"), data_file(table, "p=1/b.parquet")]
    with pytest.raises(RuntimeError, match="commit failed"):
        with delete_on_failure(Storage(table), adds):
            raise RuntimeError("commit failed")
    assert not any(exists(table, a) for a in adds)


def test_files_are_kept_when_the_body_returns(table):
    adds = [data_file(table, "a.parquet")]
    with delete_on_failure(Storage(table), adds):
        pass
    assert exists(table, adds[0])


@pytest.mark.parametrize("interrupt", [KeyboardInterrupt, SystemExit])
def test_an_interrupt_still_cleans_up_and_propagates(table, interrupt):
    adds = [data_file(table, "a.parquet")]
    with pytest.raises(interrupt):
        with delete_on_failure(Storage(table), adds):
            raise interrupt()
    assert not exists(table, adds[0])


def test_files_added_while_the_body_runs_are_deleted_too(table):
    adds: list[dict] = []
    with pytest.raises(ValueError):
        with delete_on_failure(Storage(table), adds):
            adds.append(data_file(table, "a.parquet"))
            adds += [data_file(table, "b.parquet")]
            raise ValueError("the second task failed")
    assert adds and not any(exists(table, a) for a in adds)


def test_files_a_commit_names_are_kept(table):
    """A commit of unknown outcome that landed names the files: they are the table's now."""
    from delta_pyds.table.snapshot import Snapshot

    committed = Snapshot.load(table).files.column("path").to_pylist()
    adds = [{"path": committed[0], "size": 1, "partitionValues": {}}, data_file(table, "new.parquet")]
    with pytest.raises(RuntimeError):
        with delete_on_failure(Storage(table), adds):
            raise RuntimeError("ambiguous commit failure")
    assert exists(table, adds[0]) and not exists(table, adds[1])


def test_a_failing_cleanup_never_replaces_the_bodys_exception(caplog):
    def broken():
        raise OSError("store unreachable")

    with pytest.raises(KeyError, match="original"):
        with cleanup_on_failure(broken, what="the test files"):
            raise KeyError("original")
    assert "could not clean up the test files" in caplog.text


def test_cleanup_runs_once_and_only_on_failure():
    calls = []
    with cleanup_on_failure(lambda: calls.append(1)):
        pass
    assert calls == []
    with pytest.raises(ZeroDivisionError):
        with cleanup_on_failure(lambda: calls.append(1)):
            1 / 0
    assert calls == [1]
