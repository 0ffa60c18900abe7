"""Auto compaction after the writes of a Spark session (``write_delta``, DELETE, UPDATE,
MERGE), with the session's ``spark.databricks.delta.autoCompact.*`` confs.

Guarantees:

* after each commit of such a write, :func:`compact_after` runs
  :func:`delta_pyds.operations.auto_compact.auto_compact` with the session's settings: the
  write's result is returned to the user whatever the compaction does (a bad conf, a lost
  race or a failed rewrite is logged, never raised);
* the bins are rewritten in the driver's process with pyarrow when the table allows it
  (:func:`delta_pyds.operations.compaction.local_compaction_refusal`) and they hold at
  most :data:`LOCAL_COMPACTION_MAX_BYTES`, else with Spark as OPTIMIZE rewrites them
  (row ids kept, clustered rows sorted);
* :func:`write_delta` is :func:`delta_pyds.spark.native.write.write_delta` followed by it.

The ``pydelta`` data source and the streaming sink commit in a Python worker that gets no
session conf: they auto compact from the table properties alone (``spark/datasource/writer.py``,
``spark/datasource/stream_writer.py``)."""

from __future__ import annotations

import contextlib
import functools
import logging
from collections.abc import Iterable, Iterator
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


@contextlib.contextmanager
def compacting_after(rw: TableRewriter) -> Iterator[None]:
    """Runs auto compaction (:func:`compact_after`) after the commits the block's DML makes
    through ``rw`` (none when the block raises)."""
    rw.take_commits()
    yield
    compact_after(rw.spark, rw.storage, rw.take_commits())


def compact_after(spark: SparkSession, storage: Storage, results: Iterable[CommitResult | None]) -> None:
    """Auto compaction after each of the write's commits ``results`` (see the module docstring)."""
    for result in results:
        if result is None or result.skipped or not any("add" in a for a in result.actions):
            continue  # the session's confs are read only when a commit added files
        settings = session_settings(spark)
        if settings is None:
            return
        compact_after_commit(storage, result, settings, rewrite=_spark_rewrite(spark, storage))


@functools.wraps(native_write.write_delta)
def write_delta(df: DataFrame, path: str, **kwargs: Any) -> CommitResult | None:
    storage, result = native_write.write_and_commit(df, path, **kwargs)
    if storage is not None and result is not None:
        compact_after(df.sparkSession, storage, [result])
    return result
