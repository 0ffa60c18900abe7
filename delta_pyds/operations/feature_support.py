"""Adding and dropping table features: ``DeltaTable.addFeatureSupport(name)`` and
``dropFeatureSupport(name, truncateHistory=...)`` (delta-spark's ``ALTER TABLE SET
TBLPROPERTIES ('delta.feature.<name>' = 'supported')`` and ``ALTER TABLE DROP FEATURE``).

Guarantees:

* ``add_feature_support`` lists a feature delta_pyds can write in the protocol (upgrading
  a legacy protocol to table features, keeping every feature it implied), in one
  ``SET TBLPROPERTIES`` commit; a feature already supported commits nothing; an unknown
  feature, or one delta_pyds cannot write, is refused by name
  (:class:`UnsupportedFeatureError`);
* ``drop_feature_support`` removes a feature from the protocol only when nothing on the
  table, and for reader-writer features nothing in the history still in the log, depends
  on it, as the protocol requires:

  - writer features ``checkConstraints`` (refused while constraints exist, naming them),
    ``changeDataFeed`` and ``inCommitTimestamp`` (their properties are turned off in the
    same commit), ``appendOnly`` (refused while ``delta.appendOnly=true``);
  - reader-writer features ``deletionVectors``, ``v2Checkpoint``, ``typeWidening``,
    ``columnMapping``: a first step turns the feature off and removes its traces from the
    latest version (``delta.enableDeletionVectors=false`` and files with deletion vectors
    rewritten by the caller; ``delta.checkpointPolicy=classic`` and a classic checkpoint;
    ``delta.enableTypeWidening=false``); the feature leaves the protocol only once no
    log entry left in ``_delta_log`` that a reconstructable version needs carries a trace,
    else :class:`FeatureDropError` says which versions do. ``truncateHistory=True`` first
    truncates the history as delta-spark's ``TRUNCATE HISTORY`` does: a checkpoint at the
    latest version, then the log entries older than 24 hours below it are deleted (the
    log still starts at a checkpoint); so the drop goes through 24 hours after the
    first step.
    ``typeWidening`` with recorded type changes and ``columnMapping`` with mode ``name`` /
    ``id`` need a rewrite of every file: refused by name;
  - any other feature is refused by name; a feature the table does not have raises
    :class:`FeatureDropError` (delta-spark: ``DELTA_FEATURE_DROP_FEATURE_NOT_PRESENT``);
* the protocol after a drop is the smallest one holding the remaining features (legacy
  versions again when they suffice). No Spark: rewriting files is the caller's job
  (:data:`NEEDS_REWRITE` says when).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import replace

import pyarrow as pa
import pyarrow.parquet as pq

from delta_pyds.errors import FeatureDropError, UnsupportedFeatureError
from delta_pyds.log.files import LOG_DIR, parse_log_file_name
from delta_pyds.operations.properties import set_properties
from delta_pyds.protocol import features
from delta_pyds.protocol.actions import Protocol
from delta_pyds.protocol.schema import ArrayType, DataType, MapType, StructType
from delta_pyds.protocol.table_properties import (
    APPEND_ONLY,
    COLUMN_MAPPING_MODE,
    ENABLE_CDF,
    ENABLE_DV,
    ENABLE_ICT,
    ENABLE_TYPE_WIDENING,
    ICT_ENABLEMENT_TIMESTAMP,
    ICT_ENABLEMENT_VERSION,
    constraints_of,
    is_true,
    required_protocol,
)
from delta_pyds.storage.store import Storage
from delta_pyds.table.snapshot import Snapshot
from delta_pyds.transaction.commit import Transaction

log = logging.getLogger(__name__)

CHECKPOINT_POLICY = "delta.checkpointPolicy"
TRUNCATE_HISTORY_RETENTION = "interval 24 hours"
WRITER_DROPPABLE = ("checkConstraints", "changeDataFeed", "inCommitTimestamp", "appendOnly")
READER_DROPPABLE = ("deletionVectors", "v2Checkpoint", "typeWidening", "typeWidening-preview", "columnMapping")
DROPPABLE = WRITER_DROPPABLE + READER_DROPPABLE
NEEDS_REWRITE = ("deletionVectors",)  # the caller purges files with deletion vectors first


def _canonical_feature(name: str, error_class: str) -> str:
    """The feature's protocol spelling; an unknown name raises with delta-spark's error
    class for the call (``error_class``) in brackets at the start of the message."""
    if not isinstance(name, str) or not name:
        raise TypeError(f"featureName must be a non-empty str, got {name!r}")
    for known in features.FEATURES:
        if known.lower() == name.lower():
            return known
    raise UnsupportedFeatureError(f"[{error_class}] {name} is not a table feature delta_pyds knows", (name,))


def add_feature_support(storage: Storage, name: str) -> int:
    """Adds ``name`` to the protocol (see the module docstring); returns the version."""
    feature = _canonical_feature(name, "DELTA_UNSUPPORTED_FEATURES_IN_CONFIG")
    if not features.FEATURES[feature].write:
        raise UnsupportedFeatureError(
            f"addFeatureSupport({feature}): delta_pyds cannot write tables with this feature", (feature,)
        )
    snap = Snapshot.load(storage)
    if features.is_enabled(snap.protocol, feature):
        return snap.version
    return set_properties(storage, {f"delta.feature.{feature}": "supported"})


def _type_changes(dtype: DataType) -> bool:
    if isinstance(dtype, StructType):
        return any("delta.typeChanges" in (f.metadata or {}) or _type_changes(f.type) for f in dtype.fields)
    if isinstance(dtype, ArrayType):
        return _type_changes(dtype.element_type)
    if isinstance(dtype, MapType):
        return _type_changes(dtype.key_type) or _type_changes(dtype.value_type)
    return False


def _history_traces(storage: Storage, feature: str) -> list[int]:
    """Versions of the log entries left in ``_delta_log`` that a reader of some version
    still reconstructable from them needs ``feature`` for: checkpoints, and commits above
    the oldest version the log can start at (commit 0 when it is there, else the oldest
    checkpoint, whose commit is covered by the checkpoint)."""
    listing = [
        f for path in sorted(_list(storage)) if (f := parse_log_file_name(path.rsplit("/", 1)[-1], path)) is not None
    ]
    has_zero = any(f.kind == "commit" and f.version == 0 for f in listing)
    checkpoints = [f.version for f in listing if f.kind == "checkpoint"]
    start = -1 if has_zero or not checkpoints else min(checkpoints)
    found = []
    for f in listing:
        if feature == "v2Checkpoint":
            if f.kind == "checkpoint" and f.checkpoint_kind == "v2":
                found.append(f.version)
            continue
        if f.kind == "commit" and f.version > start:
            if _commit_has(storage, f.path, feature):
                found.append(f.version)
        elif f.kind == "checkpoint" and f.file_format == "parquet" and feature == "deletionVectors":
            if _checkpoint_has_dvs(storage, f.path):
                found.append(f.version)
    return sorted(set(found))


def _checkpoint_has_dvs(storage: Storage, path: str) -> bool:
    """Whether a classic checkpoint part adds a file with a deletion vector. A part that
    cannot be read (torn, truncated, not Parquet, no ``add`` column of the protocol's
    shape) counts as one that does: nothing proves the feature unused there, and truncating
    the history removes it like any other old entry."""
    try:
        with storage.open_input(path) as fh:
            table = pq.read_table(fh, columns=["add"])
        adds = table.column("add").combine_chunks()
        names = [adds.type.field(i).name for i in range(adds.type.num_fields)]
        return "deletionVector" in names and adds.field("deletionVector").null_count < len(adds)
    except FileNotFoundError:  # deleted by a concurrent cleanup: not a trace any more
        return False
    except (pa.ArrowException, OSError, KeyError, TypeError, ValueError, AttributeError) as exc:
        log.warning("dropFeatureSupport: checkpoint %s cannot be read (%s); counted as using the feature", path, exc)
        return True


def _list(storage: Storage) -> list[str]:
    try:
        return list(storage.fs.ls(storage.join(LOG_DIR), detail=False))
    except FileNotFoundError:
        return []


def truncate_history_of(storage: Storage, snap: Snapshot) -> None:
    """delta-spark's ``TRUNCATE HISTORY``: a checkpoint at the latest version, then the
    log entries older than 24 hours below it are deleted (metadata cleanup with
    ``delta.logRetentionDuration`` of 24 hours; the log still starts at a checkpoint)."""
    from delta_pyds.log.cleanup import LOG_RETENTION, cleanup_expired_logs
    from delta_pyds.transaction.checkpoint_writer import write_checkpoint

    write_checkpoint(storage, snap.version)
    cleanup_expired_logs(
        storage,
        {**snap.configuration, LOG_RETENTION: TRUNCATE_HISTORY_RETENTION},
        up_to=snap.version,
        protocol=snap.protocol,
        force=True,
    )


def _commit_has(storage: Storage, path: str, feature: str) -> bool:
    """Whether a commit uses ``feature``; an unreadable one (a torn line, not JSON objects)
    counts as one that does (see :func:`_checkpoint_has_dvs`)."""
    try:
        return _actions_use(storage.read_bytes(path), feature)
    except FileNotFoundError:
        return False
    except (ValueError, AttributeError, TypeError) as exc:  # JSONDecodeError is a ValueError
        log.warning("dropFeatureSupport: commit %s cannot be read (%s); counted as using the feature", path, exc)
        return True


def _actions_use(data: bytes, feature: str) -> bool:
    for line in data.splitlines():
        if not line.strip():
            continue
        action = json.loads(line)
        if feature == "deletionVectors":
            for kind in ("add", "remove"):
                if (action.get(kind) or {}).get("deletionVector"):
                    return True
        elif feature in ("typeWidening", "typeWidening-preview") and "metaData" in action:
            if b"delta.typeChanges" in line:
                return True
        elif feature == "columnMapping" and "metaData" in action:
            conf = action["metaData"].get("configuration") or {}
            if (conf.get(COLUMN_MAPPING_MODE) or "none").lower() != "none":
                return True
    return False


def _without(snap: Snapshot, feature: str, conf: dict[str, str]) -> Protocol:
    """The protocol of ``snap`` without ``feature``: the smallest holding the rest
    (``conf``: the configuration the drop commits)."""
    rest = (set(features.writer_features(snap.protocol)) | set(features.reader_features(snap.protocol))) - {feature}
    return required_protocol(
        snap.schema, {k: v for k, v in conf.items() if not k.startswith("delta.feature.")}, None, extra_features=rest
    )


# the table properties each feature's drop turns off (and removes)
_PROPERTIES_OFF = {
    "changeDataFeed": (ENABLE_CDF,),
    "inCommitTimestamp": (ENABLE_ICT, ICT_ENABLEMENT_VERSION, ICT_ENABLEMENT_TIMESTAMP),
    "deletionVectors": (ENABLE_DV,),
    "typeWidening": (ENABLE_TYPE_WIDENING,),
    "typeWidening-preview": (ENABLE_TYPE_WIDENING,),
    "v2Checkpoint": (CHECKPOINT_POLICY,),
}


def drop_feature_support(
    storage: Storage,
    name: str,
    *,
    truncate_history: bool = False,
    purge: Callable[[Snapshot], None] | None = None,
) -> int:
    """Drops ``name`` from the protocol (see the module docstring); ``purge(snapshot)``
    rewrites the files with deletion vectors (Spark). Returns the version committed."""
    feature = _canonical_feature(name, "DELTA_FEATURE_DROP_UNSUPPORTED_CLIENT_FEATURE")
    snap = Snapshot.load(storage)
    _check_droppable(snap, feature)
    conf = dict(snap.configuration)
    off = _PROPERTIES_OFF.get(feature, ())
    if feature in READER_DROPPABLE:
        # step 1: turn the feature off and remove its traces from the latest version
        snap, conf = _turn_off(storage, snap, feature, off, purge)
        if feature == "v2Checkpoint":
            return _drop_v2_checkpoint(storage, snap, truncate_history)
        snap = _without_history_traces(storage, snap, feature, truncate_history)
    else:
        for k in off:
            conf.pop(k, None)
    txn = Transaction(storage, snap)
    txn.update_metadata(replace(snap.metadata, configuration=conf))
    txn.update_protocol(_without(snap, feature, conf))
    params = {"featureName": feature}
    if truncate_history:
        params["truncateHistory"] = "true"
    return txn.commit("DROP FEATURE", params).version


def _check_droppable(snap: Snapshot, feature: str) -> None:
    """Raises when ``feature`` cannot be dropped from ``snap``'s table as it is."""
    features.check_write(snap.protocol)
    if not features.is_enabled(snap.protocol, feature):
        raise FeatureDropError(
            f"dropFeatureSupport({feature}): the table does not have this feature "
            "(delta-spark: DELTA_FEATURE_DROP_FEATURE_NOT_PRESENT)"
        )
    if feature not in DROPPABLE:
        raise UnsupportedFeatureError(
            f"dropFeatureSupport({feature}): delta_pyds can drop only {', '.join(DROPPABLE)}", (feature,)
        )
    conf = snap.configuration
    if feature == "checkConstraints" and constraints_of(conf):
        raise FeatureDropError(
            f"dropFeatureSupport(checkConstraints): the table has constraints "
            f"{', '.join(sorted(constraints_of(conf)))}; drop them first "
            "(delta-spark: DELTA_CANNOT_DROP_CHECK_CONSTRAINT_FEATURE)"
        )
    if feature == "appendOnly" and is_true(conf, APPEND_ONLY):
        raise FeatureDropError("dropFeatureSupport(appendOnly): set delta.appendOnly=false first")
    if feature == "columnMapping" and snap.column_mapping_mode != "none":
        raise UnsupportedFeatureError(
            f"dropFeatureSupport(columnMapping): the table uses column mapping mode "
            f"{snap.column_mapping_mode}; dropping it needs every data file rewritten with the logical "
            "column names, which delta_pyds does not do",
            ("columnMapping",),
        )
    if feature.startswith("typeWidening") and _type_changes(snap.schema):
        raise UnsupportedFeatureError(
            f"dropFeatureSupport({feature}): the schema records type changes (delta.typeChanges); "
            "dropping the feature needs the files written before them rewritten, which delta_pyds does not do",
            (feature,),
        )


def _turn_off(
    storage: Storage,
    snap: Snapshot,
    feature: str,
    off: tuple[str, ...],
    purge: Callable[[Snapshot], None] | None,
) -> tuple[Snapshot, dict[str, str]]:
    """Commits the reader feature's properties off (when any is set) and, for deletion
    vectors, purges the files that still have one; the snapshot after, and its
    configuration."""
    conf = dict(snap.configuration)
    target = {k: v for k, v in conf.items() if k not in off}
    if feature == "deletionVectors":
        target[ENABLE_DV] = "false"
    if target != conf:
        conf = target
        txn = Transaction(storage, snap)
        txn.update_metadata(replace(snap.metadata, configuration=conf))
        txn.commit("SET TBLPROPERTIES", {"properties": {k: conf.get(k, "") for k in off}})
        snap = Snapshot.load(storage)
    if feature in NEEDS_REWRITE and any(snap.files.column("deletion_vector").to_pylist()):
        if purge is None:
            raise FeatureDropError(f"dropFeatureSupport({feature}): files with deletion vectors remain")
        purge(snap)
        snap = Snapshot.load(storage)
    return snap, conf


def _without_history_traces(storage: Storage, snap: Snapshot, feature: str, truncate_history: bool) -> Snapshot:
    """Raises while log entries still use ``feature`` (after truncating the history older
    than 24 hours, with ``truncate_history``); the snapshot to drop it from."""
    traces = _history_traces(storage, feature)
    if traces and truncate_history:
        truncate_history_of(storage, snap)
        snap = Snapshot.load(storage)  # the old one may read entries the truncation deleted
        traces = _history_traces(storage, feature)
    if traces:
        raise FeatureDropError(
            f"dropFeatureSupport({feature}): the feature is off and the latest version no longer "
            f"uses it, but log entries still in _delta_log do (versions {traces[0]}..{traces[-1]}); "
            "readers of those versions need the feature. Wait 24 hours, then run "
            "dropFeatureSupport again with truncateHistory=True: it checkpoints and deletes the "
            "log entries older than 24 hours (delta-spark: DELTA_FEATURE_DROP_WAIT_FOR_RETENTION_PERIOD"
            " / DELTA_FEATURE_DROP_HISTORICAL_VERSIONS_EXIST)"
        )
    return snap


def _drop_v2_checkpoint(storage: Storage, snap: Snapshot, truncate_history: bool) -> int:
    from delta_pyds.transaction.checkpoint_writer import write_checkpoint

    traces = _history_traces(storage, "v2Checkpoint")
    if traces and truncate_history:
        truncate_history_of(storage, snap)
        snap = Snapshot.load(storage)  # the old one may read entries the truncation deleted
        traces = _history_traces(storage, "v2Checkpoint")
    if traces:
        # a classic checkpoint first, so that readers never need the v2 ones again
        write_checkpoint(storage, snap.version)
        raise FeatureDropError(
            f"dropFeatureSupport(v2Checkpoint): checkpointPolicy is now classic and version "
            f"{snap.version} has a classic checkpoint, but V2 checkpoints remain in _delta_log "
            f"(versions {', '.join(map(str, traces))}); wait 24 hours, then run again with "
            "truncateHistory=True (delta-spark: DELTA_FEATURE_DROP_WAIT_FOR_RETENTION_PERIOD)"
        )
    txn = Transaction(storage, snap)
    txn.update_protocol(_without(snap, "v2Checkpoint", dict(snap.configuration)))
    params = {"featureName": "v2Checkpoint"}
    if truncate_history:
        params["truncateHistory"] = "true"
    return txn.commit("DROP FEATURE", params).version
