"""Streaming source logic without I/O: offsets, admission control, commit validation.

A stream position is a :class:`StreamOffset` — the table id, a version, an index inside
that version and whether the version is the initial snapshot — with delta-spark's
``DeltaSourceOffset`` JSON field names, so offsets are self-describing in Spark's
checkpoint. The files of a version are numbered 0..n-1 in a deterministic order (a
commit's data-change adds in log order; an initial snapshot's files by modification time
then path); index ``-1`` (``BASE_INDEX``) stands before the first file of a version.
An offset means "everything up to and including this (version, index) was delivered", so
a restarted query resumes exactly after it.

The first batch's start is not a position: Spark asks the source for it again whenever it
replays an uncommitted batch 0, possibly after the table moved on, so
:data:`UNRESOLVED` (version ``-1``) marks "the query's start, as the options define it".
The version that start resolves to is recorded once, in batch 0's end offset
(``queryStartVersion``), and a replay of batch 0 starts from there: a replayed batch is
planned from logged offsets only.

Guarantees:

* :func:`next_offset` moves to ``(version + 1, -1)`` after the last file of a version,
  so a finished version is never listed again, and keeps ``isStartingVersion`` only while
  inside the initial snapshot's version;
* :class:`AdmissionLimits` admits files while capacity remains, counting files and bytes
  (bytes are a soft limit: a batch always admits its first file, as in delta-spark);
  :meth:`AdmissionLimits.admit_all` admits a group entirely or not at all (but always the
  first group of a batch);
* :func:`commit_decision` applies ``ignoreDeletes`` / ``ignoreChanges`` /
  ``skipChangeCommits`` as delta-spark does, raising :class:`StreamChangeError` for a
  commit that removes data when no option allows it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from delta_pyds.errors import StreamChangeError, StreamingError

BASE_INDEX = -1
UNRESOLVED = -1  # the version of the start marker: "where the options say the query starts"
SOURCE_VERSION = 1


@dataclass(frozen=True, order=True)
class StreamOffset:
    version: int
    index: int
    is_starting_version: bool = False
    table_id: str = ""
    # batch 0's end only: the version the query's start resolved to (see the module doc)
    query_start_version: int | None = field(default=None, compare=False)

    @property
    def unresolved(self) -> bool:
        """Whether this is the start marker (not a position in the table)."""
        return self.version == UNRESOLVED

    def to_dict(self) -> dict:
        d = {
            "sourceVersion": SOURCE_VERSION,
            "reservoirId": self.table_id,
            "reservoirVersion": self.version,
            "index": self.index,
            "isStartingVersion": self.is_starting_version,
        }
        if self.query_start_version is not None:
            d["queryStartVersion"] = self.query_start_version
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], table_id: str | None = None) -> StreamOffset:
        try:
            source_version = int(d.get("sourceVersion", SOURCE_VERSION))
            offset = cls(
                int(d["reservoirVersion"]),
                int(d["index"]),
                bool(d.get("isStartingVersion", False)),
                str(d.get("reservoirId") or ""),
                None if d.get("queryStartVersion") is None else int(d["queryStartVersion"]),
            )
        except (KeyError, TypeError, ValueError):
            raise StreamingError(f"not a pydelta stream offset: {dict(d)!r}") from None
        if source_version > SOURCE_VERSION:
            raise StreamingError(
                f"the stream offset has format version {source_version}; this delta_pyds reads version {SOURCE_VERSION}"
            )
        if table_id is not None and offset.table_id and offset.table_id != table_id:
            raise StreamingError(
                f"the stream's checkpoint was made for the table with id {offset.table_id}, but "
                f"the table at this path now has id {table_id} (it was replaced); start the query "
                "with a new checkpoint location"
            )
        return offset

    def position(self) -> tuple[int, int]:
        return self.version, self.index


@dataclass(frozen=True)
class IndexedFile:
    """One numbered entry of the stream: a file (``action`` set) or a version's BASE_INDEX
    marker (``action`` None)."""

    version: int
    index: int
    size: int = 0
    is_last: bool = False
    action: Any = None

    def position(self) -> tuple[int, int]:
        return self.version, self.index


def after(f: IndexedFile, start: StreamOffset) -> bool:
    """Whether ``f`` comes after ``start`` (not yet delivered)."""
    return f.version > start.version or f.index > start.index


def not_after(f: IndexedFile, bound: StreamOffset | None) -> bool:
    """Whether ``f`` is at or before ``bound`` (None: no bound)."""
    return bound is None or f.version < bound.version or (f.version == bound.version and f.index <= bound.index)


def next_offset(start: StreamOffset, last: IndexedFile | None) -> StreamOffset:
    """The offset after delivering up to ``last`` (``start`` itself when nothing is new)."""
    if last is None:
        return start
    if last.is_last:
        return StreamOffset(last.version + 1, BASE_INDEX, False, start.table_id)
    return StreamOffset(
        last.version, last.index, last.version == start.version and start.is_starting_version, start.table_id
    )


class AdmissionLimits:
    """How much one micro-batch may take: ``max_files`` files and about ``max_bytes`` bytes
    (None: unbounded)."""

    def __init__(self, max_files: int | None = None, max_bytes: int | None = None):
        self.files_left = max_files if max_files is not None else float("inf")
        self.bytes_left = max_bytes if max_bytes is not None else float("inf")
        self.seen = False

    @property
    def has_capacity(self) -> bool:
        return self.files_left > 0 and self.bytes_left > 0

    def admit(self, f: IndexedFile) -> bool:
        """Admit one entry (markers take no capacity but need some left)."""
        self.seen = True
        ok = self.has_capacity
        if f.action is not None:
            self.files_left -= 1
            self.bytes_left -= f.size
        return ok

    def admit_all(self, files: list[IndexedFile]) -> bool:
        """Admit a group of files atomically (all or none; always the first group)."""
        real = [f for f in files if f.action is not None]
        if not real:
            return self.admit(files[0]) if files else True
        size = sum(f.size for f in real)
        ok = not self.seen or (self.files_left - len(real) >= 0 and self.bytes_left - size >= 0)
        self.seen = True
        self.files_left -= len(real)
        self.bytes_left -= size
        return ok


def take_admitted(
    entries: Iterable[IndexedFile | list[IndexedFile]], limits: AdmissionLimits | None
) -> Iterator[IndexedFile]:
    """The entries a batch admits, in order; a list is a group admitted all-or-nothing.
    Stops at the first entry (or group) refused."""
    for e in entries:
        if isinstance(e, list):
            if limits is not None and not limits.admit_all(e):
                return
            yield from e
        else:
            if limits is not None and not limits.admit(e):
                return
            yield e
        if limits is not None and not limits.has_capacity:
            return


@dataclass(frozen=True)
class ChangePolicy:
    """The options deciding what a stream does with commits that remove data."""

    ignore_deletes: bool = False
    ignore_changes: bool = False
    skip_change_commits: bool = False


def commit_decision(
    version: int, *, has_adds: bool, removed_path: str | None, policy: ChangePolicy, table: str = ""
) -> bool:
    """Whether to skip the commit's files (True) or deliver its data-change adds (False).

    ``removed_path`` is the first data-change remove of the commit (None if it has none).
    Raises :class:`StreamChangeError` when the commit removes data and no option allows it.
    """
    if removed_path is None:
        return False
    if policy.skip_change_commits:
        return True
    if has_adds:
        if policy.ignore_changes:
            return False
        raise StreamChangeError(
            f"the source table{_at(table)} changed existing data at version {version} (an update, "
            f"delete or merge rewrote {removed_path}); a stream only delivers appends. Set the "
            "option skipChangeCommits=true to skip such commits (readChangeFeed=true streams "
            "every change), or restart the query from a new checkpoint"
        )
    if policy.ignore_deletes or policy.ignore_changes:
        return False
    raise StreamChangeError(
        f"the source table{_at(table)} deleted data at version {version} (removed {removed_path}); "
        "a stream only delivers appends. Set the option ignoreDeletes=true to ignore commits that "
        "only delete (e.g. dropped partitions), or skipChangeCommits=true to skip every commit "
        "that removes data"
    )


def _at(table: str) -> str:
    return f" at {table}" if table else ""
