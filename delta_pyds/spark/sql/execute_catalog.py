"""Runs the catalog statements of :func:`delta_pyds.sql` (parsed by
:mod:`delta_pyds.spark.sql.catalog_statements`): registering an existing Delta table under a
name, Spark's own DROP TABLE / ALTER TABLE RENAME / SHOW TABLES, and DESCRIBE of a Delta table.

Guarantees: ``CREATE TABLE [IF NOT EXISTS] name USING delta LOCATION 'p'`` writes an EXTERNAL
entry of Spark's session catalog (:mod:`delta_pyds.spark.catalog_entries`) only when ``p``
holds a Delta table (else :class:`~delta_pyds.errors.TableNotFoundError`); the Spark statements
run as given, after the ``delta`` short name is registered; ``DESCRIBE`` rows come from the
Delta log (``col_name, data_type, comment``, the partition columns, and with ``EXTENDED`` the
table's name, type, location, provider and properties)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from delta_pyds.errors import TableNotFoundError
from delta_pyds.spark.catalog import lookup
from delta_pyds.spark.catalog_entries import create_named
from delta_pyds.spark.delta_source import register_delta_name
from delta_pyds.spark.sql.ast import CatalogCommand, DescribeTable, RegisterTable, Statement
from delta_pyds.spark.sql.parser import TableRef
from delta_pyds.spark.sql.table_refs import Resolution, empty

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


def _command(spark: SparkSession, st: CatalogCommand, r: Resolution) -> DataFrame:
    register_delta_name(spark)
    return spark.sql(st.text)


def _register(spark: SparkSession, st: RegisterTable, r: Resolution) -> DataFrame:
    def check(location: str) -> None:
        from delta_pyds.spark.tables import DeltaTable

        if not DeltaTable.isDeltaTable(spark, location):
            raise TableNotFoundError(
                f"CREATE TABLE {'.'.join(st.name)} USING delta LOCATION '{st.location}': no Delta table there "
                "(a table with columns is created by CREATE TABLE name (col type, ...) USING delta)"
            )

    create_named(spark, st.name, "createIfNotExists" if st.if_not_exists else "create", st.location, check)
    return empty(spark, None)


def _describe(spark: SparkSession, st: DescribeTable, r: Resolution) -> DataFrame:
    rows = _describe_rows(spark, r.target(st), st.extended)
    return spark.createDataFrame(rows, "col_name string, data_type string, comment string")


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


RUNNERS: Mapping[type[Statement], Callable[[SparkSession, Any, Resolution], DataFrame]] = {
    CatalogCommand: _command,
    RegisterTable: _register,
    DescribeTable: _describe,
}
