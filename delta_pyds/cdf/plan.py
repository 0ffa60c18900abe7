"""Change data feed planning: which files of which versions hold which row changes.

The protocol's rule for one version (PROTOCOL.md, "Add CDC File"): when the commit has
``cdc`` actions, its changes are exactly the rows of those change data files (each row
carries its ``_change_type``); otherwise the rows of its ``add`` actions are inserts and
those of its ``remove`` actions deletes, counting only actions with ``dataChange=true``.

Guarantees of :func:`version_changes` (one version, as delta-spark and delta-kernel-rs
compute it):

* a file added with no remove of the same path reads as inserts, minus the rows of its
  own deletion vector; a file removed with no add of the same path reads as deletes,
  minus the rows its deletion vector had already deleted;
* a file removed and re-added in the same commit (a deletion vector changed) yields
  deletes for the rows in the new vector but not the old one, and inserts for the rows
  in the old vector but not the new one (restores); nothing when neither has a vector;
* a MERGE whose ``commitInfo`` metrics report no row inserted, updated or deleted yields
  nothing (delta-spark's guard against no-op rewrites).

Guarantees of :func:`plan_changes` (a version range): the range is checked before any
data is read — it must exist in the log, change data feed must be enabled
(``delta.enableChangeDataFeed=true``) at the starting version and never turned off inside
the range, every protocol in it must be readable, and under column mapping no column of
the read schema may be renamed or dropped inside it. A violation raises a
:class:`ChangeDataError` (or :class:`VersionNotFoundError` for commits gone from the log)
that names the version. The read schema is the table schema at the ending version.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from delta_pyds.errors import ChangeDataError, OptionValueError, UnsupportedFeatureError, VersionNotFoundError
from delta_pyds.log.commits import Commit, CommitLog, FileAction
from delta_pyds.protocol import features
from delta_pyds.protocol.actions import Metadata, Protocol
from delta_pyds.protocol.schema import COLUMN_MAPPING_PHYSICAL_NAME, StructField, StructType, parse_schema
from delta_pyds.storage.store import Storage
from delta_pyds.table.snapshot import Snapshot

CHANGE_TYPE = "_change_type"
COMMIT_VERSION = "_commit_version"
COMMIT_TIMESTAMP = "_commit_timestamp"
CDF_COLUMNS = (CHANGE_TYPE, COMMIT_VERSION, COMMIT_TIMESTAMP)
CDF_ENABLED = "delta.enableChangeDataFeed"


@dataclass(frozen=True)
class ChangeFile:
    """One file to read for change data, and which of its rows are changes.

    Rows read: when ``selected`` is None, every row except those of ``deletion_vector``;
    otherwise the rows of the ``selected`` deletion vector that are not in ``excluded``
    (``deletion_vector`` is then ignored)."""

    path: str
    size: int
    partition_values: tuple  # serialized, physical partition column order
    change_type: str | None  # "insert" | "delete"; None for a cdc file (rows carry it)
    version: int
    timestamp: int  # milliseconds
    deletion_vector: dict | None = None
    selected: dict | None = None
    excluded: dict | None = None


def cdf_enabled(metadata: Metadata) -> bool:
    return str(metadata.configuration.get(CDF_ENABLED, "false")).strip().lower() == "true"


def is_noop_merge(commit_info: dict | None) -> bool:
    if not commit_info or commit_info.get("operation") != "MERGE":
        return False
    metrics = commit_info.get("operationMetrics") or {}
    return all(
        str(metrics.get(k)) == "0" for k in ("numTargetRowsInserted", "numTargetRowsUpdated", "numTargetRowsDeleted")
    )


def version_changes(
    version: int, timestamp: int, actions: Sequence[FileAction], commit_info: dict | None = None
) -> list[ChangeFile]:
    """The change files of one version from (a subset of) its file actions."""
    cdcs = [a for a in actions if a.kind == "cdc"]
    if cdcs:
        return [ChangeFile(a.path, a.size, a.partition_values, None, version, timestamp) for a in cdcs]
    if is_noop_merge(commit_info):
        return []
    adds = {a.path: a for a in actions if a.kind == "add" and a.data_change}
    removes = {a.path: a for a in actions if a.kind == "remove" and a.data_change}
    out: list[ChangeFile] = []
    for a in actions:
        if not a.data_change or a.kind not in ("add", "remove"):
            continue
        if a.kind == "add" and adds.get(a.path) is not a or a.kind == "remove" and removes.get(a.path) is not a:
            continue  # a later action for the same path wins
        other = removes.get(a.path) if a.kind == "add" else adds.get(a.path)
        if other is None:
            out.append(
                ChangeFile(
                    a.path,
                    a.size,
                    a.partition_values,
                    "insert" if a.kind == "add" else "delete",
                    version,
                    timestamp,
                    deletion_vector=a.deletion_vector,
                )
            )
            continue
        if a.kind == "remove":
            continue  # the pair is handled once, at its add
        out.extend(_dv_pair_changes(a, other, version, timestamp))
    return out


def _dv_pair_changes(a: FileAction, other: FileAction, version: int, timestamp: int) -> list[ChangeFile]:
    """The changes of an add and a remove of the same file in one version: the rows its new
    deletion vector deletes and the old one did not, and the rows the old one deleted that
    the new one restores (none when both vectors are the same)."""
    out: list[ChangeFile] = []
    add_dv, remove_dv = a.deletion_vector, other.deletion_vector
    if add_dv is not None and (remove_dv is None or _dv_id(add_dv) != _dv_id(remove_dv)):
        # rows deleted by the new vector and not by the old one
        out.append(
            ChangeFile(
                a.path,
                a.size,
                a.partition_values,
                "delete",
                version,
                timestamp,
                selected=add_dv,
                excluded=remove_dv,
            )
        )
    if remove_dv is not None and (add_dv is None or _dv_id(add_dv) != _dv_id(remove_dv)):
        # rows the old vector deleted that the new one restores
        out.append(
            ChangeFile(
                a.path,
                a.size,
                a.partition_values,
                "insert",
                version,
                timestamp,
                selected=remove_dv,
                excluded=add_dv,
            )
        )
    return out


def _dv_id(dv: dict) -> tuple:
    return (dv.get("storageType"), dv.get("pathOrInlineDv"), dv.get("offset"))


# ------------------------------------------------------------------ range planning
@dataclass
class ChangePlan:
    start: int
    end: int  # inclusive; end == start - 1 for an empty range
    snapshot: Snapshot | None  # the read schema's snapshot (ending version)
    files: list[ChangeFile]


def check_cdf_enabled(metadata: Metadata, version: int, start: int, end: int) -> None:
    if not cdf_enabled(metadata):
        raise ChangeDataError(
            f"change data was not recorded for version {version} (requested versions {start} to "
            f"{end}): the table property {CDF_ENABLED} was not true at that version. Read only "
            "versions where it was enabled (ALTER TABLE ... SET TBLPROPERTIES "
            f"({CDF_ENABLED} = true) records changes from then on)"
        )


def check_cdf_protocol(protocol: Protocol, version: int) -> None:
    try:
        features.check_read(protocol)
    except UnsupportedFeatureError as exc:
        raise UnsupportedFeatureError(f"cannot read change data of version {version}: {exc}", exc.features) from None


def check_schema_compatible(
    read_schema: StructType, read_mode: str, metadata: Metadata, version: int, *, read_partition_columns: Sequence[str]
) -> None:
    """Refuses a schema at ``version`` that files of the range cannot be read with under
    ``read_schema``: other partition columns, or (column mapping) a column of the read
    schema whose physical name differs there (renamed or dropped and re-added)."""
    if [c.lower() for c in metadata.partition_columns] != [c.lower() for c in read_partition_columns]:
        raise ChangeDataError(
            f"the partition columns changed at version {version} ({list(metadata.partition_columns)} "
            f"vs {list(read_partition_columns)}); read the versions before and after separately"
        )
    if read_mode not in ("name", "id"):
        return
    other = parse_schema(metadata.schema_string)
    for f in other.fields:
        target = read_schema.get(f.name)
        if target is None:
            if any(_physical(t) == _physical(f) for t in read_schema.fields):
                raise ChangeDataError(
                    f"column {f.name!r} was renamed at or after version {version}; change data "
                    "across a column rename cannot be read with one schema: read the versions "
                    "before and after the rename separately"
                )
            continue
        if _physical(target) != _physical(f):
            raise ChangeDataError(
                f"column {f.name!r} was dropped and re-created (or renamed) at or after version "
                f"{version}; read the versions before and after that change separately"
            )


def _physical(f: StructField) -> str:
    return f.metadata.get(COLUMN_MAPPING_PHYSICAL_NAME) or f.name


def plan_changes(storage: Storage, *, start: int, end: int | None = None, log: CommitLog | None = None) -> ChangePlan:
    """Plans the change files of versions ``start``..``end`` (inclusive; ``end`` defaults
    to, and is capped at, the latest version)."""
    log = log or CommitLog(storage)
    if end is not None and end == start - 1:
        return ChangePlan(start, end, None, [])
    latest = log.latest_version
    if start < 0:
        raise OptionValueError(f"option startingVersion: expected a version >= 0, got {start}")
    if start > latest:
        raise VersionNotFoundError(f"startingVersion {start} is after the latest version of the table ({latest})")
    end = latest if end is None else min(end, latest)
    if end < start:
        raise OptionValueError(
            f"options startingVersion/endingVersion: the ending version {end} is before the starting version {start}"
        )
    for v in range(start, end + 1):  # fail before reading anything if a commit is gone
        log.require(v)
    start_snapshot = Snapshot.load(storage, version=start)
    read_snapshot = start_snapshot if end == start else Snapshot.load(storage, version=end)
    check_cdf_enabled(start_snapshot.metadata, start, start, end)
    read_schema, mode = read_snapshot.schema, read_snapshot.column_mapping_mode
    check_schema_compatible(
        read_schema, mode, start_snapshot.metadata, start, read_partition_columns=read_snapshot.partition_columns
    )
    # commit `start` either has its own metaData or keeps the one of version start - 1,
    # which is then the metadata of version `start`
    metadata, protocol = start_snapshot.metadata, start_snapshot.protocol
    files: list[ChangeFile] = []
    for v in range(start, end + 1):
        commit = log.read(v, metadata, protocol)
        if commit.protocol is not None:
            check_cdf_protocol(commit.protocol, v)
            protocol = commit.protocol
        if commit.metadata is not None:
            metadata = commit.metadata
            check_cdf_enabled(metadata, v, start, end)
            if v > start:
                check_schema_compatible(
                    read_schema, mode, metadata, v, read_partition_columns=read_snapshot.partition_columns
                )
        files.extend(commit_changes(commit))
    return ChangePlan(start, end, read_snapshot, files)


def commit_changes(commit: Commit) -> list[ChangeFile]:
    return version_changes(commit.version, commit.timestamp, commit.actions, commit.commit_info)


def resolve_range(
    log: CommitLog,
    *,
    starting_version: int | None = None,
    starting_timestamp: Any = None,
    ending_version: int | None = None,
    ending_timestamp: Any = None,
) -> tuple[int, int]:
    """(start, end) versions for the change data feed options, as delta-spark resolves them:
    a starting timestamp picks the first commit at or after it, an ending timestamp the
    last at or before it, an ending version past the latest is capped. Two timestamps
    between the same pair of commits give an empty range (end == start - 1)."""
    if starting_timestamp is not None:
        start = log.version_at_or_after(starting_timestamp)
    elif starting_version is not None:
        start = starting_version
    else:
        raise OptionValueError("option startingVersion or startingTimestamp is required to read the change data feed")
    if start > log.latest_version:
        raise VersionNotFoundError(
            f"startingVersion {start} is after the latest version of the table ({log.latest_version})"
        )
    if ending_timestamp is not None:
        end = log.version_at_or_before(ending_timestamp)
        if starting_timestamp is not None:
            from delta_pyds.log.time_travel import parse_timestamp

            if parse_timestamp(starting_timestamp) > parse_timestamp(ending_timestamp):
                raise OptionValueError(
                    "options startingTimestamp/endingTimestamp: the ending timestamp is before the starting timestamp"
                )
            if end == start - 1:
                return start, end
    elif ending_version is not None:
        end = min(ending_version, log.latest_version)
    else:
        end = log.latest_version
    if end < start:
        raise OptionValueError(
            f"options starting/ending version or timestamp: the ending version {end} "
            f"is before the starting version {start}"
        )
    return start, end


def pack(files: Sequence, *, max_partition_bytes: int, open_cost: int, parallelism: int | None = None) -> list[list]:
    """Bin-packs files (anything with a ``size``: ChangeFiles, FileTasks) into groups the
    way scans pack data files (largest first, a group closes before it would exceed the
    split size); every file lands in exactly one group."""
    from delta_pyds.read.scan import split_size

    if not files:
        return []
    split = split_size(
        sum(f.size for f in files),
        len(files),
        max_partition_bytes=max_partition_bytes,
        open_cost=open_cost,
        parallelism=parallelism,
    )
    groups: list[list[ChangeFile]] = []
    current: list[ChangeFile] = []
    current_size = 0
    for f in sorted(files, key=lambda f: -f.size):
        if current and current_size + f.size > split:
            groups.append(current)
            current, current_size = [], 0
        current.append(f)
        current_size += f.size + open_cost
    groups.append(current)
    return groups
