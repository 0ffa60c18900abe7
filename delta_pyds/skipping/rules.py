"""The evaluation core of data skipping (see :mod:`delta_pyds.skipping.files` for the rules
and guarantees): predicates in negation normal form over resolved columns, the
conservative per-leaf rules on partition values and min/max/null-count statistics, and
the vectorised evaluator over a frame of per-file (or per-row-group) values. Shared by
file pruning (:mod:`delta_pyds.skipping.files`) and row-group pruning
(:mod:`delta_pyds.skipping.row_groups`)."""

from __future__ import annotations

import datetime as dt
import decimal
import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, cast

import pyarrow as pa
import pyarrow.compute as pc

from delta_pyds.expressions import predicates as P
from delta_pyds.protocol.char_varchar import CHAR_VARCHAR_KEY
from delta_pyds.protocol.schema import DataType, DecimalType, PrimitiveType, StructField, StructType

STRING_PREFIX_LENGTH = 32
TIE_BREAKERS = ("\ufffd", "\U0010ffff")
TS_MIN_SLACK = dt.timedelta(seconds=59)
TS_MAX_SLACK = dt.timedelta(seconds=59, milliseconds=1)
F32_RELATIVE = 2.0**-22
F32_ABSOLUTE = 1e-44
_IN_LIST_EXACT = 16
JSON_CHUNK_ROWS = 65536
JSON_RETRY_BUDGET = 256  # extra JSON reads per chunk when some stats do not parse
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1

_NEGATE = {"eq": "ne", "ne": "eq", "lt": "ge", "ge": "lt", "le": "gt", "gt": "le"}
_CMP_OPS = {P.EqualTo: "eq", P.LessThan: "lt", P.LessThanOrEqual: "le", P.GreaterThan: "gt", P.GreaterThanOrEqual: "ge"}
_ARROW_CMP = {
    "eq": pc.equal,
    "ne": pc.not_equal,
    "lt": pc.less,
    "le": pc.less_equal,
    "gt": pc.greater,
    "ge": pc.greater_equal,
}
MINMAX_KINDS = {"int", "float32", "float64", "decimal", "date", "timestamp", "timestamp_ntz", "string"}
FLOAT_KINDS = {"float32", "float64"}


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
        return (
            f"data skipping kept {self.files_kept} of {self.total_files} files "
            f"(pruned {self.pruned_by_partition} by partition values, "
            f"{self.pruned_by_stats} by statistics)"
        )


# ------------------------------------------------------------------------------ columns
@dataclass(frozen=True)
class ColumnRef:
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


def _collated(field: StructField) -> bool:
    """A string column with a non-binary collation, or a declared CHAR(n) column: its
    comparisons (case-insensitive; Spark pads CHAR values and the literals compared with
    them) do not follow the binary order of its partition values and min/max stats, so it is
    never used for skipping."""
    if str((field.metadata or {}).get(CHAR_VARCHAR_KEY, "")).lower().startswith("char"):
        return True
    collations = (field.metadata or {}).get("__COLLATIONS")
    if not isinstance(collations, dict):
        return bool(collations)
    return any(not str(v).upper().endswith("UTF8_BINARY") for v in collations.values())


class Resolver:
    def __init__(self, schema: StructType, partition_columns: Sequence[str], mode: str):
        self.schema = schema
        self.mode = mode or "none"
        self.partitions = {c.lower() for c in partition_columns}
        self._cache: dict[tuple, ColumnRef | None] = {}

    def __call__(self, path: tuple) -> ColumnRef | None:
        if path not in self._cache:
            self._cache[path] = self._resolve(path)
        return self._cache[path]

    def _resolve(self, path: tuple) -> ColumnRef | None:
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
        leaf = cast(StructField, field)  # paths are never empty: the loop set it
        if kind == "struct" or _collated(leaf):
            return None
        partition = len(path) == 1 and logical[0].lower() in self.partitions
        loose = kind == "float32" or (kind == "float64" and bool(leaf.metadata.get("delta.typeChanges")))
        return ColumnRef(tuple(logical), tuple(physical), current, kind, partition, loose)


# ----------------------------------------------------------------------------- literals
_BAD = object()


def _literal(value: Any, col: ColumnRef) -> Any:
    """A Python literal -> (arrow scalar, comparable python value), or _BAD if it does not
    fit the column type (then the leaf keeps every file): the converter of the column's kind
    in :data:`_LITERALS`, _BAD for a kind without one or a conversion that fails."""
    convert = _LITERALS.get(col.kind)
    if convert is None:
        return _BAD
    try:
        return convert(value)
    except (pa.ArrowException, ValueError, TypeError, OverflowError, decimal.InvalidOperation):
        return _BAD


def _int_literal(value: Any) -> Any:
    """An int64, or a float / decimal with an integral value (not a bool)."""
    if isinstance(value, bool):
        return _BAD
    if isinstance(value, (float, decimal.Decimal)):
        if not math.isfinite(value) or value != int(value):
            return _BAD
        value = int(value)
    if isinstance(value, int) and _INT64_MIN <= value <= _INT64_MAX:
        return pa.scalar(value, pa.int64()), value
    return _BAD


def _float_literal(value: Any) -> Any:
    """Any number but a bool, as a double."""
    if isinstance(value, bool) or not isinstance(value, (int, float, decimal.Decimal)):
        return _BAD
    value = float(value)
    return pa.scalar(value, pa.float64()), value


def _decimal_literal(value: Any) -> Any:
    """A finite decimal or an int that fits decimal128."""
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


def _string_literal(value: Any) -> Any:
    return (pa.scalar(value, pa.string()), value) if isinstance(value, str) else _BAD


def _date_literal(value: Any) -> Any:
    """A date (not a datetime)."""
    if isinstance(value, dt.datetime) or not isinstance(value, dt.date):
        return _BAD
    return pa.scalar(value, pa.date32()), value


def _timestamp_literal(value: Any) -> Any:
    """An aware datetime, compared in UTC."""
    if not isinstance(value, dt.datetime) or value.tzinfo is None:
        return _BAD
    value = value.astimezone(dt.timezone.utc)
    return pa.scalar(value, pa.timestamp("us", tz="UTC")), value


def _timestamp_ntz_literal(value: Any) -> Any:
    """A naive datetime."""
    if not isinstance(value, dt.datetime) or value.tzinfo is not None:
        return _BAD
    return pa.scalar(value, pa.timestamp("us")), value


def _boolean_literal(value: Any) -> Any:
    return (pa.scalar(value, pa.bool_()), value) if isinstance(value, bool) else _BAD


def _binary_literal(value: Any) -> Any:
    """bytes, bytearray or memoryview, as bytes."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        value = bytes(value)
        return pa.scalar(value, pa.binary()), value
    return _BAD


# column kind -> the converter of a literal compared with such a column
_LITERALS: dict[str, Callable[[Any], Any]] = {
    "int": _int_literal,
    "float32": _float_literal,
    "float64": _float_literal,
    "decimal": _decimal_literal,
    "string": _string_literal,
    "date": _date_literal,
    "timestamp": _timestamp_literal,
    "timestamp_ntz": _timestamp_ntz_literal,
    "boolean": _boolean_literal,
    "binary": _binary_literal,
}


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
    col: ColumnRef
    op: str  # eq ne lt le gt ge in notin isnull notnull startswith
    scalars: tuple = ()
    values: tuple = ()


_KEEP = _Const(True)
_NONE = _Const(False)


def _junction(op: str, children: list[Any]) -> Any:
    out: list[Any] = []
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


def _normalize(pred: Any, negate: bool, resolve: Resolver) -> Any:
    """``pred`` (negated when ``negate``) in negation normal form: NOT pushed into the leaves,
    AND / OR flattened, each leaf a :class:`_Leaf` on a resolved column (:func:`_leaf`) or a
    constant; an unknown predicate or column keeps every file."""
    if isinstance(pred, P.Not):
        return _normalize(pred.child, not negate, resolve)
    if isinstance(pred, (P.And, P.Or)):
        junction = "and" if isinstance(pred, P.And) != negate else "or"
        return _junction(junction, [_normalize(pred.left, negate, resolve), _normalize(pred.right, negate, resolve)])
    column = getattr(pred, "column", None)
    if not isinstance(column, tuple):
        return _KEEP  # unknown predicate type
    col = resolve(column)
    if col is None:
        return _KEEP
    return _leaf(pred, col, negate, resolve)


def _leaf(pred: Any, col: ColumnRef, negate: bool, resolve: Resolver) -> Any:
    """A predicate on the resolved column ``col`` (negated when ``negate``) as a leaf or a
    constant (_KEEP when its literals do not fit the column)."""
    if isinstance(pred, (P.IsNull, P.IsNotNull)):
        is_null = isinstance(pred, P.IsNull) != negate
        return _Leaf(col, "isnull" if is_null else "notnull")
    if isinstance(pred, P.EqualNullSafe):
        return _null_safe_leaf(pred, negate, resolve)
    op = _CMP_OPS.get(type(pred))
    if op is not None:
        if pred.value is None:
            return _NONE  # `a < NULL` and its negation are NULL: never TRUE
        lit = _literal(pred.value, col)
        if lit is _BAD:
            return _KEEP
        return _Leaf(col, _NEGATE[op] if negate else op, (lit[0],), (lit[1],))
    if isinstance(pred, P.In):
        return _in_leaf(pred, col, negate)
    if isinstance(pred, P.StartsWith):
        if negate or col.kind != "string" or not isinstance(pred.prefix, str):
            return _KEEP
        return _Leaf(col, "startswith", (pa.scalar(pred.prefix, pa.string()),), (pred.prefix,))
    return _KEEP


def _null_safe_leaf(pred: Any, negate: bool, resolve: Resolver) -> Any:
    """``a <=> v``: ``a IS NULL`` for a null ``v``, else ``a = v``; negated, ``a IS NULL OR NOT a = v``."""
    column = pred.column
    if pred.value is None:
        return _normalize(P.IsNull(column), negate, resolve)
    if not negate:
        return _normalize(P.EqualTo(column, pred.value), False, resolve)
    return _junction(
        "or",
        [_normalize(P.IsNull(column), False, resolve), _normalize(P.EqualTo(column, pred.value), True, resolve)],
    )


def _in_leaf(pred: Any, col: ColumnRef, negate: bool) -> Any:
    """``a IN (values)`` (``notin`` negated) over its non-null values."""
    values = [v for v in pred.values if v is not None]
    if not values:
        # `a IN ()` / `a IN (NULL)` is never TRUE; NOT of it is TRUE for every row
        return _KEEP if negate else _NONE
    lits = [_literal(v, col) for v in values]
    if any(lit is _BAD for lit in lits):
        return _KEEP
    return _Leaf(col, "notin" if negate else "in", tuple(s for s, _ in lits), tuple(v for _, v in lits))


def normalize_all(predicates: Sequence[Any], resolve: Resolver) -> Any:
    return _junction("and", [_normalize(p, False, resolve) for p in predicates])


def leaves(node: Any) -> Iterator[Any]:
    if isinstance(node, _Junction):
        for c in node.children:
            yield from leaves(c)
    elif isinstance(node, _Leaf):
        yield node


# --------------------------------------------------------------------------- helpers
def constant_mask(n: int, value: bool) -> pa.BooleanArray:
    return pc.fill_null(pa.nulls(n, pa.bool_()), value)


def and_masks(a: pa.Array | None, b: pa.Array | None) -> pa.Array | None:
    if a is None:
        return b
    if b is None:
        return a
    return pc.and_(a, b)


def _or(a: pa.Array | None, b: pa.Array | None) -> pa.Array | None:
    if a is None or b is None:
        return None
    return pc.or_(a, b)


def _k_or(*xs: pa.Array | None) -> pa.Array | None:
    out = None
    for x in xs:
        if x is None:
            continue
        out = x if out is None else pc.or_kleene(out, x)
    return out


def _k_and(*xs: pa.Array | None) -> pa.Array | None:
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
class ColumnStats:
    """Bounds and counts of one column over n units (files or row groups); arrays may hold
    nulls (unknown). ``hi_prefix`` marks rows whose ``hi`` is a prefix R of the true max
    (truncated string stats): every value v then has v[:len(R)] <= R."""

    lo: pa.Array | None
    hi: pa.Array | None
    hi_prefix: pa.Array | None
    null_count: pa.Array | None
    num_records: pa.Array | None
    tight: pa.Array | None


def _all_lt(st: ColumnStats, v: pa.Scalar, raw: Any) -> pa.Array:
    """TRUE where every value of the column is < v (nulls: unknown)."""
    normal = pc.less(st.hi, v)
    return _with_prefix_rule(st, normal, v, raw)


def _all_le(st: ColumnStats, v: pa.Scalar, raw: Any) -> pa.Array:
    normal = pc.less_equal(st.hi, v)
    return _with_prefix_rule(st, normal, v, raw)


def _with_prefix_rule(st: ColumnStats, normal: pa.Array, v: pa.Scalar, raw: Any) -> pa.Array:
    if st.hi_prefix is None or not isinstance(raw, str):
        return normal
    # every value v' has v'[:len(R)] <= R, so v' < v when v[:len(R)] > R
    beyond = pc.and_kleene(pc.greater(v, st.hi), pc.invert(pc.is_in(st.hi, value_set=_prefixes(raw))))
    return pc.if_else(st.hi_prefix, beyond, normal)


def _range_prune(leaf: _Leaf, st: ColumnStats) -> pa.Array | None:
    """TRUE where min/max prove the leaf false for every non-null value (None: no such proof):
    comparisons and ``startswith`` by :func:`_compare_prune`, ``in`` by :func:`_in_prune`,
    ``notin`` by :func:`_notin_prune`; nothing for a float leaf with a NaN literal."""
    op, kind = leaf.op, leaf.col.kind
    if st.lo is None or st.hi is None:
        return None
    is_float = kind in FLOAT_KINDS
    if is_float and any(_is_nan(v) for v in leaf.values):
        return None
    if op in _COMPARE_PRUNE_OPS:
        return _compare_prune(op, leaf, st, is_float)
    if op == "in":
        return _in_prune(leaf, st)
    if op == "notin":
        return None if is_float else _notin_prune(leaf, st)
    return None


_COMPARE_PRUNE_OPS = frozenset(("eq", "lt", "le", "gt", "ge", "ne", "startswith"))


def _compare_prune(op: str, leaf: _Leaf, st: ColumnStats, is_float: bool) -> pa.Array | None:
    """TRUE where min/max prove ``column op literal`` false (``op``: a comparison or
    ``startswith``); for a float column only ``eq lt le`` (NaN may be present without being in
    the stats)."""
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


def _in_prune(leaf: _Leaf, st: ColumnStats) -> pa.Array | None:
    """TRUE where min/max prove no value is in the list: each item checked for short lists,
    the list's range for long ones."""
    pairs = list(zip(leaf.scalars, leaf.values))
    if len(pairs) <= _IN_LIST_EXACT:
        return _k_and(*[_k_or(pc.greater(st.lo, s), _all_lt(st, s, r)) for s, r in pairs])
    lo_s, lo_r = min(pairs, key=lambda p: p[1])
    hi_s, _ = max(pairs, key=lambda p: p[1])
    return _k_or(pc.greater(st.lo, hi_s), _all_lt(st, lo_s, lo_r))


def _notin_prune(leaf: _Leaf, st: ColumnStats) -> pa.Array | None:
    """TRUE where min = max (exact, not a truncated prefix) and that one value is in the list."""
    lo = cast(pa.Array, st.lo)  # not None: _range_prune checked
    same = pc.equal(lo, st.hi)
    if st.hi_prefix is not None:
        same = pc.and_kleene(same, pc.invert(st.hi_prefix))
    return pc.and_kleene(same, _members(lo, leaf))


def _members(values: pa.Array, leaf: _Leaf) -> pa.Array | None:
    """Whether each of ``values`` is one of the leaf's list items (null where it is null): one
    ``is_in`` for long lists, else an OR of equalities (also when the items do not convert to
    the values' type)."""
    if len(leaf.values) > _IN_LIST_EXACT:
        try:
            return pc.is_in(values, value_set=pa.array(list(leaf.values), values.type))
        except (pa.ArrowException, TypeError, ValueError):
            pass
    return _k_or(*[pc.equal(values, s) for s in leaf.scalars])


def _stats_keep(leaf: _Leaf, st: ColumnStats) -> pa.Array | None:
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
        ranged = _range_prune(leaf, st) if leaf.col.kind in MINMAX_KINDS else None
        prune = _k_or(empty, all_null, ranged)
    if prune is None:
        return None
    return pc.invert(pc.fill_null(prune, False))


def _partition_keep(leaf: _Leaf, values: pa.Array) -> pa.Array | None:
    op, kind = leaf.op, leaf.col.kind
    if kind in FLOAT_KINDS and any(_is_nan(v) for v in leaf.values):
        return None
    try:
        if op == "isnull":
            return pc.is_null(values)
        if op == "notnull":
            return pc.is_valid(values)
        if op in _ARROW_CMP:
            mask = _ARROW_CMP[op](values, leaf.scalars[0])
        elif op == "in":
            mask = _members(values, leaf)
        elif op == "notin":
            mask = _k_and(*[pc.not_equal(values, s) for s in leaf.scalars])
        elif op == "startswith":
            mask = pc.starts_with(values, pattern=leaf.values[0])
        else:
            return None
        mask = pc.fill_null(mask, False)
        if kind in FLOAT_KINDS:  # Spark: NaN = NaN and NaN > everything
            mask = pc.or_(mask, pc.fill_null(pc.is_nan(values), False))
        return mask
    except (pa.ArrowException, TypeError, ValueError):
        return None


# --------------------------------------------------------------------------- evaluator
class Frame:
    """The facts about n units that leaves are evaluated on."""

    n: int

    def partition_values(self, col: ColumnRef) -> pa.Array | None:
        return None

    def stats(self, col: ColumnRef) -> ColumnStats | None:
        return None


def evaluate(node: Any, frame: Frame, *, use_partitions: bool = True, use_stats: bool = True) -> pa.Array | None:
    """Keep mask (BooleanArray without nulls) or None for 'keep all'."""
    if isinstance(node, _Const):
        return None if node.keep else constant_mask(frame.n, False)
    if isinstance(node, _Junction):
        results = [evaluate(c, frame, use_partitions=use_partitions, use_stats=use_stats) for c in node.children]
        out = results[0]
        for r in results[1:]:
            out = and_masks(out, r) if node.op == "and" else _or(out, r)
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


# ------------------------------------------------------------------------ stat types
def json_type(col: ColumnRef) -> pa.DataType | None:
    kind = col.kind
    if kind == "int":
        return pa.int64()
    if kind in FLOAT_KINDS:
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


def stat_type(col: ColumnRef) -> pa.DataType | None:
    if col.kind == "date":
        return pa.date32()
    return json_type(col)
