"""The column statements of ``ALTER TABLE`` on a Delta table: ``ADD COLUMN[S]``, ``RENAME
COLUMN``, ``DROP COLUMN[S]``, ``ALTER | CHANGE [COLUMN] ... COMMENT | SET NOT NULL | DROP NOT
NULL | TYPE``, ``CLUSTER BY (...) | NONE``.

Guarantees: each statement is parsed whole before anything runs and is one call of the
``DeltaTable`` schema-change API (:mod:`delta_pyds.spark.tables.schema_api`, whose rules are
delta-spark's); column types are Spark SQL types (``BIGINT``, ``DECIMAL(10,2)``,
``STRUCT<a: INT>``), read by Spark's own DDL parser; names may be backquoted and dotted
(``a.b`` is field ``b`` of struct ``a``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from delta_pyds.spark.sql.parser import Parser, TableRef
from delta_pyds.spark.sql.tables import delta_table, empty

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

FORM = (
    "ALTER TABLE <table> ADD COLUMN[S] (name type [COMMENT 'c'] [FIRST | AFTER col], ...) | RENAME COLUMN a TO b"
    " | DROP COLUMN[S] [IF EXISTS] (a, ...) | ALTER [COLUMN] a (COMMENT 'c' | SET NOT NULL | DROP NOT NULL"
    " | TYPE type | FIRST | AFTER col) | CLUSTER BY (a, ...) | CLUSTER BY NONE"
)


def _spark_type(text: str) -> Any:
    from pyspark.sql.types import DataType

    return DataType.fromDDL(text)


def _column(p: Parser) -> list[str]:
    """A column path: ``a.b`` is field b of struct a; a backquoted ```a.b``` is one name."""
    parts = [p.word()]
    while p.at(".") and p.peek(1) is not None and p.peek(1).kind in ("word", "ident"):  # type: ignore[union-attr]
        p.i += 1
        parts.append(p.word())
    return parts


def _columns(p: Parser) -> list[list[str]]:
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


def _column_spec(p: Parser) -> tuple[list[str], str, str | None, str | None]:
    name = _column(p)
    dtype = p.type_text("COMMENT", "NOT", "FIRST", "AFTER")
    if p.at("NOT", "NULL"):
        p.fail("ADD COLUMNS adds nullable columns only (as delta-spark)")
    comment = p.string() if p.accept("COMMENT") else None
    return name, dtype, comment, _position(p)


def column_statement(spark: SparkSession, p: Parser, ref: TableRef) -> Callable[[], Any] | None:
    """The runner of the column statement at the cursor (after ``ALTER TABLE <table>``), or
    None if the cursor is not at one."""
    if p.accept("ADD", "COLUMNS") or p.accept("ADD", "COLUMN"):
        return _add_columns(spark, p, ref)
    if p.accept("RENAME", "COLUMN"):
        return _rename_column(spark, p, ref)
    if p.accept("DROP", "COLUMNS") or p.accept("DROP", "COLUMN"):
        return _drop_columns(spark, p, ref)
    if p.accept("ALTER") or p.accept("CHANGE"):
        return _alter_column(spark, p, ref)
    if p.accept("CLUSTER", "BY"):
        p.form = FORM
        cols = [] if p.accept("NONE") else p.name_list()
        p.end()
        return lambda: empty(spark, delta_table(spark, ref).clusterBy(*cols))
    return None


def _add_columns(spark: SparkSession, p: Parser, ref: TableRef) -> Callable[[], DataFrame]:
    """``ADD COLUMN[S] [(]spec[, spec...][)]`` (after the keywords)."""
    p.form = FORM
    paren = p.accept("(")
    specs = [_column_spec(p)]
    while p.accept(","):
        specs.append(_column_spec(p))
    if paren:
        p.expect(")")
    p.end()

    def add() -> DataFrame:
        dt = delta_table(spark, ref)
        return empty(spark, dt.addColumns([(n, _spark_type(t), c, pos) for n, t, c, pos in specs]))

    return add


def _rename_column(spark: SparkSession, p: Parser, ref: TableRef) -> Callable[[], DataFrame]:
    """``RENAME COLUMN old TO new`` (after the keywords)."""
    p.form = FORM
    old = _column(p)
    p.expect("TO")
    new = p.word()
    p.end()
    return lambda: empty(spark, delta_table(spark, ref).renameColumn(old, new))


def _drop_columns(spark: SparkSession, p: Parser, ref: TableRef) -> Callable[[], DataFrame]:
    """``DROP COLUMN[S] [IF EXISTS] names`` (after the keywords)."""
    p.form = FORM
    if_exists = p.accept("IF", "EXISTS")
    names = _columns(p)
    p.end()
    return lambda: empty(spark, delta_table(spark, ref).dropColumns(names, ifExists=if_exists))


def _alter_column(spark: SparkSession, p: Parser, ref: TableRef) -> Callable[[], DataFrame]:
    """``ALTER|CHANGE [COLUMN] name`` and one change (after ``ALTER`` / ``CHANGE``)."""
    p.form = FORM
    p.accept("COLUMN")
    column = _column(p)
    kwargs: dict[str, Any] = {}
    if p.accept("COMMENT"):
        kwargs["comment"] = p.string()
    elif p.accept("SET", "NOT", "NULL"):
        kwargs["nullable"] = False
    elif p.accept("DROP", "NOT", "NULL"):
        kwargs["nullable"] = True
    elif p.accept("TYPE"):
        text = p.type_text("COMMENT", "NOT", "FIRST", "AFTER")
        kwargs["dataType"] = text
    elif p.at("FIRST") or p.at("AFTER"):
        kwargs["position"] = _position(p)
    else:
        p.fail("expected COMMENT 'text', SET NOT NULL, DROP NOT NULL, TYPE <type>, FIRST or AFTER <column>")
    p.end()

    def alter() -> DataFrame:
        if "dataType" in kwargs:
            kwargs["dataType"] = _spark_type(kwargs["dataType"])
        return empty(spark, delta_table(spark, ref).alterColumn(column, **kwargs))

    return alter
