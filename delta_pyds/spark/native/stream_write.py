"""Streaming writes on the Spark-native data path: one micro-batch of a streaming query into a
Delta table, its rows written by Spark's Parquet writer and committed from the driver's Python
process, exactly once per ``(appId, batchId)``.

``df.writeStream.format("delta").start(path)`` runs :func:`write_batch` for each micro-batch after
``register(spark)`` (:mod:`delta_pyds.spark.front_doors.stream_writers` starts the query with
``foreachBatch``), so a batch costs no Python worker process: the ``pydelta`` sink
(:mod:`delta_pyds.spark.datasource.stream_writer`) starts one to plan each batch's writer, one per executor
task and two to commit (docs/cdf-streaming.md has the measured first-batch times).

Guarantees of :func:`write_batch`:

* the batch is one commit named ``STREAMING UPDATE`` carrying a ``txn`` action ``(appId,
  batchId)``, as the ``pydelta`` sink's commits (:mod:`delta_pyds.streaming.sink`); ``appId`` is
  the ``txnAppId`` option, else the query id in ``<checkpointLocation>/metadata``
  (:func:`~delta_pyds.streaming.sink.sink_app_id`): the same id either sink gives a query, so a
  query keeps its place whichever of them wrote its earlier batches;
* a batch at or below the table's ``txn`` version for ``appId`` (a replay after a crash between
  the Delta commit and Spark's commit log) writes nothing and commits nothing;
* ``complete`` overwrites the table with each batch, ``append`` appends; ``partition_by`` names a
  new table's partition columns; the other options are the sink's write options (``mergeSchema``,
  ``userMetadata``, ``delta.*`` properties ...), with the session confs ``write_delta`` reads;
* a failure before the commit deletes the files the batch wrote: nothing half-written is visible.

:func:`native_stream_refusal` says when a stream must keep the ``pydelta`` sink instead."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from delta_pyds.spark.native.locations import spark_target
from delta_pyds.spark.native.write import commit_files, plan_session_write, stage_planned
from delta_pyds.storage.store import Storage
from delta_pyds.transaction.commit import CommitResult
from delta_pyds.write.options import STORAGE_PREFIX

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

log = logging.getLogger(__name__)

_SINK_OWN = ("txnappid", "txnversion", "path", "savemode")  # set here for each batch


def native_stream_refusal(spark: SparkSession, path: str, options: Mapping[str, str]) -> str | None:
    """None when a stream into ``path`` with ``options`` can be written by :func:`write_batch`,
    else why not (a store Spark's writer cannot reach: the ``pydelta`` sink writes it)."""
    storage_options = {k[len(STORAGE_PREFIX) :]: v for k, v in options.items() if k.lower().startswith(STORAGE_PREFIX)}
    try:
        storage = Storage(path, storage_options)
    except (ValueError, TypeError) as exc:  # the sink names the problem when the query starts
        return str(exc)
    if storage.protocol == "file":
        return None
    return spark_target(spark, storage)[1]


def write_batch(
    df: DataFrame,
    path: str,
    batch_id: int,
    *,
    app_id: str,
    complete: bool,
    partition_by: Sequence[str] | None,
    options: Mapping[str, str],
) -> tuple[Storage | None, CommitResult | None]:
    """Writes and commits micro-batch ``batch_id`` (rows ``df``) of query ``app_id`` into the
    table at ``path``; (the table's storage, the commit), or (None, None) when the batch was
    already committed (see the module docstring)."""
    raw = {str(k): str(v) for k, v in options.items() if str(k).lower() not in _SINK_OWN}
    raw.update(
        path=path,
        saveMode="overwrite" if complete else "append",
        txnAppId=app_id,
        txnVersion=str(int(batch_id)),
    )
    if partition_by:
        raw["partitionBy"] = json.dumps([str(c) for c in partition_by])
    plan = plan_session_write(df, raw, complete)
    if plan.skip:
        log.info("pydelta: batch %s of %s is already in %s (%s)", batch_id, app_id, plan.storage.root, plan.skip)
        return None, None
    result = commit_files(plan, stage_planned(df, plan), operation="STREAMING UPDATE")
    return plan.storage, result
