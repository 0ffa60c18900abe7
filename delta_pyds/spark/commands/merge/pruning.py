"""MERGE's target file pruning: a condition over the target's columns that every target row
able to match a source row satisfies, derived from the merge condition and the source's
join-key ranges (as delta-rs's merge ``generalize_filter`` / ``try_construct_early_filter``).

:func:`target_filter` reads a merge condition given as SQL text with the package's one
reading of SQL (:mod:`delta_pyds.expressions.parser` over Spark's lexical rules, in the
session's :class:`~delta_pyds.expressions.lexer.Dialect`): text it cannot parse whole gives no
filter. Of the parsed condition's top-level ``AND`` conjuncts it keeps:

* ``t.a = s.b`` (either side first; ``t`` the target alias, ``s`` a qualifier that is neither
  the target alias nor the name of a column with fields (struct, array, map, variant) of either
  side, so it can only be the source's alias,
  naming a source column of the same type): ``a`` between the source's smallest and largest
  ``b``, or ``a IN (...)`` when the source holds at most :data:`MAX_KEY_SET` distinct keys
  (one Spark job without a shuffle for every key: :func:`source_keys`); a source whose keys
  are all null matches nothing (``FALSE``);
* ``t.a <op> literal`` (``=, <, <=, >, >=``, a non-null literal): rendered from the parsed
  value, without the alias.

Every other conjunct is dropped, which only widens the filter. The filter is SQL text in the
default dialect (read back by :meth:`TableRewriter.candidates` with ``DEFAULT_DIALECT``) and
feeds the same conservative file skipping as DELETE (partition values and statistics), so
pruning can only drop files that cannot hold a matching row. :func:`candidate_files` does not
prune when a ``whenNotMatchedBySource`` clause needs every target row.

Also the pin policy of the two-phase merge (what phase 1 pins so that phase 2 reads no target
file again): :func:`pins_whole_target` (a small copy-on-write merge pins every candidate row)
and :func:`carries_changed_rows` (a deletion-vector merge pins the changed rows' written
values), both bounded by session confs.
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from delta_pyds.errors import ExpressionError
from delta_pyds.expressions.ast import Call, Col, Lit
from delta_pyds.expressions.lexer import Dialect
from delta_pyds.expressions.parser import parse_expression
from delta_pyds.spark.commands.args import ExpressionOrColumn
from delta_pyds.spark.commands.rewriter import TableRewriter
from delta_pyds.spark.session import projection
from delta_pyds.table.snapshot import Snapshot

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame
    from pyspark.sql.types import StructType as SparkStructType

MAX_KEY_SET = 64
_FLIPPED = {"<": ">", ">": "<", "<=": ">=", ">=": "<=", "=": "="}


def _conjuncts(node: Any) -> list[Any]:
    """The top-level ``AND`` conjuncts of a parsed condition."""
    if isinstance(node, Call) and node.name == "and":
        return [c for arg in node.args for c in _conjuncts(arg)]
    return [node]


def _sql_literal(value: Any) -> str | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, decimal.Decimal):
        return format(value, "f") if value.is_finite() else None
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return f"{value!r}D" if math.isfinite(value) else None
    if isinstance(value, str):
        return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"  # default dialect
    if isinstance(value, dt.datetime):
        return None  # time zone semantics: not worth the risk here
    if isinstance(value, dt.date):
        return f"DATE'{value.isoformat()}'"
    return None


def target_filter(
    condition: ExpressionOrColumn,
    target_alias: str,
    target_schema: SparkStructType,
    source: DataFrame,
    counted: dict[str, int] | None = None,
    *,
    read_keys: Callable[[str | None, list[str]], bool] | None = None,
    dialect: Dialect | None = None,
) -> str | None:
    """A SQL condition over the target's (unqualified) columns (``target_schema``: a Spark
    StructType) that every target row able to match satisfies, or None when none can be
    derived (see the module docstring; ``dialect``: the session's, None when unknown: no
    filter). Join keys whose source and target types differ are not used.
    ``read_keys(literal_filter, key_columns)`` (when given) decides whether the source's keys
    are worth a Spark job (False: the filter keeps the literal conjuncts only). When the
    source's keys are read, ``counted["rows"]`` is set to the source's row count
    (delta-spark's ``numSourceRows``, from the same job)."""
    split = split_condition(condition, target_alias, target_schema, source, dialect)
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
    condition: ExpressionOrColumn,
    target_alias: str,
    target_schema: SparkStructType,
    source: DataFrame,
    dialect: Dialect | None,
) -> tuple[list[str], list[tuple[str, str]]] | None:
    """The condition's usable conjuncts: target-side comparisons with literals (as SQL over
    the target's columns, default dialect) and the join keys ``(target column, source
    column)`` of ``t.a = s.b`` conjuncts whose two sides have one type; None when the
    condition is not SQL text, the dialect is unknown, or the text is outside the parser's
    subset (never a guess)."""
    if not isinstance(condition, str) or dialect is None:
        return None
    try:
        tree = parse_expression(condition, dialect)
    except (ExpressionError, ValueError):
        return None
    targets = {f.name.lower(): f for f in target_schema.fields}
    sources = {f.name.lower(): f for f in source.schema.fields}
    alias = target_alias.lower()
    keys: list[tuple[str, str]] = []  # (target column, source column)
    kept: list[str] = []
    for part in _conjuncts(tree):
        if not (isinstance(part, Call) and part.name in _FLIPPED and len(part.args) == 2):
            continue
        for mine, other, op in (
            (part.args[0], part.args[1], part.name),
            (part.args[1], part.args[0], _FLIPPED[part.name]),
        ):
            column = _target_column(mine, alias, targets, sources)
            if column is None:
                continue
            src = _source_column(other, alias, targets, sources)
            if op == "=" and src is not None and src.dataType.simpleString() == column.dataType.simpleString():
                keys.append((column.name, src.name))
            elif isinstance(other, Lit):
                literal = _sql_literal(other.value)
                if literal is not None:
                    kept.append(f"{projection.ident(column.name)} {op} {literal}")
            break
    return kept, keys


def _names_a_nested_column(qualifier: str, targets: dict[str, Any], sources: dict[str, Any]) -> bool:
    """Whether ``qualifier`` is also the name of a column of either side that ``q.x`` could
    read a field of (any type but an atomic one: struct, array, map, variant...). A column
    of an atomic type (a string ``s``) has no fields: ``s.x`` can only name an alias's column."""
    from pyspark.sql.types import AtomicType

    fields = [f for f in (targets.get(qualifier), sources.get(qualifier)) if f is not None]
    return any(not isinstance(f.dataType, AtomicType) for f in fields)


def _target_column(node: Any, alias: str, targets: dict[str, Any], sources: dict[str, Any]) -> Any:
    """The target field ``t.a`` names (``t`` the target alias, not also the name of a
    column with fields)."""
    if not (isinstance(node, Col) and len(node.path) == 2):
        return None
    qualifier, name = node.path[0].lower(), node.path[1].lower()
    if qualifier != alias or _names_a_nested_column(qualifier, targets, sources):
        return None
    return targets.get(name)


def _source_column(node: Any, alias: str, targets: dict[str, Any], sources: dict[str, Any]) -> Any:
    """The source field ``s.b`` names: a qualifier that is not the target alias and not the
    name of a column with fields (a struct column) can only be the source's alias."""
    if not (isinstance(node, Col) and len(node.path) == 2):
        return None
    qualifier, name = node.path[0].lower(), node.path[1].lower()
    if qualifier == alias or _names_a_nested_column(qualifier, targets, sources):
        return None
    return sources.get(name)


def key_conjuncts(
    source: DataFrame, keys: list[tuple[str, str]], counted: dict[str, int] | None = None
) -> list[str] | None:
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
            out.append(f"{projection.ident(column)} IN ({', '.join(literals)})")  # type: ignore[arg-type]
            continue
        lo, hi = _sql_literal(low), _sql_literal(high)
        if lo is not None and hi is not None:
            out.append(f"{projection.ident(column)} >= {lo} AND {projection.ident(column)} <= {hi}")
    return out


def source_keys(
    source: DataFrame, columns: list[str], counted: dict[str, int] | None = None
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
        source.select(*[F.col(projection.ident(c)).alias(f"k{i}") for i, c in enumerate(columns)])
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
        values: set[Any] | None = set()
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

        lo: list[Any] = [None] * n
        hi: list[Any] = [None] * n
        nan = [False] * n
        over = [False] * n
        keys: list[set[Any]] = [set() for _ in range(n)]
        types: list[Any] = [None] * n
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


def keys_can_prune(files: pa.Table, key_columns: list[str], partition_columns: list[str], min_bytes: int) -> bool:
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


DEFAULT_KEY_PRUNING_MIN_BYTES = 16 * 1024 * 1024
DEFAULT_PIN_TARGET_MAX_BYTES = 16 * 1024 * 1024


def key_pruning_min_bytes(rewriter: TableRewriter) -> int:
    """The candidate files' total size from which MERGE reads the source's keys to prune
    them (``spark.pydelta.merge.sourceKeyPruning.minTargetBytes``, default 16 MiB; ``0``:
    whenever more than one file has statistics)."""
    from delta_pyds.spark.session.conf import KEY_PRUNING_CONF, byte_count

    return byte_count(rewriter.spark, KEY_PRUNING_CONF, DEFAULT_KEY_PRUNING_MIN_BYTES)


def pin_target_max_bytes(rewriter: TableRewriter) -> int:
    """The candidate files' total size up to which a copy-on-write MERGE pins every
    candidate target row in phase 1 (``spark.pydelta.merge.pinTarget.maxBytes``, default
    16 MiB; ``0``: never)."""
    from delta_pyds.spark.session.conf import PIN_TARGET_CONF, byte_count

    return byte_count(rewriter.spark, PIN_TARGET_CONF, DEFAULT_PIN_TARGET_MAX_BYTES)


def candidate_files(
    rw: TableRewriter,
    snap: Snapshot,
    condition: ExpressionOrColumn,
    talias: str,
    target_schema: SparkStructType,
    src: DataFrame,
    *,
    by_source: bool,
    insert_only: bool,
) -> tuple[pa.Table, int | None]:
    """(the candidate target files of ``snap``: pruned by :func:`target_filter` unless a
    ``whenNotMatchedBySource`` clause needs every row, the source's row count when the
    pruning job counted it). The source's keys are read (one job over the pinned ``src``)
    only when :func:`keys_can_prune` says the job pays, or for an insert-only merge (which
    counts the source anyway)."""
    from delta_pyds.spark.session.dialect import session_dialect

    files = snap.files
    if by_source:  # every target row is needed
        return files, None
    counted: dict[str, int] = {}
    literal_files: dict[str | None, pa.Table] = {}

    def read_keys(literal: str | None, columns: list[str]) -> bool:
        found = rw.candidates(snap, literal, rendered=True) if literal else files
        literal_files[literal] = found
        if insert_only:  # without phase 1 a job counts the source anyway: this one
            return True
        return keys_can_prune(found, columns, snap.partition_columns, key_pruning_min_bytes(rw))

    pruning = target_filter(
        condition, talias, target_schema, src, counted, read_keys=read_keys, dialect=session_dialect(rw.spark)
    )
    if pruning == "FALSE":
        files = files.slice(0, 0)
    elif pruning in literal_files:  # the keys were not read: the literal conjuncts' files
        files = literal_files[pruning]
    elif pruning is not None:
        files = rw.candidates(snap, pruning, rendered=True)
    return files, counted.get("rows")


# a copy-on-write merge of at most this many candidate files (and at most
# spark.pydelta.merge.pinTarget.maxBytes of them) pins every candidate row in phase 1 with
# its written values: phase 2 reads no file again and joins nothing (for a small merge the
# second scan and broadcast cost more than pinning the rows)
PIN_TARGET_MAX_FILES = 256
PIN_TARGET_MAX_ROWS = 2_000_000  # ... and rows, by the files' statistics (none: no pin)
# a deletion-vector merge whose candidate files hold at most this many bytes (the session conf
# spark.pydelta.merge.pinChangedRows.maxBytes) carries the changed rows' written values in phase
# 1's pinned rows (a local checkpoint, MEMORY_AND_DISK); beyond, phase 1 pins only (file, row
# index, action) and phase 2 reads the changed files again: the pinned data stays bounded
DEFAULT_PIN_CHANGED_MAX_BYTES = 1 << 30


def pins_whole_target(files: pa.Table, *, dv: bool, changes_target: bool, max_bytes: int) -> bool:
    """Whether phase 1 pins every candidate target row with its written values: a
    copy-on-write merge (``changes_target``: with a target-side clause) of at most
    ``max_bytes`` in at most :data:`PIN_TARGET_MAX_FILES` candidate ``files`` holding at most
    :data:`PIN_TARGET_MAX_ROWS` rows (by their statistics: a file without ``numRecords``
    pins nothing)."""
    import pyarrow.compute as pc

    from delta_pyds.transaction.file_actions import stat_rows

    if dv or not changes_target or not 0 < files.num_rows <= PIN_TARGET_MAX_FILES:
        return False
    if (pc.sum(files.column("size")).as_py() or 0) > max_bytes or "stats" not in files.column_names:
        return False
    rows = [stat_rows({"stats": s}, None) for s in files.column("stats").to_pylist()]
    return None not in rows and sum(r for r in rows if r is not None) <= PIN_TARGET_MAX_ROWS


def carries_changed_rows(files: pa.Table, *, dv: bool, max_bytes: int) -> bool:
    """Whether phase 1 of a deletion-vector merge carries the changed rows' written values:
    its candidate ``files`` hold at most ``max_bytes``
    (:data:`~delta_pyds.spark.session.conf.PIN_CHANGED_CONF`; ``0``: never)."""
    import pyarrow.compute as pc

    if not dv:
        return False
    return files.num_rows == 0 or (pc.sum(files.column("size")).as_py() or 0) <= max_bytes


def pin_changed_max_bytes(rewriter: TableRewriter) -> int:
    """The candidate files' total size up to which a deletion-vector MERGE carries the
    changed rows' written values in phase 1 (``spark.pydelta.merge.pinChangedRows.maxBytes``,
    default 1 GiB; ``0``: never)."""
    from delta_pyds.spark.session.conf import PIN_CHANGED_CONF, byte_count

    return byte_count(rewriter.spark, PIN_CHANGED_CONF, DEFAULT_PIN_CHANGED_MAX_BYTES)
