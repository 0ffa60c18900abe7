"""Which statement a text is (its head), read from its first words with no SparkSession, and
the supported form of each Delta statement (:data:`FORMS`, named in every parse error).

Guarantees: :func:`recognise` never raises for a well-tokenized text and never resolves a
name: it returns None for a statement that is never Delta's (a query, ``CREATE VIEW``, ...),
else a :class:`Head` whose ``table`` is the table the statement names where Spark's grammar
has one (None for the statements only Delta has and for the catalog statements, which are
Delta's whatever they name). A head with a ``table`` of a name is Delta's only if that name
resolves to a Delta table when the statement runs (``DELETE FROM t`` on a Parquet table is
Spark's); ``delta.`path``` and a quoted path are always Delta's. The cursor is left after the
head's keywords, where the statement's parser starts. No pyspark here."""

from __future__ import annotations

from dataclasses import dataclass

from delta_pyds.spark.sql import alter, create
from delta_pyds.spark.sql.parser import Parser, Table

FORMS = {
    "DESCRIBE HISTORY": "DESCRIBE HISTORY <table> [LIMIT n]",
    "DESCRIBE DETAIL": "DESCRIBE DETAIL <table>",
    "VACUUM": "VACUUM <table | 'path'> [RETAIN n HOURS] [DRY RUN]",
    "OPTIMIZE": "OPTIMIZE <table> [WHERE <partition predicate>] [ZORDER BY (col, ...)]",
    "RESTORE": "RESTORE [TABLE] <table> TO VERSION AS OF n | TIMESTAMP AS OF 'ts'",
    "REORG": "REORG TABLE <table> [WHERE <partition predicate>] APPLY (PURGE)",
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
    "CREATE TABLE": "CREATE TABLE [IF NOT EXISTS] name USING delta LOCATION 'path'",
    "DROP TABLE": "DROP TABLE [IF EXISTS] name [PURGE]",
    "ALTER TABLE RENAME": "ALTER TABLE name RENAME TO new_name",
    "SHOW TABLES": "SHOW TABLES [(IN | FROM) db] [[LIKE] 'pattern']",
    "DESCRIBE": "DESCRIBE [TABLE] [EXTENDED | FORMATTED] <table>",
}


@dataclass(frozen=True)
class Head:
    """A Delta statement's key in :data:`FORMS`, and the table it names where Spark's grammar
    has one (see the module docstring); ``views``: whether a temporary view over a whole
    ``pydelta`` table stands for its table there."""

    key: str
    table: Table | None = None
    views: bool = True

    @property
    def needs_resolution(self) -> bool:
        """Delta's only if :attr:`table` (a name) resolves to a Delta table."""
        return self.table is not None and self.table.name is not None


def recognise(p: Parser) -> Head | None:
    """The head of the statement ``p`` holds (None: not a Delta statement)."""
    p.i = 0
    return _delta_only(p) or _catalog(p) or _shared(p) or _create(p)


def _delta_only(p: Parser) -> Head | None:
    """The statements only Delta has (DESCRIBE HISTORY / DETAIL, VACUUM, ...)."""
    if p.at("DESCRIBE", "HISTORY") or p.at("DESC", "HISTORY"):
        p.i = 2
        return Head("DESCRIBE HISTORY")
    if p.at("DESCRIBE", "DETAIL") or p.at("DESC", "DETAIL"):
        p.i = 2
        return Head("DESCRIBE DETAIL")
    delta_only: tuple[tuple[tuple[str, ...], str], ...] = (
        (("VACUUM",), "VACUUM"),
        (("OPTIMIZE",), "OPTIMIZE"),
        (("RESTORE",), "RESTORE"),
        (("REORG",), "REORG"),
        (("GENERATE",), "GENERATE"),
        (("CONVERT", "TO", "DELTA"), "CONVERT TO DELTA"),
    )
    for words, key in delta_only:
        if p.accept(*words):
            return Head(key)
    return None


def _catalog(p: Parser) -> Head | None:
    """DROP TABLE, SHOW TABLES, ALTER TABLE name RENAME TO, DESCRIBE [TABLE] [EXTENDED |
    FORMATTED] <table> (the last only of a Delta table)."""
    p.i = 0
    if p.accept("DROP", "TABLE"):
        return Head("DROP TABLE")
    if p.accept("SHOW", "TABLES"):
        return Head("SHOW TABLES")
    if p.accept("ALTER", "TABLE"):
        t = p.peek()
        if t is not None and t.kind in ("word", "ident") and not p.at("DELTA", "."):  # delta.`p`: no rename
            p.parts()
            if p.accept("RENAME", "TO"):
                return Head("ALTER TABLE RENAME")
    p.i = 0
    if p.accept("DESCRIBE") or p.accept("DESC"):
        p.accept("TABLE")
        p.accept("EXTENDED") or p.accept("FORMATTED")
        table = p.table()
        if table is not None and p.done():
            p.i = 1
            return Head("DESCRIBE", table, views=False)
    p.i = 0
    return None


def _shared(p: Parser) -> Head | None:
    """Statements Spark also has: Delta's only when they name a Delta table."""
    if p.accept("MERGE"):
        p.accept("WITH", "SCHEMA", "EVOLUTION")
        if p.accept("INTO") and (table := p.table()) is not None:
            p.i = 1
            return Head("MERGE", table)
    p.i = 0
    if p.accept("INSERT") and (p.accept("INTO") or p.accept("OVERWRITE")):
        p.accept("TABLE")
        if (table := p.table()) is not None:
            p.i = 1
            return Head("INSERT", table, views=False)
    p.i = 0
    spark_too: tuple[tuple[tuple[str, ...], str], ...] = (
        (("DELETE", "FROM"), "DELETE"),
        (("UPDATE",), "UPDATE"),
        (("SHOW", "TBLPROPERTIES"), "SHOW TBLPROPERTIES"),
        (("SHOW", "PARTITIONS"), "SHOW PARTITIONS"),
        (("TRUNCATE", "TABLE"), "TRUNCATE TABLE"),
        (("ALTER", "TABLE"), "ALTER TABLE"),
    )
    for words, key in spark_too:
        if p.accept(*words):
            if (table := p.table(allow_string=key == "SHOW PARTITIONS")) is not None:
                p.i = len(words)
                return Head(key, table)
            p.i = 0
    if p.accept("SHOW", "COLUMNS") and (p.accept("IN") or p.accept("FROM")):
        save = p.i
        if (table := p.table()) is not None:
            p.i = save
            return Head("SHOW COLUMNS", table, views=False)
    return None


def _create(p: Parser) -> Head | None:
    """``CREATE TABLE`` with a definition, or naming a Delta location."""
    if create.recognise(p):
        return Head("CREATE TABLE (definition)")
    p.i = 0
    if p.accept("CREATE", "TABLE"):
        p.accept("IF", "NOT", "EXISTS")
        t = p.peek()
        if t is not None and t.kind in ("word", "ident"):
            p.dotted()
            if p.accept("USING", "DELTA") and p.at("LOCATION"):
                p.i = 2
                return Head("CREATE TABLE")
    p.i = 0
    return None
