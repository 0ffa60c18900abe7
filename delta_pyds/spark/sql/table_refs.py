"""Table references of :func:`delta_pyds.sql` on a session: resolving the names a statement
names (:class:`Resolution`), reading a table reference, running a query that names Delta
tables, and delta-spark's result rows.

Guarantees: a name in a statement resolves as Spark resolves it, on every statement, each name
once per statement (:func:`resolver`, :class:`Resolution`): a temporary view first (one over a
whole ``pydelta`` table stands for its table as the target of a Delta statement; in a query
Spark reads the view itself), then a Delta table of Spark's session catalog
(:mod:`delta_pyds.spark.catalog.lookup`); anything else is Spark's, except an entry whose metadata
reads two ways (:class:`~delta_pyds.errors.AmbiguousCatalogEntryError`, raised). A query's Delta tables are read
through ``read_delta`` (the native path, with their time travel) and reach ``spark.sql`` as
DataFrame arguments, the rest of the text unchanged (braces escaped for pyspark's formatter); a
statement naming no Delta table reaches ``spark.sql(statement, args, **kwargs)`` as given."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from delta_pyds.errors import (
    AmbiguousCatalogEntryError,
    ArgumentTypeError,
    NoCatalogError,
    SqlParseError,
    TableNotFoundError,
)
from delta_pyds.log.history import history as commit_history
from delta_pyds.spark.catalog.lookup import lookup
from delta_pyds.spark.sql.heads import FORMS
from delta_pyds.spark.sql.parser import NOT_A_TABLE, NamedTable, Parser, Resolver, Table, TableRef, name_text
from delta_pyds.spark.sql.references import query_refs, stray_paths, walk
from delta_pyds.spark.sql.views import view_path

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from delta_pyds.spark.tables import DeltaTable
    from delta_pyds.transaction.commit import CommitResult

log = logging.getLogger(__name__)


def resolver(spark: SparkSession) -> Resolver:
    """The parser's name resolver on ``spark`` (see the module docstring)."""

    def resolve(parts: tuple[str, ...], views: bool) -> NamedTable | None:
        try:
            entry = lookup(spark, parts)
        except (NoCatalogError, ArgumentTypeError):  # another catalog: Spark's to resolve
            return None
        except AmbiguousCatalogEntryError:  # refused, never guessed (nor left to Spark)
            raise
        except Exception as exc:  # the catalog cannot be asked: Spark reports it if the name matters
            log.debug("pydelta: %s not resolved in the catalog: %s", ".".join(parts), exc)
            return None
        if entry is None:
            return None
        if entry.temporary:
            path = view_path(spark, ".".join(parts)) if views else None
            return NamedTable(path, "view") if path else None
        return NamedTable(entry.location, "table") if entry.is_delta and entry.location else None

    return resolve


class Resolution:
    """The names one statement names, each resolved once through :func:`resolver` (a statement
    sees one answer per name); :attr:`found` keeps every answer."""

    def __init__(self, spark: SparkSession):
        self.spark = spark
        self._resolve = resolver(spark)
        self.found: dict[tuple[tuple[str, ...], bool], NamedTable | None] = {}

    def lookup(self, parts: tuple[str, ...], views: bool) -> NamedTable | None:
        """The Delta table ``parts`` names (``views``: a temporary view over a whole ``pydelta``
        table counts), or None."""
        key = (parts, views)
        if key not in self.found:
            self.found[key] = self._resolve(parts, views)
        return self.found[key]

    def ref(self, table: Table, *, views: bool) -> TableRef | None:
        """``table`` as the Delta table it is, or None for a name that is no Delta table."""
        if table.name is None:
            assert table.path is not None
            return TableRef(table.path, table.version, table.timestamp, table.position, table.position)
        found = self.lookup(table.name, views)
        if found is None:
            return None
        name = name_text(table.name)
        return TableRef(found.path, table.version, table.timestamp, table.position, table.position, name)

    def target(self, stmt: Any) -> TableRef:
        """The Delta table a Delta statement acts on (its ``table``); a name that is no Delta
        table raises :class:`SqlParseError` naming the statement, the position and the form."""
        table: Table = stmt.table
        ref = self.ref(table, views=stmt.views)
        if ref is None:
            raise SqlParseError(
                f"{stmt.statement}: {NOT_A_TABLE} at position {table.position} (near {table.text!r});"
                f" supported form: {FORMS[stmt.statement]}"
            )
        return ref


def table_names(spark: SparkSession) -> dict[str, str]:
    """The Delta tables of the current database of Spark's catalog (name -> path)."""
    out = {}
    for row in spark.sql("SHOW TABLES").collect():
        if not row.isTemporary:
            entry = lookup(spark, (str(row.namespace), str(row.tableName)))
            if entry is not None and entry.is_delta and entry.location:
                out[entry.table] = entry.location
    return out


def run_statement(
    spark: SparkSession,
    p: Parser,
    statement: str,
    args: Any = None,
    kwargs: dict[str, Any] | None = None,
) -> DataFrame:
    """Runs a statement that is not a Delta statement (its Delta tables read natively). With
    ``kwargs`` the text is the caller's format string (pyspark formats it): its braces are
    kept; without, they are escaped for the formatter the Delta tables need."""
    kwargs = kwargs or {}
    if not p.statement:
        p.statement, p.form = "query", "<table> [[FOR] VERSION AS OF n | TIMESTAMP AS OF 'ts'] [[AS] alias]"
    refs = query_refs(p)
    if not refs:
        return _checked(spark, p, refs, lambda: spark.sql(statement, args, **kwargs))
    from delta_pyds.spark.native.read import read_path

    keep = escape if not kwargs else (lambda text: text)
    frames: dict[str, Any] = {}
    pieces = []
    pos = 0
    for n, ref in enumerate(refs):
        key = f"delta_pyds_table_{n}"
        frames[key] = read_path(spark, ref.path, **ref.read_options())
        pieces.append(keep(statement[pos : ref.start]))
        pieces.append("{" + key + "}" + (f" AS {keep(ref.qualifier)}" if ref.qualifier else ""))
        pos = ref.end
    pieces.append(keep(statement[pos:]))
    clash = set(frames) & set(kwargs)
    if clash:
        raise ArgumentTypeError(f"sql: keyword arguments {sorted(clash)} are reserved by delta_pyds.sql")
    return _checked(spark, p, refs, lambda: spark.sql("".join(pieces), args, **frames, **kwargs))


def _checked(spark: SparkSession, p: Parser, refs: list[TableRef], run: Callable[[], DataFrame]) -> DataFrame:
    """``run()``; when Spark fails and the statement names Delta tables where this module
    does not read table names, a :class:`SqlParseError` saying so (Spark's error chained)."""
    try:
        return run()
    except Exception as exc:
        stray = stray_paths(p, refs)
        if not stray and walk(p).classified:
            raise
        if not stray:
            raise
        raise SqlParseError(
            f"delta_pyds.sql: Spark cannot run this statement, and it names {', '.join(sorted(set(stray)))} where"
            " delta_pyds.sql does not read Delta tables (it reads them at table references of queries,"
            " INSERT ... <query>, CREATE ... AS <query>, CACHE TABLE ... AS <query>, EXPLAIN and DESCRIBE;"
            " never in an inline VALUES list's FROM, in IDENTIFIER(...) or in other statements);"
            f" Spark's error: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}"
        ) from exc


def escape(text: str) -> str:
    # the query goes through pyspark's str.format-style formatter once DataFrames are passed
    return text.replace("{", "{{").replace("}", "}}")


def delta_table(spark: SparkSession, ref: TableRef) -> DeltaTable:
    from delta_pyds.spark.tables import DeltaTable

    if ref.version is not None or ref.timestamp is not None:
        raise SqlParseError(f"time travel ({ref.path}@...) is only supported in queries and RESTORE")
    return DeltaTable.forPath(spark, ref.path)


def affected(
    spark: SparkSession, commit: CommitResult | None, metrics: tuple[str, ...], columns: tuple[str, ...]
) -> DataFrame:
    """One row of the metrics of ``commit``, the commit the statement made (zeros: none made),
    never read back from the log (a concurrent commit's metrics are never reported)."""
    om = commit.operation_metrics() if commit is not None and not commit.skipped else None
    return metrics_row(spark, om, metrics, columns)


def newest_metrics_after(path: str, before: int) -> dict[str, Any] | None:
    """The metrics of the newest commit after version ``before`` (None: none made); only for
    a write whose commit is not handed back (the data source path of ``write_delta``)."""
    last = commit_history(path, limit=1)
    return (last[0].get("operationMetrics") or {}) if last and last[0]["version"] > before else None


def metrics_row(
    spark: SparkSession, om: Mapping[str, Any] | None, metrics: tuple[str, ...], columns: tuple[str, ...]
) -> DataFrame:
    """delta-spark's result row of DML metrics ``om`` (zeros when None)."""
    values = [0] * len(columns)
    if om is not None:
        values = [int(om.get(m, 0) or 0) for m in metrics]
        if len(columns) > len(metrics):  # num_affected_rows first: the sum of the rest
            values = [sum(values)] + values
    return spark.createDataFrame([tuple(values)], ", ".join(f"{c} long" for c in columns))


def current_version(path: str) -> int:
    last = commit_history(path, limit=1)
    if not last:
        raise TableNotFoundError(f"no Delta table at {path}")
    return int(last[0]["version"])


def run_query(spark: SparkSession, text: str) -> DataFrame:
    """A query (a MERGE source, the rows of an INSERT) with its Delta tables read natively."""
    return run_statement(spark, Parser(text, resolver(spark)), text)


def read_ref(spark: SparkSession, ref: TableRef) -> DataFrame:
    from delta_pyds.spark.native.read import read_path

    return read_path(spark, ref.path, **ref.read_options())


def empty(spark: SparkSession, _result: Any) -> DataFrame:
    return spark.createDataFrame([], "result string").drop("result")
