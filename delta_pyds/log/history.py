"""Table history: one record per commit still in the log, newest first.

Guarantees: every commit file present in ``_delta_log`` appears once, with its version,
its timestamp as time travel resolves it (in-commit timestamp, else the monotonised
file time; see :mod:`time_travel`) and the fields of its ``commitInfo`` action
(operation, operationParameters, operationMetrics, engineInfo, ...) when it has one.
Commits without ``commitInfo`` (some writers omit it) still appear, with
``operation=None``.
"""

from __future__ import annotations

from typing import Any

from delta_pyds.log.segment import list_log
from delta_pyds.log.time_travel import commit_timestamps
from delta_pyds.protocol.actions import parse_special_lines
from delta_pyds.storage.store import Storage

HISTORY_FIELDS = (
    "version",
    "timestamp",
    "operation",
    "operationParameters",
    "operationMetrics",
    "userName",
    "engineInfo",
    "isolationLevel",
    "isBlindAppend",
    "readVersion",
    "clusterId",
    "txnId",
)


def history(
    table: str | Storage, *, limit: int | None = None, storage_options: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    """Commit records, newest first (at most ``limit``)."""
    storage = table if isinstance(table, Storage) else Storage(table, storage_options)
    commits = sorted((f for f in list_log(storage) if f.kind == "commit"), key=lambda f: f.version)
    if not commits:
        return []
    stamps = commit_timestamps(storage, commits)
    chosen = list(zip(commits, stamps))[::-1]
    if limit is not None:
        chosen = chosen[: max(0, limit)]
    datas = storage.read_many([c.path for c, _ in chosen], sizes=[c.size for c, _ in chosen])
    out = []
    for (commit, ts), data in zip(chosen, datas):
        info: dict[str, Any] = {}
        for obj in parse_special_lines(data, [b'"commitInfo"'], source=commit.path):
            if isinstance(obj.get("commitInfo"), dict):
                info = obj["commitInfo"]
                break
        record = {k: info.get(k) for k in HISTORY_FIELDS}
        record.update(version=commit.version, timestamp=ts)
        for k, v in info.items():  # keep writer-specific fields too
            record.setdefault(k, v)
        out.append(record)
    return out
