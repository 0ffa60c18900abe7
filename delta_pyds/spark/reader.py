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
from typing import Iterator, List, Sequence

from pyspark.sql.datasource import DataSourceReader, InputPartition

from ..file_reader import ReadSpec, read_file
from ..read_options import ReadOptions
from ..scan import bin_pack, file_tasks
from ..snapshot import Snapshot
from ..storage import Storage

log = logging.getLogger("delta_pyds")


class DeltaInputPartition(InputPartition):
    """A group of files read by one Spark task."""

    def __init__(self, tasks):
        super().__init__(len(tasks))
        self.tasks = tasks


class DeltaScanReader(DataSourceReader):
    def __init__(self, opts: ReadOptions, version: int, spec: ReadSpec):
        self.opts = opts
        self.version = version
        self.spec = spec
        self.predicates: tuple = ()

    def _snapshot(self) -> Snapshot:
        return Snapshot.load(self.spec.storage, version=self.version)

    def plan(self):
        """(snapshot, kept file table, skipping report or None)."""
        snapshot = self._snapshot()
        files = snapshot.files
        report = None
        if self.predicates:
            from ..skipping import prune_files
            files, report = prune_files(files, self.predicates, schema=snapshot.schema,
                                        partition_columns=snapshot.partition_columns,
                                        column_mapping_mode=snapshot.column_mapping_mode)
        return snapshot, files, report

    def partitions(self) -> Sequence[InputPartition]:
        snapshot, files, report = self.plan()
        if report is not None:
            log.info("pydelta scan of %s v%s: %s", snapshot.table_root, snapshot.version, report)
        tasks = file_tasks(files, snapshot.physical_partition_columns)
        groups = bin_pack(tasks, max_partition_bytes=self.opts.max_partition_bytes,
                          open_cost=self.opts.open_cost, parallelism=self.opts.parallelism)
        if not groups:
            return [DeltaInputPartition([])]
        return [DeltaInputPartition(g) for g in groups]

    def read(self, partition: DeltaInputPartition) -> Iterator:
        for task in partition.tasks:
            yield from read_file(self.spec, task)


class DeltaFilteringScanReader(DeltaScanReader):
    def pushFilters(self, filters: List) -> Iterator:
        from .filters import translate_filters
        predicates, _unused = translate_filters(list(filters), self.spec.table_schema)
        self.predicates = tuple(predicates)
        self.spec.predicates = self.predicates
        for f in filters:  # every filter stays with Spark: skipping is only an optimisation
            yield f
