"""Resolving what a user names in DML against the table's own columns: ``set`` keys of
``update`` / ``whenMatchedUpdate`` / ``whenNotMatchedInsert`` and the conditions of
``delete`` / ``update`` / ``merge``.

Guarantees:

* a ``set`` key is a Spark multipart column name, as delta-spark accepts it: ``id``,
  ```my col``` (backticks quote a name, a doubled backtick is a literal one), ``st.b`` and
  ``st.`x y``` (a field of a struct column, at any depth), optionally qualified by the
  table's alias (``t.id``: column ``id`` when the table has one, as Spark's analyzer tries the
  qualifier first); names match case-insensitively, as Spark's default;
* a key naming a struct field updates that field only: the column becomes a struct with the
  same fields, the named ones set to their new values and the others kept (delta-spark's
  ``UpdateExpressionsSupport`` builds the same ``named_struct``); a key naming a column and
  another naming one of its fields, or the same field twice, is refused;
* an unknown key raises :class:`~delta_pyds.errors.ColumnNotFoundError` naming it and the
  table's columns; a malformed one (an unclosed backtick, an empty part) raises
  :class:`~delta_pyds.errors.ArgumentTypeError` naming the argument;
* :func:`check_condition_resolves` analyses a condition against the table's columns only,
  so Spark's "did you mean" suggestions name table columns, never the internal columns a
  DML scan adds (``__pydelta_file``, ``__pydelta_row_index``, ...).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from delta_pyds.errors import ArgumentTypeError, ColumnNotFoundError

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession
    from pyspark.sql.types import DataType
    from pyspark.sql.types import StructField as SparkField
    from pyspark.sql.types import StructType as SparkStructType

    from delta_pyds.spark.commands.args import ExpressionOrColumn, OptionalExpressionOrColumn


def parse_column_path(key: str, argument: str = "set") -> tuple[str, ...]:
    """The parts of a Spark multipart column name (```a.b`.c`` -> ``("a.b", "c")``)."""
    parts: list[str] = []
    cur: list[str] = []
    i, n = 0, len(key)
    quoted_part = False
    while i < n:
        ch = key[i]
        if ch == "`":
            end = i + 1
            buf = []
            while True:
                if end >= n:
                    raise ArgumentTypeError(f"'{argument}': unclosed backtick in column name {key!r}")
                if key[end] == "`":
                    if end + 1 < n and key[end + 1] == "`":
                        buf.append("`")
                        end += 2
                        continue
                    break
                buf.append(key[end])
                end += 1
            if cur:
                raise ArgumentTypeError(f"'{argument}': a backtick inside a name part in {key!r}")
            cur.extend(buf)
            quoted_part = True
            i = end + 1
            if i < n and key[i] != ".":
                raise ArgumentTypeError(f"'{argument}': expected '.' after a quoted name in {key!r}")
            continue
        if ch == ".":
            if not cur and not quoted_part:
                raise ArgumentTypeError(f"'{argument}': empty name part in column name {key!r}")
            parts.append("".join(cur))
            cur, quoted_part = [], False
            i += 1
            if i == n:
                raise ArgumentTypeError(f"'{argument}': empty name part in column name {key!r}")
            continue
        cur.append(ch)
        i += 1
    if not cur and not quoted_part:
        raise ArgumentTypeError(f"'{argument}': empty column name {key!r}")
    parts.append("".join(cur))
    return tuple(parts)


def _field(struct: SparkStructType, name: str) -> SparkField | None:
    for f in struct.fields:
        if f.name.lower() == name.lower():
            return f
    return None


def resolve_set_key(schema: SparkStructType, key: str, *, what: str, alias: str | None = None) -> tuple[str, ...]:
    """The path of table names (exact case) that ``key`` names in Spark ``schema``."""
    from pyspark.sql.types import StructType

    parts = parse_column_path(key)
    # Spark's analyzer tries the qualifier first: alias.c is column c when c is a column
    if alias is not None and len(parts) > 1 and parts[0].lower() == alias.lower() and _field(schema, parts[1]):
        parts = parts[1:]
    out: list[str] = []
    struct: DataType = schema
    for i, part in enumerate(parts):
        f = _field(struct, part) if isinstance(struct, StructType) else None
        if f is None:
            names = ", ".join(fl.name for fl in schema.fields)
            where = "the table" if i == 0 else f"struct column {'.'.join(out)}"
            raise ColumnNotFoundError(f"{what}: {key} is not a column of {where}; columns: {names}")
        out.append(f.name)
        struct = f.dataType
    return tuple(out)


def set_columns(
    schema: SparkStructType, sets: Mapping[str, Any], base: Callable[[str], Any], *, what: str, alias: str | None = None
) -> dict[str, Any]:
    """``{top-level column: new value Column}`` for the ``set`` keys of one clause.
    ``base(name)`` is the column's current value (a struct whose fields are kept)."""
    from pyspark.sql import functions as F

    paths: dict[tuple[str, ...], Any] = {}
    for key, value in sets.items():
        path = resolve_set_key(schema, key, what=what, alias=alias)
        lowered = tuple(p.lower() for p in path)
        for other in paths:
            short, long_ = sorted((tuple(p.lower() for p in other), lowered), key=len)
            if long_[: len(short)] == short:
                raise ArgumentTypeError(
                    f"'set' of {what}: {key} conflicts with {'.'.join(other)} (the same column or one inside the other)"
                )
        paths[path] = _expr(value)

    def build(current: Column, dtype: Any, given: dict[tuple[str, ...], Any]) -> Column:
        # given: sub-paths below ``current`` -> values; every key is non-empty
        cols = []
        for f in dtype.fields:
            mine = {p[1:]: v for p, v in given.items() if p[0] == f.name}
            if () in mine:
                cols.append(mine[()].alias(f.name))
            elif mine:
                cols.append(build(current.getField(f.name), f.dataType, mine).alias(f.name))
            else:
                cols.append(current.getField(f.name).alias(f.name))
        return F.struct(*cols)

    out: dict[str, Any] = {}
    for f in schema.fields:
        mine = {p[1:]: v for p, v in paths.items() if p[0] == f.name}
        if () in mine:
            out[f.name] = mine[()]
        elif mine:
            out[f.name] = build(base(f.name), f.dataType, mine)
    return out


def set_column_names(
    schema: SparkStructType, sets: Mapping[str, Any], *, what: str, alias: str | None = None
) -> dict[str, Any]:
    """``{top-level column: value}`` for identity checks: the top-level column each key
    changes (the value of a nested key stands for its whole column)."""
    return {resolve_set_key(schema, k, what=what, alias=alias)[0]: v for k, v in sets.items()}


def check_condition_resolves(
    spark: SparkSession,
    schema: SparkStructType,
    condition: OptionalExpressionOrColumn,
    expressions: Iterable[ExpressionOrColumn] = (),
    *,
    alias: str | None = None,
) -> None:
    """Analyses ``condition`` (and the ``expressions`` of a ``set``) against an empty
    DataFrame of the table's columns only (under ``alias`` when given), so a wrong name fails
    with Spark's error whose suggestions list table columns alone."""
    df = spark.createDataFrame([], schema)
    if alias is not None:
        df = df.alias(alias)
    if condition is not None:
        df = df.where(_expr(condition))
    exprs = [_expr(e) for e in expressions]
    (df.select(*exprs) if exprs else df).schema  # noqa: B018 - analysis is the check


def check_merge_resolves(
    spark: SparkSession,
    schema: SparkStructType,
    alias: str,
    source: DataFrame,
    condition: ExpressionOrColumn,
    *,
    matched: Iterable[OptionalExpressionOrColumn] = (),
    not_matched: Iterable[OptionalExpressionOrColumn] = (),
    by_source: Iterable[OptionalExpressionOrColumn] = (),
) -> None:
    """Analyses a merge's join condition and its clauses' conditions and values, each over
    the rows it is evaluated on: ``matched`` over the table's columns (aliased ``alias``)
    joined with ``source``, ``not_matched`` (inserts) over ``source`` alone, ``by_source``
    over the table's columns alone. Spark's suggestions for a wrong name then list only
    the table's and the source's columns, never the scan's internal ones."""
    target = spark.createDataFrame([], schema).alias(alias)
    frames = (
        (target.join(source, _expr(condition), "inner"), matched),
        (source, not_matched),
        (target, by_source),
    )
    for frame, expressions in frames:
        exprs = [_expr(e) for e in expressions if e is not None]
        (frame.select(*exprs) if exprs else frame).schema  # noqa: B018 - analysis is the check


def _expr(e: ExpressionOrColumn) -> Column:
    from pyspark.sql import functions as F

    return F.expr(e) if isinstance(e, str) else e
