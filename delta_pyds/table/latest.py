"""The latest snapshot of a table, kept between statements and brought up to date from the
commits after it (as delta-spark's ``DeltaLog.update`` does), instead of replayed per call.

Guarantees of :func:`latest_snapshot`:

* it returns exactly what ``Snapshot.load(storage)`` would return now: the latest version
  listed, its protocol checked for reading, its files, app transactions and domain metadata;
* a kept snapshot of version ``v`` is reused only while the log still holds ``v``'s commit
  file with the same size, modification time and content (a SHA-256 of its bytes taken
  when the snapshot was kept): a table deleted and created again at the same path, or a log
  whose commit ``v`` was cleaned up, is loaded afresh;
* to bring it up to date, the log is listed from ``v`` on (a start-after listing on S3) and
  only the commits after ``v`` are read (:meth:`Snapshot.extend`); when they are not
  contiguous, or a newer complete checkpoint is listed, the table is loaded afresh
  (``_last_checkpoint`` first, as ``Snapshot.load`` does) — never guessed around;
* memory is bounded: at most ``MAX_TABLES`` tables are kept, holding at most ``MAX_FILES``
  active-file rows together (least recently used out first; a snapshot's files count once
  they are built);
* entries are keyed by the table root, the storage options and the external-path setting,
  so two ``Storage`` objects of one table share an entry; module state, never pickled,
  guarded by a lock.

Time travel (a version or a timestamp) does not come here: a pinned version is immutable and
:func:`delta_pyds.read.scan_plan.cached_snapshot` keeps those."""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from dataclasses import dataclass

from delta_pyds.log.files import LOG_DIR, LogFile
from delta_pyds.log.segment import complete_checkpoints, list_log
from delta_pyds.storage.store import Storage
from delta_pyds.table.snapshot import Snapshot

MAX_TABLES = 8
MAX_FILES = 2_000_000
# past this many new commits a fresh load (from the newest checkpoint) is the cheaper replay
MAX_NEW_COMMITS = 200


@dataclass(frozen=True)
class KeptSnapshot:
    snapshot: Snapshot
    commit: LogFile  # the commit file of the snapshot's version, as listed when it was kept
    digest: str  # SHA-256 of that file's bytes


_KEPT: OrderedDict[tuple, KeptSnapshot] = OrderedDict()
_LOCK = threading.Lock()


def table_key(storage: Storage) -> tuple:
    return (storage.root, tuple(sorted(storage.options.items())), storage.allow_external_paths)


def latest_snapshot(storage: Storage) -> Snapshot:
    """The latest snapshot of ``storage``'s table (see the module docstring)."""
    key = table_key(storage)
    with _LOCK:
        kept = _KEPT.get(key)
    snapshot = brought_up_to_date(storage, kept) if kept is not None else None
    if snapshot is None:
        snapshot = Snapshot.load(storage)
    keep(key, snapshot)
    return snapshot


def snapshot_at(storage: Storage, version: int) -> Snapshot:
    """The snapshot of ``version``: the kept latest one brought up to date when that is
    ``version`` (post-commit work right after a commit), else a load of that version."""
    snapshot = latest_snapshot(storage)
    return snapshot if snapshot.version == version else Snapshot.load(storage, version=version)


def brought_up_to_date(storage: Storage, kept: KeptSnapshot) -> Snapshot | None:
    """The latest snapshot built on ``kept``, or None when ``kept`` cannot be the base."""
    base = kept.snapshot
    listing = list_log(storage, from_version=base.version)
    commits = {f.version: f for f in listing if f.kind == "commit"}
    mine = commits.get(base.version)
    if mine is None or (mine.size, mine.modification_time) != (kept.commit.size, kept.commit.modification_time):
        return None
    newer = sorted(v for v in commits if v > base.version)
    if not newer:
        return base if _digest(storage, mine) == kept.digest else None
    if newer != list(range(base.version + 1, newer[-1] + 1)) or len(newer) > MAX_NEW_COMMITS:
        return None
    if any(v > base.version for v in complete_checkpoints(listing)):
        return None  # a newer checkpoint: a fresh load replays less
    if _digest(storage, mine) != kept.digest:
        return None
    return Snapshot.extend(base, [commits[v] for v in newer], storage)


def keep(key: tuple, snapshot: Snapshot) -> None:
    """Keeps ``snapshot`` as the table's latest (when it can be checked later)."""
    last = snapshot.segment.commits[-1] if snapshot.segment.commits else None
    if last is None or last.version != snapshot.version or _rows(snapshot) > MAX_FILES:
        with _LOCK:
            _KEPT.pop(key, None)
        return
    with _LOCK:
        current = _KEPT.get(key)
        fresh = current is None or current.snapshot is not snapshot
    if fresh:
        held = snapshot.held_commit_bytes(last.version)
        try:
            digest = hashlib.sha256(held).hexdigest() if held is not None else _digest(snapshot.storage, last)
        except OSError:
            return
    with _LOCK:
        if fresh:
            _KEPT[key] = KeptSnapshot(snapshot, last, digest)
        _KEPT.move_to_end(key)
        while len(_KEPT) > MAX_TABLES or (len(_KEPT) > 1 and _kept_rows() > MAX_FILES):
            _KEPT.popitem(last=False)


def forget(storage: Storage | None = None) -> None:
    """Drops the kept snapshot of ``storage``'s table (of every table without one)."""
    with _LOCK:
        if storage is None:
            _KEPT.clear()
        else:
            _KEPT.pop(table_key(storage), None)


def _kept_rows() -> int:
    return sum(_rows(k.snapshot) for k in _KEPT.values())


def _rows(snapshot: Snapshot) -> int:
    """The active-file rows ``snapshot`` holds in memory (0 before its replay)."""
    built = [snapshot.__dict__.get(name) for name in ("files", "scan_files")]
    return max((t.num_rows for t in built if t is not None), default=0)


def _digest(storage: Storage, commit: LogFile) -> str:
    path = commit.path or storage.join(LOG_DIR, commit.name)
    return hashlib.sha256(storage.read_many([path], sizes=[commit.size])[0]).hexdigest()
