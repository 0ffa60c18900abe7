"""Conflicts between concurrent transactions in one process (delta_pyds.transaction.commit
and .conflicts): blind appends rebase, overwrites and replaceWhere conflict on what they
read (WriteSerializable), metadata changes by a winner, idempotent writes (txn), row ids
across a race."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest
from helpers import adds_of, arrow_rows, delta_schema, deltalake_table

from delta_pyds.errors import ConcurrentModificationError
from delta_pyds.table.snapshot import Snapshot
from delta_pyds.transaction.commit import Transaction
from delta_pyds.write.options import WriteOptions
from delta_pyds.write.plan import commit_arrow


def test_concurrent_blind_appends_rebase(tmp_path):
    path = str(tmp_path / "t")
    commit_arrow(path, pa.table({"a": [0]}))
    t1, t2 = Transaction.start(path), Transaction.start(path)
    for t, v in ((t1, 1), (t2, 2)):
        from delta_pyds.write.parquet_writer import write_task
        from delta_pyds.write.plan import plan_write

        plan = plan_write(WriteOptions.parse({"path": path}, overwrite=False), delta_schema(a=pa.int64()))
        t.add_files(write_task(plan.spec, [pa.record_batch({"a": [v]})]).adds)
    assert t1.commit().version == 1
    result = t2.commit()
    assert (result.version, result.attempts) == (2, 2)
    assert sorted(r[0] for r in arrow_rows(deltalake_table(path), ["a"])) == [0, 1, 2]


def test_overwrite_conflicts_with_a_concurrent_overwrite(tmp_path):
    from delta_pyds.table.state import file_actions
    from delta_pyds.transaction.file_actions import remove_actions

    path = str(tmp_path / "t")
    commit_arrow(path, pa.table({"a": [0]}))
    t = Transaction.start(path)
    t.remove_files(remove_actions(file_actions(t.snapshot).active))
    t.read_whole_table()
    commit_arrow(path, pa.table({"a": [5]}), mode="overwrite")  # the winner
    with pytest.raises(ConcurrentModificationError, match="version 1"):
        t.commit()
    assert Snapshot.load(path).version == 1


def test_overwrite_keeps_a_concurrent_blind_append(tmp_path):
    from delta_pyds.table.state import file_actions
    from delta_pyds.transaction.file_actions import remove_actions

    path = str(tmp_path / "t")
    commit_arrow(path, pa.table({"a": [0]}))
    t = Transaction.start(path)
    t.remove_files(remove_actions(file_actions(t.snapshot).active))
    t.read_whole_table()
    commit_arrow(path, pa.table({"a": [7]}))  # blind append wins the race: WriteSerializable allows it
    assert t.commit().version == 2
    assert arrow_rows(deltalake_table(path), ["a"]) == [(7,)]


def test_replace_where_conflicts_only_on_its_partitions(tmp_path):
    from delta_pyds.expressions.parser import parse_expression
    from delta_pyds.write.partition_match import partition_predicate

    path = str(tmp_path / "t")
    commit_arrow(path, pa.table({"a": [1, 2], "p": [1, 2]}), options={"partitionBy": "p"})

    def start():
        t = Transaction.start(path)
        pred = partition_predicate(parse_expression("p = 1"), t.snapshot.schema, ["p"], "none")
        t.read_partitions(pred, "p = 1")
        return t

    t = start()
    # a non-blind write into partition 2 does not conflict
    commit_arrow(path, pa.table({"a": [3], "p": [2]}), mode="overwrite", options={"replaceWhere": "p = 2"})
    assert t.commit().version == 2
    t = start()
    commit_arrow(path, pa.table({"a": [4], "p": [1]}), mode="overwrite", options={"replaceWhere": "p = 1"})
    with pytest.raises(ConcurrentModificationError, match="partitions this write read"):
        t.commit()


def test_metadata_change_by_a_winner_conflicts(tmp_path):
    path = str(tmp_path / "t")
    commit_arrow(path, pa.table({"a": [1]}))
    t = Transaction.start(path)
    t.add_files([])
    commit_arrow(path, pa.table({"a": [1], "b": ["x"]}), options={"mergeSchema": "true"})
    with pytest.raises(ConcurrentModificationError, match="metadata"):
        t.commit()


def test_idempotent_writes(tmp_path):
    path = str(tmp_path / "t")
    opts = {"txnAppId": "job", "txnVersion": "3"}
    assert commit_arrow(path, pa.table({"a": [1]}), options=opts).version == 0
    assert commit_arrow(path, pa.table({"a": [1]}), options=opts) is None  # already committed
    assert commit_arrow(path, pa.table({"a": [2]}), options={**opts, "txnVersion": "4"}).version == 1
    assert Snapshot.load(path).app_transactions == {"job": 4}
    # a racing duplicate is reported as already committed
    t = Transaction.start(path)
    t.set_app_transaction("job", 5)
    commit_arrow(path, pa.table({"a": [3]}), options={**opts, "txnVersion": "5"})
    assert t.commit().skipped


def test_row_tracking_assigns_disjoint_ids_across_races(tmp_path):
    path = str(tmp_path / "t")
    commit_arrow(path, pa.table({"a": [1, 2, 3]}), options={"delta.enableRowTracking": "true"})
    from delta_pyds.write.parquet_writer import write_task
    from delta_pyds.write.plan import plan_write

    plan = plan_write(WriteOptions.parse({"path": path}, overwrite=False), delta_schema(a=pa.int64()))
    t = Transaction.start(path)
    t.add_files(write_task(plan.spec, [pa.record_batch({"a": [7, 8]})]).adds)
    commit_arrow(path, pa.table({"a": [4, 5, 6, 7]}))
    assert t.commit().version == 2
    ids = []
    for v in range(3):
        for a in adds_of(path, v):
            n = json.loads(a["stats"])["numRecords"]
            assert a["defaultRowCommitVersion"] == v
            ids.extend(range(a["baseRowId"], a["baseRowId"] + n))
    assert sorted(ids) == list(range(9))
    assert json.loads(Snapshot.load(path).domain_metadata["delta.rowTracking"]) == {"rowIdHighWaterMark": 8}
