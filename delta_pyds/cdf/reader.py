"""Executor-side reading of change data files into change rows.

Guarantees for :func:`read_change_file`: every batch has exactly ``spec.arrow_schema``
(any order of data columns and of the change columns ``_change_type``,
``_commit_version``, ``_commit_timestamp``); the rows are the ones
:class:`~delta_pyds.cdf.plan.ChangeFile` describes (deletion vectors applied, or
only the rows a deletion vector change added or restored); ``_change_type`` comes from
the file for ``cdc`` files and is the planned constant otherwise; data columns follow
column mapping like any scan (``_change_type`` in cdc files is never mapped). A data or
change file that is gone raises :class:`ChangeDataError` naming the version and
suggesting VACUUM as the cause.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from delta_pyds.cdf.plan import CDF_COLUMNS, CHANGE_TYPE, COMMIT_TIMESTAMP, COMMIT_VERSION, ChangeFile
from delta_pyds.errors import ChangeDataError, DataFileError
from delta_pyds.protocol.deletion_vectors import DeletionVectorDescriptor, load_deleted_rows
from delta_pyds.protocol.schema import COLUMN_MAPPING_PHYSICAL_NAME, PrimitiveType, StructField, StructType
from delta_pyds.read.file_reader import ReadSpec, read_file
from delta_pyds.read.scan import FileTask
from delta_pyds.read.scan_plan import read_spec, visible_schema
from delta_pyds.storage.store import Storage
from delta_pyds.table.snapshot import Snapshot

_CHANGE_TYPE_FIELD = StructField(
    CHANGE_TYPE, PrimitiveType("string"), True, {COLUMN_MAPPING_PHYSICAL_NAME: CHANGE_TYPE}
)


def cdf_fields() -> tuple[StructField, ...]:
    """The three change columns appended to the table schema."""
    return (
        StructField(CHANGE_TYPE, PrimitiveType("string"), True),
        StructField(COMMIT_VERSION, PrimitiveType("long"), True),
        StructField(COMMIT_TIMESTAMP, PrimitiveType("timestamp"), True),
    )


def with_cdf_columns(schema: StructType) -> StructType:
    return StructType(tuple(schema.fields) + cdf_fields())


def selected_rows(storage: Storage, f: ChangeFile) -> np.ndarray | None:
    """The sorted row positions to read, or None to read all rows minus the file's DV."""
    if f.selected is None:
        return None
    try:  # the file's row count bounds the vectors (see load_deleted_rows)
        with storage.open_input(storage.resolve(f.path)) as fh:
            n = pq.ParquetFile(fh).metadata.num_rows
    except FileNotFoundError:
        n = None  # read_file reports the missing file
    rows = load_deleted_rows(storage, DeletionVectorDescriptor.from_dict(f.selected), max_rows=n)
    if f.excluded is not None:
        rows = np.setdiff1d(
            rows,
            load_deleted_rows(storage, DeletionVectorDescriptor.from_dict(f.excluded), max_rows=n),
            assume_unique=True,
        )
    return rows


class _DataSpecs:
    """The per-file ReadSpecs (data columns only) derived from the output spec, cached."""

    def __init__(self, spec: ReadSpec):
        self.spec = spec
        names = {n.lower() for n in CDF_COLUMNS}
        self.data_fields = [f for f in spec.output if f.name.lower() not in names]
        self._cache: dict[bool, ReadSpec] = {}

    def get(self, is_cdc: bool) -> ReadSpec:
        got = self._cache.get(is_cdc)
        if got is None:
            fields = list(self.data_fields)
            wants_type = any(f.name == CHANGE_TYPE for f in self.spec.output)
            if is_cdc and wants_type:
                fields.append(_CHANGE_TYPE_FIELD)
            if not fields and self.spec.table_schema is not None and len(self.spec.table_schema):
                fields.append(self.spec.table_schema.fields[0])  # keeps row counts; dropped later
            from delta_pyds.protocol.schema import to_arrow_schema

            output = StructType(tuple(fields))
            got = dataclasses.replace(self.spec, output=output, arrow_schema=to_arrow_schema(output), predicates=())
            self._cache[is_cdc] = got
        return got


def read_change_file(spec: ReadSpec, f: ChangeFile, *, specs: _DataSpecs | None = None) -> Iterator[pa.RecordBatch]:
    specs = specs or _DataSpecs(spec)
    is_cdc = f.change_type is None
    data_spec = specs.get(is_cdc)
    task = FileTask(f.path, f.size, tuple(f.partition_values), f.deletion_vector)
    try:
        rows = selected_rows(spec.storage, f)
        batches = read_file(data_spec, task, rows=rows)
        for batch in batches:
            yield _assemble(batch, spec, f)
    except DataFileError as exc:
        if "is missing" not in str(exc):
            raise
        what = "change data file" if is_cdc else "data file"
        raise ChangeDataError(
            f"cannot read the change data of version {f.version}: its {what} "
            f"{spec.storage.resolve(f.path)} is gone, most likely removed by VACUUM; change data "
            "is only available for versions whose files are still retained"
        ) from None


def reader_for(spec: ReadSpec) -> Callable[[ChangeFile], Iterator[pa.RecordBatch]]:
    """A function reading ChangeFiles with shared per-spec state (one per partition)."""
    specs = _DataSpecs(spec)
    return lambda f: read_change_file(spec, f, specs=specs)


def _assemble(batch: pa.RecordBatch, spec: ReadSpec, f: ChangeFile) -> pa.RecordBatch:
    n = batch.num_rows
    by_name = {name: batch.column(i) for i, name in enumerate(batch.schema.names)}
    arrays = []
    for out_field, target in zip(spec.output, spec.arrow_schema):
        if out_field.name == CHANGE_TYPE:
            if f.change_type is None:
                arr = by_name.get(CHANGE_TYPE)
                if arr is None:
                    raise ChangeDataError(
                        f"change data file {f.path} of version {f.version} has no {CHANGE_TYPE} column"
                    )
            else:
                arr = pa.repeat(pa.scalar(f.change_type, pa.string()), n)
        elif out_field.name == COMMIT_VERSION:
            arr = pa.repeat(pa.scalar(f.version, pa.int64()), n)
        elif out_field.name == COMMIT_TIMESTAMP:
            arr = pa.repeat(pa.scalar(f.timestamp * 1000, pa.timestamp("us", tz="UTC")), n)
        else:
            arr = by_name[out_field.name]
        if arr.type != target.type:
            arr = arr.cast(target.type)
        arrays.append(arr)
    return pa.RecordBatch.from_arrays(arrays, schema=spec.arrow_schema)


def change_read_spec(
    storage: Storage,
    snapshot: Snapshot,
    output: StructType,
    arrow_schema: pa.Schema | None = None,
    *,
    batch_rows: int = 0,
) -> ReadSpec:
    """The ReadSpec of a change feed over ``snapshot``'s schema (the read schema): the read
    core's (:func:`delta_pyds.read.scan_plan.read_spec`) on ``storage``."""
    spec = read_spec(snapshot, output, arrow_schema, batch_rows=batch_rows)
    return spec if storage is snapshot.storage else dataclasses.replace(spec, storage=storage)


def read_changes(
    table: str | Storage,
    *,
    starting_version: int | None = None,
    starting_timestamp: Any = None,
    ending_version: int | None = None,
    ending_timestamp: Any = None,
    options: Mapping[str, str] | None = None,
) -> pa.Table:
    """The change data feed of a table as one Arrow table (no Spark): the table's columns
    at the ending version, then ``_change_type``, ``_commit_version``, ``_commit_timestamp``."""
    from delta_pyds.cdf.plan import plan_changes, resolve_range
    from delta_pyds.log.commits import CommitLog
    from delta_pyds.storage.store import Storage
    from delta_pyds.table.snapshot import Snapshot

    storage = table if isinstance(table, Storage) else Storage(table, options)
    log = CommitLog(storage)
    start, end = resolve_range(
        log,
        starting_version=starting_version,
        starting_timestamp=starting_timestamp,
        ending_version=ending_version,
        ending_timestamp=ending_timestamp,
    )
    plan = plan_changes(storage, start=start, end=end, log=log)
    snapshot = plan.snapshot or Snapshot.load(storage, version=log.latest_version)
    output = with_cdf_columns(visible_schema(snapshot.schema))
    spec = change_read_spec(storage, snapshot, output)
    read = reader_for(spec)
    batches = [b for f in plan.files for b in read(f)]
    return pa.Table.from_batches(batches, schema=spec.arrow_schema)
