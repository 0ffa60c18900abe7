"""The catalog statements of :func:`delta_pyds.sql`: ``CREATE TABLE <name> USING delta LOCATION``
(registering an existing table), ``DROP TABLE``, ``ALTER TABLE ... RENAME TO``, ``SHOW TABLES``
and ``DESCRIBE [TABLE] [EXTENDED | FORMATTED] <Delta table>``.

Guarantees:

* ``CREATE TABLE [IF NOT EXISTS] name USING delta LOCATION 'p'`` writes an EXTERNAL entry of
  Spark's session catalog for the Delta table at ``p`` (as delta-spark writes it, see
  :mod:`delta_pyds.spark.catalog_entries`); no Delta table at ``p`` raises
  :class:`~delta_pyds.errors.TableNotFoundError` and a name in use
  :class:`~delta_pyds.errors.TableExistsError` (nothing with ``IF NOT EXISTS``);
* ``DROP TABLE``, ``ALTER TABLE ... RENAME TO`` and ``SHOW TABLES`` reach ``spark.sql`` as given,
  after the ``delta`` short name is registered where Spark has none (without it Spark cannot drop
  or rename a ``delta`` entry: ``DATA_SOURCE_NOT_FOUND``): the catalog removes a managed table's
  data, never an external table's, and moves a managed table's directory on rename;
* ``DESCRIBE`` of a Delta table (a catalog name or ``delta.`path```) describes the table from its
  log (Spark would describe an empty Python table): ``col_name, data_type, comment`` rows per
  column, then ``# Partition Information``, and with ``EXTENDED`` / ``FORMATTED`` the ``#
  Detailed Table Information`` (name, type, location, provider, properties). Any other
  ``DESCRIBE`` goes to Spark unchanged."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from delta_pyds.errors import TableNotFoundError
from delta_pyds.spark.catalog import lookup
from delta_pyds.spark.catalog_entries import create_named
from delta_pyds.spark.delta_source import register_delta_name
from delta_pyds.spark.sql.parser import Parser, TableRef
from delta_pyds.spark.sql.tables import empty

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

FORMS = {
    "CREATE TABLE": "CREATE TABLE [IF NOT EXISTS] name USING delta LOCATION 'path'",
    "DROP TABLE": "DROP TABLE [IF EXISTS] name [PURGE]",
    "ALTER TABLE RENAME": "ALTER TABLE name RENAME TO new_name",
    "SHOW TABLES": "SHOW TABLES [(IN | FROM) db] [[LIKE] 'pattern']",
    "DESCRIBE": "DESCRIBE [TABLE] [EXTENDED | FORMATTED] <table>",
}


def head(p: Parser) -> str | None:
    """Which catalog statement ``p`` holds (None: another one); the cursor is left after the
    statement's keywords."""
    p.i = 0
    if p.accept("DROP", "TABLE"):
        return "DROP TABLE"
    if p.accept("SHOW", "TABLES"):
        return "SHOW TABLES"
    if p.accept("ALTER", "TABLE"):
        t = p.peek()
        if t is not None and t.kind in ("word", "ident") and not p.at("DELTA", "."):  # delta.`p`: no rename
            p.parts()
            if p.accept("RENAME", "TO"):
                return "ALTER TABLE RENAME"
    p.i = 0
    if (p.accept("DESCRIBE") or p.accept("DESC")) and _describe_target(p) is not None:
        p.i = 1
        return "DESCRIBE"
    p.i = 0
    return None


def _describe_target(p: Parser) -> tuple[bool, TableRef] | None:
    """``[TABLE] [EXTENDED | FORMATTED] <Delta table>`` up to the end (after DESCRIBE)."""
    p.accept("TABLE")
    extended = p.accept("EXTENDED") or p.accept("FORMATTED")
    ref = p.table_ref()
    if ref is None or not p.done():
        return None
    return extended, ref


def passthrough(spark: SparkSession, p: Parser) -> Callable[[], DataFrame]:
    """DROP TABLE / ALTER TABLE RENAME / SHOW TABLES: Spark's own statement, with ``delta``
    resolvable."""
    text = p.text

    def run() -> DataFrame:
        register_delta_name(spark)
        return spark.sql(text)

    return run


def register(spark: SparkSession, p: Parser) -> Callable[[], DataFrame]:
    """``CREATE TABLE [IF NOT EXISTS] name USING delta LOCATION 'p'`` (after CREATE TABLE)."""
    if_not_exists = p.accept("IF", "NOT", "EXISTS")
    parts = p.parts()
    p.expect("USING", "DELTA")
    p.expect("LOCATION")
    path = p.string()
    p.end()

    def check(location: str) -> None:
        from delta_pyds.spark.tables import DeltaTable

        if not DeltaTable.isDeltaTable(spark, location):
            raise TableNotFoundError(
                f"CREATE TABLE {'.'.join(parts)} USING delta LOCATION '{path}': no Delta table there "
                "(a table with columns is created by CREATE TABLE name (col type, ...) USING delta)"
            )

    def run() -> DataFrame:
        create_named(spark, parts, "createIfNotExists" if if_not_exists else "create", path, check)
        return empty(spark, None)

    return run


def describe(spark: SparkSession, p: Parser) -> Callable[[], DataFrame]:
    target = _describe_target(p)
    if target is None:  # head() checked it
        p.fail("expected a Delta table")
    assert target is not None
    extended, ref = target
    if ref.version is not None or ref.timestamp is not None:
        p.fail("DESCRIBE takes no time travel")
    return lambda: spark.createDataFrame(
        _describe_rows(spark, ref, extended), "col_name string, data_type string, comment string"
    )


def _describe_rows(spark: SparkSession, ref: TableRef, extended: bool) -> list[tuple[str, str, str | None]]:
    from delta_pyds.spark.schema_convert import to_spark_schema
    from delta_pyds.table.snapshot import Snapshot

    snap = Snapshot.load(ref.path)
    schema = to_spark_schema(snap.schema)
    rows: list[tuple[str, str, str | None]] = [
        (f.name, sf.dataType.simpleString(), (f.metadata or {}).get("comment"))
        for f, sf in zip(snap.schema.fields, schema.fields)
    ]
    partitions = list(snap.metadata.partition_columns)
    if partitions:
        types = {f.name: f.dataType.simpleString() for f in schema.fields}
        rows += [("# Partition Information", "", ""), ("# col_name", "data_type", "comment")]
        rows += [(c, types.get(c, ""), None) for c in partitions]
    if extended:
        entry = lookup(spark, ref.name) if ref.name else None
        name = entry.qualified.replace("`", "") if entry is not None else f"delta.`{snap.table_root}`"
        props = ", ".join(f"{k}={v}" for k, v in sorted(snap.configuration.items()))
        rows += [
            ("", "", ""),
            ("# Detailed Table Information", "", ""),
            ("Name", name, ""),
            ("Type", (entry.kind if entry is not None else None) or "EXTERNAL", ""),
            ("Location", snap.table_root, ""),
            ("Provider", "delta", ""),
            ("Table Properties", f"[{props}]", ""),
        ]
    return rows


def handlers() -> dict[str, Callable[[Any, Parser], Callable[[], Any]]]:
    return {
        "CREATE TABLE": register,
        "DROP TABLE": passthrough,
        "ALTER TABLE RENAME": passthrough,
        "SHOW TABLES": passthrough,
        "DESCRIBE": describe,
    }
