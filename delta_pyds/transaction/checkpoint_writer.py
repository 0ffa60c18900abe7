"""Writing classic Parquet checkpoints and the ``_last_checkpoint`` hint.

Guarantees of :func:`write_checkpoint`:

* the checkpoint ``<version>.checkpoint.parquet`` holds, in the protocol's checkpoint
  schema, the protocol, the metadata, every app transaction, every domain not removed,
  every active file (``add`` with ``stats`` as JSON when
  ``delta.checkpoint.writeStatsAsJson`` is not false, ``stats_parsed`` and
  ``partitionValues_parsed`` when ``delta.checkpoint.writeStatsAsStruct`` is true) and
  the unexpired tombstones (``remove``; ``delta.deletedFileRetentionDuration``,
  default one week); paths are the strings the log stores;
* ``readerFeatures`` / ``writerFeatures`` are non-null exactly when the protocol is at
  reader 3 / writer 7; tables with ``v2Checkpoint`` get a V2-spec checkpoint (one
  ``checkpointMetadata`` action, file actions inline) under the classic name, which the
  protocol allows;
* it is written to a temporary name and moved into place (object stores: one PUT),
  and only after the commit of ``version`` exists; ``_last_checkpoint`` (with the
  protocol's MD5 checksum) is then replaced unless it already names a newer version;
* it raises on failure; callers committing data catch and log (a checkpoint is an
  optimisation, never part of a commit);
* its state is the snapshot of ``version`` as :func:`delta_pyds.table.latest.snapshot_at`
  gives it: right after a commit, the table's kept snapshot brought up to date by the new
  commit (the log is not replayed again for the checkpoint, as delta-spark's post-commit
  checkpoint uses the snapshot its commit produced); else a load of that version.
"""

from __future__ import annotations

import io
import json
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj
import pyarrow.parquet as pq

from delta_pyds.log.files import LAST_CHECKPOINT, LOG_DIR, classic_checkpoint_name, last_checkpoint_checksum
from delta_pyds.protocol import features
from delta_pyds.protocol.actions import DV_TYPE, Metadata, Protocol
from delta_pyds.protocol.partition_values import parse_partition_values
from delta_pyds.protocol.schema import StructField
from delta_pyds.protocol.schema_evolution import without_fields
from delta_pyds.protocol.stats import stats_columns, stats_schema
from delta_pyds.protocol.table_properties import (
    WRITE_STATS_AS_JSON,
    WRITE_STATS_AS_STRUCT,
    deleted_file_retention_ms,
    is_true,
)
from delta_pyds.storage.store import Storage
from delta_pyds.table.latest import snapshot_at
from delta_pyds.table.snapshot import Snapshot
from delta_pyds.table.state import file_actions

log = logging.getLogger(__name__)

_STR_MAP = pa.map_(pa.string(), pa.string())
TXN = pa.struct([("appId", pa.string()), ("version", pa.int64()), ("lastUpdated", pa.int64())])
PROTOCOL = pa.struct(
    [
        ("minReaderVersion", pa.int32()),
        ("minWriterVersion", pa.int32()),
        ("readerFeatures", pa.list_(pa.string())),
        ("writerFeatures", pa.list_(pa.string())),
    ]
)
METADATA = pa.struct(
    [
        ("id", pa.string()),
        ("name", pa.string()),
        ("description", pa.string()),
        ("format", pa.struct([("provider", pa.string()), ("options", _STR_MAP)])),
        ("schemaString", pa.string()),
        ("partitionColumns", pa.list_(pa.string())),
        ("configuration", _STR_MAP),
        ("createdTime", pa.int64()),
    ]
)
DOMAIN = pa.struct([("domain", pa.string()), ("configuration", pa.string()), ("removed", pa.bool_())])
CHECKPOINT_METADATA = pa.struct([("version", pa.int64()), ("tags", _STR_MAP)])
REMOVE = pa.struct(
    [
        ("path", pa.string()),
        ("deletionTimestamp", pa.int64()),
        ("dataChange", pa.bool_()),
        ("extendedFileMetadata", pa.bool_()),
        ("partitionValues", _STR_MAP),
        ("size", pa.int64()),
        ("deletionVector", DV_TYPE),
        ("baseRowId", pa.int64()),
        ("defaultRowCommitVersion", pa.int64()),
    ]
)


def _add_type(
    parsed_partitions: pa.StructType | None, parsed_stats: pa.StructType | None, with_stats: bool
) -> pa.StructType:
    fields = [
        ("path", pa.string()),
        ("partitionValues", _STR_MAP),
        ("size", pa.int64()),
        ("modificationTime", pa.int64()),
        ("dataChange", pa.bool_()),
    ]
    if with_stats:
        fields.append(("stats", pa.string()))
    fields += [
        ("tags", _STR_MAP),
        ("deletionVector", DV_TYPE),
        ("baseRowId", pa.int64()),
        ("defaultRowCommitVersion", pa.int64()),
    ]
    if parsed_partitions is not None:
        fields.append(("partitionValues_parsed", parsed_partitions))
    if parsed_stats is not None:
        fields.append(("stats_parsed", parsed_stats))
    return pa.struct(fields)


def _to_map(struct_col: pa.Array | pa.ChunkedArray, n: int) -> pa.Array:
    """A struct of strings (physical partition columns) -> map<string,string>."""
    if isinstance(struct_col, pa.ChunkedArray):
        struct_col = struct_col.combine_chunks()
    names = [f.name for f in struct_col.type] if n else []
    k = len(names)
    if k == 0:
        return pa.MapArray.from_arrays(
            pa.array([0] * (n + 1), pa.int32()), pa.array([], pa.string()), pa.array([], pa.string())
        )
    children = [pc.struct_field(struct_col, [i]).cast(pa.string()) for i in range(k)]
    import numpy as np

    values = pa.concat_arrays(children)  # column-major
    order = (np.arange(n)[:, None] + np.arange(k)[None, :] * n).reshape(-1)
    items = values.take(pa.array(order))
    keys = pa.array(names * n, pa.string())
    offsets = pa.array(np.arange(0, n * k + 1, k, dtype=np.int32))
    return pa.MapArray.from_arrays(offsets, keys, items)


def _tags(files: pa.Table, n: int) -> pa.Array:
    """The files' ``tags`` maps (other writers' INSERTION_TIME, OPTIMIZE_TARGET_SIZE, ...)."""
    if "tags" not in files.column_names:
        return pa.nulls(n, _STR_MAP)
    col = files.column("tags").combine_chunks()
    # == ignores the entries' name; other writers' files name it "tags", Parquet's convention is "key_value"
    return col if str(col.type) == str(_STR_MAP) else col.cast(_STR_MAP)


def _dv(col: pa.Array | pa.ChunkedArray) -> pa.Array:
    arr = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    return arr.cast(DV_TYPE) if arr.type != DV_TYPE else arr


def _parse_stats(stats: pa.Array, schema: pa.StructType) -> pa.Array:
    """JSON stats strings -> stats_parsed (dates parsed via strings; bad rows null)."""

    def loose(t: pa.DataType) -> pa.DataType:
        if pa.types.is_struct(t):
            return pa.struct([(f.name, loose(f.type)) for f in t])
        return pa.string() if pa.types.is_date(t) else t

    raw_schema = pa.schema(list(loose(schema)))
    lines = [s if s else "{}" for s in stats.to_pylist()]
    opts = pj.ParseOptions(explicit_schema=raw_schema, unexpected_field_behavior="ignore")
    try:
        table = pj.read_json(io.BytesIO(("\n".join(lines) + "\n").encode()), parse_options=opts)
        parsed = (
            pa.StructArray.from_arrays([c.combine_chunks() for c in table.columns], fields=list(raw_schema))
            if table.num_rows == len(lines)
            else None
        )
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        parsed = None
    if parsed is None:
        rows = []
        for line in lines:
            try:
                t = pj.read_json(io.BytesIO(line.encode() + b"\n"), parse_options=opts)
                rows.append(t.to_pylist()[0])
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError, IndexError):
                rows.append(None)
        parsed = pa.array(rows, pa.struct(list(raw_schema)))
    # rows whose stats did not parse stay null: rebuilding the struct from its children
    # must keep the parent's nulls (the children hold zeros there, which would read as
    # numRecords 0 and min = max = 0, and let readers skip the file)
    missing = pc.or_(pc.is_null(parsed), pc.is_null(stats))
    parsed = pa.StructArray.from_arrays(
        [parsed.field(i) for i in range(parsed.type.num_fields)],
        fields=list(raw_schema),
        mask=missing if pc.any(missing).as_py() else None,
    )
    try:
        return parsed.cast(schema)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        pass
    # some row holds a value its column's type cannot (e.g. a decimal bound past the
    # precision, from an older writer): only those rows lose their typed stats
    out = []
    for i in range(len(parsed)):
        try:
            out.append(parsed.slice(i, 1).cast(schema))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            out.append(pa.nulls(1, schema))
    return pa.concat_arrays(out) if out else pa.nulls(0, schema)


def checkpoint_table(snapshot: Snapshot, *, now_ms: int | None = None) -> tuple[pa.Table, int]:
    """The checkpoint of ``snapshot`` as an Arrow table, and its number of add actions."""
    now = now_ms if now_ms is not None else int(time.time() * 1000)
    actions = file_actions(snapshot)
    active, tombstones = actions.active, _unexpired(actions.tombstones, snapshot.configuration, now)
    parsed = _ParsedColumns.of(snapshot)
    add_type = _add_type(
        parsed.partitions, parsed.stats, is_true(snapshot.configuration, WRITE_STATS_AS_JSON, default=True)
    )
    v2 = features.is_enabled(snapshot.protocol, "v2Checkpoint")
    fields = [
        ("txn", TXN),
        ("add", add_type),
        ("remove", REMOVE),
        ("metaData", METADATA),
        ("protocol", PROTOCOL),
        ("domainMetadata", DOMAIN),
    ]
    if v2:  # a V2-spec checkpoint under the classic name: one checkpointMetadata action
        fields.append(("checkpointMetadata", CHECKPOINT_METADATA))
    schema = pa.schema(fields)

    def rows(**cols: pa.Array) -> pa.Table:
        k = len(next(iter(cols.values())))
        return pa.table({f.name: cols.get(f.name, pa.nulls(k, f.type)) for f in schema}, schema=schema)

    parts = []
    if v2:
        parts.append(
            rows(checkpointMetadata=pa.array([{"version": snapshot.version, "tags": None}], CHECKPOINT_METADATA))
        )
    parts += [
        rows(protocol=pa.array([_protocol_row(snapshot.protocol)], PROTOCOL)),
        rows(metaData=pa.array([_metadata_row(snapshot.metadata)], METADATA)),
    ]
    txns = snapshot.app_transactions
    if txns:
        parts.append(
            rows(txn=pa.array([{"appId": a, "version": v, "lastUpdated": None} for a, v in sorted(txns.items())], TXN))
        )
    domains = snapshot.domain_metadata
    if domains:
        dm = [{"domain": d, "configuration": c, "removed": False} for d, c in sorted(domains.items())]
        parts.append(rows(domainMetadata=pa.array(dm, DOMAIN)))
    if active.num_rows:
        parts.append(rows(add=_add_column(snapshot, active, add_type, parsed)))
    if tombstones.num_rows:
        parts.append(rows(remove=_remove_column(tombstones)))
    return pa.concat_tables(parts), active.num_rows


def _unexpired(tombstones: pa.Table, conf: Mapping[str, str], now: int) -> pa.Table:
    """The tombstones a checkpoint keeps: those younger than the deleted-file retention
    (and those without a deletion time)."""
    if not tombstones.num_rows:
        return tombstones
    ts = tombstones.column("deletionTimestamp")
    return tombstones.filter(pc.or_(pc.is_null(ts), pc.greater(ts, now - deleted_file_retention_ms(conf))))


@dataclass
class _ParsedColumns:
    """The struct types of ``partitionValues_parsed`` and ``stats_parsed`` (None when the
    table does not write stats as structs, or has no partition columns)."""

    partition_fields: list[StructField]
    partitions: pa.StructType | None
    stats: pa.StructType | None

    @classmethod
    def of(cls, snapshot: Snapshot) -> _ParsedColumns:
        conf, mode = snapshot.configuration, snapshot.column_mapping_mode
        if not is_true(conf, WRITE_STATS_AS_STRUCT):
            return cls([], None, None)
        from delta_pyds.protocol.clustering import table_clustering
        from delta_pyds.protocol.schema import to_arrow_type

        pfields = [snapshot.schema.field(c) for c in snapshot.partition_columns]
        partitions = pa.struct([(f.physical_name(mode), to_arrow_type(f.type)) for f in pfields]) if pfields else None
        data_schema = without_fields(snapshot.schema, snapshot.partition_columns)
        clustering = table_clustering(snapshot.schema, snapshot.domain_metadata, mode) or ()
        columns = stats_columns(data_schema, conf, mode, required=clustering)
        return cls(pfields, partitions, stats_schema(columns, data_schema, mode))


def _add_column(snapshot: Snapshot, active: pa.Table, add_type: pa.StructType, parsed: _ParsedColumns) -> pa.Array:
    """The ``add`` struct column of the live files (``dataChange`` false)."""
    n = active.num_rows
    children = {
        "path": active.column("raw_path").combine_chunks(),
        "partitionValues": _to_map(active.column("partitionValues"), n),
        "size": active.column("size").combine_chunks(),
        "modificationTime": pc.fill_null(active.column("modificationTime"), 0).combine_chunks(),
        "dataChange": pa.array([False] * n, pa.bool_()),
        "stats": active.column("stats").combine_chunks(),
        "tags": _tags(active, n),
        "deletionVector": _dv(active.column("deletionVector")),
        "baseRowId": active.column("baseRowId").combine_chunks(),
        "defaultRowCommitVersion": active.column("defaultRowCommitVersion").combine_chunks(),
    }
    if parsed.partitions is not None:
        pv = active.column("partitionValues").combine_chunks()
        values = []
        for f, name in zip(parsed.partition_fields, snapshot.physical_partition_columns):
            raw = pc.struct_field(pv, name) if n else pa.array([], pa.string())
            values.append(parse_partition_values(raw, f.type, column=f.name))
        children["partitionValues_parsed"] = pa.StructArray.from_arrays(values, fields=list(parsed.partitions))
    if parsed.stats is not None:
        children["stats_parsed"] = _parse_stats(children["stats"], parsed.stats)
    return pa.StructArray.from_arrays([children[f.name] for f in add_type], fields=list(add_type))


def _remove_column(tombstones: pa.Table) -> pa.Array:
    """The ``remove`` struct column of the kept tombstones."""
    m = tombstones.num_rows
    return pa.StructArray.from_arrays(
        [
            tombstones.column("raw_path").combine_chunks(),
            tombstones.column("deletionTimestamp").combine_chunks(),
            pa.array([False] * m, pa.bool_()),
            pa.array([True] * m, pa.bool_()),
            _to_map(tombstones.column("partitionValues"), m),
            tombstones.column("size").combine_chunks(),
            _dv(tombstones.column("deletionVector")),
            tombstones.column("baseRowId").combine_chunks(),
            tombstones.column("defaultRowCommitVersion").combine_chunks(),
        ],
        fields=list(REMOVE),
    )


def _protocol_row(p: Protocol) -> dict[str, Any]:
    return {
        "minReaderVersion": p.min_reader_version,
        "minWriterVersion": p.min_writer_version,
        "readerFeatures": list(p.reader_features or []) if p.min_reader_version >= 3 else None,
        "writerFeatures": list(p.writer_features or []) if p.min_writer_version >= 7 else None,
    }


def _metadata_row(md: Metadata) -> dict[str, Any]:
    return {
        "id": md.id,
        "name": md.name,
        "description": md.description,
        "format": {"provider": md.format_provider, "options": list(md.format_options.items())},
        "schemaString": md.schema_string,
        "partitionColumns": list(md.partition_columns),
        "configuration": [(k, v) for k, v in md.configuration.items()],
        "createdTime": md.created_time,
    }


def write_checkpoint(storage: Storage, version: int) -> dict:
    """Writes the classic checkpoint of ``version`` and updates ``_last_checkpoint``."""
    snapshot = snapshot_at(storage, version)  # the kept snapshot and the new commit, after a commit
    table, num_adds = checkpoint_table(snapshot)
    sink = io.BytesIO()
    pq.write_table(table, sink, compression="snappy")
    data = sink.getvalue()
    storage.write_bytes(storage.join(LOG_DIR, classic_checkpoint_name(version)), data)
    hint = {"version": version, "size": table.num_rows, "sizeInBytes": len(data), "numOfAddFiles": num_adds}
    hint["checksum"] = last_checkpoint_checksum(hint)
    path = storage.join(LOG_DIR, LAST_CHECKPOINT)
    try:
        current = json.loads(storage.read_bytes(path))
        if isinstance(current, dict) and isinstance(current.get("version"), int) and current["version"] > version:
            return hint
    except (FileNotFoundError, ValueError, OSError):
        pass
    storage.write_bytes(path, json.dumps(hint, separators=(",", ":")).encode())
    return hint
