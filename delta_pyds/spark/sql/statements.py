"""``delta_pyds.sql``: SQL text parsed into a statement value (:func:`parse`, no SparkSession),
then run on the session (:func:`delta_pyds.spark.sql.execute.execute`).

Guarantees: :func:`parse` is a pure function of the text, the session's
:class:`~delta_pyds.expressions.lexer.Dialect` and the ``args`` to bind, given as values: it
returns a frozen statement of :mod:`delta_pyds.spark.sql.ast` (``Query`` for anything that is
not a Delta statement) or raises :class:`~delta_pyds.errors.SqlParseError` naming the
statement, the position and the supported form. A statement is parsed whole before anything
runs (a parse error changes nothing). :func:`sql` asks the catalog, before binding anything,
whether a statement Spark has too (``DELETE FROM t``, ...) names a Delta table; if not, the
text reaches ``spark.sql(statement, args, **kwargs)`` unchanged. The parsers of the table
maintenance statements are here; DML, CREATE, ALTER TABLE columns and the catalog statements
have their own modules."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from delta_pyds.errors import ArgumentTypeError, UnsupportedFeatureError
from delta_pyds.expressions.lexer import DEFAULT_DIALECT, Dialect
from delta_pyds.spark.session.dialect import session_dialect
from delta_pyds.spark.session.own_calls import own_calls
from delta_pyds.spark.sql import alter, catalog_statements, create, dml
from delta_pyds.spark.sql.ast import (
    AddConstraint,
    ConvertToDelta,
    DescribeDetail,
    DescribeHistory,
    DropConstraint,
    DropFeature,
    Generate,
    Optimize,
    Query,
    Reorg,
    Restore,
    SetTblProperties,
    ShowColumns,
    ShowPartitions,
    ShowTblProperties,
    Statement,
    TruncateTable,
    UnsetTblProperties,
    Vacuum,
)
from delta_pyds.spark.sql.execute import Resolution, execute
from delta_pyds.spark.sql.heads import FORMS, Head, recognise
from delta_pyds.spark.sql.parameters import bind, format_text
from delta_pyds.spark.sql.parser import Parser
from delta_pyds.spark.sql.table_refs import run_statement

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

Args = Mapping[str, Any] | list[Any] | tuple[Any, ...]


def sql(spark: SparkSession, statement: str, args: Any = None, **kwargs: Any) -> DataFrame:
    """Runs one statement (see :mod:`delta_pyds.spark.sql`); its own ``spark.sql`` calls are
    Spark's, past the ``spark.sql`` front door (:mod:`delta_pyds.spark.session.own_calls`)."""
    with own_calls():
        return _sql(spark, statement, args, **kwargs)


def _sql(spark: SparkSession, statement: str, args: Any = None, **kwargs: Any) -> DataFrame:
    if not isinstance(statement, str):
        raise ArgumentTypeError(f"'statement' must be a str (one SQL statement), got {type(statement).__name__}")
    dialect = session_dialect(spark) or DEFAULT_DIALECT
    resolution = Resolution(spark)
    if not _is_delta(resolution, recognise(Parser(statement, dialect=dialect))):
        return run_statement(spark, Parser(statement, resolution.lookup, dialect), statement, args, kwargs)
    _check_args(args)
    views: list[str] = []
    try:
        text = _formatted(statement, kwargs, views.append)
        if args is not None:
            text = bind(text, args)
        if text != statement and not _is_delta(resolution, recognise(Parser(text, dialect=dialect))):
            # formatting made it another statement, or one whose table is no Delta table
            return run_statement(spark, Parser(text, resolution.lookup, dialect), text)
        return execute(spark, parse(text, dialect=dialect), resolution=resolution)
    finally:
        for name in views:
            spark.catalog.dropTempView(name)


def parse(text: str, *, dialect: Dialect = DEFAULT_DIALECT, args: Args | None = None) -> Statement:
    """The statement ``text`` holds (see the module docstring): ``args`` are bound into a
    Delta statement's text first (``:name`` markers with a mapping, ``?`` with a list), as
    :mod:`delta_pyds.spark.sql.parameters` binds them; a ``Query`` keeps them for Spark."""
    p = Parser(text, dialect=dialect)
    head = recognise(p)
    if head is None:
        return Query(text, args)
    if args is not None:
        text = _bound_text(text, args)
        p = Parser(text, dialect=dialect)
        head = recognise(p)
        if head is None:  # binding made it another statement
            return Query(text)
    p.statement, p.form = head.key, FORMS[head.key]
    return _PARSERS[head.key](p)


def _is_delta(resolution: Resolution, head: Head | None) -> bool:
    """Whether ``head`` is a Delta statement: every one is, but a statement Spark has too
    whose table is a name that is no Delta table of the session."""
    if head is None:
        return False
    if not head.needs_resolution:
        return True
    assert head.table is not None and head.table.name is not None
    return resolution.lookup(head.table.name, head.views) is not None


def _check_args(args: Any) -> None:
    if args is not None and not isinstance(args, (Mapping, list, tuple)):
        raise ArgumentTypeError(
            f"'args' must be a dict (named :markers) or a list (? markers), got {type(args).__name__}"
        )


def _bound_text(text: str, args: Args | None) -> str:
    if args is None:
        return text
    _check_args(args)
    return bind(text, args)


def _formatted(text: str, kwargs: dict[str, Any], created: Callable[[str], None]) -> str:
    """A Delta statement's text with pyspark's ``{name}`` formatting applied (a DataFrame
    becomes a temporary view, named to ``created`` to be dropped after the statement)."""

    def make_view(df: Any) -> str:
        name = f"_pyspark_{uuid.uuid4().hex}"
        df.createOrReplaceTempView(name)
        created(name)
        return name

    return format_text(text, kwargs, make_view) if kwargs else text


# ------------------------------------------------------------------ statements
def _describe_history(p: Parser) -> DescribeHistory:
    ref = p.require_table()
    limit = p.integer() if p.accept("LIMIT") else None
    p.end()
    return DescribeHistory(ref, limit)


def _describe_detail(p: Parser) -> DescribeDetail:
    ref = p.require_table(allow_string=True)
    p.end()
    return DescribeDetail(ref)


def _vacuum(p: Parser) -> Vacuum:
    ref = p.require_table(allow_string=True)
    hours = None
    if p.accept("RETAIN"):
        hours = p.number("RETAIN")
        p.expect("HOURS")
    dry = p.accept("DRY", "RUN")
    p.end()
    return Vacuum(ref, hours, dry)


def _optimize(p: Parser) -> Optimize:
    ref = p.require_table(allow_string=True)
    where = p.until("ZORDER") if p.accept("WHERE") else None
    zorder = tuple(p.name_list()) if p.accept("ZORDER", "BY") else None
    p.end()
    return Optimize(ref, where, zorder)


def _reorg(p: Parser) -> Reorg:
    """``REORG TABLE t [WHERE pred] APPLY (PURGE)``; ``APPLY (UPGRADE UNIFORM ...)`` is refused
    by name (no Iceberg metadata is written)."""
    p.expect("TABLE")
    ref = p.require_table()
    where = p.until("APPLY") if p.accept("WHERE") else None
    p.expect("APPLY")
    p.expect("(")
    if p.at("UPGRADE"):
        raise UnsupportedFeatureError(
            "REORG TABLE ... APPLY (UPGRADE UNIFORM (ICEBERG_COMPAT_VERSION = n)) is not supported: "
            "delta_pyds writes no Iceberg metadata and cannot write the icebergCompat table features "
            "(delta-spark's DELTA_UNIVERSAL_FORMAT_VIOLATION); REORG TABLE ... APPLY (PURGE) is supported",
            ("icebergCompatV2",),
        )
    p.expect("PURGE")
    p.expect(")")
    p.end()
    return Reorg(ref, where)


def _restore(p: Parser) -> Restore:
    p.accept("TABLE")
    ref = p.require_table()
    p.expect("TO")
    if ref.version is not None or ref.timestamp is not None:
        p.fail("time travel belongs after TO")
    p.accept("FOR")
    version = timestamp = None
    if p.accept("VERSION", "AS", "OF"):
        version = p.version_number("VERSION AS OF")
    elif p.accept("TIMESTAMP", "AS", "OF"):
        timestamp = p.string()
    else:
        p.fail("expected VERSION AS OF or TIMESTAMP AS OF")
    p.end()
    return Restore(ref, version, timestamp)


def _key(p: Parser) -> str:
    """A property key: a quoted string or a dotted name."""
    t = p.peek()
    return p.string() if t is not None and t.kind == "string" else p.dotted()


def _show_tblproperties(p: Parser) -> ShowTblProperties:
    ref = p.require_table()
    key = None
    if p.accept("("):
        key = _key(p)
        p.expect(")")
    p.end()
    return ShowTblProperties(ref, key)


def _show_partitions(p: Parser) -> ShowPartitions:
    ref = p.require_table(allow_string=True)
    spec: list[tuple[str, str]] = []
    if p.accept("PARTITION"):
        p.expect("(")
        while True:
            column = p.word()
            p.expect("=")
            spec.append((column, p.until(",", allow_end=False)))
            if not p.accept(","):
                break
        p.expect(")")
    p.end()
    return ShowPartitions(ref, tuple(spec))


def _truncate_table(p: Parser) -> TruncateTable:
    ref = p.require_table()
    if p.at("PARTITION"):
        p.fail(
            "[DELTA_TRUNCATE_TABLE_PARTITION_NOT_SUPPORTED] Operation not allowed: TRUNCATE TABLE on Delta tables"
            " does not support partition predicates; use DELETE to delete specific partitions or rows"
        )
    p.end()
    return TruncateTable(ref)


def _show_columns(p: Parser) -> ShowColumns:
    ref = p.require_table()
    p.end()
    return ShowColumns(ref)


def _alter_table(p: Parser) -> Statement:
    ref = p.require_table()
    st: Statement | None
    if p.accept("SET", "TBLPROPERTIES"):
        st = SetTblProperties(ref, tuple(p.properties().items()))
    elif p.accept("UNSET", "TBLPROPERTIES"):
        if_exists = p.accept("IF", "EXISTS")
        p.expect("(")
        keys = [_key(p)]
        while p.accept(","):
            keys.append(_key(p))
        p.expect(")")
        st = UnsetTblProperties(ref, tuple(keys), if_exists)
    elif p.accept("ADD", "CONSTRAINT"):
        name = p.word()
        p.expect("CHECK")
        st = AddConstraint(ref, name, p.parenthesized())
    elif p.accept("DROP", "CONSTRAINT"):
        if_exists = p.accept("IF", "EXISTS")
        st = DropConstraint(ref, p.word(), if_exists)
    elif p.accept("DROP", "FEATURE"):
        t = p.peek()
        feature = p.string() if t is not None and t.kind == "string" else p.word()
        st = DropFeature(ref, feature, True if p.accept("TRUNCATE", "HISTORY") else None)
    else:
        st = alter.column_statement(p, ref)
        if st is None:
            p.fail(
                "expected SET TBLPROPERTIES, UNSET TBLPROPERTIES, ADD CONSTRAINT, DROP CONSTRAINT, DROP FEATURE,"
                " ADD COLUMNS, RENAME COLUMN, DROP COLUMNS or ALTER COLUMN"
            )
    p.end()
    assert st is not None
    return st


def _generate(p: Parser) -> Generate:
    mode = p.word()
    p.expect("FOR", "TABLE")
    ref = p.require_table(allow_string=True)
    p.end()
    return Generate(mode, ref)


def _convert(p: Parser) -> ConvertToDelta:
    t = p.peek()
    if t is None or t.upper != "PARQUET" or not p.at("PARQUET", "."):
        p.fail("expected parquet.`path`")
    p.i += 2
    tok = p.peek()
    if tok is None or tok.kind != "ident":
        p.fail("expected parquet.`path`")
    assert tok is not None
    identifier = f"parquet.{tok.text}"
    p.i += 1
    schema = p.parenthesized() if p.accept("PARTITIONED", "BY") else None
    p.end()
    return ConvertToDelta(identifier, schema)


_PARSERS: Mapping[str, Callable[[Parser], Statement]] = {
    "DESCRIBE HISTORY": _describe_history,
    "DESCRIBE DETAIL": _describe_detail,
    "VACUUM": _vacuum,
    "OPTIMIZE": _optimize,
    "RESTORE": _restore,
    "REORG": _reorg,
    "DELETE": dml.delete,
    "UPDATE": dml.update,
    "SHOW TBLPROPERTIES": _show_tblproperties,
    "SHOW COLUMNS": _show_columns,
    "SHOW PARTITIONS": _show_partitions,
    "TRUNCATE TABLE": _truncate_table,
    "ALTER TABLE": _alter_table,
    "GENERATE": _generate,
    "CONVERT TO DELTA": _convert,
    "MERGE": dml.merge,
    "INSERT": dml.insert,
    "CREATE TABLE (definition)": create.parse_create,
    "CREATE TABLE": catalog_statements.parse_register,
    "DROP TABLE": catalog_statements.command,
    "ALTER TABLE RENAME": catalog_statements.command,
    "SHOW TABLES": catalog_statements.command,
    "DESCRIBE": catalog_statements.describe,
}
