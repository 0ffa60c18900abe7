"""A failed write task's cleanup (delta_pyds.write.parquet_writer.write_task): the files the
task wrote are deleted, and an interrupt (KeyboardInterrupt, SystemExit) that arrives while
the cleanup waits for the file thread is raised after the cleanup, not dropped."""

from __future__ import annotations

import glob
import os
import threading
from dataclasses import replace

import pyarrow as pa
import pytest

from delta_pyds.protocol.schema import PrimitiveType, StructField, StructType
from delta_pyds.write import parquet_writer
from delta_pyds.write.options import WriteOptions
from delta_pyds.write.parquet_writer import write_task
from delta_pyds.write.plan import plan_write

SCHEMA = StructType((StructField("id", PrimitiveType("long")),))


def _spec(root: str):
    """A spec handing every batch to the file thread as its own row group."""
    plan = plan_write(WriteOptions.parse({"path": root}, overwrite=False), SCHEMA)
    return replace(plan.spec, row_group_bytes=1, _derived={})


def _batch(ids):
    return pa.RecordBatch.from_arrays([pa.array(ids, pa.int64())], names=["id"])


def _data_files(root: str) -> list[str]:
    return glob.glob(os.path.join(root, "**", "*.parquet"), recursive=True)


@pytest.mark.parametrize("interrupt", [KeyboardInterrupt, SystemExit])
def test_an_interrupt_while_abort_waits_is_raised_after_the_cleanup(tmp_path, monkeypatch, interrupt):
    """The task fails (ValueError) while a row group is still pending on the file thread;
    waiting for it in the cleanup is interrupted: the interrupt propagates (it was
    swallowed before) and the task's file is still deleted."""
    root = str(tmp_path / "t")
    task_failed = threading.Event()
    written: list[str] = []
    original = parquet_writer._OpenFile.write

    def write_then_interrupted(self, table):
        original(self, table)
        written.extend(_data_files(root))  # the file exists now
        task_failed.wait()  # still pending when the task fails
        raise interrupt()

    monkeypatch.setattr(parquet_writer._OpenFile, "write", write_then_interrupted)

    def batches():
        yield _batch([1, 2])
        task_failed.set()
        raise ValueError("the task's input failed")

    with pytest.raises(interrupt):
        write_task(_spec(root), batches())
    assert written and _data_files(root) == []


def test_a_failure_of_the_file_thread_while_abort_waits_keeps_the_tasks_error(tmp_path, monkeypatch):
    """A pending file operation that fails during the cleanup does not replace the task's error."""
    root = str(tmp_path / "t")
    task_failed = threading.Event()
    written: list[str] = []
    original = parquet_writer._OpenFile.write

    def write_then_fail(self, table):
        original(self, table)
        written.extend(_data_files(root))
        task_failed.wait()
        raise OSError("disk full")

    monkeypatch.setattr(parquet_writer._OpenFile, "write", write_then_fail)

    def batches():
        yield _batch([1, 2])
        task_failed.set()
        raise ValueError("the task's input failed")

    with pytest.raises(ValueError, match="the task's input failed"):
        write_task(_spec(root), batches())
    assert written and _data_files(root) == []


def test_a_task_that_succeeds_keeps_its_files(tmp_path):
    root = str(tmp_path / "t")
    result = write_task(_spec(root), [_batch([1]), _batch([2, 3])])
    assert result.num_rows == 3 and len(_data_files(root)) == len(result.adds) >= 1
