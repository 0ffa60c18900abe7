"""The Spark-native read: a Delta table as a DataFrame over Spark's own Parquet reader.

``read_delta(spark, path, **options)`` (also ``DeltaTable.forPath(spark, path).toDF()``) takes
the options of the ``pydelta`` data source (``versionAsOf``, ``timestampAsOf``, ``timeZone``,
``columns``, ``storage.*`` / storage options, ``allowExternalPaths``) and an optional
``where`` (a SQL condition). It returns::

    spark.read.schema(<physical columns>).option("recursiveFileLookup", "true").parquet(<root>)
         .where(<live files by _metadata.file_path>)       # pruned while Spark lists the root
         [+ partition values from the log] [+ deletion vectors] [.where(where)]
         .select(<logical names and types>)

Guarantees:

* the live files are selected by ``_metadata.file_path IN (<live files>)`` (Spark prunes
  files with it while listing: removed files still on disk are never opened), or by a
  ``pathGlobFilter`` of exactly their names; the condition names the live files, never the
  complement of a listing, so a DataFrame that Spark re-lists later (Spark Connect
  re-analyses plans; ``refreshByPath``) still reads only this version's files. Conditions
  that split the live files further (deletion-vector files, partition values) name the
  shorter side within them (:func:`file_filter`);
* the rows and column types are those of ``spark.read.format("pydelta")`` on the same
  version; top-level NOT NULL columns are non-nullable, as delta-spark reads them (a null a data
  file holds there raises: :mod:`~delta_pyds.spark.native.not_null`), nested fields nullable;
* the version is pinned when the DataFrame is made: later commits are not seen;
* partition values are the log's: Spark's partition discovery supplies them only when every
  live file sits in Hive directories checked (in Arrow, before Spark runs) to read back to
  exactly the log's values (:attr:`NativePlan.directory_partitions`); otherwise partition
  discovery is off and the values are joined from the log (literals, ``CASE`` over a few
  file sets, or a broadcast join on ``_metadata.file_path``); column mapping reads physical
  names, and Parquet field ids in ``id`` mode (the session conf
  ``spark.sql.parquet.fieldId.read.enabled`` is set to true);
* only files with a deletion vector are filtered by row index; files without one are pure
  Spark. Each vector is verified on the driver as the data source verifies it (cardinality
  and row indexes within the file's footer row count, checksum, format: else
  :class:`~delta_pyds.errors.DeletionVectorError` naming the data file) and reaches Spark
  sized by the files' row counts, never by the rows deleted
  (:mod:`delta_pyds.spark.native.deleted_rows`): for up to 64 files of up to 8M rows one
  bit per row in one array, a scalar subquery that plan descriptions name and never print,
  tested in the scan's own filter (no join, no extra Spark job) against the row index
  Spark's reader fills in its hidden row index column (no ``_metadata`` struct per row),
  each row's file found by its size when those files' sizes differ, else by its path;
  beyond, bit buckets broadcast and joined; beyond 64 MiB of buckets an Arrow UDF loads and
  verifies each file's vector in the tasks (its errors then come wrapped in Spark's
  exception, named in its message);
* ``where`` prunes files with Delta statistics and partition values (conservatively) and is
  also applied by Spark to the rows, so results never depend on skipping; nothing depends
  on Spark reusing a plan;
* what Spark cannot read natively (a scheme with no Hadoop filesystem in this Spark, a
  location or file layout its listing cannot serve, the change data feed) is read through
  the ``pydelta`` data source instead, with a one-line notice logged (logger
  ``delta_pyds.spark.native.read``); ``native="require"`` turns that into an error instead.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import DataType as SparkDataType
from pyspark.sql.types import StructField as SparkStructField
from pyspark.sql.types import StructType as SparkStructType

from delta_pyds.errors import DataFileError, OptionValueError
from delta_pyds.expressions.lexer import DEFAULT_DIALECT
from delta_pyds.expressions.safe_sql import safe_spark_sql
from delta_pyds.expressions.to_predicates import skipping_predicates
from delta_pyds.protocol.schema import DataType, StructField, StructType, nullable_type
from delta_pyds.read.native_plan import FILE_PATH, HAS_DV, NativePlan, OutputColumn, plan_native_scan, sql_string_list
from delta_pyds.read.options import ReadOptions, get_option, read_change_feed
from delta_pyds.read.scan_plan import load_snapshot, table_storage
from delta_pyds.spark.native.deleted_rows import (
    ROW_INDEX_COLUMN,
    drop_deleted_rows,
    dv_words,
    row_index_free,
    with_row_index,
)
from delta_pyds.spark.native.engine import fall_back, read_mode
from delta_pyds.spark.native.locations import SparkLocation, remember_unreachable, spark_target, unreachable_reason
from delta_pyds.spark.native.not_null import filler, not_null
from delta_pyds.spark.session.dialect import session_dialect
from delta_pyds.spark.session.schema_convert import to_spark_schema
from delta_pyds.storage.store import Storage
from delta_pyds.table.snapshot import Snapshot
from delta_pyds.write.option_names import READ_NAMES, READ_PREFIXES, check_keywords

log = logging.getLogger(__name__)

FIELD_ID_CONF = "spark.sql.parquet.fieldId.read.enabled"
# up to this many distinct partition value tuples become literals (CASE WHEN), else a join
MAX_LITERAL_PARTITIONS = 16
# ... naming at most this many file paths in all (beyond, the join)
MAX_CASE_PATHS = 4096
# tables of up to this many live files are listed through a pathGlobFilter of their names
MAX_GLOB_FILES = 1000


def read_path(
    spark: SparkSession,
    path: str,
    *,
    where: Any = None,
    safe_where: str | None = None,
    native: str = "auto",
    **options: Any,
) -> DataFrame:
    """The Delta table at ``path`` as a DataFrame (see the module docstring).

    ``where``: a SQL condition (string) used to prune files and applied to the rows, or a
    Column (applied to the rows only). It is full Spark SQL (subqueries, ``reflect``, file
    reads): trusted input only. ``safe_where``: a condition from untrusted text, limited to
    the table's columns, literals and deterministic functions
    (:mod:`delta_pyds.expressions.safe_sql`); give one of the two. ``native``: ``auto`` (Spark's reader, falling back to
    the data source with a notice), ``require`` (raise :class:`NativeReadUnavailable`
    instead of falling back) or ``never`` (the data source path)."""
    native = read_mode(native)
    check_keywords(options, READ_NAMES, READ_PREFIXES, function="read_delta")
    opts_map = {str(k): _option_text(v) for k, v in options.items()}
    opts_map["path"] = path
    skip_where = where
    if safe_where is not None:
        if where is not None:
            raise OptionValueError("read_delta: give where= (trusted Spark SQL) or safe_where=, not both")
        safe_opts = ReadOptions.parse(opts_map)
        schema = _load(spark, table_storage(safe_opts), safe_opts).schema
        where, skip_where = safe_spark_sql(safe_where, schema, session_dialect(spark) or DEFAULT_DIALECT), safe_where
    if native == "never":
        return _apply_where(_datasource_read(spark, opts_map), where)
    if read_change_feed(opts_map):
        return _fallback(spark, opts_map, where, native, "the change data feed is read by the data source")
    opts = ReadOptions.parse(opts_map)
    storage = table_storage(opts)
    snapshot = _load(spark, storage, opts)
    location, reason = spark_target(spark, storage)
    if location is None:
        return _fallback(spark, opts_map, where, native, reason or "", snapshot.version)
    dialect = session_dialect(spark)
    predicates = skipping_predicates(skip_where, snapshot.schema, dialect) if isinstance(skip_where, str) else ()
    plan = plan_native_scan(snapshot, columns=opts.columns, predicates=predicates, root_uri=location.root_uri)
    if plan.unsupported:
        return _fallback(spark, opts_map, where, native, "; ".join(plan.unsupported), snapshot.version)
    if plan.report is not None:
        log.info("pydelta native scan of %s v%s: %s", snapshot.table_root, snapshot.version, plan.report)
    try:
        df = native_dataframe(spark, plan, location, snapshot.storage)
    except Exception as exc:  # Spark reports a missing Hadoop filesystem only when asked
        why = unreachable_reason(exc, location)
        if why is None:
            raise
        remember_unreachable(spark, location, why)
        return _fallback(spark, opts_map, where, native, why, snapshot.version)
    return _apply_where(df, where)


def _option_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _load(spark: SparkSession, storage: Storage, opts: ReadOptions) -> Snapshot:
    """The snapshot the options select; a ``timestampAsOf`` without offset and no ``timeZone``
    option is in the session time zone, as delta-spark reads it."""
    from delta_pyds.log.time_travel import SESSION_TIME_ZONE

    zone = (spark.conf.get(SESSION_TIME_ZONE, None) or "UTC") if opts.timestamp is not None else None
    return load_snapshot(opts, default_zone=zone, storage=storage)


def _datasource_read(spark: SparkSession, opts_map: Mapping[str, str], version: int | None = None) -> DataFrame:
    from delta_pyds.spark.datasource.registration import register_sources

    register_sources(spark)
    reader = spark.read.format("pydelta")
    for k, v in opts_map.items():
        if k == "path" or (version is not None and k.lower() in ("versionasof", "timestampasof")):
            continue
        reader = reader.option(k, v)
    if version is not None:
        reader = reader.option("versionAsOf", str(version))
    if get_option(opts_map, "timeZone") is None:
        from delta_pyds.log.time_travel import SESSION_TIME_ZONE

        reader = reader.option("timeZone", spark.conf.get(SESSION_TIME_ZONE, None) or "UTC")
    return reader.load(opts_map["path"])


def _fallback(
    spark: SparkSession, opts_map: Mapping[str, str], where: Any, native: str, reason: str, version: int | None = None
) -> DataFrame:
    path = opts_map["path"]
    fall_back(
        native == "require",
        f"pydelta: Spark's reader cannot read {path}: {reason}",
        f"pydelta: reading {path} through the data source: {reason}",
        log,
    )
    return _apply_where(_datasource_read(spark, opts_map, version), where)


def _apply_where(df: DataFrame, where: Any) -> DataFrame:
    if where is None:
        return df
    return df.where(F.expr(where) if isinstance(where, str) else where)


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _spark_type(dtype: DataType) -> SparkDataType:
    return SparkStructType.fromJson({"type": "struct", "fields": [_field_json("x", dtype)]}).fields[0].dataType


def _field_json(name: str, dtype: DataType) -> dict[str, Any]:
    return {"name": name, "type": dtype.to_json(), "nullable": True, "metadata": {}}


def file_filter(
    paths: list[str] | pa.Array | pa.ChunkedArray, among: pa.Array | pa.ChunkedArray | None = None
) -> Column:
    """A condition on ``_metadata.file_path`` admitting exactly ``paths``.

    Without ``among``: ``IN (paths)`` (Spark prunes files with it while listing, so files
    it rejects are never opened). With ``among``, a set of files the rows are *already*
    restricted to (by an ``IN`` of them): the shorter of ``IN (paths)`` and ``NOT IN``
    the other files of ``among`` (no condition when there are none), since Spark renders
    every ``IN`` value each time it describes a plan. A complement is never taken of a
    listing: files that appear in a later listing must stay out."""
    wanted = _string_array(paths)
    if among is not None and len(wanted):
        universe = pc.unique(_string_array(among))
        others = universe.filter(pc.invert(pc.is_in(universe, value_set=wanted)))
        if len(others) < len(wanted):
            return F.lit(True) if not len(others) else ~_in_list(others)
    if not len(wanted):
        return F.lit(False)
    return _in_list(wanted)


def _string_array(values: list[str] | pa.Array | pa.ChunkedArray) -> pa.Array:
    if isinstance(values, pa.ChunkedArray):
        return values.combine_chunks()
    if isinstance(values, pa.Array):
        return values
    return pa.array(values, pa.string())


def _in_list(paths: pa.Array) -> Column:
    """``_metadata.file_path IN (...)`` as one SQL expression (one call into the JVM,
    however many files)."""
    return F.expr("_metadata.file_path IN (" + sql_string_list(paths) + ")")


def native_dataframe(spark: SparkSession, plan: NativePlan, location: SparkLocation, storage: Storage) -> DataFrame:
    """The DataFrame of ``plan`` (see the module docstring; no ``where`` applied)."""
    output_schema = non_nullable(to_spark_schema(StructType(tuple(_logical_fields(plan)))), plan)
    # the storage options' Hadoop settings go with this read only (DataFrameReader options
    # reach the Hadoop configuration of its listing and scan), never into the session conf,
    # where credentials would outlive the read and be visible to every query of the session
    if plan.column_mapping_mode == "id":
        spark.conf.set(FIELD_ID_CONF, "true")
    if plan.files.num_rows == 0:
        return spark.createDataFrame([], output_schema)
    read_schema = SparkStructType.fromJson(plan.read_schema.to_json())
    has_dv = plan.files.column(HAS_DV)
    dv_count = pc.sum(has_dv).as_py() or 0
    glob = name_glob(plan.files.column(FILE_PATH))
    words = dv_words(plan, storage) if dv_count else None
    row_index = words is not None and row_index_free(read_schema, words.columns)
    scan_schema = with_row_index(read_schema) if row_index else read_schema
    base, by_directory = _scan(spark, plan, location, scan_schema, glob)
    listed = listed_files(base)
    check_listed(plan, listed)
    # the glob admitted exactly the live files: no per-row file filter is needed
    exact = glob is not None and len(pc.unique(listed)) == plan.files.num_rows
    if by_directory:
        plan = replace(plan, output=[replace(c, physical=_directory_name(plan, c.name)) for c in plan.output])
    plain_files = plan.files.filter(pc.invert(has_dv)) if dv_count else plan.files
    live = plan.files.column(FILE_PATH)
    scoped = base if exact else base.where(file_filter(live))  # only this version's files
    parts = []
    if plain_files.num_rows:
        plain_df = scoped.where(file_filter(plain_files.column(FILE_PATH), live)) if dv_count else scoped
        parts.append(_with_partitions(spark, plain_df, plan, plain_files, by_directory))
    if dv_count:
        dv_files = plan.files.filter(has_dv)
        dv_df = scoped.where(file_filter(dv_files.column(FILE_PATH), live)) if plain_files.num_rows else scoped
        dv_df = drop_deleted_rows(spark, dv_df, plan, storage, words=words, only_dv_files=True)
        parts.append(_with_partitions(spark, dv_df, plan, dv_files, by_directory))
    df = parts[0] if len(parts) == 1 else parts[0].unionByName(parts[1])
    plain = all(f.nullable for f in output_schema.fields)
    if plain and read_schema == output_schema and not by_directory:  # physical = logical, no partition column
        return df.drop(ROW_INDEX_COLUMN) if row_index else df
    selected = []
    for col, target in zip(plan.output, output_schema.fields, strict=True):
        if col.partition and not by_directory:
            expr = F.col(_quote(_partition_alias(col.name)))
        else:
            expr = F.col(_quote(col.physical or col.name))
        expr = expr.cast(target.dataType)
        if not target.nullable:
            expr = not_null(expr, col.name, target.dataType)
        selected.append(expr.alias(col.name, metadata=target.metadata))
    return df.select(*selected)


def listed_files(df: DataFrame) -> pa.Array:
    """The files Spark listed for a file-source DataFrame (``inputFiles``), spelled as
    ``_metadata.file_path`` (``inputFiles`` says ``file:///`` where it says ``file:/``).
    In classic PySpark the array crosses py4j as one JSON string (element by element it
    would cost one round trip per file); under Connect it is one request."""
    jdf = getattr(df, "_jdf", None)
    if jdf is not None:
        jvm = df.sparkSession._jvm
        assert jvm is not None
        text = jvm.com.fasterxml.jackson.databind.ObjectMapper().writeValueAsString(jdf.inputFiles())
        listed = pa.array(json.loads(text), pa.string())
    else:
        listed = pa.array(df.inputFiles(), pa.string())
    return pc.replace_substring_regex(listed, "^file:///", "file:/")


def check_listed(plan: NativePlan, listed: pa.Array) -> None:
    """Raises :class:`DataFileError` naming a live file that Spark's listing did not find
    (a file deleted by VACUUM or outside Delta): the file filter would silently skip it."""
    paths = plan.files.column(FILE_PATH)
    found = pc.is_in(paths, value_set=listed)
    if pc.all(found).as_py():
        return
    missing = paths.filter(pc.invert(found))
    raise DataFileError(
        f"data file {missing[0].as_py()} is referenced by the table log but is missing "
        f"({len(missing)} file(s) missing); it may have been deleted by VACUUM or outside Delta"
    )


def _logical_fields(plan: NativePlan) -> list[StructField]:
    """The output columns, nested fields nullable (as Spark's file sources read them), top-level
    NOT NULL columns not (as delta-spark reads them: :func:`non_nullable`), with their field
    metadata (:func:`to_spark_schema` keeps the keys Spark reads: collations and declared
    CHAR/VARCHAR types)."""
    return [StructField(c.name, nullable_type(c.type), c.nullable, dict(c.metadata)) for c in plan.output]


def non_nullable(schema: SparkStructType, plan: NativePlan) -> SparkStructType:
    """``schema`` with the NOT NULL columns that :mod:`.not_null` can keep non-nullable (a type
    with a :func:`~.not_null.filler`) non-nullable, every other column nullable."""
    fields = []
    for f in schema.fields:
        fields.append(SparkStructField(f.name, f.dataType, f.nullable or filler(f.dataType) is None, f.metadata))
    return SparkStructType(fields)


def _partition_alias(name: str) -> str:
    return f"__pydelta_partition_{name}"


def name_glob(uris: pa.ChunkedArray | pa.Array) -> str | None:
    """A ``pathGlobFilter`` admitting exactly these files' names (``{n1,n2,...}``), when there
    are at most :data:`MAX_GLOB_FILES`, their names are unique and plain (letters, digits,
    ``._=-``); None otherwise. Spark applies it per listed file, never per row."""
    if len(uris) == 0 or len(uris) > MAX_GLOB_FILES:
        return None
    if isinstance(uris, pa.ChunkedArray):
        uris = uris.combine_chunks()
    names = pc.struct_field(pc.extract_regex(uris, r"(?P<name>[^/]+)$"), "name")
    if not pc.all(pc.match_substring_regex(names, r"^[A-Za-z0-9._=\-]+$")).as_py():
        return None
    if len(pc.unique(names)) != len(names):
        return None
    return "{" + ",".join(names.to_pylist()) + "}"


def _scan(
    spark: SparkSession,
    plan: NativePlan,
    location: SparkLocation,
    read_schema: SparkStructType,
    glob: str | None = None,
) -> tuple[DataFrame, bool]:
    """Spark's Parquet scan of the table root, and whether partition values come from Spark's
    partition discovery (the plan's ``directory_partitions``: Hive directories that read back
    to the log's values; a listing Spark cannot discover partitions in, e.g. deletion
    vector files beside the partition directories, falls back to a recursive scan whose
    partition values are joined from the log)."""
    if plan.directory_partitions:
        schema = SparkStructType.fromJson(
            {
                "type": "struct",
                "fields": [f.to_json() for f in plan.read_schema.fields]
                + [f.to_json() for f in plan.directory_partitions],
            }
        )
        try:
            reader = spark.read.schema(schema).options(**location.hadoop_conf).option("basePath", location.load_path)
            if glob is not None:
                reader = reader.option("pathGlobFilter", glob)
            df = reader.parquet(location.load_path)
            discovered = [f.name.lower() for f in df.schema.fields[len(plan.read_schema.fields) :]]
            if discovered == [f.name.lower() for f in plan.directory_partitions]:
                return df, True
        except Exception as exc:  # conflicting directory structures: join the values instead
            log.debug("pydelta: no partition discovery for %s: %s", location.load_path, str(exc)[:200])
    reader = spark.read.schema(read_schema).options(**location.hadoop_conf).option("recursiveFileLookup", "true")
    if glob is not None:
        reader = reader.option("pathGlobFilter", glob)
    return reader.parquet(location.load_path), False


def _directory_name(plan: NativePlan, name: str) -> str | None:
    """The column Spark's scan holds output column ``name`` in (partition directory key or
    physical data column)."""
    lowered = name.lower()
    for c in plan.output:
        if c.name.lower() == lowered and not c.partition:
            return c.physical
    lowered_partitions = [c.lower() for c in plan.partition_columns]
    return plan.directory_partitions[lowered_partitions.index(lowered)].name


def _with_partitions(
    spark: SparkSession, df: DataFrame, plan: NativePlan, files: pa.Table, by_directory: bool = False
) -> DataFrame:
    """``df`` plus one column per selected partition column, values from the log: literals
    when the files share few value tuples, else a broadcast join on the file path. Values
    travel as text that Spark's cast parses back exactly (timestamps with their UTC offset)."""
    wanted = [c for c in plan.output if c.partition]
    if not wanted or by_directory:
        return df
    names = [c.name for c in wanted]
    text = pa.table(
        [files.column(FILE_PATH)] + [partition_text(files.column(n).combine_chunks()) for n in names],
        names=["__pydelta_file_path"] + [_partition_alias(n) for n in names],
    )
    distinct = text.drop_columns(["__pydelta_file_path"]).group_by(text.column_names[1:]).aggregate([])
    if distinct.num_rows <= MAX_LITERAL_PARTITIONS:
        columns = _partition_literals(text, wanted)
        if columns is not None:
            return df.withColumns(columns)
    lookup = spark.createDataFrame(text)
    joined = df.join(F.broadcast(lookup), F.col("_metadata.file_path") == lookup["__pydelta_file_path"], "inner")
    return joined.drop("__pydelta_file_path")


def _partition_literals(text: pa.Table, wanted: list[OutputColumn]) -> dict[str, Any] | None:
    """Per partition column a ``CASE`` over file sets (the most common value in ``ELSE``,
    each set written as the shorter of its paths and its complement among ``text``'s
    files), or None when the sets would name more than :data:`MAX_CASE_PATHS` paths in
    all (Spark re-renders every literal each time it describes the plan)."""
    paths = text.column("__pydelta_file_path").combine_chunks()
    n = len(paths)
    columns: dict[str, Any] = {}
    named = 0
    for c in wanted:
        alias = _partition_alias(c.name)
        column = text.column(alias).combine_chunks()
        target = _spark_type(c.type)
        counts = pc.value_counts(column)
        order = np.argsort(-counts.field("counts").to_numpy(zero_copy_only=False), kind="stable")
        values = counts.field("values").take(pa.array(order))
        if len(values) == 1:
            columns[alias] = F.lit(values[0].as_py()).cast(target)
            continue
        expr: Any = None
        for value in values[1:]:
            mask = pc.is_null(column) if not value.is_valid else pc.fill_null(pc.equal(column, value), False)
            chosen = pc.sum(mask).as_py() or 0
            named += min(chosen, n - chosen)
            if named > MAX_CASE_PATHS:
                return None
            cond = file_filter(paths.filter(mask), paths)
            lit = F.lit(value.as_py()).cast(target)
            expr = F.when(cond, lit) if expr is None else expr.when(cond, lit)
        columns[alias] = expr.otherwise(F.lit(values[0].as_py()).cast(target))
    return columns


def partition_text(values: pa.Array) -> pa.Array:
    """Typed partition values as text Spark casts back to the same values (binary stays
    binary; timestamps carry ``+00:00``; NaN and infinities as Spark spells them)."""
    t = values.type
    if pa.types.is_binary(t):
        return values
    if pa.types.is_timestamp(t):
        text = pc.strftime(values.cast(pa.timestamp("us", t.tz)), format="%Y-%m-%d %H:%M:%S")
        return pc.binary_join_element_wise(text, "+00:00", "") if t.tz is not None else text
    if pa.types.is_floating(t):
        text = values.cast(pa.string())
        for a, b in (("nan", "NaN"), ("-inf", "-Infinity"), ("inf", "Infinity")):
            text = pc.if_else(pc.equal(text, a), pa.scalar(b), text)
        return text
    return values.cast(pa.string())
