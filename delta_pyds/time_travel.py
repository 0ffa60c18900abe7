"""Resolving ``timestampAsOf`` to a version, as delta-spark does.

Guarantees: a commit's timestamp is its in-commit timestamp (``commitInfo.
inCommitTimestamp``) for versions at or after the table's
``delta.inCommitTimestampEnablementVersion`` when in-commit timestamps are enabled, and
otherwise the commit file's modification time, made strictly increasing (a timestamp
not after its predecessor's becomes predecessor + 1 ms). The version for a timestamp is
the newest commit whose timestamp is <= it; a timestamp before the earliest
reconstructable commit or after the latest raises :class:`VersionNotFoundError`.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from .actions import first_action, parse_special_lines
from .errors import VersionNotFoundError
from .log_files import LogFile
from .log_segment import build_log_segment, complete_checkpoints, list_log
from .storage import Storage


def parse_timestamp(value: Any) -> int:
    """A timestamp option (datetime, date, epoch ms, or string) -> epoch milliseconds (UTC)."""
    if isinstance(value, dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=dt.timezone.utc)
        return int(value.timestamp() * 1000)
    if isinstance(value, dt.date):
        return int(dt.datetime(value.year, value.month, value.day, tzinfo=dt.timezone.utc).timestamp() * 1000)
    if isinstance(value, (int, float)):
        return int(value)
    text = str(value).strip()
    try:
        parsed = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"timestampAsOf: {value!r} is not a timestamp; use e.g. "
                         "'2024-01-31', '2024-01-31 12:00:00' or an ISO-8601 timestamp") from None
    return parse_timestamp(parsed)


def commit_timestamps(storage: Storage, commits: list[LogFile]) -> list[int]:
    """Timestamps (ms) of ``commits`` (ascending versions), monotonised."""
    if not commits:
        return []
    latest = build_log_segment(storage, version=commits[-1].version)
    from .snapshot import Snapshot
    snap = Snapshot._from_segment(storage, latest)
    conf = snap.configuration
    ict_version = None
    if str(conf.get("delta.enableInCommitTimestamps", "false")).lower() == "true":
        ict_version = int(conf.get("delta.inCommitTimestampEnablementVersion") or 0)
    out: list[int] = []
    prev = None
    for c in commits:
        if ict_version is not None and c.version >= ict_version:
            data = storage.read_bytes(c.path, size=c.size)
            info = first_action(data, source=c.path).get("commitInfo") or {}
            ts = info.get("inCommitTimestamp")
            if ts is None:
                for obj in parse_special_lines(data, [b'"commitInfo"'], source=c.path):
                    ts = (obj.get("commitInfo") or {}).get("inCommitTimestamp")
            if ts is None:
                raise VersionNotFoundError(f"commit {c.version} has no inCommitTimestamp although "
                                           "in-commit timestamps are enabled")
            ts = int(ts)
        else:
            ts = c.modification_time
            if prev is not None and ts <= prev:
                ts = prev + 1
        out.append(ts)
        prev = ts
    return out


def version_at_timestamp(storage: Storage, timestamp: Any, *, listing: list[LogFile] | None = None) -> int:
    target = parse_timestamp(timestamp)
    files = list_log(storage) if listing is None else listing
    commits = sorted((f for f in files if f.kind == "commit"), key=lambda f: f.version)
    if not commits:
        build_log_segment(storage, listing=files)  # raises the right error
        raise VersionNotFoundError(f"no commits to time travel in {storage.root}")
    # only versions that can be reconstructed: from commit 0 or a checkpoint on
    checkpoints = complete_checkpoints(files)
    earliest = 0 if commits[0].version == 0 else min((v for v in checkpoints), default=commits[0].version)
    commits = [c for c in commits if c.version >= earliest]
    stamps = commit_timestamps(storage, commits)
    chosen = None
    for c, ts in zip(commits, stamps):
        if ts <= target:
            chosen = c.version
        else:
            break
    human = dt.datetime.fromtimestamp(target / 1000, dt.timezone.utc).isoformat()
    if chosen is None:
        first = dt.datetime.fromtimestamp(stamps[0] / 1000, dt.timezone.utc).isoformat()
        raise VersionNotFoundError(
            f"timestampAsOf {human} is before the earliest available version {commits[0].version} "
            f"(committed at {first})")
    if chosen == commits[-1].version and stamps[-1] < target:
        last = dt.datetime.fromtimestamp(stamps[-1] / 1000, dt.timezone.utc).isoformat()
        raise VersionNotFoundError(
            f"timestampAsOf {human} is after the latest version {chosen} (committed at {last}); "
            "use a timestamp at or before it, or read the latest version without timestampAsOf")
    return chosen
