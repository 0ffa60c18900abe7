"""Parsing the catalog statements of :func:`delta_pyds.sql` (with no SparkSession; run by
:mod:`delta_pyds.spark.sql.execute_catalog`): ``CREATE TABLE <name> USING delta LOCATION``
(registering an existing table), ``DROP TABLE``, ``ALTER TABLE ... RENAME TO``, ``SHOW TABLES``
and ``DESCRIBE [TABLE] [EXTENDED | FORMATTED] <Delta table>``.

Guarantees:

* ``CREATE TABLE [IF NOT EXISTS] name USING delta LOCATION 'p'`` writes an EXTERNAL entry of
  Spark's session catalog for the Delta table at ``p`` (as delta-spark writes it, see
  :mod:`delta_pyds.spark.catalog.entries`); no Delta table at ``p`` raises
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
  ``DESCRIBE`` goes to Spark unchanged. No pyspark here."""

from __future__ import annotations

from delta_pyds.spark.sql.ast import CatalogCommand, DescribeTable, RegisterTable
from delta_pyds.spark.sql.parser import Parser


def command(p: Parser) -> CatalogCommand:
    """DROP TABLE / ALTER TABLE RENAME / SHOW TABLES: Spark's own statement, with ``delta``
    resolvable."""
    return CatalogCommand(p.statement, p.text)


def parse_register(p: Parser) -> RegisterTable:
    """``CREATE TABLE [IF NOT EXISTS] name USING delta LOCATION 'p' [COMMENT 'c'] [TBLPROPERTIES
    (...)]`` (after CREATE TABLE; the clauses in any order, each at most once, LOCATION given)."""
    if_not_exists = p.accept("IF", "NOT", "EXISTS")
    parts = p.parts()
    p.expect("USING", "DELTA")
    path: str | None = None
    comment: str | None = None
    properties: dict[str, str] | None = None
    while not p.done():
        if path is None and p.accept("LOCATION"):
            path = p.string()
        elif comment is None and p.accept("COMMENT"):
            comment = p.string()
        elif properties is None and p.accept("TBLPROPERTIES"):
            properties = p.properties()
        else:
            p.fail("expected LOCATION, COMMENT or TBLPROPERTIES (each once)")
    if path is None:
        p.fail("expected LOCATION 'path'")
    assert path is not None
    return RegisterTable(parts, path, if_not_exists, comment, tuple((properties or {}).items()))


def describe(p: Parser) -> DescribeTable:
    """``DESCRIBE [TABLE] [EXTENDED | FORMATTED] <table>`` (after DESCRIBE)."""
    p.accept("TABLE")
    extended = p.accept("EXTENDED") or p.accept("FORMATTED")
    table = p.require_table()
    p.end()
    if table.version is not None or table.timestamp is not None:
        p.fail("DESCRIBE takes no time travel")
    return DescribeTable(table, extended)
