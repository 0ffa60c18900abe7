"""``df.write.format("pydelta")``: round trips of every Spark type and partitioning,
save modes and options, constraint enforcement, interop with deltalake."""

from __future__ import annotations

import datetime as dt
import decimal
import json
import os

import pyarrow as pa
import pytest
from helpers import arrow_rows, deltalake_table, spark_rows
from helpers import pydelta_read as read
from helpers import pydelta_write as write
from helpers import table_version as version

from delta_pyds.table.snapshot import Snapshot

ALL_TYPES = """select cast(1 as tinyint) b, cast(2 as smallint) s, 3 i, cast(4 as bigint) l,
    cast(1.5 as float) f, 2.5d d, cast(1.25 as decimal(5,2)) dec,
    cast(12345678901234567890.123 as decimal(38,3)) dbig, 'str' str, cast('bin' as binary) bin, true bo,
    date'2020-01-01' dt, timestamp'2020-01-01 01:02:03.456789' ts, timestamp_ntz'2020-01-01 01:02:03' ntz,
    array(1, null) arr, map('a', 1, 'b', null) m, named_struct('x', 1, 'y', named_struct('z', 'q')) st,
    array(named_struct('a', 1)) arrst, map('k', array(1.5d)) marr
  union all
  select null, null, null, null, cast('nan' as float), cast('-inf' as double), null, null, null, null, null,
    null, null, null, null, null, null, null, null"""


def error_text(excinfo) -> str:
    return str(excinfo.value)


def test_every_spark_type_round_trips(spark, tmp_path):
    path = str(tmp_path / "t")
    df = spark.sql(ALL_TYPES)
    write(df, path)
    assert spark_rows(read(spark, path)) == spark_rows(df)
    assert arrow_rows(deltalake_table(path), df.columns) == spark_rows(df)


def test_variant_and_ntz_need_table_features(spark, tmp_path):
    path = str(tmp_path / "t")
    df = spark.sql("""select parse_json('{"a": 1, "b": [true]}') v, timestamp_ntz'2020-01-01 00:00:00' t""")
    write(df, path)
    p = Snapshot.load(path).protocol
    assert set(p.reader_features) == {"variantType", "timestampNtz"}
    back = read(spark, path).selectExpr("to_json(v) j", "t").collect()[0]
    assert json.loads(back.j) == {"a": 1, "b": [True]} and back.t == dt.datetime(2020, 1, 1)


def test_variant_writes_nested_stats_and_appends_to_another_writers_table(spark, tmp_path, copy_table):
    path = str(tmp_path / "t")
    df = spark.sql("""select id, parse_json(concat('{"a":', id, ',"b":[1,"x"]}')) v,
        named_struct('n', parse_json('"s"'), 'k', id) st, array(parse_json('1'), parse_json('null')) arr,
        map('m', parse_json('{"z":true}')) mp
        from range(4)""")
    write(df, path)
    write(df, path)
    shown = "id, to_json(v) v, to_json(st.n) n, st.k k, to_json(arr[0]) a0, to_json(arr[1]) a1, to_json(mp['m']) m"
    expected = [tuple(r) for r in df.selectExpr(*shown.split(", ")).collect()]
    got = sorted(tuple(r) for r in read(spark, path).selectExpr(*shown.split(", ")).collect())
    assert got == sorted(expected * 2)
    assert read(spark, path).selectExpr("sum(variant_get(v, '$.a', 'int'))").collect()[0][0] == 2 * 6
    snap = Snapshot.load(path)
    assert "variantType" in snap.protocol.reader_features
    stats = json.loads(snap.files.column("stats")[0].as_py())
    assert "v" not in stats["minValues"] and "v" not in stats["maxValues"]  # no min/max on variants
    assert stats["nullCount"]["v"] == 0 and stats["minValues"]["st"] == {"k": 0}
    # deltalake reads the files: variants as the Parquet struct of metadata/value binaries
    dl = deltalake_table(path)
    assert dl.num_rows == 8 and {f.name for f in dl.schema.field("v").type} == {"metadata", "value"}
    # append to a variant table Spark wrote (variantType-preview feature, checkpoint)
    other = copy_table("delta-rs/spark-variant-checkpoint")
    before = read(spark, other)
    n = before.count()
    rows_before = sorted(tuple(r) for r in before.selectExpr("id", "to_json(v)").collect())
    write(before.limit(3), other)  # the table's own rows, nested variants included
    after = sorted(tuple(r) for r in read(spark, other).selectExpr("id", "to_json(v)").collect())
    assert len(after) == n + 3 and set(rows_before) <= set(after)
    assert deltalake_table(other).num_rows == n + 3


@pytest.mark.parametrize(
    "ptype, values",
    [
        ("int", [1, 2, None]),
        ("string", ["a b", "x/y=z", None]),
        ("date", [dt.date(2020, 1, 1), dt.date(1999, 12, 31), None]),
        ("timestamp", [dt.datetime(2020, 1, 1, 10, 0, 0, 123456), dt.datetime(1970, 1, 1), None]),
        ("boolean", [True, False, None]),
        ("decimal(10,3)", [decimal.Decimal("1.250"), decimal.Decimal("-3.000"), None]),
        ("bigint", [2**40, -1, None]),
        ("double", [1.5, -0.25, None]),
    ],
)
def test_partitioning_by_each_type(spark, tmp_path, ptype, values):
    path = str(tmp_path / "t")
    df = spark.createDataFrame([(i, v) for i, v in enumerate(values * 2)], f"id long, p {ptype}")
    write(df, path, partitionBy="p")
    assert spark_rows(read(spark, path)) == spark_rows(df)
    assert sorted(arrow_rows(deltalake_table(path), ["id", "p"]), key=repr) == sorted(
        (tuple(r) for r in spark_rows(df)), key=repr
    )
    assert len(os.listdir(path)) == 4  # three partition directories and the log


def test_append_overwrite_and_replace_where(spark, tmp_path):
    path = str(tmp_path / "t")
    df = spark.range(12).selectExpr("id", "cast(id % 3 as int) p")
    write(df, path, partitionBy="p")
    write(df.where("p = 0"), path)
    assert read(spark, path).count() == 16
    write(spark.range(100, 102).selectExpr("id", "1 p"), path, "overwrite", replaceWhere="p = 1")
    rows = spark_rows(read(spark, path).where("p = 1"))
    assert rows == [(100, 1), (101, 1)] and read(spark, path).count() == 14
    write(spark.range(200, 201).selectExpr("id", "2 p"), path, "overwrite", partitionOverwriteMode="dynamic")
    assert spark_rows(read(spark, path).where("p = 2")) == [(200, 2)] and read(spark, path).count() == 11
    write(spark.range(3).selectExpr("id", "0 p"), path, "overwrite", partitionOverwriteMode="static")
    assert spark_rows(read(spark, path)) == [(0, 0), (1, 0), (2, 0)]
    assert version(path) == 4
    assert sorted(arrow_rows(deltalake_table(path), ["id", "p"])) == [(0, 0), (1, 0), (2, 0)]
    assert arrow_rows(deltalake_table(path, version=1), ["p"]).count((0,)) == 8


def test_replace_where_rejects_rows_outside_the_predicate(spark, tmp_path):
    path = str(tmp_path / "t")
    write(spark.range(4).selectExpr("id", "cast(id % 2 as int) p"), path, partitionBy="p")
    with pytest.raises(Exception) as exc:
        write(spark.range(4).selectExpr("id", "cast(id % 2 as int) p"), path, "overwrite", replaceWhere="p = 1")
    assert "replaceWhere" in error_text(exc) and "p : 0" in error_text(exc)
    with pytest.raises(Exception) as exc:
        write(spark.range(1).selectExpr("id", "1 p"), path, "overwrite", replaceWhere="id > 2")
    assert "replaceWhere" in error_text(exc) and "id : 0" in error_text(exc)
    assert version(path) == 0 and read(spark, path).count() == 4


@pytest.mark.parametrize("dv", [False, True])
def test_replace_where_on_data_columns_deletes_matching_rows(spark, tmp_path, dv):
    path = str(tmp_path / "t")
    base = spark.range(40).selectExpr("id", "cast(id % 2 as int) p", "cast(id as string) s").repartition(4)
    write(base, path, partitionBy="p", **{"delta.enableDeletionVectors": str(dv).lower()})
    files_before = set(Snapshot.load(path).files.column("path").to_pylist())
    new = spark.createDataFrame([(5, 1, "five"), (500, 0, "x")], "id long, p int, s string")
    write(new, path, "overwrite", replaceWhere="id between 4 and 9 or id >= 500")
    expected = sorted([(i, i % 2, str(i)) for i in range(40) if not 4 <= i <= 9] + [(5, 1, "five"), (500, 0, "x")])
    assert sorted(spark_rows(read(spark, path))) == expected
    assert sorted(arrow_rows(deltalake_table(path), ["id", "p", "s"])) == expected
    snap = Snapshot.load(path)
    dvs = [d for d in snap.files.column("deletion_vector").to_pylist() if d]
    assert bool(dvs) == dv  # deletion vectors, or rewritten files
    assert (set(snap.files.column("path").to_pylist()) >= files_before) == dv
    info = json.loads(open(os.path.join(path, "_delta_log", f"{1:020d}.json")).readline())["commitInfo"]
    assert info["operationMetrics"]["numDeletedRows"] == "6"
    assert info["operationParameters"]["predicate"] == json.dumps(["id between 4 and 9 or id >= 500"])
    # the previous version is intact (time travel)
    assert (
        read(spark, path).count() == 36
        and spark.read.format("pydelta").option("versionAsOf", 0).load(path).count() == 40
    )


def test_schema_evolution(spark, tmp_path):
    path = str(tmp_path / "t")
    write(spark.range(2).selectExpr("id", "named_struct('a', 1) st"), path)
    with pytest.raises(Exception) as exc:
        write(spark.range(1).selectExpr("id", "named_struct('a', 1, 'b', 'x') st", "'new' extra"), path)
    assert "st.b" in error_text(exc) and "extra" in error_text(exc) and "mergeSchema" in error_text(exc)
    write(spark.range(1).selectExpr("id", "named_struct('a', 2, 'b', 'x') st", "'new' extra"), path, mergeSchema="true")
    assert read(spark, path).schema.simpleString() == "struct<id:bigint,st:struct<a:int,b:string>,extra:string>"
    assert spark_rows(read(spark, path).select("extra")) == sorted([(None,), (None,), ("new",)], key=repr)
    with pytest.raises(Exception) as exc:
        write(spark.range(1).selectExpr("cast(id as string) id"), path)
    assert "column id is long in the table but string in the DataFrame" in error_text(exc)
    write(
        spark.range(1).selectExpr("cast(id as string) name", "1.5d x"),
        path,
        "overwrite",
        overwriteSchema="true",
        partitionBy="name",
    )
    assert read(spark, path).columns == ["name", "x"] and Snapshot.load(path).partition_columns == ["name"]
    assert spark_rows(read(spark, path)) == [("0", 1.5)]


def test_partition_by_mismatch_and_bad_options(spark, tmp_path):
    path = str(tmp_path / "t")
    write(spark.range(2).selectExpr("id", "id % 2 p"), path, partitionBy="p")
    with pytest.raises(Exception) as exc:
        write(spark.range(2).selectExpr("id", "id % 2 p"), path, partitionBy="id")
    assert "does not match the table's partition columns" in error_text(exc)
    with pytest.raises(Exception) as exc:
        write(spark.range(2), str(tmp_path / "u"), partitionBy="nope")
    assert "partitionBy" in error_text(exc) and "nope" in error_text(exc)
    with pytest.raises(Exception) as exc:
        write(spark.range(2), path, "overwrite", partitionOverwriteMode="often")
    assert "partitionOverwriteMode" in error_text(exc)


def test_partition_by_reaches_the_source_as_its_option(spark, tmp_path):
    # Spark refuses partitionBy() for Python sources; register()'s front door passes it as the option
    df = spark.range(2).selectExpr("id", "id * 2 AS v")  # a table cannot be partitioned by all of its columns
    df.write.format("pydelta").partitionBy("id").mode("append").save(str(tmp_path / "t"))
    assert Snapshot.load(str(tmp_path / "t")).partition_columns == ["id"]


def test_save_modes_through_the_option(spark, tmp_path):
    path = str(tmp_path / "t")
    write(spark.range(3), path, saveMode="errorifexists")
    with pytest.raises(Exception) as exc:
        write(spark.range(3), path, saveMode="errorifexists")
    assert "already exists" in error_text(exc)
    write(spark.range(5), path, saveMode="ignore")
    assert read(spark, path).count() == 3 and version(path) == 0
    write(spark.range(5), str(tmp_path / "new"), saveMode="ignore")
    assert read(spark, str(tmp_path / "new")).count() == 5


def test_idempotent_writes_with_txn_options(spark, tmp_path):
    path = str(tmp_path / "t")
    for _ in range(2):
        write(spark.range(3), path, txnAppId="etl", txnVersion="7")
    assert read(spark, path).count() == 3
    write(spark.range(3), path, txnAppId="etl", txnVersion="8", userMetadata="run 8")
    assert read(spark, path).count() == 6
    info = [json.loads(line) for line in open(os.path.join(path, "_delta_log", f"{1:020d}.json"))][0]["commitInfo"]
    assert info["userMetadata"] == "run 8"


def test_check_constraint_violations_leave_the_table_unchanged(spark, tmp_path):
    path = str(tmp_path / "t")
    write(
        spark.range(1, 3).selectExpr("id", "'a' s"), path, **{"delta.constraints.positive": "id > 0 AND s IS NOT NULL"}
    )
    assert Snapshot.load(path).protocol.min_writer_version == 3
    files_before = {os.path.join(d, f) for d, _, fs in os.walk(path) for f in fs}
    with pytest.raises(Exception) as exc:
        write(spark.range(-1, 3, numPartitions=1).selectExpr("id", "'a' s"), path)
    assert "CHECK constraint positive" in error_text(exc) and "id : -1" in error_text(exc)
    with pytest.raises(Exception) as exc:
        write(spark.range(5, 6).selectExpr("id", "cast(null as string) s"), path)
    assert "CHECK constraint positive" in error_text(exc)
    assert version(path) == 0
    # the failing task deleted what it wrote (a task still running when Spark aborts the job
    # can leave an unreferenced file: never part of the table, VACUUM's job)
    assert {os.path.join(d, f) for d, _, fs in os.walk(path) for f in fs} == files_before
    with pytest.raises(Exception):
        write(spark.range(-1, 3, numPartitions=2).selectExpr("id", "'a' s"), path)
    assert version(path) == 0 and read(spark, path).count() == 2
    write(spark.range(5, 6).selectExpr("id", "'ok' s"), path)
    assert read(spark, path).count() == 3


def test_invariants_not_null_and_generated_columns(spark, tmp_path):
    from pyspark.sql.types import DateType, LongType, StringType, StructField, StructType, TimestampType

    path = str(tmp_path / "t")
    schema = StructType(
        [
            StructField(
                "id", LongType(), metadata={"delta.invariants": json.dumps({"expression": {"expression": "id < 100"}})}
            ),
            StructField("ts", TimestampType()),
            StructField("day", DateType(), metadata={"delta.generationExpression": "CAST(ts AS DATE)"}),
            StructField("tag", StringType(), metadata={"delta.generationExpression": "concat('t', id)"}),
        ]
    )
    write(spark.createDataFrame([(1, dt.datetime(2020, 5, 1, 23, 0), dt.date(2020, 5, 1), "t1")], schema), path)
    p = Snapshot.load(path).protocol
    assert p.min_writer_version == 4
    write(spark.createDataFrame([(2, dt.datetime(2021, 1, 2, 3, 4))], "id long, ts timestamp"), path)
    assert spark_rows(read(spark, path).select("id", "day", "tag")) == [
        (1, dt.date(2020, 5, 1), "t1"),
        (2, dt.date(2021, 1, 2), "t2"),
    ]
    with pytest.raises(Exception) as exc:
        write(
            spark.createDataFrame(
                [(3, dt.datetime(2021, 1, 2), dt.date(2000, 1, 1))], "id long, ts timestamp, day date"
            ),
            path,
        )
    assert "generated column day" in error_text(exc)
    with pytest.raises(Exception) as exc:
        write(spark.createDataFrame([(300, dt.datetime(2021, 1, 2))], "id long, ts timestamp"), path)
    assert "invariant on column id (id < 100)" in error_text(exc)
    assert version(path) == 1
    assert sorted(arrow_rows(deltalake_table(path), ["id", "tag"])) == [(1, "t1"), (2, "t2")]


def test_not_null_columns_of_existing_tables(spark, tmp_path):
    import pyarrow as pa
    from deltalake import write_deltalake

    path = str(tmp_path / "t")
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("s", pa.string())])
    write_deltalake(path, pa.table({"id": [1], "s": ["a"]}, schema=schema))
    with pytest.raises(Exception) as exc:
        write(spark.createDataFrame([(None, "b")], "id long, s string"), path)
    assert "NOT NULL constraint violated for column: id" in error_text(exc)
    write(spark.createDataFrame([(2, None)], "id long, s string"), path)
    assert sorted(arrow_rows(deltalake_table(path), ["id", "s"]), key=repr) == [(1, "a"), (2, None)]


def test_column_mapping_and_table_features_from_options(spark, tmp_path):
    path = str(tmp_path / "t")
    df = spark.range(4).selectExpr("id", "cast(id % 2 as int) `my part`", "concat('v', id) `a value`")
    write(
        df,
        path,
        partitionBy="my part",
        **{
            "delta.columnMapping.mode": "name",
            "delta.enableDeletionVectors": "true",
            "delta.enableChangeDataFeed": "true",
            "delta.enableRowTracking": "true",
        },
    )
    snap = Snapshot.load(path)
    assert {"columnMapping", "deletionVectors", "changeDataFeed", "rowTracking", "domainMetadata"} <= set(
        snap.protocol.writer_features
    )
    write(df, path)
    assert spark_rows(read(spark, path)) == sorted(spark_rows(df) * 2, key=repr)
    assert sorted(arrow_rows(deltalake_table(path), ["id", "my part", "a value"]), key=repr) == sorted(
        (tuple(r) for r in spark_rows(df) * 2), key=repr
    )
    assert all(not d.startswith("my part") for d in os.listdir(path))  # physical names on disk


def test_appending_to_tables_other_writers_made(spark, copy_table, tmp_path):
    path = copy_table("delta-rs/simple_table_with_checkpoint")
    before = read(spark, path)
    expected = sorted(spark_rows(before) + [(100,)], key=repr)
    write(
        spark.range(100, 101).selectExpr(f"cast(id as {before.schema[0].dataType.simpleString()}) {before.columns[0]}"),
        path,
    )
    assert spark_rows(read(spark, path)) == expected
    assert arrow_rows(deltalake_table(path), before.columns) == expected


def test_checkpoint_written_through_spark_reads_back(spark, tmp_path):
    path = str(tmp_path / "t")
    for i in range(11):
        write(
            spark.range(i, i + 1).selectExpr("id", "cast(id % 2 as int) p"),
            path,
            partitionBy="p",
            **({"delta.checkpointInterval": "5"} if i == 0 else {}),
        )
    names = os.listdir(os.path.join(path, "_delta_log"))
    assert {
        "00000000000000000005.checkpoint.parquet",
        "00000000000000000010.checkpoint.parquet",
        "_last_checkpoint",
    } <= set(names)
    expected = sorted([(i, i % 2) for i in range(11)], key=repr)
    assert spark_rows(read(spark, path)) == expected
    assert arrow_rows(deltalake_table(path), ["id", "p"]) == expected


def test_sql_insert_through_a_temporary_view(spark, tmp_path):
    path = str(tmp_path / "t")
    write(spark.range(2).selectExpr("id", "'a' s"), path)
    view = f"CREATE OR REPLACE TEMPORARY VIEW pydelta_insert_view USING pydelta OPTIONS (path '{path}')"
    spark.sql(view)
    assert spark.sql("SELECT count(*) FROM pydelta_insert_view").collect()[0][0] == 2
    spark.sql("INSERT INTO pydelta_insert_view SELECT 5L, 'b'")
    assert spark_rows(read(spark, path)) == [(0, "a"), (1, "a"), (5, "b")]
    # a view reads the version current when it was created (as a DataFrame does); the
    # README says so: re-create it to see later commits
    assert spark.sql("SELECT count(*) FROM pydelta_insert_view").collect()[0][0] == 2
    spark.sql(view)
    assert spark_rows(spark.sql("SELECT * FROM pydelta_insert_view")) == [(0, "a"), (1, "a"), (5, "b")]
    spark.sql("INSERT OVERWRITE pydelta_insert_view SELECT 7L, 'c'")
    assert spark_rows(read(spark, path)) == [(7, "c")]
    assert version(path) == 2
    spark.catalog.dropTempView("pydelta_insert_view")


def test_catalog_tables_are_refused_with_a_pointer_to_views(spark, tmp_path):
    """Spark keeps neither LOCATION nor OPTIONS of catalog tables for Python sources;
    the error says what to do instead (README: Python Data Source API limits)."""
    path = str(tmp_path / "t")
    write(spark.range(3).selectExpr("id"), path)
    spark.sql(f"CREATE TABLE pydelta_catalog_t USING pydelta LOCATION '{path}'")
    try:
        with pytest.raises(Exception, match="CREATE TEMPORARY VIEW"):
            spark.sql("SELECT * FROM pydelta_catalog_t").collect()
    finally:
        spark.sql("DROP TABLE IF EXISTS pydelta_catalog_t")
    assert read(spark, path).count() == 3  # dropping the catalog entry left the table alone


def test_target_file_size_rolls_files(spark, tmp_path):
    path = str(tmp_path / "t")
    df = spark.range(200_000, numPartitions=1).selectExpr("id", "uuid() u")
    write(df, path, targetFileSize="1m")
    adds = [
        json.loads(line)["add"] for line in open(os.path.join(path, "_delta_log", f"{0:020d}.json")) if '"add"' in line
    ]
    assert len(adds) > 2 and sum(json.loads(a["stats"])["numRecords"] for a in adds) == 200_000
    assert read(spark, path).count() == 200_000


def test_written_stats_never_skip_matching_rows(spark, tmp_path):
    path = str(tmp_path / "t")
    rows = [
        (1, dt.datetime(2021, 1, 1, 0, 0, 0, 999999), "b" * 40, float("nan"), decimal.Decimal("1.10")),
        (2, dt.datetime(2020, 1, 1), "a", 1.0, decimal.Decimal("-5.00")),
        (3, None, "b" * 31 + "\U0001f600", float("inf"), None),
    ]
    for r in rows:  # one file each
        write(spark.createDataFrame([r], "id long, ts timestamp, s string, x double, d decimal(10,2)"), path)
    predicates = [
        "ts = timestamp'2021-01-01 00:00:00.999999'",
        "ts > timestamp'2021-01-01 00:00:00.9995'",
        f"s = '{'b' * 40}'",
        f"s > '{'b' * 35}'",
        "s >= 'b'",
        "x > 5",
        "x = 'NaN'",
        "x < 0",
        "d > 1.05",
        "d < -4.99",
        "ts is null",
        "s like 'bbb%'",
    ]
    for pred in predicates:
        skipping = read(spark, path).where(pred).count()
        full = spark.read.format("pydelta").option("filterPushdown", "false").load(path).where(pred).count()
        assert skipping == full, pred
        q = f"SELECT count(*) c FROM t WHERE {pred.replace('timestamp', 'TIMESTAMP')}"
        if "NaN" not in pred and "like" not in pred:
            import pyarrow as pa
            from deltalake import DeltaTable, QueryBuilder

            got = pa.table(QueryBuilder().register("t", DeltaTable(path)).execute(q).read_all()).to_pylist()
            assert got == [{"c": full}], pred


def test_decimal_stats_at_the_edge_of_the_precision_are_values_of_the_type(spark, tmp_path):
    """Bounds of decimals with every digit used are written exactly (10**38-1 stays
    99999999999999999999999999999999999999, not 1E+38) for every precision and scale,
    negative values too, and stay exact when a deletion vector loosens them."""
    from delta_pyds import DeltaTable

    path = str(tmp_path / "t")
    nines = "9" * 38
    cols = {"d38": (38, 0), "d38s": (38, 2), "d38f": (38, 38), "d20": (20, 5), "d5": (5, 2), "d1": (1, 0)}
    df = spark.sql(f"""select * from values
        (0, cast('{nines}' as decimal(38,0)), cast('{nines[:36]}.99' as decimal(38,2)),
            cast('0.{nines}' as decimal(38,38)), cast('999999999999999.99999' as decimal(20,5)),
            cast('999.99' as decimal(5,2)), cast(9 as decimal(1,0))),
        (1, cast('-{nines}' as decimal(38,0)), cast('-{nines[:36]}.99' as decimal(38,2)),
            cast('-0.{nines}' as decimal(38,38)), cast('-999999999999999.99999' as decimal(20,5)),
            cast('-999.99' as decimal(5,2)), cast(-9 as decimal(1,0))),
        (2, cast('12345678901234567890123456789012345678' as decimal(38,0)), cast(0.01 as decimal(38,2)),
            cast(0 as decimal(38,38)), cast(-0.00001 as decimal(20,5)), cast(0 as decimal(5,2)),
            cast(0 as decimal(1,0)))
        as t(id, {", ".join(cols)})""")
    write(df.repartition(1), path, **{"delta.enableDeletionVectors": "true"})
    expected_max = {
        "d38": nines,
        "d38s": nines[:36] + ".99",
        "d38f": "0." + nines,
        "d20": "999999999999999.99999",
        "d5": "999.99",
        "d1": "9",
    }
    expected = {c: ("-" + v, v) for c, v in expected_max.items()}

    def check_stats(tight):
        adds = [
            json.loads(line)["add"]
            for name in sorted(os.listdir(os.path.join(path, "_delta_log")))
            if name.endswith(".json")
            for line in open(os.path.join(path, "_delta_log", name))
            if '"add"' in line
        ]
        stats = adds[-1]["stats"]
        for c, (lo, hi) in expected.items():  # the JSON text itself, digit for digit
            assert f'"{c}":{lo}' in stats and f'"{c}":{hi}' in stats, (c, stats)
        parsed = json.loads(stats, parse_float=decimal.Decimal, parse_int=decimal.Decimal)
        assert parsed.get("tightBounds", True) is tight
        for c, (p, s) in cols.items():
            for bound in (parsed["minValues"][c], parsed["maxValues"][c]):
                digits = bound.as_tuple()
                assert -digits.exponent <= s and len(digits.digits) + digits.exponent <= p - s, (c, bound)
        # deltalake (delta-rs) reads the table and its statistics as values of the types
        from deltalake import DeltaTable as DLTable

        actions = pa.table(DLTable(path).get_add_actions(flatten=True)).to_pydict()
        for c, (lo, hi) in expected.items():
            assert actions[f"min.{c}"] == [decimal.Decimal(lo)], c
            assert actions[f"max.{c}"] == [decimal.Decimal(hi)], c

    check_stats(True)
    DeltaTable.forPath(spark, path).delete("id = 2")  # a deletion vector: bounds kept, loosened
    check_stats(False)
    ours = spark_rows(read(spark, path))
    assert ours == arrow_rows(deltalake_table(path), ["id", *cols])
    assert sorted(r[0] for r in ours) == [0, 1]
    assert spark_rows(read(spark, path).where(f"d38 = {nines}").select("id")) == [(0,)]


def test_session_partition_overwrite_mode_is_never_guessed(spark, tmp_path):
    """Spark passes no session conf to Python data sources, so with
    spark.sql.sources.partitionOverwriteMode=dynamic set on the session an overwrite that
    leaves partitions out is refused (never replaces the whole table); the write option
    decides (it wins over the session conf, as in delta-spark), through the DataFrame API
    and through INSERT OVERWRITE on a temporary view."""
    from deltalake import DeltaTable as DLTable

    path = str(tmp_path / "t")
    cols = ["id", "p"]
    write(spark.range(9).selectExpr("id", "cast(id % 3 as int) p"), path, partitionBy="p")
    original = sorted((i, i % 3) for i in range(9))
    key = "spark.sql.sources.partitionOverwriteMode"
    saved = spark.conf.get(key, None)
    spark.conf.set(key, "dynamic")
    try:

        def rows():
            ours = spark_rows(read(spark, path).select(*cols))
            assert ours == arrow_rows(deltalake_table(path), cols)
            return sorted(ours)

        def data_files():
            return sorted(
                os.path.relpath(os.path.join(d, f), path)
                for d, _, fs in os.walk(path)
                for f in fs
                if f.endswith(".parquet")
            )

        files, v = data_files(), version(path)
        p0 = spark.createDataFrame([(100, 0)], "id long, p int")
        with pytest.raises(Exception, match="partitionOverwriteMode") as err:
            write(p0, path, mode="overwrite")
        assert key in error_text(err) and "leaves out 2 of its 3 partitions" in error_text(err)
        assert rows() == original and data_files() == files and version(path) == v  # unchanged
        # SQL: with the session's dynamic mode Spark itself refuses INSERT OVERWRITE on a
        # Python source (no dynamic overwrite capability), whatever the view's OPTIONS say
        spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW pom_v USING pydelta OPTIONS (path '{path}')")
        with pytest.raises(Exception, match="does not support dynamic overwrite"):
            spark.sql("INSERT OVERWRITE pom_v SELECT 100L, 0")
        assert rows() == original and version(path) == v
        spark.conf.unset(key)  # static: the source is reached, and cannot tell static from dynamic
        with pytest.raises(Exception, match="partitionOverwriteMode"):
            spark.sql("INSERT OVERWRITE pom_v SELECT 100L, 0")
        assert rows() == original and version(path) == v
        spark.conf.set(key, "dynamic")
        # the option decides: dynamic replaces partition 0 only
        write(p0, path, mode="overwrite", partitionOverwriteMode="dynamic")
        expected = sorted([(100, 0)] + [r for r in original if r[1] != 0])
        assert rows() == expected
        assert DLTable(path).history(1)[0]["operationParameters"]["partitionOverwriteMode"] == "DYNAMIC"
        spark.sql(
            f"CREATE OR REPLACE TEMPORARY VIEW pom_d USING pydelta "
            f"OPTIONS (path '{path}', partitionOverwriteMode 'dynamic')"
        )
        spark.conf.unset(key)
        spark.sql("INSERT OVERWRITE pom_d SELECT 101L, 1")
        spark.conf.set(key, "dynamic")
        expected = sorted([(101, 1)] + [r for r in expected if r[1] != 1])
        assert rows() == expected
        # an overwrite writing every partition the table has is the same in both modes
        every = spark.createDataFrame([(200, 0), (201, 1), (202, 2)], "id long, p int")
        write(every, path, mode="overwrite")
        assert rows() == [(200, 0), (201, 1), (202, 2)]
        # static (the option wins over the session's dynamic) replaces the whole table
        write(p0, path, mode="overwrite", partitionOverwriteMode="static")
        assert rows() == [(100, 0)]
    finally:
        if saved is None:
            spark.conf.unset(key)
        else:
            spark.conf.set(key, saved)
