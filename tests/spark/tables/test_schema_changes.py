"""DeltaTable schema changes (delta_pyds extensions: addColumns, renameColumn, dropColumns,
alterColumn, addConstraint/dropConstraint): each read back through both read paths and
delta-rs, with the data written before the change."""

from __future__ import annotations

import pytest

import delta_pyds
from delta_pyds import DeltaTable
from delta_pyds.errors import ColumnNotFoundError, ConstraintViolationError, MissingPropertyError, SchemaChangeError
from delta_pyds.table.snapshot import Snapshot
from tests.helpers import arrow_rows, deltalake_table, pydelta_read, spark_rows

CM = {"delta.columnMapping.mode": "name"}


def _table(spark, path, *, mapping=True, partition=False, extra=None):
    df = spark.createDataFrame(
        [(i, f"n{i}", (i, f"x{i}"), i % 2) for i in range(6)],
        "id int, name string, s struct<a:int,b:string>, part int",
    )
    opts = dict(CM if mapping else {})
    opts.update(extra or {})
    delta_pyds.write_delta(df, path, mode="overwrite", partitionBy="part" if partition else None, **opts)
    return DeltaTable.forPath(spark, path)


def _both(spark, path):
    """Rows through the native path and the pydelta data source; they must agree."""
    native = delta_pyds.read_delta(spark, path)
    source = pydelta_read(spark, path)
    assert native.schema.names == source.schema.names
    rows = spark_rows(native)
    assert rows == spark_rows(source)
    return native.schema, rows


def _delta_rs(path, columns):
    return arrow_rows(deltalake_table(path), columns)


def test_add_columns_top_level_and_nested(spark, tmp_path):
    path = str(tmp_path / "t")
    t = _table(spark, path)
    v = t.addColumns([("c", "string", "a new column"), ("s.z", "bigint")])
    snap = Snapshot.load(path)
    assert v == snap.version == 1
    assert snap.schema.names == ["id", "name", "s", "part", "c"]
    assert snap.schema.field("c").metadata["comment"] == "a new column"
    assert snap.schema.field("s").type.names == ["a", "b", "z"]  # type: ignore[union-attr]
    assert int(snap.configuration["delta.columnMapping.maxColumnId"]) >= 7  # fresh ids for c and s.z
    delta_pyds.write_delta(
        spark.createDataFrame(
            [(9, "n9", (9, "x9", 99), 1, "new")],
            "id int, name string, s struct<a:int,b:string,z:long>, part int, c string",
        ),
        path,
    )
    schema, rows = _both(spark, path)
    assert schema.names == ["id", "name", "s", "part", "c"]
    assert [r for r in rows if r[0] in (0, 9)] == [
        (0, "n0", (("a", 0), ("b", "x0"), ("z", None)), 0, None),
        (9, "n9", (("a", 9), ("b", "x9"), ("z", 99)), 1, "new"),
    ]
    rs = _delta_rs(path, ["id", "c"])
    assert sorted(rs, key=lambda r: r[0])[-1] == (9, "new") and len(rs) == 7
    with pytest.raises(SchemaChangeError, match="already exists"):
        t.addColumns({"c": "int"})
    with pytest.raises(SchemaChangeError, match="not a struct"):
        t.addColumns({"name.q": "int"})
    with pytest.raises(ColumnNotFoundError):
        t.addColumns({"nope.q": "int"})
    assert Snapshot.load(path).version == 2  # refusals commit nothing


def test_add_columns_without_column_mapping(spark, tmp_path):
    path = str(tmp_path / "t")
    t = _table(spark, path, mapping=False)
    from pyspark.sql.types import DoubleType, StructField, StructType

    t.addColumns(StructType([StructField("d", DoubleType(), True, {"comment": "dd"})]))
    schema, rows = _both(spark, path)
    assert schema.names[-1] == "d" and all(r[-1] is None for r in rows) and len(rows) == 6
    # old files have no statistics for d: a filter on it must not skip them
    for df in (delta_pyds.read_delta(spark, path), pydelta_read(spark, path)):
        assert df.where("d IS NULL").count() == 6 and df.where("d > 0").count() == 0
    assert Snapshot.load(path).schema.field("d").metadata == {"comment": "dd"}
    with pytest.raises(delta_pyds.DeltaError, match="NOT NULL"):
        t.addColumns(StructType([StructField("e", DoubleType(), False)]))


def test_rename_and_drop_columns_read_old_data(spark, tmp_path):
    path = str(tmp_path / "t")
    t = _table(spark, path, partition=True)
    t.renameColumn("name", "label")
    t.renameColumn("s.a", "aa")
    t.renameColumn("part", "p")
    snap = Snapshot.load(path)
    assert snap.metadata.partition_columns == ("p",)
    schema, rows = _both(spark, path)
    assert schema.names == ["id", "label", "s", "p"]
    assert schema["s"].dataType.names == ["aa", "b"]
    assert rows[:2] == [(0, "n0", (("aa", 0), ("b", "x0")), 0), (1, "n1", (("aa", 1), ("b", "x1")), 1)]
    assert sorted(_delta_rs(path, ["id", "label", "p"]))[:2] == [(0, "n0", 0), (1, "n1", 1)]
    assert spark_rows(delta_pyds.read_delta(spark, path).where("p = 1").select("id")) == [(1,), (3,), (5,)]
    t.dropColumns(["label", "s.b"])
    schema, rows = _both(spark, path)
    assert schema.names == ["id", "s", "p"] and rows[0] == (0, (("aa", 0),), 0)
    assert sorted(_delta_rs(path, ["id", "p"]))[0] == (0, 0)
    # a new column may reuse a dropped name: it is a new column, the old data stays dropped
    t.addColumns({"label": "string"})
    assert {r[-1] for r in _both(spark, path)[1]} == {None}
    with pytest.raises(SchemaChangeError, match="partition column"):
        t.dropColumns("p")
    for df in (delta_pyds.read_delta(spark, path), pydelta_read(spark, path)):  # skipping by physical names
        assert df.where("label IS NULL").count() == 6 and df.where("id = 4").count() == 1
    with pytest.raises(SchemaChangeError, match="already exists"):
        t.renameColumn("id", "label")
    with pytest.raises(ColumnNotFoundError):
        t.dropColumns(["nope"])
    assert t.dropColumns(["nope"], ifExists=True) is None


def test_rename_and_drop_need_column_mapping(spark, tmp_path):
    path = str(tmp_path / "t")
    t = _table(spark, path, mapping=False)
    for call in (lambda: t.renameColumn("name", "x"), lambda: t.dropColumns("name")):
        with pytest.raises(SchemaChangeError, match="delta.columnMapping.mode"):
            call()
    assert Snapshot.load(path).version == 0


def test_rename_refused_for_a_column_a_constraint_uses(spark, tmp_path):
    path = str(tmp_path / "t")
    t = _table(spark, path)
    t.addConstraint("pos", "id >= 0")
    with pytest.raises(SchemaChangeError, match="delta.constraints.pos"):
        t.renameColumn("id", "key")
    t.dropConstraint("pos")
    t.renameColumn("id", "key")
    assert _both(spark, path)[0].names[0] == "key"


def test_comment_and_not_null(spark, tmp_path):
    path = str(tmp_path / "t")
    t = _table(spark, path)
    delta_pyds.write_delta(
        spark.createDataFrame([(7, None, None, 1)], "id int, name string, s struct<a:int,b:string>, part int"), path
    )
    t.alterColumn("name", comment="the name")
    assert Snapshot.load(path).schema.field("name").metadata["comment"] == "the name"
    before = Snapshot.load(path).version
    with pytest.raises(ConstraintViolationError, match="1 existing rows"):
        t.alterColumn("name", nullable=False)
    assert Snapshot.load(path).version == before
    t.delete("id = 7")
    t.alterColumn("name", nullable=False)
    snap = Snapshot.load(path)
    assert snap.schema.field("name").nullable is False
    assert snap.schema.field("name").metadata["comment"] == "the name"  # kept
    with pytest.raises(Exception, match="(?i)null"):
        delta_pyds.write_delta(
            spark.createDataFrame([(8, None, None, 1)], "id int, name string, s struct<a:int,b:string>, part int"), path
        )
    t.alterColumn("name", nullable=True)
    assert Snapshot.load(path).schema.field("name").nullable is True
    t.alterColumn("s.a", nullable=False)  # no row has s not null and s.a null
    assert Snapshot.load(path).schema.field("s").type.field("a").nullable is False  # type: ignore[union-attr]


def test_type_widening(spark, tmp_path):
    path = str(tmp_path / "t")
    t = _table(spark, path)
    with pytest.raises(SchemaChangeError, match="delta.enableTypeWidening"):
        t.alterColumn("id", dataType="bigint")
    with pytest.raises(SchemaChangeError, match="not a type widening"):
        t.alterColumn("name", dataType="int")
    t.setProperties({"delta.enableTypeWidening": "true"})
    from pyspark.sql.types import LongType

    t.alterColumn("id", dataType=LongType())
    t.alterColumn("s.a", dataType="double")
    snap = Snapshot.load(path)
    assert "typeWidening" in (snap.protocol.writer_features or ())
    assert snap.schema.field("id").metadata["delta.typeChanges"] == [{"fromType": "integer", "toType": "long"}]
    delta_pyds.write_delta(
        spark.createDataFrame(
            [(2**40, "big", (1.5, "y"), 0)], "id long, name string, s struct<a:double,b:string>, part int"
        ),
        path,
    )
    schema, rows = _both(spark, path)
    assert schema["id"].dataType == LongType()
    assert rows[0] == (0, "n0", (("a", 0.0), ("b", "x0")), 0)
    assert (2**40, "big", (("a", 1.5), ("b", "y")), 0) in rows and len(rows) == 7
    with pytest.raises(Exception, match="TypeWidening"):  # deltalake 1.6.6 has no type widening
        _delta_rs(path, ["id"])
    for df in (delta_pyds.read_delta(spark, path), pydelta_read(spark, path)):  # int stats, long filter
        assert df.where(f"id > {2**31}").count() == 1 and df.where("id = 5").count() == 1
    with pytest.raises(SchemaChangeError, match="not a type widening"):
        t.alterColumn("id", dataType="int")


def test_constraints_api(spark, tmp_path):
    path = str(tmp_path / "t")
    t = _table(spark, path)
    with pytest.raises(ConstraintViolationError, match="3 existing rows"):
        t.addConstraint("small", "id < 3")
    t.addConstraint("small", "id < 100")
    assert Snapshot.load(path).configuration["delta.constraints.small"] == "id < 100"
    with pytest.raises(ConstraintViolationError):
        delta_pyds.write_delta(
            spark.createDataFrame([(500, "x", None, 0)], "id int, name string, s struct<a:int,b:string>, part int"),
            path,
        )
    t.dropConstraint("small")
    with pytest.raises(MissingPropertyError):
        t.dropConstraint("small")
    assert t.dropConstraint("small", ifExists=True) is None


def test_cluster_by(spark, tmp_path):
    from delta_pyds.protocol.clustering import table_clustering

    path = str(tmp_path / "t")
    t = _table(spark, path)
    t.clusterBy("id", "s.a")
    snap = Snapshot.load(path)
    assert table_clustering(snap.schema, snap.domain_metadata, "name") == [("id",), ("s", "a")]
    assert "col-" in snap.domain_metadata["delta.clustering"]  # physical names under column mapping
    assert {"clustering", "domainMetadata"} <= set(snap.protocol.writer_features or ())
    t.renameColumn("id", "key")  # the domain holds physical names: nothing to change
    snap = Snapshot.load(path)
    assert table_clustering(snap.schema, snap.domain_metadata, "name") == [("key",), ("s", "a")]
    with pytest.raises(SchemaChangeError, match="clustering column"):
        t.dropColumns("s.a")
    t.optimize().executeCompaction()
    assert len(_both(spark, path)[1]) == 6 and len(_delta_rs(path, ["key"])) == 6
    t.clusterBy()  # CLUSTER BY NONE
    snap = Snapshot.load(path)
    assert table_clustering(snap.schema, snap.domain_metadata, "name") == []
    t.dropColumns("s.a")
    with pytest.raises(delta_pyds.DeltaError, match="at most 4"):
        t.clusterBy("key", "name", "part", "s.b", "key")
    parted = str(tmp_path / "p")
    with pytest.raises(delta_pyds.DeltaError, match="partitioned"):
        _table(spark, parted, partition=True).clusterBy("id")


def test_set_not_null_fails_when_a_null_is_appended_concurrently(spark, tmp_path):
    from delta_pyds.errors import ConcurrentModificationError
    from delta_pyds.operations.schema_changes import alter_column

    path = str(tmp_path / "t")
    _table(spark, path)

    def null_count_then_concurrent_append(version):
        assert version == 0
        delta_pyds.write_delta(
            spark.createDataFrame([(9, None, None, 0)], "id int, name string, s struct<a:int,b:string>, part int"), path
        )
        return 0  # no null at version 0: the null came after the scan

    with pytest.raises(ConcurrentModificationError):
        alter_column(path, "name", nullable=False, null_count=null_count_then_concurrent_append)
    snap = Snapshot.load(path)
    assert snap.version == 1 and snap.schema.field("name").nullable is True


def test_add_constraint_fails_when_a_violating_row_is_appended_concurrently(spark, tmp_path):
    from delta_pyds.errors import ConcurrentModificationError
    from delta_pyds.operations.schema_changes import add_constraint

    path = str(tmp_path / "t")
    _table(spark, path)

    def violations_then_concurrent_append(version):
        delta_pyds.write_delta(
            spark.createDataFrame([(-9, "x", None, 0)], "id int, name string, s struct<a:int,b:string>, part int"), path
        )
        return 0

    with pytest.raises(ConcurrentModificationError):
        add_constraint(path, "pos", "id >= 0", violations_then_concurrent_append)
    assert "delta.constraints.pos" not in Snapshot.load(path).configuration
