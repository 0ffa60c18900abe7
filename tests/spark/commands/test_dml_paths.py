"""DeltaTable DML, OPTIMIZE and RESTORE on partitions whose values need escaping in
paths (``:`` and therefore every timestamp partition, ``/``, ``%``, ``#``, quotes, tabs,
Unicode): each operation must remove exactly the files it replaces, for pydelta and for
deltalake, before and after a checkpoint (issue 15)."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest
from dml_engines import dml_engine  # noqa: F401  (autouse: native and python engines)
from helpers import deltalake_table
from table_files import read_rows

from delta_pyds import DeltaTable
from delta_pyds.spark.session.conf import PIN_TARGET_CONF
from delta_pyds.table.snapshot import Snapshot
from delta_pyds.transaction.checkpoint_writer import write_checkpoint
from delta_pyds.write.plan import commit_arrow

VALUES = ["10:00", "x/y", "50%", "#1", "it's", "tab\there", "ü€", "a=b"]
TS = [
    dt.datetime(2024, 5, 1, 10, 0, tzinfo=dt.timezone.utc),
    dt.datetime(2024, 5, 2, 23, 59, 59, tzinfo=dt.timezone.utc),
]


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
        commit_arrow(
            path,
            pa.table(
                {
                    "id": pa.array(list(idx), pa.int64()),
                    "k": pa.array([ks[i] for i in idx], dtype),
                    "v": pa.array([float(i) for i in idx]),
                }
            ),
            options=opts,
        )
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
    (t.alias("t").merge(src.alias("s"), "t.id = s.id").whenMatchedUpdate(set={"v": "s.v"}).execute())
    rows = sorted((i, k, -3.0 if i == 3 else v) for i, k, v in rows)
    assert _agree(path) == rows
    # copy-on-write phase 2 as for larger targets: the touched files scanned again (the merge
    # above took them from phase 1's pinned rows)
    spark.conf.set(PIN_TARGET_CONF, "0")
    try:
        src = spark.createDataFrame([(4, -4.0)], "id long, v double")
        (t.alias("t").merge(src.alias("s"), "t.id = s.id").whenMatchedUpdate(set={"v": "s.v"}).execute())
    finally:
        spark.conf.unset(PIN_TARGET_CONF)
    rows = sorted((i, k, -4.0 if i == 4 else v) for i, k, v in rows)
    assert _agree(path) == rows

    before = Snapshot.load(path).files.num_rows
    t.optimize().executeCompaction()
    snap = Snapshot.load(path)
    assert snap.files.num_rows < before
    assert _agree(path) == rows

    t.restoreToVersion(1)
    assert _agree(path) == sorted(_rows(read_rows(path, version=1)))
    assert len(_agree(path)) == 2 * len(values)


# ------------------------------------------------------------------ conflicts (issue 15, item 6)
def _racing(monkeypatch, action):
    """Runs ``action`` once, just before the operation's commit: a winner at the same version."""
    from delta_pyds.transaction import commit as transaction

    real = transaction.Transaction.commit
    fired = []

    def racing_commit(self, *args, **kwargs):
        if not fired:
            fired.append(1)
            action()
        return real(self, *args, **kwargs)

    monkeypatch.setattr(transaction.Transaction, "commit", racing_commit)


def _parts(path: str) -> None:
    commit_arrow(
        path,
        pa.table(
            {
                "id": pa.array(range(6), pa.int64()),
                "k": ["a:1", "a:1", "b/2", "b/2", "c", "c"],
                "v": pa.array([float(i) for i in range(6)]),
            }
        ),
        options={"partitionBy": "k"},
    )


def _overwrite_partition(path: str, k: str, ids) -> None:
    # a non-blind write: replaceWhere removes the partition's files and adds new ones
    commit_arrow(
        path,
        pa.table({"id": pa.array(ids, pa.int64()), "k": [k] * len(ids), "v": [0.0] * len(ids)}),
        mode="overwrite",
        options={"replaceWhere": f"k = '{k}'"},
    )


def _dml_on_partition_a1(spark, t, op: str) -> None:
    """Deletes row 0, or sets its v to 100.0, with a condition on partition k = 'a:1'."""
    if op == "delete":
        t.delete("k = 'a:1' AND id = 0")
    elif op == "update":
        t.update("k = 'a:1' AND id = 0", {"v": "100.0"})
    else:
        src = spark.createDataFrame([(0, 100.0)], "id long, v double")
        (
            t.alias("t")
            .merge(src.alias("s"), "t.k = 'a:1' AND t.id = s.id")
            .whenMatchedUpdate(set={"v": "s.v"})
            .execute()
        )


@pytest.mark.parametrize("op", ["delete", "update", "merge"])
def test_dml_does_not_conflict_with_a_rewrite_of_another_partition(spark, tmp_path, monkeypatch, op):
    path = str(tmp_path / "t")
    _parts(path)
    t = DeltaTable.forPath(spark, path)
    _racing(monkeypatch, lambda: _overwrite_partition(path, "c", [50]))
    _dml_on_partition_a1(spark, t, op)
    rows = _agree(path)
    assert (50, "c", 0.0) in rows and not any(k == "c" and i != 50 for i, k, _ in rows)
    if op == "delete":
        assert not any(i == 0 for i, _, _ in rows)
    else:
        assert (0, "a:1", 100.0) in rows


@pytest.mark.parametrize("op", ["delete", "update", "merge"])
def test_dml_conflicts_with_a_rewrite_of_a_partition_it_read(spark, tmp_path, monkeypatch, op):
    from delta_pyds.errors import ConcurrentModificationError

    path = str(tmp_path / "t")
    _parts(path)
    t = DeltaTable.forPath(spark, path)
    _racing(monkeypatch, lambda: _overwrite_partition(path, "a:1", [60]))
    with pytest.raises(ConcurrentModificationError):
        _dml_on_partition_a1(spark, t, op)
    assert (60, "a:1", 0.0) in _agree(path)


def test_dml_without_a_partition_conjunct_conflicts_with_any_rewrite(spark, tmp_path, monkeypatch):
    from delta_pyds.errors import ConcurrentModificationError

    path = str(tmp_path / "t")
    _parts(path)
    t = DeltaTable.forPath(spark, path)
    _racing(monkeypatch, lambda: _overwrite_partition(path, "c", [50]))
    with pytest.raises(ConcurrentModificationError):
        t.delete("id = 0")


# ------------------------------------------------------------------ property test
def test_dml_with_partition_values_from_all_of_unicode(spark, tmp_path_factory):
    """DELETE and UPDATE on tables partitioned by values drawn from all of Unicode (and
    every character Spark escapes): pydelta and deltalake read the expected rows."""
    from helpers import SPARK_ESCAPED
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    values = st.text(
        alphabet=st.one_of(
            st.sampled_from(SPARK_ESCAPED),
            st.characters(codec="utf-8", exclude_categories=("Cs",), exclude_characters="\x00"),
        ),
        min_size=1,
        max_size=5,
    )

    @settings(max_examples=6, deadline=None, suppress_health_check=list(HealthCheck))
    @given(ks=st.lists(values, min_size=2, max_size=3, unique=True))
    def run(ks):
        path = str(tmp_path_factory.mktemp("dmlprop") / "t")
        ids = list(range(2 * len(ks)))
        commit_arrow(
            path,
            pa.table(
                {
                    "id": pa.array(ids, pa.int64()),
                    "k": [ks[i % len(ks)] for i in ids],
                    "v": pa.array([float(i) for i in ids]),
                }
            ),
            options={"partitionBy": "k"},
        )
        t = DeltaTable.forPath(spark, path)
        t.delete("id = 0")
        t.update("id = 1", {"v": "-1.0"})
        expected = sorted((i, ks[i % len(ks)], -1.0 if i == 1 else float(i)) for i in ids if i != 0)
        assert _agree(path) == expected

    run()
