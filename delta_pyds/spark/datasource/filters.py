"""Spark's pushed filters (``pyspark.sql.datasource`` filter objects) -> the package's
predicates (:mod:`delta_pyds.expressions.predicates`), for data skipping.

The reader uses the translated predicates ONLY to skip files (partition values and
statistics, :func:`delta_pyds.skipping.files.prune_files`) and Parquet row groups
(:func:`delta_pyds.skipping.files.select_row_groups`). ``pushFilters`` yields EVERY filter back
to Spark, translated or not, so Spark still evaluates all of them on the rows it reads:
query results never depend on skipping, which may only keep more files than necessary.

Translated: ``EqualTo``, ``EqualNullSafe``, ``GreaterThan``, ``GreaterThanOrEqual``,
``LessThan``, ``LessThanOrEqual``, ``In``, ``IsNull``, ``IsNotNull``, ``Not`` (of a
translatable filter) and ``StringStartsWith``. ``StringEndsWith`` and ``StringContains``
cannot use min/max statistics and are not translated, nor is anything unknown.

Values arrive converted from a Variant by PySpark, which computes a decimal as
``Decimal(unscaled) * Decimal(10) ** -scale`` in the worker's decimal context (28
significant digits by default): a literal with more digits arrives ROUNDED. A decimal
value with as many significant digits as that context holds may be such a rounded value,
so its filter is not translated (it keeps every file; Spark still applies the exact
filter). Other pushed types arrive exactly: integers, floats (NaN and infinities are
handled by :mod:`delta_pyds.skipping.rules`), strings (any code point, NUL included),
binary, dates, and timestamps as microseconds since the epoch (years 1-9999; the rules
widen timestamp statistics for their millisecond truncation).

Column references arrive as tuples of names (nested fields); when a schema is given they
are matched against it case-insensitively (exact match first) and rewritten with the
schema's spelling; a column that is not in the schema leaves its filter untranslated.
"""

from __future__ import annotations

import decimal
from collections.abc import Sequence
from typing import Any

from pyspark.sql import datasource as ds

from delta_pyds.expressions import predicates as P
from delta_pyds.protocol.schema import StructType

_COMPARISONS = {
    ds.EqualTo: P.EqualTo,
    ds.EqualNullSafe: P.EqualNullSafe,
    ds.GreaterThan: P.GreaterThan,
    ds.GreaterThanOrEqual: P.GreaterThanOrEqual,
    ds.LessThan: P.LessThan,
    ds.LessThanOrEqual: P.LessThanOrEqual,
}


def translate_filters(filters: Sequence[Any], schema: StructType | None = None) -> tuple[list[Any], list[Any]]:
    """(predicates, untranslated filters). The conjunction of the predicates is implied by
    the conjunction of the filters, so it may be used for skipping (never for dropping
    filters: return every filter to Spark)."""
    predicates: list[Any] = []  # expressions.predicates values
    unused: list[Any] = []  # Spark's filter objects
    for f in filters:
        p = translate_filter(f, schema)
        if p is None:
            unused.append(f)
        else:
            predicates.append(p)
    return predicates, unused


def translate_filter(f: Any, schema: StructType | None = None) -> Any:
    """One filter -> a predicate, or None when it cannot be translated."""
    if isinstance(f, ds.Not):
        child = translate_filter(f.child, schema)
        return None if child is None else P.Not(child)
    attribute = getattr(f, "attribute", None)
    if attribute is None:
        return None
    column = _resolve(attribute, schema)
    if column is None:
        return None
    cls = _COMPARISONS.get(type(f))
    if cls is not None:
        return cls(column, _value(f.value)) if _exact(f.value) else None
    if isinstance(f, ds.In):
        if not all(_exact(v) for v in f.value):
            return None
        return P.In(column, tuple(_value(v) for v in f.value))
    if isinstance(f, ds.IsNull):
        return P.IsNull(column)
    if isinstance(f, ds.IsNotNull):
        return P.IsNotNull(column)
    if isinstance(f, ds.StringStartsWith):
        return P.StartsWith(column, f.value) if isinstance(f.value, str) else None
    return None  # StringEndsWith, StringContains, anything newer


def _exact(v: Any) -> bool:
    """Whether a pushed value is certainly the literal the query holds (see the module
    docstring): False for a decimal that may have been rounded to the context's precision."""
    if isinstance(v, decimal.Decimal):
        if not v.is_finite():
            return False
        return len(v.as_tuple().digits) < decimal.getcontext().prec
    return True


def _value(v: Any) -> Any:
    if isinstance(v, (bytearray, memoryview)):
        return bytes(v)
    return v


def _resolve(attribute: Any, schema: StructType | None) -> tuple[str, ...] | None:
    if isinstance(attribute, str):
        attribute = (attribute,)
    try:
        path = tuple(attribute)
    except TypeError:
        return None
    if not path or not all(isinstance(n, str) for n in path):
        return None
    if schema is None:
        return path
    current: Any = schema
    out = []
    for name in path:
        if not isinstance(current, StructType):
            return None
        field = current.get(name)  # exact, then a unique case-insensitive match
        if field is None:
            return None
        out.append(field.name)
        current = field.type
    return tuple(out)
