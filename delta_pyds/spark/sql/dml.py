"""Parsing the DML statements of :func:`delta_pyds.sql` (DELETE, UPDATE, MERGE INTO, INSERT
INTO / OVERWRITE) into the statements of :mod:`delta_pyds.spark.sql.ast`, with no SparkSession
(:mod:`delta_pyds.spark.sql.execute_writes` runs them).

Guarantees: each is parsed whole before it runs and runs as one call of the public ``DeltaTable``
API (``delete``, ``update``, ``merge`` with one builder call per WHEN clause) or of
``write_delta`` (INSERT: columns by position, as SQL does; ``REPLACE WHERE`` is
``replaceWhere``); results have delta-spark's columns (``num_affected_rows`` ...). DELETE/UPDATE
table aliases are never rewritten out of the text: the statement runs on the table under its
alias (``DeltaTable.alias``), so Spark's analyzer resolves ``t.id`` with its own scoping (a
subquery's or a lambda's ``t`` stays its own); MERGE keeps its aliases too. Conditions and
expressions reach Spark as the Spark SQL text written. No pyspark here."""

from __future__ import annotations

from delta_pyds.spark.commands.merge.clauses import MergeClause, When
from delta_pyds.spark.sql.ast import Delete, Insert, Merge, SparkTable, Subquery, Table, Update
from delta_pyds.spark.sql.parser import Parser, name_text


def delete(p: Parser) -> Delete:
    ref = p.require_table()
    alias = p.alias("WHERE")
    if p.accept("WHERE"):
        if p.done():
            p.fail("expected a condition")
        condition: str | None = p.rest()
    else:
        condition = None
    p.end()
    return Delete(ref, alias, condition)


def update(p: Parser) -> Update:
    ref = p.require_table()
    alias = p.alias("SET")
    p.expect("SET")
    sets: dict[str, str] = {}
    for item in p.split_top(("WHERE",)):
        sub = Parser(item)
        sub.statement, sub.form = p.statement, p.form
        column = name_text(sub.parts())  # an alias qualifier is resolved with the table's columns
        sub.expect("=")
        if sub.done():
            p.fail(f"no value for {column}")
        sets[column] = sub.rest()
    condition = p.rest() if p.accept("WHERE") else None
    p.end()
    return Update(ref, tuple(sets.items()), alias, condition)


def merge(p: Parser) -> Merge:
    evolve = p.accept("WITH", "SCHEMA", "EVOLUTION")
    p.expect("INTO")
    ref = p.require_table()
    target_alias = p.alias("USING")
    p.expect("USING")
    source = _merge_source(p)
    source_alias = p.alias("ON")
    p.expect("ON")
    condition = p.until("WHEN")
    clauses: list[MergeClause] = []
    while p.accept("WHEN"):
        clauses.append(_merge_clause(p, target_alias))
    if not clauses:
        p.fail("expected WHEN MATCHED / WHEN NOT MATCHED clauses")
    p.end()
    return Merge(ref, source, condition, tuple(clauses), target_alias, source_alias, evolve)


def _merge_source(p: Parser) -> Table | Subquery | SparkTable:
    """The MERGE source after ``USING``: a parenthesized query, a table (time travel allowed;
    a name that is no Delta table when the statement runs is Spark's session table or view)
    or a name only Spark reads."""
    if p.at("("):
        return Subquery(p.parenthesized())
    src = p.table(time_travel=True)
    if src is not None:
        return src
    return SparkTable(name_text(p.parts()))


def _merge_clause(p: Parser, target_alias: str | None) -> MergeClause:
    """One ``WHEN [NOT] MATCHED [BY SOURCE|TARGET] [AND cond] THEN action`` (after
    ``WHEN``)."""
    when: When
    if p.accept("MATCHED"):
        when = "matched"
    elif p.accept("NOT", "MATCHED"):
        when = "not_matched_by_source" if p.accept("BY", "SOURCE") else "not_matched"
        if when == "not_matched":
            p.accept("BY", "TARGET")
    else:
        p.fail("expected MATCHED or NOT MATCHED")
    cond = p.until("THEN", allow_end=False) if p.accept("AND") else None
    p.expect("THEN")
    if when != "not_matched" and p.accept("DELETE"):
        return MergeClause(when, "delete", cond)
    if when != "not_matched" and p.accept("UPDATE", "SET"):
        if when == "matched" and p.accept("*"):
            return MergeClause(when, "update", cond)
        return MergeClause.of(when, "update", cond, _assignments(p, target_alias))
    if when == "not_matched" and p.accept("INSERT"):
        if p.accept("*"):
            return MergeClause(when, "insert", cond)
        columns = [_key(c, target_alias) for c in _names(p)]
        p.expect("VALUES")
        p.expect("(")
        values = p.split_top(())
        p.expect(")")
        if len(values) != len(columns):
            p.fail(f"{len(columns)} columns but {len(values)} values")
        return MergeClause.of(when, "insert", cond, dict(zip(columns, values)))
    p.fail("expected UPDATE SET, DELETE or INSERT")
    raise AssertionError  # p.fail raises


def _key(parts: tuple[str, ...], alias: str | None) -> str:
    """A column named in SQL as the DeltaTable API takes it: the alias qualifier dropped,
    each part backquoted where needed (```a.b``` is the column named a.b, ``a.b`` field b of
    struct a)."""
    if alias and len(parts) > 1 and parts[0].lower() == alias.lower():
        parts = parts[1:]
    return name_text(parts)


def _names(p: Parser) -> list[tuple[str, ...]]:
    """``(a, b.c, `d.e`, ...)`` as name parts."""
    p.expect("(")
    names = [p.parts()]
    while p.accept(","):
        names.append(p.parts())
    p.expect(")")
    return names


def _assignments(p: Parser, alias: str | None) -> dict[str, str]:
    sets: dict[str, str] = {}
    for item in p.split_top(("WHEN", "WHERE")):
        sub = Parser(item)
        sub.statement, sub.form = p.statement, p.form
        column = _key(sub.parts(), alias)
        sub.expect("=")
        if sub.done():
            p.fail(f"no value for {column}")
        sets[column] = sub.rest()
    return sets


def insert(p: Parser) -> Insert:
    overwrite = p.accept("OVERWRITE")
    if not overwrite:
        p.expect("INTO")
    p.accept("TABLE")
    ref = p.require_table()
    if p.at("PARTITION") or p.at("IF") or p.at("WITH", "("):
        p.fail("PARTITION (...), IF NOT EXISTS and WITH (options) are not supported")
    columns = None
    by_name = p.accept("BY", "NAME")
    if not by_name and p.at("(") and not (p.peek(1) is not None and p.peek(1).upper in _QUERY_WORDS):  # type: ignore[union-attr]
        columns = tuple(c[0] if len(c) == 1 else ".".join(c) for c in _names(p))
    replace_where = p.until(*_QUERY_WORDS) if p.accept("REPLACE", "WHERE") else None
    t = p.peek()
    if t is None or not (t.upper in _QUERY_WORDS or t.text == "("):
        p.fail("expected a query (SELECT ..., VALUES ..., WITH ..., FROM ..., TABLE t)")
    return Insert(ref, p.rest(), overwrite, columns, by_name, replace_where)


_QUERY_WORDS = ("SELECT", "WITH", "VALUES", "FROM", "TABLE", "MAP", "REDUCE")
