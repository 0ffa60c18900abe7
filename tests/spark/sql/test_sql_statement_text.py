"""delta_pyds.sql reads Delta statements' text as Spark does: backquoted names with dots, CASE
in MERGE, raw strings, INSERT BY NAME, format arguments, parameters bound in DML, named errors
for bad versions and hours, SHOW PARTITIONS and TRUNCATE TABLE."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

import delta_pyds
from delta_pyds import DeltaTable, SqlParameterError, SqlParseError
from delta_pyds.spark.sql.parameters import literal
from tests.helpers import spark_rows

DOTTED = "id long, `a.b` string, a struct<b: string>"


def _dotted(spark, path):
    rows = [(1, "top1", ("nested1",)), (2, "top2", ("nested2",))]
    delta_pyds.write_delta(spark.createDataFrame(rows, DOTTED), path)


def _rows(spark, path, order="id"):
    return spark_rows(delta_pyds.read_delta(spark, path).orderBy(order))


def test_backquoted_name_with_a_dot_is_the_top_level_column(spark, tmp_path):
    sql_t, api_t = str(tmp_path / "s"), str(tmp_path / "a")
    _dotted(spark, sql_t)
    _dotted(spark, api_t)
    delta_pyds.sql(spark, f"UPDATE delta.`{sql_t}` t SET t.`a.b` = 'X' WHERE id = 1")
    DeltaTable.forPath(spark, api_t).update("id = 1", {"`a.b`": "'X'"})
    expected = [(1, "X", (("b", "nested1"),)), (2, "top2", (("b", "nested2"),))]
    assert _rows(spark, sql_t) == _rows(spark, api_t) == expected
    src = spark.createDataFrame([(2, "Y"), (3, "Z")], "id long, v string")
    src.createOrReplaceTempView("dotted_src")
    try:
        delta_pyds.sql(
            spark,
            f"MERGE INTO delta.`{sql_t}` t USING dotted_src s ON t.id = s.id"
            " WHEN MATCHED THEN UPDATE SET t.`a.b` = s.v, a.b = 'nb'"
            " WHEN NOT MATCHED THEN INSERT (id, t.`a.b`) VALUES (s.id, s.v)",
        )
    finally:
        spark.catalog.dropTempView("dotted_src")
    assert _rows(spark, sql_t) == [(1, "X", (("b", "nested1"),)), (2, "Y", (("b", "nb"),)), (3, "Z", None)]


def test_case_in_merge_on_set_and_clause_conditions(spark, tmp_path):
    path = str(tmp_path / "t")
    delta_pyds.write_delta(spark.createDataFrame([(i, i * 10) for i in range(4)], "id long, v long"), path)
    delta_pyds.sql(
        spark,
        f"MERGE INTO delta.`{path}` t USING (SELECT id, id * 100 AS w FROM range(2, 6)) s"
        " ON t.id = CASE WHEN s.id > 100 THEN -1 ELSE s.id END"
        " WHEN MATCHED AND CASE WHEN t.id = 2 THEN true ELSE false END THEN"
        " UPDATE SET v = CASE WHEN s.w > 0 THEN s.w ELSE 0 END"
        " WHEN NOT MATCHED AND CASE s.id WHEN 5 THEN true END THEN"
        " INSERT (id, v) VALUES (s.id, CASE WHEN true THEN 5 END)",
    )
    assert _rows(spark, path) == [(0, 0), (1, 10), (2, 200), (3, 30), (5, 5)]


def test_raw_string_and_by_name_insert_as_spark(spark, tmp_path):
    path, pq = str(tmp_path / "t"), str(tmp_path / "pq")
    df = spark.createDataFrame([(1, "C:\\"), (2, "C:")], "id long, s string")
    delta_pyds.write_delta(df, path)
    df.write.parquet(pq)
    spark.read.parquet(pq).createOrReplaceTempView("raw_twin")
    try:
        expected = spark_rows(spark.sql("SELECT id, s FROM raw_twin WHERE NOT (s = r'C:\\')"))
    finally:
        spark.catalog.dropTempView("raw_twin")
    delta_pyds.sql(spark, f"DELETE FROM delta.`{path}` WHERE s = r'C:\\'")
    assert _rows(spark, path) == expected == [(2, "C:")]
    got = delta_pyds.sql(spark, f"INSERT INTO delta.`{path}` BY NAME SELECT 'by name' AS s, 9L AS id")
    assert got.collect()[0].num_inserted_rows == 1
    assert _rows(spark, path) == [(2, "C:"), (9, "by name")]
    with pytest.raises(SqlParseError, match="PARTITION"):
        delta_pyds.sql(spark, f"INSERT INTO delta.`{path}` PARTITION (id = 1) SELECT 's'")


def test_format_argument_next_to_a_delta_path(spark, tmp_path):
    path = str(tmp_path / "t")
    delta_pyds.write_delta(spark.createDataFrame([(1, "a"), (2, "b")], "id long, s string"), path)
    df = spark.createDataFrame([(2, "x")], "id long, o string")
    got = delta_pyds.sql(spark, f"SELECT t.s, d.o FROM delta.`{path}` t JOIN {{df}} d ON t.id = d.id", df=df)
    assert spark_rows(got) == [("b", "x")]
    n = delta_pyds.sql(spark, f"DELETE FROM delta.`{path}` WHERE id IN (SELECT id FROM {{df}})", df=df)
    assert n.collect()[0].num_affected_rows == 1


VALUES = [
    7,
    -7,
    3_000_000_000,
    2.5,
    -0.0,
    float("nan"),
    Decimal("-12.340"),
    "it's a \\ backslash",
    "é\n",
    b"\x00\xff",
    True,
    None,
    dt.date(2024, 2, 29),
    dt.datetime(2024, 5, 1, 10, 30, 0, 123456, tzinfo=dt.timezone.utc),
    dt.datetime(2024, 5, 1, 10, 30),
    dt.timedelta(days=-1, seconds=5, microseconds=7),
    [1, 2],
]


def test_parameter_literals_have_the_type_and_value_spark_binds(spark):
    values = VALUES
    marks = ", ".join(f"typeof(:p{k}) AS t{k}, :p{k} AS v{k}" for k in range(len(values)))
    lits = ", ".join(f"typeof({literal(v, 'p')}) AS t{k}, {literal(v, 'p')} AS v{k}" for k, v in enumerate(values))
    expected = spark.sql(f"SELECT {marks}", args={f"p{k}": v for k, v in enumerate(values)}).collect()[0]
    got = spark.sql(f"SELECT {lits}").collect()[0]
    assert [str(x) for x in got] == [str(x) for x in expected]


def test_parameters_are_bound_in_delete_update_and_merge(spark, tmp_path):
    path = str(tmp_path / "t")
    delta_pyds.write_delta(spark.createDataFrame([(i, f"n{i}") for i in range(5)], "id long, s string"), path)
    text = f"DELETE FROM delta.`{path}` WHERE id = :id OR s = :s -- :nope"
    assert delta_pyds.sql(spark, text, {"id": 0, "s": "n1"}).collect()[0].num_affected_rows == 2
    delta_pyds.sql(spark, f"UPDATE delta.`{path}` SET s = ? WHERE id > ? AND s <> '?'", ["it's", 3])
    delta_pyds.sql(
        spark,
        f"MERGE INTO delta.`{path}` t USING (SELECT :k AS id) s ON t.id = s.id"
        " WHEN MATCHED THEN UPDATE SET s = :v WHEN NOT MATCHED THEN INSERT (id, s) VALUES (s.id, :v)",
        args={"k": 9, "v": "new"},
    )
    assert _rows(spark, path) == [(2, "n2"), (3, "n3"), (4, "it's"), (9, "new")]
    with pytest.raises(SqlParameterError, match="UNBOUND_SQL_PARAMETER.*:missing"):
        delta_pyds.sql(spark, f"DELETE FROM delta.`{path}` WHERE id = :missing", {"id": 1})


def test_bad_version_and_hours_are_named_errors(spark, tmp_path):
    path = str(tmp_path / "t")
    delta_pyds.write_delta(spark.createDataFrame([(1,)], "id long"), path)
    with pytest.raises(SqlParseError, match="VERSION AS OF, got 'abc'"):
        delta_pyds.sql(spark, f"SELECT * FROM delta.`{path}` VERSION AS OF 'abc'")
    assert delta_pyds.sql(spark, f"SELECT * FROM delta.`{path}` VERSION AS OF '0'").count() == 1
    with pytest.raises(SqlParseError, match="RETAIN 1e400 is out of range"):
        delta_pyds.sql(spark, f"VACUUM delta.`{path}` RETAIN 1e400 HOURS")


def test_show_partitions_and_truncate_table(spark, tmp_path):
    path = str(tmp_path / "t")
    rows = [(i, i % 3, None if i % 3 == 1 else "0") for i in range(1, 6)]
    df = spark.createDataFrame(rows, "id long, p1 long, p2 string")
    delta_pyds.write_delta(df, path, partitionBy=["p1", "p2"])
    got = delta_pyds.sql(spark, f"SHOW PARTITIONS delta.`{path}`")
    assert got.columns == ["p1", "p2"]
    assert spark_rows(got) == [(0, "0"), (1, None), (2, "0")]
    assert spark_rows(delta_pyds.sql(spark, f"SHOW PARTITIONS '{path}' PARTITION (p2 = '0')")) == [(0, "0"), (2, "0")]
    assert spark_rows(delta_pyds.sql(spark, f"SHOW PARTITIONS delta.`{path}` PARTITION (p1=1, p2=null)")) == [(1, None)]
    with pytest.raises(SqlParseError, match="DELTA_TRUNCATE_TABLE_PARTITION_NOT_SUPPORTED"):
        delta_pyds.sql(spark, f"TRUNCATE TABLE delta.`{path}` PARTITION (p1 = 1)")
    delta_pyds.sql(spark, f"TRUNCATE TABLE delta.`{path}`")
    assert delta_pyds.read_delta(spark, path).count() == 0
    plain = str(tmp_path / "plain")
    delta_pyds.write_delta(spark.createDataFrame([(1,)], "id long"), plain)
    with pytest.raises(SqlParseError, match="not partitioned"):
        delta_pyds.sql(spark, f"SHOW PARTITIONS delta.`{plain}`")
