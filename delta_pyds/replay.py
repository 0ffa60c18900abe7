"""Log replay for file actions, vectorised in Arrow.

Guarantees: ``active_files`` applies the protocol's reconciliation rules — a logical
file is identified by (URI-decoded path, deletion vector unique id); the newest action
for a key wins, where every commit action is newer than every checkpoint action and,
within a commit, later lines are newer; the file is active iff that action is an add.
It does so with Arrow/numpy kernels (no Python object per file), and returns the
snapshot's file table with the columns documented in ``FILE_COLUMNS``.
"""

from __future__ import annotations

from urllib.parse import unquote

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .actions import DV_TYPE

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
_TYPES = {"path": pa.string(), "size": pa.int64(), "modificationTime": pa.int64(), "stats": pa.string(),
          "deletionVector": DV_TYPE, "baseRowId": pa.int64(), "defaultRowCommitVersion": pa.int64()}


def decode_paths(paths: pa.Array) -> pa.Array:
    """URI-decodes paths (only the ones that contain an escape are touched)."""
    if isinstance(paths, pa.ChunkedArray):
        paths = paths.combine_chunks()
    escaped = pc.match_substring(paths, "%")
    if not pc.any(escaped).as_py():
        return paths
    idx = np.flatnonzero(escaped.to_numpy(zero_copy_only=False))
    values = paths.to_pylist()
    for i in idx:
        values[i] = unquote(values[i])
    return pa.array(values, pa.string())


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


def normalize_adds(adds: pa.Table | None, partition_struct: pa.StructType) -> pa.Table | None:
    """Add actions (JSON or checkpoint shaped) -> the file table's columns."""
    if adds is None or adds.num_rows == 0:
        return None
    n = adds.num_rows
    cols, names = [], []
    for out_name, in_name in FILE_COLUMNS.items():
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
            col = decode_paths(col)
        cols.append(col)
        names.append(out_name)
    return pa.table(cols, names=names)


def active_files(checkpoint_adds: pa.Table | None, commit_adds: pa.Table | None,
                 commit_adds_seq: np.ndarray | None, commit_removes: pa.Table | None,
                 commit_removes_seq: np.ndarray | None) -> pa.Table | None:
    """Reconciles normalized adds (checkpoint, commits) with commit removes.

    ``*_seq`` give each commit action's position in the log (larger = newer).
    """
    has_commits = (commit_adds is not None and commit_adds.num_rows) or \
                  (commit_removes is not None and commit_removes.num_rows)
    if not has_commits:
        return checkpoint_adds
    parts, seqs, is_add = [], [], []
    if checkpoint_adds is not None and checkpoint_adds.num_rows:
        parts.append(checkpoint_adds)
        seqs.append(np.full(checkpoint_adds.num_rows, -1, dtype=np.int64))
        is_add.append(np.ones(checkpoint_adds.num_rows, dtype=bool))
    if commit_adds is not None and commit_adds.num_rows:
        parts.append(commit_adds)
        seqs.append(commit_adds_seq)
        is_add.append(np.ones(commit_adds.num_rows, dtype=bool))
    adds = pa.concat_tables(parts, promote_options="permissive") if parts else None
    n_adds = adds.num_rows if adds is not None else 0

    key_parts = []
    if adds is not None:
        key_parts.append(pc.binary_join_element_wise(
            adds.column("path").combine_chunks(), dv_unique_ids(adds.column("deletion_vector")), "\x00"))
    if commit_removes is not None and commit_removes.num_rows:
        rpath = decode_paths(commit_removes.column("path"))
        rdv = commit_removes.column("deletionVector") if "deletionVector" in commit_removes.column_names \
            else pa.nulls(commit_removes.num_rows, DV_TYPE)
        key_parts.append(pc.binary_join_element_wise(rpath, dv_unique_ids(rdv), "\x00"))
        seqs.append(commit_removes_seq)
        is_add.append(np.zeros(commit_removes.num_rows, dtype=bool))
    keys = pa.chunked_array(key_parts, type=pa.string()).combine_chunks() if len(key_parts) > 1 \
        else key_parts[0]
    seq = np.concatenate(seqs)
    adds_flag = np.concatenate(is_add)
    codes = pc.dictionary_encode(keys).indices.to_numpy(zero_copy_only=False)
    order = np.lexsort((seq, codes))  # by key, then by seq: the last of each key wins
    sorted_codes = codes[order]
    last = np.ones(len(order), dtype=bool)
    last[:-1] = sorted_codes[1:] != sorted_codes[:-1]
    winners = order[last]
    winners = winners[adds_flag[winners]]
    winners.sort()  # keep log order (checkpoint first, then commits)
    winners = winners[winners < n_adds]
    if adds is None:
        return None
    return adds.take(pa.array(winners, pa.int64()))
