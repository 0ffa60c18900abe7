"""The log segment: which files of ``_delta_log`` make up one version of a table.

Invariants of a ``LogSegment`` for version ``v``:

* ``checkpoint`` is the newest *complete* checkpoint with version <= ``v`` that was not
  excluded (a multi-part checkpoint counts only with every part 1..n present; the check
  takes time and memory in the number of files listed, not in the ``n`` a name claims),
  or empty;
* ``commits`` are exactly the commit files ``checkpoint_version + 1 .. v`` in order,
  with no gap (a gap raises :class:`CorruptLogError`); without a checkpoint they start
  at version 0;
* ``replay_files`` is what replay reads: ``commits``, except that runs of commits fully
  covered by a log compaction file ``<a>.<b>.compacted.json`` (a <= b, inside the
  segment) are replaced by that file — it holds the reconciled actions of versions a..b,
  so replaying it at version b is equivalent;
* ``_last_checkpoint`` is only a hint: when it is valid (JSON, an integer version,
  checksum) and the version asked for is at or after it, only the files from its version
  on are listed (:func:`delta_pyds.log.listing.list_log_from`: a start-after listing on
  S3); that partial listing is used only if it holds a usable checkpoint at or after the
  hint, and then it gives the same segment as the whole listing would (every checkpoint
  newer than the hint and every commit after it sort after the hint's name, so a stale
  hint still finds the newest checkpoint). Otherwise (hint missing, unreadable, torn,
  pointing at a missing, incomplete or excluded checkpoint, or at a version past the
  log; time travel to a version before it) the whole ``_delta_log`` is listed, the
  listing being the truth;
* ``listed_from`` is the version the listing started at (0: the whole log):
  ``all_commits`` and ``all_checkpoint_versions`` hold what that listing saw.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from delta_pyds.errors import CorruptLogError, TableNotFoundError, VersionNotFoundError
from delta_pyds.log.files import LAST_CHECKPOINT, LOG_DIR, LogFile, last_checkpoint_checksum, parse_log_file_name
from delta_pyds.log.listing import list_log_from
from delta_pyds.storage.store import Storage

log = logging.getLogger(__name__)


@dataclass
class LogSegment:
    version: int
    checkpoint_version: int | None
    checkpoint: list[LogFile]
    commits: list[LogFile]
    # every commit file present in the listing (for history and timestamp resolution)
    all_commits: list[LogFile] = field(default_factory=list)
    all_checkpoint_versions: list[int] = field(default_factory=list)
    replay_files: list[LogFile] = field(default_factory=list)
    # the first version the listing covered (0: the whole log)
    listed_from: int = 0


def read_last_checkpoint(storage: Storage) -> dict[str, Any] | None:
    """The ``_last_checkpoint`` hint, or None when it is missing or cannot be trusted
    (unreadable, not a regular file, too large, not a JSON object with an integer
    ``version``, a checksum that does not match): a hint never fails a read."""
    path = storage.join(LOG_DIR, LAST_CHECKPOINT)
    try:
        raw = storage.read_bytes(path)
    except FileNotFoundError:
        return None
    except OSError as exc:  # also UnsafeFileError, StorageError (both OSErrors)
        log.warning("cannot read %s (%s); listing the log instead", path, type(exc).__name__)
        return None
    try:
        parsed = json.loads(raw)
        hint: dict[str, Any] = parsed if isinstance(parsed, dict) else {}
        version = hint.get("version")
        if not isinstance(version, int) or isinstance(version, bool) or version < 0:
            raise ValueError("no version")
        checksum = hint.get("checksum")
        if checksum is not None and checksum != last_checkpoint_checksum(hint):
            log.warning("ignoring %s: its checksum does not match its content", path)
            return None
    except (ValueError, RecursionError):  # also UnicodeError: bad bytes, lone surrogates
        log.warning("ignoring a corrupt %s", path)
        return None
    return hint


def list_log(storage: Storage, *, from_version: int | None = None) -> list[LogFile]:
    """The log files of ``storage``'s table; with ``from_version``, only those of that
    version and later (the files before it are not listed where the store allows)."""
    directory = storage.join(LOG_DIR)
    entries = storage.list_dir(directory) if from_version is None else list_log_from(storage, directory, from_version)
    files = []
    for e in entries:
        parsed = parse_log_file_name(e.name, e.path, e.size, e.modification_time)
        if parsed is not None:
            files.append(parsed)
    return files


def complete_checkpoints(files: Iterable[LogFile]) -> dict[int, list[LogFile]]:
    """Complete checkpoints by version (the preferred one when several exist)."""
    by_version: dict[int, list[LogFile]] = {}
    for f in files:
        if f.kind == "checkpoint":
            by_version.setdefault(f.version, []).append(f)
    result: dict[int, list[LogFile]] = {}
    for version, group in by_version.items():
        v2 = sorted((f for f in group if f.checkpoint_kind == "v2"), key=lambda f: f.name)
        classic = [f for f in group if f.checkpoint_kind == "classic"]
        multi: dict[int, dict[int, LogFile]] = {}
        for f in group:
            if f.checkpoint_kind == "multi":
                multi.setdefault(f.num_parts, {})[f.part] = f
        # complete: parts 1..n all present. Counted, never materialised: a file name
        # may claim a billion parts
        complete_multi = [
            parts for n, parts in sorted(multi.items()) if len(parts) == n and all(1 <= i <= n for i in parts)
        ]
        if v2:
            result[version] = [v2[0]]
        elif classic:
            result[version] = [classic[0]]
        elif complete_multi:
            parts = complete_multi[0]
            result[version] = [parts[i] for i in sorted(parts)]
    return result


def build_log_segment(
    storage: Storage,
    *,
    version: int | None = None,
    exclude_checkpoints: frozenset[int] = frozenset(),
    listing: list[LogFile] | None = None,
) -> LogSegment:
    """The segment of ``version`` (None: the latest) from ``listing``, or, without one,
    from the log listed from ``_last_checkpoint`` on when that gives a usable checkpoint,
    else from the whole log (module docstring)."""
    if listing is not None:
        return segment_from_listing(storage, listing, version=version, exclude_checkpoints=exclude_checkpoints)
    hint = read_last_checkpoint(storage)
    start = hint["version"] if hint is not None else None
    if start is not None and (version is None or version >= start):
        partial = list_log(storage, from_version=start)
        try:
            segment = segment_from_listing(
                storage, partial, version=version, exclude_checkpoints=exclude_checkpoints, listed_from=start
            )
        except (CorruptLogError, TableNotFoundError, VersionNotFoundError):
            segment = None  # the whole listing decides (and words the error)
        if segment is not None and segment.checkpoint_version is not None and segment.checkpoint_version >= start:
            return segment
        log.info("%s names checkpoint %s, which is not usable; listing the whole log", LAST_CHECKPOINT, start)
    return segment_from_listing(storage, list_log(storage), version=version, exclude_checkpoints=exclude_checkpoints)


def segment_from_listing(
    storage: Storage,
    files: list[LogFile],
    *,
    version: int | None = None,
    exclude_checkpoints: frozenset[int] = frozenset(),
    listed_from: int = 0,
) -> LogSegment:
    """The segment of ``version`` from the log files in ``files`` (a listing that covers
    every file from ``listed_from`` on)."""
    commits = {f.version: f for f in files if f.kind == "commit"}
    checkpoints = {v: parts for v, parts in complete_checkpoints(files).items() if v not in exclude_checkpoints}
    if not commits and not checkpoints:
        if any(f.kind == "checkpoint" for f in files):
            raise CorruptLogError(f"the log of {storage.root} holds only incomplete or unusable checkpoints")
        raise TableNotFoundError(
            f"no Delta table at {storage.root}: {LOG_DIR} has no commits (`{storage.root}` is not a Delta table)"
        )
    latest = max(list(commits) + list(checkpoints))
    if version is None:
        version = latest
    elif version < 0:
        raise VersionNotFoundError(f"version {version} is not valid: versions start at 0")
    elif version > latest:
        raise VersionNotFoundError(
            f"cannot time travel to version {version}: the latest version of the table is {latest}"
        )
    usable = [v for v in checkpoints if v <= version]
    checkpoint_version = max(usable) if usable else None
    start = checkpoint_version + 1 if checkpoint_version is not None else 0
    if checkpoint_version is None and 0 not in commits:
        earliest = min(commits) if commits else None
        raise VersionNotFoundError(
            f"cannot reconstruct version {version} of the table at {storage.root}: commit 0 "
            f"is gone and no checkpoint at or before it exists"
            + (f" (the earliest available commit is {earliest})" if earliest is not None else "")
            + _unusable_checkpoints(files, version, exclude_checkpoints)
        )
    missing = [v for v in range(start, version + 1) if v not in commits]
    if missing:
        raise CorruptLogError(
            f"the log of {storage.root} is missing commit {missing[0]:020d}.json needed for "
            f"version {version}; commits after a checkpoint must be contiguous"
        )
    segment_commits = [commits[v] for v in range(start, version + 1)]
    compactions = [f for f in files if f.kind == "compaction" and start <= f.start_version < f.version <= version]
    return LogSegment(
        version=version,
        checkpoint_version=checkpoint_version,
        checkpoint=checkpoints[checkpoint_version] if checkpoint_version is not None else [],
        commits=segment_commits,
        replay_files=_with_compactions(segment_commits, compactions),
        all_commits=[commits[v] for v in sorted(commits)],
        all_checkpoint_versions=sorted(checkpoints),
        listed_from=listed_from,
    )


def _with_compactions(commits: list[LogFile], compactions: list[LogFile]) -> list[LogFile]:
    """Replaces runs of commits by the widest compaction files that cover them."""
    if not compactions:
        return list(commits)
    best: dict[int, LogFile] = {}
    for c in compactions:
        if c.start_version not in best or c.version > best[c.start_version].version:
            best[c.start_version] = c
    out: list[LogFile] = []
    i = 0
    while i < len(commits):
        widest = best.get(commits[i].version)
        if widest is not None:
            out.append(widest)
            i += widest.version - widest.start_version + 1
        else:
            out.append(commits[i])
            i += 1
    return out


def _unusable_checkpoints(files: list[LogFile], version: int, excluded: frozenset[int]) -> str:
    """A hint naming checkpoints at or before ``version`` that exist but cannot be used."""
    complete = complete_checkpoints(files)
    bad = sorted(
        {
            f.version
            for f in files
            if f.kind == "checkpoint" and f.version <= version and (f.version not in complete or f.version in excluded)
        }
    )
    if not bad:
        return ""
    return (
        f"; checkpoint(s) at version {', '.join(map(str, bad))} exist but are incomplete "
        "(a part is missing) or unreadable"
    )
