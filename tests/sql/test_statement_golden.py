"""Golden tests of the parser of ``delta_pyds.sql``, with no JVM and no SparkSession: every
statement example in the code blocks of docs/sql.md (``sql`` blocks, split at ``;``, and the
``delta_pyds.sql(spark, "...", args)`` calls of ``python`` blocks) is parsed by
``delta_pyds.spark.sql.parse`` and compared with the statement value recorded for it in
tests/sql/golden/sql_md.txt (its pretty-printed repr, positions included); a ``text`` block
``SqlParseError: ...`` is the error of the example just before it. Malformed statements raise
``SqlParseError`` naming the statement, the position and the supported form.

A new example in docs/sql.md fails here until its value is recorded. Record it (and review the
diff of the golden file) with::

    DELTA_PYDS_UPDATE_GOLDEN=1 PYTHONPATH=$PWD python -m pytest -q tests/sql/test_statement_golden.py

Without that variable any difference, missing or stale entry fails."""

from __future__ import annotations

import ast
import dataclasses
import json
import os
import pathlib
import pprint
import re
from typing import Any

import pytest

from delta_pyds.errors import SqlParameterError, SqlParseError
from delta_pyds.expressions.lexer import Dialect, tokenize
from delta_pyds.spark.commands.merge.clauses import MergeClause
from delta_pyds.spark.sql import ast as stmts
from delta_pyds.spark.sql import parse
from delta_pyds.spark.sql.execute import RUNNERS
from delta_pyds.spark.sql.parser import Table

ROOT = pathlib.Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "sql.md"
GOLDEN = pathlib.Path(__file__).resolve().parent / "golden" / "sql_md.txt"
UPDATE = os.environ.get("DELTA_PYDS_UPDATE_GOLDEN") == "1"
_BLOCK = re.compile(r"^```(\w*)\n(.*?)^```", re.M | re.S)


@pytest.fixture(autouse=True)
def no_spark_session(monkeypatch):
    """Parsing must never need a session: creating or asking for one fails the test."""
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the parser asked for a SparkSession / SparkContext")

    monkeypatch.setattr(SparkContext, "__init__", refuse)
    monkeypatch.setattr(SparkContext, "getOrCreate", classmethod(refuse))
    monkeypatch.setattr(SparkSession, "__init__", refuse)
    monkeypatch.setattr(SparkSession, "getActiveSession", classmethod(refuse))
    monkeypatch.setattr(SparkSession, "active", classmethod(refuse))


# ------------------------------------------------------------------ examples
@dataclasses.dataclass(frozen=True)
class Example:
    text: str
    args: Any = None

    @property
    def key(self) -> str:
        return json.dumps([self.text, self.args], ensure_ascii=False)


def _sql_statements(body: str) -> list[str]:
    """The statements of a ``sql`` block: split at top-level ``;`` tokens (never inside a
    literal or comment)."""
    out, start = [], 0
    for t in tokenize(body):
        if t.kind == "punct" and t.text == ";":
            out.append(body[start : t.start].strip())
            start = t.end
    out.append(body[start:].strip())
    return [s for s in out if s]


def _python_calls(body: str) -> list[Example]:
    """The ``delta_pyds.sql(spark, "text"[, args])`` calls of a ``python`` block."""
    out = []
    for node in ast.walk(ast.parse(body)):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "sql"
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "delta_pyds"
        ):
            text = ast.literal_eval(node.args[1])
            args = ast.literal_eval(node.args[2]) if len(node.args) > 2 else None
            out.append((node.lineno, Example(text, args)))
    return [ex for _, ex in sorted(out, key=lambda pair: pair[0])]


def doc_examples() -> tuple[list[Example], list[tuple[Example, str]]]:
    """(every example, in order; the ``SqlParseError: ...`` text blocks with the example
    before each)."""
    examples: list[Example] = []
    errors: list[tuple[Example, str]] = []
    for lang, body in _BLOCK.findall(DOC.read_text(encoding="utf-8")):
        if lang == "sql":
            examples += [Example(s) for s in _sql_statements(body)]
        elif lang == "python":
            examples += _python_calls(body)
        elif lang == "text" and body.startswith("SqlParseError: "):
            errors.append((examples[-1], body.strip()))
    return examples, errors


def outcome(ex: Example) -> str:
    try:
        return pprint.pformat(parse(ex.text, args=ex.args), width=110)
    except SqlParseError as e:
        return f"SqlParseError: {e}"


def read_golden() -> dict[str, str]:
    if not GOLDEN.exists():
        return {}
    entries: dict[str, str] = {}
    for chunk in GOLDEN.read_text(encoding="utf-8").split("\n=== ")[1:]:
        key, _, value = chunk.partition("\n")
        entries[key] = value.rstrip("\n")
    return entries


def write_golden(values: dict[str, str]) -> None:
    GOLDEN.parent.mkdir(parents=True, exist_ok=True)
    head = "# docs/sql.md examples -> delta_pyds.spark.sql.parse(text, args=args); tests/sql/test_statement_golden.py\n"
    GOLDEN.write_text(head + "".join(f"\n=== {k}\n{v}\n" for k, v in values.items()), encoding="utf-8")


EXAMPLES, ERROR_EXAMPLES = doc_examples()


def test_the_doc_has_examples_of_every_statement():
    assert len(EXAMPLES) > 40
    parsed = {type(parse(ex.text, args=ex.args)) for ex in EXAMPLES if not outcome(ex).startswith("SqlParseError")}
    assert set(RUNNERS) - parsed == set()


def test_every_doc_example_parses_to_its_golden_value():
    values = {ex.key: outcome(ex) for ex in EXAMPLES}
    if UPDATE:
        write_golden(values)
    golden = read_golden()
    missing = sorted(set(values) - set(golden))
    stale = sorted(set(golden) - set(values))
    assert missing == [], "new docs/sql.md examples without a golden value (DELTA_PYDS_UPDATE_GOLDEN=1)"
    assert stale == [], "golden values of examples docs/sql.md no longer has"
    for key, value in values.items():
        assert value == golden[key], key


def test_doc_examples_parse_but_the_error_examples():
    failing = {ex for ex, _ in ERROR_EXAMPLES}
    assert [ex.text for ex in EXAMPLES if outcome(ex).startswith("SqlParseError") and ex not in failing] == []
    assert ERROR_EXAMPLES, "docs/sql.md shows a parse error"
    for ex, shown in ERROR_EXAMPLES:
        assert outcome(ex) == shown


# ------------------------------------------------------------ inline values
def test_values_are_frozen_and_compare_by_value():
    t = Table(path="/p", position=12)
    stmt = parse("DELETE FROM delta.`/p` AS e WHERE e.id = 1")
    assert stmt == stmts.Delete(t, alias="e", condition="e.id = 1")  # the alias binds to the table in Spark: kept
    assert stmt.table.position == 12
    with pytest.raises(dataclasses.FrozenInstanceError):
        stmt.alias = "x"  # type: ignore[misc]
    merge = parse("MERGE INTO t USING s ON t.id = s.id WHEN NOT MATCHED BY SOURCE THEN UPDATE SET t.x = 1")
    assert merge == stmts.Merge(
        Table(name=("t",)),
        Table(name=("s",)),
        "t.id = s.id",
        (
            MergeClause("not_matched_by_source", "update", None, (("t.x", "1"),)),
        ),  # no target alias: the qualifier stays
    )


def test_args_are_bound_in_delta_statements_and_kept_for_queries():
    got = parse("DELETE FROM delta.`/p` WHERE id = ? AND name = ?", args=[5, "it's"])
    assert got == stmts.Delete(Table(path="/p"), condition="id = 5 AND name = CAST(X'69742773' AS STRING)")
    assert parse("DELETE FROM delta.`/p` WHERE day < :d", args={"d": "2024-01-01"}).condition == "day < '2024-01-01'"
    assert parse("SELECT :a", args={"a": 1}) == stmts.Query("SELECT :a", {"a": 1})
    with pytest.raises(SqlParameterError, match="UNBOUND_SQL_PARAMETER"):
        parse("VACUUM delta.`/p` RETAIN :h HOURS", args={})


def test_the_dialect_is_a_value():
    text = r"VACUUM 'C:\new'"
    assert parse(text).table.path == "C:\new"
    assert parse(text, dialect=Dialect(escaped_string_literals=True)).table.path == r"C:\new"


def test_names_are_resolved_when_the_statement_runs_not_when_it_is_parsed():
    # a shared statement naming a table by name is Delta's only if the catalog says so then
    assert parse("DELETE FROM db.`my events` WHERE x").table == Table(name=("db", "my events"))
    assert parse("SHOW COLUMNS FROM t") == stmts.ShowColumns(Table(name=("t",)))
    # a form Spark alone has, or a name Spark refuses as a plain identifier: Spark's
    assert isinstance(parse("DELETE FROM (SELECT 1)"), stmts.Query)
    assert isinstance(parse("DELETE FROM tåble WHERE x"), stmts.Query)


# ---------------------------------------------------------------- parse errors
VACUUM_FORM = "VACUUM <table | 'path'> [RETAIN n HOURS] [DRY RUN]"
ERRORS = [
    (
        "VACUUM delta.`/p` RETAIN many HOURS",
        f"VACUUM: expected a number at position 25 (near 'many HOURS'); supported form: {VACUUM_FORM}",
    ),
    (
        "VACUUM delta.`/p` RETAIN 1e999 HOURS",
        "VACUUM: RETAIN 1e999 is out of range (expected a finite number) at position 25",
    ),
    ("DESCRIBE HISTORY", "DESCRIBE HISTORY: expected a Delta table: delta.`/path`, a Delta table of Spark's catalog"),
    (
        "DESCRIBE HISTORY delta.`/p` LIMIT -1",
        "DESCRIBE HISTORY: expected a non-negative integer at position 34 (near '-1')",
    ),
    ("DELETE FROM delta.`/p` WHERE", "DELETE: expected a condition at position 28 (near 'end of statement')"),
    ("UPDATE delta.`/p` SET x =", "UPDATE: no value for x at position 25"),
    ("RESTORE delta.`/p` TO 3", "RESTORE: expected VERSION AS OF or TIMESTAMP AS OF at position 22 (near '3')"),
    ("RESTORE delta.`/p@v1` TO VERSION AS OF 2", "RESTORE: time travel belongs after TO at position 25"),
    ("OPTIMIZE delta.`/p` ZORDER (x)", "OPTIMIZE: unexpected text at position 20 (near 'ZORDER (x)')"),
    (
        "MERGE INTO delta.`/p` t USING s ON t.id = s.id",
        "MERGE: expected WHEN MATCHED / WHEN NOT MATCHED clauses at position 46",
    ),
    (
        "MERGE INTO delta.`/p` t USING s ON t.id = s.id WHEN NOT MATCHED THEN DELETE",
        "MERGE: expected UPDATE SET, DELETE or INSERT at position 69 (near 'DELETE')",
    ),
    (
        "MERGE INTO delta.`/p` t USING s ON t.id = s.id WHEN NOT MATCHED THEN INSERT (a, b) VALUES (1)",
        "MERGE: 2 columns but 1 values at position",
    ),
    ("INSERT INTO delta.`/p` PARTITION (d = 1) SELECT 1", "INSERT: PARTITION (...), IF NOT EXISTS and WITH (options)"),
    (
        "INSERT INTO delta.`/p` 1",
        "INSERT: expected a query (SELECT ..., VALUES ..., WITH ..., FROM ..., TABLE t) at position 23",
    ),
    ("TRUNCATE TABLE delta.`/p` PARTITION (d = 1)", "TRUNCATE TABLE: [DELTA_TRUNCATE_TABLE_PARTITION_NOT_SUPPORTED]"),
    ("ALTER TABLE delta.`/p` ADD COLUMNS (x INT NOT NULL)", "ALTER TABLE: ADD COLUMNS adds nullable columns only"),
    (
        "ALTER TABLE delta.`/p` ALTER COLUMN x",
        "ALTER TABLE: expected COMMENT 'text', SET NOT NULL, DROP NOT NULL, TYPE",
    ),
    ("ALTER TABLE delta.`/p` SET OWNER TO x", "ALTER TABLE: expected SET TBLPROPERTIES, UNSET TBLPROPERTIES"),
    (
        "CREATE TABLE delta.`/p` (a INT) USING delta AS SELECT 1",
        "CREATE TABLE: AS <query> takes its columns from the query",
    ),
    (
        "CREATE TABLE t (a INT) USING delta PARTITIONED BY (a) CLUSTER BY (a)",
        "PARTITIONED BY and CLUSTER BY cannot be combined",
    ),
    ("CREATE TABLE t (a INT) USING delta COMMENT 'x' COMMENT 'y'", "CREATE TABLE: COMMENT given twice at position 47"),
    ("SELECT * FROM delta.`/p` VERSION AS OF 'x'", None),  # a query: Spark's to refuse
    ("VACUUM 'unterminated", "unterminated string literal at position 7"),
    ("DESCRIBE delta.`/p@v3`", "DESCRIBE: DESCRIBE takes no time travel"),
]


@pytest.mark.parametrize(("text", "message"), ERRORS, ids=[t for t, _ in ERRORS])
def test_parse_errors_name_the_statement_and_the_position(text, message):
    if message is None:
        assert isinstance(parse(text), stmts.Query)
        return
    with pytest.raises(SqlParseError) as e:
        parse(text)
    assert message in str(e.value)
    assert ("at position " in str(e.value)) and ("supported form" in str(e.value) or "unterminated" in message)
