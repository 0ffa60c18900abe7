"""Row-group skipping: the Parquet row groups of one file that may hold a matching row,
judged on the column-chunk statistics of its footer with the rules of
:mod:`delta_pyds.skipping.files` (exact bounds, no widening except nanosecond timestamps
rounded outwards to microseconds; INT96 columns and chunks without statistics keep the
row group)."""

from __future__ import annotations

import datetime as dt
import decimal
import json
from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from delta_pyds.protocol.schema import StructType
from delta_pyds.skipping.rules import (
    FLOAT_KINDS,
    MINMAX_KINDS,
    ColumnRef,
    ColumnStats,
    Frame,
    Resolver,
    constant_mask,
    evaluate,
    leaves,
    normalize_all,
    stat_type,
)


# ------------------------------------------------------------------- select_row_groups
def _leaf_count(typ: pa.DataType) -> int:
    if pa.types.is_struct(typ):
        return sum(_leaf_count(f.type) for f in typ)
    if pa.types.is_map(typ):
        return _leaf_count(typ.key_type) + _leaf_count(typ.item_type)
    if (
        pa.types.is_list(typ)
        or pa.types.is_large_list(typ)
        or pa.types.is_fixed_size_list(typ)
        or pa.types.is_list_view(typ)
        or pa.types.is_large_list_view(typ)
    ):
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
            if n == 1 and not (
                pa.types.is_list(field.type) or pa.types.is_large_list(field.type) or pa.types.is_map(field.type)
            ):
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


def _rg_bound(stats: Any, col: ColumnRef, upper: bool) -> Any:
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
        if kind in FLOAT_KINDS:
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


class _RowGroupFrame(Frame):
    def __init__(self, metadata: Any, cols: list[ColumnRef]):
        self.n = metadata.num_row_groups
        self._stats: dict[tuple, ColumnStats] = {}
        try:
            index = _leaf_index(metadata.schema.to_arrow_schema())
        except Exception:
            return
        if index.pop(("__count__",)) != metadata.num_columns:
            return
        groups = [metadata.row_group(i) for i in range(self.n)]
        num_records = pa.array([g.num_rows for g in groups], pa.int64())
        tight = constant_mask(self.n, True)
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
            null_count = pa.array(
                [s.null_count if s is not None and s.has_null_count else None for s in chunk_stats], pa.int64()
            )
            lo = hi = None
            typ = stat_type(col)
            if col.kind in MINMAX_KINDS and typ is not None:
                lo = _to_array([_rg_bound(s, col, False) for s in chunk_stats], typ)
                hi = _to_array([_rg_bound(s, col, True) for s in chunk_stats], typ)
            # Parquet min/max are exact or true bounds (never prefix-truncated maxima)
            self._stats[col.physical] = ColumnStats(lo, hi, None, null_count, num_records, tight)

    def stats(self, col: ColumnRef) -> ColumnStats | None:
        return self._stats.get(col.physical)


def select_row_groups(
    metadata: Any, predicates: Sequence[Any], *, schema: StructType, column_mapping_mode: str
) -> list[int]:
    """Indexes of the row groups of a Parquet file (``pyarrow.parquet.FileMetaData``) that
    may hold a row matching every predicate, from the column-chunk statistics (columns
    found by physical path; INT96 timestamps and chunks without statistics keep the row
    group; float ``>``/``>=``/``!=`` never prune because Parquet min/max exclude NaN)."""
    n = metadata.num_row_groups
    if not predicates or n == 0:
        return list(range(n))
    resolve = Resolver(schema, (), column_mapping_mode)
    tree = normalize_all(list(predicates), resolve)
    cols = [leaf.col for leaf in leaves(tree)]
    frame = _RowGroupFrame(metadata, cols)
    keep = evaluate(tree, frame)
    if keep is None:
        return list(range(n))
    return [i for i, k in enumerate(keep.to_pylist()) if k]
