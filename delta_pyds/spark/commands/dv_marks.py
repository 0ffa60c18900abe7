"""Deletion vectors on Spark's engine for DML: which tables get them, and the rows a
condition marks, as one serialized bitmap per file built on executors (only the file and
row index columns leave Spark). The marks are committed by
:func:`~delta_pyds.operations.dv_delete.stage_dv_marks`."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, cast

import pyarrow as pa

from delta_pyds.protocol import features
from delta_pyds.protocol.table_properties import ENABLE_DV, is_true
from delta_pyds.spark.commands.native_rows import SCAN_FILE, SCAN_ROW
from delta_pyds.table.snapshot import Snapshot

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame


def matching_files(scan: DataFrame, cond: Column) -> tuple[list[str], int]:
    """The files holding a row of ``scan`` matching ``cond`` and the number of such rows
    (one Spark job, no shuffle: see :func:`file_hits`)."""
    hits = file_hits(scan, cond, positions=False)
    return list(hits), sum(n for n, _ in hits.values())


def file_hits(scan: DataFrame, hit: Column, *, positions: bool) -> dict[str, tuple[int, bytes | None]]:
    """Per file of ``scan`` holding a row where ``hit`` holds: the number of such rows and,
    with ``positions``, the serialized bitmap of their row indexes. One Spark job without
    a shuffle: each task reduces its rows to (file, count, bitmap) on the executor (only
    the matching rows' file and row index reach its Python worker), the driver merges the
    parts of a file that several tasks read."""
    from pyspark.sql import functions as F

    def per_task(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        # on executors: the matching rows of one task, reduced per file
        import numpy as np

        from delta_pyds.protocol.deletion_vectors import serialize_deleted_rows

        rows: dict[str, list[Any]] = {}
        for b in batches:
            if not b.num_rows:
                continue
            files = b.column(0).dictionary_encode()
            index = b.column(1).to_numpy(zero_copy_only=False)
            codes = files.indices.to_numpy(zero_copy_only=False)
            names = files.dictionary.to_pylist()
            order = np.argsort(codes, kind="stable")
            for group in np.split(order, np.flatnonzero(np.diff(codes[order])) + 1):
                name = names[int(codes[group[0]])]
                rows.setdefault(name, []).append(index[group] if positions else len(group))
        names = list(rows)
        counts = [sum(len(x) for x in v) if positions else sum(v) for v in rows.values()]
        bitmaps = [serialize_deleted_rows(np.concatenate(v)) if positions else None for v in rows.values()]
        yield pa.RecordBatch.from_arrays(
            [pa.array(names, pa.string()), pa.array(counts, pa.int64()), pa.array(bitmaps, pa.binary())],
            names=["file", "n", "rows"],
        )

    # counting needs no row position: without it Spark's scan skips _metadata.row_index
    row = F.col(SCAN_ROW) if positions else F.lit(0).cast("long").alias(SCAN_ROW)
    parts = (
        scan.where(F.coalesce(hit, F.lit(False)))
        .select(SCAN_FILE, row)
        .mapInArrow(per_task, "file string, n long, rows binary")
        .collect()
    )
    out: dict[str, tuple[int, bytes | None]] = {}
    for r in parts:
        name, n, data = r["file"], int(r["n"]), r["rows"]
        if name in out:
            before, old = out[name]
            n, data = before + n, _union(old, data) if positions else None
        out[name] = (n, bytes(data) if data is not None else None)
    return out


def _union(a: bytes | None, b: bytes | None) -> bytes:
    from pyroaring import BitMap64

    from delta_pyds.protocol.deletion_vectors import deserialize_deleted_rows, serialize_deleted_rows

    bm = BitMap64(deserialize_deleted_rows(bytes(a or b"")))
    bm |= BitMap64(deserialize_deleted_rows(bytes(b or b"")))
    return serialize_deleted_rows(bm)


def writes_dvs(snap: Snapshot) -> bool:
    """Whether DML marks rows in deletion vectors instead of rewriting files (the table
    has the ``deletionVectors`` feature and ``delta.enableDeletionVectors=true``)."""
    return features.is_enabled(snap.protocol, "deletionVectors") and is_true(snap.configuration, ENABLE_DV)


def dv_hits(scan: Any, hit: Column, active: pa.Table) -> tuple[pa.Table, list[bytes]]:
    """The active file actions holding a row of ``scan`` where ``hit`` holds, and per file
    the serialized bitmap of those rows' positions (built on executors: only the file
    and row index columns leave Spark; one job, see :func:`file_hits`). ``scan`` is a
    DataFrame (``Any``: MERGE's probe holds it as ``object`` until merge*.py is typed)."""
    hits = file_hits(scan, hit, positions=True)
    by_path = {p: i for i, p in enumerate(active.column("path").to_pylist())}
    idx = [by_path[name] for name in hits]
    return active.take(pa.array(idx, pa.int64())), [cast(bytes, data) for _, data in hits.values()]
