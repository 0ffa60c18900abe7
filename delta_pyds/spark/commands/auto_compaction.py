"""Auto compaction after the writes of a Spark session (``write_delta``, DELETE, UPDATE,
MERGE), with the session's ``spark.databricks.delta.autoCompact.*`` confs.

Guarantees:

* after each commit of such a write, :func:`after_commit` (the one post-commit hook) runs
  :func:`delta_pyds.operations.auto_compact.auto_compact` with the session's settings: the
  write's result is returned to the user whatever the compaction does (a bad conf, a lost
  race or a failed rewrite is logged, never raised);
* the bins are rewritten in the driver's process with pyarrow when the table allows it
  (:func:`delta_pyds.operations.compaction.local_compaction_refusal`) and they hold at
  most :data:`LOCAL_COMPACTION_MAX_BYTES`, else with Spark as OPTIMIZE rewrites them
  (row ids kept, clustered rows sorted);
* :func:`write_and_compact` is :func:`delta_pyds.spark.native.write.write_path` followed by it.

The ``pydelta`` data source and the streaming sink commit in a Python worker that gets no
session conf: they auto compact from the table properties alone (``spark/datasource/writer.py``,
``spark/datasource/stream_writer.py``)."""

from __future__ import annotations

import functools
import logging
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from delta_pyds.operations.auto_compact import CONF_KEYS, AutoCompactSettings, compact_after_commit
from delta_pyds.operations.compaction import local_compaction_refusal, rewrite_locally
from delta_pyds.protocol.action_types import AddFile
from delta_pyds.spark.commands.optimize import DeltaOptimizeBuilder
from delta_pyds.spark.commands.rewriter import TableRewriter
from delta_pyds.spark.native import write as native_write
from delta_pyds.spark.session import conf
from delta_pyds.storage.store import Storage
from delta_pyds.transaction.commit import CommitResult

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from delta_pyds.table.snapshot import Snapshot

log = logging.getLogger(__name__)

LOCAL_COMPACTION_MAX_BYTES = 1 << 30


def session_settings(spark: SparkSession) -> AutoCompactSettings | None:
    """The session's auto compaction settings; None (logged) when a conf is not valid."""
    found = {key: conf.raw(spark, key) for key in CONF_KEYS}
    try:
        return AutoCompactSettings.from_conf({k: v for k, v in found.items() if v is not None})
    except ValueError as exc:
        log.warning("pydelta: auto compaction skipped: %s", exc)
        return None


def _spark_rewrite(spark: SparkSession, storage: Storage) -> Any:
    def rewrite(snap: Snapshot, active: pa.Table, bins: list[list[int]], target: int) -> list[AddFile]:
        sizes = active.column("size").to_pylist()
        total = sum(int(sizes[i]) for b in bins for i in b)
        if local_compaction_refusal(snap) is None and total <= LOCAL_COMPACTION_MAX_BYTES:
            return rewrite_locally(snap, active, bins, target)
        rewriter = TableRewriter(spark, storage.root, {}, storage)
        return DeltaOptimizeBuilder(rewriter).rewrite_planned(snap, active, bins, target)

    return rewrite


def after_commit(spark: SparkSession, storage: Storage, result: CommitResult | None) -> None:
    """The one post-commit hook of the session's writes: auto compaction after the commit
    ``result`` of ``write_delta``, DELETE, UPDATE, MERGE or a native stream's batch (see the
    module docstring); nothing when the write committed nothing or added no file."""
    if result is None or result.skipped or not any("add" in a for a in result.actions):
        return  # the session's confs are read only when a commit added files
    settings = session_settings(spark)
    if settings is None:
        return
    compact_after_commit(storage, result, settings, rewrite=_spark_rewrite(spark, storage))


@functools.wraps(native_write.write_path)
def write_and_compact(df: DataFrame, path: str, **kwargs: Any) -> CommitResult | None:
    """:func:`~delta_pyds.spark.native.write.write_path`, then :func:`after_commit`."""
    storage, result = native_write.write_and_commit(df, path, **kwargs)
    if storage is not None:
        after_commit(df.sparkSession, storage, result)
    return result
