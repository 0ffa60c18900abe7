"""Per-file statistics for add actions, collected cheaply while writing.

Which columns: the first ``delta.dataSkippingNumIndexedCols`` (default 32) leaf
columns of the data schema (partition columns excluded, struct fields counted as
leaves, arrays/maps/variants as one leaf), or exactly the columns named by
``delta.dataSkippingStatsColumns`` — as delta-spark chooses them.

How: ``minValues`` / ``maxValues`` come from the Parquet footer of the file just
written (per row group, merged), ``nullCount`` from the Arrow validity bitmaps of the
batches written (exact, and counting a nested field as null where its parent struct
is null), NaN presence from one vectorised pass over float columns.

Guarantees of the JSON from :meth:`FileStats.to_json`:

* keys are physical column names (column mapping), nested structs mirror the schema;
* min/max only for the types delta-spark keeps them for (numbers, decimals, dates,
  timestamps, strings); never for booleans, binary, arrays, maps, variants;
* every bound is a true bound: strings are cut to 32 characters, the min as a prefix
  and the max extended with U+FFFD so it stays >= every value (comparing code
  points); timestamps are truncated down to milliseconds as the protocol says
  (``...T12:00:00.123Z``, ``timestamp_ntz`` without the ``Z``); decimals are written
  exactly, every digit kept, so each bound is a value of the column's type; a float column
  holding NaN gets no max (NaN sorts above every number in Spark) and infinities are
  left out (JSON cannot hold them); a column whose footer lacks min/max for a row
  group with values gets none;
* ``numRecords`` is the file's row count; ``tightBounds: true`` is written when the
  table supports deletion vectors.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from delta_pyds.protocol.schema import DataType, DecimalType, PrimitiveType, StructField, StructType
from delta_pyds.protocol.table_properties import NUM_INDEXED_COLS, STATS_COLUMNS, int_property

STRING_PREFIX_LENGTH = 32
_TIE_BREAKER = "\ufffd"
_EPOCH_ORDINAL = dt.date(1970, 1, 1).toordinal()


@dataclass(frozen=True)
class StatsColumn:
    logical_path: tuple[str, ...]  # names in the writer's logical batches
    physical_path: tuple[str, ...]  # keys in the stats JSON
    kind: str | None  # int|float|decimal|date|timestamp|timestamp_ntz|string, None: nullCount only
    scale: int = 0  # decimals

    @property
    def parquet_path(self) -> str:
        return ".".join(self.physical_path)


def _kind(dtype: DataType) -> tuple[str | None, int]:
    if isinstance(dtype, DecimalType):
        return "decimal", dtype.scale
    if isinstance(dtype, PrimitiveType):
        if dtype.name in ("byte", "short", "integer", "long"):
            return "int", 0
        if dtype.name in ("float", "double"):
            return "float", 0
        if dtype.name in ("date", "timestamp", "timestamp_ntz", "string"):
            return dtype.name, 0
    return None, 0


def _leaves(dtype: StructType, mode: str, logical: tuple[str, ...], physical: tuple[str, ...]) -> Iterator[StatsColumn]:
    for f in dtype.fields:
        lp, pp = logical + (f.name,), physical + (f.physical_name(mode),)
        if isinstance(f.type, StructType):
            yield from _leaves(f.type, mode, lp, pp)
        else:
            kind, scale = _kind(f.type)
            yield StatsColumn(lp, pp, kind, scale)


def parse_column_list(text: str) -> list[tuple[str, ...]]:
    """``a, b.c, `d.e`.f`` -> [("a",), ("b", "c"), ("d.e", "f")]."""
    out: list[tuple[str, ...]] = []
    current: list[str] = []
    part, quoted, i = "", False, 0
    while i < len(text):
        ch = text[i]
        if quoted:
            if ch == "`":
                if i + 1 < len(text) and text[i + 1] == "`":
                    part += "`"
                    i += 1
                else:
                    quoted = False
            else:
                part += ch
        elif ch == "`":
            quoted = True
        elif ch == ".":
            current.append(part.strip())
            part = ""
        elif ch == ",":
            current.append(part.strip())
            out.append(tuple(current))
            current, part = [], ""
        else:
            part += ch
        i += 1
    if part.strip() or current:
        current.append(part.strip())
        out.append(tuple(current))
    return [c for c in out if all(c)]


def stats_columns(
    data_schema: StructType, configuration: Mapping[str, str], mode: str, required: Iterable[Sequence[str]] = ()
) -> list[StatsColumn]:
    """The columns whose statistics a new file records (``data_schema``: the table
    schema without partition columns; ``required``: logical paths that must have stats
    whatever the table properties say, e.g. clustering columns)."""
    leaves = list(_leaves(data_schema, mode, (), ()))
    explicit = configuration.get(STATS_COLUMNS)
    if explicit is not None:
        wanted = [tuple(p.lower() for p in path) for path in parse_column_list(explicit)]
        result = []
        for col in leaves:
            lower = tuple(p.lower() for p in col.logical_path)
            if any(lower[: len(w)] == w for w in wanted):
                result.append(col)
    else:
        limit = int_property(configuration, NUM_INDEXED_COLS, 32)
        result = leaves if limit < 0 else leaves[:limit]
    must = {tuple(p.lower() for p in path) for path in required}
    if must:
        chosen = {col.logical_path for col in result}
        extra = [
            col
            for col in leaves
            if col.logical_path not in chosen and tuple(p.lower() for p in col.logical_path) in must
        ]
        result = [col for col in leaves if col.logical_path in chosen or col in extra]
    return result


# ---------------------------------------------------------------------- collection
@dataclass
class FileStats:
    """Statistics of one data file being written."""

    columns: Sequence[StatsColumn]
    tight_bounds: bool = False
    num_records: int = 0
    null_counts: list[int] = field(default_factory=list)
    has_nan: list[bool] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.null_counts = [0] * len(self.columns)
        self.has_nan = [False] * len(self.columns)

    def update(self, batch: pa.RecordBatch) -> None:
        """Accounts for one batch written to the file (physical names)."""
        self.num_records += batch.num_rows
        for i, col in enumerate(self.columns):
            arr = _leaf_array(batch, col.physical_path)
            if arr is None:
                self.null_counts[i] += batch.num_rows
                continue
            self.null_counts[i] += arr.null_count
            if col.kind == "float" and not self.has_nan[i] and len(arr) > arr.null_count:
                if pc.any(pc.is_nan(arr)).as_py():
                    self.has_nan[i] = True

    def to_json(self, metadata: Any) -> str:
        """The ``stats`` string, given the written file's ``pyarrow.parquet.FileMetaData``."""
        return _stats_json(
            metadata,
            self.columns,
            self.num_records,
            list(self.null_counts),
            no_max=[col.kind == "float" and nan for col, nan in zip(self.columns, self.has_nan)],
            tight_bounds=self.tight_bounds,
        )


def _stats_json(
    metadata: Any,
    columns: Sequence[StatsColumn],
    num_records: int,
    null_counts: Sequence[int | None],
    *,
    no_max: Sequence[bool],
    tight_bounds: bool,
) -> str:
    bounds = footer_bounds(metadata, {c.parquet_path: c.kind for c in columns if c.kind})
    mins: dict[str, Any] = {}
    maxs: dict[str, Any] = {}
    nulls: dict[str, Any] = {}
    for i, col in enumerate(columns):
        count = null_counts[i]
        if count is not None:
            _put(nulls, col.physical_path, count)
        if col.kind is None or count is None or count >= num_records:
            continue
        raw = bounds.get(col.parquet_path)
        if raw is None:
            continue
        lo, hi = _encode(col, raw[0], "min"), _encode(col, raw[1], "max")
        if no_max[i]:
            hi = None
        if lo is not None:
            _put(mins, col.physical_path, lo)
        if hi is not None:
            _put(maxs, col.physical_path, hi)
    out: dict[str, Any] = {"numRecords": num_records, "minValues": mins, "maxValues": maxs, "nullCount": nulls}
    if tight_bounds:
        out["tightBounds"] = True
    return dumps(out)


def footer_null_counts(metadata: Any) -> dict[str, int | None]:
    """path_in_schema -> null count over all row groups (None when a row group does not
    record it). A Parquet null count counts a leaf as null wherever it or a parent
    struct is null, the Delta ``nullCount`` convention for nested fields."""
    out: dict[str, int | None] = {}
    for r in range(metadata.num_row_groups):
        rg = metadata.row_group(r)
        for c in range(rg.num_columns):
            chunk = rg.column(c)
            path = chunk.path_in_schema
            s = chunk.statistics
            count = s.null_count if s is not None and s.has_null_count else None
            if path in out:
                prev = out[path]
                out[path] = None if prev is None or count is None else prev + count
            else:
                out[path] = count
    return out


def stats_from_footer(metadata: Any, columns: Sequence[StatsColumn], *, tight_bounds: bool = False) -> str:
    """The ``stats`` string of a Parquet file some other writer (Spark) wrote, from its
    footer alone (``pyarrow.parquet.FileMetaData``, physical column names).

    ``numRecords`` is the footer's row count. ``nullCount`` comes from the footer's null
    counts, so it is recorded only for columns that are one Parquet leaf (primitive
    columns and struct fields; arrays, maps and variants get none) whose every row
    group records it. Bounds follow the rules of the module docstring. Float columns: a
    NaN sorts above every number in Spark, so a max is kept only when the footer shows
    it would have been NaN — files by parquet-mr (Spark's writer) order NaN last in their
    min/max, and :func:`footer_bounds` keeps a NaN max, which the encoding drops; other
    writers (pyarrow) leave NaN out of min/max, so their float columns get no max. A
    column without a null count gets no bounds."""
    counts = footer_null_counts(metadata)
    nulls = [counts.get(col.parquet_path) for col in columns]
    nan_ordered = "parquet-mr" in str(getattr(metadata, "created_by", "") or "")
    return _stats_json(
        metadata,
        columns,
        int(metadata.num_rows),
        nulls,
        no_max=[col.kind == "float" and not nan_ordered for col in columns],
        tight_bounds=tight_bounds,
    )


def _leaf_array(batch: pa.RecordBatch, path: tuple[str, ...]) -> pa.Array | None:
    idx = batch.schema.get_field_index(path[0])
    if idx < 0:
        return None
    arr = batch.column(idx)
    for name in path[1:]:
        j = arr.type.get_field_index(name)
        if j < 0:
            return None
        arr = pc.struct_field(arr, [j])  # carries the parent's nulls
    return arr


def _put(target: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    for name in path[:-1]:
        target = target.setdefault(name, {})
    target[path[-1]] = value


def footer_bounds(metadata: Any, paths: dict[str, str]) -> dict[str, tuple[Any, ...]]:
    """The min/max raw values of a Parquet file's columns from its footer:
    path_in_schema -> (min_raw, max_raw) over all row groups; a column some row group
    with values has no statistics for is left out. A float column's NaN max (Parquet
    orders NaN last) is kept, so the caller can drop the max."""
    out: dict[str, list[Any]] = {}
    broken: set[str] = set()
    for r in range(metadata.num_row_groups):
        rg = metadata.row_group(r)
        for c in range(rg.num_columns):
            chunk = rg.column(c)
            path = chunk.path_in_schema
            if path not in paths or path in broken:
                continue
            s = chunk.statistics
            if s is None or not s.has_min_max:
                if s is None or s.null_count is None or s.null_count < chunk.num_values:
                    broken.add(path)
                continue
            lo, hi = s.min_raw, s.max_raw
            if paths[path] == "decimal" and isinstance(lo, (bytes, bytearray)):
                lo = int.from_bytes(lo, "big", signed=True)
                hi = int.from_bytes(hi, "big", signed=True)
            cur = out.get(path)
            if cur is None:
                out[path] = [lo, hi]
            else:
                if lo < cur[0]:
                    cur[0] = lo
                if hi != hi or (cur[1] == cur[1] and hi > cur[1]):  # a NaN max (float) sticks
                    cur[1] = hi
    return {p: tuple(v) for p, v in out.items() if p not in broken}


def _encode(col: StatsColumn, raw: Any, side: str) -> Any:
    kind = col.kind
    try:
        if kind == "int":
            return int(raw)
        if kind == "float":
            value = float(raw)
            return value if math.isfinite(value) else None
        if kind == "decimal":
            unscaled = int(raw) if isinstance(raw, int) else int.from_bytes(raw, "big", signed=True)
            return decimal_text(unscaled, col.scale)
        if kind == "date":
            return dt.date.fromordinal(_EPOCH_ORDINAL + int(raw)).isoformat()
        if kind in ("timestamp", "timestamp_ntz"):
            millis = int(raw) // 1000  # truncated down to milliseconds
            stamp = dt.datetime(1970, 1, 1) + dt.timedelta(milliseconds=millis)
            text = stamp.strftime("%Y-%m-%dT%H:%M:%S.") + f"{stamp.microsecond // 1000:03d}"
            if stamp.year < 1 or stamp.year > 9999:
                return None
            return text + "Z" if kind == "timestamp" else text
        if kind == "string":
            text = raw.decode("utf-8") if isinstance(raw, (bytes, bytearray)) else str(raw)
            return truncate_min(text) if side == "min" else truncate_max(text)
    except (ValueError, OverflowError, UnicodeDecodeError, decimal.InvalidOperation):
        return None
    return None


def truncate_min(text: str, prefix: int = STRING_PREFIX_LENGTH) -> str:
    return text[:prefix]


def truncate_max(text: str, prefix: int = STRING_PREFIX_LENGTH) -> str:
    """A string >= ``text`` of about ``prefix`` characters (delta-spark's rule, in code
    points: keep extending the prefix over characters >= U+FFFD, then append U+FFFD)."""
    if len(text) <= prefix:
        return text
    cut = prefix
    while cut < len(text) and text[cut] >= _TIE_BREAKER:
        cut += 1
    if cut == len(text):
        return text
    return text[:cut] + _TIE_BREAKER


# -------------------------------------------------------------------------- JSON
class RawNumber(str):
    """A number written verbatim into JSON (exact decimals)."""


def decimal_text(unscaled: int, scale: int) -> RawNumber:
    """The exact decimal ``unscaled * 10**-scale`` as JSON number text, every digit kept
    (``decimal.Decimal`` arithmetic would round to the context's 28 digits, and
    ``decimal(38,0)``'s max 10**38-1 would become 1E+38, which the type cannot hold)."""
    digits = str(abs(unscaled))
    sign = "-" if unscaled < 0 else ""
    if scale <= 0:
        return RawNumber(sign + digits + "0" * -scale if unscaled else "0")
    digits = digits.rjust(scale + 1, "0")
    return RawNumber(f"{sign}{digits[:-scale]}.{digits[-scale:]}")


def loosen_bounds(stats: str) -> str | None:
    """``stats`` JSON with ``tightBounds: false`` (a deletion vector now hides rows),
    every number kept as written (decimal bounds are not turned into floats); None
    when ``stats`` is not a JSON object."""
    try:
        parsed = json.loads(stats, parse_float=RawNumber)
    except ValueError:
        return None
    if not isinstance(parsed, dict):
        return None
    parsed["tightBounds"] = False
    return dumps(parsed)


def dumps(value: Any) -> str:
    """Compact JSON that writes :class:`RawNumber` verbatim."""
    parts: list[str] = []
    _dump(value, parts)
    return "".join(parts)


def _dump(value: Any, out: list[str]) -> None:
    if isinstance(value, dict):
        out.append("{")
        first = True
        for k, v in value.items():
            if not first:
                out.append(",")
            first = False
            out.append(json.dumps(k, ensure_ascii=False))
            out.append(":")
            _dump(v, out)
        out.append("}")
    elif isinstance(value, RawNumber):
        out.append(str.__str__(value))
    elif isinstance(value, bool) or value is None or isinstance(value, (int, float, str)):
        out.append(json.dumps(value, ensure_ascii=False))
    elif isinstance(value, (list, tuple)):
        out.append("[")
        for i, v in enumerate(value):
            if i:
                out.append(",")
            _dump(v, out)
        out.append("]")
    else:
        out.append(json.dumps(str(value), ensure_ascii=False))


# --------------------------------------------------------------- typed statistics
def stats_schema(columns: Sequence[StatsColumn], schema: StructType, mode: str) -> pa.StructType:
    """The Arrow type of ``stats_parsed`` in checkpoints for these columns."""
    from delta_pyds.protocol.schema import to_arrow_type

    mins: dict[str, Any] = {}
    nulls: dict[str, Any] = {}
    for col in columns:
        f = _field_at(schema, col.logical_path)
        if f is None:
            continue
        _put(nulls, col.physical_path, pa.int64())
        if col.kind is not None:
            _put(mins, col.physical_path, to_arrow_type(f.type))

    def to_struct(d: dict[str, Any]) -> pa.StructType:
        return pa.struct([(k, to_struct(v) if isinstance(v, dict) else v) for k, v in d.items()])

    fields = [("numRecords", pa.int64())]
    if mins:
        fields += [("minValues", to_struct(mins)), ("maxValues", to_struct(mins))]
    if nulls:
        fields.append(("nullCount", to_struct(nulls)))
    fields.append(("tightBounds", pa.bool_()))
    return pa.struct(fields)


def _field_at(schema: StructType, path: tuple[str, ...]) -> StructField | None:
    current: DataType = schema
    f = None
    for name in path:
        if not isinstance(current, StructType):
            return None
        f = current.get(name)
        if f is None:
            return None
        current = f.type
    return f
