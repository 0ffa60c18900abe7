"""Reading checkpoints: classic single-file and multi-part Parquet checkpoints, and v2
checkpoints (a JSON or Parquet top-level file whose ``sidecar`` actions name Parquet
files in ``_delta_log/_sidecars``).

Guarantees: only the needed columns are decoded (``add`` sub-fields, ``protocol`` /
``metaData`` for the table state); file actions come back in the same shape as those
of JSON commits (``partitionValues`` as a struct keyed by physical partition column);
any unreadable file raises :class:`CorruptCheckpointError` naming it.
"""

from __future__ import annotations

import posixpath
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from delta_pyds.errors import CorruptCheckpointError, StoreFaultError
from delta_pyds.log.files import LOG_DIR, SIDECAR_DIR, LogFile
from delta_pyds.protocol.actions import (
    json_actions_schema,
    parse_special_lines,
    read_json_actions,
)
from delta_pyds.protocol.paths import decode, relative_to
from delta_pyds.storage.store import Storage

# rows decoded at a time from a Parquet checkpoint
CHECKPOINT_BATCH_ROWS = 65536
_ADD_FIELDS = (
    "path",
    "partitionValues",
    "size",
    "modificationTime",
    "dataChange",
    "stats",
    "deletionVector",
    "baseRowId",
    "defaultRowCommitVersion",
    "stats_parsed",
)
_STATS_FIELDS = ("stats", "stats_parsed")
_DV_FIELDS = ("storageType", "pathOrInlineDv", "offset", "sizeInBytes", "cardinality")


class CheckpointReader:
    """The actions of one complete checkpoint."""

    def __init__(self, storage: Storage, parts: list[LogFile]):
        self.storage = storage
        self.parts = parts
        self._top_json: bytes | None = None

    @property
    def is_json(self) -> bool:
        return len(self.parts) == 1 and self.parts[0].file_format == "json"

    def _json_bytes(self) -> bytes:
        if self._top_json is None:
            self._top_json = self._read(self.parts[0].path, size=self.parts[0].size)
        return self._top_json

    def _read(self, path: str, size: int | None = None) -> bytes:
        try:
            return self.storage.read_bytes(path, size=size)
        except FileNotFoundError:
            raise CorruptCheckpointError(f"checkpoint file {path} is missing") from None

    def _parquet(self, path: str) -> pq.ParquetFile:
        try:
            return pq.ParquetFile(self.storage.open_input(path))
        except FileNotFoundError:
            raise CorruptCheckpointError(f"checkpoint file {path} is missing") from None
        except StoreFaultError:  # the store kept failing: not a corrupt checkpoint
            raise
        except (pa.ArrowInvalid, OSError) as exc:
            raise CorruptCheckpointError(f"checkpoint file {path} is not a readable Parquet file: {exc}") from None

    def _read_columns(self, path: str, wanted: list[str]) -> pa.Table:
        pf = self._parquet(path)
        names = set(pf.schema_arrow.names)
        columns = [c for c in wanted if c in names]
        if not columns:
            return pa.table({})
        try:
            return pf.read(columns=columns)
        except StoreFaultError:
            raise
        except (pa.ArrowInvalid, OSError) as exc:
            raise CorruptCheckpointError(f"checkpoint file {path} cannot be read: {exc}") from None

    # ------------------------------------------------------------------ table state
    def state_actions(self) -> list[dict[str, Any]]:
        """protocol, metaData, txn and domainMetadata actions as dicts."""
        if self.is_json:
            return parse_special_lines(
                self._json_bytes(),
                [b'"protocol"', b'"metaData"', b'"txn"', b'"domainMetadata"'],
                source=self.parts[0].path,
            )
        out: list[dict[str, Any]] = []
        for part in self.parts:
            table = self._read_columns(part.path, ["protocol", "metaData", "txn", "domainMetadata"])
            for name in table.column_names:
                col = table.column(name)
                valid = col.filter(pc.is_valid(col))
                for value in valid.to_pylist():
                    out.append({name: value})
        return out

    # ----------------------------------------------------------------- file actions
    def sidecar_paths(self) -> list[str]:
        log_dir = self.storage.join(LOG_DIR)
        if self.is_json:
            table = read_json_actions(self._json_bytes(), json_actions_schema(()), source=self.parts[0].path)
            sidecars = table.column("sidecar")
        else:
            chunks = []
            for part in self.parts:
                pf = self._parquet(part.path)
                if "sidecar" in pf.schema_arrow.names:
                    chunks.append(self._read_columns(part.path, ["sidecar"]).column("sidecar"))
            if not chunks:
                return []
            sidecars = pa.chunked_array([c for ch in chunks for c in ch.chunks], type=chunks[0].type)
        sidecars = sidecars.filter(pc.is_valid(sidecars))
        paths = pc.struct_field(sidecars, "path").to_pylist() if len(sidecars) else []
        return [self._sidecar_path(p, posixpath.join(log_dir, SIDECAR_DIR)) for p in paths]

    def _sidecar_path(self, raw: str | None, sidecar_dir: str) -> str:
        """A sidecar action's path (URI-encoded, usually a bare file name) to a filesystem
        path; the protocol keeps sidecars in ``_delta_log/_sidecars``, so any other place
        (``..`` segments, absolute paths elsewhere) is refused."""
        decoded = decode(raw or "")
        rel = relative_to(decoded, sidecar_dir)
        if not rel or rel in (".", "..") or ".." in rel.replace("\\", "/").split("/"):
            raise CorruptCheckpointError(
                f"checkpoint {self.parts[0].path} names the sidecar {raw!r}, which is not a file in {sidecar_dir}"
            )
        return posixpath.join(sidecar_dir, rel)

    def file_actions(self, physical_partition_columns: list[str], *, stats: bool = True) -> tuple[pa.Table, pa.Table]:
        """(adds, removes) of the checkpoint, shaped like JSON commit actions; without
        ``stats`` the adds' ``stats`` and ``stats_parsed`` are not decoded."""
        adds, removes = [], []
        parquet_files = [] if self.is_json else [p.path for p in self.parts]
        parquet_files += self.sidecar_paths()
        if self.is_json:
            table = read_json_actions(
                self._json_bytes(), json_actions_schema(physical_partition_columns), source=self.parts[0].path
            )
            add_table = _flatten_json(table, "add")
            if add_table is not None and not stats:
                add_table = add_table.drop_columns([c for c in _STATS_FIELDS if c in add_table.column_names])
            adds.append(add_table)
            removes.append(_flatten_json(table, "remove"))
        for path in parquet_files:
            a, r = self._parquet_file_actions(path, physical_partition_columns, stats)
            adds.append(a)
            removes.append(r)
        return _concat(adds), _concat(removes)

    def _parquet_file_actions(
        self, path: str, pcols: list[str], stats: bool = True
    ) -> tuple[pa.Table | None, pa.Table | None]:
        pf = self._parquet(path)
        schema = pf.schema_arrow
        result: list[pa.Table | None] = []
        for action, fields in (
            ("add", _ADD_FIELDS if stats else tuple(f for f in _ADD_FIELDS if f not in _STATS_FIELDS)),
            ("remove", ("path", "deletionVector", "deletionTimestamp", "size", "dataChange")),
        ):
            if action not in schema.names:
                result.append(None)
                continue
            present = {f.name for f in schema.field(action).type}
            wanted = [f"{action}.{f}" for f in fields if f in present]
            parts: list[pa.Table] = []
            try:
                # batch by batch: the decoded file never sits in memory beside its filtered
                # and normalized copies (1M adds: peak 1.6 GB read whole, see docs/architecture.md)
                for batch in pf.iter_batches(batch_size=CHECKPOINT_BATCH_ROWS, columns=wanted):
                    # the struct keeps only the selected children
                    col = batch.column(action)
                    col = col.filter(pc.and_(pc.is_valid(col), pc.is_valid(pc.struct_field(col, "path"))))
                    if len(col) or not parts:
                        parts.append(_normalize_parquet_actions(pa.Table.from_struct_array(col), pcols))
                if not parts:  # a checkpoint without rows
                    col = pf.read(columns=wanted).column(action).combine_chunks()
                    parts.append(_normalize_parquet_actions(pa.Table.from_struct_array(col), pcols))
            except (pa.ArrowInvalid, OSError) as exc:
                raise CorruptCheckpointError(f"checkpoint file {path} cannot be read: {exc}") from None
            result.append(pa.concat_tables(parts, promote_options="permissive") if len(parts) > 1 else parts[0])
        return result[0], result[1]


def _flatten_json(table: pa.Table, action: str) -> pa.Table | None:
    col = table.column(action)
    col = col.filter(pc.is_valid(col))
    if len(col) == 0:
        return None
    return (
        pa.Table.from_struct_array(col.combine_chunks())
        if hasattr(pa.Table, "from_struct_array")
        else pa.Table.from_batches([pa.RecordBatch.from_struct_array(col.combine_chunks())])
    )


def _normalize_parquet_actions(table: pa.Table, pcols: list[str]) -> pa.Table:
    columns, names = [], []
    for name in table.column_names:
        col = table.column(name)
        if name == "partitionValues":
            col = _map_to_struct(col, pcols)
        elif name == "deletionVector":
            col = _dv_struct(col)
        columns.append(col)
        names.append(name)
    return pa.table(columns, names=names)


def _map_to_struct(col: pa.ChunkedArray, pcols: list[str]) -> pa.Array:
    arr = col.combine_chunks()
    if not pcols:
        return pa.array([{}] * len(arr), pa.struct([]))
    children = [pc.map_lookup(arr, pa.scalar(c, pa.string()), "first").cast(pa.string()) for c in pcols]
    return pa.StructArray.from_arrays(children, names=list(pcols))


def _dv_struct(col: pa.ChunkedArray) -> pa.Array:
    arr = col.combine_chunks()
    present = {f.name for f in arr.type}
    children = [
        pc.struct_field(arr, f).cast(t) if f in present else pa.nulls(len(arr), t)
        for f, t in zip(_DV_FIELDS, (pa.string(), pa.string(), pa.int32(), pa.int32(), pa.int64()))
    ]
    return pa.StructArray.from_arrays(children, names=list(_DV_FIELDS), mask=pc.invert(pc.is_valid(arr)))


def _concat(tables: list[pa.Table | None]) -> pa.Table | None:
    tables = [t for t in tables if t is not None and t.num_rows]
    if not tables:
        return None
    return pa.concat_tables(tables, promote_options="permissive")
