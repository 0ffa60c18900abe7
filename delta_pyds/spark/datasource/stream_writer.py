"""Streaming writes: ``df.writeStream.format("pydelta").option("checkpointLocation", ck).start(path)``.

Executors write Parquet files for each micro-batch (as batch writes do) and Spark calls
:meth:`DeltaStreamWriter.commit` once per batch on the driver, where
:func:`delta_pyds.streaming.sink.commit_batch` commits them with a ``txn`` action keyed by
the query id and the batch id, so a batch replayed after a restart is never committed
twice. ``outputMode("append")`` appends; ``outputMode("complete")`` overwrites the table
with every batch.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, cast

from pyspark.sql.datasource import DataSourceStreamArrowWriter, WriterCommitMessage

from delta_pyds.errors import OptionValueError
from delta_pyds.operations.auto_compact import auto_compact, option_settings
from delta_pyds.streaming.sink import commit_batch, sink_app_id, sink_options
from delta_pyds.transaction.staged_files import delete_files
from delta_pyds.write.parquet_writer import WriteSpec, write_task
from delta_pyds.write.plan import WritePlan, plan_write

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql.datasource import DataSource
    from pyspark.sql.types import StructType as SparkStructType

    from delta_pyds.protocol.action_types import AddFile
    from delta_pyds.protocol.schema import StructType

log = logging.getLogger(__name__)


@dataclass
class StreamCommitMessage(WriterCommitMessage):
    """What one task wrote, and the plan it wrote under (for a table created by the batch)."""

    adds: list[AddFile] = field(default_factory=list)
    num_rows: int = 0
    plan: WritePlan | None = None


def stream_writer(source: DataSource, schema: SparkStructType, overwrite: bool) -> DeltaStreamWriter:
    from delta_pyds.protocol.schema_evolution import from_spark_json

    opts = sink_options(source.options, complete=overwrite)
    data_schema = from_spark_json(schema.jsonValue())
    plan = plan_write(opts, data_schema)
    if plan.skip:
        raise OptionValueError(f"option saveMode: the streaming sink cannot {plan.skip}; remove the option")
    spec = cast(WriteSpec, plan.spec)  # not skipped
    if spec.identity:
        from delta_pyds.errors import UnsupportedFeatureError

        raise UnsupportedFeatureError(
            "the streaming sink cannot generate values for identity column(s) "
            f"{', '.join(c.name for c in spec.identity)} (each micro-batch would start from the "
            "high-water mark the query started with); write with df.write (foreachBatch)",
            ("identityColumns",),
        )
    return DeltaStreamWriter(plan, data_schema, dict(source.options))


class DeltaStreamWriter(DataSourceStreamArrowWriter):
    def __init__(self, plan: WritePlan, data_schema: StructType, options: dict[str, str]) -> None:
        self.plan = plan
        self.data_schema = data_schema
        self.options = options
        self.auto_compact = option_settings(plan.opts.auto_compact)  # a bad value fails the query's start

    def write(self, iterator: Iterator[pa.RecordBatch]) -> StreamCommitMessage:
        from delta_pyds.spark.datasource.writer import task_attempt

        task_id, attempt = task_attempt()
        result = write_task(
            cast(WriteSpec, self.plan.spec),
            iterator,
            task_id=task_id,  # not skipped
            attempt=attempt,
        )
        return StreamCommitMessage(result.adds, result.num_rows, self.plan)

    # Spark hands back the messages this writer's tasks returned
    def commit(
        self,
        messages: list[StreamCommitMessage | None],  # type: ignore[override]
        batchId: int,
    ) -> None:
        present = [m for m in messages if m is not None]
        adds = [a for m in present for a in m.adds]
        written = next((m.plan for m in present if m.plan is not None), self.plan)
        rows = sum(m.num_rows for m in present)
        result = commit_batch(
            written, self.data_schema, adds, batch_id=batchId, app_id=sink_app_id(self.options), num_rows=rows
        )
        if result is not None:
            log.info(
                "pydelta sink: batch %s committed as version %s of %s", batchId, result.version, written.storage.root
            )
            # no session conf reaches a data source: the write's options, else the table's properties (never raises)
            auto_compact(written.storage, result.version, adds, self.auto_compact)

    def abort(
        self,
        messages: list[StreamCommitMessage | None],  # type: ignore[override]
        batchId: int,
    ) -> None:
        adds = [a for m in messages if m is not None for a in m.adds]
        delete_files(self.plan.storage, adds)
