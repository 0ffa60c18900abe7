"""Deletion vectors on Spark's engine for DML: which tables get them, and the rows a
condition marks, as one serialized bitmap per file built on executors (only the file and
row index columns leave Spark). The marks are committed by
:func:`~delta_pyds.operations.dv_delete.stage_dv_marks`."""

from __future__ import annotations

import pyarrow as pa

from delta_pyds.protocol import features
from delta_pyds.protocol.table_properties import ENABLE_DV, is_true
from delta_pyds.spark.tables.native_rows import SCAN_FILE, SCAN_ROW
from delta_pyds.table.snapshot import Snapshot


def matching_files(scan, cond) -> tuple[list[str], int]:
    """The files holding a row of ``scan`` matching ``cond`` and the number of such rows
    (one Spark job)."""
    from pyspark.sql import functions as F

    rows = scan.where(cond).groupBy(SCAN_FILE).agg(F.count(F.lit(1)).alias("n")).collect()
    return [r[SCAN_FILE] for r in rows], sum(int(r["n"]) for r in rows)


def writes_dvs(snap: Snapshot) -> bool:
    """Whether DML marks rows in deletion vectors instead of rewriting files (the table
    has the ``deletionVectors`` feature and ``delta.enableDeletionVectors=true``)."""
    return features.is_enabled(snap.protocol, "deletionVectors") and is_true(snap.configuration, ENABLE_DV)


def dv_hits(scan, hit, active: pa.Table) -> tuple[pa.Table, list[bytes]]:
    """The active file actions holding a row of ``scan`` where ``hit`` holds, and per file
    the serialized bitmap of those rows' positions (built on executors: only the file
    and row index columns leave Spark)."""
    from pyspark.sql import functions as F

    def to_bitmap(table: pa.Table) -> pa.Table:
        # on executors: the row positions of one file, as DV bitmap bytes
        from delta_pyds.protocol.deletion_vectors import serialize_deleted_rows

        rows = table.column(SCAN_ROW).to_numpy()
        return pa.table(
            {
                "file": pa.array([table.column(SCAN_FILE)[0].as_py()], pa.string()),
                "rows": pa.array([serialize_deleted_rows(rows)], pa.binary()),
            }
        )

    hits = (
        scan.where(F.coalesce(hit, F.lit(False)))
        .select(SCAN_FILE, SCAN_ROW)
        .groupBy(SCAN_FILE)
        .applyInArrow(to_bitmap, "file string, rows binary")
        .collect()
    )
    by_path = {p: i for i, p in enumerate(active.column("path").to_pylist())}
    idx = [by_path[h["file"]] for h in hits]
    return active.take(pa.array(idx, pa.int64())), [h["rows"] for h in hits]
