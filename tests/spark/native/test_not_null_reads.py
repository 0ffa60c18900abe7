"""NOT NULL columns read non-nullable through every Spark-native read door (``read_delta``,
``DeltaTable.toDF()``, ``spark.table``, ``format("delta").load``, SQL queries), as delta-spark's
scan reports them; the rows are the table's; a null that a data file holds in a NOT NULL column
raises naming the column instead of being replaced."""

from __future__ import annotations

import glob
import json

import pytest
from helpers import spark_rows

import delta_pyds
from delta_pyds import DeltaTable, read_delta

TYPES = (
    "b TINYINT NOT NULL, sh SMALLINT NOT NULL, i INT NOT NULL, l BIGINT NOT NULL, f FLOAT NOT NULL, "
    "d DOUBLE NOT NULL, dec1 DECIMAL(1,1) NOT NULL, dec DECIMAL(12,3) NOT NULL, s STRING NOT NULL, "
    "bin BINARY NOT NULL, flag BOOLEAN NOT NULL, dt DATE NOT NULL, t TIMESTAMP NOT NULL, "
    "ntz TIMESTAMP_NTZ NOT NULL, arr ARRAY<INT> NOT NULL, m MAP<STRING, INT> NOT NULL, "
    "st STRUCT<x: INT, y: STRING> NOT NULL, opt STRING, p INT NOT NULL"
)
VALUES = (
    "1Y, 2S, 3, 4L, 5.5F, 6.5D, 0.1BD, 12.345BD, 'a', X'01', true, DATE'2024-01-02', "
    "TIMESTAMP'2024-01-02 03:04:05', TIMESTAMP_NTZ'2024-01-02 03:04:05', array(1, 2), map('k', 1), "
    "named_struct('x', 1, 'y', 'z'), NULL, 7"
)


def _doors(spark, path, name):
    return {
        "read_delta": read_delta(spark, path),
        "toDF": DeltaTable.forPath(spark, path).toDF(),
        "spark.table": spark.table(name),
        "format(delta).load": spark.read.format("delta").load(path),
        "sql": delta_pyds.sql(spark, f"SELECT * FROM delta.`{path}`"),
    }


@pytest.mark.parametrize("partitioned", [False, True])
def test_not_null_columns_are_non_nullable_in_every_read(spark, tmp_path, partitioned):
    path = str(tmp_path / "t")
    name = f"not_null_reads_{int(partitioned)}"
    parts = " PARTITIONED BY (p)" if partitioned else ""
    delta_pyds.register(spark)
    spark.sql(f"CREATE TABLE {name} ({TYPES}) USING delta{parts} LOCATION '{path}'")
    try:
        spark.sql(f"INSERT INTO {name} VALUES ({VALUES})")
        expected = spark_rows(spark.read.format("pydelta").load(path))
        for door, df in _doors(spark, path, name).items():
            nullable = {f.name: f.nullable for f in df.schema.fields}
            assert nullable == {f: f == "opt" for f in nullable}, door
            assert spark_rows(df) == expected, door
            # a filter on a NOT NULL column, and its IS NULL test (Spark may fold it away), both right
            assert df.where("i = 3 AND l IS NOT NULL").count() == 1, door
            assert df.where("i IS NULL").count() == 0, door
    finally:
        spark.sql(f"DROP TABLE IF EXISTS {name}")


def _declare_not_null(path):
    """Rewrites the table's schema in commit 0 so that column ``id`` says NOT NULL (as a faulty
    writer could leave a table: a data file with a null in a NOT NULL column)."""
    (first,) = glob.glob(f"{path}/_delta_log/00000000000000000000.json")
    lines = []
    for line in open(first, encoding="utf-8"):
        action = json.loads(line)
        if "metaData" in action:
            schema = json.loads(action["metaData"]["schemaString"])
            for f in schema["fields"]:
                if f["name"] == "id":
                    f["nullable"] = False
            action["metaData"]["schemaString"] = json.dumps(schema)
        lines.append(json.dumps(action))
    with open(first, "w", encoding="utf-8") as out:
        out.write("\n".join(lines) + "\n")


def test_a_null_in_a_not_null_column_raises_naming_it(spark, tmp_path):
    path = str(tmp_path / "t")
    spark.sql("SELECT * FROM VALUES (1, 'a'), (NULL, 'b') AS v(id, s)").write.format("pydelta").save(path)
    _declare_not_null(path)
    df = read_delta(spark, path)
    assert not df.schema["id"].nullable and df.schema["s"].nullable
    with pytest.raises(Exception, match=r"NOT NULL constraint violated for column: id\."):
        df.collect()
    # the column not read, the rows are there
    assert sorted(r.s for r in df.select("s").collect()) == ["a", "b"]
