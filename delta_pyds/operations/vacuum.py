"""VACUUM: deleting data files no version inside the retention window needs.

Guarantees (as delta-spark's VacuumCommand):

* a file is kept if the latest snapshot references it (active add, or its deletion
  vector file), or a tombstone whose ``deletionTimestamp`` is inside the retention
  window references it — so time travel to any version committed within the window
  keeps working;
* any other file under the table root (data files, ``deletion_vector_*.bin``, expired
  ``_change_data`` files, files no commit ever referenced) is deleted only if its own
  modification time is also older than the window (files being written by an ongoing
  transaction are younger);
* ``_delta_log`` and other hidden paths (a component starting with ``_`` or ``.``, except
  ``_change_data``, ``_``-named partition directories and the native writer's
  ``_pydelta_staging-*`` directories, see :func:`hidden_path`) are never touched; the whole
  content of a staging directory (a crashed write's ``_temporary`` Parquet and ``.crc``
  files) is garbage once older than the window, and its emptied directories are removed;
* a retention shorter than the table's ``delta.deletedFileRetentionDuration`` (default
  7 days) is refused unless ``enforce_retention=False``; the default is a dry run.
* tables with the ``vacuumProtocolCheck`` feature (and any table, before deleting) must
  pass the writer protocol check;
* a real (not dry) run is recorded in the table history as delta-spark does: a
  ``VACUUM START`` commit (files and bytes to delete) before deleting anything and a
  ``VACUUM END`` commit (``status`` COMPLETED, or FAILED if deleting raised) after —
  both hold only ``commitInfo``, so they never conflict with other writers
  (``log_commits=False`` turns them off).

Links (local disk; object stores have none): the tree is listed as delta-spark lists it,
following links to directories inside the root (:func:`~delta_pyds.storage.tree.list_tree`),
but only what is provably garbage is deleted:

* a regular file is deleted by its real name, and only if neither its listed name, nor its
  real root-relative name, nor its real path is that of a live file (a live file's path is
  resolved through its links), and neither name is hidden;
* nothing is deleted through a link leading out of the root (such directories are never
  listed) and a file outside the root is never touched;
* a link (to a file, to a directory, dangling, or in a loop) is garbage when its own name
  is unreferenced and old and no live path resolves through it: then the link alone is
  unlinked, never its target.
"""

from __future__ import annotations

import os
import posixpath
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import cast

import pyarrow.compute as pc

from delta_pyds.errors import ArgumentValueError, DeltaError
from delta_pyds.protocol import features
from delta_pyds.protocol.deletion_vectors import DeletionVectorDescriptor
from delta_pyds.protocol.partition_values import escape_path_name
from delta_pyds.protocol.paths import relative_to
from delta_pyds.protocol.table_properties import deleted_file_retention_ms
from delta_pyds.storage.store import Storage
from delta_pyds.storage.tree import FILE, TreeEntry, is_within, list_tree, real_root, resolve_all
from delta_pyds.table.snapshot import Snapshot
from delta_pyds.transaction.staged_files import cleanup_on_failure
from delta_pyds.write.native_files import STAGING_PREFIX

CHANGE_DATA_DIR = "_change_data"


@dataclass
class VacuumResult:
    dry_run: bool
    retention_hours: float
    threshold_ms: int
    files: list[str] = field(default_factory=list)  # relative to the table root
    bytes: int = 0

    def __str__(self) -> str:
        verb = "would delete" if self.dry_run else "deleted"
        return f"vacuum {verb} {len(self.files)} file(s), {self.bytes} bytes (retention {self.retention_hours} h)"


def _dv_paths(snapshot: Snapshot, dvs: Iterable) -> set[str]:
    """Root-relative paths of the deletion vector files of ``dvs`` (those below the root)."""
    out = set()
    for d in dvs:
        if d and d.get("storageType") in ("u", "p"):
            path = DeletionVectorDescriptor.from_dict(d).absolute_path(snapshot.storage)
            rel = relative_to(path, snapshot.storage.root) if path else None
            if rel:
                out.add(rel)
    return out


def hidden_path(rel: str, partition_dirs: tuple[str, ...] = ()) -> bool:
    """Whether VACUUM leaves ``rel`` alone, as delta-spark's ``isHiddenDirectory``: a file
    name starting with ``_`` or ``.``, or a directory starting with them, except
    ``_change_data`` at the root, partition directories of columns whose (escaped) name starts
    with ``_`` (``partition_dirs`` holds the ``name=`` prefixes), and the native writer's
    staging directories, whose whole content is only ever a write's working files (what a
    failed driver or a killed process left there, ``_temporary`` and ``.crc`` files included,
    is old and unreferenced)."""
    parts = rel.split("/")
    if len(parts) > 1 and parts[0].startswith(STAGING_PREFIX):
        return False  # all of a staging directory's content (_temporary, .crc) is a write's
    if parts[-1].startswith((".", "_")):
        return True
    for i, p in enumerate(parts[:-1]):
        if not p.startswith((".", "_")):
            continue
        if i == 0 and (p == CHANGE_DATA_DIR or p.startswith(STAGING_PREFIX)):
            continue
        if p.startswith(partition_dirs):
            continue
        return True
    return False


def _local_path(storage: Storage, path: str) -> str | None:
    """The local filesystem path a log path names (None when it is on another filesystem
    or refused as external)."""
    try:
        full = storage.resolve(path)
    except DeltaError:
        return None
    if full.startswith("file:"):
        full = full[len("file://") :] if full.startswith("file://") else full[len("file:") :]
    return full if full.startswith("/") else None


def garbage(
    storage: Storage, entries: list[TreeEntry], keep: set[str], threshold: int, partition_dirs: tuple[str, ...] = ()
) -> list[tuple[str, str, int]]:
    """``(root-relative name, path to delete, size)`` of the listed entries VACUUM may delete
    (see "Links" in the module docstring)."""

    def dead(rel: str) -> bool:
        return bool(rel) and rel not in keep and not hidden_path(rel, partition_dirs)

    fresh = [e for e in entries if e.modification_time < threshold and dead(e.rel)]
    if storage.protocol != "file":
        return [(e.rel, e.path, e.size) for e in fresh]
    root = real_root(storage)
    live_real: set[str] = set()
    traversed: set[str] = set()
    if any(e.kind != FILE for e in entries):  # where links exist: what do live paths lead through?
        live_real, traversed = resolve_all([f for f in (_local_path(storage, p) for p in keep) if f])
    out: list[tuple[str, str, int]] = []
    seen: set[str] = set()
    for e in fresh:
        name_real = cast(str, e.name_real)
        if not is_within(posixpath.dirname(name_real), root):
            continue  # unlinking it would act outside the root
        target = cast(str, e.real) if e.kind == FILE else name_real  # what the delete removes
        rel = target[len(root) :].lstrip("/")
        if target in seen or target in live_real or target in traversed or not dead(rel):
            continue
        seen.add(target)
        out.append((rel, target, e.size))
    return out


def referenced_paths(snapshot: Snapshot, threshold_ms: int) -> set[str]:
    """Root-relative paths (canonical, see :mod:`delta_pyds.protocol.paths`) of every file below
    the table root that a version inside the window may read."""
    files = snapshot.files
    keep = set(files.column("path").to_pylist())
    keep |= _dv_paths(snapshot, files.column("deletion_vector").to_pylist())
    tomb = snapshot.tombstones
    if tomb.num_rows:
        ts = pc.fill_null(tomb.column("deletionTimestamp"), 0)
        recent = tomb.filter(pc.greater(ts, threshold_ms))
        keep |= set(recent.column("path").to_pylist())
        if "deletionVector" in recent.column_names:
            keep |= _dv_paths(snapshot, recent.column("deletionVector").to_pylist())
    return keep


def vacuum(
    snapshot: Snapshot,
    *,
    retention_hours: float | None = None,
    dry_run: bool = True,
    enforce_retention: bool = True,
    now_ms: int | None = None,
    log_commits: bool = True,
) -> VacuumResult:
    table_ms = deleted_file_retention_ms(snapshot.configuration)
    retention_ms = table_ms if retention_hours is None else int(float(retention_hours) * 3_600_000)
    if retention_ms < 0:
        raise ArgumentValueError(f"retentionHours must be >= 0, got {retention_hours}")
    if enforce_retention and retention_ms < table_ms:
        raise ArgumentValueError(
            f"retentionHours={retention_hours} is shorter than the table's "
            f"delta.deletedFileRetentionDuration ({table_ms / 3_600_000:g} h): readers and writers "
            "still using older versions could lose files. Pass enforce_retention=False only if no "
            "operation on this table runs longer than the retention you give"
        )
    if not dry_run:
        features.check_write(snapshot.protocol)
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    threshold = now_ms - retention_ms
    keep = referenced_paths(snapshot, threshold)
    storage = snapshot.storage
    result = VacuumResult(dry_run, retention_ms / 3_600_000, threshold)
    partition_dirs = tuple(escape_path_name(c) + "=" for c in snapshot.physical_partition_columns)
    candidates = garbage(storage, list_tree(storage), keep, threshold, partition_dirs)
    result.files = [rel for rel, _, _ in candidates]
    result.bytes = sum(size for _, _, size in candidates)
    if not dry_run:
        if log_commits:
            _commit_vacuum_start(
                snapshot, result, enforce_retention, table_ms, None if retention_hours is None else retention_ms
            )
        stale_dirs = _stale_staging_dirs(storage, threshold)
        deleted = 0

        def record_failure() -> None:  # with the number deleted when the failure came
            if log_commits:
                _commit_vacuum_end(storage, "FAILED", deleted, result)

        with cleanup_on_failure(record_failure, what="the VACUUM END (FAILED) commit"):
            for _, listed, _ in candidates:
                storage.delete(listed)
                deleted += 1
            for d in stale_dirs:  # deepest first; a directory a write still uses is not empty
                try:
                    os.rmdir(d)
                except OSError:
                    pass
        if log_commits:
            _commit_vacuum_end(storage, "COMPLETED", deleted, result)
    return result


def _stale_staging_dirs(storage: Storage, threshold: int) -> list[str]:
    """Local disk: the (real, not linked) directories of staging directories at the root whose
    own modification time is older than ``threshold``, deepest first: those left empty once
    their stale files are deleted are removed too (object stores have no directories)."""
    if storage.protocol != "file":
        return []
    try:
        tops = [e.path for e in os.scandir(storage.root) if e.name.startswith(STAGING_PREFIX)]
    except OSError:
        return []
    out = []
    for top in tops:
        if os.path.islink(top):
            continue
        for d, _subdirs, _files in os.walk(top, topdown=False):  # never follows links
            try:
                if os.lstat(d).st_mtime_ns // 1_000_000 < threshold:
                    out.append(d)
            except OSError:
                pass
    return out


def _commit_vacuum_start(
    snapshot: Snapshot, result: VacuumResult, check: bool, default_ms: int, specified_ms: int | None
) -> None:
    from delta_pyds.transaction.commit import Transaction

    params = {"retentionCheckEnabled": check, "defaultRetentionMillis": default_ms}
    if specified_ms is not None:
        params["specifiedRetentionMillis"] = specified_ms
    Transaction(snapshot.storage, snapshot).commit(
        "VACUUM START", params, metrics={"numFilesToDelete": len(result.files), "sizeOfDataToDelete": result.bytes}
    )


def _commit_vacuum_end(storage: Storage, status: str, deleted: int, result: VacuumResult) -> None:
    from delta_pyds.transaction.commit import Transaction

    dirs = {rel.rsplit("/", 1)[0] for rel in result.files if "/" in rel}
    Transaction.start(storage).commit(
        "VACUUM END", {"status": status}, metrics={"numDeletedFiles": deleted, "numVacuumedDirectories": len(dirs) + 1}
    )
