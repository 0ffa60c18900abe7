"""delta_pyds.sql: Delta statements on temporary views over pydelta (DELETE, UPDATE, MERGE,
DESCRIBE HISTORY, VACUUM, OPTIMIZE, ALTER TABLE), each compared with the same operation through
the Python API on a twin table; views that are not a whole table are refused by name."""

from __future__ import annotations

import pytest

import delta_pyds
from delta_pyds import DeltaTable
from delta_pyds.errors import TemporaryViewError
from delta_pyds.table.snapshot import Snapshot
from tests.helpers import deltalake_table, spark_rows, table_version


@pytest.fixture
def twins(spark, tmp_path):
    paths = []
    for name in ("sql", "api", "src"):
        path = str(tmp_path / name)
        rows = [(i, f"n{i}", i * 10) for i in range(6)] if name != "src" else [(1, "y", 2), (7, "z", 3)]
        delta_pyds.write_delta(spark.createDataFrame(rows, "id long, name string, v long"), path)
        paths.append(path)
    spark.read.format("pydelta").load(paths[0]).createOrReplaceTempView("sql3_v")
    yield paths
    spark.catalog.dropTempView("sql3_v")


def _same(spark, s, a, view="sql3_v"):
    rows = spark_rows(delta_pyds.read_delta(spark, s))
    assert rows == spark_rows(delta_pyds.read_delta(spark, a))
    # both read paths agree on the view's table, and so does the view itself
    assert rows == spark_rows(spark.read.format("pydelta").load(s)) == spark_rows(spark.table(view))
    return rows


def test_dml_on_a_view_runs_on_its_table(spark, twins):
    s, a, src = twins
    got = delta_pyds.sql(spark, "DELETE FROM sql3_v WHERE id = 2").collect()
    DeltaTable.forPath(spark, a).delete("id = 2")
    assert got[0].num_affected_rows == 1
    got = delta_pyds.sql(spark, "UPDATE sql3_v AS t SET name = upper(t.name) WHERE t.id > 3").collect()
    DeltaTable.forPath(spark, a).update("id > 3", {"name": "upper(name)"})
    assert got[0].num_affected_rows == 2
    m = delta_pyds.sql(
        spark,
        f"MERGE INTO sql3_v t USING delta.`{src}` s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *",
    ).collect()
    api = (
        DeltaTable.forPath(spark, a)
        .alias("t")
        .merge(delta_pyds.read_delta(spark, src).alias("s"), "t.id = s.id")
        .whenMatchedUpdateAll()
        .whenNotMatchedInsertAll()
        .execute()
        .collect()
    )
    assert m == api and m[0].num_inserted_rows == 1
    rows = _same(spark, s, a)
    assert [r[1] for r in rows] == ["n0", "y", "n3", "N4", "N5", "z"]
    assert sorted(deltalake_table(s).to_pydict()["id"]) == [0, 1, 3, 4, 5, 7]


def test_maintenance_and_alter_on_a_view(spark, twins):
    s, a, _ = twins
    delta_pyds.write_delta(spark.createDataFrame([(9, "n9", 90)], "id long, name string, v long"), s, mode="append")
    delta_pyds.sql(spark, "ALTER TABLE sql3_v SET TBLPROPERTIES ('k' = 'v')")
    assert Snapshot.load(s).configuration["k"] == "v"
    delta_pyds.sql(spark, "ALTER TABLE sql3_v ADD COLUMNS (extra STRING)")
    assert [f.name for f in delta_pyds.read_delta(spark, s).schema.fields] == ["id", "name", "v", "extra"]
    before = table_version(s)
    opt = delta_pyds.sql(spark, "OPTIMIZE sql3_v").collect()
    assert (
        opt[0].path == s
        and opt[0].metrics.numFilesAdded == 1
        and opt[0].metrics.numFilesRemoved > 1
        and table_version(s) == before + 1
    )
    vac = delta_pyds.sql(spark, "VACUUM sql3_v RETAIN 168 HOURS DRY RUN").collect()
    assert vac == DeltaTable.forPath(spark, s).vacuum(168, True).collect()
    hist = delta_pyds.sql(spark, "DESCRIBE HISTORY sql3_v LIMIT 3").collect()
    assert [r.operation for r in hist] == ["OPTIMIZE", "ADD COLUMNS", "SET TBLPROPERTIES"]
    assert hist == DeltaTable.forPath(spark, s).history(3).collect()
    props = {r.key: r.value for r in delta_pyds.sql(spark, "SHOW TBLPROPERTIES sql3_v").collect()}
    assert props["k"] == "v"


def test_a_sql_made_view_resolves_too(spark, twins):
    s, a, _ = twins
    spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW sql3_v2 USING pydelta OPTIONS (path '{s}')")
    try:
        assert delta_pyds.sql(spark, "DELETE FROM sql3_v2 WHERE id < 2").collect()[0].num_affected_rows == 2
        DeltaTable.forPath(spark, a).delete("id < 2")
        _same(spark, s, a, view="sql3_v2")
    finally:
        spark.catalog.dropTempView("sql3_v2")


@pytest.mark.parametrize(
    "make",
    [
        lambda spark, p: spark.read.format("pydelta").load(p).where("id > 1"),
        lambda spark, p: spark.read.format("pydelta").load(p).select("id", "name"),
        lambda spark, p: spark.read.format("pydelta").option("versionAsOf", 0).load(p),
        lambda spark, p: spark.read.format("pydelta").option("columns", "id").load(p),
    ],
    ids=["filtered", "projected", "time-travel", "columns-option"],
)
def test_a_view_that_is_not_a_whole_table_is_refused(spark, twins, make):
    s, _, _ = twins
    make(spark, s).createOrReplaceTempView("sql3_bad")
    before = table_version(s)
    try:
        for stmt in (
            "DELETE FROM sql3_bad",
            "UPDATE sql3_bad SET v = 0",
            "VACUUM sql3_bad",
            "ALTER TABLE sql3_bad SET TBLPROPERTIES ('k'='v')",
        ):
            with pytest.raises(TemporaryViewError, match="DELTA_OPERATION_ON_VIEW_NOT_ALLOWED.*sql3_bad"):
                delta_pyds.sql(spark, stmt)
    finally:
        spark.catalog.dropTempView("sql3_bad")
    assert table_version(s) == before


def test_a_view_over_something_else_goes_to_spark(spark, twins):
    spark.range(3).createOrReplaceTempView("sql3_other")
    try:
        with pytest.raises(Exception) as err:
            delta_pyds.sql(spark, "DELETE FROM sql3_other WHERE id = 1")
        assert not isinstance(err.value, TemporaryViewError)
    finally:
        spark.catalog.dropTempView("sql3_other")
