"""DML's rows on Spark's own engine: a table's candidate files read by Spark's Parquet
reader with each row's file and position, and rewritten rows written by Spark's Parquet
writer (:func:`delta_pyds.spark.native.write.write_files`).

:func:`native_rows` returns the DataFrame :meth:`TableRewriter.scan
<delta_pyds.spark.commands.rewriter.TableRewriter.scan>` promises (the table's logical columns,
then the log path of the row's file, its row index in the file and, on tracked tables, its
row id and row commit version) planned by the core's one native planning entry
(:func:`~delta_pyds.read.native_plan.plan_native_scan` with the candidate files):

* the files are selected by name (``pathGlobFilter``) or ``_metadata.file_path`` and
  checked against Spark's listing (a live file that is missing is an error, never
  skipped); the row position is ``_metadata.row_index``;
* partition values, log paths and row tracking defaults come from the log, looked up by
  ``_metadata.file_path`` in literals for up to :data:`MAX_LITERAL_FILES` files (no extra
  Spark job), else through a broadcast join; when the log path is all a scan needs
  (unpartitioned, untracked) and every URI spells it verbatim, it is the URI past the root
  (a projection Spark prunes: a rewrite then pays no per-row lookup); rows deleted by deletion vectors are dropped
  as the native read drops them (:func:`~delta_pyds.spark.native.read.drop_deleted_rows`:
  verified on the driver, bit buckets bounded by the files' rows);
* Spark prunes columns: an operation that needs only the condition's columns (DELETE with
  deletion vectors) reads only those.

When Spark's reader cannot serve the table (the native read's rules: a storage scheme with
no Hadoop filesystem in this Spark, learnt from the first listing and remembered per session
and scheme (:func:`~delta_pyds.spark.native.locations.spark_target`), files outside the root
or in paths Spark's listing skips, type changes Spark cannot widen) :func:`native_rows`
returns None and the reason, and the caller uses the Python-worker path; so does
:func:`native_rewrite` when Spark's writer is the first to find the store unreachable
(a scan of no files never lists it). Which engine a statement uses is chosen in
:mod:`delta_pyds.spark.native.engine` (the session conf ``spark.pydelta.dml.engine``: ``auto``,
``python`` or ``native``).
"""

from __future__ import annotations

import logging

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructType as SparkStructType

__all__ = [
    "SCAN_FILE",
    "SCAN_ROW",
    "SCAN_ROW_ID",
    "SCAN_ROW_VERSION",
    "native_rewrite",
    "native_rows",
]

from delta_pyds.protocol.action_types import AddFile
from delta_pyds.protocol.schema import PrimitiveType, StructField, StructType, is_void_type
from delta_pyds.read.native_plan import FILE_PATH, LOG_PATH, NativePlan, plan_native_scan
from delta_pyds.spark.native.locations import SparkLocation, remember_unreachable, spark_target, unreachable_reason
from delta_pyds.spark.native.read import (
    FIELD_ID_CONF,
    check_listed,
    drop_deleted_rows,
    file_filter,
    listed_files,
    name_glob,
    partition_text,
)
from delta_pyds.spark.native.write import write_files
from delta_pyds.spark.session import projection
from delta_pyds.spark.session.schema_convert import to_spark_schema
from delta_pyds.storage.store import Storage
from delta_pyds.table.snapshot import Snapshot
from delta_pyds.write.parquet_writer import WriteSpec

log = logging.getLogger(__name__)

# columns a DML scan adds to the table's: the row's file (log path) and position in it, and
# on tracked tables its row id and commit version
SCAN_FILE = "__pydelta_file"
SCAN_ROW = "__pydelta_row_index"
SCAN_ROW_ID = "__pydelta_row_id"
SCAN_ROW_VERSION = "__pydelta_row_version"
_URI = "__pydelta_file_uri"
_PART = "__pydelta_part_"
_INDEX = "__pydelta_file_number"
# up to this many files, a scan's per-file values (log path, partition values, row tracking
# defaults) are literal lookups on the file URI; beyond it, a broadcast join (one more job,
# but no per-row scan of a long literal map)
MAX_LITERAL_FILES = 32


def native_rows(
    spark: SparkSession,
    snap: Snapshot,
    files: pa.Table,
    *,
    file_col: str,
    row_col: str,
    tracking: tuple[str, str] | None,
    row_id_col: str,
    row_version_col: str,
) -> tuple[DataFrame | None, str | None]:
    """(the rows of ``files`` as described in the module docstring, None), or (None, why
    Spark's reader cannot serve them)."""
    location, reason = spark_target(spark, snap.storage)
    if location is None:
        return None, reason
    plan = plan_native_scan(snap, root_uri=location.root_uri, files=files)
    if plan.unsupported:
        return None, "; ".join(plan.unsupported)
    out_schema = to_spark_schema(StructType(tuple(f for f in snap.schema.fields if not _void(f))))
    if plan.files.num_rows == 0:
        extra = [F.lit("").alias(file_col), F.lit(0).cast("long").alias(row_col)]
        nulls = [F.lit(None).cast("long").alias(row_id_col), F.lit(None).cast("long").alias(row_version_col)]
        return spark.createDataFrame([], out_schema).select("*", *extra, *(nulls if tracking else [])), None
    if plan.column_mapping_mode == "id":
        spark.conf.set(FIELD_ID_CONF, "true")
    read_fields = list(plan.read_schema.fields)
    if tracking:
        read_fields += [StructField(n, PrimitiveType("long"), True, {}) for n in tracking]
    read_schema = SparkStructType.fromJson(StructType(tuple(read_fields)).to_json())
    uris = plan.files.column(FILE_PATH)
    glob = name_glob(uris)
    try:  # the first listing tells whether this Spark can reach the store at all
        base = _recursive_scan(spark, read_schema, location, glob)
        listed = listed_files(base)
    except Exception as exc:
        why = unreachable_reason(exc, location)
        if why is None:
            raise
        remember_unreachable(spark, location, why)
        return None, why
    check_listed(plan, listed)
    if glob is None or len(pc.unique(listed)) != plan.files.num_rows:
        base = base.where(file_filter(uris.to_pylist()))
    base = projection.select(drop_deleted_rows(spark, base, plan, snap.storage), _scan_columns(read_fields, row_col))
    lookup_cols = _lookup_columns(plan, file_col, tracking is not None)
    if len(lookup_cols) == 1 and _uris_spell_log_paths(plan):
        # the log path is the URI past the root: a projection Spark prunes when unused
        joined = base.withColumn(file_col, F.expr(f"substring({_URI}, {len(plan.root_uri) + 2})"))
    else:
        joined = _with_file_columns(spark, base, uris, lookup_cols)
    selected = _output_columns(plan, out_schema, read_schema, file_col, row_col)
    if tracking:
        selected += _row_tracking_columns(tracking, row_col, row_id_col, row_version_col)
    return projection.select(joined, selected), None


def _scan_columns(read_fields: list[StructField], row_col: str) -> list[str]:
    """The scan's columns as read, then each row's file URI and row index (SQL text)."""
    return [
        *[projection.ident(f.name) for f in read_fields],
        projection.aliased("_metadata.file_path", _URI),
        projection.aliased("_metadata.row_index", row_col),
    ]


def _recursive_scan(
    spark: SparkSession, read_schema: SparkStructType, location: SparkLocation, glob: str | None
) -> DataFrame:
    """Spark's Parquet scan of every file under the table root (only the names ``glob``
    admits, when given)."""
    reader = spark.read.schema(read_schema).options(**location.hadoop_conf).option("recursiveFileLookup", "true")
    if glob is not None:
        reader = reader.option("pathGlobFilter", glob)
    return reader.parquet(location.load_path)


def _lookup_columns(plan: NativePlan, file_col: str, tracking: bool) -> dict[str, pa.Array | pa.ChunkedArray]:
    """Per file, the columns joined to its rows: its log path, its partition values as text,
    and (row tracking) its base row id and default row commit version."""
    lookup_cols = {file_col: plan.files.column(LOG_PATH)}
    for o in plan.output:
        if o.partition:
            lookup_cols[_PART + o.name] = partition_text(plan.files.column(o.name).combine_chunks())
    if tracking:
        for name in ("base_row_id", "default_row_commit_version"):
            lookup_cols["__pydelta_" + name] = plan.files.column(name).cast(pa.int64())
    return lookup_cols


def _row_tracking_columns(
    tracking: tuple[str, str], row_col: str, row_id_col: str, row_version_col: str
) -> list[Column]:
    """Row ids and commit versions: the materialized columns ``tracking`` names where set,
    else the file's base row id plus the row index and its default row commit version."""
    row_id, version = (F.col(projection.ident(name)) for name in tracking)
    return [
        F.coalesce(row_id, F.col("__pydelta_base_row_id") + F.col(row_col)).alias(row_id_col),
        F.coalesce(version, F.col("__pydelta_default_row_commit_version")).alias(row_version_col),
    ]


def _output_columns(
    plan: NativePlan, out_schema: SparkStructType, read_schema: SparkStructType, file_col: str, row_col: str
) -> list[Column | str]:
    """The table's columns by logical name and type (partition values from the lookup),
    then the file and row index columns: a data column read with its own type and no field
    metadata is renamed as SQL text (:mod:`~delta_pyds.spark.session.projection`), others are cast."""
    read = {f.name: f for f in read_schema.fields}
    selected: list[Column | str] = []
    for o, target in zip(plan.output, out_schema.fields, strict=True):
        physical = o.physical or o.name
        field = None if o.partition else read.get(physical)
        if field is not None and not field.metadata and not target.metadata and field.dataType == target.dataType:
            selected.append(projection.renamed(physical, o.name))
            continue
        src = F.col(projection.ident(_PART + o.name)) if o.partition else F.col(projection.ident(physical))
        selected.append(src.cast(target.dataType).alias(o.name, metadata=target.metadata))
    return [*selected, projection.ident(file_col), projection.ident(row_col)]


def native_rewrite(
    spark: SparkSession, storage: Storage, df: DataFrame, spec: WriteSpec, *, data_change: bool
) -> tuple[list[AddFile] | None, str | None]:
    """(the add actions of ``df`` written by Spark's Parquet writer
    (:func:`~delta_pyds.spark.native.write.write_files`), None), or (None, why) when Spark's
    writer cannot reach the store (remembered for the session, as a failed listing is);
    nothing written is left behind. Other failures raise."""
    location, why = spark_target(spark, storage)
    if location is None and storage.protocol != "file":
        return None, why
    try:
        return write_files(df, spec, data_change=data_change).adds, None
    except Exception as exc:  # write_files deleted what it wrote
        why = unreachable_reason(exc, location) if location is not None else None
        if why is None or location is None:
            raise
        remember_unreachable(spark, location, why)
        return None, why


def _with_file_columns(
    spark: SparkSession, df: DataFrame, uris: pa.ChunkedArray, columns: dict[str, pa.ChunkedArray]
) -> DataFrame:
    """``df`` (with the file URI column) plus per-file ``columns`` (one value per URI): for
    up to :data:`MAX_LITERAL_FILES` files as literal lookups in the scan's own projection
    (no broadcast, so no extra Spark job), beyond that a broadcast join. Rows of files
    not in ``uris`` are dropped either way."""
    if len(uris) > MAX_LITERAL_FILES:
        lookup = spark.createDataFrame(pa.table({_URI: uris, **columns}))
        return df.join(F.broadcast(lookup), _URI, "inner")
    keys = uris.to_pylist()
    index = F.element_at(
        F.map_from_arrays(F.array(*[F.lit(k) for k in keys]), F.array(*[F.lit(i + 1) for i in range(len(keys))])),
        F.col(_URI),
    )
    out = df.withColumn(_INDEX, index).where(F.col(_INDEX).isNotNull())
    extra = []
    for name, values in columns.items():
        kind = "long" if pa.types.is_integer(values.type) else "string"
        array = F.array(*[F.lit(v).cast(kind) for v in values.to_pylist()])
        extra.append(F.element_at(array, F.col(_INDEX)).alias(name))
    return out.select("*", *extra).drop(_INDEX)


def _uris_spell_log_paths(plan: NativePlan) -> bool:
    """Whether every file's URI is the root URI, ``/`` and the file's log path verbatim (no
    character the URI spelling escapes, no repeated ``/``)."""
    expected = pc.binary_join_element_wise(plan.root_uri + "/", plan.files.column(LOG_PATH), "")
    return bool(pc.all(pc.equal(expected, plan.files.column(FILE_PATH))).as_py())


def _void(f: StructField) -> bool:
    return is_void_type(f.type)
