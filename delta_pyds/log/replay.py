"""Log replay for file actions, vectorised in Arrow.

Guarantees: ``active_files`` applies the protocol's reconciliation rules — a logical
file is identified by (canonical path, deletion vector unique id), the path decoded
exactly once by :func:`delta_pyds.protocol.paths.canonical_array`; the newest action
for a key wins, where every commit action is newer than every checkpoint action and,
within a commit, later lines are newer; the file is active iff that action is an add.
A data file is live at most once: an add also supersedes every OLDER add of the same
canonical path, whatever their DVs. The protocol keys files by (path, dvId) and requires a
DV-aware writer to name the old DV in the remove that goes with a re-add (delta-spark and
our DML always do); a log whose remove lacks it (``add x+dv1``, ``remove x``, ``add x+dv2``)
would otherwise leave ``x`` live under both vectors and its rows read twice. The newest add
is what the writer meant, and a later ``remove x+dv2`` then leaves nothing live (the
superseded ``x+dv1`` never comes back). A remove still cancels only its own (path, dvId).
It does so with Arrow/numpy kernels (no Python object per file), and returns the
snapshot's file table with the columns documented in ``FILE_COLUMNS``.
"""

from __future__ import annotations

from typing import cast

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from delta_pyds.protocol.actions import DV_TYPE
from delta_pyds.protocol.paths import canonical_array

# name in the file table <- name in add actions
FILE_COLUMNS = {
    "path": "path",
    "size": "size",
    "modification_time": "modificationTime",
    "partition_values": "partitionValues",
    "stats": "stats",
    "stats_parsed": "stats_parsed",
    "deletion_vector": "deletionVector",
    "base_row_id": "baseRowId",
    "default_row_commit_version": "defaultRowCommitVersion",
}
# the file table's statistics columns (left out of a scan's file table when no predicate needs them)
STATS_COLUMNS = ("stats", "stats_parsed")
_TYPES = {
    "path": pa.string(),
    "size": pa.int64(),
    "modificationTime": pa.int64(),
    "stats": pa.string(),
    "deletionVector": DV_TYPE,
    "baseRowId": pa.int64(),
    "defaultRowCommitVersion": pa.int64(),
}


def dv_unique_ids(dv: pa.Array) -> pa.Array:
    """storageType + pathOrInlineDv (+ "@" + offset) per row; "" where there is no DV."""
    if isinstance(dv, pa.ChunkedArray):
        dv = dv.combine_chunks()
    n = len(dv)
    if n == 0 or dv.null_count == n:
        return pa.array([""] * n, pa.string())
    st = pc.fill_null(pc.struct_field(dv, "storageType"), "")
    pth = pc.fill_null(pc.struct_field(dv, "pathOrInlineDv"), "")
    off = pc.struct_field(dv, "offset")
    off_s = pc.if_else(pc.is_valid(off), pc.binary_join_element_wise("@", off.cast(pa.string()), ""), "")
    uid = pc.binary_join_element_wise(st, pth, pc.fill_null(off_s, ""), "")
    return pc.if_else(pc.is_valid(dv), uid, "")


def normalize_adds(
    adds: pa.Table | None, partition_struct: pa.StructType, root: str, *, stats: bool = True
) -> pa.Table | None:
    """Add actions (JSON or checkpoint shaped) -> the file table's columns, with
    canonical paths for the table at ``root``; without ``stats``, no statistics columns
    (``STATS_COLUMNS``)."""
    if adds is None or adds.num_rows == 0:
        return None
    n = adds.num_rows
    cols, names = [], []
    for out_name, in_name in FILE_COLUMNS.items():
        if not stats and out_name in STATS_COLUMNS:
            continue
        if in_name == "partitionValues":
            if len(partition_struct) == 0:
                continue
            col = adds.column(in_name) if in_name in adds.column_names else pa.nulls(n, partition_struct)
            col = col.cast(partition_struct) if col.type != partition_struct else col
        elif in_name == "stats_parsed":
            if in_name not in adds.column_names:
                continue
            col = adds.column(in_name)
        elif in_name in adds.column_names:
            col = adds.column(in_name)
            if col.type != _TYPES[in_name]:
                col = col.cast(_TYPES[in_name])
        else:
            col = pa.nulls(n, _TYPES[in_name])
        if in_name == "path":
            col = canonical_array(col, root)
        cols.append(col)
        names.append(out_name)
    return pa.table(cols, names=names)


def file_keys(paths: pa.Array, dvs: pa.Array | None) -> pa.Array:
    """The reconciliation key of file actions: canonical path + NUL + DV unique id.
    ``paths`` must already be canonical (decoding again would merge distinct files)."""
    if dvs is None:
        dvs = pa.nulls(len(paths), DV_TYPE)
    return pc.binary_join_element_wise(paths, dv_unique_ids(dvs), "\x00")


def key_codes(keys: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """One integer per row, equal for equal keys (dictionary codes)."""
    if len(keys) == 0:
        return np.empty(0, dtype=np.int64)
    if isinstance(keys, pa.ChunkedArray):
        keys = keys.combine_chunks()
    return cast(np.ndarray, pc.dictionary_encode(keys).indices.to_numpy(zero_copy_only=False))


def latest_per_key(keys: pa.Array, seq: np.ndarray, codes: np.ndarray | None = None) -> np.ndarray:
    """Indices (ascending) of the newest row (largest seq) of every distinct key
    (``codes``: :func:`key_codes` of ``keys``, when the caller has them)."""
    if len(keys) == 0:
        return np.empty(0, dtype=np.int64)
    if codes is None:
        codes = key_codes(keys)
    order = np.lexsort((seq, codes))  # by key, then by seq: the last of each key wins
    sorted_codes = codes[order]
    last = np.ones(len(order), dtype=bool)
    last[:-1] = sorted_codes[1:] != sorted_codes[:-1]
    return np.sort(order[last])


def _stack(parts: list[pa.Array]) -> pa.Array:
    return pa.chunked_array(parts, type=pa.string()).combine_chunks() if len(parts) > 1 else parts[0]


def active_files(
    checkpoint_adds: pa.Table | None,
    commit_adds: pa.Table | None,
    commit_adds_seq: np.ndarray | None,
    commit_removes: pa.Table | None,
    commit_removes_seq: np.ndarray | None,
    root: str,
) -> pa.Table | None:
    """Reconciles normalized adds (checkpoint, commits) with commit removes (log-shaped,
    raw paths) of the table at ``root``.

    ``*_seq`` give each commit action's position in the log (larger = newer)."""
    has_commits = (commit_adds is not None and commit_adds.num_rows) or (
        commit_removes is not None and commit_removes.num_rows
    )
    if not has_commits and (
        checkpoint_adds is None
        or checkpoint_adds.num_rows < 2
        or len(pc.unique(checkpoint_adds.column("path"))) == checkpoint_adds.num_rows
    ):
        return checkpoint_adds
    # a (bad) checkpoint listing a path twice goes through the keyed replay, so that one
    # logical file never yields its rows twice
    parts = [t for t in (checkpoint_adds, commit_adds) if t is not None and t.num_rows]
    adds = pa.concat_tables(parts, promote_options="permissive") if len(parts) > 1 else (parts[0] if parts else None)
    n_adds = adds.num_rows if adds is not None else 0
    keys: list[pa.Array] = []
    seqs: list[np.ndarray] = []
    if checkpoint_adds is not None and checkpoint_adds.num_rows:
        seqs.append(np.full(checkpoint_adds.num_rows, -1, dtype=np.int64))
    if commit_adds is not None and commit_adds.num_rows:
        seqs.append(cast(np.ndarray, commit_adds_seq))  # given with commit adds
    if adds is not None:
        keys.append(file_keys(adds.column("path"), adds.column("deletion_vector")))
    if commit_removes is not None and commit_removes.num_rows:
        keys.append(
            file_keys(canonical_array(commit_removes.column("path"), root), _column(commit_removes, "deletionVector"))
        )
        seqs.append(cast(np.ndarray, commit_removes_seq))  # given with commit removes
    if adds is None:
        return None
    all_seq = np.concatenate(seqs)
    stacked = _stack(keys)
    codes = key_codes(stacked)
    winners = latest_per_key(stacked, all_seq, codes)
    active = winners[winners < n_adds]
    if not _paths_may_repeat(adds, codes[:n_adds]):
        return adds.take(pa.array(active, pa.int64()))
    live = live_once(active, adds.column("path"), all_seq[:n_adds])
    return adds.take(pa.array(live, pa.int64()))


def _paths_may_repeat(adds: pa.Table, add_codes: np.ndarray) -> bool:
    """False when no canonical path is added twice, known without hashing the paths again:
    with no deletion vector the key codes of the adds are codes of their paths."""
    if not len(add_codes):
        return False
    if add_codes.dtype.kind not in "iu":  # a null key (an add without path): the slow path
        return True
    dv = adds.column("deletion_vector")
    if dv.null_count != len(dv):
        return True
    return bool(np.bincount(add_codes).max() > 1)


def live_once(active: np.ndarray, add_paths: pa.Array | pa.ChunkedArray, add_seq: np.ndarray) -> np.ndarray:
    """Of ``active`` (sorted indices of adds that won their (path, dvId) key), those that are
    also the newest add of their canonical path: one data file is live once, an add superseding
    every older add of its path whatever their DVs (see the module docstring).
    ``add_paths``/``add_seq`` describe every add (index i = add i)."""
    if len(active) == 0 or pc.count_distinct(add_paths).as_py() == len(add_paths):
        return active  # no path added twice: nothing is superseded
    newest = latest_per_key(add_paths, add_seq)
    return np.intersect1d(active, newest, assume_unique=True)


def tombstones(
    removes: list[tuple[pa.Table, np.ndarray]], adds: list[tuple[pa.Table, np.ndarray]], root: str
) -> pa.Table | None:
    """Remove actions not superseded by a newer add of the same logical file.

    Both lists hold (table of actions in log shape with raw paths, seq) pairs; removes
    keep their columns (path, now canonical, deletionTimestamp, deletionVector, size, ...)."""
    removes = [(t, s) for t, s in removes if t is not None and t.num_rows]
    if not removes:
        return None
    table = pa.concat_tables([t for t, _ in removes], promote_options="permissive")
    table = table.set_column(table.schema.get_field_index("path"), "path", canonical_array(table.column("path"), root))
    keys = [file_keys(table.column("path"), _column(table, "deletionVector"))]
    seqs = [np.concatenate([s for _, s in removes])]
    for t, s in adds:
        if t is not None and t.num_rows:
            dv = _column(t, "deletion_vector")
            keys.append(
                file_keys(
                    canonical_array(t.column("path"), root), dv if dv is not None else _column(t, "deletionVector")
                )
            )
            seqs.append(s)
    winners = latest_per_key(_stack(keys), np.concatenate(seqs))
    winners = winners[winners < table.num_rows]
    return table.take(pa.array(winners, pa.int64()))


def _column(table: pa.Table, name: str) -> pa.ChunkedArray | None:
    return table.column(name) if name in table.column_names else None
