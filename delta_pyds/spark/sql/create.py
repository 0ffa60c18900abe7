"""Parsing ``CREATE [OR REPLACE] TABLE`` / ``REPLACE TABLE`` (with columns, or ``AS SELECT``)
for :func:`delta_pyds.sql` into a :class:`~delta_pyds.spark.sql.ast.CreateTable`, with no
SparkSession (:mod:`delta_pyds.spark.sql.execute_writes` runs it).

Guarantees: the whole statement is parsed before anything runs (a parse error changes
nothing); a table definition runs as one ``DeltaTable.create / createIfNotExists / replace /
createOrReplace`` builder call (``location(path)``, ``addColumn`` per column with its
generated expression, identity, NOT NULL and comment, ``partitionedBy`` / ``clusterBy``,
``property`` per TBLPROPERTIES entry, ``comment``); ``AS SELECT`` reads the query first (its
Delta tables through the native path), then writes its rows as files of the new definition and
commits definition, removes and rows in one commit
(:mod:`delta_pyds.spark.commands.create_as_select`: a failing query leaves the table as it was).
A named table is an entry of Spark's session catalog
(:func:`~delta_pyds.spark.catalog.entries.create_named`): EXTERNAL with LOCATION, else MANAGED at
Spark's default path; ``REPLACE`` / ``CREATE OR REPLACE`` / ``IF NOT EXISTS`` of an existing name
use its location. With no columns and no query, a table that exists is used as the mode says
and a new one raises delta-spark's ``DELTA_SCHEMA_NOT_PROVIDED`` (an ``AnalysisException``). No
pyspark here."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from delta_pyds.spark.sql.ast import Column, CreateTable
from delta_pyds.spark.sql.parser import Parser

FORM = (
    "CREATE [OR REPLACE] TABLE [IF NOT EXISTS] <delta.`path` | name> [(col type [NOT NULL]"
    " [GENERATED ALWAYS AS (expr) | GENERATED ALWAYS | BY DEFAULT AS IDENTITY [(START WITH n INCREMENT BY m)]]"
    " [COMMENT 'c'], ...)] USING delta [PARTITIONED BY (col, ...) | CLUSTER BY (col, ...)] [LOCATION 'path']"
    " [COMMENT 'c'] [TBLPROPERTIES ('k' = 'v', ...)] [AS <query>] | REPLACE TABLE ..."
)

_COLUMN_STOPS = {"NOT", "GENERATED", "COMMENT", "DEFAULT"}


def recognise(p: Parser) -> bool:
    """Whether the statement at the start of ``p`` is a Delta CREATE / REPLACE TABLE: it names
    ``delta.`path``` or says ``USING delta``, and is not the registering form
    ``CREATE TABLE [IF NOT EXISTS] name USING delta LOCATION 'p' [COMMENT 'c'] [TBLPROPERTIES (...)]``
    (no columns, no query)."""
    p.i = 0
    heads = (("CREATE", "TABLE"), ("CREATE", "OR", "REPLACE", "TABLE"), ("REPLACE", "TABLE"))
    if not any(p.accept(*words) for words in heads):
        return False
    p.accept("IF", "NOT", "EXISTS")
    t = p.peek()
    found = False
    if t is not None and t.upper == "DELTA" and p.at("DELTA", "."):
        found = True
    depth = 0
    while not p.done():
        t = p.peek()
        assert t is not None
        if t.text == "(":
            depth += 1
        elif t.text == ")":
            depth -= 1
        elif depth == 0 and p.at("USING", "DELTA"):
            found = True
        elif depth == 0 and t.upper == "AS" and found:
            break
        p.i += 1
    p.i = 0
    return found and not _registers(p)


def _registers(p: Parser) -> bool:
    """The registering form :func:`~delta_pyds.spark.sql.catalog_statements.parse_register` parses:
    ``CREATE TABLE [IF NOT EXISTS] name USING delta LOCATION 'p' [COMMENT 'c'] [TBLPROPERTIES (...)]``."""
    from delta_pyds.errors import SqlParseError
    from delta_pyds.spark.sql.catalog_statements import parse_register

    p.i = 0
    ok = False
    if p.accept("CREATE", "TABLE"):
        start = p.i
        p.accept("IF", "NOT", "EXISTS")
        t = p.peek()
        if t is not None and t.kind in ("word", "ident") and not p.at("DELTA", "."):
            p.i = start
            try:
                parse_register(p)
                ok = True
            except SqlParseError:
                ok = False
    p.i = 0
    return ok


def parse_create(p: Parser) -> CreateTable:
    p.i = 0
    p.statement, p.form = "CREATE TABLE", FORM
    st = CreateTable(_mode(p))
    if p.at("DELTA", "."):
        ref = p.require_table()
        if ref.version is not None:
            p.fail("a table to create has no version")
        st = replace(st, path=ref.path)
    else:
        st = replace(st, name=p.parts())
    if p.at("("):
        st = replace(st, columns=tuple(_columns(p)))
    p.expect("USING", "DELTA")
    st = _clauses(p, st)
    if p.accept("AS"):
        if st.columns is not None:
            p.fail("AS <query> takes its columns from the query: give no column list")
        st = replace(st, query=p.rest())
        if not st.query:
            p.fail("expected a query after AS")
    p.end()  # no columns and no query: the table's creation raises delta-spark's DELTA_SCHEMA_NOT_PROVIDED
    return st


def _mode(p: Parser) -> str:
    """The builder mode of ``[CREATE [OR REPLACE] | REPLACE] TABLE [IF NOT EXISTS]``."""
    if p.accept("REPLACE", "TABLE"):
        mode = "replace"
    elif p.accept("CREATE", "OR", "REPLACE", "TABLE"):
        mode = "createOrReplace"
    else:
        p.expect("CREATE", "TABLE")
        mode = "create"
    if p.accept("IF", "NOT", "EXISTS"):
        if mode != "create":
            p.fail("IF NOT EXISTS cannot be combined with REPLACE")
        mode = "createIfNotExists"
    return mode


def _clauses(p: Parser, st: CreateTable) -> CreateTable:
    """The clauses after ``USING DELTA`` up to ``AS`` or the end, each at most once."""
    seen: set[str] = set()
    change: dict[str, Any] = {}
    while not p.done() and not p.at("AS"):
        t = p.peek()
        assert t is not None
        clause = t.upper
        if clause in seen:
            p.fail(f"{clause} given twice")
        seen.add(clause)
        if p.accept("PARTITIONED", "BY"):
            change["partitioned_by"] = tuple(p.name_list())
        elif p.accept("CLUSTER", "BY"):
            change["cluster_by"] = tuple(p.name_list())
        elif p.accept("LOCATION"):
            location = p.string()
            if st.path is not None and location != st.path:
                p.fail("LOCATION differs from the delta.`path` named")
            change["path"] = location
        elif p.accept("COMMENT"):
            change["comment"] = p.string()
        elif p.accept("TBLPROPERTIES"):
            change["properties"] = tuple(p.properties().items())
        else:
            p.fail("expected PARTITIONED BY, CLUSTER BY, LOCATION, COMMENT, TBLPROPERTIES or AS")
    if change.get("partitioned_by") and change.get("cluster_by") is not None:
        p.fail("PARTITIONED BY and CLUSTER BY cannot be combined")
    return replace(st, **change)


def _columns(p: Parser) -> list[Column]:
    p.expect("(")
    cols = [_column(p)]
    while p.accept(","):
        cols.append(_column(p))
    p.expect(")")
    return cols


def _column(p: Parser) -> Column:
    col = Column(p.word(), p.type_text(*_COLUMN_STOPS))
    while not p.at(",") and not p.at(")") and not p.done():
        if p.accept("NOT", "NULL"):
            col = replace(col, nullable=False)
        elif p.accept("COMMENT"):
            col = replace(col, comment=p.string())
        elif p.accept("GENERATED"):
            always = p.accept("ALWAYS")
            if not always:
                p.expect("BY", "DEFAULT")
            p.expect("AS")
            if p.accept("IDENTITY"):
                start = step = 1
                if p.accept("("):
                    while not p.accept(")"):
                        if p.accept("START", "WITH"):
                            start = _signed(p)
                        elif p.accept("INCREMENT", "BY"):
                            step = _signed(p)
                        else:
                            p.fail("expected START WITH n or INCREMENT BY m")
                col = replace(col, identity=(start, step, always))
            elif always:
                col = replace(col, expression=p.parenthesized())
            else:
                p.fail("expected IDENTITY (GENERATED BY DEFAULT is for identity columns)")
        else:
            p.fail("expected NOT NULL, GENERATED or COMMENT")
    return col


def _signed(p: Parser) -> int:
    negative = p.accept("-")
    return -p.integer() if negative else p.integer()
