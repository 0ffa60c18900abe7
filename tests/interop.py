"""A second independent reader of the tables the tests write: DuckDB's delta extension
(delta-kernel-rs), beside deltalake (delta-rs).

:func:`duckdb_table` reads a table (or one version) through ``delta_scan``; one DuckDB
connection serves the whole test process (the extension loads once, in ~0.2 s).
:func:`check_duckdb_agrees` compares its rows with another reader's, order-independently,
values normalised as :func:`helpers.normalize` does (timestamps as naive UTC, maps as sorted
pairs, NaN as a string). Where DuckDB legitimately cannot read a table (:data:`DUCKDB_REFUSES`),
the check asserts that exact refusal instead of skipping; where it reads a table wrongly in a
known way (the partition columns of a column-mapped table come back NULL:
duckdb/duckdb-delta#343), it asserts that exact symptom and compares the other columns. Tables
on an object store are not read here: DuckDB would need its ``httpfs`` extension, which is not
installed offline.

The extension is loaded offline from the ``duckdb-extension-delta`` wheel (DESIGN.md §2f)."""

from __future__ import annotations

import functools
import os
import re

import pyarrow as pa

# (what DuckDB 1.5.5 / delta-kernel-rs says, why): features a table may legitimately carry that
# the extension refuses; the check asserts the message and that the table really has the feature
DUCKDB_REFUSES = {
    "variantType": r"(?i)variant",  # Delta VARIANT columns: kernel-rs reads them, DuckDB's binding has no type
    "variantType-preview": r"(?i)variant",
}


@functools.lru_cache(maxsize=1)
def duckdb_connection():
    """The process's DuckDB connection with the delta extension loaded."""
    import duckdb
    import duckdb_extension_delta

    extension = os.path.join(
        os.path.dirname(duckdb_extension_delta.__file__), "extensions", "v1.5.5", "delta.duckdb_extension"
    )
    con = duckdb.connect(config={"allow_unsigned_extensions": "true"})
    con.execute(f"LOAD '{extension}'")
    con.execute("SET enable_external_file_cache = false")  # tables are rewritten in place by tests
    return con


def duckdb_table(path: str, version: int | None = None) -> pa.Table:
    """All rows of the table at ``path`` (a local path or ``file:`` URI) as DuckDB reads them."""
    root = path.removeprefix("file://") if path.startswith("file:///") else path
    root = _ascii_root(os.path.abspath(root))
    con = duckdb_connection()
    if version is None:
        return con.execute("SELECT * FROM delta_scan(?)", [root]).to_arrow_table()
    return con.execute("SELECT * FROM delta_scan(?, version := ?)", [root, int(version)]).to_arrow_table()


def _ascii_root(root: str) -> str:
    """``root``, or an ASCII-named symbolic link to it: DuckDB 1.5.5's delta extension drops the
    non-ASCII characters of a table root (``a dir é`` -> ``Cannot open file ".../a dir /part-..."``,
    tables written by deltalake alike, measured), so such a table is read through the link."""
    if root.isascii():
        return root
    import hashlib
    import tempfile

    links = os.path.join(tempfile.gettempdir(), "delta_pyds-duckdb-roots")
    os.makedirs(links, exist_ok=True)
    link = os.path.join(links, hashlib.sha256(root.encode()).hexdigest()[:16])
    if not os.path.islink(link):
        os.symlink(root, link)
    return link


def _void_columns(path: str, version: int | None) -> bool:
    """Whether the table's schema has a ``void`` column (delta-kernel-rs refuses the type)."""
    from delta_pyds.table.snapshot import Snapshot

    return '"void"' in Snapshot.load(path, version=version).metadata.schema_string


def _features(path: str) -> set[str]:
    from delta_pyds.protocol import features
    from delta_pyds.table.snapshot import Snapshot

    p = Snapshot.load(path).protocol
    return set(features.reader_features(p)) | set(features.writer_features(p))


def _is_local(path: str, storage_options) -> bool:
    return storage_options is None and (path.startswith("file:") or "://" not in path)


def check_duckdb_agrees(path: str, other: pa.Table, *, version: int | None = None, storage_options=None) -> None:
    """DuckDB reads the same rows as ``other`` (another reader's whole table), or refuses the
    table for a feature of :data:`DUCKDB_REFUSES` that it has."""
    from helpers import arrow_rows

    if not _is_local(path, storage_options):
        return  # see the module docstring: no httpfs offline
    import duckdb

    try:
        got = duckdb_table(path, version)
    except duckdb.Error as exc:
        message = str(exc)
        present = _features(path) & set(DUCKDB_REFUSES)
        if _void_columns(path, version) and "Unsupported Delta table type: 'void'" in message:
            return  # a VOID column (Spark's NullType, written by delta-spark): kernel-rs has no such type
        assert present and any(re.search(DUCKDB_REFUSES[f], message) for f in present), (
            f"DuckDB refused {path}: {message}"
        )
        return
    columns = other.column_names
    assert sorted(got.column_names) == sorted(columns), (got.column_names, columns)
    nulled = _mapped_partition_columns(path, version)
    if nulled:
        # duckdb/duckdb-delta#343 (and #50): with column mapping, delta_scan looks partition
        # values up by logical name, finds none (the log keys them by physical name, as the
        # protocol says) and returns NULL for every partition column: only a column-mapped
        # partition column that is NULL in every row is left out, exactly that
        # symptom, and the rest of every row
        # symptom; a column DuckDB does read is compared as any other
        columns = [c for c in columns if not (c in nulled and got.column(c).null_count == got.num_rows)]
    assert arrow_rows(got, columns) == arrow_rows(other, columns), f"DuckDB reads other rows of {path}"


def _mapped_partition_columns(path: str, version: int | None) -> list[str]:
    """The partition columns of a column-mapped table whose physical name is not the logical one
    (DuckDB reads them as NULL: see above; a table mapped after its creation keeps the names)."""
    from delta_pyds.table.snapshot import Snapshot

    snap = Snapshot.load(path, version=version)
    mode = snap.column_mapping_mode
    if mode == "none":
        return []
    fields = {f.name: f for f in snap.schema.fields}
    return [c for c in snap.partition_columns if c in fields and fields[c].physical_name(mode) != c]
