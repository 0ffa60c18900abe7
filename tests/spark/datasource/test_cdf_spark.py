"""Change data feed through Spark: spark.read.format("pydelta").option("readChangeFeed", "true")."""

from __future__ import annotations

import pyarrow as pa
import pytest
from conftest import table_path
from helpers import arrow_rows, spark_rows

from delta_pyds.cdf.reader import read_changes


def cdf(spark, path, **options):
    reader = spark.read.format("pydelta").option("readChangeFeed", "true")
    for k, v in options.items():
        reader = reader.option(k, v)
    return reader.load(path)


@pytest.mark.parametrize(
    "name,start",
    [("delta-rs/cdf-table", 0), ("kernel-rs/cdf-table-with-dv", 0), ("kernel-rs/cdf-column-mapping-id-mode", 1)],
)
def test_same_rows_as_the_core(spark, name, start):
    path = table_path(name)
    df = cdf(spark, path, startingVersion=start)
    assert df.columns[-3:] == ["_change_type", "_commit_version", "_commit_timestamp"]
    types = dict(df.dtypes)
    assert (types["_change_type"], types["_commit_version"], types["_commit_timestamp"]) == (
        "string",
        "bigint",
        "timestamp",
    )
    assert spark_rows(df) == arrow_rows(read_changes(path, starting_version=start), df.columns)


def test_range_projection_and_filters(spark):
    path = table_path("kernel-rs/cdf-table-simple")
    df = cdf(spark, path, startingVersion=1, endingVersion=2, columns="id,_change_type")
    assert df.columns == ["id", "_change_type"]
    assert sorted(tuple(r) for r in df.where("_change_type = 'insert'").collect()) == [
        (i, "insert") for i in range(20, 25)
    ]
    assert df.count() == 15


@pytest.mark.parametrize(
    "options,message",
    [
        ({}, "startingVersion or startingTimestamp is required"),
        ({"startingVersion": "2", "endingVersion": "1"}, "before the starting version"),
        ({"startingVersion": "0", "versionAsOf": "1"}, "versionAsOf cannot be combined"),
        ({"startingVersion": "x"}, "startingVersion"),
        ({"startingVersion": "0", "readChangeFeed": "maybe"}, "readChangeFeed"),
    ],
)
def test_bad_options_name_the_option(spark, options, message):
    with pytest.raises(Exception, match=message):
        cdf(spark, table_path("kernel-rs/cdf-table-simple"), **options).collect()


def test_cdf_not_enabled_is_a_clear_error(spark):
    with pytest.raises(Exception, match="change data was not recorded for version 2"):
        cdf(spark, table_path("kernel-rs/table-with-cdf"), startingVersion=0).collect()


def test_changes_written_by_deltalake(spark, tmp_path):
    from deltalake import DeltaTable, write_deltalake

    path = str(tmp_path / "t")
    write_deltalake(
        path,
        pa.table({"id": pa.array(range(20), pa.int64()), "p": pa.array([i % 3 for i in range(20)])}),
        partition_by=["p"],
        configuration={"delta.enableChangeDataFeed": "true"},
    )
    dt = DeltaTable(path)
    dt.update(predicate="id = 4", updates={"id": "40"})
    dt.delete("id > 15")
    cols = ["id", "p", "_change_type", "_commit_version"]
    ref = pa.table(DeltaTable(path).load_cdf(starting_version=0).read_all())
    assert spark_rows(cdf(spark, path, startingVersion=0).select(*cols)) == arrow_rows(ref, cols)


def test_pydelta_writes_are_readable_as_changes(spark, tmp_path):
    from deltalake import DeltaTable

    path = str(tmp_path / "w")
    df = spark.range(5).selectExpr("id", "id % 2 as p")
    df.write.format("pydelta").mode("append").option("partitionBy", "p").option(
        "delta.enableChangeDataFeed", "true"
    ).save(path)
    spark.range(5, 8).selectExpr("id", "id % 2 as p").write.format("pydelta").mode("append").save(path)
    spark.range(100, 102).selectExpr("id", "id % 2 as p").write.format("pydelta").mode("overwrite").save(path)
    cols = ["id", "p", "_change_type", "_commit_version"]
    got = spark_rows(cdf(spark, path, startingVersion=0).select(*cols))
    ref = pa.table(DeltaTable(path).load_cdf(starting_version=0).read_all())
    assert got == arrow_rows(ref, cols)
    assert sorted(r[2:] for r in got).count(("delete", 2)) == 8 and len(got) == 8 + 8 + 2
