"""One clause of a MERGE as one frozen, typed value (:class:`MergeClause`), shared by the
SQL front door (``MERGE INTO ... WHEN ...``), the ``DeltaMergeBuilder`` methods and the
executors.

Guarantees: a clause is immutable; ``when`` and ``action`` only take the combinations
delta-spark's grammar has (``INSERT`` only when not matched by target; ``UPDATE`` /
``DELETE`` only when matched or not matched by source; ``UPDATE SET *`` not by source),
else :class:`ValueError` naming both; ``assignments`` is None for ``UPDATE SET *`` /
``INSERT *`` (every column from the source), else a non-empty tuple of
``(column, value)`` pairs in the order given."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, TypeAlias

from delta_pyds.errors import ArgumentValueError

if TYPE_CHECKING:
    from pyspark.sql import Column

When: TypeAlias = Literal["matched", "not_matched", "not_matched_by_source"]
Action: TypeAlias = Literal["update", "delete", "insert"]
Expression: TypeAlias = "str | Column"

_ALLOWED: dict[str, tuple[str, ...]] = {
    "matched": ("update", "delete"),
    "not_matched": ("insert",),
    "not_matched_by_source": ("update", "delete"),
}


@dataclass(frozen=True)
class MergeClause:
    """``WHEN <when> [AND condition] THEN <action> [assignments]``."""

    when: When
    action: Action
    condition: Expression | None = None
    assignments: tuple[tuple[str, Expression], ...] | None = None  # None: UPDATE SET * / INSERT *

    def __post_init__(self) -> None:
        if self.action not in _ALLOWED.get(self.when, ()):
            accepted = "; ".join(w + ": " + "/".join(a) for w, a in _ALLOWED.items())
            raise ArgumentValueError(f"merge: a {self.when} clause cannot {self.action}; accepted: {accepted}")
        if self.action == "delete" and self.assignments is not None:
            raise ArgumentValueError("merge: a delete clause takes no assignments")
        if self.action != "delete" and self.assignments is not None and not self.assignments:
            raise ArgumentValueError(f"merge: a {self.when} {self.action} clause must name at least one column")
        if self.when == "not_matched_by_source" and self.action == "update" and self.assignments is None:
            raise ArgumentValueError("merge: WHEN NOT MATCHED BY SOURCE THEN UPDATE needs SET assignments (no SET *)")

    @classmethod
    def of(
        cls,
        when: When,
        action: Action,
        condition: Expression | None = None,
        assignments: Mapping[str, Expression] | None = None,
    ) -> MergeClause:
        """A clause from a mapping of assignments (as the builder's ``set`` / ``values``)."""
        return cls(when, action, condition, None if assignments is None else tuple(assignments.items()))

    @property
    def star(self) -> bool:
        """``UPDATE SET *`` / ``INSERT *``: every column from the source."""
        return self.action != "delete" and self.assignments is None

    @property
    def mapping(self) -> dict[str, Expression] | None:
        """The assignments as a dict (None for ``*`` and for deletes)."""
        return None if self.assignments is None else dict(self.assignments)
