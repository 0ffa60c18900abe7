"""A snapshot: the state of a Delta table at one version.

Guarantees: ``Snapshot.load`` pins one version (latest, ``version=``, or the version
active at ``timestamp=``), validates that the reader supports the table's protocol
(:func:`features.check_read`) and exposes protocol, metadata, schema and — lazily, on
first access — the active files (``files``, an Arrow table, see
``replay.FILE_COLUMNS``), app transaction versions and domain metadata. A checkpoint
that cannot be read is skipped in favour of an older one (or the commits) when the
log still allows reconstructing the version.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from functools import cached_property
from typing import Any, cast

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from delta_pyds.errors import (
    CorruptCheckpointError,
    CorruptLogError,
    ExternalPathError,
    OptionValueError,
    TableNotFoundError,
    VersionNotFoundError,
)
from delta_pyds.log.checkpoint_reader import CheckpointReader
from delta_pyds.log.files import LogFile
from delta_pyds.log.replay import STATS_COLUMNS, active_files, normalize_adds, tombstones
from delta_pyds.log.segment import LogSegment, build_log_segment, list_log
from delta_pyds.log.table_metadata import read_table_metadata
from delta_pyds.protocol import features
from delta_pyds.protocol.actions import (
    OPTIONAL_KEYS,
    Metadata,
    Protocol,
    count_actions,
    json_actions_schema,
    parse_special_lines,
    partition_struct_type,
    read_json_actions,
    read_json_lines,
)
from delta_pyds.protocol.paths import is_absolute, unsafe_reason
from delta_pyds.protocol.schema import StructType, parse_schema
from delta_pyds.storage.store import Storage

log = logging.getLogger(__name__)

# optional commit actions a snapshot never reads
_NOT_IN_SNAPSHOT = frozenset({"cdc", "sidecar"})
# the parsed commits: actions, each row's version, each row's replay order
_CommitActions = tuple[pa.Table | None, np.ndarray | None, np.ndarray | None]


class Snapshot:
    def __init__(
        self,
        storage: Storage,
        segment: LogSegment,
        commit_data: list[bytes],
        protocol: Protocol,
        metadata: Metadata,
        checkpoint: CheckpointReader | None,
    ):
        self.storage = storage
        self.segment = segment
        self.version = segment.version
        self._commit_data = commit_data
        self._parsed_commits: dict[bool, _CommitActions] = {}
        self.protocol = protocol
        self.metadata = metadata
        self._checkpoint = checkpoint
        # what replay reads: the segment's files, or (a snapshot extended from ``_base``) only
        # the commits after the base's version, replayed over the base's reconciled state
        self._replay_files: list[LogFile] = segment.replay_files
        self._base: Snapshot | None = None
        self.schema: StructType = parse_schema(metadata.schema_string)
        missing = [c for c in metadata.partition_columns if self.schema.get(c) is None]
        if missing:
            raise CorruptLogError(f"partition columns {missing} are not in the table schema")

    # ------------------------------------------------------------------------ loading
    @classmethod
    def load(
        cls,
        table: str | Storage,
        *,
        version: int | None = None,
        timestamp: Any = None,
        options: Mapping[str, str] | None = None,
    ) -> Snapshot:
        storage = table if isinstance(table, Storage) else Storage(table, options)
        # the whole log only for timestamps (every commit's time); otherwise the segment
        # lists from _last_checkpoint on when it can (delta_pyds.log.segment)
        listing = None
        if timestamp is not None:
            if version is not None:
                raise OptionValueError("give either versionAsOf or timestampAsOf, not both")
            from delta_pyds.log.time_travel import version_at_timestamp

            listing = list_log(storage)
            version = version_at_timestamp(storage, timestamp, listing=listing)
        excluded: set[int] = set()
        checkpoint_error: CorruptCheckpointError | None = None
        while True:
            try:
                segment = build_log_segment(
                    storage, version=version, listing=listing, exclude_checkpoints=frozenset(excluded)
                )
            except (CorruptLogError, TableNotFoundError, VersionNotFoundError) as fallback_error:
                if checkpoint_error is None:
                    raise
                # no way around the unreadable checkpoint: report it, not the fallback's gap
                raise checkpoint_error from fallback_error
            try:
                return cls.from_segment(storage, segment)
            except CorruptCheckpointError as exc:
                if segment.checkpoint_version is None:
                    raise
                log.warning(
                    "checkpoint %s of %s is unreadable (%s); falling back",
                    segment.checkpoint_version,
                    storage.root,
                    exc,
                )
                excluded.add(segment.checkpoint_version)
                checkpoint_error = exc

    @classmethod
    def from_segment(cls, storage: Storage, segment: LogSegment) -> Snapshot:
        """The snapshot of ``segment``'s version (its protocol must be readable)."""
        state = read_table_metadata(storage, segment)
        features.check_read(state.protocol)
        return cls(storage, segment, state.commit_data, state.protocol, state.metadata, state.checkpoint)

    @classmethod
    def extend(cls, base: Snapshot, commits: list[LogFile], storage: Storage | None = None) -> Snapshot:
        """The snapshot of the last of ``commits``, the commit files ``base.version + 1 ..``
        in order with no gap: only those commits are read and parsed; replay applies them
        to ``base``'s reconciled files and app / domain state, exactly as a replay of the
        whole segment would (the commits after a snapshot's version are newer than every
        action it reconciled). Its segment is ``base``'s with the commits appended, so
        writers that read the segment's files (:mod:`delta_pyds.table.state`) see the same
        log. ``tombstones`` are replayed from the log in full (VACUUM is rare). ``storage`` (the
        caller's, which listed ``commits``; default ``base``'s) reads them and is the new snapshot's."""
        storage = storage or base.storage
        expected = list(range(base.version + 1, base.version + 1 + len(commits)))
        if not commits or [c.version for c in commits] != expected:
            raise ValueError("extend: the commits must follow the base snapshot's version without a gap")
        try:
            data = storage.read_many([c.path for c in commits], sizes=[c.size for c in commits])
        except FileNotFoundError as exc:
            raise CorruptLogError(f"a commit file vanished while reading the log: {exc}") from None
        protocol: Protocol | None = None
        metadata: Metadata | None = None
        for commit, blob in zip(reversed(commits), reversed(data)):
            for obj in reversed(parse_special_lines(blob, [b'"protocol"', b'"metaData"'], source=commit.path)):
                if protocol is None and isinstance(obj.get("protocol"), dict):
                    protocol = Protocol.from_dict(obj["protocol"], source=commit.path)
                if metadata is None and isinstance(obj.get("metaData"), dict):
                    metadata = Metadata.from_dict(obj["metaData"], source=commit.path)
        protocol = protocol or base.protocol
        features.check_read(protocol)
        old = base.segment
        segment = LogSegment(
            version=commits[-1].version,
            checkpoint_version=old.checkpoint_version,
            checkpoint=old.checkpoint,
            commits=old.commits + commits,
            all_commits=old.all_commits + commits,
            all_checkpoint_versions=old.all_checkpoint_versions,
            replay_files=old.replay_files + commits,
            listed_from=old.listed_from,
        )
        snap = cls(storage, segment, data, protocol, metadata or base.metadata, None)
        if snap.physical_partition_columns != base.physical_partition_columns:
            # the base's files carry other partition columns: replay the whole segment
            return cls.from_segment(storage, segment)
        snap._replay_files = commits
        snap._base = base
        return snap

    # ------------------------------------------------------------------- properties
    @property
    def table_root(self) -> str:
        return self.storage.root

    @property
    def configuration(self) -> Mapping[str, str]:
        return self.metadata.configuration

    @property
    def partition_columns(self) -> list[str]:
        return list(self.metadata.partition_columns)

    @property
    def column_mapping_mode(self) -> str:
        return features.column_mapping_mode(self.protocol, self.configuration)

    @property
    def physical_partition_columns(self) -> list[str]:
        mode = self.column_mapping_mode
        return [self.schema.field(c).physical_name(mode) for c in self.partition_columns]

    @property
    def base(self) -> Snapshot | None:
        """The snapshot this one extends (:meth:`extend`), or None for a full replay."""
        return self._base

    @property
    def replayed_commits(self) -> list[LogFile]:
        """The log files this snapshot's own replay reads: the segment's, or for an extended
        snapshot only the commits after its :attr:`base`."""
        return list(self._replay_files)

    def held_commit_bytes(self, version: int) -> bytes | None:
        """The bytes of commit ``version`` when this snapshot replays that commit and still
        holds them (they are dropped once :attr:`files` is built), else None."""
        for f, data in zip(self._replay_files, self._commit_data):
            if f.kind == "commit" and f.version == version:
                return data
        return None

    # -------------------------------------------------------------------- replay
    def _commit_actions(self, *, stats: bool = False) -> _CommitActions:
        """All commit actions in one table, each row's version, and each row's replay
        order (larger = newer). Log compaction files list their actions newest first
        (delta-spark writes them in reverse replay order), so their rows are ordered
        backwards; for a fully reconciled compaction the order does not matter.

        ``stats``: with the adds' statistics (only :attr:`files` needs them). Each kind is
        parsed once and kept; a parse with statistics serves both, after which the raw
        commit bytes are dropped (nothing parses them again)."""
        full = self._parsed_commits.get(True)
        if full is not None:
            return full
        if not stats and False in self._parsed_commits:
            return self._parsed_commits[False]
        parsed = self._parse_commits(stats)
        self._parsed_commits[stats] = parsed
        if stats:
            self._parsed_commits.pop(False, None)
            self._commit_data = []
        return parsed

    def _parse_commits(self, stats: bool) -> _CommitActions:
        if not self._commit_data:
            return None, None, None
        files = self._replay_files
        chunks = [d if d.endswith(b"\n") else d + b"\n" for d in self._commit_data]
        data = b"".join(chunks)
        # the optional keys the bytes hold (one substring scan of every commit per key): not
        # cdc (no part of a snapshot) nor sidecar (checkpoints only), nor, without statistics,
        # stats (neither looked for nor parsed)
        wanted = [k for k in OPTIONAL_KEYS if k not in _NOT_IN_SNAPSHOT and (stats or k != "stats")]
        present = {k for k in wanted if f'"{k}"'.encode() in data}
        schema = json_actions_schema(self.physical_partition_columns, present)
        counts = np.array([count_actions(d) for d in chunks], dtype=np.int64)
        try:
            table = read_json_actions(data, schema, source=f"the commits of {self.table_root}")
        except CorruptLogError:
            table = None  # parse file by file below, so that the error names the bad file
        if table is None or table.num_rows != counts.sum():  # blank lines somewhere: one by one
            tables = []
            for d, c in zip(chunks, files):
                t = read_json_actions(d, schema, source=c.path)
                if t.num_rows != sum(1 for line in d.splitlines() if line.strip()):
                    # Arrow also accepts an object split over lines or two on one line;
                    # the protocol wants one action per line: parse strictly, name the line
                    t = read_json_lines(d, schema, source=c.path)
                tables.append(t)
            counts = np.array([t.num_rows for t in tables], dtype=np.int64)
            table = pa.concat_tables(tables)
        versions = np.repeat(np.array([c.version for c in files], dtype=np.int64), counts)
        seq = np.arange(table.num_rows, dtype=np.int64)
        ends = np.cumsum(counts)
        for f, end, n in zip(files, ends, counts):
            if f.kind == "compaction" and n > 1:
                seq[end - n : end] = seq[end - n : end][::-1]
        return table, versions, seq

    @cached_property
    def files(self) -> pa.Table:
        """The active files: one row per add action that survives reconciliation."""
        return self._replay(stats=True)

    @cached_property
    def scan_files(self) -> pa.Table:
        """The rows of :attr:`files` without their statistics (``stats``, ``stats_parsed``):
        what a scan whose predicates need no statistics plans from. A checkpoint's statistics
        are then never decoded (1M files with stats on 4 columns: 84 MiB resident instead of
        313 MiB, 229 of them the ``stats`` text). Free when :attr:`files` is already built."""
        if "files" in self.__dict__:
            return self.files.drop_columns([c for c in STATS_COLUMNS if c in self.files.column_names])
        return self._replay(stats=False)

    def _replay(self, *, stats: bool) -> pa.Table:
        pstruct = partition_struct_type(self.physical_partition_columns)
        checkpoint_adds = None
        if self._base is not None:  # reconciled already: the base's files play the checkpoint's part
            checkpoint_adds = self._base.files if stats else self._base.scan_files
        elif self._checkpoint is not None:
            try:
                adds, _ = self._checkpoint.file_actions(self.physical_partition_columns, stats=stats)
            except CorruptCheckpointError as exc:
                fallback = self._without_checkpoint(exc)
                return fallback.files if stats else fallback.scan_files
            checkpoint_adds = normalize_adds(adds, pstruct, self.storage.root, stats=stats)
        table, _versions, seq = self._commit_actions(stats=stats)
        commit_adds = commit_removes = adds_seq = removes_seq = None
        if table is not None and table.num_rows:
            seq = cast(np.ndarray, seq)  # given with the table
            add_col, rem_col = table.column("add"), table.column("remove")
            add_mask = pc.is_valid(add_col)
            rem_mask = pc.is_valid(rem_col)
            if pc.any(add_mask).as_py():
                adds = add_col.filter(add_mask).combine_chunks()
                commit_adds = normalize_adds(pa.Table.from_struct_array(adds), pstruct, self.storage.root, stats=stats)
                adds_seq = seq[add_mask.to_numpy(zero_copy_only=False)]
            if pc.any(rem_mask).as_py():
                commit_removes = pa.Table.from_struct_array(rem_col.filter(rem_mask).combine_chunks())
                removes_seq = seq[rem_mask.to_numpy(zero_copy_only=False)]
            if (
                commit_adds is not None
                and checkpoint_adds is not None
                and "stats_parsed" in checkpoint_adds.column_names
            ):
                commit_adds = commit_adds.append_column(
                    "stats_parsed", pa.nulls(commit_adds.num_rows, checkpoint_adds.schema.field("stats_parsed").type)
                )
        result = active_files(checkpoint_adds, commit_adds, adds_seq, commit_removes, removes_seq, self.storage.root)
        if result is None:
            one_row = cast(
                pa.Table, normalize_adds(pa.table({"path": pa.array(["x"])}), pstruct, self.storage.root, stats=stats)
            )  # not empty
            return one_row.slice(0, 0)
        _check_paths(result, self.storage)
        return result

    @cached_property
    def tombstones(self) -> pa.Table:
        """Remove actions still in the table state (not superseded by a re-add): the
        files VACUUM may delete once their ``deletionTimestamp`` is past retention.
        Columns: path (decoded), deletionTimestamp, deletionVector, size, dataChange."""
        if self._base is not None:  # an extended snapshot: the whole segment's replay
            return Snapshot.from_segment(self.storage, self.segment).tombstones
        removes: list[tuple[pa.Table, np.ndarray]] = []
        adds: list[tuple[pa.Table, np.ndarray]] = []
        if self._checkpoint is not None:
            _, cp_removes = self._checkpoint.file_actions(self.physical_partition_columns)
            if cp_removes is not None:
                removes.append((cp_removes, np.full(cp_removes.num_rows, -1, dtype=np.int64)))
        table, _versions, seq = self._commit_actions()
        if table is not None and table.num_rows:
            seq = cast(np.ndarray, seq)  # given with the table
            for name, target in (("remove", removes), ("add", adds)):
                col = table.column(name)
                mask = pc.is_valid(col)
                if pc.any(mask).as_py():
                    target.append(
                        (
                            pa.Table.from_struct_array(col.filter(mask).combine_chunks()),
                            seq[mask.to_numpy(zero_copy_only=False)],
                        )
                    )
        result = tombstones(removes, adds, self.storage.root)
        if result is None:
            return pa.table({"path": pa.array([], pa.string()), "deletionTimestamp": pa.array([], pa.int64())})
        return result

    def _without_checkpoint(self, exc: CorruptCheckpointError) -> Snapshot:
        """The same version rebuilt from an older checkpoint or the commits."""
        current = cast(int, self.segment.checkpoint_version)  # the checkpoint that failed
        excluded = {v for v in self.segment.all_checkpoint_versions if v >= current}
        log.warning(
            "checkpoint %s of %s is unreadable (%s); falling back",
            self.segment.checkpoint_version,
            self.table_root,
            exc,
        )
        try:
            segment = build_log_segment(self.storage, version=self.version, exclude_checkpoints=frozenset(excluded))
        except (CorruptLogError, TableNotFoundError, VersionNotFoundError) as fallback_error:
            raise exc from fallback_error
        return Snapshot.from_segment(self.storage, segment)

    @cached_property
    def _state_actions(self) -> tuple[dict[str, int], dict[str, str]]:
        txns: dict[str, int] = {}
        domains: dict[str, str | None] = {}
        if self._base is not None:
            txns.update(self._base.app_transactions)
            domains.update(self._base.domain_metadata)
        elif self._checkpoint is not None:
            for obj in self._checkpoint.state_actions():
                _apply_state(obj, txns, domains)
        table, _, seq = self._commit_actions()
        if table is not None and table.num_rows:
            seq = cast(np.ndarray, seq)  # given with the table
            order = pa.array(np.argsort(seq, kind="stable"))
            table = table.take(order)  # oldest first, so later actions overwrite earlier
            for name in ("txn", "domainMetadata"):
                if name not in table.column_names:
                    continue
                col = table.column(name)
                for value in col.filter(pc.is_valid(col)).to_pylist():
                    _apply_state({name: value}, txns, domains)
        return txns, {k: v for k, v in domains.items() if v is not None}

    @property
    def app_transactions(self) -> dict[str, int]:
        """appId -> latest txn version."""
        return dict(self._state_actions[0])

    @property
    def domain_metadata(self) -> dict[str, str]:
        """domain -> configuration of every domain not removed."""
        return dict(self._state_actions[1])

    @property
    def num_files(self) -> int:
        return self.files.num_rows

    def __repr__(self) -> str:
        return f"Snapshot({self.table_root!r}, version={self.version})"


def _apply_state(obj: dict, txns: dict, domains: dict) -> None:
    txn = obj.get("txn")
    if txn and txn.get("appId") is not None:
        txns[txn["appId"]] = int(txn.get("version") or 0)
    dm = obj.get("domainMetadata")
    if dm and dm.get("domain") is not None:
        domains[dm["domain"]] = None if dm.get("removed") else dm.get("configuration")


def _check_paths(files: pa.Table, storage: Storage) -> None:
    """Refuses active files whose canonical path must not be opened (see
    :func:`delta_pyds.protocol.paths.unsafe_reason`), and any path outside the table root when
    ``storage`` refuses external paths. Absolute paths are otherwise allowed (the protocol
    allows them: shallow clones)."""
    if not files.num_rows:
        return
    paths = files.column("path")
    if paths.null_count:
        raise CorruptLogError("an add action has no path")
    suspects = pc.match_substring_regex(paths, r"\.\.|^[A-Za-z][A-Za-z0-9+.\-]+:|^/|^$")
    if not pc.any(suspects).as_py():
        return
    for path in paths.filter(suspects).to_pylist():
        reason = unsafe_reason(path)
        if reason is not None:
            raise CorruptLogError(f"add action path {path!r} {reason}")
        if not storage.allow_external_paths and is_absolute(path):
            raise ExternalPathError(
                f"add action path {path!r} is outside the table root {storage.root}; this table "
                "is opened with allowExternalPaths=false"
            )
