"""Transactions: one atomic change to a Delta table, committed optimistically.

A :class:`Transaction` starts from a snapshot (or from nothing, to create a table),
collects actions — new metadata/protocol, added and removed files, an application
transaction id, domain metadata — and :meth:`Transaction.commit` writes them as the
next ``_delta_log/<version>.json`` with an atomic put-if-absent. Usable without Spark:
table maintenance and streaming sinks build on it.

Guarantees:

* an existing log entry is never overwritten; a lost race reads the winning commits,
  checks them for logical conflicts (:mod:`delta_pyds.transaction.conflicts`, WriteSerializable
  unless the table says Serializable), rebases (row ids, in-commit timestamps,
  version) and retries with jittered exponential backoff, at most ``max_attempts``
  times, else raises :class:`ConcurrentModificationError` / :class:`CommitFailedError`;
* before the first attempt it refuses — leaving the table unchanged — a protocol with
  writer features delta_pyds does not implement (``features.check_write``), removing
  data from an append-only table, and a new table without metadata;
* ``commitInfo`` is the first action (operation, parameters, engine info, read
  version, isolation level, blind-append flag, metrics), with ``inCommitTimestamp``
  when the table enables in-commit timestamps; row tracking tables get ``baseRowId``
  / ``defaultRowCommitVersion`` on new files and an updated ``delta.rowTracking``
  high-water mark;
* after a successful commit at a multiple of ``delta.checkpointInterval`` (default
  10) a classic checkpoint and ``_last_checkpoint`` are written, then expired log
  entries are cleaned up (:mod:`delta_pyds.log.cleanup`); a failing checkpoint or
  cleanup is logged and never fails the commit;
* :meth:`commit` raises only if the commit is certainly not in the log; when storage
  fails ambiguously it checks whether its own entry landed.
"""

from __future__ import annotations

import json
import logging
import random
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, cast

from delta_pyds.errors import (  # noqa: F401
    AppendOnlyError,
    CommitFailedError,
    CommitRetriesExhaustedError,
    ConcurrentModificationError,
    DeltaError,
    TableExistsError,
    TableNotFoundError,
)
from delta_pyds.log.files import LOG_DIR, commit_name
from delta_pyds.log.segment import list_log
from delta_pyds.protocol import features
from delta_pyds.protocol.action_types import AddCDCFile, AddFile, DeletionVectorDict, LogAction, RemoveFile
from delta_pyds.protocol.actions import Metadata, Protocol
from delta_pyds.protocol.paths import canonical
from delta_pyds.protocol.schema import StructType, parse_schema
from delta_pyds.protocol.table_properties import (
    APPEND_ONLY,
    CHECKPOINT_INTERVAL,
    ENABLE_ICT,
    ICT_ENABLEMENT_TIMESTAMP,
    ICT_ENABLEMENT_VERSION,
    ISOLATION_LEVEL,
    ROW_TRACKING_SUSPENDED,
    int_property,
    is_true,
    required_protocol,
)
from delta_pyds.storage.store import Storage
from delta_pyds.table.snapshot import Snapshot
from delta_pyds.transaction.conflicts import ROW_TRACKING_DOMAIN, ReadSet, Rebase, WinningCommit, check
from delta_pyds.transaction.log_entry import CommitInfo, entry_actions, serialize, with_row_ids
from delta_pyds.transaction.staged_files import cleanup_on_failure, delete_deletion_vector_files

log = logging.getLogger(__name__)


def engine_info() -> str:
    import sys

    from delta_pyds.version import __version__

    pyspark = sys.modules.get("pyspark")  # never imported from here: the core stays Spark-free
    version = getattr(pyspark, "__version__", None) if pyspark is not None else None
    return f"delta_pyds/{__version__}" + (f" pyspark/{version}" if version else "")


@dataclass
class CommitResult:
    version: int  # the committed version (the existing one when skipped)
    attempts: int = 1
    skipped: bool = False  # nothing committed: the idempotent write was already in the log
    checkpoint: bool = False  # a checkpoint was written for this version
    actions: list = field(default_factory=list)

    def operation_metrics(self) -> dict[str, str]:
        """The ``operationMetrics`` of the commit made (empty when skipped or it has none)."""
        for action in self.actions:
            info = action.get("commitInfo") if isinstance(action, dict) else None
            if isinstance(info, dict):
                return {str(k): str(v) for k, v in (info.get("operationMetrics") or {}).items()}
        return {}


def _now_ms() -> int:
    return int(time.time() * 1000)


class Transaction:
    """An atomic set of changes to one table (see the module docstring)."""

    def __init__(self, storage: Storage, snapshot: Snapshot | None = None, *, engine: str | None = None):
        self.storage = storage
        self.snapshot = snapshot
        self.read_version = snapshot.version if snapshot is not None else -1
        self.engine = engine or engine_info()
        self.txn_id = str(uuid.uuid4())
        self._metadata: Metadata | None = None
        self._protocol: Protocol | None = None
        self.adds: list[AddFile] = []
        self.cdcs: list[AddCDCFile] = []
        self.removes: list[RemoveFile] = []
        self.domains: dict[str, str | None] = {}
        self.app_id: str | None = None
        self.app_version: int | None = None
        self.read = ReadSet()
        self.create_conflict = "error"  # error | ignore | append: when another writer creates the table first
        # True: check conflicts as under Serializable whatever the table says (a blind append
        # conflicts with what this transaction read), for changes validated against the data
        # read (SET NOT NULL, ADD CONSTRAINT)
        self.serializable = False
        # deletion vector descriptors whose files were written for this commit: deleted
        # when it fails (unless a recent commit names them: an unknown outcome that landed)
        self.written_deletion_vectors: list[DeletionVectorDict] = []

    @classmethod
    def start(cls, table: str | Storage, *, options: Mapping[str, str] | None = None) -> Transaction:
        """A transaction on the latest version of ``table`` (or on a new table)."""
        storage = table if isinstance(table, Storage) else Storage(table, options)
        try:
            snapshot = Snapshot.load(storage)
        except TableNotFoundError:
            snapshot = None
        return cls(storage, snapshot)

    # ------------------------------------------------------------------------ state
    @property
    def metadata(self) -> Metadata | None:
        return self._metadata or (self.snapshot.metadata if self.snapshot else None)

    @property
    def protocol(self) -> Protocol | None:
        return self._protocol or (self.snapshot.protocol if self.snapshot else None)

    @property
    def schema(self) -> StructType | None:
        md = self.metadata
        return parse_schema(md.schema_string) if md else None

    def update_metadata(self, metadata: Metadata) -> None:
        self._metadata = metadata

    def update_protocol(self, protocol: Protocol) -> None:
        self._protocol = protocol

    def add_files(self, adds: Iterable[AddFile]) -> None:
        self.adds.extend(adds)

    def add_cdc_files(self, cdcs: Iterable[AddCDCFile]) -> None:
        """``cdc`` actions (change data files under ``_change_data``) of this commit."""
        self.cdcs.extend(cdcs)

    def remove_files(self, removes: Iterable[RemoveFile]) -> None:
        """Remove actions (see :func:`remove_actions`); the files count as read."""
        for r in removes:
            self.removes.append(r)
            self.read.paths.add(canonical(r["path"], self.storage.root))

    def read_files(self, paths: Iterable[str]) -> None:
        """Records files read (canonical paths, as the snapshot's file table holds them):
        a concurrent commit removing one of them conflicts."""
        self.read.paths.update(paths)

    def read_whole_table(self) -> None:
        self.read.whole_table = True
        self.read.descriptions.append("the whole table")

    def read_partitions(self, predicate: Callable[[list[dict]], list[bool]], description: str) -> None:
        """Records a read of the files whose partition values ``predicate`` accepts
        (``predicate(list of partitionValues dicts) -> list of bool``)."""
        self.read.predicates.append(predicate)
        self.read.descriptions.append(description)

    def set_app_transaction(self, app_id: str, version: int) -> None:
        self.app_id, self.app_version = app_id, int(version)

    def set_domain_metadata(self, domain: str, configuration: str | None) -> None:
        """Sets (or, with None, removes) a metadata domain."""
        self.domains[domain] = configuration

    def metadata_changed(self) -> bool:
        """Whether this transaction commits metadata other than its snapshot's (delta-spark's
        ``metadataChanged``: a concurrent blind append then conflicts with what it read)."""
        if self._metadata is None or self.snapshot is None:
            return self._metadata is not None
        return self._metadata.to_dict() != self.snapshot.metadata.to_dict()

    def is_blind_append(self) -> bool:
        return not self.removes and self.read.empty and self._metadata is None and self._protocol is None

    # ---------------------------------------------------------------- validation
    def _final_protocol(self) -> Protocol:
        md = self.metadata
        if md is None:
            raise CommitFailedError("a new table needs metadata (schema, partitioning) before it can be committed")
        base = self._protocol or (self.snapshot.protocol if self.snapshot else None)
        if self._metadata is None and self._protocol is None:
            return cast(Protocol, base)  # the metadata is the snapshot's: so is a protocol
        return required_protocol(parse_schema(md.schema_string), md.configuration, base)

    def _validate(self, protocol: Protocol) -> None:
        features.check_write(protocol)
        md = self.metadata
        old = self.snapshot.metadata if self.snapshot else None
        append_only = old is not None and is_true(old.configuration, APPEND_ONLY)
        if append_only and any(r.get("dataChange", True) for r in self.removes):
            raise AppendOnlyError(
                "cannot remove data from this table: it is append-only (delta.appendOnly=true); "
                "only appends are allowed"
            )
        for a in self.adds:
            if "path" not in a or "size" not in a:
                raise CommitFailedError(f"add action without path or size: {a!r}")
        if md is not None and len({c.lower() for c in md.partition_columns}) != len(md.partition_columns):
            raise CommitFailedError("duplicate partition columns")

    # -------------------------------------------------------------------- commit
    def commit(
        self,
        operation: str = "WRITE",
        parameters: Mapping[str, Any] | None = None,
        *,
        user_metadata: str | None = None,
        metrics: Mapping[str, Any] | None = None,
        max_attempts: int = 50,
        checkpoint: bool = True,
    ) -> CommitResult:
        """Commits the collected actions as the next version (see the module docstring)."""
        # the deletion vector files written for it go if it fails (unless a recent commit names them)
        with cleanup_on_failure(
            lambda: delete_deletion_vector_files(self.storage, self.written_deletion_vectors),
            what="the deletion vector files written for the commit",
        ):
            return self._commit(operation, parameters, user_metadata, metrics, max_attempts, checkpoint)

    def _commit(
        self,
        operation: str,
        parameters: Mapping[str, Any] | None,
        user_metadata: str | None,
        metrics: Mapping[str, Any] | None,
        max_attempts: int,
        checkpoint: bool,
    ) -> CommitResult:
        protocol = self._final_protocol()
        self._validate(protocol)
        state = _AttemptState(
            version=self.read_version + 1,
            row_id_hwm=self._initial_hwm(),
            last_ict=self._initial_ict(),
            protocol=protocol,
            creating=self.snapshot is None,
        )
        attempts = 0
        while True:
            attempts += 1
            actions = self._actions(state, operation, parameters or {}, user_metadata, metrics)
            data = serialize(actions)
            path = self.storage.join(LOG_DIR, commit_name(state.version))
            try:
                self._put(path, data)
            except FileExistsError:
                if attempts >= max_attempts:
                    raise CommitRetriesExhaustedError(
                        f"gave up committing to {self.storage.root} after {attempts} attempts: other "
                        "writers kept committing first (raise maxCommitAttempts to wait longer)"
                    ) from None
                rebase = self._rebase(state)
                if rebase is not None and rebase.already_committed:
                    log.info(
                        "pydelta: transaction %s v%s of %s is already committed; skipping",
                        self.app_id,
                        self.app_version,
                        self.storage.root,
                    )
                    return CommitResult(rebase.latest_version, attempts, skipped=True)
                if (
                    rebase is not None
                    and rebase.table_created_by_winner is not None
                    and self.create_conflict == "ignore"
                ):
                    return CommitResult(rebase.latest_version, attempts, skipped=True)
                _backoff(attempts)
                continue
            break
        version = state.version
        result = CommitResult(version, attempts, actions=actions)
        if checkpoint:
            result.checkpoint = self._maybe_checkpoint(version, state)
        return result

    def _put(self, path: str, data: bytes) -> None:
        try:
            self.storage.put_if_absent(path, data)
        except FileExistsError:
            raise
        except DeltaError:
            raise
        except Exception as exc:
            # ambiguous failure: did our entry land?
            try:
                if self.storage.read_back(path) == data:  # length checked: never a body cut short
                    return
            except FileNotFoundError:
                raise CommitFailedError(f"could not write {path}: {exc}") from exc
            except Exception:
                raise CommitFailedError(
                    f"could not write {path} and cannot tell whether it was written: {exc}; "
                    "check the table's log before retrying"
                ) from exc
            raise FileExistsError(path) from exc

    def _rebase(self, state: _AttemptState) -> Rebase | None:
        listing = list_log(self.storage, from_version=state.version)  # only the winners' commits
        sizes = {f.version: f.size for f in listing if f.kind == "commit" and f.version >= state.version}
        versions = sorted(sizes)
        if not versions or versions[0] != state.version:
            # e.g. a listing lagging behind: retry the same version after a pause
            return None
        contiguous = [versions[0]]
        for v in versions[1:]:
            if v != contiguous[-1] + 1:
                break
            contiguous.append(v)
        paths = [self.storage.join(LOG_DIR, commit_name(v)) for v in contiguous]
        data = self.storage.read_many(paths, sizes=[sizes[v] for v in contiguous])  # bounded before reading
        winners = [WinningCommit.parse(v, d) for v, d in zip(contiguous, data)]
        md = self.metadata
        serializable = self.serializable or (md is not None and md.configuration.get(ISOLATION_LEVEL) == "Serializable")
        rebase = check(
            winners,
            read=self.read,
            removed_paths=set(self.read.paths),
            app_id=self.app_id,
            app_version=self.app_version,
            domains=set(self.domains),
            serializable=serializable,
            creating=state.creating,
            root=self.storage.root,
            accept_created=self._accept_created if self.create_conflict in ("append", "ignore") else None,
            metadata_changed=self.metadata_changed(),
        )
        if rebase.already_committed:
            return rebase
        if rebase.table_created_by_winner is not None:
            if self.create_conflict == "ignore":
                return rebase
            # another writer created an identical table: continue as an append to it
            self._metadata = None
            self._protocol = None
            self.snapshot = Snapshot.load(self.storage, version=rebase.latest_version)
            self.read_version = self.snapshot.version
            state.creating = False
            state.protocol = self.snapshot.protocol
            features.check_write(state.protocol)
            state.row_id_hwm = self._initial_hwm()
            state.last_ict = self._initial_ict()
        if rebase.row_id_high_water_mark is not None:
            state.row_id_hwm = max(state.row_id_hwm, rebase.row_id_high_water_mark)
        if rebase.in_commit_timestamp is not None:
            state.last_ict = max(state.last_ict or 0, rebase.in_commit_timestamp)
        state.version = rebase.latest_version + 1
        return rebase

    def _accept_created(self, metadata: dict, protocol: dict) -> bool:
        ours = self._metadata
        if ours is None:
            return False
        if self.create_conflict == "ignore":
            return True
        if not protocol:
            return False
        theirs = Metadata.from_dict(metadata)
        return (
            theirs.schema_string == ours.schema_string
            and list(theirs.partition_columns) == list(ours.partition_columns)
            and dict(theirs.configuration) == dict(ours.configuration)
            and Protocol.from_dict(protocol) == self._final_protocol()
        )

    # ------------------------------------------------------------------- actions
    def _row_tracking(self, protocol: Protocol, md: Metadata) -> bool:
        return features.is_enabled(protocol, "rowTracking") and not is_true(md.configuration, ROW_TRACKING_SUSPENDED)

    def _initial_hwm(self) -> int:
        if self.snapshot is None:
            return -1
        raw = self.snapshot.domain_metadata.get(ROW_TRACKING_DOMAIN)
        if not raw:
            return -1
        try:
            return int(json.loads(raw)["rowIdHighWaterMark"])
        except (ValueError, KeyError, TypeError):
            return -1

    def _initial_ict(self) -> int | None:
        if self.snapshot is None or not is_true(self.snapshot.configuration, ENABLE_ICT):
            return None
        try:
            data = self.storage.read_bytes(self.storage.join(LOG_DIR, commit_name(self.snapshot.version)))
        except (FileNotFoundError, OSError):
            return None
        first = data.split(b"\n", 1)[0]
        try:
            info = json.loads(first).get("commitInfo") or {}
            value = info.get("inCommitTimestamp")
            return int(value) if value is not None else None
        except (ValueError, AttributeError):
            return None

    def _actions(
        self,
        state: _AttemptState,
        operation: str,
        parameters: Mapping[str, Any],
        user_metadata: str | None,
        metrics: Mapping[str, Any] | None,
    ) -> list[LogAction]:
        """The actions of the attempt at ``state.version`` (:mod:`.log_entry`)."""
        now = _now_ms()
        effective_md = self.metadata
        ict, md = self._in_commit_timestamp(state, now)
        row_tracking = effective_md is not None and self._row_tracking(state.protocol, effective_md)
        isolation = (effective_md.configuration.get(ISOLATION_LEVEL) if effective_md else None) or "WriteSerializable"
        info = CommitInfo(
            timestamp=now,
            operation=operation,
            parameters=parameters,
            read_version=self.read_version,
            isolation_level=isolation,
            blind_append=self.is_blind_append(),
            engine=self.engine,
            txn_id=self.txn_id,
            in_commit_timestamp=ict,
            metrics=metrics,
            user_metadata=user_metadata,
            row_tracking_preserved=row_tracking,
        )
        domains = dict(self.domains)
        adds = self.adds
        if row_tracking and adds:
            adds, hwm = with_row_ids(adds, high_water_mark=state.row_id_hwm, version=state.version)
            if hwm != state.row_id_hwm:
                domains[ROW_TRACKING_DOMAIN] = json.dumps({"rowIdHighWaterMark": hwm}, separators=(",", ":"))
        changed_protocol = self.snapshot is None or state.protocol != self.snapshot.protocol
        return entry_actions(
            info,
            protocol=state.protocol if changed_protocol else None,
            metadata=md,
            app_transaction=(self.app_id, self.app_version) if self.app_id is not None else None,
            domains=domains,
            removes=self.removes,
            adds=adds,
            cdcs=self.cdcs,
        )

    def _in_commit_timestamp(self, state: _AttemptState, now: int) -> tuple[int | None, Metadata | None]:
        """The attempt's in-commit timestamp (None when the table does not use them) and
        the metadata to commit: this transaction's, with the enablement version and
        timestamp recorded when this commit turns in-commit timestamps on."""
        md = self._metadata
        effective_md = self.metadata
        if not (
            effective_md is not None
            and is_true(effective_md.configuration, ENABLE_ICT)
            and features.is_enabled(state.protocol, "inCommitTimestamp")
        ):
            return None, md
        ict = max(now, (state.last_ict or 0) + 1)
        was_enabled = self.snapshot is not None and is_true(self.snapshot.configuration, ENABLE_ICT)
        if md is not None and not was_enabled and self.snapshot is not None:
            conf = dict(md.configuration)
            conf[ICT_ENABLEMENT_VERSION] = str(state.version)
            conf[ICT_ENABLEMENT_TIMESTAMP] = str(ict)
            md = replace(md, configuration=conf)
        return ict, md

    # ---------------------------------------------------------------- checkpoints
    def _maybe_checkpoint(self, version: int, state: _AttemptState) -> bool:
        md = self.metadata
        interval = int_property(md.configuration, CHECKPOINT_INTERVAL, 10) if md else 10
        if version == 0 or interval <= 0 or version % interval != 0:
            return False
        try:
            from delta_pyds.transaction.checkpoint_writer import write_checkpoint

            write_checkpoint(self.storage, version)
        except Exception as exc:  # never fail a commit that is already in the log
            log.warning(
                "pydelta: could not write the checkpoint of version %s of %s: %s", version, self.storage.root, exc
            )
            return False
        try:
            from delta_pyds.log.cleanup import cleanup_expired_logs

            cleanup_expired_logs(self.storage, md.configuration if md else {}, up_to=version, protocol=state.protocol)
        except Exception as exc:  # best effort, like the checkpoint
            log.warning("pydelta: could not clean up expired log files of %s: %s", self.storage.root, exc)
        return True


@dataclass
class _AttemptState:
    version: int
    row_id_hwm: int
    last_ict: int | None
    protocol: Protocol
    creating: bool


def _backoff(attempt: int) -> None:
    if attempt <= 2:
        time.sleep(random.uniform(0, 0.01))
        return
    time.sleep(min(2.0, 0.01 * (2 ** min(attempt, 10))) * random.uniform(0.5, 1.0))
