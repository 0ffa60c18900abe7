"""``delta_pyds.write_delta``: the Spark-native writer against the data source writer on the
same data (rows, partition values, statistics, log), read back through ``format("pydelta")``
and ``deltalake``; modes and options, constraints checked by Spark SQL, failed writes leave
nothing, conflicts between plan and commit."""

from __future__ import annotations

import datetime as dt
import decimal
import json
import os

import pyarrow.parquet as pq
import pytest
from helpers import arrow_rows, deltalake_table, spark_rows
from helpers import pydelta_read as read
from helpers import pydelta_write as ds_write
from helpers import table_version as version

from delta_pyds import write_delta
from delta_pyds.errors import ConcurrentModificationError, ConstraintViolationError
from delta_pyds.spark.native.write import commit_files, write_files
from delta_pyds.table.snapshot import Snapshot
from delta_pyds.write.native_files import STAGING_PREFIX
from delta_pyds.write.options import WriteOptions
from delta_pyds.write.plan import plan_write

ALL_TYPES = """select cast(1 as tinyint) b, cast(2 as smallint) s, 3 i, cast(4 as bigint) l,
    cast(1.5 as float) f, 2.5d d, cast(1.25 as decimal(5,2)) dec, cast(7.5 as decimal(15,1)) dmid,
    cast(12345678901234567890.123 as decimal(38,3)) dbig, 'str' str, cast('bin' as binary) bin, true bo,
    date'2020-01-01' dt, timestamp'2020-01-01 01:02:03.456789' ts, timestamp_ntz'2020-01-01 01:02:03' ntz,
    array(1, null) arr, map('a', 1, 'b', null) m, named_struct('x', 1, 'y', named_struct('z', 'q')) st,
    array(named_struct('a', 1)) arrst, map('k', array(1.5d)) marr, repeat('é', 40) longstr
  union all
  select null, null, null, null, cast('nan' as float), cast('-inf' as double), null, null, null, null, null,
    null, null, timestamp'1969-12-31 23:59:59.999999', null, null, null, named_struct('x', null, 'y', null),
    null, null, 'a'"""


def adds(path, v=None):
    """The add actions of commit ``v`` (default: the latest)."""
    v = version(path) if v is None else v
    with open(os.path.join(path, "_delta_log", f"{v:020d}.json")) as fh:
        return [json.loads(line)["add"] for line in fh if '"add"' in line]


def files_on_disk(path):
    return sorted(
        os.path.relpath(os.path.join(d, f), path)
        for d, _, fs in os.walk(path)
        for f in fs
        if "_delta_log" not in d and f.endswith(".parquet")
    )


def assert_same_everywhere(spark, path, df, expected=None):
    expected = spark_rows(df) if expected is None else expected
    assert spark_rows(read(spark, path).select(*df.columns)) == expected
    assert arrow_rows(deltalake_table(path), df.columns) == expected


def test_every_type_round_trips_with_the_data_source_writers_stats(spark, tmp_path):
    native, ds = str(tmp_path / "native"), str(tmp_path / "ds")
    df = spark.sql(ALL_TYPES).coalesce(1)
    write_delta(df, native)
    ds_write(df, ds)
    assert_same_everywhere(spark, native, df)
    [mine], [theirs] = adds(native), adds(ds)
    mine_stats, their_stats = json.loads(mine["stats"]), json.loads(theirs["stats"])
    assert mine_stats["numRecords"] == their_stats["numRecords"] == 2
    assert mine_stats["minValues"] == their_stats["minValues"]
    assert mine_stats["maxValues"] == their_stats["maxValues"]
    # timestamps have stats (INT64 micros, never INT96), truncated to milliseconds
    assert mine_stats["minValues"]["ts"] == "1969-12-31T23:59:59.999Z"
    assert mine_stats["maxValues"]["longstr"] == "é" * 32 + "\ufffd"
    assert "f" not in mine_stats["maxValues"] and mine_stats["maxValues"]["d"] == 2.5  # NaN: no max
    # null counts: every one-leaf column, equal to the DS writer's
    for key, value in mine_stats["nullCount"].items():
        assert their_stats["nullCount"][key] == value, key
    assert set(mine_stats["nullCount"]) >= {"b", "s", "ts", "ntz", "st", "longstr"}
    assert mine_stats["nullCount"]["st"] == {"x": 1, "y": {"z": 1}}
    files = files_on_disk(native)
    assert len(files) == 1 and not os.path.basename(files[0]).startswith(".")
    ts_type = pq.ParquetFile(os.path.join(native, files[0])).schema.column(13).physical_type
    assert ts_type == "INT64"
    assert not any(n.startswith(STAGING_PREFIX) for n in os.listdir(native))  # staging removed
    assert sorted(os.listdir(native)) == sorted(["_delta_log", files[0]])  # no _SUCCESS, no .crc


HOSTILE = ["a/b", "x=y", "p%q", "é€😀", " sp ", "h#a", "q'\"", "a:b", "{[]}^*?\\", "\x01", "\x7f", "", None, "ok"]


def test_hostile_partition_values_match_the_data_source_writer(spark, tmp_path):
    native, ds = str(tmp_path / "native"), str(tmp_path / "ds")
    df = spark.createDataFrame([(i, v) for i, v in enumerate(HOSTILE)], "id long, p string")
    write_delta(df, native, partitionBy="p")
    ds_write(df, ds, partitionBy="p")
    # "" is the null partition (the protocol reads an empty value as null), as the DS writes it
    assert_same_everywhere(spark, native, df, spark_rows(read(spark, ds)))
    assert (11, None) in spark_rows(read(spark, ds))

    def layout(path):
        return sorted((a["partitionValues"]["p"] or "", os.path.dirname(a["path"])) for a in adds(path))

    assert sorted(set(layout(native))) == sorted(set(layout(ds)))
    assert {os.path.dirname(f) for f in files_on_disk(native)} == {os.path.dirname(f) for f in files_on_disk(ds)}
    with pytest.raises(ConstraintViolationError, match="__HIVE_DEFAULT_PARTITION__"):
        write_delta(spark.createDataFrame([(1, "__HIVE_DEFAULT_PARTITION__")], "id long, p string"), native)
    assert version(native) == 0


@pytest.mark.parametrize(
    "ptype,values",
    [
        ("timestamp", [dt.datetime(2024, 3, 10, 7, 30, 0, 123456), dt.datetime(1969, 12, 31, 23, 59, 59), None]),
        ("timestamp_ntz", [dt.datetime(2024, 3, 10, 2, 30, 0, 500000), dt.datetime(2020, 1, 1), None]),
        ("date", [dt.date(2020, 1, 1), dt.date(1999, 12, 31), None]),
        ("decimal(20,10)", [decimal.Decimal("0.0000001"), decimal.Decimal("-3"), None]),
        ("boolean", [True, False, None]),
        ("binary", [b"a\xffb", b"", None]),
        ("bigint", [2**40, -1, None]),
        ("double", [1.5, -0.25, None]),
    ],
)
def test_partition_values_of_each_type_in_a_non_utc_session(spark, tmp_path, ptype, values):
    """Partition values come from the data, serialized as the log stores them, whatever
    the session time zone (2024-03-10 02:30 does not exist in New York)."""
    native, ds = str(tmp_path / "native"), str(tmp_path / "ds")
    df = spark.createDataFrame([(i, v) for i, v in enumerate(values)], f"id long, p {ptype}")
    ds_write(df, ds, partitionBy="p")
    spark.conf.set("spark.sql.session.timeZone", "America/New_York")
    try:
        write_delta(df, native, partitionBy="p")
    finally:
        spark.conf.set("spark.sql.session.timeZone", "UTC")
    assert_same_everywhere(spark, native, df, spark_rows(read(spark, ds)))
    mine = sorted((a["partitionValues"]["p"] for a in adds(native)), key=repr)
    theirs = sorted((a["partitionValues"]["p"] for a in adds(ds)), key=repr)
    if ptype == "double":  # Java's number format, as delta-spark writes it; the same values
        assert [None if v is None else float(v) for v in mine] == [None if v is None else float(v) for v in theirs]
    elif ptype == "binary":  # an empty value is null in the log (both read back as null)
        assert sorted(set(mine), key=repr) == sorted({v or None for v in theirs}, key=repr)
    else:
        assert mine == theirs


def test_modes_and_options_match_the_data_source_writer(spark, tmp_path):
    native, ds = str(tmp_path / "native"), str(tmp_path / "ds")
    base = spark.range(12).selectExpr("id", "cast(id % 3 as int) p")
    steps = [
        (base, "append", {"partitionBy": "p"}),
        (base.where("p = 0"), "append", {}),
        (spark.range(100, 102).selectExpr("id", "1 p"), "overwrite", {"replaceWhere": "p = 1"}),
        (spark.range(200, 201).selectExpr("id", "2 p"), "overwrite", {"partitionOverwriteMode": "dynamic"}),
        (spark.range(2, 4).selectExpr("id", "0 p"), "overwrite", {"replaceWhere": "id >= 2 and id < 4"}),
        (spark.range(1).selectExpr("id", "0 p", "'new' extra"), "append", {"mergeSchema": "true"}),
        (base.where("p = 2"), "append", {"txnAppId": "etl", "txnVersion": "3"}),
        (base.where("p = 2"), "append", {"txnAppId": "etl", "txnVersion": "3"}),  # already committed
    ]
    for df, mode, options in steps:
        pb = options.pop("partitionBy", None)
        write_delta(df, native, mode=mode, partitionBy=pb, **options)
        ds_write(df, ds, mode, **({"partitionBy": pb} if pb else {}), **options)
        assert spark_rows(read(spark, native)) == spark_rows(read(spark, ds))
        assert version(native) == version(ds)
    assert sorted(arrow_rows(deltalake_table(native), ["id", "p", "extra"]), key=repr) == spark_rows(
        read(spark, ds).select("id", "p", "extra")
    )
    # the session's partitionOverwriteMode applies when no option says
    spark.conf.set("spark.sql.sources.partitionOverwriteMode", "dynamic")
    try:
        write_delta(spark.range(500, 501).selectExpr("id", "1 p"), native, mode="overwrite")
    finally:
        spark.conf.unset("spark.sql.sources.partitionOverwriteMode")
    assert read(spark, native).where("p = 1").count() == 1 and read(spark, native).where("p <> 1").count() > 1
    write_delta(spark.range(2).selectExpr("'x' name"), native, mode="overwrite", overwriteSchema=True)
    assert read(spark, native).columns == ["name"] and Snapshot.load(native).partition_columns == []
    assert_same_everywhere(spark, native, spark.range(2).selectExpr("'x' name"))


def test_save_modes_and_bad_options(spark, tmp_path):
    path = str(tmp_path / "t")
    write_delta(spark.range(3), path, mode="error")
    with pytest.raises(Exception, match="already exists"):
        write_delta(spark.range(3), path, mode="errorifexists")
    assert write_delta(spark.range(5), path, mode="ignore") is None
    assert read(spark, path).count() == 3 and version(path) == 0
    with pytest.raises(ValueError, match="mode: expected"):
        write_delta(spark.range(1), path, mode="upsert")
    with pytest.raises(ValueError, match="targetFileSize"):
        write_delta(spark.range(1), path, targetFileSize="1m")
    with pytest.raises(TypeError, match="partitionBy"):
        write_delta(spark.range(1), str(tmp_path / "u"), partitionBy=[1])
    odd = str(tmp_path / "a dir é")  # a location Spark and fsspec must both spell right
    write_delta(spark.range(10).repartition(1), odd, maxRecordsPerFile=3, compression="zstd")
    assert_same_everywhere(spark, odd, spark.range(10))
    files = adds(odd)
    percent = str(tmp_path / "p%41q")  # Spark must not decode %41 (deltalake does: not used here)
    write_delta(spark.range(3), percent)
    assert spark_rows(read(spark, percent)) == [(0,), (1,), (2,)] and os.listdir(str(tmp_path / "p%41q"))
    assert len(files) == 4 and all(".zstd." in a["path"] for a in files)


def test_rule_violations_leave_no_file_and_no_commit(spark, tmp_path):
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
    first = spark.createDataFrame([(1, dt.datetime(2020, 5, 1, 23, 0), dt.date(2020, 5, 1), "t1")], schema)
    write_delta(first, path, **{"delta.constraints.small": "id < 50"})
    write_delta(spark.createDataFrame([(2, dt.datetime(2021, 1, 2, 3, 4))], "id long, ts timestamp"), path)
    expected = [(1, dt.date(2020, 5, 1), "t1"), (2, dt.date(2021, 1, 2), "t2")]
    assert spark_rows(read(spark, path).select("id", "day", "tag")) == expected
    assert sorted(arrow_rows(deltalake_table(path), ["id", "day", "tag"])) == expected
    before = files_on_disk(path)
    bad = [
        (
            spark.createDataFrame(
                [(3, dt.datetime(2021, 1, 2), dt.date(2000, 1, 1))], "id long, ts timestamp, d date"
            ).withColumnRenamed("d", "day"),
            r"generated column day must equal CAST\(ts AS DATE\), but a row has day = 2000-01-01",
        ),
        (spark.createDataFrame([(300, dt.datetime(2021, 1, 2))], "id long, ts timestamp"), "invariant on column id"),
        (spark.range(40, 60, numPartitions=2).selectExpr("id", "timestamp'2020-01-01' ts"), "CHECK constraint small"),
    ]
    for df, message in bad:
        with pytest.raises(ConstraintViolationError, match=message):
            write_delta(df, path)
        assert version(path) == 1 and files_on_disk(path) == before
        assert [n for n in os.listdir(path) if n.startswith("_") and n != "_delta_log"] == []
    message = r"CHECK constraint small \(id < 50\) violated by row with values:\n - id : 55"
    with pytest.raises(ConstraintViolationError, match=message):
        write_delta(spark.range(55, 56).selectExpr("id", "timestamp'2020-01-01' ts"), path)


def test_not_null_and_replace_where_rows(spark, tmp_path):
    import pyarrow as pa
    from deltalake import write_deltalake

    path = str(tmp_path / "t")
    schema = pa.schema(
        [pa.field("id", pa.int64(), nullable=False), pa.field("p", pa.int32()), pa.field("s", pa.string())]
    )
    write_deltalake(path, pa.table({"id": [1, 2], "p": [0, 1], "s": ["a", "b"]}, schema=schema), partition_by=["p"])

    def row(*values):
        return spark.createDataFrame([values], "id long, p int, s string")

    with pytest.raises(ConstraintViolationError, match="NOT NULL constraint violated for column: id"):
        write_delta(row(None, 0, "b"), path)
    with pytest.raises(ConstraintViolationError, match=r"replaceWhere predicate \(p = 1\)(.|\n)* - p : 0"):
        write_delta(row(3, 0, "c"), path, mode="overwrite", replaceWhere="p = 1")
    assert version(path) == 0
    write_delta(row(3, 1, None), path, mode="overwrite", replaceWhere="p = 1")
    assert sorted(arrow_rows(deltalake_table(path), ["id", "p", "s"]), key=repr) == [(1, 0, "a"), (3, 1, None)]


def test_column_mapping_physical_names_field_ids_and_nested_structs(spark, tmp_path):
    path = str(tmp_path / "t")
    df = spark.range(4).selectExpr(
        "id", "cast(id % 2 as int) `my part`", "named_struct('a b', id, 'c', named_struct('d', 'x')) st"
    )
    write_delta(df, path, partitionBy="my part", **{"delta.columnMapping.mode": "id"})
    assert_same_everywhere(spark, path, df)
    # a nested struct in another order with a missing field: matched by name
    more = spark.range(1).selectExpr("10 id", "1 `my part`", "named_struct('c', named_struct('d', 'y')) st")
    write_delta(more, path)
    got = spark_rows(read(spark, path).where("id = 10").select("st"))
    assert got == [(((("a b", None), ("c", (("d", "y"),)))),)]
    snap = Snapshot.load(path)
    fields = {f.name: f for f in snap.schema.fields}
    assert all(not d.startswith("my part") for d in os.listdir(path))
    a = adds(path, 0)[0]
    pf = pq.ParquetFile(os.path.join(path, a["path"]))
    arrow = pf.schema_arrow
    phys_id = fields["id"].physical_name("id")
    assert arrow.names == [phys_id, fields["st"].physical_name("id")]
    assert int(arrow.field(phys_id).metadata[b"PARQUET:field_id"]) == fields["id"].field_id
    st = arrow.field(fields["st"].physical_name("id")).type
    nested = {f.name: f for f in fields["st"].type.fields}
    assert st.field(0).name == nested["a b"].physical_name("id")
    assert int(st.field(0).metadata[b"PARQUET:field_id"]) == nested["a b"].field_id
    stats = json.loads(a["stats"])
    assert phys_id in stats["minValues"] and list(a["partitionValues"]) == [fields["my part"].physical_name("id")]


def _identity_log(path, *, start, step, hwm=None, type_name="long"):
    meta = {"delta.identity.start": start, "delta.identity.step": step, "delta.identity.allowExplicitInsert": False}
    if hwm is not None:
        meta["delta.identity.highWaterMark"] = hwm
    schema = {
        "type": "struct",
        "fields": [
            {"name": "id", "type": type_name, "nullable": False, "metadata": meta},
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


def _hwm(path):
    f = Snapshot.load(path).schema.fields[0]
    return f.metadata.get("delta.identity.highWaterMark")


@pytest.mark.parametrize("step", [3, -2])
def test_identity_columns_are_generated_by_spark(spark, tmp_path, step):
    path = str(tmp_path / "t")
    _identity_log(path, start=10, step=step, hwm=10 + 5 * step)
    df = spark.createDataFrame([(f"v{i}",) for i in range(7)], "v string").repartition(3)
    write_delta(df, path)
    ids = [r["id"] for r in read(spark, path).collect()]
    assert len(set(ids)) == 7
    assert all((i - 10) % abs(step) == 0 and (i - 10) // step > 5 for i in ids)
    assert _hwm(path) == (max(ids) if step > 0 else min(ids))
    assert sorted(r[0] for r in arrow_rows(deltalake_table(path), ["id"])) == sorted(ids)
    with pytest.raises(ValueError, match="allowExplicitInsert=false"):
        write_delta(spark.createDataFrame([(1, "x")], "id long, v string"), path)


def test_identity_values_that_overflow_the_column_type_fail_the_write(spark, tmp_path):
    path = str(tmp_path / "t")
    _identity_log(path, start=2**31 - 11, step=5, type_name="integer")
    write_delta(spark.createDataFrame([("a",), ("b",)], "v string").coalesce(1), path)
    assert sorted(r["id"] for r in read(spark, path).collect()) == [2**31 - 11, 2**31 - 6]
    with pytest.raises(ConstraintViolationError, match="identity column id overflows its type integer"):
        write_delta(spark.createDataFrame([("c",), ("d",)], "v string").coalesce(1), path)
    assert version(path) == 1 and len(files_on_disk(path)) == 1


def test_row_tracking_in_commit_timestamps_clustering_and_checkpoints(spark, tmp_path):
    path = str(tmp_path / "t")
    df = spark.range(6).selectExpr("id", "cast(id % 3 as string) k")
    props = {
        "delta.enableRowTracking": "true",
        "delta.enableInCommitTimestamps": "true",
        "delta.checkpointInterval": "2",
        "delta.enableDeletionVectors": "true",
    }
    write_delta(df, path, clusterBy="k", **props)
    write_delta(df, path)
    write_delta(df, path)
    snap = Snapshot.load(path)
    assert {"rowTracking", "inCommitTimestamp", "clustering", "domainMetadata"} <= set(snap.protocol.writer_features)
    base = sorted((a["baseRowId"], json.loads(a["stats"])["numRecords"]) for v in (0, 1) for a in adds(path, v))
    assert base[0][0] == 0 and all(b[0] + b[1] <= c[0] for b, c in zip(base, base[1:]))
    with open(os.path.join(path, "_delta_log", f"{1:020d}.json")) as fh:
        info = json.loads(fh.readline())["commitInfo"]
    assert "inCommitTimestamp" in info
    assert os.path.exists(os.path.join(path, "_delta_log", f"{2:020d}.checkpoint.parquet"))
    assert all("k" in json.loads(a["stats"])["minValues"] for a in adds(path, 1))
    assert all(json.loads(a["stats"])["tightBounds"] is True for a in adds(path, 1))
    assert_same_everywhere(spark, path, df.union(df).union(df))


def test_variants_are_written_unshredded_and_read_back(spark, tmp_path):
    path = str(tmp_path / "t")
    df = spark.sql("""select id, parse_json('{"a": ' || id || ', "b": [true]}') v from range(3)""")
    write_delta(df, path)
    assert "variantType" in Snapshot.load(path).protocol.reader_features
    assert spark_rows(read(spark, path).selectExpr("id", "to_json(v)")) == spark_rows(df.selectExpr("id", "to_json(v)"))
    for a in adds(path):
        names = pq.ParquetFile(os.path.join(path, a["path"])).schema_arrow.field("v").type
        assert sorted(names.field(i).name for i in range(names.num_fields)) == ["metadata", "value"]
    # the session setting is restored
    assert spark.conf.get("spark.sql.variant.writeShredding.enabled", None) in (None, "true")


def test_concurrent_commit_between_plan_and_commit(spark, tmp_path):
    from delta_pyds.protocol.schema_evolution import from_spark_json

    path = str(tmp_path / "t")
    write_delta(spark.range(4).selectExpr("id", "cast(id % 2 as int) p"), path, partitionBy="p")

    def planned_and_written(df, overwrite, **options):
        opts = WriteOptions.parse({"path": path, **options}, overwrite=overwrite)
        plan = plan_write(opts, from_spark_json(df.schema.jsonValue()))
        return plan, write_files(df, plan.spec)

    # append vs a concurrent append: no conflict, rebased and retried
    plan, files = planned_and_written(spark.range(10, 12).selectExpr("id", "0 p"), False)
    ds_write(spark.range(20, 21).selectExpr("id", "1 p"), path)
    result = commit_files(plan, files)
    assert result.version == 2 and result.attempts == 2
    assert read(spark, path).count() == 7
    # overwrite of partition 0 vs a concurrent overwrite of it (the files it read are gone):
    # conflict, and nothing of this write is left
    before = set(files_on_disk(path))
    plan, files = planned_and_written(spark.range(30, 31).selectExpr("id", "0 p"), True, replaceWhere="p = 0")
    mine = {a["path"] for a in files.adds}
    assert mine and mine <= set(files_on_disk(path))  # in place, not committed
    ds_write(spark.range(40, 41).selectExpr("id", "0 p"), path, "overwrite", replaceWhere="p = 0")
    added = set(files_on_disk(path)) - before - mine
    assert added
    with pytest.raises(ConcurrentModificationError):
        commit_files(plan, files)
    assert version(path) == 3 and set(files_on_disk(path)) == before | added
    assert [n for n in os.listdir(path) if n.startswith(STAGING_PREFIX)] == []
    assert arrow_rows(deltalake_table(path), ["id"]) == spark_rows(read(spark, path).select("id"))


def test_write_files_rewrites_a_table_without_data_change(spark, tmp_path):
    """The building block for DML/OPTIMIZE rewrites: rows of the table written again
    (identity values kept), committed with the removes of the old files."""
    from delta_pyds.protocol.schema_evolution import from_spark_json
    from delta_pyds.table.state import file_actions
    from delta_pyds.transaction.commit import Transaction
    from delta_pyds.transaction.file_actions import remove_actions

    path = str(tmp_path / "t")
    df = spark.range(20, numPartitions=4).selectExpr("id", "cast(id % 2 as int) p", "named_struct('a', id) st")
    write_delta(df, path, partitionBy="p", **{"delta.columnMapping.mode": "name"})
    snap = Snapshot.load(path)
    assert snap.num_files == 8
    rows = read(spark, path)
    plan = plan_write(
        WriteOptions.parse({"path": path}, overwrite=False),
        from_spark_json(rows.schema.jsonValue()),
        keep_identity_values=True,
    )
    files = write_files(rows.coalesce(1), plan.spec, data_change=False)
    assert len(files.adds) == 2 and all(a["dataChange"] is False for a in files.adds)
    txn = Transaction(snap.storage, snap)
    txn.remove_files(remove_actions(file_actions(snap).active, data_change=False))
    txn.add_files(files.adds)
    txn.commit("OPTIMIZE", {})
    assert Snapshot.load(path).num_files == 2
    assert_same_everywhere(spark, path, df)


def test_materialized_partition_columns_are_written_into_the_files(spark, tmp_path):
    """A table with materializePartitionColumns: Spark writes the partition column into
    the files too (it partitions by a stand-in column), the files sit in Delta's
    partition directories, and the rows read back the same everywhere."""
    path = str(tmp_path / "t")
    df = spark.range(6).selectExpr("id", "id % 2 p")
    write_delta(df, path, partitionBy="p", **{"delta.feature.materializePartitionColumns": "supported"})
    snap = Snapshot.load(path)
    assert "materializePartitionColumns" in (snap.protocol.writer_features or [])
    for rel in snap.files.column("path").to_pylist():
        data = pq.read_table(os.path.join(path, rel))
        assert rel.startswith("p=") and data.column_names == ["id", "p"]
        assert set(data.column("p").to_pylist()) == {int(rel.split("/")[0][2:])}
    assert not [n for n in os.listdir(path) if n.startswith("_pydelta_staging")]
    assert_same_everywhere(spark, path, df)


def test_defaults_generated_columns_and_empty_writes(spark, tmp_path):
    path = str(tmp_path / "t")
    os.makedirs(os.path.join(path, "_delta_log"))
    schema = {
        "type": "struct",
        "fields": [
            {"name": "id", "type": "long", "nullable": True, "metadata": {}},
            {"name": "n", "type": "integer", "nullable": True, "metadata": {"CURRENT_DEFAULT": "42"}},
            {"name": "s", "type": "string", "nullable": True, "metadata": {"CURRENT_DEFAULT": "'a' || 'bc'"}},
            {"name": "g", "type": "integer", "nullable": True, "metadata": {"delta.generationExpression": "n + 1"}},
            {"name": "u", "type": "string", "nullable": True, "metadata": {"CURRENT_DEFAULT": "uuid()"}},
        ],
    }
    protocol = {
        "minReaderVersion": 1,
        "minWriterVersion": 7,
        "writerFeatures": ["allowColumnDefaults", "generatedColumns", "checkConstraints"],
    }
    metadata = {
        "id": "t",
        "format": {"provider": "parquet", "options": {}},
        "schemaString": json.dumps(schema),
        "partitionColumns": [],
        "configuration": {"delta.constraints.starts": "s rlike '^a' or s is null"},
        "createdTime": 1,
    }
    with open(os.path.join(path, "_delta_log", f"{0:020d}.json"), "w") as out:
        out.write(json.dumps({"protocol": protocol}) + "\n" + json.dumps({"metaData": metadata}) + "\n")
    # rlike and uuid() are outside the data source writer's evaluator; Spark SQL evaluates them
    with pytest.raises(Exception, match="cannot be evaluated by delta_pyds"):
        ds_write(spark.range(1, 3), path)
    write_delta(spark.range(1, 3), path)
    write_delta(spark.createDataFrame([(3, 7, None, "x")], "id long, n int, s string, u string"), path)
    with pytest.raises(ConstraintViolationError, match=r"CHECK constraint starts (.|\n)* - s : zzz"):
        write_delta(spark.createDataFrame([(4, "zzz")], "id long, s string"), path)
    uuids = [r["u"] for r in read(spark, path).where("id < 3").collect()]
    assert len(set(uuids)) == 2 and all(len(u) == 36 for u in uuids)
    expected = [(1, 42, "abc", 43), (2, 42, "abc", 43), (3, 7, None, 8)]
    assert spark_rows(read(spark, path).select("id", "n", "s", "g")) == expected
    assert arrow_rows(deltalake_table(path), ["id", "n", "s", "g"]) == expected
    # an empty append commits no file; an empty overwrite removes every file
    write_delta(spark.range(0), path)
    assert version(path) == 3 and adds(path) == [] and read(spark, path).count() == 3
    write_delta(spark.range(0), path, mode="overwrite")
    assert version(path) == 4 and read(spark, path).count() == 0 and deltalake_table(path).num_rows == 0
    new = str(tmp_path / "new")
    write_delta(spark.range(0).selectExpr("id", "'x' s"), new, partitionBy="s")
    assert Snapshot.load(new).partition_columns == ["s"] and read(spark, new).columns == ["id", "s"]


def test_first_write_to_a_plain_parquet_folder_is_refused_and_points_to_convert(spark, tmp_path):
    # issue 24 item 11: an append used to create a table beside the files (only the new rows
    # visible, the old files vacuumed later)
    from delta_pyds import read_delta
    from delta_pyds.errors import TableExistsError
    from delta_pyds.spark.tables.delta_table import DeltaTable

    path = str(tmp_path / "plain")
    spark.range(4).selectExpr("id", "id * 2 AS v").write.parquet(path)
    before = sorted(os.listdir(path))
    new = spark.range(10, 12).selectExpr("id", "id * 2 AS v")
    for mode in ("append", "errorifexists", "ignore"):
        with pytest.raises(Exception) as exc:
            ds_write(new, path, saveMode=mode)  # the data source takes these as an option
        assert "convertToDelta" in str(exc.value), mode
        with pytest.raises(TableExistsError, match="convertToDelta"):
            write_delta(new, path, mode=mode)
    assert sorted(os.listdir(path)) == before  # nothing written, no _delta_log
    DeltaTable.convertToDelta(spark, f"parquet.`{path}`")
    write_delta(new, path, mode="append")
    ds_write(new, path, mode="append")
    assert sorted(r.id for r in read(spark, path).collect()) == [0, 1, 2, 3, 10, 10, 11, 11]
    assert spark_rows(read(spark, path)) == spark_rows(read_delta(spark, path))
    # an overwrite replaces them, as asked; an empty directory is fine
    other = str(tmp_path / "plain2")
    spark.range(3).write.parquet(other)
    write_delta(new, other, mode="overwrite")
    assert sorted(r.id for r in read(spark, other).collect()) == [10, 11]
    os.makedirs(str(tmp_path / "empty"))
    ds_write(new, str(tmp_path / "empty"), mode="append")
    assert read(spark, str(tmp_path / "empty")).count() == 2
