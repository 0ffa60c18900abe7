"""The batch writer of the ``pydelta`` source (``df.write.format("pydelta")``).

Spark calls ``DeltaDataSource.writer(schema, overwrite)`` once on the driver (a Python
worker): :func:`~delta_pyds.write.plan.plan_write` validates everything and pins the
table version. Each task then runs :meth:`DeltaBatchWriter.write` on an executor with
Arrow batches (Parquet files + add actions in the commit message), and Spark calls
:meth:`DeltaBatchWriter.commit` once on the driver with the messages of the successful
task attempts, or :meth:`DeltaBatchWriter.abort` when the job failed.

Guarantees: a failed job or a failed commit deletes the data files its tasks reported
and leaves the log unchanged; a commit that reached the log is never undone. After a
commit, auto compaction runs (:mod:`delta_pyds.operations.auto_compact`), as a commit of
its own, when the write's options turn it on or, without them, the table's properties: no
session conf reaches a Python data source (Spark runs ``commit`` in a planner worker
process that gets the pickled writer, the messages and a few hand-picked runner confs, no
session), so ``spark.databricks.delta.autoCompact.*`` are taken as ``.option(...)`` keys;
a bad value fails the write when it is planned, before any data moves.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, cast

from pyspark.sql.datasource import DataSourceArrowWriter, WriterCommitMessage

from delta_pyds.operations.auto_compact import auto_compact, option_settings
from delta_pyds.protocol.identity import merge_marks
from delta_pyds.transaction.staged_files import delete_files, delete_on_failure
from delta_pyds.write.parquet_writer import WriteSpec, write_task
from delta_pyds.write.plan import WritePlan, commit_write

if TYPE_CHECKING:
    import pyarrow as pa

    from delta_pyds.protocol.action_types import AddFile

log = logging.getLogger(__name__)


def task_attempt() -> tuple[int, int]:
    """(partition id, attempt number) of the Spark task running this code; (0, 0) outside one.
    The partition id names the task's files and spaces its identity values."""
    try:
        from pyspark import TaskContext

        ctx = TaskContext.get()
        if ctx is not None:
            return ctx.partitionId(), ctx.attemptNumber()
    except Exception:  # pragma: no cover
        pass
    return 0, 0


@dataclass
class DeltaCommitMessage(WriterCommitMessage):
    """What one task wrote: add actions (JSON-ready dicts) and its row count."""

    adds: list[AddFile] = field(default_factory=list)
    num_rows: int = 0
    identity: dict[str, int] = field(default_factory=dict)  # identity column -> extreme generated value


class DeltaBatchWriter(DataSourceArrowWriter):
    def __init__(self, plan: WritePlan):
        self.plan = plan
        self.auto_compact = option_settings(plan.opts.auto_compact)  # a bad value fails here, on the driver

    def write(self, iterator: Iterator[pa.RecordBatch]) -> DeltaCommitMessage:
        if self.plan.skip:
            for _ in iterator:
                pass
            return DeltaCommitMessage()
        task_id, attempt = task_attempt()
        result = write_task(
            cast(WriteSpec, self.plan.spec),
            iterator,
            task_id=task_id,  # not skipped
            attempt=attempt,
        )
        return DeltaCommitMessage(result.adds, result.num_rows, result.identity)

    # Spark hands back the messages this writer's tasks returned
    def commit(self, messages: list[DeltaCommitMessage | None]) -> None:  # type: ignore[override]
        if self.plan.skip:
            log.info("pydelta: nothing written to %s: %s", self.plan.storage.root, self.plan.skip)
            return
        adds = [a for m in messages if m is not None for a in m.adds]
        rows = sum(m.num_rows for m in messages if m is not None)
        with delete_on_failure(self.plan.storage, adds):
            marks = merge_marks(
                cast(WriteSpec, self.plan.spec).identity,  # not skipped
                [m.identity for m in messages if m is not None],
            )
            result = commit_write(self.plan, adds, num_rows=rows, identity_marks=marks)
        if result.skipped:
            delete_files(self.plan.storage, adds)
            log.info(
                "pydelta: write to %s skipped (already committed or table created concurrently)", self.plan.storage.root
            )
            return
        # no session conf reaches a data source: the write's options, else the table's properties (never raises)
        auto_compact(self.plan.storage, result.version, adds, self.auto_compact)

    def abort(self, messages: list[DeltaCommitMessage | None]) -> None:  # type: ignore[override]
        adds = [a for m in messages if m is not None for a in m.adds]
        delete_files(self.plan.storage, adds)
