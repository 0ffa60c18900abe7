"""``CREATE [OR REPLACE] TABLE ... AS SELECT`` / ``REPLACE TABLE ... AS SELECT``: a table
defined by a query's rows, in one commit.

Guarantees:

* the definition is decided and checked first (:func:`~delta_pyds.operations.create.plan_table`:
  ``create`` refuses an existing table, ``replace`` a missing one, ``createIfNotExists`` on an
  existing table writes and commits nothing), then the rows are written as data files of the
  new definition, then one commit holds the ``metaData``, ``protocol``, the removes of the
  replaced table's files and the new files' adds, as delta-spark commits it (operation
  ``CREATE TABLE AS SELECT``, ``REPLACE TABLE AS SELECT`` or ``CREATE OR REPLACE TABLE AS
  SELECT``; metrics ``numFiles``, ``numOutputRows``, ``numOutputBytes``);
* a query that fails (or any failure before the commit lands) leaves the table at its
  version with its rows, and deletes the files written for it;
* rows are written by Spark's Parquet writer, or by pyarrow in Python workers where Spark's
  writer cannot reach the store (as DML rewrites are).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from delta_pyds.operations.create import TableDefinition, plan_table, table_transaction
from delta_pyds.protocol.schema import parse_schema
from delta_pyds.protocol.schema_evolution import from_spark_json
from delta_pyds.spark.commands.generation_check import check_generation_expressions
from delta_pyds.spark.commands.rewriter import TableRewriter
from delta_pyds.storage.store import Storage
from delta_pyds.transaction.staged_files import delete_on_failure
from delta_pyds.write.plan import table_write_spec

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from delta_pyds.transaction.commit import CommitResult


def create_as_select(
    spark: SparkSession, storage: Storage, definition: TableDefinition, rows: DataFrame, *, mode: str
) -> CommitResult | None:
    """Defines the table at ``storage`` by ``definition`` (its columns: ``rows``' schema when
    it has none) with ``rows`` as its data, in one commit (see the module docstring); ``mode``
    is a builder mode (``create``, ``createIfNotExists``, ``replace``, ``createOrReplace``).
    Returns the commit, or None when ``createIfNotExists`` found a table."""
    data_schema = from_spark_json(rows.schema.jsonValue())
    if not definition.columns:
        definition.columns = list(parse_schema(rows.schema.json()).fields)
    check_generation_expressions(spark, definition.columns)  # any Spark SQL function: Spark writes the rows
    plan = plan_table(storage, definition, mode=mode, spark_sql=True)
    if plan is None:
        return None
    spec = table_write_spec(storage, plan.metadata, plan.protocol, data_schema, plan.clustering or ())
    rewriter = TableRewriter(spark, storage.root, {}, storage)
    rewriter.engine = "native"  # Spark's writer, else Python workers when it cannot reach the store
    adds = rewriter.rewrite(rows, spec, True)
    with delete_on_failure(storage, adds):
        txn = table_transaction(plan)
        txn.add_files(adds)
        metrics = {
            "numFiles": len(adds),
            "numOutputRows": sum(_num_records(a.get("stats")) for a in adds),
            "numOutputBytes": sum(int(a.get("size") or 0) for a in adds),
        }
        return txn.commit(f"{plan.operation} AS SELECT", plan.parameters, metrics=metrics)


def _num_records(stats: str | None) -> int:
    return int(json.loads(stats).get("numRecords", 0)) if stats else 0
