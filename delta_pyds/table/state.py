"""File actions as a writer needs them: the active files *with the path strings exactly
as the log stores them*, and the tombstones (recently removed files).

Readers reconcile on canonical paths (:mod:`delta_pyds.protocol.paths`: decoded once,
root-relative), and :class:`Snapshot` hands them out. A writer must instead repeat the
stored string in ``remove`` actions and
checkpoints: some readers reconcile on the raw string, so a remove whose path is
encoded differently from its add would leave the file active for them.

Guarantees of :func:`file_actions`: reconciliation follows the protocol (key =
canonical path + deletion vector id, newest action wins, commits newer than the
checkpoint, later lines newer); ``active`` holds one row per active file and
``tombstones`` one row per logical file whose newest action is a remove; both carry
``raw_path`` (as stored) and ``path`` (canonical), and ``tags`` (kept so checkpoints and
removes repeat them). Every checkpoint kind is read
(classic, multi-part, v2 with JSON or Parquet top-level file and sidecars).
"""

from __future__ import annotations

import json
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from delta_pyds.errors import CorruptLogError
from delta_pyds.log.checkpoint_reader import CheckpointReader
from delta_pyds.log.files import LogFile
from delta_pyds.log.replay import file_keys, latest_per_key, live_once
from delta_pyds.protocol.actions import DV_TYPE, json_actions_schema, partition_struct_type, read_json_actions
from delta_pyds.protocol.paths import canonical_array
from delta_pyds.storage.store import Storage
from delta_pyds.table.snapshot import Snapshot

COLUMNS = {
    "path": pa.string(),
    "size": pa.int64(),
    "modificationTime": pa.int64(),
    "dataChange": pa.bool_(),
    "stats": pa.string(),
    "deletionVector": DV_TYPE,
    "baseRowId": pa.int64(),
    "defaultRowCommitVersion": pa.int64(),
    "deletionTimestamp": pa.int64(),
    "tags": pa.map_(pa.string(), pa.string()),
}


@dataclass(frozen=True)
class FileActions:
    active: pa.Table  # raw_path, path, partitionValues (struct), size, ... per active file
    tombstones: pa.Table  # same columns, for files whose newest action is a remove


# the file actions of each live snapshot (a snapshot's log never changes)
_KNOWN: weakref.WeakKeyDictionary[Snapshot, FileActions] = weakref.WeakKeyDictionary()


def _normalize(actions: pa.Table | None, pstruct: pa.StructType, root: str) -> pa.Table | None:
    if actions is None or actions.num_rows == 0:
        return None
    n = actions.num_rows
    cols, names = [], []
    for name, dtype in COLUMNS.items():
        if name in actions.column_names:
            col = actions.column(name)
            if col.type != dtype:
                col = col.cast(dtype)
        else:
            col = pa.nulls(n, dtype)
        cols.append(col)
        names.append(name)
    if "partitionValues" in actions.column_names and len(pstruct):
        pv = actions.column("partitionValues")
        pv = pv.cast(pstruct) if pv.type != pstruct else pv
    else:
        pv = pa.nulls(n, pstruct) if len(pstruct) else pa.array([{}] * n, pa.struct([]))
    cols.append(pv)
    names.append("partitionValues")
    table = pa.table(cols, names=names)
    raw = table.column("path").combine_chunks()
    table = table.set_column(0, "raw_path", raw)
    return table.append_column("path", canonical_array(raw, root))


def _with_tags(adds: pa.Table, data: bytes) -> pa.Table:
    """``adds`` (one row per add line of ``data``, in order) with their ``tags`` maps, which
    Arrow's JSON reader cannot parse (arbitrary keys): read from the lines themselves."""
    tags = []
    for line in data.splitlines():
        if b'"add"' not in line:
            continue
        try:
            add = json.loads(line).get("add")
        except (ValueError, AttributeError):
            continue
        if isinstance(add, dict):
            t = add.get("tags")
            tags.append(list(t.items()) if isinstance(t, dict) else None)
    if len(tags) != adds.num_rows:  # pragma: no cover - lines the JSON reader saw differently
        return adds
    try:
        column = pa.array(tags, pa.map_(pa.string(), pa.string()))
    except (pa.ArrowInvalid, pa.ArrowTypeError):  # non-string values: not the protocol's tags
        return adds
    return adds.append_column("tags", column)


def _struct_rows(col: pa.ChunkedArray) -> pa.Table | None:
    col = col.filter(pc.is_valid(col))
    if len(col) == 0:
        return None
    return pa.Table.from_struct_array(col.combine_chunks())


def _map_to_struct(col: Any, pcols: Sequence[str]) -> pa.Array:
    arr = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    if not pcols:
        return pa.array([{}] * len(arr), pa.struct([]))
    children = [pc.map_lookup(arr, pa.scalar(c, pa.string()), "first").cast(pa.string()) for c in pcols]
    return pa.StructArray.from_arrays(children, names=list(pcols))


def _parquet_actions(
    storage: Storage, path: str, pcols: Sequence[str], pstruct: pa.DataType, adds: list, removes: list
) -> None:
    try:
        pf = pq.ParquetFile(storage.open_input(path))
        names = [n for n in ("add", "remove") if n in pf.schema_arrow.names]
        table = pf.read(columns=names) if names else None
    except (FileNotFoundError, pa.ArrowInvalid, OSError) as exc:
        raise CorruptLogError(f"checkpoint file {path} cannot be read: {exc}") from None
    if table is None:
        return
    for name, out in (("add", adds), ("remove", removes)):
        if name not in table.column_names:
            continue
        rows = _struct_rows(table.column(name))
        if rows is None:
            continue
        if "partitionValues" in rows.column_names:
            rows = rows.set_column(
                rows.column_names.index("partitionValues"),
                "partitionValues",
                _map_to_struct(rows.column("partitionValues"), pcols),
            )
        if "deletionVector" in rows.column_names:
            rows = rows.set_column(
                rows.column_names.index("deletionVector"), "deletionVector", _dv(rows.column("deletionVector"))
            )
        rows = rows.drop_columns([c for c in ("stats_parsed", "partitionValues_parsed") if c in rows.column_names])
        out.append(_normalize(rows, pstruct, storage.root))


def _checkpoint_actions(snapshot: Snapshot, pcols: Sequence[str], pstruct: pa.DataType) -> tuple[list, list]:
    """Adds and removes of the snapshot's checkpoint: classic, multi-part, or v2 (its
    top-level file, JSON or Parquet, and its sidecars)."""
    adds: list[pa.Table | None] = []
    removes: list[pa.Table | None] = []
    parts = snapshot.segment.checkpoint
    if not parts:
        return adds, removes
    storage = snapshot.storage
    reader = CheckpointReader(storage, parts)
    if reader.is_json:
        data = storage.read_bytes(parts[0].path, size=parts[0].size)
        table = read_json_actions(data, json_actions_schema(pcols, data), source=parts[0].path)
        rows = _struct_rows(table.column("add"))
        if rows is not None and b'"tags"' in data:
            rows = _with_tags(rows, data)
        adds.append(_normalize(rows, pstruct, storage.root))
        removes.append(_normalize(_struct_rows(table.column("remove")), pstruct, storage.root))
    else:
        for part in parts:
            _parquet_actions(storage, part.path, pcols, pstruct, adds, removes)
    for path in reader.sidecar_paths():
        _parquet_actions(storage, path, pcols, pstruct, adds, removes)
    return adds, removes


def _dv(col: Any) -> pa.Array:
    arr = col.combine_chunks()
    present = {f.name for f in arr.type}
    children = [
        pc.struct_field(arr, f.name).cast(f.type) if f.name in present else pa.nulls(len(arr), f.type) for f in DV_TYPE
    ]
    return pa.StructArray.from_arrays(children, fields=list(DV_TYPE), mask=pc.invert(pc.is_valid(arr)))


def file_actions(snapshot: Snapshot) -> FileActions:
    """The active files and tombstones of ``snapshot`` with raw paths; computed once per
    snapshot, and for a snapshot that extends another (:meth:`Snapshot.extend`) from the
    base's file actions and only the commits after it."""
    known = _KNOWN.get(snapshot)
    if known is None:
        known = _file_actions(snapshot)
        _KNOWN[snapshot] = known
    return known


def _file_actions(snapshot: Snapshot) -> FileActions:
    pcols = snapshot.physical_partition_columns
    pstruct = partition_struct_type(pcols)
    root = snapshot.storage.root
    base = snapshot.base
    if base is not None and base.physical_partition_columns == pcols:
        prior = file_actions(base)  # reconciled: plays the checkpoint's part
        ck_adds, ck_removes = [prior.active], [prior.tombstones]
        commits = snapshot.replayed_commits
    else:
        ck_adds, ck_removes = _checkpoint_actions(snapshot, pcols, pstruct)
        commits = snapshot.segment.commits
    commit_adds, commit_removes = _commit_file_actions(snapshot.storage, commits, pcols, pstruct)
    return _reconciled(ck_adds, ck_removes, commit_adds, commit_removes, pstruct, root)


def _commit_file_actions(
    storage: Storage, commits: Sequence[LogFile], pcols: Sequence[str], pstruct: pa.DataType
) -> tuple[list, list]:
    """The normalized adds and removes of each commit, in order."""
    data = storage.read_many([c.path for c in commits], sizes=[c.size for c in commits]) if commits else []
    commit_adds, commit_removes = [], []
    for d, c in zip(data, commits):
        table = read_json_actions(d, json_actions_schema(pcols, d), source=c.path)
        adds = _struct_rows(table.column("add"))
        if adds is not None and b'"tags"' in d:
            adds = _with_tags(adds, d)
        commit_adds.append(_normalize(adds, pstruct, storage.root))
        commit_removes.append(_normalize(_struct_rows(table.column("remove")), pstruct, storage.root))
    return commit_adds, commit_removes


def _reconciled(
    ck_adds: list, ck_removes: list, commit_adds: list, commit_removes: list, pstruct: pa.DataType, root: str
) -> FileActions:
    """Newest action per key wins: the checkpoint's (or base's) actions oldest, then each
    commit's in line order."""
    # order: checkpoint (oldest) then each commit's actions in line order
    parts, is_add, seq = [], [], []
    position = 0

    def push(table: pa.Table | None, flag: bool) -> None:
        nonlocal position
        if table is None:
            return
        parts.append(table)
        is_add.append(np.full(table.num_rows, flag))
        seq.append(np.arange(position, position + table.num_rows))
        position += table.num_rows

    for t in ck_adds:
        push(t, True)
    for t in ck_removes:
        push(t, False)
    for a_table, r_table in zip(commit_adds, commit_removes):
        # within one commit add and remove of the same key cannot both appear (protocol)
        push(a_table, True)
        push(r_table, False)
    one_row = cast(pa.Table, _normalize(pa.table({"path": pa.array(["x"])}), pstruct, root))  # not empty
    empty = one_row.slice(0, 0)
    if not parts:
        return FileActions(empty, empty)
    table = pa.concat_tables(parts, promote_options="permissive")
    flags = np.concatenate(is_add)
    order_seq = np.concatenate(seq)
    keys = file_keys(table.column("path").combine_chunks(), table.column("deletionVector"))
    winners = latest_per_key(keys, order_seq)
    add_rows = np.flatnonzero(flags)
    # the same rule as the snapshot's replay: one data file is live once
    active = add_rows[
        live_once(
            np.searchsorted(add_rows, winners[flags[winners]]),
            table.column("path").take(pa.array(add_rows, pa.int64())),
            order_seq[add_rows],
        )
    ]
    removed = winners[~flags[winners]]
    return FileActions(table.take(pa.array(active, pa.int64())), table.take(pa.array(removed, pa.int64())))
