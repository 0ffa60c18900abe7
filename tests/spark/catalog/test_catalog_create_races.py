"""A new managed table by name against a concurrent DROP / RENAME / CREATE of its name, injected
before and after the commit (the ``make`` callback of ``create_named`` commits): on a classic
session the table is committed first and registered after (as delta-spark does); the SQL-only
order a Spark Connect client must use (``register_then_commit``, the same SQL run here) checks
the entry after the commit. Every final state: the entry and the Delta table agree, no orphan
directory under the warehouse, the name reusable. Each test works in its own database located
in tmp_path (the shared session's in-memory catalog)."""

from __future__ import annotations

import os
import uuid

import deltalake
import pytest
from helpers import deltalake_table

import delta_pyds
from delta_pyds.errors import ConcurrentModificationError, TableExistsError
from delta_pyds.spark.catalog.entries import create_named, register_then_commit
from delta_pyds.spark.catalog.lookup import lookup
from delta_pyds.spark.front_doors.sql_door import original_sql as spark_sql  # another session's plain Spark statement


@pytest.fixture
def db(spark, tmp_path):
    name = f"races_{uuid.uuid4().hex[:8]}"
    spark.sql(f"CREATE DATABASE {name} LOCATION '{tmp_path}/{name}.db'")
    yield name
    spark.sql(f"DROP DATABASE {name} CASCADE")


def maker(spark, before=None, after=None):
    """``make``: ``before()``, the commit of a 3-row table at the location, ``after()``."""

    def make(location):
        if before:
            before()
        delta_pyds.write_delta(spark.range(3), location)
        if after:
            after()
        return location

    return make


def error_of(f):
    try:
        f()
    except Exception as exc:
        return str(exc)
    return None


def consistent(spark, db, tmp_path, table):
    """The entry ``db.table`` (if any) names a Delta table, and the database's directory holds
    no directory that no entry names (an orphan)."""
    names = {r.tableName for r in spark.sql(f"SHOW TABLES IN {db}").collect() if not r.isTemporary}
    for name in names:
        entry = lookup(spark, (db, name))
        assert entry is not None and entry.is_delta and deltalake.DeltaTable(entry.location).version() >= 0, name
    root = tmp_path / f"{db}.db"
    dirs = set(os.listdir(root)) if root.exists() else set()
    assert dirs <= names, f"orphan directories {dirs - names}"
    return lookup(spark, (db, table))


def test_commit_first_against_concurrent_statements(spark, db, tmp_path):
    other = str(tmp_path / "other")
    delta_pyds.write_delta(spark.range(7), other)
    delta_pyds.write_delta(spark.range(1), name=f"{db}.x")  # a managed table to rename onto the name
    t = (db, "t")
    seen: dict[str, str | None] = {}

    # a RENAME / managed CREATE onto the name before and after the commit: Spark refuses (its location exists)
    def rename():
        seen["rename"] = error_of(lambda: spark.sql(f"ALTER TABLE {db}.x RENAME TO {db}.t"))

    def create_managed():
        seen["create"] = error_of(lambda: spark_sql(spark)(f"CREATE TABLE {db}.t USING delta"))

    def drop():
        seen["drop"] = error_of(lambda: spark.sql(f"DROP TABLE {db}.t"))

    create_named(spark, t, "create", None, maker(spark, before=rename, after=create_managed))
    assert "LOCATION_ALREADY_EXISTS" in (seen["rename"] or "") and "LOCATION_ALREADY_EXISTS" in seen["create"]
    entry = consistent(spark, db, tmp_path, "t")
    assert entry.location == f"{tmp_path}/{db}.db/t" and deltalake_table(entry.location).num_rows == 3
    spark.sql(f"DROP TABLE {db}.t")
    create_named(spark, t, "create", None, maker(spark, before=drop, after=drop))  # nothing to drop yet
    assert "TABLE_OR_VIEW_NOT_FOUND" in seen["drop"]
    assert consistent(spark, db, tmp_path, "t").kind == "MANAGED"
    spark.sql(f"DROP TABLE {db}.t")

    # the name taken meanwhile (an EXTERNAL entry elsewhere): refused by name, the new directory removed
    def take():
        spark.sql(f"CREATE TABLE {db}.t USING delta LOCATION '{other}'")

    with pytest.raises(TableExistsError, match="created concurrently"):
        create_named(spark, t, "create", None, maker(spark, after=take))
    assert consistent(spark, db, tmp_path, "t").location == other
    assert not os.path.exists(f"{tmp_path}/{db}.db/t")
    spark.sql(f"DROP TABLE {db}.t")

    # a failed commit: nothing left, the name reusable
    def fail():
        raise RuntimeError("injected")

    with pytest.raises(RuntimeError, match="injected"):
        create_named(spark, t, "create", None, maker(spark, after=fail))
    assert consistent(spark, db, tmp_path, "t") is None and not os.path.exists(f"{tmp_path}/{db}.db/t")
    delta_pyds.sql(spark, f"CREATE TABLE {db}.t USING delta AS SELECT 1 AS id")  # reusable
    assert consistent(spark, db, tmp_path, "t").is_delta


def test_register_first_order_of_connect_checks_after_the_commit(spark, db, tmp_path):
    t = (db, "t")

    def drop():
        spark.sql(f"DROP TABLE {db}.t")

    with pytest.raises(ConcurrentModificationError, match="DELTA_CONCURRENT_TABLE_CREATION"):
        register_then_commit(spark, t, maker(spark, before=drop))
    assert consistent(spark, db, tmp_path, "t") is None  # no entry, no orphan directory
    assert register_then_commit(spark, t, maker(spark)) == f"{tmp_path}/{db}.db/t"  # the name is reusable
    assert consistent(spark, db, tmp_path, "t").is_delta
    spark.sql(f"DROP TABLE {db}.t")

    def rename():
        spark.sql(f"ALTER TABLE {db}.t RENAME TO {db}.u")

    with pytest.raises(ConcurrentModificationError, match="dropped or renamed"):
        register_then_commit(spark, t, maker(spark, before=rename))
    assert lookup(spark, t) is None and not os.path.exists(f"{tmp_path}/{db}.db/t")
    renamed = lookup(spark, (db, "u"))  # the renamer's entry: on the (empty) directory Spark moved
    assert renamed is not None and os.listdir(renamed.location) == []
    spark.sql(f"DROP TABLE {db}.u")

    def fail():
        raise RuntimeError("injected")

    with pytest.raises(RuntimeError, match="injected"):
        register_then_commit(spark, t, maker(spark, after=fail))
    assert consistent(spark, db, tmp_path, "t") is None
    # Spark's own check that makes the SQL order necessary: a MANAGED entry on a non-empty directory
    delta_pyds.write_delta(spark.range(1), f"{tmp_path}/{db}.db/m")
    with pytest.raises(Exception, match="LOCATION_ALREADY_EXISTS"):
        spark_sql(spark)(f"CREATE TABLE {db}.m USING delta")
