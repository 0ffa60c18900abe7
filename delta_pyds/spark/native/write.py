"""The Spark-native write: Spark's own Parquet writer writes the data, the core commits it.

``delta_pyds.write_delta(df, path, mode=..., partitionBy=..., **options)`` writes a
DataFrame into a Delta table with the guarantees of ``df.write.format("pydelta")`` (same
option names, :mod:`delta_pyds.write.options`), without sending any row through a Python
worker:

1. :func:`~delta_pyds.write.plan.plan_write` decides the write on the driver (save mode,
   schema evolution, partitioning, column mapping, protocol and metadata, replaceWhere,
   constraints), before any data moves;
2. one Spark projection brings the DataFrame to the table's logical columns (by name,
   nested structs included; missing columns null, defaults, generated columns and
   identity values computed by Spark SQL), checks every row rule with Spark SQL
   (``raise_error``: NOT NULL, invariants, CHECK constraints, provided generated
   columns, the replaceWhere predicate, identity overflow), renames to physical names with
   Parquet field ids under column mapping, and adds each partition column serialized as
   the log stores it (so the directory Spark names from it is Delta's);
3. Spark writes Parquet (INT64 microsecond timestamps, so the footers have statistics;
   the table's codec; no ``_SUCCESS``; unshredded variants unless the table allows
   shredding) into a fresh ``_``-prefixed staging directory inside the root;
4. :func:`~delta_pyds.write.native_files.collect_staged` reads the footers, moves the
   files to Delta's partition paths and builds the add actions with statistics;
5. :func:`~delta_pyds.write.plan.commit_write` commits once (overwrite / replaceWhere /
   dynamic partition overwrite removes, conflict detection and retry, row tracking, ICT,
   txn idempotency, checkpoints).

Guarantees: any failure (a violated rule, a Spark error, a lost conflict) deletes the
staged and moved files and leaves the log unchanged; a rule violation raises
:class:`~delta_pyds.errors.ConstraintViolationError` naming the rule. Refused by name:
``targetFileSize`` (Spark rolls files by ``maxRecordsPerFile`` only). On tables with the
``materializePartitionColumns`` feature the files keep the partition columns as data
(Spark partitions by stand-in columns; the files move to the Delta partition
directories). Expressions (constraints, generated columns,
defaults) are evaluated by Spark in the session time zone, as delta-spark does, so any
Spark SQL expression works (the plan keeps ones outside the core's evaluator as text). A string
partition value equal to ``__HIVE_DEFAULT_PARTITION__`` is refused (its directory
would name the null partition).
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterable, Mapping
from typing import Any, cast

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from delta_pyds.errors import (
    ConstraintViolationError,
    OptionValueError,
    SettingValueError,
    SqlParseError,
    UnsupportedFeatureError,
)
from delta_pyds.expressions.lexer import tokenize
from delta_pyds.protocol import features
from delta_pyds.protocol.char_varchar import Declared, exceeds_message
from delta_pyds.protocol.identity import IdentityColumn
from delta_pyds.protocol.partition_values import HIVE_DEFAULT_PARTITION
from delta_pyds.protocol.schema import (
    ArrayType,
    DataType,
    DecimalType,
    MapType,
    PrimitiveType,
    StructField,
    StructType,
    is_void_type,
)
from delta_pyds.protocol.schema_evolution import from_spark_json
from delta_pyds.spark.native.conform import conform, logical_type, same_type, spark_type
from delta_pyds.spark.native.engine import NativeReadUnavailable
from delta_pyds.spark.native.locations import remember_unreachable, spark_target, unreachable_reason
from delta_pyds.spark.native.optimized_write import optimized_input
from delta_pyds.spark.session import conf, projection
from delta_pyds.storage.store import Storage
from delta_pyds.transaction.commit import CommitResult
from delta_pyds.transaction.staged_files import cleanup_on_failure, delete_on_failure
from delta_pyds.write.constraints import WriteChecks, describe_rule
from delta_pyds.write.native_files import (
    StagedResult,
    collect_staged,
    delete_moved,
    discard,
    physical_schema,
    remove_staging,
    staging_name,
)
from delta_pyds.write.option_names import WRITE_NAMES, WRITE_PREFIXES, check_keywords
from delta_pyds.write.options import AUTO_MERGE_OPTION, SESSION_PARTITION_OVERWRITE_MODE, WriteOptions
from delta_pyds.write.parquet_writer import WriteSpec
from delta_pyds.write.plan import WritePlan, commit_write, plan_write

log = logging.getLogger(__name__)

_MARK, _END = "<<pydelta-violation:", ":pydelta-violation>>"
_MARK_RE = re.compile(re.escape(_MARK) + "(.*?)" + re.escape(_END), re.DOTALL)
_MODES = {
    "append": (False, None),
    "overwrite": (True, None),
    "error": (False, "errorifexists"),
    "errorifexists": (False, "errorifexists"),
    "default": (False, "errorifexists"),
    "ignore": (False, "ignore"),
}
_SPARK_CODECS = {"none": "none", "lz4": "lz4_raw"}
_INT_RANGES = {
    "byte": (-(1 << 7), (1 << 7) - 1),
    "short": (-(1 << 15), (1 << 15) - 1),
    "integer": (-(1 << 31), (1 << 31) - 1),
}
_DAY_MICROS = 86_400_000_000
_STAND_IN = "__pydelta_partition_dir_"  # staged directory names of materialized partition columns


def write_path(
    df: DataFrame, path: str, *, mode: str = "append", partitionBy: str | Iterable[str] | None = None, **options: Any
) -> CommitResult | None:
    """Writes ``df`` into the Delta table at ``path`` with Spark's Parquet writer.

    ``mode``: append (default), overwrite, error / errorifexists, ignore. ``partitionBy``:
    a column name or names (a new table's partitioning). ``options``: the ``pydelta``
    write options (``replaceWhere``, ``partitionOverwriteMode``, ``mergeSchema``,
    ``overwriteSchema``, ``txnAppId``/``txnVersion``, ``userMetadata``,
    ``maxRecordsPerFile``, ``compression``, ``delta.*`` table properties, ``storage.*``
    ...). Without a ``partitionOverwriteMode`` option, the session's
    ``spark.sql.sources.partitionOverwriteMode`` applies; without ``mergeSchema``, the session's
    ``spark.databricks.delta.schema.autoMerge.enabled`` does. Returns the commit, or None
    when nothing was written (``ignore`` on an existing table, a txn already committed)."""
    return write_and_commit(df, path, mode=mode, partitionBy=partitionBy, **options)[1]


def write_and_commit(
    df: DataFrame, path: str, *, mode: str = "append", partitionBy: str | Iterable[str] | None = None, **options: Any
) -> tuple[Storage | None, CommitResult | None]:
    """:func:`write_delta`, also returning the table's storage (None when nothing was
    committed here: a skipped write or one through the data source)."""
    raw, overwrite = _option_map(df, path, mode, partitionBy, options)
    plan = plan_session_write(df, raw, overwrite)
    if plan.skip:
        log.info("pydelta: nothing written to %s: %s", plan.storage.root, plan.skip)
        return None, None
    session_mode = df.sparkSession.conf.get(SESSION_PARTITION_OVERWRITE_MODE, "static") or "static"
    location = None
    if plan.storage.protocol != "file":
        location, reason = spark_target(df.sparkSession, plan.storage)
        if location is None:
            _datasource_write(df, raw, overwrite, session_mode, reason or "")
            return None, None
    try:
        files = stage_planned(df, plan)
    except SettingValueError:
        raise
    except Exception as exc:  # write_files deleted what it wrote
        why = unreachable_reason(exc, location) if location is not None else None
        if why is None or location is None:
            raise
        remember_unreachable(df.sparkSession, location, why)
        _datasource_write(df, raw, overwrite, session_mode, why)
        return None, None
    return plan.storage, commit_files(plan, files)


def plan_session_write(df: DataFrame, raw: dict[str, str], overwrite: bool) -> WritePlan:
    """The plan of writing ``df`` with the data source's options ``raw`` (``path``,
    ``saveMode`` ...) and the session's confs: ``spark.databricks.delta.schema.autoMerge.enabled``
    (a ``mergeSchema`` option wins over it) and ``spark.sql.sources.partitionOverwriteMode``."""
    if conf.auto_merge(df.sparkSession) and not any(k.lower() == AUTO_MERGE_OPTION.lower() for k in raw):
        raw = {**raw, AUTO_MERGE_OPTION: "true"}  # the session's schema evolution switch
    session_mode = df.sparkSession.conf.get(SESSION_PARTITION_OVERWRITE_MODE, "static") or "static"
    opts = WriteOptions.parse(raw, overwrite=overwrite, session_partition_overwrite_mode=session_mode)
    return plan_write(opts, from_spark_json(df.schema.jsonValue()), spark_sql_rules=True)


def stage_planned(df: DataFrame, plan: WritePlan) -> StagedResult:
    """:func:`write_files` of ``df`` for a planned (not skipped) write, through the table's
    optimized write (``delta.autoOptimize.optimizeWrite``) when it asks for one."""
    with optimized_input(df, plan) as rows:
        return write_files(rows, cast(WriteSpec, plan.spec), variant_shredding=_shredding_allowed(plan))


def _datasource_write(df: DataFrame, raw: dict[str, str], overwrite: bool, session_mode: str, reason: str) -> None:
    """The write through the ``pydelta`` data source (Python workers write the files, the
    driver commits), with the same options, for a store Spark's own writer cannot reach."""
    log.warning("pydelta: write_delta to %s through the pydelta data source (Python workers): %s", raw["path"], reason)
    options = dict(raw)
    path = options.pop("path")
    if not any(k.lower() == "partitionoverwritemode" for k in options) and session_mode.lower() != "static":
        options["partitionOverwriteMode"] = session_mode
    df.write.format("pydelta").mode("overwrite" if overwrite else "append").options(**options).save(path)


def write_files(
    df: DataFrame, spec: WriteSpec, *, data_change: bool = True, variant_shredding: bool = False
) -> StagedResult:
    """Writes ``df`` as data files of the table ``spec`` describes (Spark writes, every
    rule checked, statistics from the footers) and moves them into the table; nothing is
    committed. The caller commits ``result.adds`` or, on failure, deletes
    ``result.moved`` (:func:`~delta_pyds.write.native_files.discard`). Any failure here
    deletes what was written; a rule violation raises ``ConstraintViolationError``.

    This is the building block of :func:`write_delta`, and the native counterpart of
    executors running :func:`~delta_pyds.write.parquet_writer.write_task` (e.g. for DML
    rewrites: ``data_change=False`` marks the adds of a rearrangement). With
    ``spec.directory`` (``_change_data``) the files go under that directory (change data
    files: the caller turns the adds into ``cdc`` actions)."""
    staged = prepare(df, spec)
    staging = staging_name()
    try:
        with cleanup_on_failure(lambda: discard(spec.storage, staging), what="the staged files"):
            write_staged(staged, spec, staging, variant_shredding=variant_shredding)
    except Exception as exc:  # a rule that failed in Spark becomes the named error
        violation = _violation(exc)
        if violation is not None:
            raise ConstraintViolationError(violation) from None
        raise
    schema, mode = spec.table_schema, spec.column_mapping_mode
    physical = [schema.field(c).physical_name(mode) for c in spec.partition_columns]
    identity = [(col, schema.field(col.name).physical_name(mode)) for col in spec.identity]
    result = StagedResult()
    with cleanup_on_failure(lambda: discard(spec.storage, staging, result.moved), what="the staged files"):
        collect_staged(
            spec.storage,
            staging,
            physical_partition_names=physical,
            stats_columns=spec.stats_columns,
            tight_bounds=spec.tight_bounds,
            identity=identity,
            directory=spec.directory,
            staged_partition_names=_staged_partition_names(spec) if spec.materialize_partition_columns else None,
            into=result,
        )
    remove_staging(spec.storage, staging)
    if not data_change:
        for a in result.adds:
            a["dataChange"] = False
    return result


def commit_files(plan: WritePlan, files: StagedResult, *, operation: str = "WRITE") -> CommitResult:
    """Commits the files :func:`write_files` wrote for ``plan`` (one commit named
    ``operation``, with the plan's conflict checks and retries); on a failure or a skipped
    commit deletes them."""
    with delete_on_failure(plan.storage, files.adds):  # keeps them if a commit naming them landed
        commit = commit_write(
            plan, files.adds, num_rows=files.num_rows, operation=operation, identity_marks=files.identity
        )
    if commit.skipped:
        delete_moved(plan.storage, files.moved)
        log.info("pydelta: write to %s skipped (already committed or table created concurrently)", plan.storage.root)
    return commit


def _option_map(
    df: DataFrame, path: str, mode: str, partition_by: str | Iterable[str] | None, options: Mapping[str, Any]
) -> tuple[dict[str, str], bool]:
    """The write's options as the data source takes them (text values, ``saveMode``,
    ``partitionBy`` as JSON, ``path``), and whether the write overwrites."""
    if not isinstance(mode, str) or mode.strip().lower() not in _MODES:
        raise OptionValueError(f"mode: expected append, overwrite, error, errorifexists or ignore, got {mode!r}")
    overwrite, save_mode = _MODES[mode.strip().lower()]
    check_keywords(options, WRITE_NAMES, WRITE_PREFIXES, function="write_delta")
    raw = {str(k): _option_text(v) for k, v in options.items()}
    if any(k.lower() == "targetfilesize" for k in raw):
        raise OptionValueError(
            "option targetFileSize: not supported by the native writer (Spark's Parquet writer rolls "
            "files by maxRecordsPerFile only); use maxRecordsPerFile, or df.write.format('pydelta')"
        )
    if save_mode is not None and not any(k.lower() in ("savemode", "mode") for k in raw):
        raw["saveMode"] = save_mode
    if partition_by is not None:
        names = [partition_by] if isinstance(partition_by, str) else list(partition_by)
        if not all(isinstance(n, str) for n in names):
            raise TypeError(f"partitionBy: expected a column name or a list of names, got {partition_by!r}")
        raw["partitionBy"] = json.dumps(names)
    raw["path"] = path
    return raw, overwrite


def _option_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _ident(*path: str) -> Column:
    return F.col(projection.ident(*path))


def _text(expr: Column) -> Column:
    return F.coalesce(expr.cast("string"), F.lit("None"))


def _message(*parts: Column | str) -> Column:
    return F.concat(F.lit(_MARK), *[F.lit(p) if isinstance(p, str) else p for p in parts], F.lit(_END))


# ----------------------------------------------------------------- projection
def prepare(df: DataFrame, spec: WriteSpec) -> DataFrame:
    """The DataFrame Spark writes: physical data columns plus serialized partition
    columns (named by their physical names), every row rule checked."""
    schema = spec.table_schema
    mode = spec.column_mapping_mode
    checks = spec.checks if spec.checks else WriteChecks()
    computed = {name.lower() for name, _, provided in checks.generated if not provided}
    columns = _logical_columns(df, spec)
    frame = projection.select(df, columns)
    for d in checks.declared:  # Spark's write-side CHAR/VARCHAR check, before the row rules
        frame = frame.withColumn(d.column, _declared_value(d))
    violations: list[tuple[Column, Column]] = []
    for name, rule, provided in checks.generated:
        target = spark_type(logical_type(schema.field(name).type))
        value = F.expr(rule.text).cast(target)
        if not provided and name.lower() in computed:
            frame = frame.withColumn(name, value)
        elif provided:
            violations.append(
                (
                    ~_ident(name).eqNullSafe(value),
                    _message(
                        f"generated column {name} must equal {rule.text}, but a row has {name} = ",
                        _text(_ident(name)),
                        " where the expression gives ",
                        _text(value),
                    ),
                )
            )
    violations += _row_rule_violations(checks, schema)
    partitions = []
    for c in spec.partition_columns:
        f = schema.field(c)
        serialized, refused = _serialized(_ident(f.name), f.type)
        if refused is not None:
            violations.append(
                (
                    refused,
                    _message(
                        f"partition column {f.name}: the value {HIVE_DEFAULT_PARTITION} cannot be written "
                        "(its directory name means null)"
                    ),
                )
            )
        partitions.append(serialized.alias(_partition_dir_name(spec, f.physical_name(mode))))
    if violations:
        guard = F.when(violations[0][0], F.raise_error(violations[0][1]))
        for cond, msg in violations[1:]:
            guard = guard.when(cond, F.raise_error(msg))
        frame = frame.where(guard.otherwise(F.lit(True)).cast("boolean"))
    out = _physical_columns(spec)
    return projection.select(frame, [*out, *partitions])


def _logical_columns(df: DataFrame, spec: WriteSpec) -> list[Column | str]:
    """The table's columns (void ones dropped) by logical name: the DataFrame's, conformed
    to the table's types (renamed as SQL text when the type is already the table's);
    identity values; else null (filled later when computed)."""
    identity = {c.name.lower(): c for c in spec.identity}
    src = {f.name.lower(): f for f in df.schema.fields}
    columns: list[Column | str] = []
    for f in spec.table_schema.fields:
        if is_void_type(f.type):
            continue
        s = src.get(f.name.lower())
        if s is not None and same_type(s.dataType, f.type):
            columns.append(projection.renamed(s.name, f.name))
            continue
        if s is not None:
            e = conform(_ident(s.name), s.dataType, f.type)
        elif f.name.lower() in identity:
            e = _identity_values(identity[f.name.lower()], f)
        else:  # null, or computed below (defaults, generated columns)
            e = F.lit(None).cast(spark_type(logical_type(f.type)))
        columns.append(e.alias(f.name))
    return columns


def _declared_value(d: Declared) -> Column:
    """The column's value after Spark's write-side check (as
    :func:`delta_pyds.protocol.char_varchar.enforce`): CHAR padded to its length, trailing
    spaces beyond the length dropped, a longer value an ``EXCEED_LIMIT_LENGTH`` error."""
    c, n = _ident(d.column), d.length
    kept = F.rpad(c, n, " ") if d.kind == "char" else c
    blank_tail = F.char_length(F.rtrim(F.substring(c, n + 1, (1 << 31) - 1))) == 0
    return (
        F.when(c.isNull() | (F.char_length(c) <= n), kept)
        .when(blank_tail, F.substring(c, 1, n))
        .otherwise(F.raise_error(_message(exceeds_message(d))))
    )


def _row_rule_violations(checks: WriteChecks, schema: StructType) -> list[tuple[Column, Column]]:
    """(condition, message) of each NOT NULL field (nested: where its parents are set) and
    each invariant, CHECK constraint or replaceWhere rule."""
    violations: list[tuple[Column, Column]] = []
    for path in checks.not_null:
        bad = _ident(*path).isNull()
        for i in range(1, len(path)):
            bad = bad & _ident(*path[:i]).isNotNull()
        violations.append((bad, _message(f"NOT NULL constraint violated for column: {'.'.join(path)}")))
    for rule in checks.rules:
        parts: list[Column | str] = [f"{describe_rule(rule)} violated by row with values:"]
        for cpath in rule.columns or _mentioned_columns(rule.text, schema):
            parts += [f"\n - {'.'.join(cpath)} : ", _text(_ident(*cpath))]
        violations.append((~F.coalesce(F.expr(rule.text).cast("boolean"), F.lit(False)), _message(*parts)))
    return violations


def _physical_columns(spec: WriteSpec) -> list[Column | str]:
    """The data columns as written: physical names (with their field metadata in name and
    id mode), partition columns left out unless materialized; without column mapping,
    renamed as SQL text."""
    mode = spec.column_mapping_mode
    schema = spec.table_schema
    pset = set() if spec.materialize_partition_columns else {c.lower() for c in spec.partition_columns}
    data_fields = [f for f in schema.fields if f.name.lower() not in pset and not is_void_type(f.type)]
    physical = physical_schema(data_fields, mode)
    out: list[Column | str] = []
    for f, pf in zip(data_fields, physical.fields):
        if mode not in ("name", "id"):
            out.append(projection.renamed(f.name, pf.name))
            continue
        e = _ident(f.name)
        e = e.cast(spark_type(pf.type)) if _has_struct(f.type) else e
        out.append(e.alias(pf.name, metadata=dict(pf.metadata)))
    return out


def _mentioned_columns(text: str, schema: StructType) -> list[tuple[str, ...]]:
    """Top-level columns named in an expression this package cannot parse (for messages)."""
    try:
        words = {t.value().lower() for t in tokenize(text) if t.kind in ("word", "ident")}
    except SqlParseError:  # an unterminated literal: no names to point at
        words = set()
    return [(f.name,) for f in schema.fields if f.name.lower() in words]


def _has_struct(dtype: DataType) -> bool:
    if isinstance(dtype, StructType):
        return True
    if isinstance(dtype, ArrayType):
        return _has_struct(dtype.element_type)
    if isinstance(dtype, MapType):
        return _has_struct(dtype.key_type) or _has_struct(dtype.value_type)
    return False


def _identity_values(col: IdentityColumn, f: StructField) -> Column:
    """``start + step * (k0 + monotonically_increasing_id())``: unique across tasks (the
    id holds the partition index above bit 33, the spacing of the DS writer), beyond the
    high-water mark; a value that overflows the column's type fails the write."""
    k = F.try_add(F.lit(col.first_k).cast("long"), F.monotonically_increasing_id())
    value = F.try_add(F.lit(col.start).cast("long"), F.try_multiply(F.lit(col.step).cast("long"), k))
    type_name = f.type.name if isinstance(f.type, PrimitiveType) else "long"
    bounds = _INT_RANGES.get(type_name)
    ok = value.isNotNull() if bounds is None else value.between(bounds[0], bounds[1])
    msg = _message(
        f"identity column {col.name} overflows its type {type_name}: the next value would exceed it "
        f"(start {col.start}, step {col.step}, high-water mark {col.high_water_mark})"
    )
    return F.when(ok, value).otherwise(F.raise_error(msg)).cast(spark_type(f.type))


def _serialized(expr: Column, dtype: DataType) -> tuple[Column, Column | None]:
    """A partition column's value as ``partitionValues`` stores it (null stays null), and
    for strings the condition that refuses the default partition name."""
    if isinstance(dtype, PrimitiveType):
        name = dtype.name
        if name == "string":
            return F.when(expr == F.lit(""), F.lit(None)).otherwise(expr), expr == F.lit(HIVE_DEFAULT_PARTITION)
        if name == "timestamp":
            micros = F.unix_micros(expr)
            return _utc_text(micros), None
        if name == "timestamp_ntz":
            text = expr.cast("string")
            whole = F.substring_index(text, ".", 1)
            frac = F.when(F.instr(text, ".") > 0, F.substring_index(text, ".", -1)).otherwise(F.lit(""))
            return F.concat(whole, F.lit("."), F.rpad(frac, 6, "0")), None
        if name == "binary":
            return F.decode(expr, "ISO-8859-1"), None
    if isinstance(dtype, DecimalType) or isinstance(dtype, PrimitiveType):
        return expr.cast("string"), None
    raise UnsupportedFeatureError(f"cannot partition by a column of type {dtype.simple_string()}")


def _utc_text(micros: Column) -> Column:
    """Microseconds since the epoch as ``yyyy-MM-ddTHH:mm:ss.ffffffZ`` in UTC, computed
    without the session time zone (``date_format`` applies it even to TIMESTAMP_NTZ)."""
    rest = F.pmod(micros, F.lit(_DAY_MICROS))
    days = ((micros - rest) / F.lit(_DAY_MICROS)).cast("int")
    seconds = (rest / F.lit(1_000_000)).cast("long")

    def two(x: Column) -> Column:
        return F.lpad(x.cast("string"), 2, "0")

    return F.concat(
        F.date_from_unix_date(days).cast("string"),
        F.lit("T"),
        two((seconds / 3600).cast("long")),
        F.lit(":"),
        two(F.pmod((seconds / 60).cast("long"), F.lit(60))),
        F.lit(":"),
        two(F.pmod(seconds, F.lit(60))),
        F.lit("."),
        F.lpad(F.pmod(rest, F.lit(1_000_000)).cast("string"), 6, "0"),
        F.lit("Z"),
    )


# ----------------------------------------------------------------- writing
def spark_write_path(spark: SparkSession, storage: Storage, relative: str) -> tuple[str, Mapping[str, str]]:
    """Where Spark writes ``relative`` (under the table root) and the Hadoop settings it
    needs: a ``file:`` URI locally; elsewhere the location the native read uses
    (:func:`~delta_pyds.spark.native.locations.spark_target`: ``s3a://`` for ``s3://``, ...,
    with the storage options as Hadoop settings). Raises
    :class:`~delta_pyds.spark.native.engine.NativeReadUnavailable` for a store Spark cannot
    be pointed at (or already failed to reach)."""
    if storage.protocol == "file":
        return "file://" + storage.join(relative), {}
    location, reason = spark_target(spark, storage)
    if location is None:
        raise NativeReadUnavailable(f"pydelta: Spark's writer cannot reach {storage.root}: {reason}")
    return location.load_path.rstrip("/") + "/" + relative, location.hadoop_conf


def _shredding_allowed(plan: WritePlan) -> bool:
    protocol = plan.protocol
    if protocol is None and plan.read_version >= 0:
        from delta_pyds.table.snapshot import Snapshot

        protocol = Snapshot.load(plan.storage, version=plan.read_version).protocol
    return protocol is not None and (
        features.is_enabled(protocol, "variantShredding") or features.is_enabled(protocol, "variantShredding-preview")
    )


def write_staged(staged: DataFrame, spec: WriteSpec, staging: str, *, variant_shredding: bool = False) -> None:
    """Spark writes ``staged`` (from :func:`prepare`) as Parquet under ``staging`` (a
    directory name under the table root), partitioned by the physical partition names.
    Variants are written unshredded unless ``variant_shredding`` (the table allows it)."""
    session = staged.sparkSession
    target, hadoop_conf = spark_write_path(session, spec.storage, staging)
    confs: dict[str, str] = {}
    if _has_variant(spec.table_schema) and not variant_shredding:
        confs["spark.sql.variant.writeShredding.enabled"] = "false"
    writer = (
        staged.write.mode("error")
        .option("compression", _SPARK_CODECS.get(spec.compression, spec.compression))
        .option("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MICROS")
        .option("spark.sql.parquet.fieldId.write.enabled", "true")
        .option("spark.sql.parquet.datetimeRebaseModeInWrite", "CORRECTED")
        .option("spark.sql.parquet.int96RebaseModeInWrite", "CORRECTED")
        .option("mapreduce.fileoutputcommitter.marksuccessfuljobs", "false")
        .option("parquet.enable.summary-metadata", "false")
        .options(**hadoop_conf)
    )
    if spec.max_records_per_file:
        writer = writer.option("maxRecordsPerFile", str(spec.max_records_per_file))
    names = [
        _partition_dir_name(spec, spec.table_schema.field(c).physical_name(spec.column_mapping_mode))
        for c in spec.partition_columns
    ]
    if names:
        writer = writer.partitionBy(*names)
    previous = {k: session.conf.get(k, None) for k in confs}
    for k, v in confs.items():
        session.conf.set(k, v)
    try:
        writer.parquet(target)
    finally:
        for k, old in previous.items():
            if old is None:
                session.conf.unset(k)
            else:
                session.conf.set(k, old)


def _partition_dir_name(spec: WriteSpec, physical: str) -> str:
    """The column Spark partitions the staged files by: the physical name, or a stand-in
    when the files also keep the partition column as data (materialized partition
    columns); :func:`collect_staged` names the directories by the physical names."""
    return _STAND_IN + physical if spec.materialize_partition_columns else physical


def _staged_partition_names(spec: WriteSpec) -> list[str]:
    mode = spec.column_mapping_mode
    return [_partition_dir_name(spec, spec.table_schema.field(c).physical_name(mode)) for c in spec.partition_columns]


def _has_variant(dtype: DataType) -> bool:
    if isinstance(dtype, StructType):
        return any(_has_variant(f.type) for f in dtype.fields)
    if isinstance(dtype, ArrayType):
        return _has_variant(dtype.element_type)
    if isinstance(dtype, MapType):
        return _has_variant(dtype.key_type) or _has_variant(dtype.value_type)
    return isinstance(dtype, PrimitiveType) and dtype.name == "variant"


def _violation(exc: BaseException) -> str | None:
    """The rule message of a ``raise_error`` this writer planted, if ``exc`` carries one."""
    seen = 0
    current: BaseException | None = exc
    while current is not None and seen < 10:
        m = _MARK_RE.search(str(current))
        if m:
            return m.group(1)
        current = current.__cause__ or current.__context__
        seen += 1
    return None
