"""Data files written by another engine (Spark's own Parquet writer) turned into add actions.

The Spark-native writer (:mod:`delta_pyds.spark.native.write`) lets Spark write a write's
Parquet files into a fresh *staging directory* inside the table root — a name starting
with ``_`` (:data:`STAGING_PREFIX`), which no reader lists and VACUUM never enters —
laid out as Delta partition directories (``<physical name>=<escaped value>/``). This
module does the Spark-free rest on the driver:

* :func:`physical_schema`: the table's data columns as the files must hold them (physical
  names under column mapping, ``parquet.field.id`` metadata that Spark writes as Parquet
  field ids, every field nullable), as a Delta schema whose JSON Spark parses;
* :func:`collect_staged`: lists the staged ``.parquet`` files, reads every footer (in
  threads), moves each file with rows to the same relative path under the table root (a
  rename on local disk; a copy and delete on object stores) and returns its add action:
  ``partitionValues`` decoded from the directory names (Spark's escaping, which is
  :func:`~delta_pyds.write.parquet_writer.partition_dir`'s, is undone exactly; the
  default partition name is null), ``size``, ``modificationTime``, ``dataChange`` and
  ``stats`` from the footer (:func:`~delta_pyds.protocol.stats.stats_from_footer`), plus the
  footer bounds of the identity columns the write generated (their high-water marks);
* :func:`discard`: deletes moved files and the staging directory (a failed write leaves
  nothing behind that it can name).

Guarantees: a moved file keeps its bytes and name (Spark names hold a job UUID, so they
never collide with other files); files without rows are deleted, never added; nothing
here touches the log.
"""

from __future__ import annotations

import logging
import os
import posixpath
import time
import uuid
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import pyarrow.parquet as pq

from delta_pyds.protocol.action_types import AddFile
from delta_pyds.protocol.identity import IdentityColumn
from delta_pyds.protocol.partition_values import HIVE_DEFAULT_PARTITION, escape_path_name, unescape_path_name
from delta_pyds.protocol.schema import StructField, StructType, is_void_type, physical_field
from delta_pyds.protocol.stats import StatsColumn, footer_bounds, stats_from_footer
from delta_pyds.storage.store import Storage
from delta_pyds.write.parquet_writer import encode_path

log = logging.getLogger(__name__)

STAGING_PREFIX = "_pydelta_staging-"
FOOTER_THREADS = 8


def staging_name() -> str:
    """A fresh staging directory name (relative to the table root)."""
    return f"{STAGING_PREFIX}{uuid.uuid4()}"


def partition_values_of(rel_dir: str, physical_names: Sequence[str]) -> dict[str, str | None]:
    """``a=1/b=x%2Fy`` -> ``{"a": "1", "b": "x/y"}`` (the default partition name: null).
    Raises ValueError when the directories do not name exactly ``physical_names``."""
    parts = [p for p in rel_dir.split("/") if p] if rel_dir else []
    if len(parts) != len(physical_names):
        raise ValueError(f"staged file directory {rel_dir!r} does not match the partition columns {physical_names}")
    out: dict[str, str | None] = {}
    for part, name in zip(parts, physical_names):
        key, sep, value = part.partition("=")
        if not sep or unescape_path_name(key) != name:
            raise ValueError(f"staged file directory {rel_dir!r} does not match the partition columns {physical_names}")
        out[name] = None if value == HIVE_DEFAULT_PARTITION else unescape_path_name(value)
    return out


# ------------------------------------------------------------------- schemas
def physical_schema(fields: Iterable[StructField], mode: str) -> StructType:
    """The data columns of the files (void columns are never written): physical names,
    nullable at every level, the field ids under column mapping (``name`` mode too), no
    other metadata."""
    return StructType(
        tuple(
            physical_field(f, mode, force_nullable=True, ids_in_name_mode=True)
            for f in fields
            if not is_void_type(f.type)
        )
    )


# ------------------------------------------------------------------- staged files
@dataclass
class StagedResult:
    """What :func:`collect_staged` found and moved."""

    adds: list[AddFile] = field(default_factory=list)
    num_rows: int = 0
    identity: dict[str, int] = field(default_factory=dict)  # identity column -> extreme value written
    moved: list[str] = field(default_factory=list)  # full paths under the table root


def _walk(storage: Storage, directory: str) -> list[tuple[str, int]]:
    """(path relative to ``directory``, size) of every ``.parquet`` data file below it
    (hidden names are skipped as Spark skips them: ``.``/``_`` files such as checksums and
    markers, ``.`` directories and ``_`` directories without ``=``)."""
    fs = storage.fs
    try:
        found = fs.find(directory, detail=True)
    except FileNotFoundError:
        return []
    base = directory.rstrip("/") + "/"
    out = []
    for full, info in found.items():
        if info.get("type") == "directory":
            continue
        name = full if full.startswith(base) else _strip_protocol(full, base)
        rel = name[len(base) :] if name.startswith(base) else None
        if rel is None:
            continue
        *dirs, leaf = rel.split("/")
        if leaf.startswith((".", "_")) or not leaf.endswith(".parquet"):
            continue
        if any(d.startswith(".") or (d.startswith("_") and "=" not in d) for d in dirs):
            continue  # Spark's hidden directories (_temporary); partition dirs hold "="
        out.append((rel, int(info.get("size") or 0)))
    out.sort()
    return out


def _strip_protocol(full: str, base: str) -> str:
    # fsspec returns paths without the protocol; make both sides comparable
    i = base.find("://")
    return base[: i + 3] + full if i >= 0 and not full.startswith(base[: i + 3]) else full


def _move(storage: Storage, src: str, dst: str) -> None:
    if storage.protocol == "file":
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        if os.path.exists(dst):  # pragma: no cover - names hold a fresh job UUID
            raise FileExistsError(dst)
        os.rename(src, dst)
    else:
        storage.fs.mv(src, dst)


def collect_staged(
    storage: Storage,
    staging: str,
    *,
    physical_partition_names: Sequence[str],
    stats_columns: Sequence[StatsColumn],
    tight_bounds: bool = False,
    identity: Sequence[tuple[IdentityColumn, str]] = (),
    threads: int = FOOTER_THREADS,
    directory: str = "",
    staged_partition_names: Sequence[str] | None = None,
    into: StagedResult | None = None,
) -> StagedResult:
    """Turns the files under ``staging`` (relative to the root) into add actions and
    moves them into the table (see the module docstring). ``identity``: the generated
    identity columns with their Parquet column paths. ``directory``: where under the root
    the files go (e.g. ``_change_data``; default the root). ``staged_partition_names``:
    the names the staged directories use for the partition columns when they differ from
    ``physical_partition_names`` (materialized partition columns: the files keep a data
    column of the physical name, so Spark partitions by a stand-in); the files move to
    directories named by the physical names. The result is ``into`` when given, filled as
    the files move: on an error, ``into.moved`` holds the files moved so far."""
    staging_full = storage.join(staging)
    files = _walk(storage, staging_full)
    result = StagedResult() if into is None else into
    id_paths = {path: "int" for _, path in identity}

    def footer(item: tuple[str, int]) -> pq.FileMetaData:
        rel, _ = item
        with storage.fs.open(posixpath.join(staging_full, rel), "rb") as fh:
            return pq.ParquetFile(fh).metadata

    with ThreadPoolExecutor(max_workers=max(1, min(threads, len(files) or 1))) as pool:
        metas = list(pool.map(footer, files))
    for (rel, size), meta in zip(files, metas):
        src = posixpath.join(staging_full, rel)
        if meta.num_rows == 0:
            storage.delete(src)
            continue
        rel, values = _table_location(rel, physical_partition_names, staged_partition_names)
        if directory:
            rel = posixpath.join(directory, rel)
        dst = storage.join(rel)
        _move(storage, src, dst)
        result.moved.append(dst)
        result.num_rows += meta.num_rows
        result.adds.append(
            {
                "path": encode_path(rel),
                "partitionValues": values,
                "size": size,
                "modificationTime": int(time.time() * 1000),
                "dataChange": True,
                "stats": stats_from_footer(meta, stats_columns, tight_bounds=tight_bounds),
            }
        )
        if identity:
            _record_identity(result.identity, footer_bounds(meta, id_paths), identity, rel)
    return result


def _table_location(
    rel: str, physical_names: Sequence[str], staged_names: Sequence[str] | None
) -> tuple[str, dict[str, str | None]]:
    """Where a staged file (``rel`` below the staging directory) goes in the table, and its
    partition values: under the directories Spark wrote, or, when Spark partitioned by
    stand-in names (``staged_names``), under directories named by the physical names."""
    rel_dir = posixpath.dirname(rel)
    if staged_names is None:
        return rel, partition_values_of(rel_dir, physical_names)
    staged = partition_values_of(rel_dir, staged_names)
    values = dict(zip(physical_names, staged.values()))
    segments = [seg.partition("=")[2] for seg in rel_dir.split("/") if seg]
    named = "/".join(f"{escape_path_name(n)}={v}" for n, v in zip(physical_names, segments))
    return (posixpath.join(named, posixpath.basename(rel)) if named else posixpath.basename(rel)), values


def _record_identity(
    marks: dict[str, int],
    bounds: dict[str, tuple[Any, ...]],
    identity: Sequence[tuple[IdentityColumn, str]],
    rel: str,
) -> None:
    """Folds a written file's identity column bounds into ``marks`` (the extreme value
    generated so far, in each column's direction)."""
    for col, path in identity:
        raw = bounds.get(path)
        if raw is None:
            raise ValueError(f"identity column {col.name}: the written file {rel} has no min/max")
        value = int(raw[1]) if col.step > 0 else int(raw[0])
        prev = marks.get(col.name)
        marks[col.name] = value if prev is None else col.beyond(prev, value)


def discard(storage: Storage, staging: str, moved: Iterable[str] = ()) -> None:
    """Deletes ``moved`` files and the staging directory (best effort, never raises)."""
    delete_moved(storage, moved)
    remove_staging(storage, staging)


def delete_moved(storage: Storage, moved: Iterable[str]) -> None:
    """Deletes files moved into the table that will not be committed (best effort)."""
    for path in moved:
        try:
            storage.delete(path)
        except Exception:  # pragma: no cover - best effort
            log.warning("pydelta: could not delete uncommitted file %s", path)


def remove_staging(storage: Storage, staging: str) -> None:
    """Deletes the staging directory and whatever is left in it (best effort)."""
    full = storage.join(staging)
    try:
        if storage.fs.exists(full):
            storage.fs.rm(full, recursive=True)
    except Exception:  # pragma: no cover - best effort
        log.warning("pydelta: could not delete the staging directory %s", full)
