"""MERGE's target file pruning: a condition over the target's columns that every target row
able to match a source row satisfies, derived from the merge condition and the source's
join-key ranges (as delta-rs's merge ``generalize_filter`` / ``try_construct_early_filter``).

:func:`target_filter` reads a merge condition given as SQL text. Of its top-level ``AND``
conjuncts it keeps:

* ``t.a = s.b`` (either side first; ``t`` the target alias, ``s`` any other qualifier
  naming a source column): ``a`` between the source's smallest and largest ``b``, or
  ``a IN (...)`` when the source holds at most :data:`MAX_KEY_SET` distinct keys (one
  Spark job without a shuffle for every key: :func:`source_keys`); a source whose keys
  are all null matches nothing (``FALSE``);
* ``t.a <op> literal`` (``=, <, <=, >, >=, <>``): as written, without the alias.

Every other conjunct is dropped, which only widens the filter, and a condition with ``OR``
or parentheses at the top level gives no filter. The filter feeds the same conservative
file skipping as DELETE (partition values and statistics), so pruning can only drop files
that cannot hold a matching row. Callers must not prune when a ``whenNotMatchedBySource``
clause needs every target row.
"""

from __future__ import annotations

import datetime as dt
import decimal
import re
from collections.abc import Callable, Iterator
from typing import Any

MAX_KEY_SET = 64
_IDENT = r"`(?:[^`]|``)+`|[A-Za-z_][A-Za-z0-9_]*"
_QUALIFIED = re.compile(rf"^\s*({_IDENT})\s*\.\s*({_IDENT})\s*$")
_COMPARISON = re.compile(r"^(.*?)(<=|>=|<>|!=|=|<|>)(.*)$", re.DOTALL)
_LITERAL = re.compile(r"^\s*(-?\d+(\.\d+)?([eE][-+]?\d+)?|'(?:[^'\\]|\\.)*'|(?:DATE|TIMESTAMP)\s*'[^']*')\s*$", re.I)


def _unquote(name: str) -> str:
    return name[1:-1].replace("``", "`") if name.startswith("`") else name


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _conjuncts(text: str) -> list[str] | None:
    """The top-level ``AND`` conjuncts, or None when the condition is not a plain chain."""
    stripped = re.sub(r"'(?:[^'\\]|\\.)*'", "''", text)
    if re.search(r"\bOR\b|\(|\)", stripped, re.I):
        return None
    parts, start = [], 0
    for m in re.finditer(r"\bAND\b", stripped, re.I):
        parts.append(text[start : m.start()])
        start = m.end()
    parts.append(text[start:])
    return [p.strip() for p in parts]


def _sql_literal(value: Any) -> str | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, decimal.Decimal)):
        return str(value)
    if isinstance(value, float):
        return repr(value) if value == value and value not in (float("inf"), float("-inf")) else None
    if isinstance(value, str):
        return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
    if isinstance(value, dt.datetime):
        return None  # time zone semantics: not worth the risk here
    if isinstance(value, dt.date):
        return f"DATE'{value.isoformat()}'"
    return None


def target_filter(
    condition: Any,
    target_alias: str,
    target_schema: Any,
    source: Any,
    counted: dict[str, int] | None = None,
    *,
    read_keys: Callable[[str | None, list[str]], bool] | None = None,
) -> str | None:
    """A SQL condition over the target's (unqualified) columns (``target_schema``: a Spark
    StructType) that every target row able to match satisfies, or None when none can be
    derived (see the module docstring). Join keys whose source and target types differ
    are not used. ``read_keys(literal_filter, key_columns)`` (when given) decides whether
    the source's keys are worth a Spark job (False: the filter keeps the literal conjuncts
    only). When the source's keys are read, ``counted["rows"]`` is set to the source's row
    count (delta-spark's ``numSourceRows``, from the same job)."""
    split = split_condition(condition, target_alias, target_schema, source)
    if split is None:
        return None
    kept, keys = split
    if keys and (read_keys is None or read_keys(" AND ".join(kept) or None, [c for c, _ in keys])):
        by_keys = key_conjuncts(source, keys, counted)
        if by_keys is None:
            return "FALSE"  # every key is null: nothing matches
        kept += by_keys
    return " AND ".join(kept) if kept else None


def split_condition(
    condition: Any, target_alias: str, target_schema: Any, source: Any
) -> tuple[list[str], list[tuple[str, str]]] | None:
    """The condition's usable conjuncts: target-side comparisons with literals (as SQL over
    the target's columns) and the join keys ``(target column, source column)`` of
    ``t.a = s.b`` conjuncts whose two sides have one type; None when the condition is not
    SQL text or not a plain ``AND`` chain."""
    if not isinstance(condition, str):
        return None
    conjuncts = _conjuncts(condition)
    if not conjuncts:
        return None
    targets = {f.name.lower(): f.name for f in target_schema.fields}
    target_types = {f.name: f.dataType.simpleString() for f in target_schema.fields}
    source_types = {f.name: f.dataType.simpleString() for f in source.schema.fields}
    sources = {c.lower(): c for c in source.columns}
    alias = target_alias.lower()
    keys: list[tuple[str, str]] = []  # (target column, source column)
    kept: list[str] = []
    for part in conjuncts:
        m = _COMPARISON.match(part)
        if m is None:
            continue
        left, op, right = m.group(1), m.group(2), m.group(3)
        lq, rq = _QUALIFIED.match(left), _QUALIFIED.match(right)
        sides = [(lq, right, op), (rq, left, {"<": ">", ">": "<", "<=": ">=", ">=": "<="}.get(op, op))]
        for q, other, o in sides:
            if q is None or _unquote(q.group(1)).lower() != alias:
                continue
            column = targets.get(_unquote(q.group(2)).lower())
            if column is None:
                continue
            oq = _QUALIFIED.match(other)
            if o == "=" and oq is not None and _unquote(oq.group(1)).lower() != alias:
                src = sources.get(_unquote(oq.group(2)).lower())
                if src is not None and source_types.get(src) == target_types[column]:
                    keys.append((column, src))
            elif _LITERAL.match(other) and o != "!=":
                kept.append(f"{_quote(column)} {o} {other.strip()}")
            break
    return kept, keys


def key_conjuncts(source: Any, keys: list[tuple[str, str]], counted: dict[str, int] | None = None) -> list[str] | None:
    """SQL conjuncts over the target's key columns from the source's keys (a key set or
    a range; one Spark job: :func:`source_keys`); None when some key is null in every
    source row (nothing can match)."""
    out: list[str] = []
    bounds = source_keys(source, [s for _, s in keys], counted)
    for column, (low, high, values) in zip((c for c, _ in keys), bounds):
        if values == []:
            return None
        literals = [_sql_literal(v) for v in values] if values else None
        if literals and all(v is not None for v in literals):
            out.append(f"{_quote(column)} IN ({', '.join(literals)})")  # type: ignore[arg-type]
            continue
        lo, hi = _sql_literal(low), _sql_literal(high)
        if lo is not None and hi is not None:
            out.append(f"{_quote(column)} >= {lo} AND {_quote(column)} <= {hi}")
    return out


def source_keys(
    source: Any, columns: list[str], counted: dict[str, int] | None = None
) -> list[tuple[Any, Any, list[Any] | None]]:
    """Per source column: (smallest non-null value, largest, the distinct non-null values
    when at most :data:`MAX_KEY_SET`, else None; ``[]`` when every value is null); with
    ``counted``, ``counted["rows"]`` the source's row count. One
    Spark job without a shuffle (it fills the pinned source's cache): each task reduces
    its rows to their bounds and up to ``MAX_KEY_SET + 1`` distinct values, the driver
    merges them. A floating-point column holding NaN (which Spark orders above every
    number and which equals NaN in a join) gives no bounds: (None, None, None)."""
    from pyspark.sql import functions as F

    types = {f.name: f.dataType.simpleString() for f in source.schema.fields}
    schema = "rows long, " + ", ".join(
        f"lo{i} {types[c]}, hi{i} {types[c]}, nan{i} boolean, over{i} boolean, keys{i} array<{types[c]}>"
        for i, c in enumerate(columns)
    )
    parts = (
        source.select(*[F.col(_quote(c)).alias(f"k{i}") for i, c in enumerate(columns)])
        .mapInArrow(_key_bounds(len(columns), MAX_KEY_SET), schema)
        .collect()
    )
    if counted is not None:
        counted["rows"] = sum(r["rows"] for r in parts)
    out: list[tuple[Any, Any, list[Any] | None]] = []
    for i in range(len(columns)):
        rows = [r for r in parts if r[f"lo{i}"] is not None or r[f"nan{i}"]]
        if any(r[f"nan{i}"] for r in rows):
            out.append((None, None, None))
            continue
        if not rows:
            out.append((None, None, []))
            continue
        low = min(r[f"lo{i}"] for r in rows)
        high = max(r[f"hi{i}"] for r in rows)
        values: set | None = set()
        for r in rows:
            if r[f"over{i}"] or values is None:
                values = None
                break
            values.update(r[f"keys{i}"])
        if values is not None and len(values) > MAX_KEY_SET:
            values = None
        out.append((low, high, sorted(values) if values is not None else None))
    return out


def _key_bounds(n: int, limit: int) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """The executor side of :func:`source_keys`: one task's key columns reduced to one row."""

    def reduce(batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa
        import pyarrow.compute as pc

        lo: list = [None] * n
        hi: list = [None] * n
        nan = [False] * n
        over = [False] * n
        keys: list[set] = [set() for _ in range(n)]
        types: list = [None] * n
        rows = 0
        for b in batches:
            rows += b.num_rows
            for i in range(n):
                col = b.column(i)
                types[i] = col.type
                if pa.types.is_floating(col.type) and pc.any(pc.is_nan(col)).as_py():
                    nan[i] = True
                valid = col.drop_null()
                if not len(valid):
                    continue
                mm = pc.min_max(valid)
                low, high = mm["min"], mm["max"]
                lo[i] = low if lo[i] is None or pc.less(low, lo[i]).as_py() else lo[i]
                hi[i] = high if hi[i] is None or pc.greater(high, hi[i]).as_py() else hi[i]
                if not over[i]:
                    keys[i].update(pc.unique(valid).to_pylist())
                    if len(keys[i]) > limit:
                        over[i], keys[i] = True, set()
        arrays, names = [pa.array([rows], pa.int64())], ["rows"]
        for i in range(n):
            t = types[i]
            if t is None:
                return  # the task read no batch: no row (its count is 0)
            arrays += [
                pa.array([lo[i].as_py() if lo[i] is not None else None], t),
                pa.array([hi[i].as_py() if hi[i] is not None else None], t),
                pa.array([nan[i]], pa.bool_()),
                pa.array([over[i]], pa.bool_()),
                pa.array([sorted(keys[i])], pa.list_(t)),
            ]
            names += [f"lo{i}", f"hi{i}", f"nan{i}", f"over{i}", f"keys{i}"]
        yield pa.RecordBatch.from_arrays(arrays, names=names)

    return reduce


def keys_can_prune(files: Any, key_columns: list[str], partition_columns: list[str], min_bytes: int) -> bool:
    """Whether reading the source's keys (one Spark job) can drop candidate target files
    (``files``: snapshot file rows) worth more than the job: not for one file, not for
    files of fewer than ``min_bytes`` together (phase 1 reads their key columns for less
    than a job costs), not when no file has statistics and no key is a partition column."""
    import pyarrow.compute as pc

    if files.num_rows <= 1 or (pc.sum(files.column("size")).as_py() or 0) < min_bytes:
        return False
    partitions = {c.lower() for c in partition_columns}
    if any(c.lower() in partitions for c in key_columns):
        return True
    return bool(files.column("stats").null_count < files.num_rows)


KEY_PRUNING_CONF = "spark.pydelta.merge.sourceKeyPruning.minTargetBytes"
DEFAULT_KEY_PRUNING_MIN_BYTES = 16 * 1024 * 1024


def key_pruning_min_bytes(rewriter: Any) -> int:
    """The candidate files' total size from which MERGE reads the source's keys to prune
    them (``spark.pydelta.merge.sourceKeyPruning.minTargetBytes``, default 16 MiB; ``0``:
    whenever more than one file has statistics)."""
    return bytes_conf(rewriter, KEY_PRUNING_CONF, DEFAULT_KEY_PRUNING_MIN_BYTES)


PIN_TARGET_CONF = "spark.pydelta.merge.pinTarget.maxBytes"
DEFAULT_PIN_TARGET_MAX_BYTES = 16 * 1024 * 1024


def pin_target_max_bytes(rewriter: Any) -> int:
    """The candidate files' total size up to which a copy-on-write MERGE pins every
    candidate target row in phase 1 (``spark.pydelta.merge.pinTarget.maxBytes``, default
    16 MiB; ``0``: never)."""
    return bytes_conf(rewriter, PIN_TARGET_CONF, DEFAULT_PIN_TARGET_MAX_BYTES)


def bytes_conf(rewriter: Any, name: str, default: int) -> int:
    """A session conf holding a number of bytes (``default`` when unset; negative as 0);
    refuses one that is not a number, naming it."""
    from delta_pyds.errors import ArgumentTypeError

    try:
        raw = rewriter.spark.conf.get(name, None)
    except Exception:  # Spark Connect without the conf
        raw = None
    try:
        return max(0, int(raw)) if raw not in (None, "") else default
    except ValueError:
        raise ArgumentTypeError(f"{name}: expected a number of bytes, got {raw!r}") from None
