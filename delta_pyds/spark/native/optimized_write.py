"""Optimized writes for ``write_delta``: delta-spark's ``delta.autoOptimize.optimizeWrite``
(``OptimizeWriteExchange``) on Spark's own shuffle.

Guarantees:

* it is on when the session conf ``spark.databricks.delta.optimizeWrite.enabled`` says
  ``true`` (``false`` turns it off whatever the table says), else when the table property
  ``delta.autoOptimize.optimizeWrite`` is true (the table's, or the one this write sets on a
  new table), as delta-spark decides;
* when on, the rows are shuffled by the partition columns before the write (Spark's
  ``REBALANCE`` hint: adaptive execution coalesces small shuffle partitions and splits
  skewed ones), so each table partition gets few files instead of one per input task; an
  unpartitioned table's rows are rebalanced into evenly sized tasks;
* the target of each task is ``spark.databricks.delta.optimizeWrite.binSize`` (MiB, default
  512, delta-spark's default) of shuffle data, applied as
  ``spark.sql.adaptive.advisoryPartitionSizeInBytes`` for the write's job only (the
  session's value is restored after it);
* the rows written are the same rows: only their placement into tasks changes.

The ``pydelta`` data source cannot do it: a Python data source writer receives the
DataFrame's partitions as they are and gets no session conf."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from typing import TYPE_CHECKING

from delta_pyds.protocol.table_properties import is_true
from delta_pyds.spark.session import conf
from delta_pyds.spark.session.conf import ADVISORY_CONF, BIN_SIZE_CONF, OPTIMIZE_WRITE_CONF

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from delta_pyds.write.plan import WritePlan

log = logging.getLogger(__name__)

ENABLED_CONF = OPTIMIZE_WRITE_CONF
OPTIMIZE_WRITE_PROPERTY = "delta.autoOptimize.optimizeWrite"
DEFAULT_BIN_MIB = 512


def optimize_write_enabled(spark: SparkSession, plan: WritePlan) -> bool:
    """Whether this write is optimized (see the module docstring)."""
    enabled = conf.flag(spark, ENABLED_CONF, None)
    if enabled is not None:
        return enabled
    if plan.metadata is not None:
        configuration = plan.metadata.configuration
    elif plan.read_version >= 0:
        from delta_pyds.read.scan_plan import cached_snapshot

        configuration = cached_snapshot(plan.storage, plan.read_version).configuration
    else:  # pragma: no cover  (a write to a new table always has metadata)
        return False
    return is_true(configuration, OPTIMIZE_WRITE_PROPERTY)


def bin_size(spark: SparkSession) -> int:
    """``spark.databricks.delta.optimizeWrite.binSize`` in bytes (a number is MiB, as in
    delta-spark; ``k``/``m``/``g`` suffixes accepted)."""
    return conf.size_mib(spark, BIN_SIZE_CONF, DEFAULT_BIN_MIB)


def rebalanced(df: DataFrame, plan: WritePlan) -> DataFrame:
    """``df`` shuffled for an optimized write: by the partition columns (by nothing on an
    unpartitioned table)."""
    return df.hint("rebalance", *plan.partition_columns) if plan.partition_columns else df.hint("rebalance")


@contextlib.contextmanager
def advisory_size(spark: SparkSession, size: int) -> Iterator[None]:
    """The session's adaptive advisory partition size set to ``size`` bytes while the block runs."""
    before = spark.conf.get(ADVISORY_CONF, None)
    spark.conf.set(ADVISORY_CONF, str(size))
    try:
        yield
    finally:
        if before is None:
            spark.conf.unset(ADVISORY_CONF)
        else:
            spark.conf.set(ADVISORY_CONF, before)


@contextlib.contextmanager
def optimized_input(df: DataFrame, plan: WritePlan) -> Iterator[DataFrame]:
    """The DataFrame to write for ``plan``: ``df`` itself, or rebalanced with the bin size
    applied while the block runs when the write is optimized."""
    spark = df.sparkSession
    if not optimize_write_enabled(spark, plan):
        yield df
        return
    size = bin_size(spark)
    with advisory_size(spark, size):
        yield rebalanced(df, plan)
