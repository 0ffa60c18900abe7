"""Planning a Spark-native scan of a snapshot: what Spark's own Parquet reader must read.

The Spark-native read path (:mod:`delta_pyds.spark.native.read`) lets Spark read the data
files with its Parquet format (column pruning, row-group filtering, codegen) and keeps only
the log in Python. This module computes everything that path needs, without Spark:

* the live files as Spark spells ``_metadata.file_path`` for them (:func:`spark_file_uri`:
  the URI Hadoop's ``Path.toUri()`` gives: ``file:/t/a%20b.parquet``; ``%``, space, ``#``,
  ``?`` and the other characters a URI path may not hold are percent-encoded, non-ASCII
  letters and ``=`` are kept), in Arrow, with no Python object per file on the hot path;
* each file's typed partition values, from the log, and whether Spark's partition discovery
  would give exactly those values (every path ``<col>=<escaped value>/.../<file>`` for
  string, integer, date, boolean and decimal columns: :func:`escape_directory_values`);
* which files have a deletion vector (only those pay for reading ``_metadata.row_index``);
* the physical read schema (physical names under column mapping, Parquet field ids in
  ``id`` mode, the declared CHAR/VARCHAR types of :mod:`delta_pyds.protocol.char_varchar`)
  and, for every output column, its physical source or partition column;
* why a snapshot cannot be served natively (:attr:`NativePlan.unsupported`): files outside
  the table root, files Spark's listing hides (a path segment starting with ``_`` or ``.``),
  file names (not directories) holding ``:`` (``data:1.parquet``: Hadoop refuses them),
  type changes Spark's Parquet reader cannot widen (:func:`unreadable_type_changes`: an
  integer read as a decimal with fewer integer digits than the Parquet physical type holds).
  The caller then uses the data source path.

With ``predicates`` the files are pruned by partition values and statistics
(:func:`delta_pyds.skipping.files.prune_files`, conservative): callers must still apply the
filter to the rows.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from delta_pyds.protocol.char_varchar import with_declared_types
from delta_pyds.protocol.partition_values import escape_directory_values, parse_partition_values
from delta_pyds.protocol.paths import ABSOLUTE_PATTERN
from delta_pyds.protocol.schema import (
    ArrayType,
    DataType,
    MapType,
    PrimitiveType,
    StructField,
    StructType,
)
from delta_pyds.read.scan_plan import plan_scan
from delta_pyds.skipping.files import SkippingReport
from delta_pyds.table.snapshot import Snapshot

# the column of NativePlan.files holding Spark's spelling of each file's path
FILE_PATH = "file_path"
HAS_DV = "has_dv"
LOG_PATH = "__pydelta_log_path"  # the file's path as the log spells it (decoded, root-relative)

# characters java.net.URI quotes in a path component (what Hadoop's Path.toUri() gives),
# besides ASCII controls; '%' first so that the escapes added later stay intact
_QUOTED_ASCII = '% "#<>?[\\]^`{|}'
# non-ASCII characters java.net.URI also quotes: ISO controls and Unicode space characters
_QUOTED_UNICODE = re.compile(r"[\x80-\x9f\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
# the same, as an RE2 pattern for Arrow
_RARE = r"[\x00-\x1f\x7f\x{80}-\x{9f}\x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}\x{205f}\x{3000}]"
# any character spark_path_encode changes
_ANY_QUOTED = "[" + re.escape(_QUOTED_ASCII) + _RARE[1:]


def spark_path_encode(path: str) -> str:
    """One path (the part after the scheme and authority) as java.net.URI spells it."""
    out = []
    for ch in path:
        if ch in _QUOTED_ASCII or _CONTROL.match(ch) or _QUOTED_UNICODE.match(ch):
            out.append("".join(f"%{b:02X}" for b in ch.encode("utf-8")))
        else:
            out.append(ch)
    return "".join(out)


def spark_path_encode_array(paths: pa.Array) -> pa.Array:
    """:func:`spark_path_encode` of every path, vectorised (Python only for the rare paths
    with controls or non-ASCII space characters). One regex pass decides whether anything
    needs quoting at all (the common case: nothing; 300k paths: 0.05 s instead of 0.4 s)."""
    if not pc.any(pc.match_substring_regex(paths, _ANY_QUOTED)).as_py():
        return paths
    out = paths
    for ch in _QUOTED_ASCII:
        out = pc.replace_substring(out, ch, f"%{ord(ch):02X}")
    rare = pc.match_substring_regex(paths, _RARE)
    if pc.any(rare).as_py():
        values = out.to_pylist()
        raw = paths.to_pylist()
        for i in np.flatnonzero(rare.to_numpy(zero_copy_only=False)):
            values[i] = spark_path_encode(raw[i])
        out = pa.array(values, pa.string())
    return out


def sql_string_list(values: pa.Array | pa.ChunkedArray) -> str:
    """``'v1','v2',...``: each (non-null) value as a Spark SQL string literal (backslash and
    quote escaped), joined by commas, built in Arrow (300k paths: 0.1 s, a Python join 0.2-0.9 s)."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if not len(values):
        return ""
    values = values.cast(pa.large_string())
    if pc.any(pc.match_substring_regex(values, r"[\\']")).as_py():
        values = pc.replace_substring(pc.replace_substring(values, "\\", "\\\\"), "'", "\\'")
    quote = pa.scalar("'", pa.large_string())
    quoted = pc.binary_join_element_wise(quote, values, quote, pa.scalar("", pa.large_string()))
    joined = pc.binary_join(
        pa.LargeListArray.from_arrays(pa.array([0, len(quoted)], pa.int64()), quoted), pa.scalar(",", pa.large_string())
    )
    return joined[0].as_py()


def spark_root_uri(root_url: str) -> str:
    """The table root as Spark spells it in ``_metadata.file_path`` (``file:/t`` for a local
    root, ``scheme://authority/path`` otherwise), path percent-encoded, no trailing ``/``."""
    m = re.match(r"^([A-Za-z][A-Za-z0-9+.\-]+)://([^/]*)(.*)$", root_url)
    if m is None:  # a local path
        path = root_url
        prefix = "file:"
    else:
        scheme, authority, path = m.group(1), m.group(2), m.group(3)
        prefix = f"{scheme}:" if scheme == "file" and authority in ("", "localhost") else f"{scheme}://{authority}"
    path = re.sub("/+", "/", path).rstrip("/")
    return prefix + spark_path_encode(path)


def spark_file_uri(root_uri: str, relative: str) -> str:
    """One root-relative canonical path as Spark spells it under ``root_uri``."""
    return root_uri + "/" + spark_path_encode(re.sub("/+", "/", relative).strip("/"))


def hidden_by_listing(relative: str) -> bool:
    """Whether Spark's file listing skips this root-relative path: a segment starting with
    ``.``, or with ``_`` and holding no ``=`` (InMemoryFileIndex.shouldFilterOutPathName)."""
    for seg in relative.split("/"):
        if seg.startswith(".") or (seg.startswith("_") and "=" not in seg) or seg.endswith("._COPYING_"):
            return True
    return False


_HIDDEN = r"(^|/)(\.|_[^=/]*(/|$))|\._COPYING_(/|$)"


@dataclass(frozen=True)
class OutputColumn:
    """One output column: logical name and type, and where it comes from."""

    name: str
    type: DataType
    nullable: bool
    physical: str | None  # the data file column (physical name); None for a partition column
    partition: bool = False
    metadata: Mapping[str, Any] = field(default_factory=dict)  # the field's (collations, CHAR/VARCHAR)


@dataclass
class NativePlan:
    """What the Spark-native path reads (see the module docstring)."""

    version: int
    root_uri: str  # the table root as Spark spells it
    files: pa.Table  # file_path, has_dv, deletion_vector, log path, one typed column per partition column
    read_schema: StructType  # physical data columns to read, with field ids in id mode
    output: list[OutputColumn]
    partition_columns: list[str]  # logical names (the file table's partition columns)
    column_mapping_mode: str
    report: SkippingReport | None = None
    unsupported: list[str] = field(default_factory=list)
    # physical partition column -> StructField, when every live file sits in the Hive
    # directories Spark's partition discovery reads back to the log's values (else empty)
    directory_partitions: list[StructField] = field(default_factory=list)

    @property
    def dv_files(self) -> list[tuple[str, str, dict[str, Any]]]:
        """(file URI, log path, deletion vector descriptor) of the files that have one."""
        if not self.files.num_rows:
            return []
        dv_files = self.files.filter(self.files.column(HAS_DV))
        return list(
            zip(
                dv_files.column(FILE_PATH).to_pylist(),
                dv_files.column(LOG_PATH).to_pylist(),
                dv_files.column("deletion_vector").to_pylist(),
                strict=True,
            )
        )


def plan_native_scan(
    snapshot: Snapshot,
    *,
    columns: Sequence[str] | None = None,
    predicates: Sequence[Any] = (),
    root_uri: str | None = None,
    files: pa.Table | None = None,
) -> NativePlan:
    """The native scan of ``snapshot``: output ``columns`` (default: all but ``void``
    columns, in table order), files pruned with ``predicates``; ``root_uri`` overrides the
    root as Spark spells it (e.g. ``s3a://`` for an ``s3://`` table). ``files``: a subset
    of the snapshot's live files (rows of ``snapshot.files``, e.g. a rewrite's candidates)
    to plan instead of all of them. The plan's file table keeps each file's log ``path``,
    and on tracked tables its ``base_row_id`` and ``default_row_commit_version``."""
    # the plan's file table carries no statistics: they are read only if predicates need them
    scan = plan_scan(snapshot, columns=columns, predicates=predicates, files=files, with_stats=False)
    mode = snapshot.column_mapping_mode
    partition_columns = snapshot.partition_columns
    part_lower = {c.lower() for c in partition_columns}
    fields = list(scan.output.fields)
    output = [
        OutputColumn(f.name, f.type, f.nullable, None, partition=True, metadata=f.metadata)
        if f.name.lower() in part_lower
        else OutputColumn(f.name, f.type, f.nullable, f.physical_name(mode), metadata=f.metadata)
        for f in fields
    ]
    root = root_uri if root_uri is not None else spark_root_uri(snapshot.storage.root_url)
    files, report = scan.files, scan.report
    unsupported = _unsupported(files)
    changes = unreadable_type_changes(StructType(tuple(f for f in fields if f.name.lower() not in part_lower)))
    if changes:
        unsupported.append("type changes Spark's Parquet reader cannot widen: " + ", ".join(changes))
    table = _file_table(snapshot, files, root) if not unsupported else _empty_file_table(snapshot)
    return NativePlan(
        version=snapshot.version,
        root_uri=root,
        files=table,
        # declared CHAR/VARCHAR types reach Spark's reader, which pads CHAR values as for its own tables
        read_schema=with_declared_types(
            scan.read_schema, StructType(tuple(f for f in fields if f.name.lower() not in part_lower))
        ),
        output=output,
        partition_columns=list(partition_columns),
        column_mapping_mode=mode,
        report=report,
        unsupported=unsupported,
        directory_partitions=_directory_partitions(snapshot, files) if not unsupported else [],
    )


_INT_DIGITS = {"byte": 10, "short": 10, "integer": 10, "long": 20}  # Parquet INT32 / INT64


def unreadable_type_changes(schema: StructType, prefix: str = "") -> list[str]:
    """The columns whose ``delta.typeChanges`` history includes a widening Spark 4.3's Parquet
    reader refuses (measured): an integer read as ``decimal(p, s)`` with ``p - s`` below the
    digits of its Parquet physical type (10 for byte/short/int stored as INT32, 20 for long)."""
    found = []
    for f in schema.fields:
        name = prefix + f.name
        for change in f.metadata.get("delta.typeChanges") or ():
            src = str(change.get("fromType", ""))
            m = re.match(r"decimal\((\d+),\s*(\d+)\)", str(change.get("toType", "")))
            if src in _INT_DIGITS and m and int(m.group(1)) - int(m.group(2)) < _INT_DIGITS[src]:
                found.append(f"{name} ({src} -> {change.get('toType')})")
        inner = f.type
        while isinstance(inner, (ArrayType, MapType)):
            inner = inner.element_type if isinstance(inner, ArrayType) else inner.value_type
        if isinstance(inner, StructType):
            found.extend(unreadable_type_changes(inner, name + "."))
    return found


# partition types Spark's partition discovery casts from a directory name exactly as the log's
# value parses (timestamps depend on the session zone, floats and binary on spelling: joined)
_DIRECTORY_TYPES = {"string", "byte", "short", "integer", "long", "date", "boolean"}


def _directory_partitions(snapshot: Snapshot, files: pa.Table) -> list[StructField]:
    """The physical partition fields when every file path is exactly
    ``<p1>=<escaped v1>/.../<pn>=<escaped vn>/<file name>`` with the log's values (what
    delta-spark and delta-rs write without column mapping), so that Spark's partition
    discovery gives the log's values; [] otherwise (the caller joins the values instead)."""
    columns = snapshot.partition_columns
    if not columns or not files.num_rows:
        return []
    mode = snapshot.column_mapping_mode
    fields = [snapshot.schema.field(c) for c in columns]
    from delta_pyds.protocol.schema import DecimalType

    for f in fields:
        if not (
            isinstance(f.type, DecimalType) or (isinstance(f.type, PrimitiveType) and f.type.name in _DIRECTORY_TYPES)
        ):
            return []
    physical = [f.physical_name(mode) for f in fields]
    if len({p.lower() for p in physical}) != len(physical) or any(_HIDDEN_NAME.match(p) for p in physical):
        return []
    paths = files.column("path").combine_chunks()
    if not pc.all(pc.starts_with(paths, physical[0] + "=")).as_py():
        return []  # not Hive directories: skip escaping every value (0.5 s at 300k files)
    pv = files.column("partition_values").combine_chunks()
    parts = []
    for name in physical:
        parts.append(pc.binary_join_element_wise(name + "=", escape_directory_values(pc.struct_field(pv, name)), ""))
    base = pc.extract_regex(paths, r"(?P<name>[^/]+)$").field("name")
    expected = pc.binary_join_element_wise(*parts, base, "/")
    if not pc.all(pc.fill_null(pc.equal(paths, expected), False)).as_py():
        return []
    return [StructField(p, f.type, True, {}) for p, f in zip(physical, fields, strict=True)]


_HIDDEN_NAME = re.compile(r"^[_.]")


def _unsupported(files: pa.Table) -> list[str]:
    """Why Spark's listing of the table root cannot serve these files (empty when it can)."""
    if not files.num_rows:
        return []
    paths = files.column("path").combine_chunks()
    # one regex pass over the paths in the common case (nothing to report)
    if not pc.any(pc.match_substring_regex(paths, f"{ABSOLUTE_PATTERN}|:[^/]*$|{_HIDDEN}")).as_py():
        return []
    reasons = []
    absolute = pc.match_substring_regex(paths, ABSOLUTE_PATTERN)
    if pc.any(absolute).as_py():
        example = paths.filter(absolute)[0].as_py()
        reasons.append(f"{pc.sum(absolute).as_py()} file(s) outside the table root (e.g. {example!r})")
    # a ':' in a directory name is fine (time=...T03:06:40Z); in the file name, the local
    # filesystem's checksum path (.name.crc) makes Hadoop's Path refuse it
    colon = pc.and_(pc.match_substring_regex(paths, r":[^/]*$"), pc.invert(absolute))
    if pc.any(colon).as_py():
        example = paths.filter(colon)[0].as_py()
        reasons.append(
            f"{pc.sum(colon).as_py()} file name(s) with ':' (e.g. {example!r}), which Hadoop's local "
            'filesystem cannot open ("Relative path in absolute URI" for its .crc file)'
        )
    hidden = pc.match_substring_regex(paths, _HIDDEN)
    if pc.any(hidden).as_py():
        example = paths.filter(hidden)[0].as_py()
        reasons.append(
            f"{pc.sum(hidden).as_py()} file(s) in paths Spark's listing skips (a name starting with "
            f"'_' or '.', e.g. {example!r})"
        )
    return reasons


def _file_table(snapshot: Snapshot, files: pa.Table, root: str) -> pa.Table:
    n = files.num_rows
    paths = files.column("path").combine_chunks() if n else pa.array([], pa.string())
    doubled = n and pc.any(pc.match_substring(paths, "//")).as_py()
    rel = pc.replace_substring_regex(paths, "/+", "/") if doubled else paths
    uris = pc.binary_join_element_wise(root + "/", spark_path_encode_array(rel), "") if n else paths
    if "deletion_vector" in files.column_names:
        dv = files.column("deletion_vector").combine_chunks()
        has_dv = pc.is_valid(dv)
    else:
        from delta_pyds.protocol.actions import DV_TYPE

        dv = pa.nulls(n, DV_TYPE)
        has_dv = pa.array(np.zeros(n, dtype=bool))
    cols: dict[str, Any] = {FILE_PATH: uris, HAS_DV: has_dv, "deletion_vector": dv, LOG_PATH: paths}
    for name in ("base_row_id", "default_row_commit_version"):
        if name in files.column_names:
            cols[name] = files.column(name)
    mode = snapshot.column_mapping_mode
    if snapshot.partition_columns:
        pv = files.column("partition_values").combine_chunks() if n else None
        for name in snapshot.partition_columns:
            f = snapshot.schema.field(name)
            raw = pc.struct_field(pv, f.physical_name(mode)) if pv is not None else pa.array([], pa.string())
            cols[name] = parse_partition_values(raw, f.type, column=name)
    return pa.table(cols)


def _empty_file_table(snapshot: Snapshot) -> pa.Table:
    return pa.table({FILE_PATH: pa.array([], pa.string()), HAS_DV: pa.array([], pa.bool_())})
