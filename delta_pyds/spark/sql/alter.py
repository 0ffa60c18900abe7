"""Parsing the column statements of ``ALTER TABLE`` on a Delta table: ``ADD COLUMN[S]``,
``RENAME COLUMN``, ``DROP COLUMN[S]``, ``ALTER | CHANGE [COLUMN] ... COMMENT | SET NOT NULL |
DROP NOT NULL | TYPE``, ``CLUSTER BY (...) | NONE``, into the statements of
:mod:`delta_pyds.spark.sql.ast`, with no SparkSession.

Guarantees: each statement is parsed whole before anything runs and runs as one call of the
``DeltaTable`` schema-change API (:mod:`delta_pyds.spark.tables.schema_api`, whose rules are
delta-spark's); column types are Spark SQL types (``BIGINT``, ``DECIMAL(10,2)``,
``STRUCT<a: INT>``), read by Spark's own DDL parser; names may be backquoted and dotted
(``a.b`` is field ``b`` of struct ``a``). No pyspark here."""

from __future__ import annotations

from delta_pyds.spark.sql.ast import (
    AddColumns,
    AlterColumn,
    ClusterBy,
    DropColumns,
    NewColumn,
    RenameColumn,
    Statement,
    Table,
)
from delta_pyds.spark.sql.parser import Parser

FORM = (
    "ALTER TABLE <table> ADD COLUMN[S] (name type [COMMENT 'c'] [FIRST | AFTER col], ...) | RENAME COLUMN a TO b"
    " | DROP COLUMN[S] [IF EXISTS] (a, ...) | ALTER [COLUMN] a (COMMENT 'c' | SET NOT NULL | DROP NOT NULL"
    " | TYPE type | FIRST | AFTER col) | CLUSTER BY (a, ...) | CLUSTER BY NONE"
)


def _column(p: Parser) -> tuple[str, ...]:
    """A column path: ``a.b`` is field b of struct a; a backquoted ```a.b``` is one name."""
    return p.parts()


def _columns(p: Parser) -> list[tuple[str, ...]]:
    paren = p.accept("(")
    out = [_column(p)]
    while p.accept(","):
        out.append(_column(p))
    if paren:
        p.expect(")")
    return out


def _position(p: Parser) -> str | None:
    """``FIRST`` or ``AFTER <name>`` at the cursor, as the API's position argument."""
    if p.accept("FIRST"):
        return "FIRST"
    if p.accept("AFTER"):
        return "AFTER " + p.word()
    return None


def _column_spec(p: Parser) -> NewColumn:
    name = _column(p)
    dtype = p.type_text("COMMENT", "NOT", "FIRST", "AFTER")
    if p.at("NOT", "NULL"):
        p.fail("ADD COLUMNS adds nullable columns only (as delta-spark)")
    comment = p.string() if p.accept("COMMENT") else None
    return NewColumn(name, dtype, comment, _position(p))


def column_statement(p: Parser, table: Table) -> Statement | None:
    """The column statement at the cursor (after ``ALTER TABLE <table>``), or None if the
    cursor is not at one."""
    if p.accept("ADD", "COLUMNS") or p.accept("ADD", "COLUMN"):
        return _add_columns(p, table)
    if p.accept("RENAME", "COLUMN"):
        return _rename_column(p, table)
    if p.accept("DROP", "COLUMNS") or p.accept("DROP", "COLUMN"):
        return _drop_columns(p, table)
    if p.accept("ALTER") or p.accept("CHANGE"):
        return _alter_column(p, table)
    if p.accept("CLUSTER", "BY"):
        p.form = FORM
        cols = () if p.accept("NONE") else tuple(p.name_list())
        p.end()
        return ClusterBy(table, cols)
    return None


def _add_columns(p: Parser, table: Table) -> AddColumns:
    """``ADD COLUMN[S] [(]spec[, spec...][)]`` (after the keywords)."""
    p.form = FORM
    paren = p.accept("(")
    specs = [_column_spec(p)]
    while p.accept(","):
        specs.append(_column_spec(p))
    if paren:
        p.expect(")")
    p.end()
    return AddColumns(table, tuple(specs))


def _rename_column(p: Parser, table: Table) -> RenameColumn:
    """``RENAME COLUMN old TO new`` (after the keywords)."""
    p.form = FORM
    old = _column(p)
    p.expect("TO")
    new = p.word()
    p.end()
    return RenameColumn(table, old, new)


def _drop_columns(p: Parser, table: Table) -> DropColumns:
    """``DROP COLUMN[S] [IF EXISTS] names`` (after the keywords)."""
    p.form = FORM
    if_exists = p.accept("IF", "EXISTS")
    names = _columns(p)
    p.end()
    return DropColumns(table, tuple(names), if_exists)


def _alter_column(p: Parser, table: Table) -> AlterColumn:
    """``ALTER|CHANGE [COLUMN] name`` and one change (after ``ALTER`` / ``CHANGE``)."""
    p.form = FORM
    p.accept("COLUMN")
    column = _column(p)
    if p.accept("COMMENT"):
        st = AlterColumn(table, column, comment=p.string())
    elif p.accept("SET", "NOT", "NULL"):
        st = AlterColumn(table, column, nullable=False)
    elif p.accept("DROP", "NOT", "NULL"):
        st = AlterColumn(table, column, nullable=True)
    elif p.accept("TYPE"):
        st = AlterColumn(table, column, data_type=p.type_text("COMMENT", "NOT", "FIRST", "AFTER"))
    elif p.at("FIRST") or p.at("AFTER"):
        st = AlterColumn(table, column, position=_position(p))
    else:
        p.fail("expected COMMENT 'text', SET NOT NULL, DROP NOT NULL, TYPE <type>, FIRST or AFTER <column>")
    p.end()
    return st
