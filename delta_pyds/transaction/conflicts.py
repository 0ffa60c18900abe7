"""Deciding whether commits that won a race logically conflict with a transaction.

The rules follow delta-spark's ``ConflictChecker`` for the ``WriteSerializable``
isolation level (``Serializable`` when the table says so):

* a protocol or metadata change by a winner always conflicts;
* files a winner added conflict only if the transaction read data they could belong
  to (its read predicates: the whole table for an overwrite, the predicate of a
  ``replaceWhere``, the partitions of a dynamic partition overwrite) — and, under
  WriteSerializable, only if the winner was not a blind append or the transaction
  changes the table's metadata (``metadataChanged`` in delta-spark: ``REPLACE TABLE``,
  an overwrite that changes the schema, a MERGE that evolves it): a ``REPLACE`` over a
  concurrent blind append fails (:class:`ConcurrentAppendError`,
  ``DELTA_CONCURRENT_APPEND``) rather than keep the appended rows of the old table; a
  blind append itself (read nothing, removed nothing) never conflicts with anything but
  protocol/metadata changes (:class:`MetadataChangedError`), and concurrent appends
  just move to the next version;
* files a winner removed conflict if the transaction read or removed them;
* the same application transaction id (``txn``) or the same metadata domain
  changed by both conflicts (an idempotent write whose id a winner already recorded
  with a version >= ours is reported as already committed instead);
* row tracking high-water marks and in-commit timestamps are rebased, never conflicts.

Guarantees: :func:`check` returns a :class:`Rebase` (what to update before retrying)
or raises :class:`ConcurrentModificationError` whose message names the winning
version and the reason.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from delta_pyds.errors import ConcurrentAppendError, ConcurrentModificationError, CorruptLogError, MetadataChangedError
from delta_pyds.protocol.paths import canonical

ROW_TRACKING_DOMAIN = "delta.rowTracking"


@dataclass
class WinningCommit:
    """The actions of one commit that won a race, reduced to what conflicts need."""

    version: int
    protocol: dict | None = None
    metadata: dict | None = None
    commit_info: dict | None = None
    adds: list = field(default_factory=list)  # {"path", "partitionValues", "dataChange"}
    removes: list = field(default_factory=list)  # {"path", "dataChange"}
    txns: dict = field(default_factory=dict)  # appId -> version
    domains: dict = field(default_factory=dict)  # domain -> (configuration, removed)

    @classmethod
    def parse(cls, version: int, data: bytes) -> WinningCommit:
        out = cls(version)
        for number, line in enumerate(data.splitlines(), 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except ValueError:
                raise CorruptLogError(f"line {number} of commit {version} is not valid JSON") from None
            if not isinstance(obj, dict):
                continue
            if "add" in obj and obj["add"]:
                a = obj["add"]
                out.adds.append(
                    {
                        "path": a.get("path"),
                        "partitionValues": a.get("partitionValues") or {},
                        "dataChange": a.get("dataChange", True),
                    }
                )
            elif "remove" in obj and obj["remove"]:
                r = obj["remove"]
                out.removes.append({"path": r.get("path"), "dataChange": r.get("dataChange", True)})
            elif obj.get("commitInfo") is not None:
                out.commit_info = obj["commitInfo"]
            elif obj.get("protocol") is not None:
                out.protocol = obj["protocol"]
            elif obj.get("metaData") is not None:
                out.metadata = obj["metaData"]
            elif obj.get("txn") is not None:
                t = obj["txn"]
                out.txns[t.get("appId")] = int(t.get("version") or 0)
            elif obj.get("domainMetadata") is not None:
                d = obj["domainMetadata"]
                out.domains[d.get("domain")] = (d.get("configuration"), bool(d.get("removed")))
        return out

    @property
    def is_blind_append(self) -> bool:
        info = self.commit_info or {}
        if info.get("isBlindAppend") is True:
            return True
        # no provenance: a commit with only adds (nothing removed, no metadata) is treated
        # as an append only if every add changes data; otherwise it might be a rewrite
        return False

    @property
    def in_commit_timestamp(self) -> int | None:
        value = (self.commit_info or {}).get("inCommitTimestamp")
        return int(value) if value is not None else None

    @property
    def row_id_high_water_mark(self) -> int | None:
        entry = self.domains.get(ROW_TRACKING_DOMAIN)
        if not entry or entry[1] or not entry[0]:
            return None
        try:
            return int(json.loads(entry[0])["rowIdHighWaterMark"])
        except (ValueError, KeyError, TypeError):
            return None


@dataclass
class ReadSet:
    """What a transaction read, for conflict detection."""

    whole_table: bool = False
    # partition predicates: callables taking a list of partitionValues dicts and
    # returning one bool per entry (True: a file there could have been read)
    predicates: list = field(default_factory=list)
    paths: set = field(default_factory=set)  # decoded paths of files read (and removed)
    descriptions: list = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not (self.whole_table or self.predicates or self.paths)


@dataclass
class Rebase:
    """What a retry must take over from the winners."""

    latest_version: int
    row_id_high_water_mark: int | None = None
    in_commit_timestamp: int | None = None
    already_committed: bool = False  # an idempotent write some winner recorded
    table_created_by_winner: dict | None = None  # winner's metaData when both created the table


def check(
    winners: Sequence[WinningCommit],
    *,
    read: ReadSet,
    removed_paths: set,
    app_id: str | None,
    app_version: int | None,
    domains: set,
    serializable: bool,
    creating: bool,
    accept_created: Callable[[dict, dict], bool] | None = None,
    root: str,
    metadata_changed: bool = False,
) -> Rebase:
    """Raises ConcurrentModificationError if a winner conflicts; else how to rebase.
    ``read.paths`` and ``removed_paths`` hold canonical paths of the table at ``root``;
    ``metadata_changed``: this transaction changes the table's metadata (then a winner's
    blind append counts against what it read, as under Serializable)."""
    rebase = Rebase(latest_version=max(w.version for w in winners))
    for w in winners:
        op = (w.commit_info or {}).get("operation")
        where = f"a concurrent commit (version {w.version}" + (f", {op})" if op else ")")
        if creating and w.metadata is not None and w.version == min(x.version for x in winners):
            if accept_created is not None and accept_created(w.metadata, w.protocol or {}):
                rebase.table_created_by_winner = w.metadata
                creating = False
                continue
            raise ConcurrentModificationError(f"the table was created by {where} while this write was creating it")
        if w.protocol is not None:
            raise ConcurrentModificationError(f"the protocol of the table was changed by {where}; retry the write")
        if w.metadata is not None:
            raise MetadataChangedError(
                f"the metadata (schema, partitioning or properties) of the table was changed by "
                f"{where}; retry the write (delta-spark: MetadataChangedException, DELTA_METADATA_CHANGED)"
            )
        if app_id is not None and app_id in w.txns:
            if app_version is not None and w.txns[app_id] >= app_version:
                rebase.already_committed = True
            else:
                raise ConcurrentModificationError(f"application transaction {app_id!r} was committed by {where}")
        for domain in domains:
            if domain in w.domains and domain != ROW_TRACKING_DOMAIN:
                raise ConcurrentModificationError(f"metadata domain {domain!r} was changed by {where}")
        if not read.empty:
            _check_read_set(
                w, where, read, removed_paths, blind_appends_count=serializable or metadata_changed, root=root
            )
        hwm = w.row_id_high_water_mark
        if hwm is not None:
            rebase.row_id_high_water_mark = max(hwm, rebase.row_id_high_water_mark or -1)
        ict = w.in_commit_timestamp
        if ict is not None:
            rebase.in_commit_timestamp = max(ict, rebase.in_commit_timestamp or 0)
    return rebase


def _check_read_set(
    w: WinningCommit, where: str, read: ReadSet, removed_paths: set, *, blind_appends_count: bool, root: str
) -> None:
    """Raises when the winner ``w`` added files to what this transaction read (any file
    when it read the whole table, else files in the partitions its predicates match;
    blind appends count only when ``blind_appends_count``: under Serializable, or when
    this transaction changes the metadata) or removed a file it read or removed."""
    candidates = (
        [a for a in w.adds if a.get("dataChange", True)] if (blind_appends_count or not w.is_blind_append) else []
    )
    if candidates:
        if read.whole_table:
            raise ConcurrentAppendError(
                f"files were added to the table by {where} while this write was replacing "
                "the data it read; retry the write (delta-spark: ConcurrentAppendException, "
                "DELTA_CONCURRENT_APPEND)"
            )
        hits = [False] * len(candidates)
        for pred in read.predicates:
            matched = pred([a["partitionValues"] for a in candidates])
            hits = [h or m for h, m in zip(hits, matched)]
        if any(hits):
            raise ConcurrentAppendError(
                f"files were added by {where} to partitions this write read "
                f"({'; '.join(read.descriptions) or 'its predicate'}); retry the write "
                "(delta-spark: ConcurrentAppendException, DELTA_CONCURRENT_APPEND)"
            )
    touched = {canonical(r["path"], root) for r in w.removes if r.get("path")}
    lost = touched & (read.paths | removed_paths)
    if lost:
        raise ConcurrentModificationError(
            f"{len(lost)} file(s) this write read or removed were removed by {where} "
            f"(e.g. {sorted(lost)[0]}); retry the write"
        )
