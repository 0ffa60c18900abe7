"""File actions as table operations re-commit them: the add actions that re-add files of
a :func:`delta_pyds.table.state.file_actions` table and the remove actions that remove
them (with their stored path strings, stats, deletion vectors, row tracking fields and
tags), keys that identify a file with its deletion vector, and row counts from statistics.

Pure functions over Arrow tables of file actions: no I/O."""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping
from typing import Any, cast, overload

import pyarrow as pa

from delta_pyds.log.replay import dv_unique_ids
from delta_pyds.protocol.action_types import AddFile, RemoveFile


def keys(files: pa.Table) -> list[tuple]:
    ids = dv_unique_ids(files.column("deletionVector")).to_pylist() if files.num_rows else []
    return [(p, d or "") for p, d in zip(files.column("path").to_pylist(), ids)]


def sum_size(files: pa.Table) -> int:
    return int(sum(s or 0 for s in files.column("size").to_pylist()))


def rows_for_paths(active: pa.Table, paths: Iterable[str]) -> pa.Table:
    wanted = set(paths)  # canonical paths, as the file table holds them
    mask = [p in wanted for p in active.column("path").to_pylist()]
    return active.filter(pa.array(mask, pa.bool_()))


@overload
def stat_rows(add: Mapping[str, Any], default: int = 0) -> int: ...
@overload
def stat_rows(add: Mapping[str, Any], default: None) -> int | None: ...
def stat_rows(add: Mapping[str, Any], default: int | None = 0) -> int | None:
    """The ``numRecords`` of an add's stats, ``default`` when they do not say."""
    try:
        return int(json.loads(add["stats"])["numRecords"])
    except (KeyError, TypeError, ValueError):
        return default


def num_live_rows(active: pa.Table) -> int | None:
    total = 0
    for s, d in zip(active.column("stats").to_pylist(), active.column("deletionVector").to_pylist()):
        try:
            total += int(json.loads(s)["numRecords"])
        except (TypeError, KeyError, ValueError):
            return None
        if d:
            total -= int(d.get("cardinality") or 0)
    return total


def add_actions(files: pa.Table, *, data_change: bool) -> list[AddFile]:
    """Add actions re-adding rows of a :func:`table_state.file_actions` table."""
    cols = files.to_pydict()
    return [
        cast(
            AddFile,
            {
                "path": cols["raw_path"][i],
                "partitionValues": cols["partitionValues"][i] or {},
                "size": cols["size"][i],
                "modificationTime": cols["modificationTime"][i] or 0,
                "dataChange": data_change,
                **_kept_fields(cols, i),
            },
        )
        for i in range(files.num_rows)
    ]


def remove_actions(files: pa.Table, *, data_change: bool = True, timestamp: int | None = None) -> list[RemoveFile]:
    """Remove actions for rows of a :func:`table_state.file_actions` table (raw paths)."""
    if files is None or files.num_rows == 0:
        return []
    ts = timestamp if timestamp is not None else int(time.time() * 1000)
    cols = files.to_pydict()
    return [
        cast(
            RemoveFile,
            {
                "path": cols["raw_path"][i],
                "deletionTimestamp": ts,
                "dataChange": data_change,
                "extendedFileMetadata": True,
                "partitionValues": cols["partitionValues"][i] or {},
                "size": cols["size"][i],
                **_kept_fields(cols, i),
            },
        )
        for i in range(files.num_rows)
    ]


def rewrite_metrics(removed: pa.Table, adds: list[AddFile], change_files: int) -> dict[str, int]:
    """delta-spark's file metrics of a copy-on-write DELETE / UPDATE commit: the files
    ``removed`` (file action rows) rewritten as ``adds``, with ``change_files`` change data
    files (the row counts are the operation's own)."""
    return {
        "numRemovedFiles": removed.num_rows,
        "numAddedFiles": len(adds),
        "numDeletionVectorsAdded": 0,
        "numDeletionVectorsRemoved": sum(1 for d in removed.column("deletionVector").to_pylist() if d),
        "numDeletionVectorsUpdated": 0,
        "numAddedChangeFiles": change_files,
        "numRemovedBytes": sum_size(removed),
        "numAddedBytes": sum(int(a["size"]) for a in adds),
    }


def _kept_fields(cols: dict[str, list[Any]], i: int) -> dict[str, Any]:
    """The optional fields an add or remove action of row ``i`` carries over: statistics,
    the deletion vector, row tracking fields and tags (absent when null or empty)."""
    out: dict[str, Any] = {}
    if cols["stats"][i]:
        out["stats"] = cols["stats"][i]
    dv = cols["deletionVector"][i]
    if dv:
        out["deletionVector"] = {k: v for k, v in dv.items() if v is not None}
    for key in ("baseRowId", "defaultRowCommitVersion"):
        if cols[key][i] is not None:
            out[key] = cols[key][i]
    tags = cols["tags"][i] if "tags" in cols else None
    if tags:
        out["tags"] = dict(tags)
    return out
