"""The log read commit by commit: the actions of each table version, in log order.

Change data feed and streaming read a table's history version by version instead of
replaying it into a snapshot. This module lists the commit files once and parses one
commit at a time.

Guarantees:

* :class:`CommitLog` lists ``_delta_log`` once; ``latest_version`` is the newest
  version with a commit file or checkpoint. ``read(v)`` raises
  :class:`VersionNotFoundError` when commit ``v`` is not in the log (never written, or
  removed by log cleanup) with a message naming the earliest commit still present.
* :meth:`CommitLog.read` returns a :class:`Commit`: its file actions (``add``,
  ``remove``, ``cdc``) in the order of the commit's lines, paths URI-decoded and
  partition values as serialized strings in the physical partition column order of the
  metadata and protocol in effect (the commit's own ``metaData`` / ``protocol`` if it has
  them, else the ones given; the column mapping mode by the scan's rule),
  plus its ``protocol``, ``metaData`` and ``commitInfo`` actions.
* A commit's timestamp is its in-commit timestamp (``commitInfo.inCommitTimestamp``)
  when it has one, else the commit file's modification time made strictly increasing
  over the listed commits (as delta-spark monotonizes them).
* Versions for timestamps follow delta-spark's change data feed: a starting timestamp
  resolves to the first commit at or after it, an ending timestamp to the last commit at
  or before it (:func:`time_travel.commit_timestamps` gives the timestamps, so they
  agree with ``timestampAsOf``).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from delta_pyds.errors import CorruptLogError, TimestampParseError, VersionNotFoundError
from delta_pyds.log.files import LogFile
from delta_pyds.log.segment import list_log
from delta_pyds.protocol import features
from delta_pyds.protocol.actions import Metadata, Protocol, json_actions_schema, parse_special_lines, read_json_actions
from delta_pyds.protocol.paths import canonical
from delta_pyds.protocol.schema import parse_schema
from delta_pyds.storage.store import Storage

_SPECIAL_KEYS = [b'"protocol"', b'"metaData"', b'"commitInfo"']


@dataclass(frozen=True)
class FileAction:
    """One add, remove or cdc action of a commit."""

    kind: str  # "add" | "remove" | "cdc"
    path: str  # URI-decoded, relative to the table root or absolute
    size: int
    partition_values: tuple[str | None, ...]  # serialized values (None = null), physical partition column order
    data_change: bool
    deletion_vector: dict[str, Any] | None = None  # the log's descriptor (camelCase keys)
    modification_time: int = 0
    base_row_id: int | None = None
    default_row_commit_version: int | None = None


@dataclass
class Commit:
    """The actions of one commit file."""

    version: int
    timestamp: int  # milliseconds since the epoch
    actions: list[FileAction] = field(default_factory=list)
    protocol: Protocol | None = None
    metadata: Metadata | None = None
    commit_info: dict[str, Any] | None = None

    @property
    def adds(self) -> list[FileAction]:
        return [a for a in self.actions if a.kind == "add"]

    @property
    def removes(self) -> list[FileAction]:
        return [a for a in self.actions if a.kind == "remove"]

    @property
    def cdcs(self) -> list[FileAction]:
        return [a for a in self.actions if a.kind == "cdc"]


def physical_partition_columns(metadata: Metadata, protocol: Protocol) -> list[str]:
    """The keys of ``partitionValues`` under ``metadata`` and ``protocol`` (physical names
    with column mapping, by the rule every reader applies:
    :func:`delta_pyds.protocol.features.column_mapping_mode`)."""
    if not metadata.partition_columns:
        return []
    mode = features.column_mapping_mode(protocol, metadata.configuration)
    schema = parse_schema(metadata.schema_string)
    out = []
    for name in metadata.partition_columns:
        f = schema.get(name)
        if f is None:
            raise CorruptLogError(f"partition column {name!r} is not in the table schema")
        out.append(f.physical_name(mode) if mode in ("name", "id") else f.name)
    return out


class CommitLog:
    """The commit files of one table, listed once."""

    def __init__(self, storage: Storage, *, listing: list[LogFile] | None = None):
        self.storage = storage
        files = list_log(storage) if listing is None else listing
        self.listing = files
        self.commits: dict[int, LogFile] = {f.version: f for f in files if f.kind == "commit"}
        versions = [f.version for f in files if f.kind in ("commit", "checkpoint")]
        if not versions:
            from delta_pyds.log.segment import build_log_segment

            build_log_segment(storage, listing=files)  # raises the right "no table" error
        self.latest_version = max(versions)
        self._mtimes = _monotonized({v: f.modification_time for v, f in self.commits.items()})

    @property
    def earliest_commit(self) -> int | None:
        return min(self.commits) if self.commits else None

    def require(self, version: int) -> LogFile:
        f = self.commits.get(version)
        if f is None:
            if version > self.latest_version:
                raise VersionNotFoundError(
                    f"version {version} does not exist yet: the latest version of the table at "
                    f"{self.storage.root} is {self.latest_version}"
                )
            earliest = self.earliest_commit
            raise VersionNotFoundError(
                f"commit {version} of the table at {self.storage.root} is no longer in the log "
                f"(removed by log cleanup); the earliest commit still available is {earliest}"
            )
        return f

    def timestamp(self, version: int, commit_info: dict[str, Any] | None = None) -> int:
        """Milliseconds: the in-commit timestamp if ``commit_info`` has one, else the
        monotonized modification time of the commit file."""
        if commit_info and commit_info.get("inCommitTimestamp") is not None:
            return int(commit_info["inCommitTimestamp"])
        if version in self._mtimes:
            return self._mtimes[version]
        # a version known only from its checkpoint (its commit was cleaned up)
        return max((f.modification_time for f in self.listing if f.version == version), default=0)

    def read(self, version: int, metadata: Metadata | None, protocol: Protocol) -> Commit:
        """The actions of commit ``version``; ``metadata`` and ``protocol`` are the ones in
        effect before it (they decide the partition value keys unless the commit changes them)."""
        f = self.require(version)
        try:
            data = self.storage.read_bytes(f.path, size=f.size)
        except FileNotFoundError:
            raise VersionNotFoundError(
                f"commit {version} of the table at {self.storage.root} vanished while reading (log cleanup?)"
            ) from None
        return parse_commit(
            data,
            version=version,
            metadata=metadata,
            protocol=protocol,
            source=f.path,
            timestamp_of=lambda info: self.timestamp(version, info),
            root=self.storage.root,
        )

    # -------------------------------------------------------------- timestamps
    def _commit_timestamps(self) -> tuple[list[int], list[int]]:
        from delta_pyds.log.time_travel import commit_timestamps

        commits = [self.commits[v] for v in sorted(self.commits)]
        return [c.version for c in commits], commit_timestamps(self.storage, commits)

    def version_at_or_after(self, timestamp: Any, *, option: str = "startingTimestamp") -> int:
        """The first version committed at or after ``timestamp``."""
        from delta_pyds.log.time_travel import parse_timestamp

        target = _parse(timestamp, option, parse_timestamp)
        versions, stamps = self._commit_timestamps()
        for v, ts in zip(versions, stamps):
            if ts >= target:
                return v
        raise VersionNotFoundError(
            f"{option} {_human(target)} is after the latest commit (version {versions[-1]}, "
            f"committed at {_human(stamps[-1])})"
        )

    def version_at_or_before(self, timestamp: Any, *, option: str = "endingTimestamp") -> int:
        """The last version committed at or before ``timestamp`` (-1 if none is)."""
        from delta_pyds.log.time_travel import parse_timestamp

        target = _parse(timestamp, option, parse_timestamp)
        versions, stamps = self._commit_timestamps()
        chosen = -1
        for v, ts in zip(versions, stamps):
            if ts <= target:
                chosen = v
            else:
                break
        return chosen


def parse_commit(
    data: bytes,
    *,
    version: int,
    metadata: Metadata | None,
    protocol: Protocol,
    source: str = "",
    timestamp_of: Callable[[dict[str, Any] | None], int] | None = None,
    root: str,
) -> Commit:
    """Parses the bytes of one commit file (see :meth:`CommitLog.read`); file action
    paths are canonical for the table at ``root`` (:func:`delta_pyds.protocol.paths.canonical`)."""
    commit = Commit(version=version, timestamp=0)
    for obj in parse_special_lines(data, _SPECIAL_KEYS, source=source):
        if isinstance(obj.get("protocol"), dict):
            commit.protocol = Protocol.from_dict(obj["protocol"], source=source)
        if isinstance(obj.get("metaData"), dict):
            commit.metadata = Metadata.from_dict(obj["metaData"], source=source)
        if isinstance(obj.get("commitInfo"), dict):
            commit.commit_info = obj["commitInfo"]
    effective = commit.metadata or metadata
    pcols = physical_partition_columns(effective, commit.protocol or protocol) if effective is not None else []
    table = read_json_actions(data, json_actions_schema(pcols, data), source=source)
    commit.actions = _file_actions(table, pcols, root)
    commit.timestamp = timestamp_of(commit.commit_info) if timestamp_of is not None else 0
    return commit


def _file_actions(table: pa.Table, pcols: list[str], root: str) -> list[FileAction]:
    found: list[tuple[int, FileAction]] = []
    for kind in ("add", "remove", "cdc"):
        if kind not in table.column_names:
            continue
        col = table.column(kind)
        mask = pc.is_valid(col)
        positions = np.flatnonzero(mask.to_numpy(zero_copy_only=False))
        if not len(positions):
            continue
        for pos, row in zip(positions.tolist(), col.filter(mask).to_pylist()):
            if row.get("path") is None:
                raise CorruptLogError(f"a {kind} action has no path")
            path = row["path"]
            pv = row.get("partitionValues") or {}
            found.append(
                (
                    pos,
                    FileAction(
                        kind=kind,
                        path=canonical(path, root),
                        size=int(row.get("size") or 0),
                        partition_values=tuple(pv.get(c) for c in pcols),
                        data_change=bool(row.get("dataChange")) if row.get("dataChange") is not None else kind != "cdc",
                        deletion_vector=row.get("deletionVector"),
                        modification_time=int(row.get("modificationTime") or 0),
                        base_row_id=row.get("baseRowId"),
                        default_row_commit_version=row.get("defaultRowCommitVersion"),
                    ),
                )
            )
    found.sort(key=lambda p: p[0])
    return [a for _, a in found]


def _monotonized(mtimes: dict[int, int]) -> dict[int, int]:
    out, prev = {}, None
    for v in sorted(mtimes):
        ts = mtimes[v]
        if prev is not None and ts <= prev:
            ts = prev + 1
        out[v] = ts
        prev = ts
    return out


def _parse(value: Any, option: str, parse: Callable[[Any], int]) -> int:
    try:
        return parse(value)
    except ValueError:
        raise TimestampParseError(
            f"option {option}: {value!r} is not a timestamp; use e.g. '2024-01-31', "
            "'2024-01-31 12:00:00' or an ISO-8601 timestamp"
        ) from None


def _human(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, dt.timezone.utc).isoformat()
