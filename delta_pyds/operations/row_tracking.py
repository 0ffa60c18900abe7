"""Row tracking for operations that rewrite files: which materialized columns carry the
row ids and row commit versions of a tracked table, and each row's id and version read
back from a data file.

Guarantees: a rewrite of a tracked table keeps every row's id (the materialized value,
else ``baseRowId`` + the row's position in its file) and its commit version (the
materialized value, else the file's ``defaultRowCommitVersion``); a tracked table that
does not name its materialized columns is refused rather than rewritten with lost ids.
No Spark."""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from delta_pyds.errors import UnsupportedFeatureError
from delta_pyds.protocol import features
from delta_pyds.protocol.table_properties import (
    ROW_COMMIT_VERSION_COLUMN,
    ROW_ID_COLUMN,
    ROW_TRACKING_SUSPENDED,
    is_true,
)
from delta_pyds.storage.store import Storage
from delta_pyds.table.snapshot import Snapshot


def row_tracking_columns(snap: Snapshot) -> tuple[str, str] | None:
    """The physical names of the materialized row id and row commit version columns when
    the table tracks rows (rewrites must then carry every row's id and version over);
    None otherwise."""
    if not features.is_enabled(snap.protocol, "rowTracking") or is_true(snap.configuration, ROW_TRACKING_SUSPENDED):
        return None
    names = (snap.configuration.get(ROW_ID_COLUMN), snap.configuration.get(ROW_COMMIT_VERSION_COLUMN))
    if not all(names):
        raise UnsupportedFeatureError(
            "this table supports row tracking but does not name its materialized row tracking columns "
            f"({ROW_ID_COLUMN}, {ROW_COMMIT_VERSION_COLUMN}); delta_pyds cannot rewrite its files "
            "without losing row ids"
        )
    return cast("tuple[str, str]", names)  # both set (checked above)


def read_materialized(storage: Storage, path: str, names: Sequence[str]) -> list:
    """The materialized row id / commit version columns of a data file (None where absent)."""
    import pyarrow.parquet as pq

    with storage.open_input(storage.resolve(path)) as f:
        pf = pq.ParquetFile(f)
        present = [n for n in names if n in pf.schema_arrow.names]
        table = pf.read(columns=present) if present else None
    return [
        table.column(n).combine_chunks().cast(pa.int64()) if table is not None and n in present else None for n in names
    ]


def row_ids(
    materialized: Sequence[pa.Array | None] | None, start: int, n: int, base: int | None, drcv: int | None
) -> list:
    """Row ids and commit versions of rows ``start .. start+n`` of a file: the materialized
    value, else ``baseRowId + position`` / ``defaultRowCommitVersion`` (``materialized``:
    :func:`read_materialized`'s columns, None when the table materializes none)."""
    ids, versions = materialized if materialized is not None else (None, None)
    fallback_id = (
        pa.array(np.arange(start, start + n, dtype=np.int64) + base) if base is not None else pa.nulls(n, pa.int64())
    )
    fallback_version = pa.array([drcv] * n, pa.int64())
    out_ids = pc.coalesce(ids.slice(start, n), fallback_id) if ids is not None else fallback_id
    out_versions = pc.coalesce(versions.slice(start, n), fallback_version) if versions is not None else fallback_version
    return [out_ids, out_versions]
