"""A Delta table as a streaming source: what each micro-batch reads (no Spark).

The stream first delivers the snapshot of the version current when the query started
(unless ``startingVersion`` / ``startingTimestamp`` is given), then every later commit,
numbering files as :mod:`delta_pyds.streaming.offsets` describes. Two flavours:

* plain (default): the data-change ``add`` files of each commit, deletion vectors
  applied; a commit that removes data is refused, skipped or partly delivered according
  to ``ignoreDeletes`` / ``ignoreChanges`` / ``skipChangeCommits``
  (:func:`streaming.commit_decision`);
* change feed (``readChangeFeed=true``): the snapshot's rows as inserts, then each
  commit's change files (:func:`change_data.version_changes`); a commit's cdc files, and
  its add/remove files when it has deletion vectors, are admitted to a batch together.

Guarantees: the entries between two offsets are a pure function of the log and the
options, so re-planning a batch after a restart reads the same rows, batch 0 included
(its start is resolved once and recorded in its end offset, so new commits, or a
``startingTimestamp`` or ``latest`` that would resolve differently now, do not move it); offsets never pass
the ``Trigger.AvailableNow`` target once it is set; schema changes follow delta-spark's
rules (:mod:`delta_pyds.streaming.schema_checks`): a non-additive change (a column renamed
or dropped under column mapping, ...) between the table where a (re)started query resumes and
the stream's schema — for a query resuming from its checkpoint at the start of a version, the
table as of the last version it delivered, so a change committed right after the last batch
counts — or met by a running stream, stops it with
:class:`~delta_pyds.errors.StreamingSchemaChangeError`
(``DELTA_STREAMING_INCOMPATIBLE_SCHEMA_CHANGE_USE_SCHEMA_LOG``); a commit whose schema the
stream's schema cannot read otherwise (a column added or retyped after the stream started)
stops it with :class:`StreamingError` asking for a restart; commits gone from the log raise
:class:`VersionNotFoundError`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any, cast

import pyarrow as pa
import pyarrow.compute as pc

from delta_pyds.cdf.plan import ChangeFile, check_cdf_enabled, check_cdf_protocol, version_changes
from delta_pyds.errors import DeltaError, StreamingError, StreamingSchemaChangeError, VersionNotFoundError
from delta_pyds.log.commits import Commit, CommitLog, FileAction
from delta_pyds.protocol.actions import Metadata, Protocol
from delta_pyds.protocol.features import check_read, is_enabled
from delta_pyds.protocol.schema import (
    parse_schema,
)
from delta_pyds.read.options import StreamOptions
from delta_pyds.read.scan import FileTask
from delta_pyds.storage.store import Storage
from delta_pyds.streaming.offsets import (
    BASE_INDEX,
    UNRESOLVED,
    AdmissionLimits,
    ChangePolicy,
    IndexedFile,
    StreamOffset,
    after,
    commit_decision,
    next_offset,
    not_after,
    take_admitted,
)
from delta_pyds.streaming.schema_checks import (
    INCOMPATIBLE_SCHEMA_CHANGE,
    mapping_mode,
    non_additive_change,
    unreadable_change,
)
from delta_pyds.table.snapshot import Snapshot


@dataclass
class _VersionInfo:
    timestamp: int
    commit_info: dict | None


class StreamSource:
    """The stream over one table; ``read_snapshot`` is the table at query start (its
    schema is the stream's schema, its version the initial snapshot's)."""

    def __init__(self, storage: Storage, read_snapshot: Snapshot, options: StreamOptions):
        self.storage = storage
        self.options = options
        self.table_id = read_snapshot.metadata.id
        self.read_version = read_snapshot.version
        self.read_schema = read_snapshot.schema
        self.read_partition_columns = [c.lower() for c in read_snapshot.partition_columns]
        self.read_metadata = read_snapshot.metadata
        self.type_widening = is_enabled(read_snapshot.protocol, "typeWidening") or is_enabled(
            read_snapshot.protocol, "typeWidening-preview"
        )
        # the starts already checked: by the first offset and by the first batch (pyspark 4.1 asks
        # for offsets from the query's start every time, so only its first batch sees a resumed start)
        self._starts_checked: set[str] = set()
        self.read_protocol = read_snapshot.protocol
        self.policy = ChangePolicy(options.ignore_deletes, options.ignore_changes, options.skip_change_commits)
        self.change_feed = options.read_change_feed
        self.available_now_bound: StreamOffset | None = None
        self._available_now = False
        self._snapshot_files: tuple[int, pa.Table, list[str]] | None = None
        self._state_after: dict[int, tuple[Metadata, Protocol]] = {}  # (metadata, protocol) after a version
        self._resolved_start: StreamOffset | None = None

    # ------------------------------------------------------------------- offsets
    def initial_offset(self) -> StreamOffset:
        """Spark's start of batch 0, asked again at every restart that replays batch 0, so a
        function of the options only: ``startingVersion=N`` is its own position; the other
        modes (the snapshot, ``latest``, ``startingTimestamp``) depend on the table's state
        and give the :data:`UNRESOLVED` marker, resolved by :meth:`latest_offset` once."""
        start = self.options.start
        if start.version is not None and not start.latest:
            self._check_starting_version(start.version)
            return StreamOffset(start.version, BASE_INDEX, False, self.table_id)
        return StreamOffset(UNRESOLVED, BASE_INDEX, not start.given, self.table_id)

    def _check_starting_version(self, version: int) -> None:
        log = CommitLog(self.storage)
        if version > log.latest_version:
            raise VersionNotFoundError(
                f"option startingVersion: version {version} does not exist; the latest version "
                f"of the table is {log.latest_version} (use 'latest' to read only new commits)"
            )
        log.require(version)

    def _resolve_start(self) -> StreamOffset:
        """Where the query starts, from the options and the table now (once per query)."""
        if self._resolved_start is not None:
            return self._resolved_start
        start = self.options.start
        if not start.given:
            version = self.read_version
        elif start.latest:
            version = CommitLog(self.storage).latest_version + 1
        elif start.timestamp is not None:
            version = CommitLog(self.storage).version_at_or_after(start.timestamp, option="startingTimestamp")
        else:
            version = cast(int, start.version)
        self._resolved_start = StreamOffset(version, BASE_INDEX, not start.given, self.table_id)
        return self._resolved_start

    def first_batch_start(self, end: StreamOffset) -> StreamOffset:
        """The start of batch 0 when Spark hands the marker with batch 0's logged ``end``."""
        snapshot = not self.options.start.given
        if end.query_start_version is not None:
            return StreamOffset(end.query_start_version, BASE_INDEX, snapshot, self.table_id)
        # an end offset logged before delta_pyds recorded the start
        if snapshot:  # delta-spark's rule: a snapshot that ends at (or within) end's version
            if end.is_starting_version:
                return StreamOffset(end.version, BASE_INDEX, True, self.table_id)
            return StreamOffset(max(end.version - 1, 0), BASE_INDEX, True, self.table_id)
        resolved = self._resolve_start()
        if resolved.position() > (end.version, BASE_INDEX):
            return StreamOffset(end.version, BASE_INDEX, False, self.table_id)
        return resolved

    def prepare_available_now(self) -> None:
        """Trigger.AvailableNow: the target is fixed at the first latest_offset call."""
        self._available_now = True
        self.available_now_bound = None

    def latest_offset(self, start: StreamOffset, limits: AdmissionLimits | None) -> StreamOffset:
        """The end of the next batch; from the marker, batch 0's end records the start."""
        log = CommitLog(self.storage)
        first = start.unresolved
        if first:
            start = self._resolve_start()
        self._check_start_once(start, fresh=first, step="offset")
        if self._available_now and self.available_now_bound is None:
            self.available_now_bound = self._scan(start, None, log, None)
        end = self._scan(start, limits, log, self.available_now_bound)
        return replace(end, query_start_version=start.version) if first else end

    def _scan(self, start: StreamOffset, limits: Any, log: CommitLog, bound: StreamOffset | None) -> StreamOffset:
        last = None
        for f in take_admitted(self._entries(start, bound, log, {}), limits):
            last = f
        return next_offset(start, last)

    # -------------------------------------------------------------------- batches
    def batch_files(self, start: StreamOffset, end: StreamOffset) -> list:
        """What the batch (start, end] reads: FileTasks (plain) or ChangeFiles (change feed)."""
        fresh = start.unresolved
        if fresh:
            start = self.first_batch_start(end)
        if end.position() <= start.position():
            return []
        self._check_start_once(start, fresh=fresh, step="batch")
        log = CommitLog(self.storage)
        info: dict[int, _VersionInfo] = {}
        out: list = []
        pending: dict[int, list[FileAction]] = {}
        snapshot_rows: list[int] = []
        snapshot_version = start.version
        for e in self._entries(start, end, log, info):
            for f in e if isinstance(e, list) else [e]:
                if f.action is None:
                    continue
                if isinstance(f.action, _SnapshotRef):
                    snapshot_rows.append(f.action.row)
                elif self.change_feed:
                    pending.setdefault(f.version, []).append(f.action)
                else:
                    a = f.action
                    out.append(
                        FileTask(
                            a.path,
                            a.size,
                            a.partition_values,
                            a.deletion_vector,
                            a.base_row_id,
                            a.default_row_commit_version,
                        )
                    )
        for v, actions in pending.items():
            vi = info[v]
            out.extend(version_changes(v, vi.timestamp, actions, vi.commit_info))
        if snapshot_rows:
            out = self._snapshot_items(snapshot_version, snapshot_rows, log) + out
        return out

    def _snapshot_items(self, version: int, rows: list[int], log: CommitLog) -> list:
        """The initial snapshot's files at ``rows`` (of the sorted file table) as read items."""
        files, pcols = self._sorted_snapshot(version)
        picked = files.take(pa.array(rows, pa.int64()))
        paths = picked.column("path").to_pylist()
        sizes = pc.fill_null(picked.column("size"), 0).to_pylist()
        dvs = picked.column("deletion_vector").to_pylist()
        pvs = [()] * len(paths)
        if pcols:
            pv = picked.column("partition_values").combine_chunks()
            columns = [pc.struct_field(pv, c).to_pylist() for c in pcols]
            pvs = list(zip(*columns))
        if not self.change_feed:
            bases = picked.column("base_row_id").to_pylist()
            drcvs = picked.column("default_row_commit_version").to_pylist()
            return [FileTask(p, s, tuple(v), d, b, r) for p, s, v, d, b, r in zip(paths, sizes, pvs, dvs, bases, drcvs)]
        commit_info = (
            log.read(version, self.read_metadata, self.read_protocol).commit_info if version in log.commits else None
        )
        ts = log.timestamp(version, commit_info)
        return [
            ChangeFile(p, s, tuple(v), "insert", version, ts, deletion_vector=d)
            for p, s, v, d in zip(paths, sizes, pvs, dvs)
        ]

    # -------------------------------------------------------------------- entries
    def _entries(self, start: StreamOffset, bound: StreamOffset | None, log: CommitLog, info: dict) -> Iterator:
        """Entries (files, markers, or all-or-nothing groups) after ``start`` up to ``bound``."""
        version = start.version
        if start.is_starting_version:
            for f in self._snapshot_entries(version, start.index):
                if not not_after(f, bound):
                    return
                yield f
            version += 1
        while version <= log.latest_version:
            if bound is not None and version > bound.version:
                return
            if bound is not None and version == bound.version and bound.index == BASE_INDEX:
                marker = IndexedFile(version, BASE_INDEX)  # nothing of this commit is wanted:
                if after(marker, start):  # do not read (or judge) it
                    yield marker
                return
            commit = log.read(version, *self._state_before(version))
            info[version] = _VersionInfo(commit.timestamp, commit.commit_info)
            for e in self._commit_entries(commit):
                if isinstance(e, list):
                    e = [f for f in e if after(f, start)]
                    if not e:
                        continue
                elif not after(e, start):
                    continue
                if not not_after(e[-1] if isinstance(e, list) else e, bound):
                    return
                yield e
            version += 1

    def _state_before(self, version: int) -> tuple[Metadata, Protocol]:
        """Metadata and protocol to parse commit ``version`` with (its own metaData and
        protocol override them)."""
        got = self._state_after.get(version - 1)
        if got is not None:
            return got
        try:
            snap = Snapshot.load(self.storage, version=version)
            return snap.metadata, snap.protocol
        except DeltaError:
            return self.read_metadata, self.read_protocol

    def _commit_entries(self, commit: Commit) -> list:
        v = commit.version
        before_metadata, before_protocol = self._state_before(v)
        metadata = commit.metadata or before_metadata
        if self.change_feed:
            check_cdf_enabled(metadata, v, v, v)
        self._validate(commit)
        self._state_after[v] = (metadata, commit.protocol or before_protocol)
        if len(self._state_after) > 64:
            self._state_after.pop(min(self._state_after))
        marker = IndexedFile(v, BASE_INDEX)
        if self.change_feed:
            cdcs = commit.cdcs
            chosen = cdcs or [a for a in commit.actions if a.kind in ("add", "remove") and a.data_change]
            files = _numbered(v, chosen)
            if cdcs or any(a.deletion_vector for a in chosen):
                return [marker] + ([files] if files else [])
            return [marker] + files
        removed = next((a.path for a in commit.actions if a.kind == "remove" and a.data_change), None)
        adds = [a for a in commit.actions if a.kind == "add" and a.data_change]
        skip = commit_decision(
            v, has_adds=bool(adds), removed_path=removed, policy=self.policy, table=self.storage.root
        )
        return [marker] + ([] if skip else _numbered(v, adds))

    def _validate(self, commit: Commit) -> None:
        if commit.protocol is not None:
            if self.change_feed:
                check_cdf_protocol(commit.protocol, commit.version)
            else:
                check_read(commit.protocol)
        m = commit.metadata
        if m is None:
            return
        if m.id != self.table_id:
            raise StreamingError(
                f"the table at {self.storage.root} was replaced at version {commit.version} (new table "
                f"id {m.id}); restart the query with a new checkpoint location"
            )
        self._check_schema(m, commit.version)

    def _check_start_once(self, start: StreamOffset, *, fresh: bool, step: str) -> None:
        """On the first offset or batch of a (re)started query: the stream's schema (the
        table's now) must be able to read the files from ``start`` on, i.e. no non-additive
        change lies between the table at ``start``'s version and now (delta-spark's
        ``checkReadIncompatibleSchemaChangeOnStreamStartOnce``). A query resuming from its
        checkpoint at the start of a version (``start`` not where the options start it:
        not ``fresh``) has delivered the version before with that version's schema: a
        non-additive change since then (e.g. a RENAME committed right after its last batch)
        stops it too, so its sink never gets rows of two schemas. Checked on the first offset
        and again on the first batch (``step``): where Spark asks for offsets from the query's
        start (pyspark 4.1), the first batch is where a resumed start shows."""
        if step in self._starts_checked:
            return
        version = start.version
        if version < self.read_version:
            self._check_version_at_start(version, non_additive_only=False)
        if not fresh and not self._starts_the_query(start) and 0 < version <= self.read_version:
            self._check_version_at_start(version - 1, non_additive_only=True)
        self._starts_checked.add(step)

    def _starts_the_query(self, start: StreamOffset) -> bool:
        """Whether ``start`` is where the options start the query (nothing delivered before it)."""
        if start.is_starting_version:
            return True
        opt = self.options.start
        return start.index == BASE_INDEX and opt.version is not None and not opt.latest and start.version == opt.version

    def _check_version_at_start(self, version: int, *, non_additive_only: bool) -> None:
        try:
            metadata = Snapshot.load(self.storage, version=version).metadata
        except DeltaError as exc:
            if mapping_mode(self.read_metadata) != "none":
                raise StreamingError(
                    f"[DELTA_STREAMING_CHECK_COLUMN_MAPPING_NO_SNAPSHOT] the table at version {version}, where "
                    f"the stream resumes, cannot be loaded to check for column renames and drops ({exc})"
                ) from None
            return
        if non_additive_only:
            self._check_non_additive(metadata, version, at_start=True)
        else:
            self._check_schema(metadata, version, at_start=True)

    def _check_schema(self, m: Metadata, version: int, *, at_start: bool = False) -> None:
        """Refuses to read files of metadata ``m`` (of ``version``) with the stream's schema
        across a non-additive change, or when they are unreadable with it
        (:mod:`delta_pyds.streaming.schema_checks`)."""
        backfill = version < self.read_version  # m is older than the stream's schema
        self._check_non_additive(m, version, at_start=at_start)
        problem = unreadable_change(
            parse_schema(m.schema_string), self.read_schema, allow_widening=backfill and self.type_widening
        )
        if problem is None and [c.lower() for c in m.partition_columns] != self.read_partition_columns:
            problem = f"the partition columns changed to {list(m.partition_columns)}"
        if problem is not None:
            advice = (
                "The stream's schema is the table's latest; files written before it with this schema "
                "cannot be read with it"
                if backfill
                else "The stream's schema was fixed when the query started; restart the query to read "
                "with the new schema (the checkpoint keeps the position)"
            )
            raise StreamingError(f"the schema of the source table changed at version {version}: {problem}. {advice}")

    def _check_non_additive(self, m: Metadata, version: int, *, at_start: bool) -> None:
        """Raises StreamingSchemaChangeError for a non-additive change between ``m`` (of
        ``version``) and the stream's schema."""
        backfill = version < self.read_version
        old, new = (m, self.read_metadata) if backfill else (self.read_metadata, m)
        problem = non_additive_change(old, new)
        if problem is not None:
            read, data = self.read_metadata.schema_string, m.schema_string
            when = "when the stream (re)started" if at_start else "during the stream"
            raise StreamingSchemaChangeError(
                f"[{INCOMPATIBLE_SCHEMA_CHANGE}] Streaming read is not supported on tables with "
                f"read-incompatible schema changes (e.g. rename or drop or datatype changes): {problem} between "
                f"version {min(version, self.read_version)} and version {max(version, self.read_version)} "
                f"(detected {when}). delta_pyds has no schemaTrackingLocation: to read on, start a new query "
                f"(a new checkpoint location) with startingVersion after the change. Read schema: {read}. "
                f"Incompatible data schema: {data}."
            )

    # ------------------------------------------------------------- initial snapshot
    def _snapshot_entries(self, version: int, after_index: int) -> Iterator[IndexedFile]:
        files, _ = self._sorted_snapshot(version)
        n = files.num_rows
        sizes = pc.fill_null(files.column("size"), 0).to_numpy()
        for i in range(max(after_index + 1, 0), n):
            yield IndexedFile(version, i, int(sizes[i]), i == n - 1, _SnapshotRef(i))

    def _sorted_snapshot(self, version: int) -> tuple[pa.Table, list[str]]:
        cached = self._snapshot_files
        if cached is not None and cached[0] == version:
            return cached[1], cached[2]
        snapshot = Snapshot.load(self.storage, version=version)
        files = snapshot.files
        if files.num_rows:
            order = pc.sort_indices(files, sort_keys=[("modification_time", "ascending"), ("path", "ascending")])
            files = files.take(order)
        pcols = list(snapshot.physical_partition_columns)
        self._snapshot_files = (version, files, pcols)
        return files, pcols


# ------------------------------------------------------------------------ helpers
@dataclass(frozen=True)
class _SnapshotRef:
    """A file of the initial snapshot: its row in the snapshot's sorted file table."""

    row: int


def _numbered(version: int, actions: list[FileAction]) -> list[IndexedFile]:
    n = len(actions)
    return [IndexedFile(version, i, a.size, i == n - 1, a) for i, a in enumerate(actions)]
