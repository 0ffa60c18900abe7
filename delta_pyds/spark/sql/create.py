"""``CREATE [OR REPLACE] TABLE`` / ``REPLACE TABLE`` (with columns, or ``AS SELECT``) for
:func:`delta_pyds.sql`.

Guarantees: the whole statement is parsed before anything runs (a parse error changes
nothing); a table definition runs as one ``DeltaTable.create / createIfNotExists / replace /
createOrReplace`` builder call (``location(path)``, ``addColumn`` per column with its
generated expression, identity, NOT NULL and comment, ``partitionedBy`` / ``clusterBy``,
``property`` per TBLPROPERTIES entry, ``comment``); ``AS SELECT`` reads the query first (its
Delta tables through the native path), defines the table with the query's columns through the
same builder and then appends the rows with ``write_delta`` (two commits: the definition, then
the rows). A named table with LOCATION becomes a session name, as ``CREATE TABLE <name> USING
delta LOCATION`` does; a session name without LOCATION names its table's path."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from delta_pyds.errors import SqlParseError
from delta_pyds.spark.sql.parser import Parser
from delta_pyds.spark.sql.tables import NAMES, empty, run_query

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

FORM = (
    "CREATE [OR REPLACE] TABLE [IF NOT EXISTS] <delta.`path` | name> [(col type [NOT NULL]"
    " [GENERATED ALWAYS AS (expr) | GENERATED ALWAYS | BY DEFAULT AS IDENTITY [(START WITH n INCREMENT BY m)]]"
    " [COMMENT 'c'], ...)] USING delta [PARTITIONED BY (col, ...) | CLUSTER BY (col, ...)] [LOCATION 'path']"
    " [COMMENT 'c'] [TBLPROPERTIES ('k' = 'v', ...)] [AS <query>] | REPLACE TABLE ..."
)

_COLUMN_STOPS = {"NOT", "GENERATED", "COMMENT", "DEFAULT"}


@dataclass
class Column:
    name: str
    type: str
    nullable: bool = True
    expression: str | None = None
    identity: tuple[int, int, bool] | None = None  # start, step, always
    comment: str | None = None


@dataclass
class CreateStatement:
    mode: str  # a DeltaTable builder: create, createIfNotExists, replace, createOrReplace
    name: str | None = None
    path: str | None = None
    columns: list[Column] | None = None
    partitioned: list[str] = field(default_factory=list)
    cluster: list[str] | None = None
    comment: str | None = None
    properties: dict[str, str] = field(default_factory=dict)
    query: str | None = None


def recognise(p: Parser) -> bool:
    """Whether the statement at the start of ``p`` is a Delta CREATE / REPLACE TABLE: it names
    ``delta.`path``` or says ``USING delta``, and is not the registering form
    ``CREATE TABLE [IF NOT EXISTS] name USING delta LOCATION 'p'`` (no columns, no query)."""
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
    """``CREATE TABLE [IF NOT EXISTS] name USING delta LOCATION 'p'`` exactly."""
    p.i = 0
    ok = False
    if p.accept("CREATE", "TABLE"):
        p.accept("IF", "NOT", "EXISTS")
        t = p.peek()
        if t is not None and t.kind in ("word", "ident") and not p.at("DELTA", "."):
            p.dotted()
            if p.accept("USING", "DELTA", "LOCATION"):
                t = p.peek()
                ok = t is not None and t.kind == "string" and p.peek(1) is None
    p.i = 0
    return ok


def parse(p: Parser) -> CreateStatement:
    p.i = 0
    p.statement, p.form = "CREATE TABLE", FORM
    st = CreateStatement(_mode(p))
    if p.at("DELTA", "."):
        ref = p.require_table()
        if ref.version is not None:
            p.fail("a table to create has no version")
        st.path = ref.path
    else:
        st.name = p.dotted()
    if p.at("("):
        st.columns = _columns(p)
    p.expect("USING", "DELTA")
    _clauses(p, st)
    if p.accept("AS"):
        if st.columns is not None:
            p.fail("AS <query> takes its columns from the query: give no column list")
        st.query = p.rest()
        if not st.query:
            p.fail("expected a query after AS")
    p.end()
    if st.path is None and st.name is not None:
        st.path = p.names.get(st.name.lower())  # a session name: its table's path
    if st.path is None:
        p.fail("expected LOCATION 'path' (a table has no catalog name without one)")
    if st.columns is None and st.query is None:
        p.fail("expected a column list or AS <query>")
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


def _clauses(p: Parser, st: CreateStatement) -> None:
    """The clauses after ``USING DELTA`` up to ``AS`` or the end, each at most once."""
    seen: set[str] = set()
    while not p.done() and not p.at("AS"):
        t = p.peek()
        assert t is not None
        clause = t.upper
        if clause in seen:
            p.fail(f"{clause} given twice")
        seen.add(clause)
        if p.accept("PARTITIONED", "BY"):
            st.partitioned = p.name_list()
        elif p.accept("CLUSTER", "BY"):
            st.cluster = p.name_list()
        elif p.accept("LOCATION"):
            location = p.string()
            if st.path is not None and location != st.path:
                p.fail("LOCATION differs from the delta.`path` named")
            st.path = location
        elif p.accept("COMMENT"):
            st.comment = p.string()
        elif p.accept("TBLPROPERTIES"):
            st.properties = p.properties()
        else:
            p.fail("expected PARTITIONED BY, CLUSTER BY, LOCATION, COMMENT, TBLPROPERTIES or AS")
    if st.partitioned and st.cluster is not None:
        p.fail("PARTITIONED BY and CLUSTER BY cannot be combined")


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
            col.nullable = False
        elif p.accept("COMMENT"):
            col.comment = p.string()
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
                col.identity = (start, step, always)
            elif always:
                col.expression = p.parenthesized()
            else:
                p.fail("expected IDENTITY (GENERATED BY DEFAULT is for identity columns)")
        else:
            p.fail("expected NOT NULL, GENERATED or COMMENT")
    return col


def _signed(p: Parser) -> int:
    negative = p.accept("-")
    return -p.integer() if negative else p.integer()


def create(spark: SparkSession, p: Parser) -> Callable[[], Any]:
    """The handler of :func:`delta_pyds.sql` for CREATE / REPLACE TABLE."""
    st = parse(p)
    names = NAMES.get(spark, {})
    if st.name is not None and st.name.lower() in names and names[st.name.lower()] != st.path:
        raise SqlParseError(f"CREATE TABLE: the session name {st.name} already names {names[st.name.lower()]}")
    return lambda: run(spark, st)


def run(spark: SparkSession, st: CreateStatement) -> DataFrame:
    from delta_pyds.spark.tables import DeltaTable, IdentityGenerator
    from delta_pyds.spark.tables.auto_compaction import write_delta

    assert st.path is not None
    rows = run_query(spark, st.query) if st.query is not None else None
    exists = DeltaTable.isDeltaTable(spark, st.path)
    builder = getattr(DeltaTable, st.mode)(spark).location(st.path)
    if rows is not None:
        builder = builder.addColumns(rows.schema)
    for c in st.columns or ():
        gen: Any = c.expression
        by_default = None
        if c.identity is not None:
            start, step, always = c.identity
            generator = IdentityGenerator(start, step)
            gen, by_default = (generator, None) if always else (None, generator)
        builder = builder.addColumn(c.name, c.type, c.nullable, gen, by_default, c.comment)
    if st.partitioned:
        builder = builder.partitionedBy(*st.partitioned)
    if st.cluster is not None:
        builder = builder.clusterBy(*st.cluster)
    for k, v in st.properties.items():
        builder = builder.property(k, v)
    if st.comment is not None:
        builder = builder.comment(st.comment)
    builder.execute()
    if rows is not None and not (st.mode == "createIfNotExists" and exists):
        write_delta(rows, st.path, mode="append")
    if st.name is not None:
        NAMES.setdefault(spark, {}).setdefault(st.name.lower(), st.path)
    return empty(spark, None)
