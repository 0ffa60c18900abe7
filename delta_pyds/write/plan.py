"""Planning and committing a DataFrame-style write (append / overwrite) without Spark.

:func:`plan_write` runs on the driver before any data is written: it loads the
table (if any), applies the save mode, decides the table's metadata and protocol
after the write (creation, ``mergeSchema``, ``overwriteSchema``, table properties),
validates everything that can be validated up front — unsupported writer features,
schema mismatches, bad partition columns, append-only tables, constraint expressions,
``replaceWhere`` — and returns a small, picklable :class:`WritePlan` whose
:class:`~delta_pyds.write.parquet_writer.WriteSpec` the executors use. :func:`commit_write`
turns the add actions the executors return into one commit: it removes what an
overwrite replaces (all files, the files matching a ``replaceWhere`` on partition
columns, the rows matching one on data columns — :mod:`delta_pyds.write.replace_where` — or the
partitions written under ``partitionOverwriteMode=dynamic``) and records what it read, so
concurrent writers are checked for conflicts.

Guarantees: every error from :func:`plan_write` happens before data is written; a
plan with ``skip`` set (``saveMode=ignore`` on an existing table, or an idempotent
``txnAppId``/``txnVersion`` already committed) writes and commits nothing. A first write
that is not an overwrite, to a location that holds visible files but no Delta log (a
folder of plain Parquet files), is refused with :class:`TableExistsError` pointing to
``convertToDelta``: the new table would not contain them and a VACUUM would delete them.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, cast

import pyarrow as pa

from delta_pyds.errors import OptionValueError, SchemaError, TableNotFoundError
from delta_pyds.expressions.evaluator import evaluate_predicate
from delta_pyds.protocol import features
from delta_pyds.protocol.action_types import AddFile
from delta_pyds.protocol.actions import Metadata, Protocol
from delta_pyds.protocol.clustering import CLUSTERING_DOMAIN, dotted, table_clustering
from delta_pyds.protocol.clustering import domain_config as clustering_domain_config
from delta_pyds.protocol.clustering import resolve as resolve_clustering
from delta_pyds.protocol.identity import columns_to_generate, with_high_water_marks
from delta_pyds.protocol.partition_values import partition_field
from delta_pyds.protocol.schema import StructType, is_void_type, nullable_type, parse_schema
from delta_pyds.protocol.schema_evolution import (
    assign_column_mapping,
    check_names,
    logical_arrow_schema,
    reconcile,
    replace_schema,
    without_fields,
)
from delta_pyds.protocol.stats import stats_columns
from delta_pyds.protocol.table_properties import (
    APPEND_ONLY,
    COLUMN_MAPPING_MAX_ID,
    COLUMN_MAPPING_MODE,
    COMPRESSION_CODEC,
    ENABLE_ROW_TRACKING,
    MIN_READER_VERSION,
    MIN_WRITER_VERSION,
    PROTOCOL_PROPERTIES,
    ROW_COMMIT_VERSION_COLUMN,
    ROW_ID_COLUMN,
    is_true,
    required_protocol,
    validate_properties,
)
from delta_pyds.storage.store import Storage
from delta_pyds.table.latest import latest_snapshot, snapshot_at
from delta_pyds.table.snapshot import Snapshot
from delta_pyds.transaction.commit import AppendOnlyError, CommitResult, TableExistsError, Transaction
from delta_pyds.transaction.file_actions import remove_actions
from delta_pyds.transaction.staged_files import delete_on_failure
from delta_pyds.write.constraints import build_checks, replace_where_rule
from delta_pyds.write.location import mark_new_table_location, refuse_non_delta_files
from delta_pyds.write.options import WriteOptions, check_data_change
from delta_pyds.write.parquet_writer import WriteSpec
from delta_pyds.write.partition_match import partition_keys, partition_predicate, partition_set_predicate

if TYPE_CHECKING:
    from delta_pyds.write.replace_where import Replacement

log = logging.getLogger(__name__)


@dataclass
class WritePlan:
    """What the driver decided for one write (pickled to executors and to commit)."""

    opts: WriteOptions
    storage: Storage
    read_version: int  # -1: the table does not exist yet
    spec: WriteSpec | None
    metadata: Metadata | None = None  # new metadata to commit (creation / schema change)
    protocol: Protocol | None = None  # new protocol to commit
    skip: str | None = None  # why nothing is written
    partition_columns: tuple = ()
    table_schema: StructType | None = None
    column_mapping_mode: str = "none"
    replace_where: Any = None  # parsed predicate
    replace_on_data: bool = False  # the replaceWhere predicate uses data (non-partition) columns
    domains: dict = field(default_factory=dict)  # metadata domains to set on commit
    clustering: tuple = ()  # logical paths of the clustering columns
    info: dict = field(default_factory=dict)


def _load(storage: Storage) -> Snapshot | None:
    try:
        return latest_snapshot(storage)  # the table's kept snapshot, brought up to date
    except TableNotFoundError:
        return None


def _refuse_void(schema: StructType, existing: StructType | None, prefix: str = "") -> None:
    """New columns of Spark's NullType cannot be stored (existing void columns are kept)."""
    for f in schema.fields:
        old = existing.get(f.name) if existing is not None else None
        if is_void_type(f.type):
            if old is not None and old.type == f.type:
                continue
            raise SchemaError(
                f"column {prefix}{f.name} has no type (Spark's NullType, e.g. from lit(None)); "
                "cast it to the type the column should have"
            )
        if isinstance(f.type, StructType):
            _refuse_void(
                f.type, old.type if old is not None and isinstance(old.type, StructType) else None, f"{prefix}{f.name}."
            )


def _partition_columns(schema: StructType, names: Sequence[str]) -> tuple[str, ...]:
    out = []
    for name in names:
        f = partition_field(schema, name, argument="option partitionBy", missing="the DataFrame")
        out.append(f.name)
    if out and len(out) == len(schema.fields):
        raise SchemaError("option partitionBy: a table cannot be partitioned by all of its columns")
    return tuple(out)


def _new_configuration(props: Mapping[str, str], base: Mapping[str, str] | None = None) -> dict[str, str]:
    conf = dict(base or {})
    for k, v in props.items():
        if k in PROTOCOL_PROPERTIES:
            continue
        conf[k] = v
    if is_true(conf, ENABLE_ROW_TRACKING):
        conf.setdefault(ROW_ID_COLUMN, f"_row-id-col-{uuid.uuid4()}")
        conf.setdefault(ROW_COMMIT_VERSION_COLUMN, f"_row-commit-version-col-{uuid.uuid4()}")
    return conf


def _mapping_mode(conf: Mapping[str, str]) -> str:
    return (conf.get(COLUMN_MAPPING_MODE) or "none").lower()


@dataclass
class _TableShape:
    """The table after the write: schema, configuration, partitioning, clustering, and
    the metadata / protocol to commit (None: unchanged)."""

    schema: StructType
    conf: dict
    mode: str  # column mapping mode
    partition_columns: tuple
    clustering: list
    cluster_domain: str | None = None
    metadata: Metadata | None = None
    protocol: Protocol | None = None


def plan_write(
    opts: WriteOptions,
    data_schema: StructType,
    *,
    storage: Storage | None = None,
    keep_identity_values: bool = False,
    spark_sql_rules: bool = False,
    snapshot: Snapshot | None = None,  # the state a rewrite read its rows from (None: the latest)
) -> WritePlan:
    """Decides a write of data with ``data_schema`` over ``snapshot``, else the latest version (module docstring).

    Identity columns the data lacks are generated by the tasks; ``keep_identity_values`` (rewrites
    of the table's own rows) lets provided values through even where the table refuses explicit
    ones. ``spark_sql_rules``: the writer checks constraints, generated columns and defaults with
    Spark SQL (the native writer): see :func:`~delta_pyds.write.constraints.build_checks`."""
    storage = storage or Storage(opts.path, opts.storage_options, allow_unsafe_commits=opts.allow_unsafe_commits)
    check = getattr(storage, "check_commits_supported", None)
    if callable(check):
        check()
    snapshot = snapshot if snapshot is not None else _load(storage)
    read_version = snapshot.version if snapshot is not None else -1
    skip = _skip_reason(opts, snapshot, storage)
    if skip is not None:
        return WritePlan(opts, storage, read_version, None, skip=skip)
    mark_new_table = snapshot is None and not opts.overwrite and refuse_non_delta_files(storage)
    validate_properties(opts.table_properties)
    if snapshot is None or (opts.overwrite and opts.overwrite_schema):
        shape = _replaced_table(opts, data_schema, snapshot)
    else:
        shape = _appended_table(opts, data_schema, snapshot)
    _refuse_void(shape.schema, snapshot.schema if snapshot is not None else None)
    final_protocol = shape.protocol or cast(Snapshot, snapshot).protocol  # no new protocol: the table exists
    features.check_write(final_protocol)
    if opts.overwrite and snapshot is not None and is_true(snapshot.configuration, APPEND_ONLY):
        raise AppendOnlyError(f"cannot overwrite {storage.root}: the table is append-only (delta.appendOnly=true)")
    spec = _write_spec(
        opts, storage, data_schema, shape, final_protocol, keep_identity_values, spark_sql_rules=spark_sql_rules
    )
    replace_node, replace_on_data = _replace_where(opts, shape, snapshot)
    check_data_change(opts, snapshot is None, shape.metadata is not None, replace_on_data)
    if mark_new_table:
        mark_new_table_location(storage)
    return WritePlan(
        opts,
        storage,
        read_version,
        spec,
        metadata=shape.metadata,
        protocol=shape.protocol,
        partition_columns=shape.partition_columns,
        table_schema=shape.schema,
        column_mapping_mode=shape.mode,
        replace_where=replace_node,
        replace_on_data=replace_on_data,
        clustering=tuple(shape.clustering),
        domains={CLUSTERING_DOMAIN: shape.cluster_domain} if shape.cluster_domain is not None else {},
    )


def _skip_reason(opts: WriteOptions, snapshot: Snapshot | None, storage: Storage) -> str | None:
    """Why a write to an existing table writes nothing (None: it writes); raises when the
    save mode refuses an existing table or its protocol cannot be written."""
    if snapshot is None:
        return None
    if opts.save_mode == "errorifexists":
        raise TableExistsError(
            f"a Delta table already exists at {storage.root} (saveMode=errorifexists); "
            "use mode('append') or mode('overwrite') to change it"
        )
    if opts.save_mode == "ignore":
        return "the table exists and saveMode=ignore"
    features.check_write(snapshot.protocol)
    if opts.txn_app_id is not None and snapshot.app_transactions.get(opts.txn_app_id, -1) >= cast(
        int, opts.txn_version
    ):  # given together
        return f"transaction {opts.txn_app_id} version {opts.txn_version} is already committed"
    return None


def _with_column_mapping_ids(schema: StructType, conf: dict, mode: str) -> StructType:
    """Under column mapping, ids and physical names for the fields that have none (the
    table's ``maxColumnId`` in ``conf`` advanced)."""
    if mode == "none":
        return schema
    schema, max_id = assign_column_mapping(schema, int(conf.get(COLUMN_MAPPING_MAX_ID) or 0))
    conf[COLUMN_MAPPING_MAX_ID] = str(max_id)
    return schema


def _replaced_table(opts: WriteOptions, data_schema: StructType, snapshot: Snapshot | None) -> _TableShape:
    """A new table, or the table replaced by ``overwriteSchema``: schema from the data,
    properties, partitioning and clustering from the options (else the table's)."""
    conf = _new_configuration(opts.table_properties, snapshot.configuration if snapshot else None)
    mode = _mapping_mode(conf)
    if snapshot is not None and snapshot.column_mapping_mode != "none" and mode == "none":
        conf[COLUMN_MAPPING_MODE] = snapshot.column_mapping_mode
        mode = snapshot.column_mapping_mode
    check_names(data_schema, column_mapping=mode != "none")
    schema = cast(StructType, nullable_type(data_schema))
    if snapshot is not None:
        schema = replace_schema(schema, snapshot.schema)
    if opts.partition_by is not None:
        partition_columns = _partition_columns(schema, opts.partition_by)
    elif snapshot is not None and all(schema.get(c) is not None for c in snapshot.partition_columns):
        partition_columns = _partition_columns(schema, snapshot.partition_columns)
    else:
        partition_columns = ()
    schema = _with_column_mapping_ids(schema, conf, mode)
    clustering, cluster_domain = _new_clustering(opts, schema, partition_columns, mode, snapshot)
    min_reader = opts.table_properties.get(MIN_READER_VERSION)
    min_writer = opts.table_properties.get(MIN_WRITER_VERSION)
    protocol: Protocol | None = required_protocol(
        schema,
        conf,
        snapshot.protocol if snapshot else None,
        min_reader=int(min_reader) if min_reader else None,
        min_writer=int(min_writer) if min_writer else None,
        extra_features=("clustering", "domainMetadata") if clustering else (),
    )
    metadata = Metadata(
        id=snapshot.metadata.id if snapshot else str(uuid.uuid4()),
        schema_string=schema.json(),
        partition_columns=partition_columns,
        configuration=conf,
        created_time=snapshot.metadata.created_time if snapshot else int(time.time() * 1000),
        name=snapshot.metadata.name if snapshot else None,
        description=snapshot.metadata.description if snapshot else None,
    )
    if snapshot is not None and protocol == snapshot.protocol:
        protocol = None
    return _TableShape(schema, conf, mode, partition_columns, clustering, cluster_domain, metadata, protocol)


def _appended_table(opts: WriteOptions, data_schema: StructType, snapshot: Snapshot) -> _TableShape:
    """The existing table written to: its partitioning, clustering and properties (the
    options must match them), its schema evolved by ``mergeSchema``."""
    conf = dict(snapshot.configuration)
    mode = snapshot.column_mapping_mode
    check_names(data_schema, column_mapping=mode != "none")
    partition_columns = tuple(snapshot.partition_columns)
    if opts.partition_by is not None and [c.lower() for c in opts.partition_by] != [
        c.lower() for c in partition_columns
    ]:
        raise SchemaError(
            f"option partitionBy ({', '.join(opts.partition_by) or 'none'}) does not match the table's "
            f"partition columns ({', '.join(partition_columns) or 'none'}); to change the partitioning, "
            "overwrite with overwriteSchema=true"
        )
    changed = {k: v for k, v in opts.table_properties.items() if conf.get(k) != v and k not in PROTOCOL_PROPERTIES}
    if changed:
        raise OptionValueError(
            "table properties can only be set when the table is created or replaced with "
            "mode('overwrite') and overwriteSchema=true; these differ from the table's: "
            + ", ".join(f"{k}={v} (table: {conf.get(k)})" for k, v in sorted(changed.items()))
        )
    shape = _TableShape(snapshot.schema, conf, mode, partition_columns, _existing_clustering(opts, snapshot))
    schema = reconcile(snapshot.schema, data_schema, merge=opts.merge_schema)
    if schema is not snapshot.schema:
        shape.schema = _with_column_mapping_ids(schema, conf, mode)
        shape.metadata = replace(snapshot.metadata, schema_string=shape.schema.json(), configuration=conf)
        needed = required_protocol(shape.schema, conf, snapshot.protocol)
        shape.protocol = needed if needed != snapshot.protocol else None
    return shape


def _replace_where(opts: WriteOptions, shape: _TableShape, snapshot: Snapshot | None) -> tuple[Any, bool]:
    """The parsed ``replaceWhere`` predicate (None without one) and whether it uses data
    (non-partition) columns; such a predicate must also be evaluable on the current rows."""
    if not opts.replace_where:
        return None, False
    logical = logical_arrow_schema(shape.schema)
    rule = replace_where_rule(opts.replace_where, logical)
    assert rule.node is not None  # replace_where_rule raises for a condition outside the subset
    lowered = {c.lower() for c in shape.partition_columns}
    on_data = any(p[0].lower() not in lowered or len(p) > 1 for p in rule.columns)
    if on_data and snapshot is not None and not opts.overwrite_schema:
        from delta_pyds.errors import ExpressionError

        try:  # the predicate must be evaluable on the table's current rows too
            evaluate_predicate(rule.node, logical_arrow_schema(snapshot.schema).empty_table())
        except (ExpressionError, KeyError) as exc:
            raise OptionValueError(f"option replaceWhere: {exc}") from None
    return rule.node, on_data


def _write_spec(
    opts: WriteOptions,
    storage: Storage,
    data_schema: StructType,
    shape: _TableShape,
    protocol: Protocol,
    keep_identity_values: bool,
    *,
    spark_sql_rules: bool,
) -> WriteSpec:
    """What the tasks need to write the data files of ``shape`` (rules, identity columns,
    statistics columns, codec, file sizes)."""
    schema, conf, mode = shape.schema, shape.conf, shape.mode
    input_names = [f.name for f in data_schema.fields]
    checks = build_checks(
        schema,
        conf,
        input_names,
        replace_where=opts.replace_where,
        logical_schema=logical_arrow_schema(schema),
        spark_sql=spark_sql_rules,
    )
    codec = opts.compression or (conf.get(COMPRESSION_CODEC) or "snappy").lower()
    codec = {"uncompressed": "none", "lz4_raw": "lz4"}.get(codec, codec)
    data_fields = without_fields(schema, shape.partition_columns)
    return WriteSpec(
        storage=storage,
        table_schema=schema,
        input_columns=tuple(input_names),
        partition_columns=shape.partition_columns,
        column_mapping_mode=mode,
        stats_columns=tuple(stats_columns(data_fields, conf, mode, required=shape.clustering)),
        tight_bounds=features.is_enabled(protocol, "deletionVectors"),
        compression=codec,
        target_file_size=opts.target_file_size,
        max_records_per_file=opts.max_records_per_file,
        materialize_partition_columns=features.is_enabled(protocol, "materializePartitionColumns"),
        checks=checks if checks else None,
        identity=columns_to_generate(schema, input_names, keep_values=keep_identity_values),
    )


def table_write_spec(
    storage: Storage,
    metadata: Metadata,
    protocol: Protocol,
    data_schema: StructType,
    clustering: Sequence[tuple[str, ...]] = (),
) -> WriteSpec:
    """The spec of writing data of ``data_schema`` into the table ``metadata`` and ``protocol``
    define before they are committed (``CREATE / REPLACE TABLE ... AS SELECT``: the files and
    the definition land in one commit), with the rules every write has."""
    conf = dict(metadata.configuration)
    schema = parse_schema(metadata.schema_string)
    shape = _TableShape(schema, conf, _mapping_mode(conf), tuple(metadata.partition_columns), list(clustering))
    opts = WriteOptions(path=storage.root, overwrite=True, save_mode="overwrite")
    return _write_spec(opts, storage, data_schema, shape, protocol, False, spark_sql_rules=False)


def _new_clustering(
    opts: WriteOptions, schema: StructType, partition_columns: Sequence[str], mode: str, snapshot: Snapshot | None
) -> tuple[list, str | None]:
    """Clustering of a created or replaced table: the clusterBy option, else (replace)
    the table's own clustering. Returns (logical paths, domain configuration to commit)."""
    old = (
        table_clustering(snapshot.schema, snapshot.domain_metadata, snapshot.column_mapping_mode)
        if snapshot is not None
        else None
    )
    if opts.cluster_by is not None:
        paths = resolve_clustering(schema, opts.cluster_by, partition_columns)
    elif old:
        missing = [dotted(p) for p in old if schema.get(p[0]) is None]
        if missing or partition_columns:
            raise SchemaError(
                f"the table is clustered by {', '.join(dotted(p) for p in old)}; "
                + (f"the new schema lacks {', '.join(missing)}" if missing else "it cannot also be partitioned")
                + ": give the new clustering with option clusterBy (an empty value removes it)"
            )
        paths = resolve_clustering(schema, old)
    else:
        return [], None
    if not paths and not old:
        return [], None
    return paths, clustering_domain_config(schema, paths, mode)


def _existing_clustering(opts: WriteOptions, snapshot: Snapshot) -> list:
    """An append keeps the table's clustering; clusterBy, if given, must match it."""
    current = table_clustering(snapshot.schema, snapshot.domain_metadata, snapshot.column_mapping_mode) or []
    if opts.cluster_by is not None:
        asked = [tuple(p.lower() for p in path) for path in opts.cluster_by]
        if asked != [tuple(p.lower() for p in path) for path in current]:
            raise SchemaError(
                f"option clusterBy ({', '.join(dotted(p) for p in opts.cluster_by) or 'none'}) does not match "
                f"the table's clustering columns ({', '.join(dotted(p) for p in current) or 'none'}); to "
                "change them, overwrite with overwriteSchema=true"
            )
    return current


# ----------------------------------------------------------------------- commit
def commit_write(
    plan: WritePlan,
    adds: list[AddFile],
    *,
    num_rows: int | None = None,
    operation: str = "WRITE",
    identity_marks: dict | None = None,
) -> CommitResult:
    """Commits the files of a planned write (see the module docstring);
    ``identity_marks`` are the extreme identity values the tasks generated."""
    opts = plan.opts
    # the snapshot the plan read (the kept one while it is the latest: no second replay)
    snapshot = snapshot_at(plan.storage, plan.read_version) if plan.read_version >= 0 else None
    txn = _write_transaction(plan, snapshot, identity_marks)
    removed, replacement = 0, None
    if opts.overwrite and snapshot is not None:
        removed, replacement = _remove_overwritten(txn, plan, snapshot, adds)
    txn.add_files(adds)
    for domain, configuration in plan.domains.items():
        txn.set_domain_metadata(domain, configuration)
    if opts.txn_app_id is not None:
        txn.set_app_transaction(opts.txn_app_id, cast(int, opts.txn_version))  # given together
    if not opts.data_change:  # a rearrangement: every file action says so (streams skip the commit)
        for action in [*txn.adds, *txn.removes]:
            action["dataChange"] = False
    metrics: dict[str, Any] = {"numFiles": len(adds), "numOutputBytes": sum(int(a.get("size") or 0) for a in adds)}
    if num_rows is not None:
        metrics["numOutputRows"] = num_rows
    if opts.overwrite:
        metrics["numRemovedFiles"] = removed
    if replacement is not None:
        metrics.update(
            numDeletedRows=replacement.deleted_rows,
            numCopiedRows=replacement.copied_rows,
            numDeletionVectorsAdded=replacement.deletion_vectors,
        )
    # the files replaceWhere wrote (rewrites, DV files) are this commit's: gone if it fails
    with delete_on_failure(plan.storage, replacement.written if replacement is not None else []):
        return txn.commit(
            operation,
            _operation_parameters(plan),
            user_metadata=opts.user_metadata,
            metrics=metrics,
            max_attempts=opts.max_commit_attempts,
            checkpoint=opts.checkpoint_on_write,
        )


def _write_transaction(plan: WritePlan, snapshot: Snapshot | None, identity_marks: dict | None) -> Transaction:
    """The transaction of a planned write, with its new metadata (identity high-water
    marks included) and protocol."""
    txn = Transaction(plan.storage, snapshot)
    txn.create_conflict = {"errorifexists": "error", "ignore": "ignore", "append": "append"}.get(
        plan.opts.save_mode, "error"
    )
    metadata = plan.metadata
    schema = cast(StructType, plan.table_schema)  # planned (not skipped)
    marked = with_high_water_marks(schema, identity_marks or {})
    if marked is not None:  # no new metadata: the table exists
        metadata = replace(metadata or cast(Snapshot, snapshot).metadata, schema_string=marked.json())
    if metadata is not None:
        txn.update_metadata(metadata)
    if plan.protocol is not None:
        txn.update_protocol(plan.protocol)
    return txn


def check_overwrite_mode_known(plan: WritePlan, active: pa.Table, adds: list[AddFile]) -> None:
    """Refuses an overwrite of a partitioned table whose result depends on the session's
    ``spark.sql.sources.partitionOverwriteMode`` when that setting cannot be seen: static
    mode would delete the partitions this write leaves out, dynamic mode would keep them.
    A write covering every partition the table has is the same in both modes."""
    from delta_pyds.write.options import SESSION_PARTITION_OVERWRITE_MODE

    schema = cast(StructType, plan.table_schema)  # planned (not skipped)
    fields = [schema.field(c) for c in plan.partition_columns]
    physical = [f.physical_name(plan.column_mapping_mode) for f in fields]
    written = set(partition_keys([a["partitionValues"] for a in adds], fields, physical))
    existing = (
        set(partition_keys(active.column("partitionValues").to_pylist(), fields, physical))
        if active.num_rows
        else set()
    )
    left_out = existing - written
    if left_out:
        raise OptionValueError(
            f"mode('overwrite') of the partitioned table {plan.storage.root}: this write leaves out "
            f"{len(left_out)} of its {len(existing)} partitions, which static partition overwrite "
            f"deletes and dynamic partition overwrite keeps, and pydelta cannot read the session "
            f"setting {SESSION_PARTITION_OVERWRITE_MODE} (Spark passes no session conf to Python "
            f"data sources). Pass the write option partitionOverwriteMode: "
            f".option('partitionOverwriteMode', 'dynamic') replaces only the partitions written, "
            f"'static' replaces the whole table (in SQL, add partitionOverwriteMode to the "
            f"temporary view's OPTIONS). The table is unchanged"
        )


def _remove_overwritten(
    txn: Transaction, plan: WritePlan, snapshot: Snapshot, adds: list[AddFile]
) -> tuple[int, Replacement | None]:
    """Removes what an overwrite replaces, one of four ways: the partitions written
    (dynamic partition overwrite), the rows matching a ``replaceWhere`` on data columns
    (:func:`~delta_pyds.write.replace_where.replace_matching_rows`), the files of the
    partitions matching one on partition columns, or every file; records what it read.
    Returns the number of files removed and, for rows, the replacement."""
    from delta_pyds.table.state import file_actions

    opts = plan.opts
    active = file_actions(snapshot).active
    pcols = list(plan.partition_columns)
    if opts.partition_overwrite_mode_unknown and pcols:
        check_overwrite_mode_known(plan, active, adds)
    if opts.dynamic_partition_overwrite and pcols and not opts.overwrite_schema:
        schema = cast(StructType, plan.table_schema)  # planned (not skipped)
        fields = [schema.field(c) for c in pcols]
        physical = [f.physical_name(plan.column_mapping_mode) for f in fields]
        keys = set(partition_keys([a["partitionValues"] for a in adds], fields, physical))
        pred = partition_set_predicate(keys, fields, physical)
        txn.read_partitions(pred, f"the {len(keys)} partition(s) written")
    elif plan.replace_where is not None and plan.replace_on_data and not opts.overwrite_schema:
        from delta_pyds.write.replace_where import replace_matching_rows

        replacement = replace_matching_rows(
            snapshot, plan.replace_where, cast(str, opts.replace_where), cast(WriteSpec, plan.spec)
        )  # parsed from it; planned (not skipped)
        txn.read_whole_table()
        txn.remove_files(replacement.removes)
        txn.add_files(replacement.adds)
        return len(replacement.removes), replacement
    elif plan.replace_where is not None and not opts.overwrite_schema:
        pred = partition_predicate(
            plan.replace_where, snapshot.schema, snapshot.partition_columns, snapshot.column_mapping_mode
        )
        txn.read_partitions(pred, f"replaceWhere {opts.replace_where}")
    else:
        txn.read_whole_table()
        txn.remove_files(remove_actions(active))
        return active.num_rows, None
    pv = active.column("partitionValues").to_pylist()
    victims = active.filter(pa.array(pred(pv), pa.bool_())) if active.num_rows else active
    txn.remove_files(remove_actions(victims))
    return victims.num_rows, None


def _operation_parameters(plan: WritePlan) -> dict[str, Any]:
    """``commitInfo.operationParameters`` of a write, as delta-spark records them."""
    opts = plan.opts
    params: dict[str, Any] = {"mode": "Overwrite" if opts.overwrite else "Append"}
    if plan.partition_columns:
        params["partitionBy"] = json.dumps(list(plan.partition_columns))
    if plan.domains.get(CLUSTERING_DOMAIN) is not None:
        params["clusterBy"] = json.dumps([".".join(p) for p in plan.clustering])
    if opts.replace_where:
        params["predicate"] = json.dumps([opts.replace_where])
    if opts.dynamic_partition_overwrite:
        params["partitionOverwriteMode"] = "DYNAMIC"
    return params


def commit_arrow(
    path: str,
    data: pa.Table | pa.RecordBatch | pa.RecordBatchReader,
    *,
    mode: str = "append",
    options: dict | None = None,
) -> CommitResult | None:
    """Writes an Arrow table (a record batch, or a reader streaming batches) into a Delta
    table without Spark, in one task: ``mode`` is append or overwrite; ``options`` are the
    ``pydelta`` write options (``partitionBy``, ``replaceWhere``, ``delta.*`` ...). Returns
    the commit (None when the plan says to skip)."""
    from delta_pyds.protocol.schema_evolution import from_arrow_schema
    from delta_pyds.write.parquet_writer import write_task

    if mode not in ("append", "overwrite"):
        raise OptionValueError(f"mode: expected append or overwrite, got {mode!r}")
    if isinstance(data, pa.RecordBatch):
        data = pa.Table.from_batches([data])
    opts = WriteOptions.parse({**(options or {}), "path": path}, overwrite=mode == "overwrite")
    plan = plan_write(opts, from_arrow_schema(data.schema))
    if plan.skip:
        return None
    batches = data.to_batches() if isinstance(data, pa.Table) else data
    result = write_task(cast(WriteSpec, plan.spec), batches)  # not skipped
    with delete_on_failure(plan.storage, result.adds):
        return commit_write(plan, result.adds, num_rows=result.num_rows, identity_marks=result.identity)
