"""CONVERT TO DELTA: turns a directory of Parquet files into a Delta table in place
(``DeltaTable.convertToDelta(spark, "parquet.`path`", partitionSchema)``).

Guarantees:

* every Parquet file below the root (hidden names starting with ``_`` or ``.`` skipped,
  as Spark's file listing skips them) becomes one ``add`` action with its size,
  modification time and ``dataChange=true``, all in one commit (version 0) with the
  ``CONVERT`` operation; no data file is rewritten or moved;
* partition values come from ``col=value`` directories (Hive escaping undone,
  ``__HIVE_DEFAULT_PARTITION__`` is null), matched to ``partition_schema`` by name: the
  directory names must be exactly the partition columns, in order, and each value must
  parse as its column's type, else :class:`SchemaError` names the file; without a
  partition schema, a ``k=v`` directory is refused (as delta-spark refuses it);
* the table schema is the files' schema (all files must agree, nullable) followed by the
  partition columns; statistics come from the Parquet footers (min/max per the rules of
  :mod:`delta_pyds.protocol.stats`, null counts from the column-chunk statistics; a float
  column gets no max, since footers do not say whether a NaN is present);
* symbolic links (local disk): links to directories inside the directory are followed, as
  Spark's listing follows them; a visible link leading outside the directory, a dangling
  one, and a second name of a file already listed (its rows would appear twice) are refused
  with :class:`PathEscapeError` naming them, before anything is committed;
* a directory that is already a Delta table is returned as is (nothing committed), as
  delta-spark does; a directory without Parquet files, or with files that are not
  Parquet, is refused with :class:`DeltaError` naming the file. No Spark.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Sequence
from typing import cast
from urllib.parse import unquote

import pyarrow as pa
import pyarrow.parquet as pq

from delta_pyds.errors import (
    CorruptLogError,
    DataFileError,
    PathEscapeError,
    SchemaError,
    TableNotFoundError,
)
from delta_pyds.log.files import LOG_DIR
from delta_pyds.protocol.action_types import AddFile
from delta_pyds.protocol.actions import Metadata
from delta_pyds.protocol.partition_values import HIVE_DEFAULT_PARTITION, parse_partition_values
from delta_pyds.protocol.schema import StructField, StructType, parse_schema
from delta_pyds.protocol.schema_evolution import from_arrow_schema
from delta_pyds.protocol.stats import FileStats, StatsColumn, stats_columns
from delta_pyds.protocol.table_properties import required_protocol
from delta_pyds.storage.store import Storage
from delta_pyds.storage.tree import DIR_LINK, FILE, LINK, TreeEntry, is_within, real_root, visible_files
from delta_pyds.table.snapshot import Snapshot
from delta_pyds.transaction.commit import CommitResult, Transaction
from delta_pyds.write.parquet_writer import encode_path

SPARK_SCHEMA_KEY = b"org.apache.spark.sql.parquet.row.metadata"


def parquet_files(storage: Storage) -> list[TreeEntry]:
    """Every visible file below the root (see the module docstring: links are refused)."""
    files = [e for e in visible_files(storage) if not e.rel.startswith(LOG_DIR + "/")]
    if storage.protocol != "file":
        return files
    root = real_root(storage)
    bad: list[str] = []
    seen: dict[str, str] = {}
    for e in sorted(files, key=lambda e: (e.kind != FILE, e.rel)):  # a link is the second name
        real = cast(str, e.real)
        if e.kind == DIR_LINK:
            if not is_within(real, root):
                bad.append(f"{e.rel} (a link to the directory {real}, outside {root})")
            continue
        if not os.path.exists(real):
            bad.append(f"{e.rel} (a dangling link)")
        elif not is_within(real, root):
            bad.append(f"{e.rel} (a link to {real}, outside {root})")
        elif real in seen:
            bad.append(f"{e.rel} (the same file as {seen[real]})")
        seen.setdefault(real, e.rel)
    if bad:
        raise PathEscapeError(
            f"cannot convert {storage.root}: {len(bad)} file(s) are symbolic links whose rows do not "
            f"belong to this directory: {'; '.join(bad[:10])}{' ...' if len(bad) > 10 else ''}. Copy "
            "the data in (or remove the links) and convert again"
        )
    return [e for e in files if e.kind != DIR_LINK]


def partition_values(rel: str, partition_schema: StructType | None) -> dict[str, str | None]:
    """The partition values of the file at ``rel`` from its ``col=value`` directories."""
    dirs = rel.split("/")[:-1]
    pairs = []
    for d in dirs:
        if "=" not in d:
            raise SchemaError(f"{rel}: directory {d!r} is not a partition directory (col=value)")
        k, v = d.split("=", 1)
        pairs.append((unquote(k), None if v == HIVE_DEFAULT_PARTITION else unquote(v)))
    want = [f.name for f in partition_schema.fields] if partition_schema is not None else []
    got = [k for k, _ in pairs]
    if [k.lower() for k in got] != [k.lower() for k in want]:
        if not want:
            raise SchemaError(
                f"{rel} is in partition directories ({', '.join(got)}) but no partition schema was "
                'given: pass partitionSchema (e.g. "part int")'
            )
        raise SchemaError(
            f"{rel}: its partition directories ({', '.join(got) or 'none'}) do not match the "
            f"partition schema ({', '.join(want)})"
        )
    out: dict[str, str | None] = {}
    for f, (_, value) in zip(partition_schema.fields if partition_schema else (), pairs):
        try:
            parse_partition_values(pa.array([value], pa.string()), f.type, column=f.name)
        except (CorruptLogError, ValueError, pa.ArrowInvalid) as exc:
            raise SchemaError(f"{rel}: partition value {value!r} is not a {f.type.simple_string()}: {exc}") from None
        out[f.name] = value
    return out


def _read_footer(storage: Storage, path: str, rel: str) -> pq.FileMetaData:
    try:
        with storage.open_input(path) as fh:
            return pq.read_metadata(fh)
    except (pa.ArrowInvalid, OSError) as exc:
        raise DataFileError(f"cannot convert: {rel} is not a Parquet file ({exc})") from None


def footer_stats(columns: Sequence[StatsColumn], metadata: pq.FileMetaData) -> str:
    """A file's ``stats`` JSON from its footer alone (see the module docstring)."""
    stats = FileStats(columns)
    stats.num_records = metadata.num_rows
    index = {c.parquet_path: i for i, c in enumerate(columns)}
    known = [True] * len(columns)
    for r in range(metadata.num_row_groups):
        rg = metadata.row_group(r)
        for c in range(rg.num_columns):
            chunk = rg.column(c)
            i = index.get(chunk.path_in_schema)
            if i is None:
                continue
            s = chunk.statistics
            if s is None or not s.has_null_count:
                known[i] = False
            else:
                stats.null_counts[i] += s.null_count
    for i, col in enumerate(columns):
        if col.kind == "float":
            stats.has_nan[i] = True  # the footer cannot tell: no max
    parsed = json.loads(stats.to_json(metadata))
    for i, col in enumerate(columns):  # a count no footer gave is left out, never guessed
        if not known[i]:
            node = parsed["nullCount"]
            for name in col.physical_path[:-1]:
                node = node.get(name, {})
            node.pop(col.physical_path[-1], None)
            if col.kind:
                for key in ("minValues", "maxValues"):
                    node = parsed[key]
                    for name in col.physical_path[:-1]:
                        node = node.get(name, {})
                    node.pop(col.physical_path[-1], None)
    return json.dumps(parsed, separators=(",", ":"))


def file_schema_of(metadata: pq.FileMetaData) -> StructType:
    """A Parquet file's schema as a Delta schema: the Spark schema Spark's writer stores in
    the footer when there is one (exact types: INT96 is a TIMESTAMP), else the Arrow one."""
    kv = metadata.metadata or {}
    spark_schema = kv.get(SPARK_SCHEMA_KEY)
    if spark_schema:
        return parse_schema(spark_schema.decode("utf-8"))
    return from_arrow_schema(metadata.schema.to_arrow_schema())


def _nullable(schema: StructType) -> StructType:
    return StructType(tuple(StructField(f.name, f.type, True, f.metadata) for f in schema.fields))


_FileRow = tuple[TreeEntry, pq.FileMetaData, dict[str, str | None]]


def _read_files(
    storage: Storage, files: list[TreeEntry], partition_schema: StructType | None
) -> tuple[StructType, list[_FileRow]]:
    """The data schema shared by all ``files`` (nullable; SchemaError naming the first file
    that differs), and each file with its footer and partition values."""
    schema: StructType | None = None
    rows: list[_FileRow] = []
    for entry in files:
        rel = entry.rel
        md = _read_footer(storage, storage.join(rel), rel)
        file_schema = _nullable(file_schema_of(md))
        if schema is None:
            schema = file_schema
        elif file_schema != schema:
            raise SchemaError(
                f"cannot convert: {rel} has schema {file_schema.simple_string()}, other files "
                f"{schema.simple_string()}; all files must have the same schema"
            )
        rows.append((entry, md, partition_values(rel, partition_schema)))
    return cast(StructType, schema), rows  # files exist: a schema was read


def _add_action(
    entry: TreeEntry, md: pq.FileMetaData, pv: dict[str, str | None], stats: Sequence[StatsColumn] | None
) -> dict:
    """The add action of one converted file (``stats``: the columns to take statistics of
    from its footer; None: no statistics)."""
    size, mtime = entry.size, entry.modification_time
    if entry.kind == LINK:  # a link inside the root: the file's own size and time
        st = os.stat(cast(str, entry.real))
        size, mtime = st.st_size, st.st_mtime_ns // 1_000_000
    add = {
        "path": encode_path(entry.rel),
        "partitionValues": pv,
        "size": size,
        "modificationTime": mtime,
        "dataChange": True,
    }
    if stats is not None:
        add["stats"] = footer_stats(stats, md)
    return add


def convert_to_delta(
    storage: Storage, *, partition_schema: StructType | None = None, collect_stats: bool = True
) -> CommitResult | None:
    """Converts the Parquet directory at ``storage`` (see the module docstring); returns
    the commit, or None when it already is a Delta table."""
    try:
        Snapshot.load(storage)
        return None
    except TableNotFoundError:
        pass
    files = parquet_files(storage)
    if not files:
        raise DataFileError(f"cannot convert {storage.root}: it holds no Parquet files")
    data_schema, rows = _read_files(storage, files, partition_schema)
    pfields = tuple(StructField(f.name, f.type, True) for f in (partition_schema.fields if partition_schema else ()))
    clash = {f.name.lower() for f in pfields} & {f.name.lower() for f in data_schema.fields}
    if clash:
        raise SchemaError(f"cannot convert: partition column(s) {', '.join(sorted(clash))} are also in the data files")
    table_schema = StructType(data_schema.fields + pfields)
    columns = stats_columns(data_schema, {}, "none") if collect_stats else []
    adds = [_add_action(entry, md, pv, columns if collect_stats else None) for entry, md, pv in rows]
    metadata = Metadata(
        id=str(uuid.uuid4()),
        schema_string=table_schema.json(),
        partition_columns=tuple(f.name for f in pfields),
        configuration={},
        created_time=int(time.time() * 1000),
    )
    txn = Transaction(storage, None)
    txn.update_metadata(metadata)
    txn.update_protocol(required_protocol(table_schema, {}))
    txn.add_files(cast(list[AddFile], adds))
    return txn.commit(
        "CONVERT",
        {
            "numFiles": len(adds),
            "partitionedBy": json.dumps([f.name for f in pfields]),
            "collectStats": collect_stats,
            "sourceFormat": "parquet",
        },
        metrics={"numConvertedFiles": len(adds)},
    )
