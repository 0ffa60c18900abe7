"""MERGE's errors are named classes users can catch (issue #39 item 7), and keep the built-in
bases old code catches: several source rows matching one target row
(:class:`MergeMultipleMatchesError`, delta-spark's
DELTA_MULTIPLE_SOURCE_ROW_MATCHING_TARGET_ROW_IN_MERGE), an unknown ``set`` / ``values`` key or
source column (:class:`ColumnNotFoundError`, a ``ValueError``), identity columns set where the
table generates them (:class:`IdentityColumnError`, a ``ValueError``). The table is unchanged."""

from __future__ import annotations

import json
import os

import pytest

from delta_pyds import (
    ColumnNotFoundError,
    DeltaError,
    DeltaTable,
    IdentityColumnError,
    MergeMultipleMatchesError,
    write_delta,
)
from delta_pyds.table.snapshot import Snapshot


def _table(spark, path):
    write_delta(spark.createDataFrame([(i, f"n{i}") for i in range(5)], "id long, name string"), path)
    return DeltaTable.forPath(spark, path)


def test_several_matches_raise_the_named_error(spark, tmp_path):
    path = str(tmp_path / "t")
    t = _table(spark, path)
    dup = spark.createDataFrame([(1, "a"), (1, "b")], "id long, name string")
    with pytest.raises(MergeMultipleMatchesError, match="DELTA_MULTIPLE_SOURCE_ROW_MATCHING_TARGET_ROW_IN_MERGE") as e:
        t.alias("t").merge(dup.alias("s"), "t.id = s.id").whenMatchedUpdateAll().execute()
    assert isinstance(e.value, DeltaError)
    assert e.value.error_class == "DELTA_MULTIPLE_SOURCE_ROW_MATCHING_TARGET_ROW_IN_MERGE"
    assert Snapshot.load(path).version == 0


@pytest.mark.parametrize(
    "build",
    [
        lambda b: b.whenNotMatchedInsert(values={"id": "s.id", "nope": "s.name"}),
        lambda b: b.whenMatchedUpdate(set={"nope": "s.name"}),
        lambda b: b.whenNotMatchedBySourceUpdate(set={"nope": "'x'"}),
    ],
    ids=["insert values", "update set", "by-source set"],
)
def test_an_unknown_column_key_raises_column_not_found(spark, tmp_path, build):
    path = str(tmp_path / "t")
    t = _table(spark, path)
    src = spark.createDataFrame([(1, "a"), (9, "b")], "id long, name string")
    with pytest.raises(ColumnNotFoundError, match="nope") as e:
        build(t.alias("t").merge(src.alias("s"), "t.id = s.id")).execute()
    assert isinstance(e.value, ValueError) and isinstance(e.value, DeltaError)
    assert Snapshot.load(path).version == 0


def test_insert_all_without_a_source_column_raises_column_not_found(spark, tmp_path):
    path = str(tmp_path / "t")
    t = _table(spark, path)
    src = spark.createDataFrame([(9,)], "id long")
    with pytest.raises(ColumnNotFoundError, match="name"):
        t.alias("t").merge(src.alias("s"), "t.id = s.id").whenNotMatchedInsertAll().execute()


def _identity_table(path):
    meta = {"delta.identity.start": 1, "delta.identity.step": 1, "delta.identity.allowExplicitInsert": False}
    schema = {
        "type": "struct",
        "fields": [
            {"name": "id", "type": "long", "nullable": False, "metadata": meta},
            {"name": "v", "type": "string", "nullable": True, "metadata": {}},
        ],
    }
    os.makedirs(os.path.join(path, "_delta_log"))
    protocol = {"minReaderVersion": 1, "minWriterVersion": 7, "writerFeatures": ["identityColumns", "invariants"]}
    metadata = {
        "id": "t",
        "format": {"provider": "parquet", "options": {}},
        "schemaString": json.dumps(schema),
        "partitionColumns": [],
        "configuration": {},
        "createdTime": 1,
    }
    with open(os.path.join(path, "_delta_log", f"{0:020d}.json"), "w") as out:
        out.write(json.dumps({"protocol": protocol}) + "\n" + json.dumps({"metaData": metadata}) + "\n")


@pytest.mark.parametrize(
    "build",
    [
        lambda b: b.whenNotMatchedInsert(values={"id": "s.k", "v": "s.v"}),  # the table generates id
        lambda b: b.whenNotMatchedInsert("s.k > 5", values={"id": "s.k", "v": "s.v"}).whenNotMatchedInsert(
            values={"v": "s.v"}
        ),  # id set in some insert clauses only
        lambda b: b.whenMatchedUpdate(set={"id": "s.k"}),
    ],
    ids=["explicit insert", "some clauses", "update"],
)
def test_identity_values_the_table_generates_raise_identity_column_error(spark, tmp_path, build):
    path = str(tmp_path / "t")
    _identity_table(path)
    t = DeltaTable.forPath(spark, path)
    src = spark.createDataFrame([(7, "x")], "k long, v string")
    with pytest.raises(IdentityColumnError, match="identity column id") as e:
        build(t.alias("t").merge(src.alias("s"), "t.v = s.v")).execute()
    assert isinstance(e.value, ValueError)
    assert Snapshot.load(path).version == 0
