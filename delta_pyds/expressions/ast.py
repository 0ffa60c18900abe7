"""The syntax tree of the Spark SQL expression subset (:mod:`delta_pyds.expressions.parser`
builds it, :mod:`delta_pyds.expressions.evaluator` evaluates it).

Nodes are frozen dataclasses (hashable, compared by value): :class:`Col` (a column path),
:class:`Lit` (a value with its Arrow type), :class:`Call` (an operator or function by
name), :class:`Cast` and :class:`Case`. :class:`~delta_pyds.errors.ExpressionError` is what every step
(parse, cast, evaluation) raises for an expression delta_pyds cannot handle.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import pyarrow as pa


@dataclass(frozen=True)
class Col:
    path: tuple[str, ...]


@dataclass(frozen=True)
class Lit:
    value: Any
    type: pa.DataType


@dataclass(frozen=True)
class Call:
    name: str
    args: tuple


@dataclass(frozen=True)
class Cast:
    expr: Any
    type: pa.DataType


@dataclass(frozen=True)
class Case:
    whens: tuple  # ((cond, value), ...)
    default: Any


Node = Col | Lit | Call | Cast | Case
"""Any expression node."""


def columns_of(node: Node) -> set[tuple[str, ...]]:
    """Column paths an expression references."""
    if isinstance(node, Col):
        return {node.path}
    out: set = set()
    if isinstance(node, Call):
        for a in node.args:
            out |= columns_of(a)
    elif isinstance(node, Cast):
        out |= columns_of(node.expr)
    elif isinstance(node, Case):
        for c, v in node.whens:
            out |= columns_of(c) | columns_of(v)
        if node.default is not None:
            out |= columns_of(node.default)
    return out


def resolve_alias(node: Node, alias: str, columns: Iterable[str]) -> Node | None:
    """``node`` read against one relation of top-level ``columns`` under the alias ``alias``
    (``DELETE FROM t AS a WHERE a.id = 1``), its alias-qualified column references resolved
    as Spark's analyzer resolves them: ``a.c`` (``a.c.f``) is column ``c`` (its field ``f``)
    when ``c`` is one of ``columns``; unqualified references are left as they are. The
    subset's trees have one scope (no subqueries, no lambdas), so every reference in ``node``
    is a reference to that relation. None (the caller reads nothing from the text) when the
    reading is not certain: a column is named like the alias (``a.x`` could be field ``x``
    of column ``a``), or ``a.x`` names no column (Spark refuses the statement)."""
    names = {c.lower() for c in columns}
    key = alias.lower()
    if key in names:
        return None

    def walk(n: Node) -> Node:
        if isinstance(n, Col):
            if n.path[0].lower() != key:
                return n
            if len(n.path) < 2 or n.path[1].lower() not in names:
                raise LookupError(n.path)
            return Col(n.path[1:])
        if isinstance(n, Call):
            return Call(n.name, tuple(walk(a) for a in n.args))
        if isinstance(n, Cast):
            return Cast(walk(n.expr), n.type)
        if isinstance(n, Case):
            default = walk(n.default) if n.default is not None else None
            return Case(tuple((walk(c), walk(v)) for c, v in n.whens), default)
        return n

    try:
        return walk(node)
    except LookupError:
        return None
