"""The batch reader of the ``pydelta`` source.

Two reader classes exist because Spark refuses every read from a reader that defines
``pushFilters`` while ``spark.sql.python.filterPushdown.enabled`` is false:
:class:`DeltaScanReader` (no pushdown: full scan, always correct) and
:class:`DeltaFilteringScanReader` (uses Spark's filters to skip files and row groups).
Filters are only used for skipping: every filter is returned to Spark, which applies
it to the rows, so results never depend on skipping.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from pyspark.sql.datasource import DataSourceReader, InputPartition

from delta_pyds.read.file_reader import ReadSpec, read_file
from delta_pyds.read.options import ReadOptions
from delta_pyds.read.scan import PartitionFiles, iter_tasks, plan_partitions
from delta_pyds.read.scan_plan import cached_snapshot, plan_scan
from delta_pyds.table.snapshot import Snapshot

if TYPE_CHECKING:
    import pyarrow as pa

    from delta_pyds.skipping.rules import SkippingReport

log = logging.getLogger(__name__)


class DeltaInputPartition(InputPartition):
    """A group of files read by one Spark task (see scan.PartitionFiles)."""

    def __init__(self, files: PartitionFiles | None) -> None:
        super().__init__(None)
        self.files = files


class DeltaScanReader(DataSourceReader):
    def __init__(self, opts: ReadOptions, version: int, spec: ReadSpec):
        self.opts = opts
        self.version = version
        self.spec = spec
        self.predicates: tuple[Any, ...] = ()

    def _snapshot(self) -> Snapshot:
        return cached_snapshot(self.spec.storage, self.version)

    def plan(self) -> tuple[Snapshot, pa.Table, SkippingReport | None]:
        """(snapshot, kept file table, skipping report or None)."""
        scan = plan_scan(self._snapshot(), output=self.spec.output, predicates=self.predicates, with_stats=False)
        return scan.snapshot, scan.files, scan.report

    def partitions(self) -> Sequence[InputPartition]:
        snapshot, files, report = self.plan()
        if report is not None:
            log.info("pydelta scan of %s v%s: %s", snapshot.table_root, snapshot.version, report)
        groups = plan_partitions(
            files,
            snapshot.physical_partition_columns,
            max_partition_bytes=self.opts.max_partition_bytes,
            open_cost=self.opts.open_cost,
            parallelism=self.opts.parallelism,
        )
        if not groups:
            return [DeltaInputPartition(None)]
        return [DeltaInputPartition(g) for g in groups]

    # Spark hands back the partitions this reader made
    def read(self, partition: DeltaInputPartition) -> Iterator[pa.RecordBatch]:  # type: ignore[override]
        if partition.files is None:
            return
        for task in iter_tasks(partition.files):
            yield from read_file(self.spec, task)


class DeltaFilteringScanReader(DeltaScanReader):
    def pushFilters(self, filters: list[Any]) -> Iterator[Any]:
        from delta_pyds.spark.datasource.filters import translate_filters

        predicates, _unused = translate_filters(list(filters), self.spec.table_schema)
        self.predicates = tuple(predicates)
        self.spec.predicates = self.predicates
        yield from filters
