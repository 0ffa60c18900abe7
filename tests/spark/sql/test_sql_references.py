"""Which names of a statement delta_pyds.sql reads as tables: only table-reference positions of
Spark's grammar, CTEs in scope first (no Spark needed: the walker over the lexer's tokens)."""

from __future__ import annotations

import random

import pytest

from delta_pyds.spark.sql.parser import NamedTable, Parser, name_text
from delta_pyds.spark.sql.references import query_refs, walk

NAMES = {("events",), ("other",), ("db", "events"), ("été",), ("my.events",), ("we`ird",)}


def _resolve(parts: tuple[str, ...], target: bool) -> NamedTable | None:
    key = tuple(p.lower() for p in parts)
    return NamedTable("/t/" + ".".join(key), "table") if key in NAMES else None


def refs(text: str) -> list[str]:
    return [text[r.start : r.end] for r in query_refs(Parser(text, _resolve))]


@pytest.mark.parametrize(
    "text, expected",
    [
        ("SELECT * FROM events", ["events"]),
        ("SELECT id, events FROM other", ["other"]),
        ("SELECT * FROM other WHERE id IN (1, events)", ["other"]),
        ("SELECT events.id FROM events", ["events"]),
        ("SELECT x AS events FROM other AS events", ["other"]),
        ("SELECT f(events), s.events, transform(a, events -> events + 1) FROM other", ["other"]),
        ("SELECT * FROM other WHERE a IS DISTINCT FROM events", ["other"]),
        (
            "SELECT EXTRACT(YEAR FROM events), TRIM(BOTH 'x' FROM events), SUBSTRING(s FROM events) FROM other",
            ["other"],
        ),
        ("SELECT * FROM other LATERAL VIEW explode(a) t AS events, other", ["other"]),
        ("SELECT * FROM events e JOIN other o ON e.id = o.id, db.events", ["events", "other", "db.events"]),
        ("SELECT * FROM events VERSION AS OF 3 e", ["events VERSION AS OF 3"]),
        ("SELECT * FROM events FOR TIMESTAMP AS OF '2024-01-01'", ["events FOR TIMESTAMP AS OF '2024-01-01'"]),
        ("TABLE events", ["events"]),
        ("SELECT 1 UNION ALL TABLE events", ["events"]),
        ("SELECT * FROM (events JOIN other USING (id))", ["events", "other"]),
        ("SELECT * FROM LATERAL (SELECT * FROM events)", ["events"]),
        ("SELECT * FROM range(10) JOIN events", ["events"]),
        ("SELECT * FROM my_udtf(TABLE(events)), my_udtf(TABLE other)", ["events", "other"]),
        ("SELECT (SELECT max(id) FROM events) AS m, EXISTS (SELECT 1 FROM other)", ["events", "other"]),
        ("FROM events SELECT id", ["events"]),
        ("SELECT 'FROM events', `FROM events` -- FROM events\n FROM /* events */ other", ["other"]),
        (
            "SELECT * FROM `events` JOIN `my.events` JOIN `we``ird` JOIN `été` JOIN été",
            ["`events`", "`my.events`", "`we``ird`", "`été`"],  # unquoted été: Spark's INVALID_IDENTIFIER
        ),
        ("SELECT * FROM my.events", []),  # two parts: db my, table events (not the `my.events` name)
        ("SELECT * FROM IDENTIFIER('events')", []),
        ("SELECT * FROM {df} JOIN events", ["events"]),
        # CTEs shadow, in scope for later CTEs, the body and its subqueries, never outside
        ("WITH events AS (SELECT 7L AS id) SELECT id FROM events", []),
        ("WITH events (id) AS (SELECT 7L) SELECT * FROM events", []),
        ("WITH e AS (SELECT * FROM events) SELECT * FROM e", ["events"]),
        ("WITH events AS (SELECT * FROM events) SELECT * FROM events", ["events"]),  # its own text: the table
        ("WITH RECURSIVE events AS (SELECT 1 UNION ALL SELECT * FROM events) SELECT * FROM events", []),
        ("WITH a AS (SELECT 1), events AS (SELECT * FROM a) SELECT * FROM events JOIN other", ["other"]),
        ("WITH events AS (SELECT 1 AS id) SELECT * FROM other WHERE id IN (SELECT id FROM events)", ["other"]),
        ("SELECT * FROM (WITH events AS (SELECT 1) SELECT * FROM events) x JOIN events", ["events"]),
        ("SELECT * FROM events WHERE id IN (WITH events AS (SELECT 3L AS id) SELECT id FROM events)", ["events"]),
        ("WITH db AS (SELECT 1) SELECT * FROM db.events", ["db.events"]),  # a CTE is one part
        # statements around queries
        ("INSERT INTO delta.`/x` WITH events AS (SELECT 7L AS id) SELECT id FROM events", []),
        ("INSERT INTO pq TABLE events", ["events"]),
        ("INSERT OVERWRITE TABLE pq PARTITION (p = 1) (a) SELECT * FROM events", ["events"]),
        ("CREATE OR REPLACE TEMP VIEW v (a COMMENT 'FROM events') AS SELECT * FROM events", ["events"]),
        ("CACHE LAZY TABLE c OPTIONS ('k' = 'v') SELECT * FROM events", ["events"]),
        ("EXPLAIN FORMATTED SELECT * FROM events", ["events"]),
        ("DESCRIBE QUERY SELECT * FROM events", ["events"]),
        ("DESCRIBE TABLE EXTENDED events", ["events"]),
        ("SELECT * FROM VALUES (1), (2) t(events), events", []),  # after an inline table: not read
        ("DROP TABLE events", []),
        ("WITH x AS (SELECT 1) DELETE FROM events", []),
        ("SELECT * FROM delta.`/p` JOIN delta.`/q@v2` d", ["delta.`/p`", "delta.`/q@v2`"]),
        ("SELECT delta.`x` FROM other AS delta", ["other"]),
    ],
)
def test_names_only_at_table_references(text, expected):
    assert refs(text) == expected


def test_unread_statements_are_marked():
    assert not walk(Parser("DROP TABLE events")).classified
    assert not walk(Parser("WITH x AS (SELECT 1) DELETE FROM events")).classified
    assert walk(Parser("SELECT * FROM events")).classified


def _noise(rng: random.Random) -> str:
    return rng.choice([" ", "\n", " /* FROM events */ ", " -- FROM events\n", "\t", " /* /* FROM events */ */ "])


def _name(rng: random.Random) -> tuple[tuple[str, ...], bool]:
    parts = rng.choice(sorted(NAMES) + [("nope",), ("été2",), ("a.b",), ("x`y",)])
    return parts, tuple(p.lower() for p in parts) in NAMES


def test_generated_texts_substitute_exactly_the_table_positions():
    """Random queries: names (Unicode, dots and backquotes inside backquotes) at table and
    column positions, next to comments, strings and backquoted texts that spell them."""
    rng = random.Random(35)
    for _ in range(300):
        expected = []
        pieces = ["SELECT"]
        col, _ = _name(rng)
        pieces += [_noise(rng), name_text(col), ",", _noise(rng), repr("FROM " + name_text(col))]
        pieces += [_noise(rng), "FROM"]
        for k in range(rng.randint(1, 3)):
            parts, known = _name(rng)
            if k:
                pieces.append(rng.choice([",", " JOIN", " LEFT JOIN", " CROSS JOIN"]))
            pieces += [_noise(rng), name_text(parts), " AS", _noise(rng), name_text(_name(rng)[0])]
            if known:
                expected.append(name_text(parts))
        pieces += [_noise(rng), "WHERE ", name_text(_name(rng)[0]), " IN (1, ", name_text(_name(rng)[0]), ")"]
        text = "".join(pieces)
        assert refs(text) == expected, text


def test_a_substituted_name_keeps_qualifying_its_columns():
    parser = Parser(
        "SELECT events.id FROM events, other o JOIN `été` VERSION AS OF 1 WHERE 1 = 1 UNION TABLE events", _resolve
    )
    assert [r.qualifier for r in query_refs(parser)] == ["events", None, "`été`", None]
