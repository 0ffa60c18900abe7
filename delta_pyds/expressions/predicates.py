"""The package's own small predicate form, used for data skipping.

A predicate is a tree of frozen dataclasses. Leaves compare one column with literal
values; ``And``/``Or``/``Not`` combine them. Columns are tuples of *logical* field names
(``("a",)`` for a top-level column, ``("s", "x")`` for field ``x`` of struct ``s``); a
plain string is accepted and becomes a one-element tuple.

Literals are Python values as PySpark passes them in filters: ``int``, ``float``,
``str``, ``bool``, ``Decimal``, ``datetime.date``, a tz-aware UTC ``datetime`` for
TIMESTAMP, a naive ``datetime`` for TIMESTAMP_NTZ, ``bytes``.

Semantics are Spark SQL's: comparisons with a null operand are NULL (never true),
``EqualNullSafe`` (``<=>``) is never NULL, a row matches when the whole predicate is
TRUE. Floating point ordering is Spark's: NaN equals NaN and is larger than any other
value. This module only describes predicates; :mod:`delta_pyds.skipping.files` evaluates them
against file statistics.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

ColumnPath = tuple  # tuple[str, ...]


def _column(value: Any) -> tuple:
    if isinstance(value, str):
        return (value,)
    if isinstance(value, (tuple, list)) and value and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise TypeError(f"a column must be a name or a non-empty tuple of names, not {value!r}")


def _column_str(column: tuple) -> str:
    return ".".join(f"`{c}`" if ("." in c or " " in c or not c) else c for c in column)


@dataclass(frozen=True)
class _ColumnValue:
    column: tuple
    value: Any

    op = "?"

    def __post_init__(self) -> None:
        object.__setattr__(self, "column", _column(self.column))

    def __str__(self) -> str:
        return f"{_column_str(self.column)} {self.op} {self.value!r}"


@dataclass(frozen=True)
class EqualTo(_ColumnValue):
    """``column = value``"""

    op = "="


@dataclass(frozen=True)
class EqualNullSafe(_ColumnValue):
    """``column <=> value``: true when both are null or both are equal; ``value`` may be None."""

    op = "<=>"


@dataclass(frozen=True)
class LessThan(_ColumnValue):
    """``column < value``"""

    op = "<"


@dataclass(frozen=True)
class LessThanOrEqual(_ColumnValue):
    """``column <= value``"""

    op = "<="


@dataclass(frozen=True)
class GreaterThan(_ColumnValue):
    """``column > value``"""

    op = ">"


@dataclass(frozen=True)
class GreaterThanOrEqual(_ColumnValue):
    """``column >= value``"""

    op = ">="


@dataclass(frozen=True)
class In:
    """``column IN (values...)``: nulls among the values never match."""

    column: tuple
    values: tuple

    def __post_init__(self) -> None:
        object.__setattr__(self, "column", _column(self.column))
        object.__setattr__(self, "values", tuple(self.values))

    def __str__(self) -> str:
        return f"{_column_str(self.column)} IN ({', '.join(repr(v) for v in self.values)})"


@dataclass(frozen=True)
class IsNull:
    """``column IS NULL``"""

    column: tuple

    def __post_init__(self) -> None:
        object.__setattr__(self, "column", _column(self.column))

    def __str__(self) -> str:
        return f"{_column_str(self.column)} IS NULL"


@dataclass(frozen=True)
class IsNotNull:
    """``column IS NOT NULL``"""

    column: tuple

    def __post_init__(self) -> None:
        object.__setattr__(self, "column", _column(self.column))

    def __str__(self) -> str:
        return f"{_column_str(self.column)} IS NOT NULL"


@dataclass(frozen=True)
class StartsWith:
    """``column LIKE 'prefix%'`` on a string column."""

    column: tuple
    prefix: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "column", _column(self.column))

    def __str__(self) -> str:
        return f"{_column_str(self.column)} STARTSWITH {self.prefix!r}"


@dataclass(frozen=True)
class Not:
    child: Predicate

    def __str__(self) -> str:
        return f"NOT ({self.child})"


@dataclass(frozen=True)
class And:
    left: Predicate
    right: Predicate

    def __str__(self) -> str:
        return f"({self.left}) AND ({self.right})"


@dataclass(frozen=True)
class Or:
    left: Predicate
    right: Predicate

    def __str__(self) -> str:
        return f"({self.left}) OR ({self.right})"


Comparison = EqualTo | EqualNullSafe | LessThan | LessThanOrEqual | GreaterThan | GreaterThanOrEqual
Predicate = Comparison | In | IsNull | IsNotNull | StartsWith | Not | And | Or


def conjunction(predicates: Iterable[Predicate]) -> Predicate | None:
    """``p1 AND p2 AND ...`` (None for no predicates)."""
    result = None
    for p in predicates:
        result = p if result is None else And(result, p)
    return result


def columns(predicate: Any) -> Iterator[tuple]:
    """Every column a predicate references (with repetitions)."""
    if isinstance(predicate, (And, Or)):
        yield from columns(predicate.left)
        yield from columns(predicate.right)
    elif isinstance(predicate, Not):
        yield from columns(predicate.child)
    elif hasattr(predicate, "column"):
        yield predicate.column
