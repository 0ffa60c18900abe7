"""SQL expressions evaluated over Arrow batches without Spark
(delta_pyds.expressions.evaluator): one case per operator form the evaluator handles
itself (CASE, date arithmetic, division, IN, LIKE)."""

from __future__ import annotations

import datetime as dt
import decimal

import pyarrow as pa
import pytest

from delta_pyds.errors import ExpressionError
from delta_pyds.expressions.coercion import broadcast
from delta_pyds.expressions.evaluator import evaluate
from delta_pyds.expressions.parser import parse_expression

BATCH = pa.record_batch(
    {
        "i": pa.array([1, 4, None, 7], pa.int64()),
        "j": pa.array([0, 2, 3, None], pa.int64()),
        "d": pa.array([dt.date(2024, 1, 31), None, dt.date(2024, 2, 28), dt.date(2024, 3, 1)]),
        "s": ["Apple", "banana", None, "apricot"],
        "m": pa.array(
            [decimal.Decimal("1.50"), decimal.Decimal("3.00"), None, decimal.Decimal("0")], pa.decimal128(5, 2)
        ),
    }
)


def _eval(text: str) -> list:
    return broadcast(evaluate(parse_expression(text), BATCH), BATCH).to_pylist()


@pytest.mark.parametrize(
    "text, expected",
    [
        ("CASE WHEN i > 3 THEN 'big' WHEN i IS NULL THEN 'none' END", [None, "big", "none", "big"]),
        ("CASE WHEN i > 3 THEN i ELSE 0 END", [0, 4, 0, 7]),
        ("d + 1", [dt.date(2024, 2, 1), None, dt.date(2024, 2, 29), dt.date(2024, 3, 2)]),
        ("d - 1", [dt.date(2024, 1, 30), None, dt.date(2024, 2, 27), dt.date(2024, 2, 29)]),
        ("i * j", [0, 8, None, None]),
        ("i / nullif(j, 0)", [None, 2.0, None, None]),  # a zero divisor raises (ANSI): see below
        ("i div nullif(j, 0)", [None, 2, None, None]),
        ("m / nullif(m, 0)", [decimal.Decimal(1), decimal.Decimal(1), None, None]),
        ("i IN (1, 7)", [True, False, None, True]),
        ("i IN (1, NULL)", [True, None, None, None]),
        ("s LIKE 'ap%'", [False, False, None, True]),
        ("s ILIKE 'ap%'", [True, False, None, True]),
        ("i <=> j", [False, False, False, False]),
    ],
)
def test_operator_forms(text, expected):
    got = _eval(text)
    if text.startswith("m / "):
        got = [None if v is None else decimal.Decimal(v).normalize() for v in got]
    assert got == expected


@pytest.mark.parametrize(
    "text, error",
    [
        ("i / j", "DIVIDE_BY_ZERO"),
        ("i div j", "DIVIDE_BY_ZERO"),
        ("m / m", "DIVIDE_BY_ZERO"),
        ("1 div 0", "DIVIDE_BY_ZERO"),
        ("i % j", "REMAINDER_BY_ZERO"),
        ("1.5 % 0", "REMAINDER_BY_ZERO"),
    ],
)
def test_a_zero_divisor_raises_as_spark_ansi(text, error):
    """Spark's ANSI mode (its default): an error, not null (differential: tests/spark)."""
    with pytest.raises(ExpressionError, match=error):
        _eval(text)


def test_like_needs_a_literal_pattern():
    with pytest.raises(ExpressionError, match="LIKE needs a string literal pattern"):
        _eval("s LIKE s")
