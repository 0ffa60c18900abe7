"""Runs the statements :func:`delta_pyds.sql` recognises.

Guarantees: a statement is parsed whole before anything runs (a parse error changes nothing);
each Delta statement is one call of the public :class:`~delta_pyds.DeltaTable` API; results
have delta-spark's columns (``num_affected_rows`` ...; DESCRIBE HISTORY/DETAIL as
``history()``/``detail()``). Names resolve through Spark's catalog on every statement
(:func:`delta_pyds.spark.sql.tables.resolver`); the catalog statements (CREATE TABLE ... LOCATION,
DROP TABLE, ALTER TABLE RENAME, SHOW TABLES, DESCRIBE) are in
:mod:`delta_pyds.spark.sql.catalog_statements`."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, cast

from delta_pyds.errors import ArgumentTypeError, SqlParseError
from delta_pyds.spark.sql import alter, catalog_statements, create, dml
from delta_pyds.spark.sql.parameters import bind, format_text
from delta_pyds.spark.sql.parser import Parser, TableRef
from delta_pyds.spark.sql.tables import delta_table, empty, read_ref, resolver, run_statement
from delta_pyds.spark.sql.views import refresh_view

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

FORMS = {
    "DESCRIBE HISTORY": "DESCRIBE HISTORY <table> [LIMIT n]",
    "DESCRIBE DETAIL": "DESCRIBE DETAIL <table>",
    "VACUUM": "VACUUM <table | 'path'> [RETAIN n HOURS] [DRY RUN]",
    "OPTIMIZE": "OPTIMIZE <table> [WHERE <partition predicate>] [ZORDER BY (col, ...)]",
    "RESTORE": "RESTORE [TABLE] <table> TO VERSION AS OF n | TIMESTAMP AS OF 'ts'",
    "DELETE": "DELETE FROM <table> [[AS] alias] [WHERE <condition>]",
    "UPDATE": "UPDATE <table> [[AS] alias] SET col = expr [, ...] [WHERE <condition>]",
    "SHOW TBLPROPERTIES": "SHOW TBLPROPERTIES <table> [('key')]",
    "SHOW COLUMNS": "SHOW COLUMNS (IN | FROM) <table>",
    "SHOW PARTITIONS": "SHOW PARTITIONS <table | 'path'> [PARTITION (col = value, ...)]",
    "TRUNCATE TABLE": "TRUNCATE TABLE <table>",
    "ALTER TABLE": (
        "ALTER TABLE <table> SET TBLPROPERTIES ('k' = 'v', ...) | UNSET TBLPROPERTIES [IF EXISTS] ('k', ...)"
        " | ADD CONSTRAINT name CHECK (expr) | DROP CONSTRAINT [IF EXISTS] name | DROP FEATURE f [TRUNCATE HISTORY]"
        " | " + alter.FORM.split("<table> ", 1)[1]
    ),
    "GENERATE": "GENERATE symlink_format_manifest FOR TABLE <table>",
    "CONVERT TO DELTA": "CONVERT TO DELTA parquet.`path` [PARTITIONED BY (col type, ...)]",
    "MERGE": (
        "MERGE [WITH SCHEMA EVOLUTION] INTO <table> [[AS] t] USING <table | view | (query)> [[AS] s] ON <cond>"
        " WHEN MATCHED [AND <cond>] THEN UPDATE SET * | UPDATE SET col = expr, ... | DELETE"
        " | WHEN NOT MATCHED [BY TARGET] [AND <cond>] THEN INSERT * | INSERT (col, ...) VALUES (expr, ...)"
        " | WHEN NOT MATCHED BY SOURCE [AND <cond>] THEN UPDATE SET col = expr, ... | DELETE"
    ),
    "INSERT": "INSERT INTO | OVERWRITE [TABLE] <table> [(col, ...) | BY NAME] [REPLACE WHERE <cond>] <query>",
    "CREATE TABLE (definition)": create.FORM,
    **catalog_statements.FORMS,
}


def sql(spark: SparkSession, statement: str, args: Any = None, **kwargs: Any) -> DataFrame:
    """Runs one statement (see :mod:`delta_pyds.spark.sql`)."""
    if not isinstance(statement, str):
        raise ArgumentTypeError(f"'statement' must be a str (one SQL statement), got {type(statement).__name__}")
    resolve = resolver(spark)
    p = Parser(statement, resolve)
    head = _head(p)
    if head is None:
        return run_statement(spark, p, statement, args, kwargs)
    views: list[str] = []
    try:
        if args is not None or kwargs:
            p = Parser(_bound(spark, statement, args, kwargs, views), resolve)
            head = _head(p)
            if head is None:  # formatting made it another statement
                return run_statement(spark, p, p.text)
        p.statement, p.form = head, FORMS[head]
        result = _HANDLERS[head](spark, p)()
        for (parts, _views), found in p.resolved.items():
            if found is not None and found.kind == "view":  # a temporary view target reads the new version now
                refresh_view(spark, ".".join(parts))
        return result
    finally:
        for name in views:
            spark.catalog.dropTempView(name)


def _bound(spark: SparkSession, text: str, args: Any, kwargs: dict[str, Any], views: list[str]) -> str:
    """A Delta statement's text with pyspark's ``{name}`` formatting applied and its ``args``
    markers bound (Spark never sees the text whole, so both happen here)."""
    if args is not None and not isinstance(args, (dict, list, tuple)):
        raise ArgumentTypeError(
            f"'args' must be a dict (named :markers) or a list (? markers), got {type(args).__name__}"
        )

    def make_view(df: Any) -> str:
        name = f"_pyspark_{uuid.uuid4().hex}"
        df.createOrReplaceTempView(name)
        views.append(name)
        return name

    if kwargs:
        text = format_text(text, kwargs, make_view)
    return bind(text, args) if args is not None else text


def _head(p: Parser) -> str | None:
    """Which Delta statement this is (None: any other statement)."""
    p.i = 0
    return _delta_only_head(p) or catalog_statements.head(p) or _shared_head(p) or _create_head(p)


def _delta_only_head(p: Parser) -> str | None:
    """The statements only Delta has (DESCRIBE HISTORY / DETAIL, VACUUM, ...)."""
    if p.at("DESCRIBE", "HISTORY") or p.at("DESC", "HISTORY"):
        p.i = 2
        return "DESCRIBE HISTORY"
    if p.at("DESCRIBE", "DETAIL") or p.at("DESC", "DETAIL"):
        p.i = 2
        return "DESCRIBE DETAIL"
    delta_only: tuple[tuple[tuple[str, ...], str], ...] = (
        (("VACUUM",), "VACUUM"),
        (("OPTIMIZE",), "OPTIMIZE"),
        (("RESTORE",), "RESTORE"),
        (("GENERATE",), "GENERATE"),
        (("CONVERT", "TO", "DELTA"), "CONVERT TO DELTA"),
    )
    for words, head in delta_only:
        if p.accept(*words):
            return head
    return None


def _shared_head(p: Parser) -> str | None:
    """Statements Spark also has: Delta's only when they name a Delta table."""
    if p.accept("MERGE"):
        p.accept("WITH", "SCHEMA", "EVOLUTION")
        if p.accept("INTO") and p.table_ref(views=True) is not None:
            p.i = 1
            return "MERGE"
    p.i = 0
    if p.accept("INSERT") and (p.accept("INTO") or p.accept("OVERWRITE")):
        p.accept("TABLE")
        if p.table_ref() is not None:
            p.i = 1
            return "INSERT"
    p.i = 0
    spark_too: tuple[tuple[tuple[str, ...], str], ...] = (
        (("DELETE", "FROM"), "DELETE"),
        (("UPDATE",), "UPDATE"),
        (("SHOW", "TBLPROPERTIES"), "SHOW TBLPROPERTIES"),
        (("SHOW", "PARTITIONS"), "SHOW PARTITIONS"),
        (("TRUNCATE", "TABLE"), "TRUNCATE TABLE"),
        (("ALTER", "TABLE"), "ALTER TABLE"),
    )
    for words, head in spark_too:
        if p.accept(*words):
            if p.table_ref(views=True, allow_string=head == "SHOW PARTITIONS") is not None:
                p.i = len(words)
                return head
            p.i = 0
    if p.accept("SHOW", "COLUMNS") and (p.accept("IN") or p.accept("FROM")):
        save = p.i
        if p.table_ref() is not None:
            p.i = save
            return "SHOW COLUMNS"
    return None


def _create_head(p: Parser) -> str | None:
    """``CREATE TABLE`` with a definition, or naming a Delta location."""
    if create.recognise(p):
        return "CREATE TABLE (definition)"
    p.i = 0
    if p.accept("CREATE", "TABLE"):
        p.accept("IF", "NOT", "EXISTS")
        if p.peek() is not None and p.peek().kind in ("word", "ident"):  # type: ignore[union-attr]
            p.dotted()
            if p.accept("USING", "DELTA") and p.at("LOCATION"):
                p.i = 2
                return "CREATE TABLE"
    p.i = 0
    return None


# ------------------------------------------------------------------ statements
def _describe_history(spark: SparkSession, p: Parser) -> Callable[[], Any]:
    ref = p.require_table()
    limit = p.integer() if p.accept("LIMIT") else None
    p.end()
    return lambda: delta_table(spark, ref).history(limit)


def _describe_detail(spark: SparkSession, p: Parser) -> Callable[[], DataFrame]:
    ref = p.require_table(allow_string=True)
    p.end()
    return lambda: delta_table(spark, ref).detail()


def _vacuum(spark: SparkSession, p: Parser) -> Callable[[], DataFrame]:
    ref = p.require_table(allow_string=True)
    hours = None
    if p.accept("RETAIN"):
        hours = p.number("RETAIN")
        p.expect("HOURS")
    dry = p.accept("DRY", "RUN")
    p.end()
    return lambda: delta_table(spark, ref).vacuum(hours, dry)


def _optimize(spark: SparkSession, p: Parser) -> Callable[[], DataFrame]:
    ref = p.require_table(allow_string=True)
    where = p.until("ZORDER") if p.accept("WHERE") else None
    zorder = p.name_list() if p.accept("ZORDER", "BY") else None
    p.end()

    def run() -> DataFrame:
        builder = delta_table(spark, ref).optimize()
        if where is not None:
            builder = builder.where(where)
        return builder.executeZOrderBy(*zorder) if zorder else builder.executeCompaction()

    return run


def _restore(spark: SparkSession, p: Parser) -> Callable[[], DataFrame]:
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

    def run() -> DataFrame:
        dt = delta_table(spark, ref)
        return dt.restoreToVersion(version) if version is not None else dt.restoreToTimestamp(cast(str, timestamp))

    return run


def _show_tblproperties(spark: SparkSession, p: Parser) -> Callable[[], DataFrame]:
    ref = p.require_table()
    key = None
    if p.accept("("):
        key = p.string() if p.peek() is not None and p.peek().kind == "string" else p.dotted()  # type: ignore[union-attr]
        p.expect(")")
    p.end()

    def run() -> DataFrame:
        from delta_pyds.table.snapshot import Snapshot

        delta_table(spark, ref)
        snap = Snapshot.load(ref.path)
        props = dict(snap.configuration)
        props.setdefault("delta.minReaderVersion", str(snap.protocol.min_reader_version))
        props.setdefault("delta.minWriterVersion", str(snap.protocol.min_writer_version))
        rows = sorted(props.items())
        if key is not None:
            rows = [(key, props.get(key, f"Table {ref.path} does not have property: {key}"))]
        return spark.createDataFrame(rows, "key string, value string")

    return run


def _show_partitions(spark: SparkSession, p: Parser) -> Callable[[], DataFrame]:
    """delta-spark's SHOW PARTITIONS: one row per partition of the table's files, the
    partition columns typed, optionally only those matching ``PARTITION (col = value, ...)``."""
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

    def run() -> DataFrame:
        from pyspark.sql import functions as F

        from delta_pyds.table.snapshot import Snapshot

        delta_table(spark, ref)
        columns = Snapshot.load(ref.path).partition_columns
        if not columns:
            raise SqlParseError(
                f"SHOW PARTITIONS is not allowed on a table that is not partitioned: delta.`{ref.path}`"
            )
        lowered = {c.lower(): c for c in columns}
        wrong = [c for c, _ in spec if c.lower() not in lowered]
        if wrong:
            raise SqlParseError(f"Non-partitioning column(s) {wrong} are specified for SHOW PARTITIONS")
        df = read_ref(spark, ref).select(*[F.col(f"`{c}`") for c in columns]).distinct()
        for column, value in spec:
            df = df.where(F.col(f"`{lowered[column.lower()]}`").eqNullSafe(F.expr(value)))
        return df

    return run


def _truncate_table(spark: SparkSession, p: Parser) -> Callable[[], DataFrame]:
    """delta-spark's TRUNCATE TABLE: every row deleted, in one commit (here a DELETE)."""
    ref = p.require_table()
    if p.at("PARTITION"):
        p.fail(
            "[DELTA_TRUNCATE_TABLE_PARTITION_NOT_SUPPORTED] Operation not allowed: TRUNCATE TABLE on Delta tables"
            " does not support partition predicates; use DELETE to delete specific partitions or rows"
        )
    p.end()

    def run() -> DataFrame:
        delta_table(spark, ref).delete()
        return empty(spark, None)

    return run


def _show_columns(spark: SparkSession, p: Parser) -> Callable[[], DataFrame]:
    ref = p.require_table()
    p.end()
    return lambda: spark.createDataFrame(
        [(f.name,) for f in delta_table(spark, ref).toDF().schema.fields], "col_name string"
    )


def _alter_table(spark: SparkSession, p: Parser) -> Callable[[], DataFrame]:
    ref = p.require_table()
    if p.accept("SET", "TBLPROPERTIES"):
        props = p.properties()
        p.end()
        return lambda: empty(spark, delta_table(spark, ref).setProperties(props))
    if p.accept("UNSET", "TBLPROPERTIES"):
        if_exists = p.accept("IF", "EXISTS")
        p.expect("(")
        keys = [p.string() if p.peek() is not None and p.peek().kind == "string" else p.dotted()]  # type: ignore[union-attr]
        while p.accept(","):
            keys.append(p.string() if p.peek() is not None and p.peek().kind == "string" else p.dotted())  # type: ignore[union-attr]
        p.expect(")")
        p.end()
        return lambda: empty(spark, _unset(ref, keys, if_exists))
    if p.accept("ADD", "CONSTRAINT"):
        name = p.word()
        p.expect("CHECK")
        expr = p.parenthesized()
        p.end()
        return lambda: empty(spark, delta_table(spark, ref).addConstraint(name, expr))
    if p.accept("DROP", "CONSTRAINT"):
        if_exists = p.accept("IF", "EXISTS")
        name = p.word()
        p.end()
        return lambda: empty(spark, delta_table(spark, ref).dropConstraint(name, if_exists))
    if p.accept("DROP", "FEATURE"):
        t = p.peek()
        feature = p.string() if t is not None and t.kind == "string" else p.word()
        truncate = True if p.accept("TRUNCATE", "HISTORY") else None
        p.end()

        def drop() -> DataFrame:
            delta_table(spark, ref).dropFeatureSupport(feature, truncate)
            return empty(spark, None)

        return drop
    run = alter.column_statement(spark, p, ref)
    if run is not None:
        return run
    p.fail(
        "expected SET TBLPROPERTIES, UNSET TBLPROPERTIES, ADD CONSTRAINT, DROP CONSTRAINT, DROP FEATURE,"
        " ADD COLUMNS, RENAME COLUMN, DROP COLUMNS or ALTER COLUMN"
    )
    raise AssertionError


def _unset(ref: TableRef, keys: list[str], if_exists: bool) -> int | None:
    from delta_pyds.operations.properties import unset_properties

    return unset_properties(ref.path, keys, if_exists=if_exists)


def _generate(spark: SparkSession, p: Parser) -> Callable[[], DataFrame]:
    mode = p.word()
    p.expect("FOR", "TABLE")
    ref = p.require_table(allow_string=True)
    p.end()

    def run() -> DataFrame:
        delta_table(spark, ref).generate(mode)
        return empty(spark, None)

    return run


def _convert(spark: SparkSession, p: Parser) -> Callable[[], DataFrame]:
    from delta_pyds.spark.tables import DeltaTable

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
    return lambda: empty(spark, DeltaTable.convertToDelta(spark, identifier, schema))


_HANDLERS: Mapping[str, Callable[[Any, Parser], Callable[[], Any]]] = {
    "DESCRIBE HISTORY": _describe_history,
    "DESCRIBE DETAIL": _describe_detail,
    "VACUUM": _vacuum,
    "OPTIMIZE": _optimize,
    "RESTORE": _restore,
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
    "CREATE TABLE (definition)": create.create,
    **catalog_statements.handlers(),
}
