"""Data skipping: drop the files (and Parquet row groups) that provably hold no row
matching a conjunction of :mod:`delta_pyds.expressions.predicates`.

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

Layout: the normal form, per-leaf rules and evaluator are in
:mod:`delta_pyds.skipping.rules`; this module parses file statistics and prunes files;
:mod:`delta_pyds.skipping.row_groups` prunes row groups (re-exported here).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj

from delta_pyds.protocol.partition_values import parse_partition_values
from delta_pyds.protocol.schema import StructType
from delta_pyds.skipping.rules import (
    F32_ABSOLUTE,
    F32_RELATIVE,
    FLOAT_KINDS,
    JSON_CHUNK_ROWS,
    JSON_RETRY_BUDGET,
    MINMAX_KINDS,
    STRING_PREFIX_LENGTH,
    TIE_BREAKERS,
    TS_MAX_SLACK,
    TS_MIN_SLACK,
    ColumnRef,
    ColumnStats,
    Frame,
    Resolver,
    SkippingReport,
    and_masks,
    constant_mask,
    evaluate,
    json_type,
    leaves,
    normalize_all,
    stat_type,
)

__all__ = ["SkippingReport", "needs_statistics", "prune_files", "select_row_groups"]


# ------------------------------------------------------------------ JSON stats parsing
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
        budget = [JSON_RETRY_BUDGET]
    n = len(lines)
    struct_type = pa.struct(list(schema))
    if n == 0:
        return pa.array([], struct_type)
    index = pa.array(range(n), pa.int64())
    wrapped = pc.binary_join_element_wise('{"i":', index.cast(pa.string()), ',"s":', lines, "}", "")
    longest = pc.max(pc.binary_length(wrapped)).as_py() or 0
    joined = pc.binary_join(
        pa.LargeListArray.from_arrays(pa.array([0, n], pa.int64()), wrapped.cast(pa.large_string())),
        pa.scalar("\n", pa.large_string()),
    )
    try:
        table = pj.read_json(
            pa.BufferReader(joined[0].as_buffer()),
            read_options=pj.ReadOptions(use_threads=True, block_size=max(1 << 20, 2 * longest + 64)),
            parse_options=pj.ParseOptions(
                explicit_schema=pa.schema([("i", pa.int64()), ("s", struct_type)]), unexpected_field_behavior="ignore"
            ),
        )
        if table.num_rows != n or not table.column("i").combine_chunks().equals(index):
            raise ValueError("stats rows are not aligned")
        return table.column("s").combine_chunks().cast(struct_type)
    except (pa.ArrowException, ValueError):
        budget[0] -= 1
        if n == 1 or budget[0] <= 0:
            return pa.nulls(n, struct_type)
        mid = n // 2
        return pa.concat_arrays(
            [_read_json_lines(lines.slice(0, mid), schema, budget), _read_json_lines(lines.slice(mid), schema, budget)]
        )


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


class _FileFrame(Frame):
    def __init__(self, files: pa.Table):
        self.files = files
        self.n = files.num_rows
        self._partition_cache: dict[tuple, pa.Array | None] = {}
        self._stats: dict[tuple, ColumnStats] = {}

    # partition values --------------------------------------------------------------
    def partition_values(self, col: ColumnRef) -> pa.Array | None:
        key = col.physical
        if key not in self._partition_cache:
            self._partition_cache[key] = self._parse_partition(col)
        return self._partition_cache[key]

    def _parse_partition(self, col: ColumnRef) -> pa.Array | None:
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
    def stats(self, col: ColumnRef) -> ColumnStats | None:
        return self._stats.get(col.physical)

    def load_stats(self, cols: list[ColumnRef], rows: pa.Array | None) -> None:
        """Parses the statistics of ``cols`` (data columns) for the rows where ``rows`` is
        true (all rows if None); the other rows get no statistics."""
        if not cols or self.n == 0:
            return
        by_path: dict[tuple, ColumnRef] = {}
        for c in cols:
            by_path.setdefault(c.physical, c)
        minmax = {p: json_type(c) for p, c in by_path.items() if c.kind in MINMAX_KINDS and json_type(c) is not None}
        fields = [
            pa.field("numRecords", pa.int64()),
            pa.field("tightBounds", pa.bool_()),
            pa.field("nullCount", _nested_struct({p: pa.int64() for p in by_path})),
        ]
        if minmax:
            fields += [pa.field("minValues", _nested_struct(minmax)), pa.field("maxValues", _nested_struct(minmax))]
        schema = pa.schema(fields)
        scrub = any(c.kind in FLOAT_KINDS for p, c in by_path.items() if p in minmax)

        from_struct, missing = self._checkpoint_stats(by_path, minmax)
        # JSON is parsed only where stats_parsed lacks something (and the file was not
        # already pruned by its partition values)
        json_stats = self._json_stats(and_masks(rows, missing), schema, scrub)

        def get(key: tuple, col: ColumnRef | None = None) -> pa.Array:
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
            self._stats[path] = _widen(col, ColumnStats(lo, hi, None, null_count, num_records, tight))

    def _checkpoint_stats(
        self, by_path: dict[tuple, ColumnRef], minmax: dict[tuple, pa.DataType]
    ) -> tuple[dict[tuple, pa.Array | None], pa.Array | None]:
        """The statistics in the checkpoint's ``stats_parsed``, cast to the types used here,
        by stats path, and the rows where any of them (but ``tightBounds``) is missing (None
        when there is no ``stats_parsed``: every row needs its JSON)."""
        if "stats_parsed" not in self.files.column_names:
            return {}, None
        parsed = self.files.column("stats_parsed").combine_chunks()
        if not pa.types.is_struct(parsed.type):
            return {}, None
        wanted: list[tuple[tuple, pa.DataType]] = [(("numRecords",), pa.int64()), (("tightBounds",), pa.bool_())]
        for path, col in by_path.items():
            wanted.append((("nullCount", *path), pa.int64()))
            if path in minmax:
                wanted.append((("minValues", *path), stat_type(col)))
                wanted.append((("maxValues", *path), stat_type(col)))
        from_struct: dict[tuple, pa.Array | None] = {}
        missing = None
        for key, typ in wanted:
            arr = _cast_or_none(_get_path(parsed, key), typ)
            from_struct[key] = arr
            if key != ("tightBounds",):
                gap = pc.is_null(arr) if arr is not None else constant_mask(self.n, True)
                missing = gap if missing is None else pc.or_(missing, gap)
        return from_struct, missing

    def _json_stats(self, use: pa.Array | None, schema: pa.Schema, scrub: bool) -> pa.Array:
        """The JSON ``stats`` parsed to ``schema`` for the rows where ``use`` is true (all
        if None), in chunks of :data:`JSON_CHUNK_ROWS`; nulls where there is none."""
        if "stats" not in self.files.column_names or (use is not None and not pc.any(use).as_py()):
            return pa.nulls(self.n, pa.struct(list(schema)))
        stats_col = self.files.column("stats")
        chunks = []
        for start in range(0, self.n, JSON_CHUNK_ROWS):
            part = stats_col.slice(start, JSON_CHUNK_ROWS).combine_chunks()
            sel = use.slice(start, JSON_CHUNK_ROWS) if use is not None else None
            chunks.append(_read_json_lines(_clean_lines(part, sel, scrub), schema))
        return pa.concat_arrays(chunks) if len(chunks) > 1 else chunks[0]


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
    arr = pc.if_else(pc.fill_null(pc.match_substring_regex(arr, pattern), False), arr, pa.scalar(None, arr.type))
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


def _widen(col: ColumnRef, st: ColumnStats) -> ColumnStats:
    """Turns the recorded min/max into safe bounds for this column type."""
    lo, hi = st.lo, st.hi
    if lo is None or hi is None:
        return st
    kind = col.kind
    if kind in ("timestamp", "timestamp_ntz"):
        lo = _shift(lo, -1)
        hi = _shift(hi, +1)
    elif kind in FLOAT_KINDS and col.loose_float:
        lo = pc.subtract(lo, pc.add(pc.multiply(pc.abs(lo), F32_RELATIVE), F32_ABSOLUTE))
        hi = pc.add(hi, pc.add(pc.multiply(pc.abs(hi), F32_RELATIVE), F32_ABSOLUTE))
    elif kind == "string":
        possibly = pc.or_kleene(
            pc.greater_equal(pc.utf8_length(hi), STRING_PREFIX_LENGTH),
            pc.or_kleene(pc.ends_with(hi, TIE_BREAKERS[0]), pc.ends_with(hi, TIE_BREAKERS[1])),
        )
        possibly = pc.fill_null(possibly, False)
        if pc.any(possibly).as_py():
            r = pc.utf8_slice_codeunits(hi, 0, -1)
            # delta-spark truncates in UTF-16 units: a split surrogate pair becomes '?'
            split = pc.and_(
                pc.fill_null(pc.ends_with(hi, TIE_BREAKERS[0]), False), pc.fill_null(pc.ends_with(r, "?"), False)
            )
            r = pc.if_else(split, pc.utf8_slice_codeunits(r, 0, -1), r)
            hi = pc.if_else(possibly, r, hi)
            return ColumnStats(lo, hi, possibly, st.null_count, st.num_records, st.tight)
    return ColumnStats(lo, hi, st.hi_prefix, st.null_count, st.num_records, st.tight)


def _shift(arr: pa.Array, direction: int) -> pa.Array:
    slack = TS_MIN_SLACK if direction < 0 else TS_MAX_SLACK
    op = pc.subtract_checked if direction < 0 else pc.add_checked
    try:
        return op(arr, pa.scalar(slack, pa.duration("us")))
    except pa.ArrowException:
        # values at the edge of the int64 range: treat them as unknown
        limit = pa.scalar(2**62, pa.int64())
        raw = arr.cast(pa.int64())
        ok = pc.less(pc.abs(raw), limit)
        safe = pc.if_else(ok, arr, pa.scalar(None, arr.type))
        return op(safe, pa.scalar(slack, pa.duration("us")))


# --------------------------------------------------------------------------- prune_files
def needs_statistics(
    predicates: Sequence[Any], *, schema: StructType, partition_columns: Sequence[str], column_mapping_mode: str
) -> bool:
    """Whether :func:`prune_files` would read file statistics for ``predicates`` (some
    predicate names a data column); without, a file table with no statistics prunes the same."""
    if not predicates:
        return False
    resolve = Resolver(schema, partition_columns, column_mapping_mode)
    tree = normalize_all(list(predicates), resolve)
    return any(not leaf.col.partition for leaf in leaves(tree))


def prune_files(
    files: pa.Table,
    predicates: Sequence[Any],
    *,
    schema: StructType,
    partition_columns: Sequence[str],
    column_mapping_mode: str,
) -> tuple[pa.Table, SkippingReport]:
    """The rows of ``files`` (the snapshot's file table) that may hold a row matching every
    predicate, and a report of what was pruned and why. See the module docstring."""
    total = files.num_rows
    if not predicates or total == 0:
        return files, SkippingReport(total, total, 0, 0)
    resolve = Resolver(schema, partition_columns, column_mapping_mode)
    tree = normalize_all(list(predicates), resolve)
    cols = [leaf.col for leaf in leaves(tree)]

    frame = _FileFrame(files)
    by_partition = evaluate(tree, frame, use_stats=False)
    data_cols = [c for c in cols if not c.partition]
    if data_cols:
        # stats are parsed only for the files that partition values did not prune
        frame.load_stats(data_cols, by_partition)
        full = evaluate(tree, frame)
    else:
        full = by_partition
    if full is None:
        return files, SkippingReport(total, total, 0, 0)
    kept = pc.sum(full).as_py() or 0
    part_kept = total if by_partition is None else (pc.sum(by_partition).as_py() or 0)
    report = SkippingReport(
        total_files=total, files_kept=kept, pruned_by_partition=total - part_kept, pruned_by_stats=part_kept - kept
    )
    return files.filter(full), report


from delta_pyds.skipping.row_groups import select_row_groups  # noqa: E402  (re-exported)
