"""What the statements of :func:`delta_pyds.sql` share: session names, reading a table
reference, running a query that names Delta tables, and delta-spark's result rows.

Guarantees: session names (``CREATE TABLE <name> USING delta LOCATION``) live as long as the
SparkSession object, in this process only; a query's Delta tables are read through
``read_delta`` (the native path, with their time travel) and reach ``spark.sql`` as DataFrame
arguments, the rest of the text unchanged (braces escaped for pyspark's formatter); a statement
naming no Delta table reaches ``spark.sql(statement, args, **kwargs)`` as given."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from delta_pyds.errors import ArgumentTypeError, SqlParseError, TableNotFoundError
from delta_pyds.log.history import history as commit_history
from delta_pyds.spark.sql.names import NAMES, resolver
from delta_pyds.spark.sql.parser import Parser, TableRef
from delta_pyds.spark.sql.references import query_refs, stray_paths, walk

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from delta_pyds.spark.tables import DeltaTable


def run_statement(
    spark: SparkSession,
    p: Parser,
    statement: str,
    args: dict[str, Any] | list[Any] | None = None,
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
    from delta_pyds.spark.native.read import read_delta

    keep = escape if not kwargs else (lambda text: text)
    frames: dict[str, Any] = {}
    pieces = []
    pos = 0
    for n, ref in enumerate(refs):
        key = f"delta_pyds_table_{n}"
        frames[key] = read_delta(spark, ref.path, **ref.read_options())
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
            session = set(NAMES.get(spark, {}))
            stray = [t.text for t in p.tokens if t.kind in ("word", "ident") and t.value().lower() in session]
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
    spark: SparkSession, path: str, before: int, metrics: tuple[str, ...], columns: tuple[str, ...]
) -> DataFrame:
    """One row of the metrics of the commit made after version ``before`` (zeros: none made)."""
    last = commit_history(path, limit=1)
    values = [0] * len(columns)
    if last and last[0]["version"] > before:
        om = last[0].get("operationMetrics") or {}
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
    from delta_pyds.spark.native.read import read_delta

    return read_delta(spark, ref.path, **ref.read_options())


def empty(spark: SparkSession, _result: Any) -> DataFrame:
    return spark.createDataFrame([], "result string").drop("result")
