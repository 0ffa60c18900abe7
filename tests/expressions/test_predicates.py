"""The package's predicate form (delta_pyds.expressions.predicates): construction,
normalised column paths, rendering, conjunction and column listing, bad arguments."""

from __future__ import annotations

import pytest

from delta_pyds.expressions import predicates as P


def test_predicate_forms():
    assert P.EqualTo("a", 1).column == ("a",)
    assert P.In(["a", "b"], [1, 2]) == P.In(("a", "b"), (1, 2))
    assert str(P.And(P.EqualTo("a", 1), P.Not(P.IsNull(("s", "x"))))) == "(a = 1) AND (NOT (s.x IS NULL))"
    assert str(P.StartsWith("a b", "x")) == "`a b` STARTSWITH 'x'"
    assert P.conjunction([]) is None
    assert P.conjunction([P.IsNull("a"), P.IsNull("b")]) == P.And(P.IsNull("a"), P.IsNull("b"))
    assert list(P.columns(P.Or(P.IsNull("a"), P.Not(P.EqualTo(("b", "c"), 1))))) == [("a",), ("b", "c")]
    with pytest.raises(TypeError):
        P.EqualTo(("a", 1), 1)
    with pytest.raises(TypeError):
        P.IsNull(())
