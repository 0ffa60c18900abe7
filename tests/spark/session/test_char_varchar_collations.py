"""CHAR(n) / VARCHAR(n) columns and collated strings, differentially against Spark's own
tables: a Spark parquet table declared with the same columns and holding the same rows is
the oracle for every query (padding, case-insensitive equality, lengths, DELETE counts,
over-long values refused with EXCEED_LIMIT_LENGTH), on every read path (``read_delta``,
``format("pydelta")``, ``delta_pyds.sql``) and write path."""

from __future__ import annotations

import json
import os
import uuid

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from helpers import deltalake_table, log_actions

import delta_pyds
from delta_pyds import read_delta, write_delta

# the schema delta-spark writes for (id INT, c CHAR(5), v VARCHAR(3), s STRING COLLATE UTF8_LCASE)
SCHEMA = {
    "type": "struct",
    "fields": [
        {"name": "id", "type": "integer", "nullable": True, "metadata": {}},
        {"name": "c", "type": "string", "nullable": True, "metadata": {"__CHAR_VARCHAR_TYPE_STRING": "char(5)"}},
        {"name": "v", "type": "string", "nullable": True, "metadata": {"__CHAR_VARCHAR_TYPE_STRING": "varchar(3)"}},
        {"name": "s", "type": "string", "nullable": True, "metadata": {"__COLLATIONS": {"s": "spark.UTF8_LCASE"}}},
    ],
}
ROWS = [(1, "ab", "abc", "abc"), (2, "x", "a", "ABC"), (3, None, None, "Abc"), (4, "ab", "ab", "x")]
QUERIES = [
    "c = 'ab'",
    "c = 'ab   '",
    "c < 'b'",
    "s = 'ABC'",
    "s < 'B'",
    "v = 'a'",
    "length(c) = 5",
    "c IN ('x', 'q')",
]


def _file(path, rows):
    name = f"part-00000-{uuid.uuid4()}-c000.snappy.parquet"
    cols = list(zip(*rows, strict=True))
    table = pa.table({"id": pa.array(cols[0], pa.int32()), "c": list(cols[1]), "v": list(cols[2]), "s": list(cols[3])})
    pq.write_table(table, os.path.join(path, name))
    stats = {"numRecords": len(rows), "nullCount": {"id": 0, "c": sum(r[1] is None for r in rows)}}
    size = os.path.getsize(os.path.join(path, name))
    return {"add": {"path": name, "partitionValues": {}, "size": size, "modificationTime": 1, "dataChange": True,
                    "stats": json.dumps(stats)}}  # fmt: skip


def delta_spark_table(path):
    """The table delta-spark leaves: a CREATE TABLE (the log of the golden table
    ``collations-table``: writer-only ``collations``) and two files, one written by SQL INSERT
    (CHAR values stored padded), one by a DataFrame append (stored as given)."""
    os.makedirs(os.path.join(path, "_delta_log"))
    padded = [(i, c.ljust(5) if c is not None else None, v, s) for i, c, v, s in ROWS[:3]]
    actions = [
        {"commitInfo": {"timestamp": 1, "operation": "CREATE TABLE"}},
        {"protocol": {"minReaderVersion": 1, "minWriterVersion": 7,
                      "writerFeatures": ["domainMetadata", "collations", "appendOnly", "invariants"]}},
        {"metaData": {"id": str(uuid.uuid4()), "format": {"provider": "parquet", "options": {}},
                      "schemaString": json.dumps(SCHEMA), "partitionColumns": [], "configuration": {},
                      "createdTime": 1}},
        _file(path, padded),
        _file(path, ROWS[3:]),
    ]  # fmt: skip
    with open(os.path.join(path, "_delta_log", f"{0:020d}.json"), "w") as f:
        f.writelines(json.dumps(a) + "\n" for a in actions)


@pytest.fixture
def oracle(spark):
    """Spark's own parquet table with the same declared columns and rows."""
    name = f"oracle_{uuid.uuid4().hex[:8]}"
    spark.sql(f"CREATE TABLE {name} (id INT, c CHAR(5), v VARCHAR(3), s STRING COLLATE UTF8_LCASE) USING parquet")
    spark.createDataFrame(ROWS, "id int, c string, v string, s string").write.insertInto(name)
    yield name
    spark.sql(f"DROP TABLE {name}")


def _ids(df, where):
    return sorted(r.id for r in df.where(where).collect())


def _rows(df):
    return sorted((r.id, r.c, r.v, r.s) for r in df.collect())


def test_every_read_path_reads_char_varchar_and_collations_as_spark(spark, tmp_path, oracle):
    path = str(tmp_path / "t")
    delta_spark_table(path)
    delta_pyds.register(spark)
    expected = spark.table(oracle)
    readers = {
        "read_delta": read_delta(spark, path),
        "pydelta": spark.read.format("pydelta").load(path),
        "sql": delta_pyds.sql(spark, f"SELECT * FROM delta.`{path}`"),
    }
    for name, df in readers.items():
        assert df.schema == expected.schema, name  # string + char metadata, StringType('UTF8_LCASE')
        assert _rows(df) == _rows(expected), name  # CHAR values padded on read, wherever stored
        for q in QUERIES:
            assert _ids(df, q) == _ids(expected, q), (name, q)
    for q in QUERIES:  # pruning with the condition keeps every file that can match
        assert _ids(read_delta(spark, path, where=q), q) == _ids(expected, q), q
        sql = f"SELECT id FROM delta.`{path}` WHERE {q}"
        assert sorted(r.id for r in delta_pyds.sql(spark, sql).collect()) == _ids(expected, q), q


def test_delete_where_pads_the_literal_as_spark(spark, tmp_path, oracle):
    path = str(tmp_path / "t")
    delta_spark_table(path)
    want = spark.table(oracle).where("c = 'ab'").count()
    assert want == 2
    out = delta_pyds.sql(spark, f"DELETE FROM delta.`{path}` WHERE c = 'ab'").collect()
    assert out[0][0] == want
    assert _ids(read_delta(spark, path), "true") == [2, 3]
    out = delta_pyds.sql(spark, f"DELETE FROM delta.`{path}` WHERE s = 'ABC'").collect()
    assert out[0][0] == 2  # 'ABC' and 'Abc' (ids 2, 3), case-insensitively
    assert _ids(read_delta(spark, path), "true") == []


def _spark_error(spark, statement):
    with pytest.raises(Exception) as info:
        spark.sql(statement).collect()
    return str(info.value)


def test_sql_create_keeps_declared_types_and_inserts_check_them_as_spark(spark, tmp_path, oracle):
    path = str(tmp_path / "t")
    delta_pyds.sql(
        spark, f"CREATE TABLE delta.`{path}` (id INT, c CHAR(5), v VARCHAR(3), s STRING COLLATE UTF8_LCASE) USING delta"
    )
    meta = next(a["metaData"] for a in log_actions(path, 0) if "metaData" in a)
    assert json.loads(meta["schemaString"]) == SCHEMA  # as delta-spark writes it
    proto = next(a["protocol"] for a in log_actions(path, 0) if "protocol" in a)
    assert {"collations", "domainMetadata"} <= set(proto["writerFeatures"])
    assert "readerFeatures" not in proto or "collations" not in proto["readerFeatures"]
    for bad in ("(9, 'a', 'abcdef', 'x')", "(9, 'abcdefg', 'a', 'x')"):
        assert "EXCEED_LIMIT_LENGTH" in _spark_error(spark, f"INSERT INTO {oracle} VALUES {bad}")
        with pytest.raises(Exception, match="EXCEED_LIMIT_LENGTH"):
            delta_pyds.sql(spark, f"INSERT INTO delta.`{path}` VALUES {bad}")
    assert not os.path.exists(os.path.join(path, "_delta_log", f"{1:020d}.json"))
    # trailing spaces beyond the length are dropped, CHAR values padded: as Spark stores them
    values = "(5, 'ab', 'ab    ', 'Q'), (6, 'abcde  ', 'a', 'q')"
    spark.sql(f"INSERT INTO {oracle} VALUES {values}")
    delta_pyds.sql(spark, f"INSERT INTO delta.`{path}` VALUES {values}")
    expected = spark.table(oracle).where("id >= 5")
    assert _rows(read_delta(spark, path)) == _rows(expected)
    stored = [r for name in _added(path, 1) for r in pq.read_table(os.path.join(path, name)).to_pylist()]
    assert sorted((r["c"], r["v"]) for r in stored) == [("ab   ", "ab "), ("abcde", "a")]
    assert _rows(spark.read.format("pydelta").load(path)) == _rows(expected)
    got = sorted(deltalake_table(path).to_pylist(), key=lambda r: r["id"])  # string_view: no arrow take
    assert [(r["c"], r["v"], r["s"]) for r in got] == [("ab   ", "ab ", "Q"), ("abcde", "a", "q")]
    assert _ids(read_delta(spark, path), "s = 'q'") == [5, 6]


def _added(path, version):
    return [a["add"]["path"] for a in log_actions(path, version) if "add" in a]


@pytest.mark.parametrize("how", ["write_delta", "pydelta"])
def test_dataframe_writes_check_and_pad_declared_columns(spark, tmp_path, how):
    path = str(tmp_path / "t")
    delta_spark_table(path)

    def write(df):
        if how == "write_delta":
            write_delta(df, path, mode="append")
        else:
            df.write.format("pydelta").mode("append").save(path)

    schema = "id int, c string, v string, s string"
    for bad in [(9, "a", "abcd", "x"), (9, "abcdef", "a", "x")]:
        with pytest.raises(Exception, match="EXCEED_LIMIT_LENGTH"):
            write(spark.createDataFrame([bad], schema))
    assert not os.path.exists(os.path.join(path, "_delta_log", f"{1:020d}.json"))
    write(spark.createDataFrame([(7, "q", "xy  ", "Z")], schema))
    stored = pq.read_table(os.path.join(path, _added(path, 1)[0])).to_pylist()
    assert [(r["c"], r["v"]) for r in stored] == [("q    ", "xy ")]
    assert json.loads(next(a["metaData"] for a in log_actions(path, 0) if "metaData" in a)["schemaString"]) == SCHEMA
    assert _ids(read_delta(spark, path), "c = 'q' AND s = 'z'") == [7]


def test_update_and_merge_check_declared_columns(spark, tmp_path):
    path = str(tmp_path / "t")
    delta_spark_table(path)
    with pytest.raises(Exception, match="EXCEED_LIMIT_LENGTH"):
        delta_pyds.sql(spark, f"UPDATE delta.`{path}` SET v = 'abcd' WHERE id = 2")
    delta_pyds.sql(spark, f"UPDATE delta.`{path}` SET c = 'z' WHERE c = 'x'")
    assert [(r.id, r.c) for r in read_delta(spark, path).where("c = 'z'").collect()] == [(2, "z    ")]
    spark.createDataFrame([(4, "long value")], "id int, c string").createOrReplaceTempView("char_src")
    merge = f"MERGE INTO delta.`{path}` t USING char_src s ON t.id = s.id WHEN MATCHED THEN UPDATE SET c = s.c"
    with pytest.raises(Exception, match="EXCEED_LIMIT_LENGTH"):
        delta_pyds.sql(spark, merge)
    assert _ids(read_delta(spark, path), "c = 'ab'") == [1, 4]


@pytest.mark.parametrize("how", ["write_delta", "pydelta"])
def test_collated_strings_are_written_with_the_collations_feature(spark, tmp_path, how):
    path = str(tmp_path / "t")
    df = spark.sql("SELECT id, collate(CAST(id AS STRING) || 'a', 'UTF8_LCASE') s FROM range(3)")
    if how == "write_delta":
        write_delta(df, path, mode="append")
    else:
        df.write.format("pydelta").mode("append").save(path)
    proto = next(a["protocol"] for a in log_actions(path, 0) if "protocol" in a)
    assert {"collations", "domainMetadata"} <= set(proto["writerFeatures"])
    assert proto["minReaderVersion"] == 1  # a writer-only feature
    fields = json.loads(next(a["metaData"] for a in log_actions(path, 0) if "metaData" in a)["schemaString"])["fields"]
    assert fields[1]["metadata"] == {"__COLLATIONS": {"s": "spark.UTF8_LCASE"}}
    for df in (read_delta(spark, path), spark.read.format("pydelta").load(path)):
        assert _ids(df, "s = '1A'") == [1]
    assert sorted(deltalake_table(path).column("s").to_pylist()) == ["0a", "1a", "2a"]
