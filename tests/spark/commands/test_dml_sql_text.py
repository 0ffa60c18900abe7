"""DML and reads on conditions whose text this package once read differently from Spark
(issue #35 items 1-3): string escapes, comments and quotes decide which files are skipped.
Spark's own evaluation of the same text over the same rows is the expected answer; every case
runs with and without deletion vectors (the file pruning is the same code for both DML engines).

Each table has one file per ``region`` (EU, US, ASIA) with selective statistics, so a wrong
reading of the condition prunes a file that holds a matching row."""

from __future__ import annotations

import pyarrow as pa
import pytest
from helpers import spark_rows
from pyspark.sql import functions as F

from delta_pyds import DeltaTable, read_delta
from delta_pyds.write.plan import commit_arrow

REGIONS = ["EU", "US", "ASIA"]
# per file: a narrow name range that excludes what a wrong reading would look for
NAMES = {"EU": ["é", "ê", "ë"], "US": ['q"q', "x", "z"], "ASIA": ["A", "B", "it's"]}


def _table(path: str, dv: bool) -> str:
    for k, region in enumerate(REGIONS):
        names = NAMES[region]
        data = pa.table(
            {
                "id": pa.array([k * 10 + j for j in range(3)], pa.int64()),
                "region": pa.array([region] * 3),
                "name": pa.array(names),
                "d": pa.array([k * 10 + j for j in range(3)], pa.int64()),
            }
        )
        options = {"delta.enableDeletionVectors": "true"} if dv and k == 0 else None
        commit_arrow(path, data, options=options)
    return path


def _rows(spark, path):
    return spark_rows(read_delta(spark, path).select("id", "region", "name", "d"))


def _expected_after_delete(spark, path, condition):
    before = read_delta(spark, path)
    return spark_rows(before.where(f"NOT coalesce(({condition}), false)").select("id", "region", "name", "d"))


ESCAPED = [
    "name = '\\u00e9'",  # é
    "name = '\\101'",  # A (octal)
    "name = 'it\\'s'",
    "name = 'it''s'",
    "name = r'it''s' OR name = 'z'",
    "name = 'q\"q'",
    'name = "q\\"q"',
    "name = '\\x'",  # x: a needless backslash
]


@pytest.mark.parametrize("dv", [False, True], ids=["cow", "dv"])
@pytest.mark.parametrize("condition", ESCAPED)
def test_delete_and_update_read_escapes_as_spark(spark, tmp_path, dv, condition):
    path = _table(str(tmp_path / "t"), dv)
    expected = _expected_after_delete(spark, path, condition)
    assert len(expected) < 9, condition  # the condition matches a row
    matching = {r[0] for r in spark_rows(read_delta(spark, path).where(condition).select("id"))}
    DeltaTable.forPath(spark, path).delete(condition)
    assert _rows(spark, path) == expected
    path2 = _table(str(tmp_path / "u"), dv)
    DeltaTable.forPath(spark, path2).update(condition, {"d": "d + 100"})
    assert {r[0] for r in _rows(spark, path2) if r[3] >= 100} == matching


def test_read_delta_where_reads_escapes_as_spark(spark, tmp_path):
    path = _table(str(tmp_path / "t"), False)
    for condition in ESCAPED:
        spark_answer = spark_rows(read_delta(spark, path).where(condition).select("id"))
        assert spark_answer, condition
        assert spark_rows(read_delta(spark, path, where=condition).select("id")) == spark_answer, condition


MERGE_CONDITIONS = [
    # a comment hides a conjunct from Spark: the US rows match and must be updated, not inserted
    "t.id = s.id -- AND t.region = 'EU'\n",
    "t.id = s.id /* AND t.region = 'EU' */",
    # a double-quoted literal holding AND ... is one literal to Spark
    't.id = s.id AND t.name != "x AND t.d = 5 AND y"',
    # a quote escaped with a backslash before an AND moves every cut position
    "t.id = s.id AND t.name != 'a\\' AND t.region = \\'EU'",
    # an escape in a literal the target filter keeps: name >= 'A'
    "t.id = s.id AND t.name >= '\\u0041'",
    "t.id = s.id AND t.name >= '\\101' AND t.region <= 'US'",
]


@pytest.mark.parametrize("dv", [False, True], ids=["cow", "dv"])
@pytest.mark.parametrize("condition", MERGE_CONDITIONS)
def test_merge_reads_comments_and_quotes_as_spark(spark, tmp_path, dv, condition):
    path = _table(str(tmp_path / "t"), dv)
    source = spark.createDataFrame([(j, "new") for j in (0, 1, 10, 11, 20, 99)], "id long, name string")
    # Spark's answer: which target ids the condition matches (a join over the same rows)
    target = read_delta(spark, path).alias("t")
    matched = {r[0] for r in target.join(source.alias("s"), on=F.expr(condition)).select("t.id").collect()}
    (
        DeltaTable.forPath(spark, path)
        .alias("t")
        .merge(source.alias("s"), condition)
        .whenMatchedUpdate(set={"name": "s.name"})
        .whenNotMatchedInsert(values={"id": "s.id", "region": "'NEW'", "name": "s.name", "d": "-1"})
        .execute()
    )
    rows = _rows(spark, path)
    ids = [r[0] for r in rows]
    assert len(ids) == len(set(ids)), f"duplicated rows: {condition}"
    assert {r[0] for r in rows if r[2] == "new" and r[1] != "NEW"} == matched
    assert len(rows) == 9 + 6 - len({j for j in (0, 1, 10, 11, 20, 99) if j in matched})


@pytest.mark.parametrize("dv", [False, True], ids=["cow", "dv"])
def test_the_session_s_escaped_string_literals_setting_is_followed(spark, tmp_path, dv):
    # under spark.sql.parser.escapedStringLiterals 'C:\b' is the four characters C : \ b
    path = str(tmp_path / "t")
    commit_arrow(
        path,
        pa.table({"id": [1, 2], "name": ["C:\\b", "C:\\c"]}),
        options={"delta.enableDeletionVectors": str(dv).lower()},
    )
    commit_arrow(path, pa.table({"id": [3, 4], "name": ["C:\x08", "D"]}))  # what the default reading gives
    spark.conf.set("spark.sql.parser.escapedStringLiterals", "true")
    try:
        DeltaTable.forPath(spark, path).delete("name = 'C:\\b'")
        assert [r[0] for r in read_delta(spark, path, where="name = 'C:\\c'").select("id").collect()] == [2]
    finally:
        spark.conf.unset("spark.sql.parser.escapedStringLiterals")
    assert sorted(r[0] for r in read_delta(spark, path).select("id").collect()) == [2, 3, 4]
