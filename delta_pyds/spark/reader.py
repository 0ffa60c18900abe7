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
import time
from collections.abc import Iterator, Sequence

from pyspark.sql.datasource import DataSourceReader, InputPartition

from delta_pyds.errors import DeltaError
from delta_pyds.log.files import LOG_DIR, commit_name
from delta_pyds.read.file_reader import ReadSpec, read_file
from delta_pyds.read.options import ReadOptions
from delta_pyds.read.scan import iter_tasks, plan_partitions
from delta_pyds.storage.store import Storage
from delta_pyds.table.snapshot import Snapshot

log = logging.getLogger(__name__)


_CACHE: dict = {}
_CACHE_SECONDS = 60.0


def cached_snapshot(storage: Storage, version: int) -> Snapshot:
    """A snapshot of a pinned version, shared by reader() and partitions() when Spark
    runs both in one planning worker (a version's log never changes once written).
    Entries live a minute and are keyed by the size and modification time of the version's
    commit file too, so a table deleted and created again at the same path is never served
    from the old one's entry; when that file cannot be inspected nothing is cached.
    The cache is module state, never pickled to executors."""
    try:
        entry = storage.info(storage.join(LOG_DIR, commit_name(version)))
    except (OSError, DeltaError):
        return Snapshot.load(storage, version=version)
    key = (
        storage.root,
        tuple(sorted(storage.options.items())),
        storage.allow_external_paths,
        version,
        entry.size,
        entry.modification_time,
    )
    now = time.monotonic()
    for k in [k for k, (t, _) in _CACHE.items() if now - t > _CACHE_SECONDS]:
        del _CACHE[k]
    hit = _CACHE.get(key)
    if hit is not None:
        return hit[1]
    snapshot = Snapshot.load(storage, version=version)
    if len(_CACHE) >= 4:
        _CACHE.pop(next(iter(_CACHE)))
    _CACHE[key] = (now, snapshot)
    return snapshot


class DeltaInputPartition(InputPartition):
    """A group of files read by one Spark task (see scan.PartitionFiles)."""

    def __init__(self, files):
        super().__init__(None)
        self.files = files


class DeltaScanReader(DataSourceReader):
    def __init__(self, opts: ReadOptions, version: int, spec: ReadSpec):
        self.opts = opts
        self.version = version
        self.spec = spec
        self.predicates: tuple = ()

    def _snapshot(self) -> Snapshot:
        return cached_snapshot(self.spec.storage, self.version)

    def plan(self):
        """(snapshot, kept file table, skipping report or None)."""
        snapshot = self._snapshot()
        files = snapshot.files
        report = None
        if self.predicates:
            from delta_pyds.skipping.files import prune_files

            files, report = prune_files(
                files,
                self.predicates,
                schema=snapshot.schema,
                partition_columns=snapshot.partition_columns,
                column_mapping_mode=snapshot.column_mapping_mode,
            )
        return snapshot, files, report

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
    def read(self, partition: DeltaInputPartition) -> Iterator:  # type: ignore[override]
        if partition.files is None:
            return
        for task in iter_tasks(partition.files):
            yield from read_file(self.spec, task)


class DeltaFilteringScanReader(DeltaScanReader):
    def pushFilters(self, filters: list) -> Iterator:
        from delta_pyds.spark.filters import translate_filters

        predicates, _unused = translate_filters(list(filters), self.spec.table_schema)
        self.predicates = tuple(predicates)
        self.spec.predicates = self.predicates
        yield from filters
