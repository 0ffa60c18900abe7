"""MERGE's target file pruning: a condition over the target's columns that every target row
able to match a source row satisfies, derived from the merge condition and the source's
join-key ranges (as delta-rs's merge ``generalize_filter`` / ``try_construct_early_filter``).

:func:`target_filter` reads a merge condition given as SQL text. Of its top-level ``AND``
conjuncts it keeps:

* ``t.a = s.b`` (either side first; ``t`` the target alias, ``s`` any other qualifier
  naming a source column): ``a`` between the source's smallest and largest ``b`` (one
  Spark job over the source for every key), or ``a IN (...)`` when the source holds at
  most :data:`MAX_KEY_SET` distinct keys; a source whose keys are all null matches
  nothing (``FALSE``);
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


def target_filter(condition: Any, target_alias: str, target_schema, source) -> str | None:
    """A SQL condition over the target's (unqualified) columns (``target_schema``: a Spark
    StructType) that every target row able to match satisfies, or None when none can be
    derived (see the module docstring). Join keys whose source and target types differ
    are not used."""
    from pyspark.sql import functions as F

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
    if keys:
        aggs = []
        for _, src in keys:
            col = F.col(_quote(src))
            aggs += [F.min(col), F.max(col), F.approx_count_distinct(col)]
        row = source.agg(*aggs).collect()[0]
        for i, (column, src) in enumerate(keys):
            low, high, distinct = row[3 * i], row[3 * i + 1], row[3 * i + 2]
            if low is None:
                return "FALSE"  # every key is null: nothing matches
            values = None
            if distinct is not None and distinct <= MAX_KEY_SET:
                found = source.select(src).where(F.col(_quote(src)).isNotNull()).distinct().limit(MAX_KEY_SET + 1)
                values = [r[0] for r in found.collect()]
            literals = [_sql_literal(v) for v in values] if values and len(values) <= MAX_KEY_SET else None
            if literals and all(v is not None for v in literals):
                kept.append(f"{_quote(column)} IN ({', '.join(literals)})")  # type: ignore[arg-type]
                continue
            lo, hi = _sql_literal(low), _sql_literal(high)
            if lo is not None and hi is not None:
                kept.append(f"{_quote(column)} >= {lo} AND {_quote(column)} <= {hi}")
    return " AND ".join(kept) if kept else None
