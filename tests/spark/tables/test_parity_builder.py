"""delta-spark parity: ``DeltaTable.create / createIfNotExists / replace / createOrReplace``
and ``DeltaTableBuilder``, exercised as a delta-spark user would (same calls, same
results and error meanings), checked on the log and with deltalake (delta-rs)."""

from __future__ import annotations

import json
import os

import pytest
from helpers import deltalake_table, pydelta_read
from pyspark.errors import AnalysisException
from pyspark.sql.types import IntegerType, LongType, StringType, StructField, StructType

from delta_pyds import DeltaTable, IdentityGenerator
from delta_pyds.errors import TableExistsError, TableNotFoundError
from delta_pyds.table.snapshot import Snapshot


def _schema_fields(path):
    return {f.name: f for f in Snapshot.load(path).schema.fields}


def test_create_with_generated_and_identity_columns(spark, tmp_path):
    path = str(tmp_path / "t")
    dt = (
        DeltaTable.create(spark)
        .location(path)
        .addColumn("id", "BIGINT", nullable=False, generatedAlwaysAs=IdentityGenerator(start=10, step=5))
        .addColumn("c1", dataType="INT", comment="first")
        .addColumn("c2", dataType=IntegerType(), generatedAlwaysAs="c1 + 1")
        .addColumn("ext", LongType(), generatedByDefaultAs=IdentityGenerator())
        .addColumn("p", "STRING")
        .partitionedBy("p")
        .property("delta.appendOnly", "false")
        .property("owner", "me")
        .comment("a table")
        .execute()
    )
    assert isinstance(dt, DeltaTable)
    fields = _schema_fields(path)
    assert dict(fields["id"].metadata) == {
        "delta.identity.start": 10,
        "delta.identity.step": 5,
        "delta.identity.allowExplicitInsert": False,
    }
    assert fields["ext"].metadata["delta.identity.allowExplicitInsert"] is True
    assert fields["c2"].metadata["delta.generationExpression"] == "c1 + 1"
    assert fields["c1"].metadata["comment"] == "first" and fields["id"].nullable is False
    detail = dt.detail().collect()[0]
    assert detail.description == "a table" and detail.partitionColumns == ["p"]
    assert detail.properties == {"delta.appendOnly": "false", "owner": "me"}
    assert (detail.minReaderVersion, detail.minWriterVersion) == (1, 6)
    assert dt.history().collect()[0].operation == "CREATE TABLE"
    assert pydelta_read(spark, path).count() == 0
    # writes fill the generated and identity columns
    spark.createDataFrame([(1, "a"), (2, "b")], "c1 int, p string").write.format("pydelta").mode("append").save(path)
    rows = sorted((r.id, r.c1, r.c2, r.ext) for r in pydelta_read(spark, path).collect())
    # identity values: unique, from start by step (not consecutive across tasks, as in delta-spark)
    ids = [r[0] for r in rows]
    assert len(set(ids)) == 2 and all(i >= 10 and (i - 10) % 5 == 0 for i in ids)
    assert sorted((r[1], r[2]) for r in rows) == [(1, 2), (2, 3)] and all(r[3] is not None for r in rows)
    dl = deltalake_table(path)
    assert sorted(dl.column("c2").to_pylist()) == [2, 3]


def test_create_modes_like_delta_spark(spark, tmp_path):
    path = str(tmp_path / "t")
    schema = StructType([StructField("key", StringType()), StructField("value", LongType())])
    with pytest.raises(TableNotFoundError):  # replace needs a table
        DeltaTable.replace(spark).location(path).addColumns(schema).execute()
    DeltaTable.createIfNotExists(spark).location(path).addColumns(schema).execute()
    spark.createDataFrame([("a", 1)], schema).write.format("pydelta").mode("append").save(path)
    v = Snapshot.load(path).version
    DeltaTable.createIfNotExists(spark).location(path).addColumns(schema).execute()  # exists: a no-op
    assert Snapshot.load(path).version == v
    with pytest.raises(TableExistsError):
        DeltaTable.create(spark).location(path).addColumns(schema).execute()
    # replace: new schema, no rows, same table (history kept)
    dt = DeltaTable.replace(spark).location(path).addColumns(schema.fields[:1]).execute()
    assert pydelta_read(spark, path).columns == ["key"] and pydelta_read(spark, path).count() == 0
    assert dt.history(1).collect()[0].operation == "REPLACE TABLE"
    dt = DeltaTable.createOrReplace(spark).location(path).addColumn("k", "int").execute()
    assert pydelta_read(spark, path).columns == ["k"]
    assert dt.history(1).collect()[0].operation == "CREATE OR REPLACE TABLE"
    fresh = str(tmp_path / "fresh")
    DeltaTable.createOrReplace(spark).location(fresh).addColumn("k", "int").clusterBy("k").execute()
    assert DeltaTable.forPath(spark, fresh).detail().collect()[0].clusteringColumns == ["k"]
    assert deltalake_table(fresh).num_rows == 0


def _found(*objs):
    return "".join(f" Found {o!s} with type {type(o)!s}" for o in objs)


# each call's error as delta-spark's python/delta/tables.py raises it: (call, class, exact message)
ARGUMENT_ERRORS = [
    (lambda b: b.tableName(1), TypeError, "Identifier must be str." + _found(1)),
    (lambda b: b.location(1), TypeError, "Location must be str." + _found(1)),
    (lambda b: b.comment(1), TypeError, "Table comment must be str." + _found(1)),
    (lambda b: b.addColumn(1, "int"), TypeError, "Column name must be str." + _found(1)),
    (lambda b: b.addColumn("a", 1), TypeError, "Column data type must be str or DataType." + _found(1)),
    (lambda b: b.addColumn("a", "int", nullable="yes"), TypeError, "Column nullable must be bool." + _found("yes")),
    (
        lambda b: b.addColumn("a", "int", generatedAlwaysAs=1),
        TypeError,
        "Generated always as expression must be str or IdentityGenerator." + _found(1),
    ),
    (
        lambda b: b.addColumn("a", "bigint", generatedByDefaultAs="a + 1"),
        TypeError,
        "Generated by default expression must be IdentityGenerator." + _found("a + 1"),
    ),
    (
        lambda b: b.addColumn(
            "a", "bigint", generatedAlwaysAs=IdentityGenerator(), generatedByDefaultAs=IdentityGenerator()
        ),
        ValueError,
        "generatedByDefaultAs and generatedAlwaysAs cannot both be set.",
    ),
    (
        lambda b: b.addColumn("a", "bigint", generatedAlwaysAs=IdentityGenerator(start=1, step=0)),
        ValueError,
        "Column identity generation requires step to be non-zero.",
    ),
    (lambda b: b.addColumn("a", "int", comment=1), TypeError, "Column comment must be str." + _found(1)),
    (lambda b: b.addColumns([1]), TypeError, "Column in existing schema must be StructField." + _found(1)),
    (
        lambda b: b.addColumns("a int"),
        TypeError,
        "Schema must be StructType or a list of StructField." + _found("a int"),
    ),
    (lambda b: b.partitionedBy(1), TypeError, "Partitioning column must be str." + _found(1)),
    (lambda b: b.partitionedBy(["a", 2]), TypeError, "Partitioning column must be str." + _found(2)),
    (lambda b: b.clusterBy(1), TypeError, "Clustering column must be str." + _found(1)),
    (lambda b: b.property("k", 1), TypeError, "Key and value of property must be string." + _found("k", 1)),
]


@pytest.mark.parametrize("index", range(len(ARGUMENT_ERRORS)))
def test_builder_argument_errors_are_delta_sparks(spark, index):
    call, cls, message = ARGUMENT_ERRORS[index]
    with pytest.raises(cls) as e:
        call(DeltaTable.create(spark))
    assert str(e.value) == message


def test_builder_without_name_or_location_and_argument_checks(spark, tmp_path):
    with pytest.raises(AnalysisException) as e:
        DeltaTable.create(spark).addColumn("a", "int").execute()
    assert (
        str(e.value)
        == "[DELTA_CREATE_TABLE_MISSING_TABLE_NAME_OR_LOCATION] Table name or location has to be specified."
    )
    assert e.value.getCondition() == "DELTA_CREATE_TABLE_MISSING_TABLE_NAME_OR_LOCATION"
    assert e.value.getSqlState() == "42601"
    for first, second in (("partitionedBy", "clusterBy"), ("clusterBy", "partitionedBy")):
        b = getattr(DeltaTable.create(spark).addColumn("a", "int"), first)("a")
        with pytest.raises(AnalysisException, match=r"^\[DELTA_CLUSTER_BY_WITH_PARTITIONED_BY\] Clustering and"):
            getattr(b, second)("a")
    with pytest.raises(TableNotFoundError, match=r"\[DELTA_MISSING_DELTA_TABLE\] `testTableNeverCreated` is not") as e:
        DeltaTable.forName(spark, "testTableNeverCreated")  # delta-spark's error; the cause says why
    assert "TABLE_OR_VIEW_NOT_FOUND" in str(e.value.__cause__)
    path = str(tmp_path / "bad")
    with pytest.raises(Exception, match="bigint"):  # identity columns must be long
        DeltaTable.create(spark).location(path).addColumn("id", "int", generatedAlwaysAs=IdentityGenerator()).execute()
    with pytest.raises(Exception, match="partition"):
        DeltaTable.create(spark).location(path).addColumn("a", "int").addColumn("b", "int").partitionedBy(
            "nope"
        ).execute()
    assert not os.path.exists(os.path.join(path, "_delta_log"))


def test_active_session_defaults(spark, tmp_path):
    path = str(tmp_path / "t")
    DeltaTable.create().location(path).addColumn("a", "int").execute()  # the active session
    with open(os.path.join(path, "_delta_log", "00000000000000000000.json")) as f:
        ops = [json.loads(line) for line in f]
    assert ops[0]["commitInfo"]["operation"] == "CREATE TABLE"
