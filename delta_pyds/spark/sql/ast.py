"""The statements of :func:`delta_pyds.sql` as values: one frozen dataclass per statement form.

:func:`delta_pyds.spark.sql.statements.parse` makes them from SQL text with no SparkSession
(the session's :class:`~delta_pyds.expressions.lexer.Dialect` and the statement's ``args`` are
given to it as values); :func:`delta_pyds.spark.sql.execute.execute` runs them on a session.
Guarantees: every statement is immutable and compares by value (a golden test can compare a
parse with an expected object); sequences are tuples and mappings are tuples of ``(key, value)``
pairs in the order written; SQL expressions (conditions, SET values, queries) are kept as the
text Spark will read; a table is a :class:`Table` that names either a path (``delta.`p```,
``'p'``) or a name that execution resolves through Spark's catalog (a name is not known to be a
Delta table until then). ``statement`` (a class attribute) names the statement in errors and,
for the statements that name a table, keys its form in
:data:`delta_pyds.spark.sql.heads.FORMS`. No pyspark here."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from delta_pyds.spark.commands.merge.clauses import MergeClause
from delta_pyds.spark.sql.parser import Table


@dataclass(frozen=True)
class Subquery:
    """A parenthesized query (a MERGE source): its text inside the parentheses."""

    text: str


@dataclass(frozen=True)
class SparkTable:
    """A table only Spark reads (a MERGE source named with an unquoted part Spark's rules do
    not take as a plain identifier): ``spark.table(name)``."""

    name: str


@dataclass(frozen=True)
class Statement:
    """Base of every statement. ``views``: whether a temporary view over a whole ``pydelta``
    table stands for its table at ``table`` (the targets of Delta statements)."""

    statement: ClassVar[str] = ""
    views: ClassVar[bool] = True


@dataclass(frozen=True)
class Query(Statement):
    """Any statement that is not a Delta statement: Spark's, with its Delta tables read
    natively; ``args`` are Spark's to bind."""

    statement: ClassVar[str] = "query"
    text: str
    args: Mapping[str, Any] | Sequence[Any] | None = None


# ------------------------------------------------------------ table maintenance
@dataclass(frozen=True)
class DescribeHistory(Statement):
    statement: ClassVar[str] = "DESCRIBE HISTORY"
    table: Table
    limit: int | None = None


@dataclass(frozen=True)
class DescribeDetail(Statement):
    statement: ClassVar[str] = "DESCRIBE DETAIL"
    table: Table


@dataclass(frozen=True)
class Vacuum(Statement):
    statement: ClassVar[str] = "VACUUM"
    table: Table
    retain_hours: float | None = None
    dry_run: bool = False


@dataclass(frozen=True)
class Optimize(Statement):
    statement: ClassVar[str] = "OPTIMIZE"
    table: Table
    where: str | None = None
    zorder_by: tuple[str, ...] | None = None


@dataclass(frozen=True)
class Reorg(Statement):
    """``REORG TABLE t [WHERE <partition predicate>] APPLY (PURGE)``."""

    statement: ClassVar[str] = "REORG"
    table: Table
    where: str | None = None


@dataclass(frozen=True)
class Restore(Statement):
    statement: ClassVar[str] = "RESTORE"
    table: Table
    version: int | None = None
    timestamp: str | None = None


@dataclass(frozen=True)
class ShowTblProperties(Statement):
    statement: ClassVar[str] = "SHOW TBLPROPERTIES"
    table: Table
    key: str | None = None


@dataclass(frozen=True)
class ShowPartitions(Statement):
    statement: ClassVar[str] = "SHOW PARTITIONS"
    table: Table
    partition: tuple[tuple[str, str], ...] = ()  # (column, value expression)


@dataclass(frozen=True)
class TruncateTable(Statement):
    statement: ClassVar[str] = "TRUNCATE TABLE"
    table: Table


@dataclass(frozen=True)
class ShowColumns(Statement):
    statement: ClassVar[str] = "SHOW COLUMNS"
    views: ClassVar[bool] = False
    table: Table


@dataclass(frozen=True)
class Generate(Statement):
    statement: ClassVar[str] = "GENERATE"
    mode: str
    table: Table


@dataclass(frozen=True)
class ConvertToDelta(Statement):
    statement: ClassVar[str] = "CONVERT TO DELTA"
    identifier: str  # parquet.`path`
    partition_schema: str | None = None


# ------------------------------------------------------------------ ALTER TABLE
@dataclass(frozen=True)
class SetTblProperties(Statement):
    statement: ClassVar[str] = "ALTER TABLE"
    table: Table
    properties: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class UnsetTblProperties(Statement):
    statement: ClassVar[str] = "ALTER TABLE"
    table: Table
    keys: tuple[str, ...]
    if_exists: bool = False


@dataclass(frozen=True)
class AddConstraint(Statement):
    statement: ClassVar[str] = "ALTER TABLE"
    table: Table
    name: str
    check: str


@dataclass(frozen=True)
class DropConstraint(Statement):
    statement: ClassVar[str] = "ALTER TABLE"
    table: Table
    name: str
    if_exists: bool = False


@dataclass(frozen=True)
class DropFeature(Statement):
    statement: ClassVar[str] = "ALTER TABLE"
    table: Table
    feature: str
    truncate_history: bool | None = None


@dataclass(frozen=True)
class NewColumn:
    """One column of ``ADD COLUMNS``: its path (``("s", "b")`` is field b of struct s), its
    Spark SQL type text, comment and position (``FIRST`` / ``AFTER c``)."""

    path: tuple[str, ...]
    type: str
    comment: str | None = None
    position: str | None = None


@dataclass(frozen=True)
class AddColumns(Statement):
    statement: ClassVar[str] = "ALTER TABLE"
    table: Table
    columns: tuple[NewColumn, ...]


@dataclass(frozen=True)
class RenameColumn(Statement):
    statement: ClassVar[str] = "ALTER TABLE"
    table: Table
    column: tuple[str, ...]
    new_name: str


@dataclass(frozen=True)
class DropColumns(Statement):
    statement: ClassVar[str] = "ALTER TABLE"
    table: Table
    columns: tuple[tuple[str, ...], ...]
    if_exists: bool = False


@dataclass(frozen=True)
class AlterColumn(Statement):
    """One change of ``ALTER | CHANGE [COLUMN]``: exactly one of the fields after ``column``."""

    statement: ClassVar[str] = "ALTER TABLE"
    table: Table
    column: tuple[str, ...]
    comment: str | None = None
    nullable: bool | None = None
    data_type: str | None = None
    position: str | None = None


@dataclass(frozen=True)
class ClusterBy(Statement):
    statement: ClassVar[str] = "ALTER TABLE"
    table: Table
    columns: tuple[str, ...]  # () for CLUSTER BY NONE


# ------------------------------------------------------------------------ DML
@dataclass(frozen=True)
class Delete(Statement):
    """``condition`` has the alias removed from its column references."""

    statement: ClassVar[str] = "DELETE"
    table: Table
    alias: str | None = None
    condition: str | None = None


@dataclass(frozen=True)
class Update(Statement):
    """``assignments`` and ``condition`` have the alias removed from column references."""

    statement: ClassVar[str] = "UPDATE"
    table: Table
    assignments: tuple[tuple[str, str], ...]
    alias: str | None = None
    condition: str | None = None


@dataclass(frozen=True)
class Merge(Statement):
    """MERGE keeps its aliases (Spark resolves them in the joined rows)."""

    statement: ClassVar[str] = "MERGE"
    table: Table
    source: Table | Subquery | SparkTable
    condition: str
    clauses: tuple[MergeClause, ...]
    alias: str | None = None
    source_alias: str | None = None
    schema_evolution: bool = False


@dataclass(frozen=True)
class Insert(Statement):
    statement: ClassVar[str] = "INSERT"
    views: ClassVar[bool] = False
    table: Table
    query: str
    overwrite: bool = False
    columns: tuple[str, ...] | None = None
    by_name: bool = False
    replace_where: str | None = None


# ---------------------------------------------------------------- definitions
@dataclass(frozen=True)
class Column:
    """One column of a CREATE TABLE definition."""

    name: str
    type: str
    nullable: bool = True
    expression: str | None = None  # GENERATED ALWAYS AS (expression)
    identity: tuple[int, int, bool] | None = None  # start, step, always
    comment: str | None = None


@dataclass(frozen=True)
class CreateTable(Statement):
    """``CREATE [OR REPLACE] TABLE`` / ``REPLACE TABLE``; ``mode`` is the ``DeltaTable``
    builder (``create``, ``createIfNotExists``, ``replace``, ``createOrReplace``)."""

    statement: ClassVar[str] = "CREATE TABLE (definition)"
    mode: str
    name: tuple[str, ...] | None = None  # its name parts, when named
    path: str | None = None
    columns: tuple[Column, ...] | None = None
    partitioned_by: tuple[str, ...] = ()
    cluster_by: tuple[str, ...] | None = None
    comment: str | None = None
    properties: tuple[tuple[str, str], ...] = ()
    query: str | None = None


# ------------------------------------------------------------------- catalog
@dataclass(frozen=True)
class RegisterTable(Statement):
    """``CREATE TABLE [IF NOT EXISTS] name USING delta LOCATION 'p' [COMMENT 'c'] [TBLPROPERTIES (...)]``."""

    statement: ClassVar[str] = "CREATE TABLE"
    name: tuple[str, ...]
    location: str
    if_not_exists: bool = False
    comment: str | None = None
    properties: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class CatalogCommand(Statement):
    """``DROP TABLE``, ``ALTER TABLE ... RENAME TO``, ``SHOW TABLES``: Spark's own statement
    (``command`` says which), run with the ``delta`` short name resolvable."""

    statement: ClassVar[str] = "catalog"
    command: str
    text: str


@dataclass(frozen=True)
class DescribeTable(Statement):
    statement: ClassVar[str] = "DESCRIBE"
    views: ClassVar[bool] = False
    table: Table
    extended: bool = False
