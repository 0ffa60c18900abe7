"""Resolving ``timestampAsOf`` to a version, as delta-spark does.

Guarantees: a commit's timestamp is its in-commit timestamp (``commitInfo.
inCommitTimestamp``) for versions at or after the table's
``delta.inCommitTimestampEnablementVersion`` when in-commit timestamps are enabled, and
otherwise the commit file's modification time, made strictly increasing (a timestamp
not after its predecessor's becomes predecessor + 1 ms). The version for a timestamp is
the newest commit whose timestamp is <= it; a timestamp before the earliest
reconstructable commit or after the latest raises :class:`VersionNotFoundError`.

Time zones, as delta-spark: a timestamp string (or ``datetime.date``) without a UTC offset
is a wall-clock time in the session time zone (``spark.sql.session.timeZone``).
:func:`pin_zone` attaches that zone before resolving; where the zone cannot be known
(Spark gives Python data sources no session conf) it resolves the value at both extreme
UTC offsets (+14:00 and -12:00) and refuses, naming the ``timeZone`` option, when the
answer could depend on the zone. Core functions on their own (no session) read such
values in UTC. Naive ``datetime`` objects are the Python process's local time, as
pyspark converts them (``TimestampType.toInternal``), so a timestamp collected from a
DataFrame resolves to the instant it came from.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable
from typing import Any

from delta_pyds.errors import OptionValueError, TimestampParseError, VersionNotFoundError
from delta_pyds.log.files import LogFile
from delta_pyds.log.segment import build_log_segment, complete_checkpoints, list_log
from delta_pyds.log.table_metadata import read_table_metadata
from delta_pyds.protocol import features
from delta_pyds.protocol.actions import first_action, parse_special_lines
from delta_pyds.storage.store import Storage


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
        raise TimestampParseError(
            f"timestampAsOf: {value!r} is not a timestamp; use e.g. "
            "'2024-01-31', '2024-01-31 12:00:00' or an ISO-8601 timestamp"
        ) from None
    return parse_timestamp(parsed)


SESSION_TIME_ZONE = "spark.sql.session.timeZone"
# civil UTC offsets lie between these (Pacific/Kiritimati, Etc/GMT+12): a wall-clock time
# read in any zone is an instant in [value - 14 h, value + 12 h]
_EXTREME_ZONES = ("+14:00", "-12:00")
_OFFSET_RE = re.compile(r"^(?:UTC|GMT|UT)?\s*([+-])(\d{1,2})(?::?(\d{2}))?(?::?(\d{2}))?$", re.IGNORECASE)


def time_zone(name: str, *, option: str = "timeZone") -> dt.tzinfo:
    """A zone as Spark names them: a region (``Europe/Paris``), ``UTC``/``Z``, or an offset
    (``+02:00``, ``-0530``, ``GMT+8``)."""
    text = str(name).strip()
    if text.upper() in ("UTC", "Z", "GMT", "UT", "ETC/UTC", "ETC/GMT"):
        return dt.timezone.utc
    m = _OFFSET_RE.match(text)
    if m:
        sign, hours, minutes, seconds = m.groups()
        delta = dt.timedelta(hours=int(hours), minutes=int(minutes or 0), seconds=int(seconds or 0))
        if delta <= dt.timedelta(hours=18):
            return dt.timezone(-delta if sign == "-" else delta)
    try:
        from zoneinfo import ZoneInfo

        return ZoneInfo(text)
    except Exception:
        raise OptionValueError(
            f"option {option}: {name!r} is not a time zone; use a region such as "
            "'Europe/Paris', 'UTC' or an offset such as '+02:00'"
        ) from None


def needs_zone(value: Any) -> bool:
    """Whether ``value`` is a wall-clock time (string or date without a UTC offset)."""
    if isinstance(value, dt.datetime) or isinstance(value, (int, float)):
        return False
    if isinstance(value, dt.date):
        return True
    try:
        parsed = dt.datetime.fromisoformat(str(value).strip().replace("Z", "+00:00"))
    except ValueError:
        return False  # not a timestamp: parse_timestamp reports it
    return parsed.tzinfo is None


def localize(value: Any, zone: str | dt.tzinfo) -> Any:
    """``value`` with ``zone`` attached when it is a wall-clock time (see :func:`needs_zone`);
    naive ``datetime`` objects become aware in the process's local time; others unchanged."""
    if isinstance(value, dt.datetime):
        return value if value.tzinfo is not None else value.astimezone()
    if not needs_zone(value):
        return value
    tz = zone if isinstance(zone, dt.tzinfo) else time_zone(zone)
    if isinstance(value, dt.date):
        return dt.datetime(value.year, value.month, value.day, tzinfo=tz)
    return dt.datetime.fromisoformat(str(value).strip()).replace(tzinfo=tz)


def pin_zone(value: Any, *, zone: str | None, resolve: Callable[[Any], Any], option: str) -> Any:
    """``value`` with an explicit zone, for ``resolve`` (a monotone timestamp -> version
    function) to take: ``zone`` is the session time zone, or None when it cannot be known;
    then a wall-clock ``value`` is accepted only if ``resolve`` gives the same version at both
    extreme UTC offsets (or raises at both and in UTC), else ``ValueError`` names the
    ``timeZone`` option. Every answer is then the one of every zone, or an error."""
    if zone is not None:
        return localize(value, zone)
    if not needs_zone(value):
        return localize(value, dt.timezone.utc)
    outcomes = []
    for offset in _EXTREME_ZONES:
        try:
            outcomes.append(("ok", resolve(localize(value, offset))))
        except VersionNotFoundError:
            outcomes.append(("error", None))
    if outcomes[0] == outcomes[1] == ("error", None):
        # before the first commit at one end and maybe after the last at the other: an error
        # in UTC is the answer (an error is never wrong data), a version is not
        try:
            resolve(localize(value, dt.timezone.utc))
        except VersionNotFoundError:
            return localize(value, dt.timezone.utc)
        outcomes[0] = ("ok", None)
    if outcomes[0] != outcomes[1]:
        shown = ", ".join(
            f"{'no version' if o[0] == 'error' else 'version ' + str(o[1])} if read at UTC{z}"
            for o, z in zip(outcomes, _EXTREME_ZONES)
            if o[1] is not None
        )
        shown = shown or "a version in UTC, none at UTC+14:00 or UTC-12:00"
        raise OptionValueError(
            f"option {option}: {value!r} has no UTC offset, so (as in delta-spark) it is a time in the "
            f"session time zone {SESSION_TIME_ZONE}, which Spark does not pass to Python data sources; "
            f"here the version depends on the zone ({shown}). Give the offset "
            f"('{value}Z', '{value}+02:00') or the zone with .option('timeZone', 'Europe/Paris')"
        )
    return localize(value, dt.timezone.utc)


def commit_timestamps(storage: Storage, commits: list[LogFile]) -> list[int]:
    """Timestamps (ms) of ``commits`` (ascending versions), monotonised."""
    if not commits:
        return []
    latest = build_log_segment(storage, version=commits[-1].version)
    state = read_table_metadata(storage, latest)
    features.check_read(state.protocol)
    conf = state.metadata.configuration
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
                raise VersionNotFoundError(
                    f"commit {c.version} has no inCommitTimestamp although in-commit timestamps are enabled"
                )
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
            f"(committed at {first})"
        )
    if chosen == commits[-1].version and stamps[-1] < target:
        last = dt.datetime.fromtimestamp(stamps[-1] / 1000, dt.timezone.utc).isoformat()
        raise VersionNotFoundError(
            f"timestampAsOf {human} is after the latest version {chosen} (committed at {last}); "
            "use a timestamp at or before it, or read the latest version without timestampAsOf"
        )
    return chosen
