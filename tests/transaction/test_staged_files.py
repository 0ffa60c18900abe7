"""Cleanup of data files written for a commit that did not happen (delta_pyds.transaction.staged_files):
deleted when the body raises anything (also KeyboardInterrupt), kept when it returns, kept
when a commit names them, and the body's exception is never replaced by the cleanup's."""

from __future__ import annotations

import os

import pyarrow as pa
import pytest

from delta_pyds.storage.store import Storage
from delta_pyds.transaction.staged_files import cleanup_on_failure, delete_on_failure
from delta_pyds.write.plan import commit_arrow


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
    commit_arrow(root, pa.table({"id": pa.array([1], pa.int64())}))
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


@pytest.mark.parametrize(
    "name",
    [
        "p=é/ü-a.parquet",  # non-ASCII: commits are written as UTF-8, not as \u escapes
        "p=日本/b.parquet",
        "p=😀/c.parquet",  # outside the BMP: a surrogate pair when escaped
        'p=a"b\\c/d.parquet',  # characters JSON escapes
        "p=a%20b/e.parquet",  # a URI-encoded path as the log spells it
        "p=a\u2028b/f.parquet",  # a line separator: not a JSON line break
    ],
)
def test_files_a_landed_commit_names_are_kept_whatever_their_characters(table, name):
    """A commit of unknown outcome that landed (written with this library's commit writer)
    names files whose paths hold any character: they are found and kept."""
    from delta_pyds.transaction.log_entry import serialize

    add = data_file(table, name)
    log_dir = os.path.join(table, "_delta_log")
    with open(os.path.join(log_dir, f"{1:020d}.json"), "wb") as f:
        f.write(serialize([{"commitInfo": {"operation": "WRITE"}}, {"add": add}]))
    with pytest.raises(RuntimeError):
        with delete_on_failure(Storage(table), [add]):
            raise RuntimeError("ambiguous commit failure")
    assert exists(table, add)


def test_uncommitted_files_beside_a_landed_commit_with_unusual_paths_are_still_deleted(table):
    """Parsing the recent commits (U+2028 inside a path included) still lets the files no
    commit names be deleted: the check is exact, not a refusal to clean up."""
    from delta_pyds.transaction.log_entry import serialize

    landed = data_file(table, "p=a\u2028b/landed.parquet")
    stray = data_file(table, "p=a\u2028b/stray.parquet")
    with open(os.path.join(table, "_delta_log", f"{1:020d}.json"), "wb") as f:
        f.write(serialize([{"commitInfo": {"operation": "WRITE"}}, {"add": landed}]))
    with pytest.raises(RuntimeError):
        with delete_on_failure(Storage(table), [landed, stray]):
            raise RuntimeError("ambiguous commit failure")
    assert exists(table, landed) and not exists(table, stray)
