"""The core evaluator's integer arithmetic against Spark's own (ANSI mode, Spark's default;
issue #44 item 13): on the edge values of BIGINT and INT (min, max, -1, 0, 1, NULL) every
operator gives Spark's value, or fails with Spark's error class (``DIVIDE_BY_ZERO``,
``REMAINDER_BY_ZERO``, ``ARITHMETIC_OVERFLOW``) on exactly the rows where Spark fails."""

from __future__ import annotations

import itertools
import re

import pyarrow as pa

from delta_pyds.errors import ExpressionError
from delta_pyds.expressions.coercion import broadcast
from delta_pyds.expressions.evaluator import evaluate
from delta_pyds.expressions.parser import parse_expression

LONGS = [-(2**63), 2**63 - 1, -1, 0, 1, 7, None]
INTS = [-(2**31), 2**31 - 1, -1, 0, 1, 7, None]
PAIRS = list(itertools.product(range(len(LONGS)), repeat=2))
EXPRESSIONS = [
    "a div b",
    "i div j",
    "i div b",
    "a / b",
    "a % b",
    "i % j",
    "a + b",
    "a - b",
    "a * b",
    "i + j",
    "i - j",
    "i * j",
    "i + b",
    "-a",
    "-i",
    "abs(a)",
    "abs(i)",
    "-7 div 2",
]
SCHEMA = pa.schema([("k", pa.int64()), ("a", pa.int64()), ("b", pa.int64()), ("i", pa.int32()), ("j", pa.int32())])
ROWS = [(k, LONGS[x], LONGS[y], INTS[x], INTS[y]) for k, (x, y) in enumerate(PAIRS)]


def _core(text: str, row: tuple) -> tuple[str, object]:
    batch = pa.RecordBatch.from_pylist([dict(zip(SCHEMA.names, row))], schema=SCHEMA)
    try:
        return "value", broadcast(evaluate(parse_expression(text), batch), batch).to_pylist()[0]
    except ExpressionError as exc:
        found = re.search(r"\[([A-Z_]+)\]", str(exc))
        return "error", found.group(1) if found else str(exc)


def _spark_error(spark, df, text: str, k: int) -> str | None:
    try:
        df.where(f"k = {k}").selectExpr(text).collect()
    except Exception as exc:  # Spark's ArithmeticException, as pyspark raises it
        found = re.search(r"\[([A-Z_]+)\]", str(exc))
        return found.group(1) if found else str(exc)
    return None


def test_integer_arithmetic_matches_spark_ansi(spark):
    assert spark.conf.get("spark.sql.ansi.enabled") == "true"
    df = spark.createDataFrame(ROWS, "k long, a long, b long, i int, j int").cache()
    errors = set()
    for text in EXPRESSIONS:
        core = {row[0]: _core(text, row) for row in ROWS}
        fine = [k for k, (kind, _) in core.items() if kind == "value"]
        got = {r[0]: r[1] for r in df.where(df.k.isin(fine)).selectExpr("k", text).collect()}
        assert got == {k: core[k][1] for k in fine}, text
        for k in (k for k, (kind, _) in core.items() if kind == "error"):
            assert _spark_error(spark, df, text, k) == core[k][1], (text, ROWS[k])
            errors.add(core[k][1])
    assert errors == {"DIVIDE_BY_ZERO", "REMAINDER_BY_ZERO", "ARITHMETIC_OVERFLOW"}
    df.unpersist()
