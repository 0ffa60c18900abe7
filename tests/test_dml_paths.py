"""DeltaTable DML, OPTIMIZE and RESTORE on partitions whose values need escaping in
paths (``:`` and therefore every timestamp partition, ``/``, ``%``, ``#``, quotes, tabs,
Unicode): each operation must remove exactly the files it replaces, for pydelta and for
deltalake, before and after a checkpoint (issue 15)."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest

from delta_pyds import DeltaTable
from delta_pyds.checkpoint_writer import write_checkpoint
from delta_pyds.snapshot import Snapshot
from delta_pyds.write_plan import write_arrow

from helpers import deltalake_table
from test_bad_input import read_rows

VALUES = ["10:00", "x/y", "50%", "#1", "it's", "tab\there", "ü€", "a=b"]
TS = [dt.datetime(2024, 5, 1, 10, 0, tzinfo=dt.timezone.utc), dt.datetime(2024, 5, 2, 23, 59, 59,
                                                                           tzinfo=dt.timezone.utc)]


def _rows(table: pa.Table) -> list:
    return sorted((r["id"], r["k"], r["v"]) for r in table.select(["id", "k", "v"]).to_pylist())


def _agree(path: str) -> list:
    ours, theirs = _rows(read_rows(path)), _rows(deltalake_table(path))
    assert ours == theirs
    return ours


def _make(path: str, values, *, dv: bool, checkpoint: bool) -> list:
    ks = [values[i % len(values)] for i in range(2 * len(values))]
    dtype = pa.timestamp("us", tz="UTC") if isinstance(values[0], dt.datetime) else pa.string()
    opts = {"partitionBy": "k"}
    if dv:
        opts["delta.enableDeletionVectors"] = "true"
    for half in (0, 1):  # two files per partition
        idx = range(half * len(ks) // 2, (half + 1) * len(ks) // 2)
        write_arrow(path, pa.table({"id": pa.array(list(idx), pa.int64()), "k": pa.array([ks[i] for i in idx], dtype),
                                    "v": pa.array([float(i) for i in idx])}), options=opts)
    if checkpoint:
        snap = Snapshot.load(path)
        write_checkpoint(snap.storage, snap.version)
    return _agree(path)


@pytest.mark.parametrize("values", [VALUES, TS], ids=["strings", "timestamps"])
@pytest.mark.parametrize("dv, checkpoint", [(False, False), (True, True)], ids=["cow", "dv+checkpoint"])
def test_delete_update_merge_optimize_restore(spark, tmp_path, values, dv, checkpoint):
    path = str(tmp_path / "t")
    rows = _make(path, values, dv=dv, checkpoint=checkpoint)
    t = DeltaTable.forPath(spark, path)

    t.delete("id = 1")
    rows = [r for r in rows if r[0] != 1]
    assert _agree(path) == rows
    metrics = t.history(1).collect()[0].operationMetrics
    assert int(metrics["numDeletedRows"]) == 1
    assert dv or int(metrics["numRemovedFiles"]) == 1

    t.update("id = 2", {"v": "v + 100"})
    rows = sorted((i, k, v + 100 if i == 2 else v) for i, k, v in rows)
    assert _agree(path) == rows

    src = spark.createDataFrame([(3, -3.0), (1000, 1.0)], "id long, v double")
    (t.alias("t").merge(src.alias("s"), "t.id = s.id")
     .whenMatchedUpdate(set={"v": "s.v"}).execute())
    rows = sorted((i, k, -3.0 if i == 3 else v) for i, k, v in rows)
    assert _agree(path) == rows

    before = Snapshot.load(path).files.num_rows
    t.optimize().executeCompaction()
    snap = Snapshot.load(path)
    assert snap.files.num_rows < before
    assert _agree(path) == rows

    t.restoreToVersion(1)
    assert _agree(path) == sorted(_rows(read_rows(path, version=1)))
    assert len(_agree(path)) == 2 * len(values)
