"""What one commit writes: the actions of a log entry, in the protocol's order, as bytes.

Guarantees: :func:`entry_actions` puts ``commitInfo`` first, then ``protocol``,
``metaData``, ``txn``, ``domainMetadata``, ``remove``, ``add`` and ``cdc`` actions;
removes without a ``deletionTimestamp`` get the commit's time; ``commitInfo`` holds the
operation, its parameters (strings, others as JSON), read version, isolation level,
blind-append flag, metrics (as strings), user metadata, engine and transaction id, and
``inCommitTimestamp`` when given. :func:`with_row_ids` gives row tracking's fresh
``baseRowId`` / ``defaultRowCommitVersion`` to new files (a re-added file keeps its own)
and the new high-water mark; a new file without ``numRecords`` raises
:class:`DeltaError`. :func:`serialize` is one compact JSON object per line, UTF-8.
Pure functions over dicts: no I/O.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from delta_pyds.errors import CommitFailedError
from delta_pyds.protocol.action_types import AddCDCFile, AddFile, LogAction, RemoveFile
from delta_pyds.protocol.actions import Metadata, Protocol


@dataclass(frozen=True)
class CommitInfo:
    """The ``commitInfo`` fields of one commit that do not come from its actions."""

    timestamp: int
    operation: str
    parameters: Mapping[str, Any]
    read_version: int
    isolation_level: str
    blind_append: bool
    engine: str
    txn_id: str
    in_commit_timestamp: int | None = None
    metrics: Mapping[str, Any] | None = None
    user_metadata: str | None = None
    row_tracking_preserved: bool = False

    def to_dict(self) -> dict[str, Any]:
        info: dict[str, Any] = {"timestamp": self.timestamp}
        if self.in_commit_timestamp is not None:
            info["inCommitTimestamp"] = self.in_commit_timestamp
        info["operation"] = self.operation
        # text as text, anything else as its JSON text (delta-spark's CommitInfo holds a map of
        # strings: its operations' jsonEncodedValues)
        info["operationParameters"] = {
            k: (v if isinstance(v, str) else json.dumps(v)) for k, v in self.parameters.items()
        }
        if self.read_version >= 0:
            info["readVersion"] = self.read_version
        info["isolationLevel"] = self.isolation_level
        info["isBlindAppend"] = self.blind_append
        if self.metrics:
            info["operationMetrics"] = {k: str(v) for k, v in self.metrics.items()}
        if self.user_metadata is not None:
            info["userMetadata"] = self.user_metadata
        info["engineInfo"] = self.engine
        info["txnId"] = self.txn_id
        if self.row_tracking_preserved:
            info["tags"] = {"delta.rowTracking.preserved": "true"}
        return info


def entry_actions(
    info: CommitInfo,
    *,
    protocol: Protocol | None,
    metadata: Metadata | None,
    app_transaction: tuple[str, int | None] | None,
    domains: Mapping[str, str | None],
    removes: Iterable[RemoveFile],
    adds: Iterable[AddFile],
    cdcs: Iterable[AddCDCFile],
) -> list[LogAction]:
    """The actions of one log entry, in order (module docstring); a domain whose
    configuration is None is removed."""
    actions: list[LogAction] = [{"commitInfo": info.to_dict()}]
    if protocol is not None:
        actions.append({"protocol": protocol.to_dict()})
    if metadata is not None:
        actions.append({"metaData": metadata.to_dict()})
    if app_transaction is not None:
        app_id, app_version = app_transaction
        actions.append({"txn": {"appId": app_id, "version": app_version, "lastUpdated": info.timestamp}})
    for domain, conf in domains.items():
        actions.append({"domainMetadata": {"domain": domain, "configuration": conf or "", "removed": conf is None}})
    for r in removes:
        actions.append({"remove": {**r, "deletionTimestamp": r.get("deletionTimestamp", info.timestamp)}})
    actions += [{"add": a} for a in adds]
    actions += [{"cdc": c} for c in cdcs]
    return actions


def with_row_ids(adds: Sequence[AddFile], *, high_water_mark: int, version: int) -> tuple[list[AddFile], int]:
    """Copies of ``adds`` where every file without a ``baseRowId`` gets the next row ids
    (from ``high_water_mark + 1``, as many as it has records) and ``version`` as its
    ``defaultRowCommitVersion``; and the new high-water mark."""
    out = []
    hwm = high_water_mark
    for a in adds:
        a = a.copy()
        if a.get("baseRowId") is None:  # a re-added file (new DV, restore) keeps its row ids
            a["baseRowId"] = hwm + 1
            a["defaultRowCommitVersion"] = version
            hwm += num_records(a)
        out.append(a)
    return out, hwm


def num_records(add: Mapping[str, Any]) -> int:
    """The ``numRecords`` of a new file's statistics (row tracking cannot do without)."""
    stats = add.get("stats")
    if stats:
        try:
            return int(json.loads(stats)["numRecords"])
        except (ValueError, KeyError, TypeError):
            pass
    raise CommitFailedError(f"row tracking needs numRecords in the stats of {add.get('path')}")


def serialize(actions: Iterable[Mapping[str, Any]]) -> bytes:
    """A log entry's bytes: one compact JSON object per line, UTF-8, a final newline."""
    return ("\n".join(json.dumps(a, separators=(",", ":"), ensure_ascii=False) for a in actions) + "\n").encode("utf-8")
