"""Runs a parsed statement of :mod:`delta_pyds.spark.sql.ast` on a SparkSession:
:func:`execute`, one runner per statement type.

Guarantees: a statement's tables are resolved through Spark's catalog first, each name once
(:class:`~delta_pyds.spark.sql.table_refs.Resolution`); a name that is no Delta table where a
Delta statement needs one raises :class:`~delta_pyds.errors.SqlParseError` before anything
changes. Each Delta statement that changes a table is one call of the public
:class:`~delta_pyds.DeltaTable` API (or of ``write_delta``, the catalog helpers, or for
``UNSET TBLPROPERTIES``, which ``DeltaTable`` has no method for,
:func:`~delta_pyds.operations.properties.unset_properties`), one commit at most; ``SHOW
TBLPROPERTIES`` / ``SHOW PARTITIONS`` read the table's snapshot; results have delta-spark's
columns (``num_affected_rows`` ...; DESCRIBE HISTORY / DETAIL as ``history()`` / ``detail()``).
After a Delta statement on a temporary view over ``pydelta``, the view is made again so that
it reads the new version. The runners of the table maintenance and ALTER TABLE statements are
here; DML and CREATE in :mod:`delta_pyds.spark.sql.execute_writes`, the catalog statements in
:mod:`delta_pyds.spark.sql.execute_catalog`."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from delta_pyds.errors import ArgumentTypeError, SqlStatementError
from delta_pyds.spark.sql import execute_catalog, execute_writes
from delta_pyds.spark.sql.ast import (
    AddColumns,
    AddConstraint,
    AlterColumn,
    ClusterBy,
    ConvertToDelta,
    DescribeDetail,
    DescribeHistory,
    DropColumns,
    DropConstraint,
    DropFeature,
    Generate,
    Optimize,
    Query,
    RenameColumn,
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
from delta_pyds.spark.sql.parser import Parser
from delta_pyds.spark.sql.table_refs import Resolution, delta_table, empty, read_ref, run_statement
from delta_pyds.spark.sql.views import refresh_view

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

Runner = Callable[["SparkSession", Any, Resolution], "DataFrame"]


def execute(spark: SparkSession, stmt: Statement, *, resolution: Resolution | None = None) -> DataFrame:
    """Runs ``stmt`` (see the module docstring); ``resolution``: the names the caller already
    resolved for this statement (a new one when None)."""
    resolution = resolution or Resolution(spark)
    runner = RUNNERS.get(type(stmt))
    if runner is None:
        raise ArgumentTypeError(f"execute: not a statement of delta_pyds.spark.sql.ast: {type(stmt).__name__}")
    result = runner(spark, stmt, resolution)
    if not isinstance(stmt, Query):
        for (parts, _views), found in resolution.found.items():
            if found is not None and found.kind == "view":  # a temporary view target reads the new version now
                refresh_view(spark, ".".join(parts))
    return result


def _query(spark: SparkSession, st: Query, r: Resolution) -> DataFrame:
    return run_statement(spark, Parser(st.text, r.lookup), st.text, st.args)


def _describe_history(spark: SparkSession, st: DescribeHistory, r: Resolution) -> Any:
    return delta_table(spark, r.target(st)).history(st.limit)


def _describe_detail(spark: SparkSession, st: DescribeDetail, r: Resolution) -> DataFrame:
    return delta_table(spark, r.target(st)).detail()


def _vacuum(spark: SparkSession, st: Vacuum, r: Resolution) -> DataFrame:
    return delta_table(spark, r.target(st)).vacuum(st.retain_hours, st.dry_run)


def _optimize(spark: SparkSession, st: Optimize, r: Resolution) -> DataFrame:
    builder = delta_table(spark, r.target(st)).optimize()
    if st.where is not None:
        builder = builder.where(st.where)
    return builder.executeZOrderBy(*st.zorder_by) if st.zorder_by else builder.executeCompaction()


def _reorg(spark: SparkSession, st: Reorg, r: Resolution) -> DataFrame:
    from delta_pyds.spark.commands.optimize import reorg_purge

    builder = delta_table(spark, r.target(st)).optimize()
    if st.where is not None:
        builder = builder.where(st.where)
    return reorg_purge(builder)


def _restore(spark: SparkSession, st: Restore, r: Resolution) -> DataFrame:
    dt = delta_table(spark, r.target(st))
    if st.version is not None:
        return dt.restoreToVersion(st.version)
    assert st.timestamp is not None
    return dt.restoreToTimestamp(st.timestamp)


def _show_tblproperties(spark: SparkSession, st: ShowTblProperties, r: Resolution) -> DataFrame:
    from delta_pyds.table.snapshot import Snapshot

    ref = r.target(st)
    delta_table(spark, ref)
    snap = Snapshot.load(ref.path)
    props = dict(snap.configuration)
    props.setdefault("delta.minReaderVersion", str(snap.protocol.min_reader_version))
    props.setdefault("delta.minWriterVersion", str(snap.protocol.min_writer_version))
    rows = sorted(props.items())
    if st.key is not None:
        rows = [(st.key, props.get(st.key, f"Table {ref.path} does not have property: {st.key}"))]
    return spark.createDataFrame(rows, "key string, value string")


def _show_partitions(spark: SparkSession, st: ShowPartitions, r: Resolution) -> DataFrame:
    """delta-spark's SHOW PARTITIONS: one row per partition of the table's files, the
    partition columns typed, optionally only those matching ``PARTITION (col = value, ...)``."""
    from pyspark.sql import functions as F

    from delta_pyds.table.snapshot import Snapshot

    ref = r.target(st)
    delta_table(spark, ref)
    columns = Snapshot.load(ref.path).partition_columns
    if not columns:
        raise SqlStatementError(
            f"SHOW PARTITIONS is not allowed on a table that is not partitioned: delta.`{ref.path}`"
        )
    lowered = {c.lower(): c for c in columns}
    wrong = [c for c, _ in st.partition if c.lower() not in lowered]
    if wrong:
        raise SqlStatementError(f"Non-partitioning column(s) {wrong} are specified for SHOW PARTITIONS")
    df = read_ref(spark, ref).select(*[F.col(f"`{c}`") for c in columns]).distinct()
    for column, value in st.partition:
        df = df.where(F.col(f"`{lowered[column.lower()]}`").eqNullSafe(F.expr(value)))
    return df


def _truncate_table(spark: SparkSession, st: TruncateTable, r: Resolution) -> DataFrame:
    """delta-spark's TRUNCATE TABLE: every row deleted, in one commit (here a DELETE)."""
    delta_table(spark, r.target(st)).delete()
    return empty(spark, None)


def _show_columns(spark: SparkSession, st: ShowColumns, r: Resolution) -> DataFrame:
    fields = delta_table(spark, r.target(st)).toDF().schema.fields
    return spark.createDataFrame([(f.name,) for f in fields], "col_name string")


def _set_tblproperties(spark: SparkSession, st: SetTblProperties, r: Resolution) -> DataFrame:
    return empty(spark, delta_table(spark, r.target(st)).setProperties(dict(st.properties)))


def _unset_tblproperties(spark: SparkSession, st: UnsetTblProperties, r: Resolution) -> DataFrame:
    from delta_pyds.operations.properties import unset_properties

    ref = r.target(st)
    return empty(spark, unset_properties(ref.path, list(st.keys), if_exists=st.if_exists))


def _add_constraint(spark: SparkSession, st: AddConstraint, r: Resolution) -> DataFrame:
    return empty(spark, delta_table(spark, r.target(st)).addConstraint(st.name, st.check))


def _drop_constraint(spark: SparkSession, st: DropConstraint, r: Resolution) -> DataFrame:
    return empty(spark, delta_table(spark, r.target(st)).dropConstraint(st.name, st.if_exists))


def _drop_feature(spark: SparkSession, st: DropFeature, r: Resolution) -> DataFrame:
    delta_table(spark, r.target(st)).dropFeatureSupport(st.feature, st.truncate_history)
    return empty(spark, None)


def _spark_type(text: str) -> Any:
    from pyspark.sql.types import DataType

    return DataType.fromDDL(text)


def _add_columns(spark: SparkSession, st: AddColumns, r: Resolution) -> DataFrame:
    dt = delta_table(spark, r.target(st))
    return empty(spark, dt.addColumns([(list(c.path), _spark_type(c.type), c.comment, c.position) for c in st.columns]))


def _rename_column(spark: SparkSession, st: RenameColumn, r: Resolution) -> DataFrame:
    return empty(spark, delta_table(spark, r.target(st)).renameColumn(list(st.column), st.new_name))


def _drop_columns(spark: SparkSession, st: DropColumns, r: Resolution) -> DataFrame:
    names = [list(c) for c in st.columns]
    return empty(spark, delta_table(spark, r.target(st)).dropColumns(names, ifExists=st.if_exists))


def _alter_column(spark: SparkSession, st: AlterColumn, r: Resolution) -> DataFrame:
    dt = delta_table(spark, r.target(st))
    kwargs: dict[str, Any] = {}
    if st.comment is not None:
        kwargs["comment"] = st.comment
    if st.nullable is not None:
        kwargs["nullable"] = st.nullable
    if st.data_type is not None:
        kwargs["dataType"] = _spark_type(st.data_type)
    if st.position is not None:
        kwargs["position"] = st.position
    return empty(spark, dt.alterColumn(list(st.column), **kwargs))


def _cluster_by(spark: SparkSession, st: ClusterBy, r: Resolution) -> DataFrame:
    return empty(spark, delta_table(spark, r.target(st)).clusterBy(*st.columns))


def _generate(spark: SparkSession, st: Generate, r: Resolution) -> DataFrame:
    delta_table(spark, r.target(st)).generate(st.mode)
    return empty(spark, None)


def _convert(spark: SparkSession, st: ConvertToDelta, r: Resolution) -> DataFrame:
    from delta_pyds.spark.tables import DeltaTable

    return empty(spark, DeltaTable.convertToDelta(spark, st.identifier, st.partition_schema))


RUNNERS: Mapping[type[Statement], Runner] = {
    Query: _query,
    DescribeHistory: _describe_history,
    DescribeDetail: _describe_detail,
    Vacuum: _vacuum,
    Optimize: _optimize,
    Reorg: _reorg,
    Restore: _restore,
    ShowTblProperties: _show_tblproperties,
    ShowPartitions: _show_partitions,
    TruncateTable: _truncate_table,
    ShowColumns: _show_columns,
    SetTblProperties: _set_tblproperties,
    UnsetTblProperties: _unset_tblproperties,
    AddConstraint: _add_constraint,
    DropConstraint: _drop_constraint,
    DropFeature: _drop_feature,
    AddColumns: _add_columns,
    RenameColumn: _rename_column,
    DropColumns: _drop_columns,
    AlterColumn: _alter_column,
    ClusterBy: _cluster_by,
    Generate: _generate,
    ConvertToDelta: _convert,
    **execute_writes.RUNNERS,
    **execute_catalog.RUNNERS,
}
