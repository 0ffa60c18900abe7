"""The syntax tree of the Spark SQL expression subset (:mod:`delta_pyds.expressions.parser`
builds it, :mod:`delta_pyds.expressions.evaluator` evaluates it).

Nodes are frozen dataclasses (hashable, compared by value): :class:`Col` (a column path),
:class:`Lit` (a value with its Arrow type), :class:`Call` (an operator or function by
name), :class:`Cast` and :class:`Case`. :class:`~delta_pyds.errors.ExpressionError` is what every step
(parse, cast, evaluation) raises for an expression delta_pyds cannot handle.
"""

from __future__ import annotations

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
