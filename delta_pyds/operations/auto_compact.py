"""Auto compaction: after a write commits, compact the partitions it added files to when
they hold enough small files, as delta-spark 3.x/4.x's ``AutoCompact`` post-commit hook does.

Guarantees:

* it runs when the session conf ``spark.databricks.delta.autoCompact.enabled`` (for the
  writers that see no session conf, the write option of that name: :func:`option_settings`)
  says ``true`` (``false`` turns it off whatever the table says), else when the table property
  ``delta.autoOptimize`` (deprecated) is true, else when ``delta.autoOptimize.autoCompact``
  is ``true`` (delta-spark's priority order); never after a commit that added no file, nor
  after an OPTIMIZE;
* it compacts the partitions the write added files to that hold at least ``minNumFiles``
  (default 50) files smaller than ``minFileSize`` (default ``maxFileSize / 2``), at most
  ``maxNumModifiedPartitions`` (128) of them; with ``modifiedPartitionsOnly.enabled=false``
  (or ``target=table``) every partition once any partition holds that many;
* within those partitions it is OPTIMIZE's bin packing with ``maxFileSize`` (default 128
  MiB) as the bin size: files smaller than ``minFileSize`` (and files with a deletion
  vector), bins of two files or more, or of one file with a deletion vector (rewritten to
  drop its deleted rows);
* it is a commit of its own from the snapshot the write committed: ``OPTIMIZE`` with
  ``auto: true`` in its ``operationParameters``, ``dataChange=false``, checked for
  conflicts like every OPTIMIZE (a concurrent change to a compacted file makes it lose);
* it never fails nor undoes the write: any error (a lost race, a bad setting, a failed
  read) is logged, its written files are deleted, and :func:`auto_compact` returns None.
No Spark: the rewrite is :mod:`delta_pyds.operations.compaction` in this process, or a
caller's ``rewrite`` (Spark's OPTIMIZE for the tables that need it)."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from delta_pyds.errors import SettingValueError
from delta_pyds.operations.compaction import local_compaction_refusal, rewrite_locally
from delta_pyds.operations.optimize import compaction_bins
from delta_pyds.protocol.action_types import AddFile
from delta_pyds.storage.store import Storage
from delta_pyds.table.latest import snapshot_at
from delta_pyds.table.snapshot import Snapshot
from delta_pyds.transaction.commit import CommitResult

log = logging.getLogger(__name__)

AUTO_COMPACT_PROPERTY = "delta.autoOptimize.autoCompact"
AUTO_OPTIMIZE_PROPERTY = "delta.autoOptimize"  # deprecated; true turns auto compaction on
CONF_PREFIX = "spark.databricks.delta.autoCompact."
ENABLED_CONF = CONF_PREFIX + "enabled"
MIN_NUM_FILES_CONF = CONF_PREFIX + "minNumFiles"
MAX_FILE_SIZE_CONF = CONF_PREFIX + "maxFileSize"
MIN_FILE_SIZE_CONF = CONF_PREFIX + "minFileSize"
MODIFIED_ONLY_CONF = CONF_PREFIX + "modifiedPartitionsOnly.enabled"
TARGET_CONF = CONF_PREFIX + "target"  # Databricks' name: table | commit | partition
MAX_PARTITIONS_CONF = CONF_PREFIX + "maxNumModifiedPartitions"
CONF_KEYS = (
    ENABLED_CONF,
    MIN_NUM_FILES_CONF,
    MAX_FILE_SIZE_CONF,
    MIN_FILE_SIZE_CONF,
    MODIFIED_ONLY_CONF,
    TARGET_CONF,
    MAX_PARTITIONS_CONF,
)

# a rewrite given by the caller: (snapshot, victims (file actions), bins, bin size) -> adds
Rewrite = Callable[[Snapshot, pa.Table, list[list[int]], int], list[AddFile]]


@dataclass(frozen=True)
class AutoCompactSettings:
    """The session's auto compaction settings (delta-spark's ``DeltaSQLConf`` defaults)."""

    enabled: bool | None = None  # None: the table's properties decide
    min_num_files: int = 50
    max_file_size: int = 128 * 1024 * 1024
    min_file_size: int | None = None  # None: max_file_size // 2
    modified_partitions_only: bool = True
    max_partitions: int = 128

    @property
    def small_file_size(self) -> int:
        return self.max_file_size // 2 if self.min_file_size is None else self.min_file_size

    @classmethod
    def from_conf(cls, conf: Mapping[str, str | None]) -> AutoCompactSettings:
        """The settings the session confs ``conf`` (keys of :data:`CONF_KEYS`) give;
        :class:`SettingValueError` naming the conf for a value it does not accept."""
        enabled = _choice(conf, ENABLED_CONF, ("true", "false"))
        target = _choice(conf, TARGET_CONF, ("table", "commit", "partition"))
        modified = _choice(conf, MODIFIED_ONLY_CONF, ("true", "false"))
        min_size = conf.get(MIN_FILE_SIZE_CONF)
        return cls(
            enabled=None if enabled is None else enabled == "true",
            min_num_files=_count(conf, MIN_NUM_FILES_CONF, 50, minimum=0),
            max_file_size=_count(conf, MAX_FILE_SIZE_CONF, 128 * 1024 * 1024, minimum=0),
            min_file_size=None if min_size is None else _count(conf, MIN_FILE_SIZE_CONF, 0, minimum=0),
            modified_partitions_only=(modified != "false") if target is None else target != "table",
            max_partitions=_count(conf, MAX_PARTITIONS_CONF, 128, minimum=1),
        )


def option_settings(options: Mapping[str, str]) -> AutoCompactSettings | None:
    """The settings a write's options carry (:attr:`WriteOptions.auto_compact
    <delta_pyds.write.options.WriteOptions.auto_compact>`: the session confs' names, for the
    writers that get no session conf); None when they carry none (the table's properties
    decide). :class:`SettingValueError` naming the option for a value it does not accept."""
    if not options:
        return None
    return AutoCompactSettings.from_conf(options)


def _choice(conf: Mapping[str, str | None], key: str, accepted: Sequence[str]) -> str | None:
    raw = conf.get(key)
    if raw is None:
        return None
    value = str(raw).strip().lower()
    if value not in accepted:
        raise SettingValueError(f"{key} must be one of: {', '.join(accepted)}; found {raw!r}")
    return value


def _count(conf: Mapping[str, str | None], key: str, default: int, *, minimum: int) -> int:
    raw = conf.get(key)
    if raw is None:
        return default
    try:
        value = int(str(raw).strip())
    except ValueError:
        value = minimum - 1
    if value < minimum:
        raise SettingValueError(f"{key} must be an integer >= {minimum}; found {raw!r}")
    return value


def auto_compact_enabled(settings: AutoCompactSettings, configuration: Mapping[str, str]) -> bool:
    """Whether auto compaction runs on a table with ``configuration`` (its properties)."""
    if settings.enabled is not None:
        return settings.enabled
    legacy = configuration.get(AUTO_OPTIMIZE_PROPERTY)
    if legacy is not None and legacy.strip().lower() == "true":
        return True
    value = configuration.get(AUTO_COMPACT_PROPERTY)
    if value is None:
        return False
    value = value.strip().lower()
    if value not in ("true", "false"):
        raise SettingValueError(f"table property {AUTO_COMPACT_PROPERTY} must be true or false; found {value!r}")
    return value == "true"


def _key(values: Any) -> str:
    items = values.items() if isinstance(values, Mapping) else (values or [])
    return json.dumps(sorted((str(k), v) for k, v in items))


def chosen_partitions(
    snap: Snapshot, active: pa.Table, added: Sequence[Any], settings: AutoCompactSettings
) -> set[str]:
    """The partitions (keys of their values) to compact: those the write ``added`` files
    to (their ``partitionValues``) with at least ``min_num_files`` small files in
    ``active`` (``snap``'s file actions); every partition when not modified-only."""
    touched = {_key(v) for v in added}
    if not touched:
        return set()
    small: dict[str, int] = {}
    for v, size in zip(active.column("partitionValues").to_pylist(), active.column("size").to_pylist()):
        if int(size) < settings.small_file_size:
            k = _key(v)
            small[k] = small.get(k, 0) + 1
    if not settings.modified_partitions_only:
        enough = max(small.values(), default=0) >= settings.min_num_files
        return {_key(v) for v in active.column("partitionValues").to_pylist()} if enough else set()
    picked = sorted(k for k in touched if small.get(k, 0) >= settings.min_num_files)
    return set(picked[: settings.max_partitions])


def auto_compact(
    storage: Storage,
    version: int,
    adds: Sequence[Mapping[str, Any]],
    settings: AutoCompactSettings | None = None,
    *,
    rewrite: Rewrite | None = None,
) -> int | None:
    """Compacts, after the write committed as ``version`` with ``adds``, what the module
    docstring says; the compaction's version, or None when it did not run or lost. Never raises."""
    try:
        snap = snapshot_at(storage, version)  # the kept snapshot and one commit, after a statement
        if not auto_compact_enabled(settings or AutoCompactSettings(), snap.configuration):
            return None
        return _compact(snap, adds, settings or AutoCompactSettings(), rewrite)
    except Exception as exc:  # the write stands whatever happens here
        log.warning("pydelta: auto compaction of %s after version %s did not commit: %s", storage.root, version, exc)
        return None


def _compact(
    snap: Snapshot, adds: Sequence[Mapping[str, Any]], settings: AutoCompactSettings, rewrite: Rewrite | None
) -> int | None:
    from delta_pyds.table.state import file_actions

    active = file_actions(snap).active
    parts = chosen_partitions(snap, active, [a.get("partitionValues") or {} for a in adds], settings)
    if not parts:
        return None
    keep = [_key(v) in parts for v in active.column("partitionValues").to_pylist()]
    active = active.filter(pa.array(keep, pa.bool_()))
    bins = compaction_bins(
        active, target_size=settings.max_file_size, min_files=2, every_file=False, small_size=settings.small_file_size
    )
    if not bins:
        return None
    refusal = local_compaction_refusal(snap)
    if refusal is not None and rewrite is None:
        log.info("pydelta: auto compaction of %s needs Spark: %s", snap.storage.root, refusal)
        return None
    if rewrite is not None:
        new_adds = rewrite(snap, active, bins, settings.max_file_size)
    else:
        new_adds = rewrite_locally(snap, active, bins, settings.max_file_size)
    return commit_compaction(snap, active, bins, new_adds, predicate=_predicate(snap, parts), auto=True)


def commit_compaction(
    snap: Snapshot,
    active: pa.Table,
    bins: list[list[int]],
    adds: list[AddFile],
    *,
    predicate: list[str],
    auto: bool,
) -> int:
    """One ``OPTIMIZE`` commit from ``snap`` replacing the files of ``bins`` by ``adds``
    (deleted if it fails); its version."""
    from delta_pyds.transaction.commit import Transaction
    from delta_pyds.transaction.file_actions import remove_actions
    from delta_pyds.transaction.staged_files import delete_on_failure

    victims = active.take(pa.array(sorted(i for b in bins for i in b), pa.int64()))
    removes = remove_actions(victims, data_change=False)
    txn = Transaction(snap.storage, snap)
    txn.remove_files(removes)
    txn.add_files(adds)
    params = {"predicate": json.dumps(predicate), "zOrderBy": "[]", "clusterBy": "[]", "auto": auto}
    added = sum(int(a["size"]) for a in adds)
    removed = sum(int(s) for s in victims.column("size").to_pylist())
    metrics = {
        "numFilesAdded": len(adds),
        "numFilesRemoved": len(removes),
        "filesAdded_totalSize": added,
        "filesRemoved_totalSize": removed,
        "numBatches": 1,
        "numRemovedBytes": removed,
        "numAddedBytes": added,
        "numRemovedFiles": len(removes),
        "numAddedFiles": len(adds),
        "numDeletionVectorsRemoved": sum(1 for d in victims.column("deletionVector").to_pylist() if d),
    }
    with delete_on_failure(snap.storage, adds):
        return txn.commit("OPTIMIZE", params, metrics=metrics).version


def _predicate(snap: Snapshot, parts: set[str]) -> list[str]:
    """delta-spark's record of the compacted partitions: one SQL condition (``<=>`` per
    partition column, the partitions OR-ed), none for an unpartitioned table."""
    if not snap.partition_columns:
        return []
    logical = dict(zip(snap.physical_partition_columns, snap.partition_columns))
    branches = []
    for k in sorted(parts):
        terms = []
        for name, value in json.loads(k):
            literal = "NULL" if value is None else "'" + str(value).replace("\\", "\\\\").replace("'", "\\'") + "'"
            terms.append(f"(`{logical.get(name, name)}` <=> {literal})")
        branches.append(" AND ".join(terms))
    return [" OR ".join(f"({b})" for b in branches)] if branches else []


def compact_after_commit(
    storage: Storage,
    result: CommitResult | None,
    settings: AutoCompactSettings | None = None,
    *,
    rewrite: Rewrite | None = None,
) -> int | None:
    """:func:`auto_compact` after one commit of a write: nothing for no commit, a skipped
    one or one that added no file. Never raises."""
    if result is None or result.skipped:
        return None
    adds = [a["add"] for a in result.actions if "add" in a]
    return auto_compact(storage, result.version, adds, settings, rewrite=rewrite) if adds else None
