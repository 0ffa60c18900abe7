"""delta_pyds.sql: MERGE INTO and INSERT INTO / OVERWRITE [REPLACE WHERE], compared with the
same operations through DeltaTable.merge and write_delta on a twin table."""

from __future__ import annotations

import pytest

import delta_pyds
from delta_pyds import DeltaTable, SqlParseError
from tests.helpers import spark_rows


@pytest.fixture
def twins(spark, tmp_path):
    paths = []
    for name in ("sql", "api"):
        path = str(tmp_path / name)
        df = spark.createDataFrame([(i, f"n{i}", i * 10) for i in range(6)], "id long, name string, v long")
        delta_pyds.write_delta(df, path)
        paths.append(path)
    src = str(tmp_path / "src")
    delta_pyds.write_delta(
        spark.createDataFrame([(0, "x", 1), (1, "y", 2), (7, "z", 3)], "id long, name string, v long"), src
    )
    return paths + [src]


def _rows(spark, path):
    return spark_rows(delta_pyds.read_delta(spark, path))


def test_merge_all_clause_kinds_match_the_api(spark, twins):
    s, a, src = twins
    got = delta_pyds.sql(
        spark,
        f"""MERGE INTO delta.`{s}` AS t USING delta.`{src}` s ON t.id = s.id
        WHEN MATCHED AND s.id = 0 THEN DELETE
        WHEN MATCHED THEN UPDATE SET t.name = s.name, v = t.v + s.v
        WHEN NOT MATCHED BY TARGET AND s.v > 0 THEN INSERT (id, name, v) VALUES (s.id, upper(s.name), s.v)
        WHEN NOT MATCHED BY SOURCE AND t.id > 4 THEN DELETE
        WHEN NOT MATCHED BY SOURCE THEN UPDATE SET v = -1""",
    )
    source = delta_pyds.read_delta(spark, src).alias("s")
    api = (
        DeltaTable.forPath(spark, a)
        .alias("t")
        .merge(source, "t.id = s.id")
        .whenMatchedDelete("s.id = 0")
        .whenMatchedUpdate(set={"name": "s.name", "v": "t.v + s.v"})
        .whenNotMatchedInsert("s.v > 0", {"id": "s.id", "name": "upper(s.name)", "v": "s.v"})
        .whenNotMatchedBySourceDelete("t.id > 4")
        .whenNotMatchedBySourceUpdate(set={"v": "-1"})
        .execute()
    )
    assert (
        got.columns == api.columns == ["num_affected_rows", "num_updated_rows", "num_deleted_rows", "num_inserted_rows"]
    )
    assert got.collect() == api.collect()
    assert got.collect()[0].num_deleted_rows == 2 and got.collect()[0].num_inserted_rows == 1
    assert _rows(spark, s) == _rows(spark, a)
    assert (7, "Z", 3) in _rows(spark, s)


def test_merge_star_clauses_with_a_subquery_source(spark, twins):
    s, a, src = twins
    delta_pyds.sql(
        spark,
        f"""MERGE INTO delta.`{s}` t USING (SELECT * FROM delta.`{src}` WHERE id > 0) AS s ON t.id = s.id
        WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *""",
    )
    source = delta_pyds.read_delta(spark, src, where="id > 0").alias("s")
    DeltaTable.forPath(spark, a).alias("t").merge(
        source, "t.id = s.id"
    ).whenMatchedUpdateAll().whenNotMatchedInsertAll().execute()
    assert _rows(spark, s) == _rows(spark, a) and len(_rows(spark, s)) == 7


def test_insert_into_overwrite_replace_where(spark, twins):
    s, _, src = twins
    got = delta_pyds.sql(spark, f"INSERT INTO delta.`{s}` SELECT id + 100, name, v FROM delta.`{src}`")
    assert got.columns == ["num_affected_rows", "num_inserted_rows"] and tuple(got.collect()[0]) == (3, 3)
    delta_pyds.sql(spark, f"INSERT INTO TABLE delta.`{s}` (id, name, v) VALUES (200, 'w', 0)")
    assert len(_rows(spark, s)) == 10 and (200, "w", 0) in _rows(spark, s)

    delta_pyds.sql(spark, f"INSERT INTO delta.`{s}` REPLACE WHERE id >= 100 SELECT 100 AS id, 'r' AS name, 1 AS v")
    assert [r for r in _rows(spark, s) if r[0] >= 100] == [(100, "r", 1)]

    delta_pyds.sql(spark, f"INSERT OVERWRITE delta.`{s}` SELECT * FROM delta.`{src}@v0`")
    assert _rows(spark, s) == _rows(spark, src)
    with pytest.raises(SqlParseError, match="the query gives 1 columns"):
        delta_pyds.sql(spark, f"INSERT INTO delta.`{s}` SELECT 1")


def test_merge_parse_errors(spark, twins):
    s, _, src = twins
    with pytest.raises(SqlParseError, match="MERGE: expected UPDATE SET, DELETE or INSERT"):
        delta_pyds.sql(
            spark, f"MERGE INTO delta.`{s}` t USING delta.`{src}` s ON t.id = s.id WHEN MATCHED THEN INSERT *"
        )
    with pytest.raises(SqlParseError, match="2 columns but 1 values"):
        delta_pyds.sql(
            spark,
            f"MERGE INTO delta.`{s}` t USING delta.`{src}` s ON t.id = s.id "
            "WHEN NOT MATCHED THEN INSERT (id, v) VALUES (s.id)",
        )
