"""Deletion vectors on the Spark-native read: the rows of a Parquet scan that the files'
vectors keep (:func:`drop_deleted_rows`).

Guarantees:

* every vector is verified on the driver as the ``pydelta`` data source verifies it
  (:mod:`delta_pyds.read.dv_buckets`: cardinality and row indexes within the file's footer
  row count, checksum, format; else :class:`~delta_pyds.errors.DeletionVectorError` naming
  the data file), except beyond :data:`MAX_BUCKET_BYTES`, where an Arrow UDF verifies each
  file's vector in the tasks (errors wrapped in Spark's exception);
* what reaches Spark is sized by the files' row counts, never by the rows deleted: up to
  :data:`MAX_KEYED_DV_FILES` files of up to :data:`MAX_LITERAL_DV_ROWS` rows, one bit per
  row in one array, a scalar subquery over a one-row local relation (plan descriptions
  name it and never print it; no join, no extra Spark job) tested in the scan's filter;
  beyond, bit buckets broadcast and joined; beyond that, the UDF;
* the row index is Spark's: the column its Parquet reader fills (:data:`ROW_INDEX_COLUMN`)
  when the caller added it to the scan (:func:`with_row_index`, only when
  :func:`row_index_free`), else ``_metadata.row_index``; a missing row index, or a row of a
  scan said to hold only files with vectors that matches none of them, is an error, never
  a kept row; rows of files without a vector are kept.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import LongType
from pyspark.sql.types import StructField as SparkStructField
from pyspark.sql.types import StructType as SparkStructType

from delta_pyds.read.dv_buckets import BUCKET_BITS, BUCKET_ROWS, RowWords, deleted_row_buckets, deleted_row_words
from delta_pyds.read.native_plan import NativePlan
from delta_pyds.storage.store import Storage

# deletion vectors are broadcast as bit buckets up to this many bytes (files of up to about
# 512M rows in all, however many rows they delete); beyond, an Arrow UDF loads each file's
# vector in the tasks
MAX_BUCKET_BYTES = 64 << 20
# files with deletion vectors up to this many get a numeric join key (a CASE over their paths)
MAX_KEYED_DV_FILES = 64
# up to MAX_KEYED_DV_FILES files with deletion vectors holding up to this many rows in all
# (1 MiB of bits) are filtered by one literal array of bit words in the scan's own filter:
# no relation to ship, no join, no extra Spark job
MAX_LITERAL_DV_ROWS = 1 << 23
# Spark's Parquet reader fills a read-schema column of this name with each row's index in
# its file (what ``_metadata.row_index`` reads: FileSourceStrategy adds the same column for
# it), without the ``_metadata`` struct Spark otherwise builds for every row before a filter
# reads one field of it. Its vectorized reader reads a file's own column of that name
# instead: the column is used only when no file with a deletion vector holds one
ROW_INDEX_COLUMN = "_tmp_metadata_row_index"
# with more files with deletion vectors than this, each row finds its file's words by a
# binary search over the sorted paths (nested CASE) instead of one CASE over all of them
MAX_LINEAR_CASE = 4


def dv_words(plan: NativePlan, storage: Storage) -> RowWords | None:
    """The bit words of the plan's deletion vectors (verified), when they fit the literal's
    caps (:data:`MAX_KEYED_DV_FILES`, :data:`MAX_LITERAL_DV_ROWS`)."""
    if len(plan.dv_files) > MAX_KEYED_DV_FILES:
        return None
    return deleted_row_words(storage, plan.dv_files, max_rows=MAX_LITERAL_DV_ROWS)


def row_index_free(read_schema: SparkStructType, file_columns: frozenset[str]) -> bool:
    """Whether :data:`ROW_INDEX_COLUMN` names no column read and no column of a file with a
    deletion vector (its footer's names): Spark then fills it with row indexes."""
    name = ROW_INDEX_COLUMN.lower()
    return name not in file_columns and all(f.name.lower() != name for f in read_schema.fields)


def with_row_index(read_schema: SparkStructType) -> SparkStructType:
    return SparkStructType([*read_schema.fields, SparkStructField(ROW_INDEX_COLUMN, LongType(), True)])


def drop_deleted_rows(
    spark: SparkSession,
    df: DataFrame,
    plan: NativePlan,
    storage: Storage,
    *,
    words: RowWords | None = None,
    only_dv_files: bool = False,
) -> DataFrame:
    """``df`` (a Parquet scan of some of ``plan``'s files, ``_metadata`` still reachable)
    without the rows the files' deletion vectors delete. Each vector is verified on the
    driver as the data source verifies it (cardinality and row indexes against the file's
    footer row count, else :class:`~delta_pyds.errors.DeletionVectorError` naming the file)
    and held as bits sized by the files' rows, never by the rows deleted: one literal of
    bit words in the filter for up to :data:`MAX_KEYED_DV_FILES` files of up to
    :data:`MAX_LITERAL_DV_ROWS` rows, else bit buckets broadcast and joined; beyond
    :data:`MAX_BUCKET_BYTES` each task loads and verifies its files' vectors. Rows of files
    without a vector are kept. ``words``: the plan's words (:func:`dv_words`) when already
    loaded; ``only_dv_files``: ``df`` holds rows of the files with a vector only. The row
    index is ``df``'s :data:`ROW_INDEX_COLUMN` when it has one (the caller checked that
    Spark fills it), else ``_metadata.row_index``."""
    if not plan.dv_files:
        return df
    found = words if words is not None else dv_words(plan, storage)
    if found is not None:
        row = F.col(ROW_INDEX_COLUMN) if ROW_INDEX_COLUMN in df.columns else F.col("_metadata.row_index")
        uris = [uri for uri, _, _ in plan.dv_files]
        return _drop_by_words(spark, df, uris, found, row, only_dv_files)
    buckets = deleted_row_buckets(storage, plan.dv_files, max_bytes=MAX_BUCKET_BYTES)
    if buckets is not None:
        uris = [uri for uri, _, _ in plan.dv_files]
        return _drop_deleted(df, _bucket_frame(spark, buckets, uris), uris)
    keep = _dv_filter(plan.dv_files, storage)
    return df.where(keep(F.col("_metadata.file_path"), F.col("_metadata.row_index")))


def _drop_by_words(
    spark: SparkSession, df: DataFrame, uris: list[str], found: RowWords, row: Column, only_these: bool
) -> DataFrame:
    """``df`` without the rows whose bit is set in ``found.words`` (see
    :func:`~delta_pyds.read.dv_buckets.deleted_row_words`: file ``uris[i]``'s words begin at
    ``found.starts[i]``; ``row``: the row index column), tested in the scan's own filter. The
    words are a scalar subquery over a one-row local relation (:func:`_words_subquery`),
    not a literal: Spark renders a literal in every description of the plan (2.4 MB of
    text per action for 2M rows), a subquery as its name; it runs on the driver (a local
    scan: no join, no extra Spark job) and its value is a constant in the generated code.
    When ``df`` holds rows
    of these files only (``only_these``) and they are one file, there is no per-row file
    lookup; with ``only_these`` and files of distinct sizes (as the store reported them
    when the vectors were loaded) each row's start is a ``CASE`` over its
    ``_metadata.file_size`` (a long: no path in the ``_metadata`` struct Spark builds per
    row), else over its ``_metadata.file_path`` (binary searches beyond
    :data:`MAX_LINEAR_CASE` files). A row of another file (or size) is kept, or, with
    ``only_these``, an error (never a silently kept row). A
    null row index is an error too (a Spark that stopped filling :data:`ROW_INDEX_COLUMN`).
    One DataFrame operation (each one costs Spark an analysis of the plan)."""
    if not len(found.words) or not found.words.any():
        return df
    bits = _words_subquery(spark, found.words)
    row = F.coalesce(row, F.raise_error(F.lit("pydelta: Spark's Parquet reader gave no row index")))
    offset = F.shiftright(row, 6)
    if len(uris) > 1 or not only_these:
        offset = F.expr(_file_start(uris, found, only_these)) + offset
    word = F.coalesce(F.get(bits, offset.cast("int")), F.lit(0).cast("long"))
    bit = F.call_function("shiftright", word, row.bitwiseAND(63).cast("int")).bitwiseAND(1)
    return df.where(bit == 0)


def _words_subquery(spark: SparkSession, words: np.ndarray) -> Column:
    """``words`` as a scalar subquery (``array<bigint>``) over a one-row local relation."""
    values = pa.array(words.astype(np.int64, copy=False), pa.int64())
    packed = pa.ListArray.from_arrays(pa.array([0, len(values)], pa.int32()), values)
    return spark.createDataFrame(pa.table({"__pydelta_dv_bits": packed})).scalar()


def _file_start(uris: list[str], found: RowWords, only_these: bool) -> str:
    """SQL: the start of a row's file's words (see :func:`_drop_by_words`)."""
    if only_these and len(set(found.sizes)) == len(uris):
        keys: list[str | int] = list(found.sizes)
        column, other = (
            "_metadata.file_size",
            "raise_error('pydelta: a data file changed size after its deletion vector was loaded')",
        )
    else:
        keys = list(uris)
        column = "_metadata.file_path"
        other = "raise_error('pydelta: a row of a file without its deletion vector')" if only_these else "NULL"
    order = sorted(range(len(uris)), key=lambda i: keys[i])
    return _start_case(column, [keys[i] for i in order], [found.starts[i] for i in order], other)


def _start_case(column: str, keys: list[Any], starts: list[int], other: str) -> str:
    """SQL: the start of ``column``'s words among ``keys`` (paths sorted as Spark compares
    strings: UTF-8 bytes, i.e. code points; or sizes), by binary search; ``other`` for a
    value that is none of them."""
    if len(keys) <= MAX_LINEAR_CASE:
        whens = " ".join(f"WHEN {_sql_key(k)} THEN {s}L" for k, s in zip(keys, starts, strict=True))
        return f"CASE {column} {whens} ELSE {other} END"
    mid = len(keys) // 2
    low = _start_case(column, keys[:mid], starts[:mid], other)
    high = _start_case(column, keys[mid:], starts[mid:], other)
    return f"CASE WHEN {column} < {_sql_key(keys[mid])} THEN {low} ELSE {high} END"


def _sql_key(key: str | int) -> str:
    return _sql_string(key) if isinstance(key, str) else f"{int(key)}L"


def _drop_deleted(df: DataFrame, buckets: DataFrame, uris: list[str]) -> DataFrame:
    """``df`` without the rows the deletion vector ``buckets`` (file_path, bucket, words:
    see :mod:`delta_pyds.read.dv_buckets`) mark deleted: a broadcast left join on (file,
    ``row_index >> BUCKET_BITS``), then one bit test per row. With few files the key is one
    long (file number << 40 | bucket: a long-keyed hash join), else (file path, bucket)."""
    bucket = f"shiftright(_metadata.row_index, {BUCKET_BITS})"
    if len(uris) <= MAX_KEYED_DV_FILES:
        case = " ".join(f"WHEN {_sql_string(u)} THEN {i}L" for i, u in enumerate(uris))
        keyed = df.withColumn(
            "__pydelta_dv_key", F.expr(f"shiftleft(CASE _metadata.file_path {case} END, 40) + {bucket}")
        )
        right = F.broadcast(
            buckets.select(
                (F.shiftleft(F.col("__pydelta_dv_file"), 40) + F.col("__pydelta_dv_bucket")).alias("__pydelta_dv_rkey"),
                "__pydelta_dv_words",
            )
        )
        joined = keyed.join(right, keyed["__pydelta_dv_key"] == right["__pydelta_dv_rkey"], "left_outer")
        drop = ["__pydelta_dv_key", "__pydelta_dv_rkey", "__pydelta_dv_words"]
    else:
        right = F.broadcast(buckets)
        joined = df.join(
            right,
            (F.col("_metadata.file_path") == right["__pydelta_dv_path"])
            & (F.expr(bucket) == right["__pydelta_dv_bucket"]),
            "left_outer",
        )
        drop = ["__pydelta_dv_path", "__pydelta_dv_bucket", "__pydelta_dv_words"]
    word = f"get(__pydelta_dv_words, CAST(shiftright(_metadata.row_index & {BUCKET_ROWS - 1}, 6) AS INT))"
    kept = F.expr(f"__pydelta_dv_words IS NULL OR (shiftright({word}, CAST(_metadata.row_index & 63 AS INT)) & 1) = 0")
    return joined.where(kept).drop(*drop)


def _bucket_frame(spark: SparkSession, buckets: pa.Table, uris: list[str]) -> DataFrame:
    """The buckets as a DataFrame (one row holding them all, exploded in the JVM); with
    few files, the file is its number in ``uris``."""
    if len(uris) <= MAX_KEYED_DV_FILES:
        number = pc.index_in(buckets.column("file_path"), value_set=pa.array(uris, pa.string())).cast(pa.int64())
        table = pa.table(
            {
                "__pydelta_dv_file": number,
                "__pydelta_dv_bucket": buckets.column("bucket"),
                "__pydelta_dv_words": buckets.column("words"),
            }
        )
    else:
        table = buckets.rename_columns(["__pydelta_dv_path", "__pydelta_dv_bucket", "__pydelta_dv_words"])
    return _one_row_exploded(spark, table)


def _one_row_exploded(spark: SparkSession, table: pa.Table) -> DataFrame:
    """``table`` as a DataFrame built from one row holding all its rows in an array, exploded
    in the JVM: a local relation of 200k rows costs Spark about 0.4 s per query to plan and
    ship, one row with an array of them a third of that (measured on the bench DV table)."""
    rows = pa.StructArray.from_arrays([c.combine_chunks() for c in table.columns], names=table.column_names)
    packed = pa.table({"__pydelta_rows": pa.ListArray.from_arrays(pa.array([0, len(rows)], pa.int32()), rows)})
    return spark.createDataFrame(packed).select(F.inline("__pydelta_rows"))


def _dv_filter(dv_files: list[tuple[str, str, dict[str, Any]]], storage: Storage) -> Any:
    """An Arrow UDF (file_path, row_index) -> keep, loading and verifying each file's
    deletion vector (against the file's footer row count) once per Python worker."""
    from pyspark.sql.functions import arrow_udf

    descriptors = {uri: (path, descriptor) for uri, path, descriptor in dv_files}
    cache: dict[str, np.ndarray] = {}

    def keep(paths: pa.Array, rows: pa.Array) -> pa.Array:
        from delta_pyds.read.dv_buckets import file_deleted_rows, file_row_count

        out = np.ones(len(paths), dtype=bool)
        row_values = rows.to_numpy(zero_copy_only=False).astype(np.uint64)
        for uri in pc.unique(paths).to_pylist():
            found = descriptors.get(uri)
            if found is None:
                continue
            deleted = cache.get(uri)
            if deleted is None:
                path, descriptor = found
                rows_in_file = file_row_count(storage, path, uri)
                deleted = cache[uri] = file_deleted_rows(storage, descriptor, rows_in_file, uri)
            mask = pc.equal(paths, uri).to_numpy(zero_copy_only=False)
            out[mask] = ~np.isin(row_values[mask], deleted, assume_unique=False)
        return pa.array(out)

    return arrow_udf(keep, "boolean")  # type: ignore[call-overload]  # hints are pa.Array


def _sql_string(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
