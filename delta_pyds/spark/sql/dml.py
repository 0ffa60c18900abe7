"""The DML statements of :func:`delta_pyds.sql`: DELETE, UPDATE, MERGE INTO, INSERT INTO /
OVERWRITE.

Guarantees: each is parsed whole before it runs and is one call of the public ``DeltaTable``
API (``delete``, ``update``, ``merge`` with one builder call per WHEN clause) or of
``write_delta`` (INSERT: columns by position, as SQL does; ``REPLACE WHERE`` is
``replaceWhere``); results have delta-spark's columns (``num_affected_rows`` ...). DELETE/UPDATE
table aliases are removed from column references (DeltaTable takes unqualified columns);
MERGE keeps its aliases. Conditions and expressions reach Spark as Spark SQL text."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from delta_pyds.errors import SqlParseError
from delta_pyds.spark.sql.parser import Parser, name_text, unqualify
from delta_pyds.spark.sql.tables import (
    affected,
    current_version,
    delta_table,
    metrics_row,
    newest_metrics_after,
    read_ref,
    run_query,
)
from delta_pyds.spark.tables.merge.clauses import MergeClause, When

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


def delete(spark: SparkSession, p: Parser) -> Callable[[], DataFrame]:
    ref = p.require_table()
    alias = p.alias("WHERE")
    if p.accept("WHERE"):
        if p.done():
            p.fail("expected a condition")
        condition: str | None = unqualify(p.rest(), alias)
    else:
        condition = None
    p.end()

    def run() -> DataFrame:
        dt = delta_table(spark, ref)
        dt.delete(condition)
        return affected(spark, dt.lastCommit, ("numDeletedRows",), ("num_affected_rows",))

    return run


def update(spark: SparkSession, p: Parser) -> Callable[[], DataFrame]:
    ref = p.require_table()
    alias = p.alias("SET")
    p.expect("SET")
    sets: dict[str, str] = {}
    for item in p.split_top(("WHERE",)):
        sub = Parser(item)
        sub.statement, sub.form = p.statement, p.form
        column = _key(sub.parts(), alias)
        sub.expect("=")
        if sub.done():
            p.fail(f"no value for {column}")
        sets[column] = unqualify(sub.rest(), alias)
    condition = unqualify(p.rest(), alias) if p.accept("WHERE") else None
    p.end()

    def run() -> DataFrame:
        dt = delta_table(spark, ref)
        dt.update(condition, sets)
        return affected(spark, dt.lastCommit, ("numUpdatedRows",), ("num_affected_rows",))

    return run


def merge(spark: SparkSession, p: Parser) -> Callable[[], DataFrame]:
    evolve = p.accept("WITH", "SCHEMA", "EVOLUTION")
    p.expect("INTO")
    ref = p.require_table()
    target_alias = p.alias("USING")
    p.expect("USING")
    source = _merge_source(spark, p)
    source_alias = p.alias("ON")
    p.expect("ON")
    condition = p.until("WHEN")
    clauses: list[MergeClause] = []
    while p.accept("WHEN"):
        clauses.append(_merge_clause(p, target_alias))
    if not clauses:
        p.fail("expected WHEN MATCHED / WHEN NOT MATCHED clauses")
    p.end()

    def run() -> DataFrame:
        dt = delta_table(spark, ref)
        if target_alias:
            dt = dt.alias(target_alias)
        df = source()
        if source_alias:
            df = df.alias(source_alias)
        b = dt.merge(df, condition)
        if evolve:
            b = b.withSchemaEvolution()
        for clause in clauses:
            b = b.add_clause(clause)
        return b.execute()

    return run


def _merge_source(spark: SparkSession, p: Parser) -> Callable[[], DataFrame]:
    """The MERGE source after ``USING``: a parenthesized query, a Delta table reference
    (time travel allowed) or a session table or view."""
    if p.at("("):
        query = p.parenthesized()
        return lambda: run_query(spark, query)
    src = p.table_ref(time_travel=True)
    if src is not None:
        return lambda: read_ref(spark, src)
    name = name_text(p.parts())
    return lambda: spark.table(name)


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


def insert(spark: SparkSession, p: Parser) -> Callable[[], DataFrame]:
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
        columns = [c[0] if len(c) == 1 else ".".join(c) for c in _names(p)]
    replace_where = p.until(*_QUERY_WORDS) if p.accept("REPLACE", "WHERE") else None
    t = p.peek()
    if t is None or not (t.upper in _QUERY_WORDS or t.text == "("):
        p.fail("expected a query (SELECT ..., VALUES ..., WITH ..., FROM ..., TABLE t)")
    query = p.rest()

    def run() -> DataFrame:
        from delta_pyds.spark.tables.auto_compaction import write_delta

        delta_table(spark, ref)
        df = run_query(spark, query)
        if not by_name:
            names = columns or read_ref(spark, ref).columns
            if len(df.columns) != len(names):
                raise SqlParseError(
                    f"INSERT: the query gives {len(df.columns)} columns, the table {'list ' if columns else ''}"
                    f"has {len(names)} ({', '.join(names)})"
                )
            df = df.toDF(*names)
        before = current_version(ref.path)
        options = {"replaceWhere": replace_where} if replace_where else {}
        commit = write_delta(df, ref.path, mode="overwrite" if overwrite or replace_where else "append", **options)
        out = ("num_affected_rows", "num_inserted_rows")
        if commit is None:  # the data source path does not hand its commit back
            return metrics_row(spark, newest_metrics_after(ref.path, before), ("numOutputRows",), out)
        return affected(spark, commit, ("numOutputRows",), out)

    return run


_QUERY_WORDS = ("SELECT", "WITH", "VALUES", "FROM", "TABLE", "MAP", "REDUCE")
