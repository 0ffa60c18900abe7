"""Data skipping: drop the files (and Parquet row groups) that provably hold no row
matching a conjunction of :mod:`delta_pyds.predicates`.

Guarantees
----------
Skipping is *conservative*: a file is dropped only when its partition values or its
statistics prove that no row of it can make the conjunction TRUE (Spark SQL semantics).
Anything that is missing, unparsable, of an unexpected type or not understood keeps the
file. Callers must still apply the filters to the rows they read; skipping only saves I/O.

Evaluation is vectorised in Arrow over the whole file table: partition values are parsed
per column (:func:`partition_values.parse_partition_values`), and only the statistics the
predicates need are parsed from the ``stats`` JSON (one ``pyarrow.json`` read with an
explicit schema of just those fields) or taken from ``stats_parsed`` where a checkpoint
provided it.

Rules (each is unit-tested in ``tests/test_skipping.py``)
---------------------------------------------------------
* Predicates are first put in negation normal form: ``NOT`` is pushed through
  ``AND``/``OR`` (De Morgan) and folded into comparisons (``NOT a < v`` is ``a >= v``,
  ``NOT a = v`` is ``a != v``, ``NOT a IN (...)`` is a conjunction of ``!=`` over the
  non-null values, ``NOT a <=> v`` is ``a IS NULL OR a != v``); ``NOT StartsWith`` and
  ``NOT`` of anything unknown keep every file. ``AND`` prunes when either side proves
  false, ``OR`` only when both sides do. A predicate type, column or literal that is not
  understood (wrong Python type for the column, decimal beyond 38 digits...) keeps every
  file; ``a <op> NULL`` (and its negation) never matches, nor does ``a IN ()``.
* Columns are logical paths (nested struct fields included), resolved against the schema
  (exact name first, then case-insensitively) and mapped to physical names (column
  mapping); statistics and partition values are keyed by physical names.
* Partition columns are exact: the predicate is evaluated on the typed partition value
  (null partition values make comparisons false and ``IS NULL`` true). NaN partition
  values of float columns are never pruned.
* Statistics: a file with missing stats, or without stats for a referenced column, is
  kept. ``numRecords == 0`` drops the file. When ``tightBounds`` is not false,
  ``nullCount == numRecords`` means the column is all-null (every comparison is false,
  ``IS NOT NULL`` is false) and ``nullCount == 0`` makes ``IS NULL`` false. With
  ``tightBounds = false`` (deletion vectors) min/max are still used as bounds but no
  conclusion is drawn from the counts.
* min/max are used for numbers, decimals, dates, timestamps and strings only (not for
  booleans or binary). Bounds are widened where writers are lossy:

  - timestamps: JSON stats are truncated to milliseconds and delta-spark 3.2/3.3 wrote
    time-zone offsets truncated to minutes, so the min is lowered by 59 s and the max
    raised by 59.001 s (what delta-spark's reader does);
  - FLOAT columns (and DOUBLE columns widened from another type, ``delta.typeChanges``)
    are compared with one float32 ulp of slack on each side;
  - strings: the min may be a prefix of the true min (always a valid lower bound). A max
    that may have been truncated (32 or more characters, or ending with a tie-breaker
    character U+FFFD / U+10FFFF) is only trusted as "every value starts with something
    <= R", where R is the max without its last character (and without a ``?`` that
    delta-spark substitutes for a split surrogate pair); so ``> v`` / ``= v`` prune only
    when ``v`` is greater than R beyond R's length;
  - float/double: NaN satisfies ``>``, ``>=`` and ``!=`` in Spark but some writers leave
    NaN out of min/max (Parquet footers, delta-rs), so those never prune on the max; a
    NaN literal never prunes; ``"NaN"``/``"Infinity"`` JSON stats are read as unknown.
* Stats written in an older, narrower type (type widening) are parsed in the current
  type; a value that cannot be parsed keeps that file.
* ``IN`` lists: up to 16 values are tested one by one, longer lists by their range.
  ``StartsWith`` compares the prefix with min/max. ``!=`` prunes only a file whose bounds
  are equal to the value (never on truncated strings, widened timestamps or floats).
* Row groups (:func:`select_row_groups`) use the Parquet column-chunk statistics the same
  way (exact bounds, no widening except nanosecond timestamps rounded outwards to
  microseconds); INT96 columns and chunks without statistics keep the row group.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import math
from dataclasses import dataclass
from typing import Any, Sequence

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj

from . import predicates as P
from .partition_values import parse_partition_values
from .schema import DataType, DecimalType, PrimitiveType, StructType

__all__ = ["SkippingReport", "prune_files", "select_row_groups"]

STRING_PREFIX_LENGTH = 32
_TIE_BREAKERS = ("\ufffd", "\U0010ffff")
_TS_MIN_SLACK = dt.timedelta(seconds=59)
_TS_MAX_SLACK = dt.timedelta(seconds=59, milliseconds=1)
_F32_RELATIVE = 2.0 ** -22
_F32_ABSOLUTE = 1e-44
_IN_LIST_EXACT = 16
_JSON_CHUNK_ROWS = 65536
_JSON_RETRY_BUDGET = 256  # extra JSON reads per chunk when some stats do not parse
_INT64_MIN, _INT64_MAX = -(2 ** 63), 2 ** 63 - 1

_NEGATE = {"eq": "ne", "ne": "eq", "lt": "ge", "ge": "lt", "le": "gt", "gt": "le"}
_CMP_OPS = {P.EqualTo: "eq", P.LessThan: "lt", P.LessThanOrEqual: "le",
            P.GreaterThan: "gt", P.GreaterThanOrEqual: "ge"}
_ARROW_CMP = {"eq": pc.equal, "ne": pc.not_equal, "lt": pc.less, "le": pc.less_equal,
              "gt": pc.greater, "ge": pc.greater_equal}
_MINMAX_KINDS = {"int", "float32", "float64", "decimal", "date", "timestamp", "timestamp_ntz", "string"}
_FLOAT_KINDS = {"float32", "float64"}


# ----------------------------------------------------------------------------- report
@dataclass(frozen=True)
class SkippingReport:
    """What :func:`prune_files` did: every file is either kept or pruned by exactly one cause."""
    total_files: int
    files_kept: int
    pruned_by_partition: int
    pruned_by_stats: int

    @property
    def files_pruned(self) -> int:
        return self.total_files - self.files_kept

    def __str__(self) -> str:
        return (f"data skipping kept {self.files_kept} of {self.total_files} files "
                f"(pruned {self.pruned_by_partition} by partition values, "
                f"{self.pruned_by_stats} by statistics)")


# ------------------------------------------------------------------------------ columns
@dataclass(frozen=True)
class _Col:
    logical: tuple
    physical: tuple
    dtype: Any
    kind: str
    partition: bool
    loose_float: bool


def _kind(dtype: DataType) -> str:
    if isinstance(dtype, DecimalType):
        return "decimal" if dtype.precision <= 38 else "other"
    if isinstance(dtype, PrimitiveType):
        name = dtype.name
        if name in ("byte", "short", "integer", "long"):
            return "int"
        if name == "float":
            return "float32"
        if name == "double":
            return "float64"
        if name in ("date", "timestamp", "timestamp_ntz", "string", "boolean", "binary"):
            return name
        return "other"
    if isinstance(dtype, StructType):
        return "struct"
    return "other"  # arrays, maps: null counts only


class _Resolver:
    def __init__(self, schema: StructType, partition_columns: Sequence[str], mode: str):
        self.schema = schema
        self.mode = mode or "none"
        self.partitions = {c.lower() for c in partition_columns}
        self._cache: dict[tuple, _Col | None] = {}

    def __call__(self, path: tuple) -> _Col | None:
        if path not in self._cache:
            self._cache[path] = self._resolve(path)
        return self._cache[path]

    def _resolve(self, path: tuple) -> _Col | None:
        current: Any = self.schema
        logical, physical = [], []
        field = None
        try:
            for name in path:
                if not isinstance(current, StructType):
                    return None
                field = current.get(name)
                if field is None:
                    return None
                logical.append(field.name)
                physical.append(field.physical_name(self.mode))
                current = field.type
        except Exception:  # a malformed column mapping: no skipping on this column
            return None
        kind = _kind(current)
        if kind == "struct":
            return None
        partition = len(path) == 1 and logical[0].lower() in self.partitions
        loose = kind == "float32" or (kind == "float64" and bool(field.metadata.get("delta.typeChanges")))
        return _Col(tuple(logical), tuple(physical), current, kind, partition, loose)


# ----------------------------------------------------------------------------- literals
_BAD = object()


def _literal(value: Any, col: _Col) -> Any:
    """A Python literal -> (arrow scalar, comparable python value), or _BAD if it does not
    fit the column type (then the leaf keeps every file)."""
    kind = col.kind
    try:
        if kind == "int":
            if isinstance(value, bool):
                return _BAD
            if isinstance(value, (float, decimal.Decimal)):
                if not math.isfinite(value) or value != int(value):
                    return _BAD
                value = int(value)
            if isinstance(value, int) and _INT64_MIN <= value <= _INT64_MAX:
                return pa.scalar(value, pa.int64()), value
            return _BAD
        if kind in _FLOAT_KINDS:
            if isinstance(value, bool) or not isinstance(value, (int, float, decimal.Decimal)):
                return _BAD
            value = float(value)
            return pa.scalar(value, pa.float64()), value
        if kind == "decimal":
            if isinstance(value, bool):
                return _BAD
            if isinstance(value, int):
                value = decimal.Decimal(value)
            if not isinstance(value, decimal.Decimal) or not value.is_finite():
                return _BAD
            scalar = pa.scalar(value)
            if not pa.types.is_decimal128(scalar.type):
                return _BAD
            return scalar, value
        if kind == "string":
            return (pa.scalar(value, pa.string()), value) if isinstance(value, str) else _BAD
        if kind == "date":
            if isinstance(value, dt.datetime) or not isinstance(value, dt.date):
                return _BAD
            return pa.scalar(value, pa.date32()), value
        if kind == "timestamp":
            if not isinstance(value, dt.datetime) or value.tzinfo is None:
                return _BAD
            value = value.astimezone(dt.timezone.utc)
            return pa.scalar(value, pa.timestamp("us", tz="UTC")), value
        if kind == "timestamp_ntz":
            if not isinstance(value, dt.datetime) or value.tzinfo is not None:
                return _BAD
            return pa.scalar(value, pa.timestamp("us")), value
        if kind == "boolean":
            return (pa.scalar(value, pa.bool_()), value) if isinstance(value, bool) else _BAD
        if kind == "binary":
            if isinstance(value, (bytes, bytearray, memoryview)):
                value = bytes(value)
                return pa.scalar(value, pa.binary()), value
            return _BAD
    except (pa.ArrowException, ValueError, TypeError, OverflowError, decimal.InvalidOperation):
        return _BAD
    return _BAD


def _is_nan(value: Any) -> bool:
    return isinstance(value, float) and math.isnan(value)


# --------------------------------------------------------------------- normal form
@dataclass(frozen=True)
class _Const:
    keep: bool  # True: every file may match; False: no file can match


@dataclass(frozen=True)
class _Junction:
    op: str  # "and" | "or"
    children: tuple


@dataclass(frozen=True)
class _Leaf:
    col: _Col
    op: str  # eq ne lt le gt ge in notin isnull notnull startswith
    scalars: tuple = ()
    values: tuple = ()


_KEEP = _Const(True)
_NONE = _Const(False)


def _junction(op: str, children: list) -> Any:
    out = []
    for c in children:
        if isinstance(c, _Const):
            if c.keep == (op == "or"):
                return c  # dominant
            continue
        if isinstance(c, _Junction) and c.op == op:
            out.extend(c.children)
        else:
            out.append(c)
    if not out:
        return _KEEP if op == "and" else _NONE
    return out[0] if len(out) == 1 else _Junction(op, tuple(out))


def _normalize(pred: Any, negate: bool, resolve: _Resolver) -> Any:
    if isinstance(pred, P.Not):
        return _normalize(pred.child, not negate, resolve)
    if isinstance(pred, (P.And, P.Or)):
        op = "and" if isinstance(pred, P.And) != negate else "or"
        return _junction(op, [_normalize(pred.left, negate, resolve),
                              _normalize(pred.right, negate, resolve)])
    column = getattr(pred, "column", None)
    if not isinstance(column, tuple):
        return _KEEP  # unknown predicate type
    col = resolve(column)
    if col is None:
        return _KEEP
    if isinstance(pred, (P.IsNull, P.IsNotNull)):
        is_null = isinstance(pred, P.IsNull) != negate
        return _Leaf(col, "isnull" if is_null else "notnull")
    if isinstance(pred, P.EqualNullSafe):
        if pred.value is None:
            return _normalize(P.IsNull(column), negate, resolve)
        if not negate:
            return _normalize(P.EqualTo(column, pred.value), False, resolve)
        return _junction("or", [_normalize(P.IsNull(column), False, resolve),
                                _normalize(P.EqualTo(column, pred.value), True, resolve)])
    op = _CMP_OPS.get(type(pred))
    if op is not None:
        if pred.value is None:
            return _NONE  # `a < NULL` and its negation are NULL: never TRUE
        lit = _literal(pred.value, col)
        if lit is _BAD:
            return _KEEP
        return _Leaf(col, _NEGATE[op] if negate else op, (lit[0],), (lit[1],))
    if isinstance(pred, P.In):
        values = [v for v in pred.values if v is not None]
        if not values:
            # `a IN ()` / `a IN (NULL)` is never TRUE; NOT of it is TRUE for every row
            return _KEEP if negate else _NONE
        lits = [_literal(v, col) for v in values]
        if any(lit is _BAD for lit in lits):
            return _KEEP
        return _Leaf(col, "notin" if negate else "in", tuple(s for s, _ in lits), tuple(v for _, v in lits))
    if isinstance(pred, P.StartsWith):
        if negate or col.kind != "string" or not isinstance(pred.prefix, str):
            return _KEEP
        return _Leaf(col, "startswith", (pa.scalar(pred.prefix, pa.string()),), (pred.prefix,))
    return _KEEP


def _normalize_all(predicates: Sequence[Any], resolve: _Resolver) -> Any:
    return _junction("and", [_normalize(p, False, resolve) for p in predicates])


def _leaves(node: Any):
    if isinstance(node, _Junction):
        for c in node.children:
            yield from _leaves(c)
    elif isinstance(node, _Leaf):
        yield node


# --------------------------------------------------------------------------- helpers
def _all(n: int, value: bool) -> pa.BooleanArray:
    return pc.fill_null(pa.nulls(n, pa.bool_()), value)


def _and(a, b):
    if a is None:
        return b
    if b is None:
        return a
    return pc.and_(a, b)


def _or(a, b):
    if a is None or b is None:
        return None
    return pc.or_(a, b)


def _k_or(*xs):
    out = None
    for x in xs:
        if x is None:
            continue
        out = x if out is None else pc.or_kleene(out, x)
    return out


def _k_and(*xs):
    out = None
    for x in xs:
        if x is None:
            return None
        out = x if out is None else pc.and_kleene(out, x)
    return out


def _prefixes(s: str) -> pa.Array:
    return pa.array([s[:k] for k in range(len(s) + 1)], pa.string())


# ------------------------------------------------------------------------ leaf stats
@dataclass
class _Stats:
    """Bounds and counts of one column over n units (files or row groups); arrays may hold
    nulls (unknown). ``hi_prefix`` marks rows whose ``hi`` is a prefix R of the true max
    (truncated string stats): every value v then has v[:len(R)] <= R."""
    lo: pa.Array | None
    hi: pa.Array | None
    hi_prefix: pa.Array | None
    null_count: pa.Array | None
    num_records: pa.Array | None
    tight: pa.Array | None


def _all_lt(st: _Stats, v: pa.Scalar, raw: Any):
    """TRUE where every value of the column is < v (nulls: unknown)."""
    normal = pc.less(st.hi, v)
    return _with_prefix_rule(st, normal, v, raw)


def _all_le(st: _Stats, v: pa.Scalar, raw: Any):
    normal = pc.less_equal(st.hi, v)
    return _with_prefix_rule(st, normal, v, raw)


def _with_prefix_rule(st: _Stats, normal, v, raw):
    if st.hi_prefix is None or not isinstance(raw, str):
        return normal
    # every value v' has v'[:len(R)] <= R, so v' < v when v[:len(R)] > R
    beyond = pc.and_kleene(pc.greater(v, st.hi), pc.invert(pc.is_in(st.hi, value_set=_prefixes(raw))))
    return pc.if_else(st.hi_prefix, beyond, normal)


def _range_prune(leaf: _Leaf, st: _Stats):
    """TRUE where min/max prove the leaf false for every non-null value."""
    op, kind = leaf.op, leaf.col.kind
    if st.lo is None or st.hi is None:
        return None
    is_float = kind in _FLOAT_KINDS
    if is_float and any(_is_nan(v) for v in leaf.values):
        return None
    if op in ("eq", "lt", "le", "gt", "ge", "ne", "startswith"):
        v, raw = leaf.scalars[0], leaf.values[0]
        if op == "eq":
            return _k_or(pc.greater(st.lo, v), _all_lt(st, v, raw))
        if op == "lt":
            return pc.greater_equal(st.lo, v)
        if op == "le":
            return pc.greater(st.lo, v)
        if is_float and op in ("gt", "ge", "ne"):
            return None  # NaN may be present without being in the stats
        if op == "gt":
            return _all_le(st, v, raw)
        if op == "ge":
            return _all_lt(st, v, raw)
        if op == "ne":
            same = pc.and_kleene(pc.equal(st.lo, v), pc.equal(st.hi, v))
            if st.hi_prefix is not None:
                same = pc.and_kleene(same, pc.invert(st.hi_prefix))
            return same
        # startswith: no value >= raw, or the min is already past every string with the prefix
        past = pc.and_kleene(pc.greater(st.lo, v), pc.invert(pc.starts_with(st.lo, pattern=raw)))
        return _k_or(_all_lt(st, v, raw), past)
    if op == "in":
        pairs = list(zip(leaf.scalars, leaf.values))
        if len(pairs) <= _IN_LIST_EXACT:
            return _k_and(*[_k_or(pc.greater(st.lo, s), _all_lt(st, s, r)) for s, r in pairs])
        lo_s, lo_r = min(pairs, key=lambda p: p[1])
        hi_s, hi_r = max(pairs, key=lambda p: p[1])
        return _k_or(pc.greater(st.lo, hi_s), _all_lt(st, lo_s, lo_r))
    if op == "notin":
        if is_float:
            return None
        same = pc.equal(st.lo, st.hi)
        if st.hi_prefix is not None:
            same = pc.and_kleene(same, pc.invert(st.hi_prefix))
        hits = None
        if len(leaf.values) > _IN_LIST_EXACT:
            try:
                hits = pc.is_in(st.lo, value_set=pa.array(list(leaf.values), st.lo.type))
            except (pa.ArrowException, TypeError, ValueError):
                hits = None
        if hits is None:
            hits = _k_or(*[pc.equal(st.lo, s) for s in leaf.scalars])
        return pc.and_kleene(same, hits)
    return None


def _stats_keep(leaf: _Leaf, st: _Stats) -> pa.Array | None:
    tight = pc.fill_null(st.tight, True) if st.tight is not None else None
    empty = pc.equal(st.num_records, 0) if st.num_records is not None else None
    all_null = no_null = None
    if st.null_count is not None and tight is not None:
        if st.num_records is not None:
            all_null = pc.and_kleene(tight, pc.equal(st.null_count, st.num_records))
        no_null = pc.and_kleene(tight, pc.equal(st.null_count, 0))
    op = leaf.op
    if op == "isnull":
        prune = _k_or(empty, no_null)
    elif op == "notnull":
        prune = _k_or(empty, all_null)
    else:
        ranged = _range_prune(leaf, st) if leaf.col.kind in _MINMAX_KINDS else None
        prune = _k_or(empty, all_null, ranged)
    if prune is None:
        return None
    return pc.invert(pc.fill_null(prune, False))


def _partition_keep(leaf: _Leaf, values: pa.Array) -> pa.Array | None:
    op, kind = leaf.op, leaf.col.kind
    if kind in _FLOAT_KINDS and any(_is_nan(v) for v in leaf.values):
        return None
    try:
        if op == "isnull":
            return pc.is_null(values)
        if op == "notnull":
            return pc.is_valid(values)
        if op in _ARROW_CMP:
            mask = _ARROW_CMP[op](values, leaf.scalars[0])
        elif op == "in":
            mask = None
            if len(leaf.values) > _IN_LIST_EXACT:
                try:
                    mask = pc.is_in(values, value_set=pa.array(list(leaf.values), values.type))
                except (pa.ArrowException, TypeError, ValueError):
                    mask = None
            if mask is None:
                mask = _k_or(*[pc.equal(values, s) for s in leaf.scalars])
        elif op == "notin":
            mask = _k_and(*[pc.not_equal(values, s) for s in leaf.scalars])
        elif op == "startswith":
            mask = pc.starts_with(values, pattern=leaf.values[0])
        else:
            return None
        mask = pc.fill_null(mask, False)
        if kind in _FLOAT_KINDS:  # Spark: NaN = NaN and NaN > everything
            mask = pc.or_(mask, pc.fill_null(pc.is_nan(values), False))
        return mask
    except (pa.ArrowException, TypeError, ValueError):
        return None


# --------------------------------------------------------------------------- evaluator
class _Frame:
    """The facts about n units that leaves are evaluated on."""
    n: int

    def partition_values(self, col: _Col) -> pa.Array | None:
        return None

    def stats(self, col: _Col) -> _Stats | None:
        return None


def _evaluate(node: Any, frame: _Frame, *, use_partitions: bool = True, use_stats: bool = True):
    """Keep mask (BooleanArray without nulls) or None for 'keep all'."""
    if isinstance(node, _Const):
        return None if node.keep else _all(frame.n, False)
    if isinstance(node, _Junction):
        results = [_evaluate(c, frame, use_partitions=use_partitions, use_stats=use_stats)
                   for c in node.children]
        out = results[0]
        for r in results[1:]:
            out = _and(out, r) if node.op == "and" else _or(out, r)
        return out
    if isinstance(node, _Leaf):
        if node.col.partition:
            if not use_partitions:
                return None
            values = frame.partition_values(node.col)
            return None if values is None else _partition_keep(node, values)
        if not use_stats:
            return None
        st = frame.stats(node.col)
        return None if st is None else _stats_keep(node, st)
    return None


# ------------------------------------------------------------------ JSON stats parsing
def _json_type(col: _Col) -> pa.DataType | None:
    kind = col.kind
    if kind == "int":
        return pa.int64()
    if kind in _FLOAT_KINDS:
        return pa.float64()
    if kind == "decimal":
        return pa.decimal128(col.dtype.precision, col.dtype.scale)
    if kind in ("date", "string"):
        return pa.string()  # dates are cast after parsing (pyarrow.json has no date parser)
    if kind == "timestamp":
        return pa.timestamp("us", tz="UTC")
    if kind == "timestamp_ntz":
        return pa.timestamp("us")
    return None


def _stat_type(col: _Col) -> pa.DataType | None:
    if col.kind == "date":
        return pa.date32()
    return _json_type(col)


def _nested_struct(paths: dict) -> pa.StructType:
    """{physical path tuple: arrow type} -> nested struct type."""
    tree: dict = {}
    for path, typ in paths.items():
        node = tree
        for name in path[:-1]:
            node = node.setdefault(name, {})
            if not isinstance(node, dict):
                break
        else:
            node.setdefault(path[-1], typ)

    def build(node: dict) -> pa.StructType:
        return pa.struct([pa.field(k, build(v) if isinstance(v, dict) else v) for k, v in node.items()])
    return build(tree)


def _get_path(arr: Any, path: Sequence[str]) -> pa.Array | None:
    """A nested field of a struct array (parent nulls propagated), or None if absent."""
    for name in path:
        if arr is None or not pa.types.is_struct(arr.type) or arr.type.get_field_index(name) < 0:
            return None
        arr = pc.struct_field(arr, [arr.type.get_field_index(name)])
    return arr


def _read_json_lines(lines: pa.Array, schema: pa.Schema, budget: list | None = None) -> pa.StructArray:
    """Parses one JSON object per element. Elements that fail to parse become null (their
    files are kept): a failing block is bisected, within a budget of reads per call, after
    which the remaining failing ranges are given up as null.

    Each element is wrapped as ``{"i": <row>, "s": <element>}`` and the row numbers are
    checked after parsing, so an element holding several objects, or none, can never
    shift the statistics of one file onto another."""
    if budget is None:
        budget = [_JSON_RETRY_BUDGET]
    n = len(lines)
    struct_type = pa.struct(list(schema))
    if n == 0:
        return pa.array([], struct_type)
    index = pa.array(range(n), pa.int64())
    wrapped = pc.binary_join_element_wise('{"i":', index.cast(pa.string()), ',"s":', lines, "}", "")
    longest = pc.max(pc.binary_length(wrapped)).as_py() or 0
    joined = pc.binary_join(
        pa.LargeListArray.from_arrays(pa.array([0, n], pa.int64()), wrapped.cast(pa.large_string())),
        pa.scalar("\n", pa.large_string()))
    try:
        table = pj.read_json(
            pa.BufferReader(joined[0].as_buffer()),
            read_options=pj.ReadOptions(use_threads=True, block_size=max(1 << 20, 2 * longest + 64)),
            parse_options=pj.ParseOptions(
                explicit_schema=pa.schema([("i", pa.int64()), ("s", struct_type)]),
                unexpected_field_behavior="ignore"))
        if table.num_rows != n or not table.column("i").combine_chunks().equals(index):
            raise ValueError("stats rows are not aligned")
        return table.column("s").combine_chunks().cast(struct_type)
    except (pa.ArrowException, ValueError):
        budget[0] -= 1
        if n == 1 or budget[0] <= 0:
            return pa.nulls(n, struct_type)
        mid = n // 2
        return pa.concat_arrays([_read_json_lines(lines.slice(0, mid), schema, budget),
                                 _read_json_lines(lines.slice(mid), schema, budget)])


def _clean_lines(stats: pa.Array, use: pa.Array | None, scrub_nan: bool) -> pa.Array:
    lines = stats.cast(pa.string()) if stats.type != pa.string() else stats
    if use is not None:
        lines = pc.if_else(use, lines, pa.scalar(None, pa.string()))
    lines = pc.fill_null(lines, "null")
    lines = pc.if_else(pc.equal(pc.binary_length(lines), 0), pa.scalar("null"), lines)
    # JSON needs no line breaks (they are whitespace outside strings and invalid inside)
    if pc.any(pc.match_substring_regex(lines, "[\r\n]")).as_py():
        lines = pc.replace_substring_regex(lines, "[\r\n]", " ")
    if scrub_nan:
        # writers encode non-finite floats as strings; parse them as "unknown"
        lines = pc.replace_substring_regex(lines, r':\s*"(?:NaN|-?Infinity)"', ":null")
    return lines


class _FileFrame(_Frame):
    def __init__(self, files: pa.Table):
        self.files = files
        self.n = files.num_rows
        self._partition_cache: dict[tuple, pa.Array | None] = {}
        self._stats: dict[tuple, _Stats] = {}

    # partition values --------------------------------------------------------------
    def partition_values(self, col: _Col) -> pa.Array | None:
        key = col.physical
        if key not in self._partition_cache:
            self._partition_cache[key] = self._parse_partition(col)
        return self._partition_cache[key]

    def _parse_partition(self, col: _Col) -> pa.Array | None:
        if "partition_values" not in self.files.column_names:
            return None
        struct = self.files.column("partition_values").combine_chunks()
        if not pa.types.is_struct(struct.type):
            return None
        name = col.physical[0]
        idx = struct.type.get_field_index(name)
        if idx < 0:
            matches = [i for i, f in enumerate(struct.type) if f.name.lower() == name.lower()]
            if len(matches) != 1:
                return None
            idx = matches[0]
        raw = pc.struct_field(struct, [idx])
        try:
            return parse_partition_values(raw, col.dtype, column=".".join(col.logical))
        except Exception:
            return None

    # statistics --------------------------------------------------------------------
    def stats(self, col: _Col) -> _Stats | None:
        return self._stats.get(col.physical)

    def load_stats(self, cols: list[_Col], rows: pa.Array | None) -> None:
        """Parses the statistics of ``cols`` (data columns) for the rows where ``rows`` is
        true (all rows if None); the other rows get no statistics."""
        if not cols or self.n == 0:
            return
        by_path: dict[tuple, _Col] = {}
        for c in cols:
            by_path.setdefault(c.physical, c)
        minmax = {p: _json_type(c) for p, c in by_path.items()
                  if c.kind in _MINMAX_KINDS and _json_type(c) is not None}
        fields = [pa.field("numRecords", pa.int64()), pa.field("tightBounds", pa.bool_()),
                  pa.field("nullCount", _nested_struct({p: pa.int64() for p in by_path}))]
        if minmax:
            fields += [pa.field("minValues", _nested_struct(minmax)),
                       pa.field("maxValues", _nested_struct(minmax))]
        schema = pa.schema(fields)
        scrub = any(c.kind in _FLOAT_KINDS for p, c in by_path.items() if p in minmax)

        parsed = None
        if "stats_parsed" in self.files.column_names:
            parsed = self.files.column("stats_parsed").combine_chunks()
            if not pa.types.is_struct(parsed.type):
                parsed = None

        # statistics from the checkpoint's stats_parsed, cast to the types used here
        wanted: list[tuple[tuple, pa.DataType]] = [(("numRecords",), pa.int64()),
                                                    (("tightBounds",), pa.bool_())]
        for path, col in by_path.items():
            wanted.append((("nullCount", *path), pa.int64()))
            if path in minmax:
                wanted.append((("minValues", *path), _stat_type(col)))
                wanted.append((("maxValues", *path), _stat_type(col)))
        from_struct: dict[tuple, pa.Array | None] = {}
        use = rows
        if parsed is not None:
            missing = None
            for key, typ in wanted:
                arr = _cast_or_none(_get_path(parsed, key), typ)
                from_struct[key] = arr
                if key != ("tightBounds",):
                    gap = pc.is_null(arr) if arr is not None else _all(self.n, True)
                    missing = gap if missing is None else pc.or_(missing, gap)
            # JSON is parsed only where stats_parsed lacks something (and the file was not
            # already pruned by its partition values)
            use = _and(use, missing)

        if "stats" in self.files.column_names and (use is None or pc.any(use).as_py()):
            stats_col = self.files.column("stats")
            chunks = []
            for start in range(0, self.n, _JSON_CHUNK_ROWS):
                part = stats_col.slice(start, _JSON_CHUNK_ROWS).combine_chunks()
                sel = use.slice(start, _JSON_CHUNK_ROWS) if use is not None else None
                chunks.append(_read_json_lines(_clean_lines(part, sel, scrub), schema))
            json_stats = pa.concat_arrays(chunks) if len(chunks) > 1 else chunks[0]
        else:
            json_stats = pa.nulls(self.n, pa.struct(list(schema)))

        def get(key: tuple, col: _Col | None = None) -> pa.Array:
            out = _get_path(json_stats, key)
            if col is not None and col.kind == "date":
                out = _lenient_cast(out, pa.date32(), r"^\d{4}-\d{2}-\d{2}$")
            alt = from_struct.get(key)
            return out if alt is None else pc.coalesce(alt, out)

        num_records = get(("numRecords",))
        tight = get(("tightBounds",))
        for path, col in by_path.items():
            null_count = get(("nullCount", *path))
            lo = hi = None
            if path in minmax:
                lo = get(("minValues", *path), col)
                hi = get(("maxValues", *path), col)
            self._stats[path] = _widen(col, _Stats(lo, hi, None, null_count, num_records, tight))


def _cast_or_none(arr: pa.Array | None, typ: pa.DataType) -> pa.Array | None:
    if arr is None:
        return None
    if arr.type == typ:
        return arr
    try:
        if pa.types.is_timestamp(arr.type) and pa.types.is_timestamp(typ):
            return arr.cast(typ, safe=False)  # sub-microsecond digits: inside the widening
        return arr.cast(typ)
    except (pa.ArrowException, ValueError, TypeError):
        return None


def _lenient_cast(arr: pa.Array, typ: pa.DataType, pattern: str) -> pa.Array:
    try:
        return arr.cast(typ)
    except (pa.ArrowException, ValueError):
        pass
    arr = pc.if_else(pc.fill_null(pc.match_substring_regex(arr, pattern), False), arr,
                     pa.scalar(None, arr.type))
    try:
        return arr.cast(typ)
    except (pa.ArrowException, ValueError):
        out = []
        for v in arr.to_pylist():  # only for corrupt stats (e.g. month 13)
            try:
                out.append(None if v is None else pa.scalar(v).cast(typ).as_py())
            except (pa.ArrowException, ValueError):
                out.append(None)
        return pa.array(out, typ)


def _widen(col: _Col, st: _Stats) -> _Stats:
    """Turns the recorded min/max into safe bounds for this column type."""
    lo, hi = st.lo, st.hi
    if lo is None or hi is None:
        return st
    kind = col.kind
    if kind in ("timestamp", "timestamp_ntz"):
        lo = _shift(lo, -1)
        hi = _shift(hi, +1)
    elif kind in _FLOAT_KINDS and col.loose_float:
        lo = pc.subtract(lo, pc.add(pc.multiply(pc.abs(lo), _F32_RELATIVE), _F32_ABSOLUTE))
        hi = pc.add(hi, pc.add(pc.multiply(pc.abs(hi), _F32_RELATIVE), _F32_ABSOLUTE))
    elif kind == "string":
        possibly = pc.or_kleene(pc.greater_equal(pc.utf8_length(hi), STRING_PREFIX_LENGTH),
                                pc.or_kleene(pc.ends_with(hi, _TIE_BREAKERS[0]),
                                             pc.ends_with(hi, _TIE_BREAKERS[1])))
        possibly = pc.fill_null(possibly, False)
        if pc.any(possibly).as_py():
            r = pc.utf8_slice_codeunits(hi, 0, -1)
            # delta-spark truncates in UTF-16 units: a split surrogate pair becomes '?'
            split = pc.and_(pc.fill_null(pc.ends_with(hi, _TIE_BREAKERS[0]), False),
                            pc.fill_null(pc.ends_with(r, "?"), False))
            r = pc.if_else(split, pc.utf8_slice_codeunits(r, 0, -1), r)
            hi = pc.if_else(possibly, r, hi)
            return _Stats(lo, hi, possibly, st.null_count, st.num_records, st.tight)
    return _Stats(lo, hi, st.hi_prefix, st.null_count, st.num_records, st.tight)


def _shift(arr: pa.Array, direction: int) -> pa.Array:
    slack = _TS_MIN_SLACK if direction < 0 else _TS_MAX_SLACK
    op = pc.subtract_checked if direction < 0 else pc.add_checked
    try:
        return op(arr, pa.scalar(slack, pa.duration("us")))
    except pa.ArrowException:
        # values at the edge of the int64 range: treat them as unknown
        limit = pa.scalar(2 ** 62, pa.int64())
        raw = arr.cast(pa.int64())
        ok = pc.less(pc.abs(raw), limit)
        safe = pc.if_else(ok, arr, pa.scalar(None, arr.type))
        return op(safe, pa.scalar(slack, pa.duration("us")))


# --------------------------------------------------------------------------- prune_files
def prune_files(files: pa.Table, predicates: Sequence[Any], *, schema: StructType,
                partition_columns: Sequence[str], column_mapping_mode: str
                ) -> tuple[pa.Table, SkippingReport]:
    """The rows of ``files`` (the snapshot's file table) that may hold a row matching every
    predicate, and a report of what was pruned and why. See the module docstring."""
    total = files.num_rows
    if not predicates or total == 0:
        return files, SkippingReport(total, total, 0, 0)
    resolve = _Resolver(schema, partition_columns, column_mapping_mode)
    tree = _normalize_all(list(predicates), resolve)
    cols = [leaf.col for leaf in _leaves(tree)]

    frame = _FileFrame(files)
    by_partition = _evaluate(tree, frame, use_stats=False)
    data_cols = [c for c in cols if not c.partition]
    if data_cols:
        # stats are parsed only for the files that partition values did not prune
        frame.load_stats(data_cols, by_partition)
        full = _evaluate(tree, frame)
    else:
        full = by_partition
    if full is None:
        return files, SkippingReport(total, total, 0, 0)
    kept = pc.sum(full).as_py() or 0
    part_kept = total if by_partition is None else (pc.sum(by_partition).as_py() or 0)
    report = SkippingReport(total_files=total, files_kept=kept,
                            pruned_by_partition=total - part_kept, pruned_by_stats=part_kept - kept)
    return files.filter(full), report


# ------------------------------------------------------------------- select_row_groups
def _leaf_count(typ: pa.DataType) -> int:
    if pa.types.is_struct(typ):
        return sum(_leaf_count(f.type) for f in typ)
    if pa.types.is_map(typ):
        return _leaf_count(typ.key_type) + _leaf_count(typ.item_type)
    if pa.types.is_list(typ) or pa.types.is_large_list(typ) or pa.types.is_fixed_size_list(typ) \
            or pa.types.is_list_view(typ) or pa.types.is_large_list_view(typ):
        return _leaf_count(typ.value_type)
    return 1


def _leaf_index(arrow_schema: pa.Schema) -> dict[tuple, int]:
    """Physical path of every struct-only leaf -> Parquet column index."""
    out: dict[tuple, int] = {}
    counter = 0

    def walk(field: pa.Field, prefix: tuple) -> None:
        nonlocal counter
        path = prefix + (field.name,)
        if pa.types.is_struct(field.type):
            for f in field.type:
                walk(f, path)
        else:
            n = _leaf_count(field.type)
            if n == 1 and not (pa.types.is_list(field.type) or pa.types.is_large_list(field.type)
                               or pa.types.is_map(field.type)):
                out[path] = counter
            counter += n
    for f in arrow_schema:
        walk(f, ())
    out[("__count__",)] = counter
    return out


def _logical(stats: Any) -> dict:
    try:
        return json.loads(stats.logical_type.to_json())
    except Exception:
        return {}


def _to_micros(raw: Any, unit: str, upper: bool) -> int | None:
    if not isinstance(raw, int) or isinstance(raw, bool):
        return None
    if unit == "milliseconds":
        return raw * 1000
    if unit == "microseconds":
        return raw
    if unit == "nanoseconds":
        return -((-raw) // 1000) + 1 if upper else raw // 1000 - 1
    return None


def _rg_bound(stats: Any, col: _Col, upper: bool) -> Any:
    """One row group's min (upper=False) or max as a Python value of the column's stat type."""
    if stats is None or not stats.has_min_max or stats.physical_type == "INT96":
        return None
    kind = col.kind
    logical = _logical(stats)
    try:
        if kind in ("timestamp", "timestamp_ntz"):
            if logical.get("Type") == "Timestamp":
                raw = stats.max_raw if upper else stats.min_raw
                return _to_micros(raw, logical.get("timeUnit", ""), upper)
            value = stats.max if upper else stats.min
            if isinstance(value, dt.date) and not isinstance(value, dt.datetime):  # widened date
                days = (value - dt.date(1970, 1, 1)).days
                return days * 86_400_000_000
            return None
        value = stats.max if upper else stats.min
        if kind == "int":
            return value if isinstance(value, int) and not isinstance(value, bool) else None
        if kind in _FLOAT_KINDS:
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                return None
            return float(value)
        if kind == "decimal":
            if isinstance(value, bool) or not isinstance(value, (int, decimal.Decimal)):
                return None
            return decimal.Decimal(value)
        if kind == "date":
            return value if isinstance(value, dt.date) and not isinstance(value, dt.datetime) else None
        if kind == "string":
            if isinstance(value, bytes):
                value = value.decode("utf-8")
            return value if isinstance(value, str) else None
    except (UnicodeDecodeError, ValueError, TypeError, AttributeError):
        return None
    return None


def _to_array(values: list, typ: pa.DataType) -> pa.Array:
    if pa.types.is_timestamp(typ):
        return pa.array(values, pa.int64()).cast(typ)
    try:
        return pa.array(values, typ)
    except (pa.ArrowException, ValueError, TypeError, decimal.InvalidOperation):
        out = []
        for v in values:
            try:
                pa.array([v], typ)
                out.append(v)
            except (pa.ArrowException, ValueError, TypeError, decimal.InvalidOperation):
                out.append(None)
        return pa.array(out, typ)


class _RowGroupFrame(_Frame):
    def __init__(self, metadata: Any, cols: list[_Col]):
        self.n = metadata.num_row_groups
        self._stats: dict[tuple, _Stats] = {}
        try:
            index = _leaf_index(metadata.schema.to_arrow_schema())
        except Exception:
            return
        if index.pop(("__count__",)) != metadata.num_columns:
            return
        groups = [metadata.row_group(i) for i in range(self.n)]
        num_records = pa.array([g.num_rows for g in groups], pa.int64())
        tight = _all(self.n, True)
        for col in cols:
            if col.physical in self._stats or col.physical not in index:
                continue
            i = index[col.physical]
            chunk_stats = []
            for g in groups:
                try:
                    chunk_stats.append(g.column(i).statistics)
                except Exception:
                    chunk_stats.append(None)
            null_count = pa.array([s.null_count if s is not None and s.has_null_count else None
                                   for s in chunk_stats], pa.int64())
            lo = hi = None
            typ = _stat_type(col)
            if col.kind in _MINMAX_KINDS and typ is not None:
                lo = _to_array([_rg_bound(s, col, False) for s in chunk_stats], typ)
                hi = _to_array([_rg_bound(s, col, True) for s in chunk_stats], typ)
            # Parquet min/max are exact or true bounds (never prefix-truncated maxima)
            self._stats[col.physical] = _Stats(lo, hi, None, null_count, num_records, tight)

    def stats(self, col: _Col) -> _Stats | None:
        return self._stats.get(col.physical)


def select_row_groups(metadata: Any, predicates: Sequence[Any], *, schema: StructType,
                      column_mapping_mode: str) -> list[int]:
    """Indexes of the row groups of a Parquet file (``pyarrow.parquet.FileMetaData``) that
    may hold a row matching every predicate, from the column-chunk statistics (columns
    found by physical path; INT96 timestamps and chunks without statistics keep the row
    group; float ``>``/``>=``/``!=`` never prune because Parquet min/max exclude NaN)."""
    n = metadata.num_row_groups
    if not predicates or n == 0:
        return list(range(n))
    resolve = _Resolver(schema, (), column_mapping_mode)
    tree = _normalize_all(list(predicates), resolve)
    cols = [leaf.col for leaf in _leaves(tree)]
    frame = _RowGroupFrame(metadata, cols)
    keep = _evaluate(tree, frame)
    if keep is None:
        return list(range(n))
    return [i for i, k in enumerate(keep.to_pylist()) if k]
