"""Runs the catalog statements of :func:`delta_pyds.sql` (parsed by
:mod:`delta_pyds.spark.sql.catalog_statements`): registering an existing Delta table under a
name, Spark's own DROP TABLE / ALTER TABLE RENAME / SHOW TABLES, and DESCRIBE of a Delta table.

Guarantees: ``CREATE TABLE [IF NOT EXISTS] name USING delta LOCATION 'p' [COMMENT 'c']
[TBLPROPERTIES (...)]`` writes an EXTERNAL entry of Spark's session catalog (with the comment and
properties; :mod:`delta_pyds.spark.catalog.entries`) only when ``p`` holds a Delta table (else
:class:`~delta_pyds.errors.TableNotFoundError`) and, as delta-spark, only when TBLPROPERTIES
given are the table's own (``DELTA_CREATE_TABLE_WITH_DIFFERENT_PROPERTY``); the Spark statements
run as given, after the ``delta`` short name is registered; ``DESCRIBE`` rows come from the
Delta log (``col_name, data_type, comment``, the partition columns, and with ``EXTENDED`` the
table's name, type, location, provider and properties)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from delta_pyds.errors import TableNotFoundError
from delta_pyds.spark.catalog.entries import create_named
from delta_pyds.spark.catalog.lookup import lookup, sql_string
from delta_pyds.spark.datasource.registration import register_delta_name
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
        if st.properties:
            same_properties(location, dict(st.properties))

    clauses = f" COMMENT {sql_string(st.comment)}" if st.comment is not None else ""
    if st.properties:
        listed = ", ".join(f"{sql_string(k)} = {sql_string(v)}" for k, v in st.properties)
        clauses += f" TBLPROPERTIES ({listed})"
    mode = "createIfNotExists" if st.if_not_exists else "create"
    create_named(spark, st.name, mode, st.location, check, clauses)
    return empty(spark, None)


# delta-spark leaves these out of the comparison (the protocol's and column mapping's own)
_UNCOMPARED = ("delta.minReaderVersion", "delta.minWriterVersion", "delta.columnMapping.maxColumnId")


def same_properties(location: str, given: dict[str, str]) -> None:
    """delta-spark's rule for registering an existing table with TBLPROPERTIES: they must be the
    table's properties, all of them (else ``DELTA_CREATE_TABLE_WITH_DIFFERENT_PROPERTY``)."""
    from delta_pyds.errors import SchemaChangeError
    from delta_pyds.table.snapshot import Snapshot

    def kept(props: Mapping[str, str]) -> dict[str, str]:
        return {k: v for k, v in props.items() if k not in _UNCOMPARED and not k.startswith("delta.feature.")}

    existing = kept(Snapshot.load(location).configuration)
    if kept(given) != existing:
        raise SchemaChangeError(
            f"[DELTA_CREATE_TABLE_WITH_DIFFERENT_PROPERTY] The specified properties do not match the existing"
            f" properties at {location}.\n\n== Specified ==\n{_shown(kept(given))}\n\n== Existing ==\n"
            f"{_shown(existing)}"
        )


def _shown(props: Mapping[str, str]) -> str:
    return "\n".join(f"{k}={v}" for k, v in sorted(props.items()))


def _describe(spark: SparkSession, st: DescribeTable, r: Resolution) -> DataFrame:
    rows = _describe_rows(spark, r.target(st), st.extended)
    return spark.createDataFrame(rows, "col_name string, data_type string, comment string")


def _describe_rows(spark: SparkSession, ref: TableRef, extended: bool) -> list[tuple[str, str, str | None]]:
    from delta_pyds.spark.session.schema_convert import to_spark_schema
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
