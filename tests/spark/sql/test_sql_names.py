"""delta_pyds.sql reads names as Spark does: catalog names only at table references, a CTE
shadows a temporary view, which shadows a catalog name; checked against Spark's own resolution
of the same text over temporary views holding the same rows."""

from __future__ import annotations

import pytest

import delta_pyds
from delta_pyds import SqlParseError
from delta_pyds.spark.sql.parser import name_text
from tests.helpers import spark_rows

SESSION = {"events": "id long, events long", "other": "id long, events long", "été": "id long, events long"}
QUERIES = [
    "SELECT id, events FROM events",
    "SELECT id FROM other WHERE id IN (1, events)",
    "SELECT `été`.id FROM `été`",
    "SELECT e.id AS events FROM events e JOIN other o ON e.id = o.id",
    "SELECT transform(array(id), events -> events + 1) AS x FROM events",
    "SELECT named_struct('events', id).events AS v FROM `été`",
    "WITH events AS (SELECT 7L AS id) SELECT * FROM events",
    "SELECT (SELECT max(id) FROM events) AS m",
    "SELECT * FROM events WHERE id IN (WITH events AS (SELECT 3L AS id) SELECT id FROM events)",
    "WITH x AS (SELECT * FROM events) SELECT count(*) FROM x",
    "SELECT * FROM events /* FROM other */ JOIN other USING (id)",
    "SELECT * FROM events e -- , other\n , `été` WHERE e.id = `été`.id",
    "WITH RECURSIVE events(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM events WHERE n < 3) SELECT * FROM events",
    "SELECT * FROM (WITH other AS (SELECT 9L AS id) SELECT * FROM other) JOIN other USING (id)",
]


@pytest.fixture(scope="module")
def session_names(spark, tmp_path_factory):
    root = tmp_path_factory.mktemp("names")
    paths = {}
    for k, (name, schema) in enumerate(SESSION.items()):
        paths[name] = str(root / f"t{k}")
        rows = [(i, i * 10 + k) for i in range(k, k + 4)]
        delta_pyds.write_delta(spark.createDataFrame(rows, schema), paths[name])
        _register(spark, name, paths[name])
    yield paths
    for name in SESSION:  # external entries: the data stays
        if name.isascii():
            delta_pyds.sql(spark, f"DROP TABLE IF EXISTS {name_text([name])}")
        else:
            spark.catalog.dropTempView(name)


def _register(spark, name, path):
    """A catalog entry; a name Spark's catalog refuses (not ASCII) as a temporary view over
    the pydelta table (Spark resolves it before any catalog name)."""
    if name.isascii():
        delta_pyds.sql(spark, f"CREATE TABLE `{name}` USING delta LOCATION '{path}'")
    else:
        spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW {name_text([name])} USING pydelta OPTIONS (path '{path}')")


def _spark_over_views(spark, paths, query):
    for k, (name, path) in enumerate(paths.items()):
        delta_pyds.read_delta(spark, path).createOrReplaceTempView(f"names_src_{k}")
        spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW {name_text([name])} AS SELECT * FROM names_src_{k}")
    try:
        return spark_rows(spark.sql(query))
    finally:
        for k, (name, path) in enumerate(paths.items()):
            spark.sql(f"DROP VIEW {name_text([name])}")
            spark.catalog.dropTempView(f"names_src_{k}")
            if not name.isascii():
                _register(spark, name, path)


def test_queries_read_names_as_spark_resolves_them(spark, session_names):
    for query in QUERIES:
        expected = _spark_over_views(spark, session_names, query)
        assert spark_rows(delta_pyds.sql(spark, query)) == expected, query


def test_insert_query_with_a_cte_shadowing_a_session_name(spark, session_names, tmp_path):
    target = str(tmp_path / "d")
    delta_pyds.write_delta(spark.createDataFrame([], "id long"), target)
    delta_pyds.sql(spark, f"INSERT INTO delta.`{target}` WITH events AS (SELECT 7L AS id) SELECT id FROM events")
    assert spark_rows(delta_pyds.read_delta(spark, target)) == [(7,)]
    src = "MERGE INTO delta.`{t}` t USING (WITH events AS (SELECT 8L AS id) SELECT * FROM events) s ON t.id = s.id"
    delta_pyds.sql(spark, src.format(t=target) + " WHEN NOT MATCHED THEN INSERT *")
    assert spark_rows(delta_pyds.read_delta(spark, target)) == [(7,), (8,)]


def test_a_temporary_view_shadows_a_session_name(spark, session_names):
    spark.createDataFrame([(42, 0)], "id long, events long").createOrReplaceTempView("events")
    try:
        assert spark_rows(delta_pyds.sql(spark, "SELECT id FROM events")) == [(42,)]
        assert spark_rows(delta_pyds.sql(spark, "SELECT id FROM `events`")) == spark_rows(
            spark.sql("SELECT id FROM events")
        )
    finally:
        spark.catalog.dropTempView("events")
    assert spark_rows(delta_pyds.sql(spark, "SELECT count(*) FROM events")) == [(4,)]


def test_a_delta_path_where_no_table_is_read_is_a_named_error(spark, session_names):
    path = session_names["events"]
    with pytest.raises(SqlParseError, match="does not read Delta tables") as e:
        delta_pyds.sql(spark, f"SELECT * FROM VALUES (1) AS v(id) JOIN delta.`{path}` USING (id)")
    assert "_pyspark_" not in str(e.value)


def test_an_unquoted_unicode_name_is_refused_as_spark_refuses_it(spark, session_names):
    with pytest.raises(Exception, match="INVALID_IDENTIFIER"):
        spark.sql("SELECT * FROM été")
    with pytest.raises(Exception, match="INVALID_IDENTIFIER"):
        delta_pyds.sql(spark, "SELECT * FROM été")
