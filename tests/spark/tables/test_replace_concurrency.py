"""REPLACE TABLE (SQL with and without AS SELECT, the DeltaTable builders) and an overwrite
that changes the schema, against a concurrent blind append injected between the
statement's read and its commit: as delta-spark under WriteSerializable (ConflictChecker:
a transaction that changes metadata counts blind appends against what it read), the
statement fails with ConcurrentAppendError (DELTA_CONCURRENT_APPEND) and the table keeps
the append, on both read paths and in deltalake. An overwrite that keeps the schema still
commits over a blind append; an append fails against a concurrent metadata change."""

from __future__ import annotations

import pyarrow as pa
import pytest
from helpers import arrow_rows, deltalake_table

import delta_pyds
from delta_pyds import DeltaTable
from delta_pyds.errors import ConcurrentAppendError, MetadataChangedError
from delta_pyds.table.snapshot import Snapshot
from delta_pyds.write.plan import commit_arrow


def _race(monkeypatch, winner):
    """The next commit in this process first lets ``winner()`` commit (same version)."""
    from delta_pyds.transaction import commit as transaction

    real = transaction.Transaction.commit
    fired = []

    def racing_commit(self, *args, **kwargs):
        if not fired:
            fired.append(1)
            winner()
        return real(self, *args, **kwargs)

    monkeypatch.setattr(transaction.Transaction, "commit", racing_commit)


def _ids(spark, path) -> dict[str, list]:
    native = sorted(r.id for r in delta_pyds.read_delta(spark, path).collect())
    source = sorted(r.id for r in spark.read.format("pydelta").load(path).collect())
    rs = sorted(r[0] for r in arrow_rows(deltalake_table(path), ["id"]))
    return {"read_delta": native, "pydelta": source, "deltalake": rs}


def _table(path):
    commit_arrow(path, pa.table({"id": pa.array([1, 2], pa.int64())}))
    return lambda: commit_arrow(path, pa.table({"id": pa.array([3], pa.int64())}))  # a blind append


def _replaces(spark, path):
    q = f"delta.`{path}`"
    return {
        "sql": lambda: delta_pyds.sql(spark, f"CREATE OR REPLACE TABLE {q} (id BIGINT, s STRING) USING delta"),
        "sql_replace_as_select": lambda: delta_pyds.sql(
            spark, f"REPLACE TABLE {q} USING delta AS SELECT CAST(10 AS BIGINT) AS id"
        ),
        "builder_replace": lambda: DeltaTable.replace(spark).location(path).addColumn("id", "BIGINT").execute(),
        "builder_create_or_replace": lambda: (
            DeltaTable.createOrReplace(spark)
            .location(path)
            .addColumn("id", "BIGINT")
            .addColumn("s", "STRING")
            .execute()
        ),
        "overwrite_schema": lambda: delta_pyds.write_delta(
            spark.range(10, 11).selectExpr("id", "'x' AS s"), path, mode="overwrite", overwriteSchema="true"
        ),
    }


@pytest.mark.parametrize(
    "how", ["sql", "sql_replace_as_select", "builder_replace", "builder_create_or_replace", "overwrite_schema"]
)
def test_replace_fails_over_a_concurrent_blind_append(spark, tmp_path, monkeypatch, how):
    path = str(tmp_path / "t")
    append = _table(path)
    _race(monkeypatch, append)
    with pytest.raises(ConcurrentAppendError, match="DELTA_CONCURRENT_APPEND") as err:
        _replaces(spark, path)[how]()
    assert err.value.error_class == "DELTA_CONCURRENT_APPEND"
    assert Snapshot.load(path).version == 1  # the append, nothing after it
    assert _ids(spark, path) == {k: [1, 2, 3] for k in ("read_delta", "pydelta", "deltalake")}


def test_replace_without_a_race_commits(spark, tmp_path):
    path = str(tmp_path / "t")
    _table(path)
    _replaces(spark, path)["sql_replace_as_select"]()
    assert _ids(spark, path) == {k: [10] for k in ("read_delta", "pydelta", "deltalake")}


def test_overwrite_keeping_the_schema_commits_over_a_blind_append(spark, tmp_path, monkeypatch):
    # delta-spark: no metadata change, so WriteSerializable lets the overwrite commit after it
    path = str(tmp_path / "t")
    append = _table(path)
    _race(monkeypatch, append)
    delta_pyds.write_delta(spark.range(10, 11), path, mode="overwrite", overwriteSchema="true")
    assert Snapshot.load(path).version == 2
    assert _ids(spark, path) == {k: [3, 10] for k in ("read_delta", "pydelta", "deltalake")}


def test_append_fails_over_a_concurrent_metadata_change(spark, tmp_path, monkeypatch):
    path = str(tmp_path / "t")
    _table(path)
    _race(monkeypatch, lambda: delta_pyds.sql(spark, f"ALTER TABLE delta.`{path}` ADD COLUMNS (s STRING)"))
    with pytest.raises(MetadataChangedError, match="DELTA_METADATA_CHANGED"):
        delta_pyds.write_delta(spark.range(20, 21), path, mode="append")
    assert _ids(spark, path) == {k: [1, 2] for k in ("read_delta", "pydelta", "deltalake")}
