"""Runs the statements of :func:`delta_pyds.sql` that write rows or definitions: DELETE,
UPDATE, MERGE, INSERT and CREATE / REPLACE TABLE (parsed by :mod:`delta_pyds.spark.sql.dml` and
:mod:`delta_pyds.spark.sql.create`).

Guarantees: each statement is one call of the public ``DeltaTable`` API (``delete``,
``update``, ``merge`` with one ``add_clause`` per WHEN clause, a builder per definition) or of
``write_delta`` (INSERT: columns by position as SQL does, by name with ``BY NAME``; ``REPLACE
WHERE`` is ``replaceWhere``; with ``spark.databricks.delta.schema.autoMerge.enabled=true`` a
query's columns beyond the table's keep their names and are added, as in delta-spark); the
rows of DELETE, UPDATE, MERGE and INSERT are the metrics of the commit the statement made
(zeros when none). A MERGE source or INSERT query reads its Delta tables natively.
``CREATE ... AS SELECT`` reads the query first, then commits the definition, the removes and
the rows in one commit (:mod:`delta_pyds.spark.commands.create_as_select`); a named table is an
entry of Spark's session catalog (:func:`~delta_pyds.spark.catalog.entries.create_named`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from delta_pyds.errors import SqlParseError, SqlStatementError
from delta_pyds.spark.session.conf import auto_merge
from delta_pyds.spark.sql.ast import CreateTable, Delete, Insert, Merge, SparkTable, Statement, Subquery, Update
from delta_pyds.spark.sql.table_refs import (
    Resolution,
    affected,
    current_version,
    delta_table,
    empty,
    metrics_row,
    newest_metrics_after,
    read_ref,
    run_query,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


def _delete(spark: SparkSession, st: Delete, r: Resolution) -> DataFrame:
    dt = delta_table(spark, r.target(st))
    if st.alias:  # Spark resolves t.id on the table under its alias (never a rewrite of the text)
        dt = dt.alias(st.alias)
    dt.delete(st.condition)
    return affected(spark, dt.lastCommit, ("numDeletedRows",), ("num_affected_rows",))


def _update(spark: SparkSession, st: Update, r: Resolution) -> DataFrame:
    dt = delta_table(spark, r.target(st))
    if st.alias:
        dt = dt.alias(st.alias)
    dt.update(st.condition, dict(st.assignments))
    return affected(spark, dt.lastCommit, ("numUpdatedRows",), ("num_affected_rows",))


def _merge(spark: SparkSession, st: Merge, r: Resolution) -> DataFrame:
    dt = delta_table(spark, r.target(st))
    # an unaliased target is qualified by its table name (``MERGE INTO t ... SET t.id = s.id``), as in Spark
    alias = st.alias or (st.table.name[-1] if st.table.name else None)
    if alias:
        dt = dt.alias(alias)
    df = _merge_source(spark, st, r)
    if st.source_alias:
        df = df.alias(st.source_alias)
    b = dt.merge(df, st.condition)
    if st.schema_evolution:
        b = b.withSchemaEvolution()
    for clause in st.clauses:
        b = b.add_clause(clause)
    return b.execute()


def _merge_source(spark: SparkSession, st: Merge, r: Resolution) -> DataFrame:
    """A parenthesized query, a Delta table (with its time travel), or Spark's table or view."""
    source = st.source
    if isinstance(source, Subquery):
        return run_query(spark, source.text)
    if isinstance(source, SparkTable):
        return spark.table(source.name)
    ref = r.ref(source, views=False)
    if ref is not None:
        return read_ref(spark, ref)
    if source.version is not None or source.timestamp is not None:
        raise SqlParseError(
            f"MERGE: the source {source.text} is no Delta table, and only a Delta table takes time travel"
            f" (at position {source.position})"
        )
    return spark.table(source.text)


def _insert(spark: SparkSession, st: Insert, r: Resolution) -> DataFrame:
    from delta_pyds.spark.commands.auto_compaction import write_and_compact

    ref = r.target(st)
    delta_table(spark, ref)
    df = run_query(spark, st.query)
    if not st.by_name:
        names = list(st.columns) if st.columns else read_ref(spark, ref).columns
        if not st.columns and len(df.columns) > len(names) and auto_merge(spark):
            names += df.columns[len(names) :]  # delta-spark: extra columns keep their names, then evolve
        if len(df.columns) != len(names):
            raise SqlStatementError(
                f"INSERT: the query gives {len(df.columns)} columns, the table {'list ' if st.columns else ''}"
                f"has {len(names)} ({', '.join(names)})"
            )
        df = df.toDF(*names)
    before = current_version(ref.path)
    options = {"replaceWhere": st.replace_where} if st.replace_where else {}
    mode = "overwrite" if st.overwrite or st.replace_where else "append"
    commit = write_and_compact(df, ref.path, mode=mode, **options)
    out = ("num_affected_rows", "num_inserted_rows")
    if commit is None:  # the data source path does not hand its commit back
        return metrics_row(spark, newest_metrics_after(ref.path, before), ("numOutputRows",), out)
    return affected(spark, commit, ("numOutputRows",), out)


def _create(spark: SparkSession, st: CreateTable, r: Resolution) -> DataFrame:
    from delta_pyds.spark.catalog.entries import create_named

    if st.name is not None:
        create_named(spark, st.name, st.mode, st.path, lambda location: _define(spark, replace(st, path=location)))
    else:
        assert st.path is not None  # delta.`path`
        _define(spark, st)
    return empty(spark, None)


def _define(spark: SparkSession, st: CreateTable) -> None:
    """Commits the definition at ``st.path`` (with a query's rows, in the same commit)."""
    from delta_pyds.spark.tables import DeltaTable, IdentityGenerator

    assert st.path is not None
    if st.query is not None:
        _run_as_select(spark, st)
        return
    builder = getattr(DeltaTable, st.mode)(spark).location(st.path)
    for c in st.columns or ():
        gen: Any = c.expression
        by_default = None
        if c.identity is not None:
            start, step, always = c.identity
            generator = IdentityGenerator(start, step)
            gen, by_default = (generator, None) if always else (None, generator)
        builder = builder.addColumn(c.name, c.type, c.nullable, gen, by_default, c.comment)
    if st.partitioned_by:
        builder = builder.partitionedBy(*st.partitioned_by)
    if st.cluster_by is not None:
        builder = builder.clusterBy(*st.cluster_by)
    for k, v in st.properties:
        builder = builder.property(k, v)
    if st.comment is not None:
        builder = builder.comment(st.comment)
    builder.execute()


def _run_as_select(spark: SparkSession, st: CreateTable) -> None:
    """``... AS SELECT``: the definition and the query's rows in one commit."""
    from delta_pyds.operations.create import TableDefinition
    from delta_pyds.spark.commands.args import activate
    from delta_pyds.spark.commands.create_as_select import create_as_select
    from delta_pyds.storage.store import Storage

    assert st.path is not None and st.query is not None
    activate(spark)
    rows = run_query(spark, st.query)
    definition = TableDefinition(
        partition_columns=tuple(st.partitioned_by),
        cluster_by=None if st.cluster_by is None else list(st.cluster_by),
        properties=dict(st.properties),
        description=st.comment,
    )
    create_as_select(spark, Storage(st.path), definition, rows, mode=st.mode)


RUNNERS: Mapping[type[Statement], Callable[[SparkSession, Any, Resolution], DataFrame]] = {
    Delete: _delete,
    Update: _update,
    Merge: _merge,
    Insert: _insert,
    CreateTable: _create,
}
