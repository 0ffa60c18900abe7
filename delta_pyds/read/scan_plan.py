"""The read core: the one place that turns read options into a snapshot, and a snapshot,
columns and predicates into what a scan reads.

Every reader and every rewrite plans through here: the ``pydelta`` data source reader, the
Spark-native read (:func:`delta_pyds.read.native_plan.plan_native_scan` derives from
:func:`plan_scan`), the change feed and stream readers, ``replaceWhere`` and DML's
Python-worker scan. So the data source, the native path and DML cannot disagree about what a
version holds. Guarantees:

* :func:`load_snapshot` pins a version from the options exactly one way: ``versionAsOf``,
  or ``timestampAsOf`` resolved with :func:`delta_pyds.log.time_travel.pin_zone` (a
  timestamp without a UTC offset is in the ``timeZone`` option's zone, else in
  ``default_zone``; with neither it is refused when the version would depend on the
  zone), or the latest version; storage options (``storage.*``, ``allowExternalPaths``)
  always reach the storage (:func:`table_storage`);
* :func:`cached_snapshot`: a pinned version's snapshot is reused within a process for a
  minute, keyed by the version's commit file size and modification time too (a table
  deleted and created again at the same path is never served from the old entry);
* :func:`select_columns`: the output columns are the table's, ``void`` columns dropped,
  narrowed to ``columns`` (case-insensitive, in the requested order); an unknown name is a
  ``ValueError`` naming the option and the available columns;
* :func:`project_output`: a schema Spark hands a reader keeps only columns of the table
  (else ``ValueError`` naming the unknown and the available columns);
* :func:`plan_scan`: the files are the snapshot's live files (or the given subset of
  them) pruned conservatively by ``predicates`` (:func:`delta_pyds.skipping.files.prune_files`:
  partition values and statistics; callers still apply the filter to the rows); each
  file row keeps its log path, size, serialized partition values, deletion vector
  descriptor and row tracking fields, and its statistics unless the caller said it needs
  none (``with_stats=False``: the read paths) and no predicate names a data column; the
  physical read schema has the physical names (column mapping) and Parquet field ids
  (``id`` mode) of the non-partition output columns;
* :meth:`ScanPlan.read_spec` / :func:`read_spec`: the executor-side
  :class:`~delta_pyds.read.file_reader.ReadSpec` of the same snapshot and output columns;
  it reads every row group of a file unless asked to skip by the predicates (a rewrite
  must see every row).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from delta_pyds.errors import DeltaError, OptionValueError
from delta_pyds.log.files import LOG_DIR, commit_name
from delta_pyds.protocol.schema import (
    StructType,
    physical_field,
    project,
    to_arrow_schema,
    without_void_columns,
)
from delta_pyds.read.file_reader import DEFAULT_BATCH_ROWS, ReadSpec
from delta_pyds.read.options import ReadOptions
from delta_pyds.skipping.files import SkippingReport, needs_statistics, prune_files
from delta_pyds.storage.store import Storage
from delta_pyds.table.latest import latest_snapshot
from delta_pyds.table.snapshot import Snapshot

# ------------------------------------------------------------------------- snapshots
_CACHE: dict = {}
_CACHE_SECONDS = 60.0
_CACHE_ENTRIES = 4


def table_storage(opts: ReadOptions) -> Storage:
    """The storage of the table the options name, with their storage options."""
    return Storage(opts.path, opts.storage_options)


def cached_snapshot(storage: Storage, version: int) -> Snapshot:
    """The snapshot of a pinned ``version``, shared by the planning steps of one query when
    Spark runs them in one worker (a version's log never changes once written). When the
    commit file cannot be inspected nothing is cached. Module state, never pickled."""
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
    if len(_CACHE) >= _CACHE_ENTRIES:
        _CACHE.pop(next(iter(_CACHE)))
    _CACHE[key] = (now, snapshot)
    return snapshot


def load_snapshot(
    opts: ReadOptions, *, version: int | None = None, default_zone: str | None = None, storage: Storage | None = None
) -> Snapshot:
    """The snapshot the read options select (see the module docstring). ``version``: an
    already pinned version (e.g. the one ``DataSource.schema()`` saw), which wins over the
    time travel options; ``default_zone``: the zone of a ``timestampAsOf`` without offset
    when the ``timeZone`` option is absent (the session zone where it is known)."""
    storage = storage if storage is not None else table_storage(opts)
    if version is not None:
        return cached_snapshot(storage, version)
    if opts.timestamp is not None:
        from delta_pyds.log.time_travel import pin_zone, version_at_timestamp

        when = pin_zone(
            opts.timestamp,
            zone=opts.time_zone or default_zone,
            option="timestampAsOf",
            resolve=lambda ts: version_at_timestamp(storage, ts),
        )
        return Snapshot.load(storage, timestamp=when)
    if opts.version is None:
        return latest_snapshot(storage)
    return Snapshot.load(storage, version=opts.version)


# --------------------------------------------------------------------------- columns
def visible_schema(schema: StructType) -> StructType:
    """``schema`` without its ``void`` columns (delta-spark drops them on read)."""
    return without_void_columns(schema)


def select_columns(schema: StructType, columns: Sequence[str] | None, what: str = "the table") -> StructType:
    """``schema``'s visible columns narrowed to ``columns`` (all without it)."""
    visible = visible_schema(schema)
    if not columns:
        return visible
    by_name = {f.name.lower(): f for f in visible.fields}
    missing = [c for c in columns if c.lower() not in by_name]
    if missing:
        raise OptionValueError(
            f"option columns: {', '.join(missing)} not in {what}; available: {', '.join(visible.names)}"
        )
    return StructType(tuple(by_name[c.lower()] for c in columns))


def project_output(table: StructType, requested: StructType, what: str = "the table") -> StructType:
    """The table's columns (types, metadata) named by ``requested`` (the schema Spark gives a
    reader: a user schema, or the one ``schema()`` returned), in its order."""
    output = project(table, requested)
    missing = [f.name for f in output.fields if table.get(f.name) is None]
    if missing:
        raise OptionValueError(
            f"the schema given to the reader names columns not in {what}: "
            f"{', '.join(missing)}; available: {', '.join(table.names)}"
        )
    return output


# ------------------------------------------------------------------------------ scans
def read_spec(
    snapshot: Snapshot,
    output: StructType,
    arrow_schema: pa.Schema | None = None,
    *,
    batch_rows: int = DEFAULT_BATCH_ROWS,
    predicates: Sequence[Any] = (),
) -> ReadSpec:
    """The executor-side spec reading ``output`` (logical columns of ``snapshot``, possibly
    with extra columns the caller fills, such as the change feed's) from its files, yielding
    ``arrow_schema`` (default: the Arrow form of ``output``)."""
    return ReadSpec(
        storage=snapshot.storage,
        output=output,
        arrow_schema=arrow_schema if arrow_schema is not None else to_arrow_schema(output),
        partition_columns=tuple(snapshot.partition_columns),
        physical_partition_columns=tuple(snapshot.physical_partition_columns),
        column_mapping_mode=snapshot.column_mapping_mode,
        batch_rows=batch_rows,
        predicates=tuple(predicates),
        table_schema=snapshot.schema,
    )


@dataclass
class ScanPlan:
    """What a scan of one version reads (see the module docstring)."""

    snapshot: Snapshot
    output: StructType  # logical output columns, in order
    files: pa.Table  # rows of snapshot.files: the live files kept after pruning
    read_schema: StructType  # physical data columns (output minus partition columns)
    predicates: tuple = ()
    report: SkippingReport | None = None

    @property
    def version(self) -> int:
        return self.snapshot.version

    def read_spec(
        self,
        arrow_schema: pa.Schema | None = None,
        *,
        batch_rows: int = DEFAULT_BATCH_ROWS,
        skip_row_groups: bool = False,
    ) -> ReadSpec:
        """The executor-side spec of this plan. ``skip_row_groups``: also skip the row
        groups the predicates rule out, for readers whose caller filters the rows anyway;
        rewrites (which must see every row of a file) leave it off."""
        predicates = self.predicates if skip_row_groups else ()
        return read_spec(self.snapshot, self.output, arrow_schema, batch_rows=batch_rows, predicates=predicates)


def plan_scan(
    snapshot: Snapshot,
    *,
    columns: Sequence[str] | None = None,
    output: StructType | None = None,
    predicates: Sequence[Any] = (),
    files: pa.Table | None = None,
    with_stats: bool = True,
) -> ScanPlan:
    """The scan of ``snapshot``: output ``columns`` (default: every visible column, in table
    order) or an already resolved ``output`` schema; ``files`` (rows of ``snapshot.files``,
    e.g. a rewrite's candidates) instead of all live files; pruned with ``predicates``.
    ``with_stats=False``: the caller never looks at the files' statistics, so when no
    predicate needs them either, the files come from :attr:`Snapshot.scan_files` (no
    statistics column, never decoded)."""
    if output is None:
        output = select_columns(snapshot.schema, columns)
    predicates = tuple(predicates)
    if files is None:
        lean = not with_stats and not needs_statistics(
            predicates,
            schema=snapshot.schema,
            partition_columns=snapshot.partition_columns,
            column_mapping_mode=snapshot.column_mapping_mode,
        )
        files = snapshot.scan_files if lean else snapshot.files
    report = None
    if predicates:
        files, report = prune_files(
            files,
            predicates,
            schema=snapshot.schema,
            partition_columns=snapshot.partition_columns,
            column_mapping_mode=snapshot.column_mapping_mode,
        )
    part = {c.lower() for c in snapshot.partition_columns}
    mode = snapshot.column_mapping_mode
    read_schema = StructType(tuple(physical_field(f, mode) for f in output.fields if f.name.lower() not in part))
    return ScanPlan(snapshot, output, files, read_schema, predicates, report)
