"""Metadata cleanup: deleting expired ``_delta_log`` entries after a checkpoint.

Runs after a checkpoint is written (as delta-spark's ``MetadataCleanup``) on tables with
``delta.enableExpiredLogCleanup`` (default true), keeping ``delta.logRetentionDuration``
(default 30 days) of history.

Guarantees:

* the log left behind always starts at a complete checkpoint: only log files (commits,
  checksums, checkpoints, compactions) of versions *strictly below* a complete checkpoint
  version ``C`` are deleted, so every version from ``C`` on stays readable and time
  travel inside the retention window keeps working;
* a version is expired only if its commit file, and the commit files of all earlier
  versions, are older than the cutoff (modification times made monotonic in version
  order, as delta-spark does; cutoff = now - retention, truncated to the day);
* ``C`` is never above the checkpoint just written (``up_to``), so a concurrent writer's
  unfinished checkpoint is never relied on;
* deletion goes oldest first, so a crash mid-cleanup leaves a contiguous log suffix;
* v2 checkpoint sidecars are deleted only when older than the cutoff and not referenced
  by any remaining checkpoint;
* tables with the ``checkpointProtection`` feature and a
  ``delta.requireCheckpointProtectionBeforeVersion`` above 0 are not cleaned (the
  protocol restricts truncating their history; we stay on the safe side);
* cleanup is best effort: callers log failures and never fail the commit for them.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, field

from delta_pyds.log.files import LOG_DIR, SIDECAR_DIR, LogFile
from delta_pyds.log.segment import complete_checkpoints, list_log
from delta_pyds.protocol import features
from delta_pyds.protocol.actions import Protocol
from delta_pyds.protocol.table_properties import is_true, parse_interval_ms
from delta_pyds.storage.store import Storage

log = logging.getLogger(__name__)

LOG_RETENTION = "delta.logRetentionDuration"
ENABLE_EXPIRED_LOG_CLEANUP = "delta.enableExpiredLogCleanup"
CHECKPOINT_PROTECTION_VERSION = "delta.requireCheckpointProtectionBeforeVersion"
DEFAULT_LOG_RETENTION_MS = 30 * 86_400_000
_DAY_MS = 86_400_000


@dataclass
class CleanupResult:
    cutoff_ms: int
    boundary: int | None = None  # the checkpoint version the log now starts at
    deleted: list[str] = field(default_factory=list)  # names relative to _delta_log
    reason: str = ""  # why nothing was deleted, when nothing was


def log_retention_ms(configuration: Mapping[str, str]) -> int:
    value = configuration.get(LOG_RETENTION)
    try:
        return parse_interval_ms(value, LOG_RETENTION) if value else DEFAULT_LOG_RETENTION_MS
    except ValueError:
        return DEFAULT_LOG_RETENTION_MS


def cleanup_enabled(configuration: Mapping[str, str]) -> bool:
    return configuration.get(ENABLE_EXPIRED_LOG_CLEANUP) is None or is_true(configuration, ENABLE_EXPIRED_LOG_CLEANUP)


def cutoff_ms(configuration: Mapping[str, str], now_ms: int) -> int:
    """now - delta.logRetentionDuration, truncated to the start of its (UTC) day."""
    raw = now_ms - log_retention_ms(configuration)
    return raw - raw % _DAY_MS


def plan_cleanup(listing: list[LogFile], cutoff: int, up_to: int) -> tuple[int | None, list[LogFile]]:
    """The checkpoint version the log will start at and the log files to delete."""
    commits = sorted((f for f in listing if f.kind == "commit"), key=lambda f: f.version)
    # the newest version such that it and every version before it are expired
    expired_through = -1
    running = -1
    expected = commits[0].version if commits else 0
    for c in commits:
        if c.version != expected:  # a gap: stop (never reason across missing commits)
            break
        running = max(running, c.modification_time)
        if running > cutoff:
            break
        expired_through = c.version
        expected += 1
    candidates = [v for v in complete_checkpoints(listing) if v <= up_to and v <= expired_through + 1]
    if not candidates:
        return None, []
    boundary = max(candidates)
    doomed = [f for f in listing if f.kind in ("commit", "crc", "checkpoint") and f.version < boundary]
    doomed += [f for f in listing if f.kind == "compaction" and f.version < boundary]
    doomed.sort(key=lambda f: (f.version, f.kind != "checkpoint", f.name))
    return boundary, doomed


def cleanup_expired_logs(
    storage: Storage,
    configuration: Mapping[str, str],
    *,
    up_to: int,
    protocol: Protocol | None = None,
    now_ms: int | None = None,
    force: bool = False,
) -> CleanupResult:
    """Deletes the log files no retained version needs (see the module docstring).

    ``up_to`` is the newest checkpoint version the log may start at (the checkpoint the
    caller just wrote). ``force`` ignores ``delta.enableExpiredLogCleanup``."""
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    cutoff = cutoff_ms(configuration, now_ms)
    result = CleanupResult(cutoff)
    if not force and not cleanup_enabled(configuration):
        result.reason = f"{ENABLE_EXPIRED_LOG_CLEANUP} is false"
        return result
    if protocol is not None and features.is_enabled(protocol, "checkpointProtection"):
        try:
            protected = int(configuration.get(CHECKPOINT_PROTECTION_VERSION) or 0)
        except ValueError:
            protected = 1
        if protected > 0:
            result.reason = f"the table has checkpointProtection with {CHECKPOINT_PROTECTION_VERSION}={protected}"
            return result
    listing = list_log(storage)
    boundary, doomed = plan_cleanup(listing, cutoff, up_to)
    if boundary is None:
        result.reason = "no complete checkpoint at or before the newest expired version"
        return result
    result.boundary = boundary
    for f in doomed:
        storage.delete(f.path)
        result.deleted.append(f.name)
    result.deleted += _cleanup_sidecars(storage, listing, boundary, cutoff)
    if result.deleted:
        log.info(
            "pydelta: deleted %d expired log file(s) of %s before version %d",
            len(result.deleted),
            storage.root,
            boundary,
        )
    return result


def _cleanup_sidecars(storage: Storage, listing: list[LogFile], boundary: int, cutoff: int) -> list[str]:
    from delta_pyds.log.checkpoint_reader import CheckpointReader

    sidecar_dir = storage.join(LOG_DIR, SIDECAR_DIR)
    entries = storage.list_dir(sidecar_dir)
    if not entries:
        return []
    referenced: set[str] = set()
    for f in listing:  # every v2 checkpoint that stays, chosen by readers or not
        if f.kind == "checkpoint" and f.checkpoint_kind == "v2" and f.version >= boundary:
            referenced |= {p.rstrip("/").rsplit("/", 1)[-1] for p in CheckpointReader(storage, [f]).sidecar_paths()}
    deleted = []
    for e in entries:
        if e.name not in referenced and e.modification_time <= cutoff:
            storage.delete(e.path)
            deleted.append(f"{SIDECAR_DIR}/{e.name}")
    return deleted
