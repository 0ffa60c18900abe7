"""Deletion vectors as bits per row, for the Spark-native read: bit words of whole files
(:func:`deleted_row_words`, for a few files of few rows) or fixed-size bit buckets.

The native read drops deleted rows by looking each row up, by (file, ``row_index >>
BUCKET_BITS``), in a small relation of *buckets*: :data:`BUCKET_WORDS` 64-bit words holding
one bit per row of :data:`BUCKET_ROWS` consecutive rows (bit ``r & 63`` of word
``(r & (BUCKET_ROWS - 1)) >> 6`` is set when row ``r`` is deleted). Only buckets with a
deleted row exist.

Guarantees:

* the size of the buckets depends on the data files' row counts, never on how many rows a
  vector deletes or claims to delete: at most ``ceil(rows / BUCKET_ROWS)`` buckets of
  ``BUCKET_ROWS / 8`` bytes per file (a 12M-row file: 1.5 MB, whether it deletes 10 rows
  or 10.8M); :func:`deleted_row_buckets` stops and returns None as soon as the total would
  pass its ``max_bytes`` (the caller then applies the vectors in the tasks);
* every vector is checked as the ``pydelta`` data source checks it
  (:func:`~delta_pyds.protocol.deletion_vectors.load_deleted_rows` with the data file's
  row count from its Parquet footer): its cardinality against the file's rows before its
  bitmap is read, then the bitmap (checksum, format, cardinality) and every row index
  below the file's rows. A failure is a :class:`~delta_pyds.errors.DeletionVectorError`
  naming the data file; a data file that cannot be read is a
  :class:`~delta_pyds.errors.DataFileError`;
* :func:`deleted_row_words` takes one bit per row of the files (``rows / 8`` bytes), and
  refuses (None) files of more than its ``max_rows`` rows in all before reading a vector;
* vectors are loaded one at a time: the transient memory is that of one file's vector.

No pyspark import.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from delta_pyds.errors import DataFileError, DeletionVectorError
from delta_pyds.protocol.deletion_vectors import DeletionVectorDescriptor, load_deleted_rows

__all__ = [
    "BUCKET_BITS",
    "BUCKET_ROWS",
    "BUCKET_WORDS",
    "RowWords",
    "deleted_row_buckets",
    "deleted_row_words",
    "file_footer",
    "file_row_count",
    "file_deleted_rows",
]

BUCKET_BITS = 15
BUCKET_ROWS = 1 << BUCKET_BITS  # rows per bucket
BUCKET_WORDS = BUCKET_ROWS // 64  # 64-bit words per bucket (4 KiB)
BUCKET_BYTES = BUCKET_WORDS * 8


def file_row_count(storage: Any, path: str, uri: str) -> int:
    """The rows of a data file, from its Parquet footer (``path`` as the log spells it)."""
    return int(file_footer(storage, path, uri)[0].num_rows)


def file_deleted_rows(storage: Any, descriptor: Mapping[str, Any], rows: int, uri: str) -> np.ndarray:
    """The verified, sorted deleted row indexes (uint64) of the data file ``uri`` of
    ``rows`` rows (see the module docstring); errors name the data file."""
    try:
        dv = DeletionVectorDescriptor.from_dict(descriptor)
        if dv.cardinality > rows:  # refused before any bitmap is read or expanded
            raise DeletionVectorError(
                f"deletion vector claims {dv.cardinality} rows (its cardinality), "
                f"but the data file has only {rows} rows"
            )
        return load_deleted_rows(storage, dv, max_rows=rows)
    except DeletionVectorError as exc:
        raise DeletionVectorError(f"data file {uri}: {exc}") from None


class RowWords(NamedTuple):
    """Deleted rows as bit words (:func:`deleted_row_words`)."""

    starts: list[int]  # where each file's words begin
    words: np.ndarray  # int64 words of all files, one after another
    columns: frozenset[str]  # lowercased top-level column names the files' footers hold
    sizes: list[int]  # each file's size in bytes, as the store reports it


def file_footer(storage: Any, path: str, uri: str) -> tuple[pq.FileMetaData, int]:
    """The Parquet footer of a data file (``path`` as the log spells it) and the file's
    size in bytes as the store reports it."""
    try:
        with storage.open_input(storage.resolve(path)) as source:
            size = int(source.seek(0, 2))
            source.seek(0)
            return pq.read_metadata(source), size
    except FileNotFoundError:
        raise DataFileError(
            f"data file {uri} is referenced by the table log but is missing; it may have been "
            "deleted by VACUUM or outside Delta"
        ) from None
    except (pa.ArrowInvalid, OSError) as exc:
        raise DataFileError(f"data file {uri} is not a readable Parquet file: {exc}") from None


def deleted_row_words(
    storage: Any, files: Sequence[tuple[str, str, Mapping[str, Any]]], *, max_rows: int
) -> RowWords | None:
    """Every row of ``files`` ((file URI, log path, descriptor) triples) as one bit, set when
    the row is deleted: bit ``r & 63`` of word ``start + (r >> 6)`` for row ``r`` of a file
    whose words begin at ``start``. Returns the :class:`RowWords`, or None when the files
    hold more than ``max_rows`` rows in all (known from their footers before any vector is
    read). The words take one bit per row of the files, whatever their vectors delete."""
    footers = [file_footer(storage, path, uri) for uri, path, _ in files]
    rows = [int(f.num_rows) for f, _ in footers]
    names = frozenset(n.lower() for f, _ in footers for n in f.schema.to_arrow_schema().names)
    if sum(rows) > max_rows:
        return None
    starts: list[int] = []
    total = 0
    for n in rows:
        starts.append(total)
        total += -(-n // 64)
    words = np.zeros(total, dtype="<i8")
    for (uri, _path, descriptor), n, start in zip(files, rows, starts, strict=True):
        deleted = file_deleted_rows(storage, descriptor, n, uri)
        if not len(deleted):
            continue
        count = -(-n // 64)
        bits = np.zeros(count * 64, dtype=bool)
        bits[deleted] = True
        words[start : start + count] = np.packbits(bits, bitorder="little").view("<i8")
    return RowWords(starts, words, names, [size for _, size in footers])


def deleted_row_buckets(
    storage: Any, files: Sequence[tuple[str, str, Mapping[str, Any]]], *, max_bytes: int
) -> pa.Table | None:
    """The buckets of ``files`` ((file URI, log path, descriptor) triples) as a table
    ``file_path`` (string), ``bucket`` (int64), ``words`` (list<int64>, :data:`BUCKET_WORDS`
    long), or None when they would take more than ``max_bytes``."""
    paths: list[pa.Array] = []
    buckets: list[np.ndarray] = []
    words: list[np.ndarray] = []
    total = 0
    for uri, path, descriptor in files:
        rows = file_row_count(storage, path, uri)
        deleted = file_deleted_rows(storage, descriptor, rows, uri)
        if not len(deleted):
            continue
        n_buckets = -(-rows // BUCKET_ROWS)
        bits = np.zeros(n_buckets * BUCKET_ROWS, dtype=bool)
        bits[deleted] = True
        del deleted
        packed = np.packbits(bits, bitorder="little").view("<i8").reshape(n_buckets, BUCKET_WORDS)
        del bits
        used = np.flatnonzero(packed.any(axis=1))
        total += len(used) * BUCKET_BYTES
        if total > max_bytes:
            return None
        paths.append(pa.repeat(pa.scalar(uri, pa.string()), len(used)))
        buckets.append(used.astype(np.int64))
        words.append(np.ascontiguousarray(packed[used]).reshape(-1))
    if not paths:
        return pa.table(
            {
                "file_path": pa.array([], pa.string()),
                "bucket": pa.array([], pa.int64()),
                "words": pa.array([], pa.list_(pa.int64())),
            }
        )
    flat = pa.array(np.concatenate(words), pa.int64())
    count = sum(len(b) for b in buckets)
    offsets = pa.array(np.arange(count + 1, dtype=np.int32) * BUCKET_WORDS, pa.int32())
    return pa.table(
        {
            "file_path": pa.concat_arrays(paths),
            "bucket": pa.array(np.concatenate(buckets), pa.int64()),
            "words": pa.ListArray.from_arrays(offsets, flat),
        }
    )
