"""delta_pyds.sql: table references in queries (native read, time travel, session names) and
every other statement passed to spark.sql unchanged."""

from __future__ import annotations

import types

import pytest

import delta_pyds
from delta_pyds import SqlParseError, read_delta
from delta_pyds.expressions.lexer import tokenize
from delta_pyds.spark.sql.parser import Parser
from delta_pyds.spark.sql.references import query_refs
from tests.helpers import spark_rows


def _table(spark, path, rows, mode="append"):
    df = spark.createDataFrame(rows, "id long, name string")
    delta_pyds.write_delta(df, path, mode=mode)


@pytest.fixture
def two_versions(spark, tmp_path):
    path = str(tmp_path / "t")
    _table(spark, path, [(1, "a"), (2, "b")])
    _table(spark, path, [(3, "c")])
    return path


def test_lexer_keeps_text_and_quotes():
    text = "SELECT 'delta.`x`' AS s, `a``b` -- delta.`y`\n FROM /* delta.`z` */ t;"
    tokens = tokenize(text)
    assert "".join(t.text for t in tokens) == text
    assert query_refs(Parser(text)) == []  # references inside literals/comments are not references
    with pytest.raises(SqlParseError, match="unterminated string literal at position 7"):
        tokenize("SELECT 'abc")


def test_select_path_reference_reads_current_version(spark, two_versions):
    got = delta_pyds.sql(spark, f"SELECT * FROM delta.`{two_versions}` WHERE id > 1")
    assert spark_rows(got) == [(2, "b"), (3, "c")]
    assert spark_rows(got) == spark_rows(read_delta(spark, two_versions, where="id > 1"))
    fmt = spark.read.format("pydelta").load(two_versions).where("id > 1")
    assert spark_rows(got) == spark_rows(fmt)


@pytest.mark.parametrize(
    "suffix",
    ["VERSION AS OF 0", "FOR VERSION AS OF 0", "FOR SYSTEM_VERSION AS OF 0", "@v0"],
)
def test_time_travel_spellings(spark, two_versions, suffix):
    ref = f"delta.`{two_versions}{suffix}`" if suffix.startswith("@") else f"delta.`{two_versions}` {suffix}"
    got = delta_pyds.sql(spark, f"SELECT id FROM {ref} t ORDER BY id")
    assert [r.id for r in got.collect()] == [1, 2]


def test_timestamp_as_of(spark, two_versions):
    from delta_pyds.log.history import history

    ts = {h["version"]: h["timestamp"] for h in history(two_versions)}
    import datetime as dt

    stamp = dt.datetime.fromtimestamp(ts[0] / 1000, dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
    got = delta_pyds.sql(spark, f"SELECT count(*) AS n FROM delta.`{two_versions}` TIMESTAMP AS OF '{stamp}'")
    expected = read_delta(spark, two_versions, timestampAsOf=stamp).count()
    assert got.collect()[0].n == expected == 2


def test_join_subquery_cte_and_args(spark, two_versions, tmp_path):
    other = str(tmp_path / "o")
    _table(spark, other, [(1, "x"), (3, "z")])
    q = f"""
        WITH old AS (SELECT * FROM delta.`{two_versions}@v0`)
        SELECT a.id, a.name, b.name AS other, '{{literal}}' AS lit
        FROM delta.`{two_versions}` a JOIN delta.`{other}` AS b ON a.id = b.id
        WHERE a.id IN (SELECT id FROM old) OR a.id > :lo
    """
    got = delta_pyds.sql(spark, q, {"lo": 2})
    assert spark_rows(got) == [(1, "a", "x", "{literal}"), (3, "c", "z", "{literal}")]


def test_other_statements_reach_spark_unchanged(spark):
    calls = []

    class Recorder:
        def sql(self, statement, args=None, **kwargs):
            if statement.startswith("SHOW TABLE EXTENDED LIKE 'range'"):  # is `range` a Delta table? no
                return types.SimpleNamespace(collect=list)
            calls.append((statement, args, kwargs))
            return "df"

    text = "SELECT {x} + :y, '{' FROM range(3) -- delta"
    assert delta_pyds.sql(Recorder(), text, {"y": 1}, x=2) == "df"
    assert calls == [(text, {"y": 1}, {"x": 2})]
    # and a real one, with named parameters
    assert delta_pyds.sql(spark, "SELECT :v + 1 AS r", {"v": 41}).collect()[0].r == 42


def test_create_table_location_gives_a_session_name(spark, two_versions):
    delta_pyds.sql(spark, f"CREATE TABLE IF NOT EXISTS people USING delta LOCATION '{two_versions}'")
    got = delta_pyds.sql(spark, "SELECT p.id FROM people p, people VERSION AS OF 0 q WHERE p.id = q.id")
    assert sorted(r.id for r in got.collect()) == [1, 2]
    assert delta_pyds.spark.sql.table_names(spark)["people"] == two_versions
    hist = delta_pyds.sql(spark, "DESCRIBE HISTORY people")
    assert [r.version for r in hist.collect()] == [1, 0]


def test_create_table_location_needs_a_table(spark, tmp_path):
    from delta_pyds import TableNotFoundError

    with pytest.raises(TableNotFoundError, match="no Delta table there"):
        delta_pyds.sql(spark, f"CREATE TABLE nothing USING delta LOCATION '{tmp_path}/none'")


def test_parse_errors_name_statement_position_and_form(spark, two_versions):
    with pytest.raises(SqlParseError) as e:
        delta_pyds.sql(spark, f"VACUUM delta.`{two_versions}` RETAIN many HOURS")
    msg = str(e.value)
    assert msg.startswith("VACUUM: expected a number at position")
    assert "supported form: VACUUM <table | 'path'> [RETAIN n HOURS] [DRY RUN]" in msg
    with pytest.raises(SqlParseError, match="DESCRIBE HISTORY: expected a Delta table"):
        delta_pyds.sql(spark, "DESCRIBE HISTORY")
