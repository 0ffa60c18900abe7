"""A table's NOT NULL columns as non-nullable columns of a Spark-native read, as delta-spark
reports them (its scan keeps the table schema's nullability; Spark's own file sources make every
column nullable).

Guarantees: :func:`not_null` gives ``coalesce(col, raise_error(...), <a non-null value of the
type>)``: the same value for every non-null row, Spark's ``USER_RAISED_EXCEPTION`` naming the
column (delta-spark's ``DELTA_NOT_NULL_CONSTRAINT_VIOLATED`` text) for a null that a data file
holds in a NOT NULL column (it is never replaced by the filler value), and a column Spark's
analysis marks non-nullable. Only top-level columns; nested fields keep the nullability Spark's
reader gives them. A type with no non-null literal here (:func:`filler` is None: intervals,
``void``) stays nullable. The cost: Spark cannot push a filter on such a column into the Parquet
reader (the condition is over the expression, not the file column)."""

from __future__ import annotations

import datetime
import decimal

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql import types as T

_ZERO_CAST = (T.ByteType, T.ShortType, T.IntegerType, T.LongType, T.FloatType, T.DoubleType, T.StringType)


def filler(dtype: T.DataType) -> Column | None:
    """A non-null literal of ``dtype`` (never a row's value: only the type of the coalesce's
    last branch, which Spark needs to call the result non-nullable); None for a type without one."""
    if isinstance(dtype, _ZERO_CAST):
        return F.lit(0 if not isinstance(dtype, T.StringType) else "").cast(dtype)
    if isinstance(dtype, T.DecimalType):
        return F.lit(decimal.Decimal(0).scaleb(-dtype.scale)).cast(dtype)
    simple = {
        T.BinaryType: lambda: F.lit(bytearray()),
        T.BooleanType: lambda: F.lit(False),
        T.DateType: lambda: F.lit(datetime.date(1970, 1, 1)),
        T.TimestampType: lambda: F.lit(datetime.datetime(1970, 1, 1)),
        T.TimestampNTZType: lambda: F.expr("TIMESTAMP_NTZ'1970-01-01 00:00:00'"),
        T.VariantType: lambda: F.parse_json(F.lit("null")),
    }
    for cls, make in simple.items():
        if isinstance(dtype, cls):
            return make().cast(dtype) if cls is not T.VariantType else make()
    if isinstance(dtype, T.ArrayType):
        return F.array().cast(dtype)
    if isinstance(dtype, T.MapType):
        return F.create_map().cast(dtype)
    if isinstance(dtype, T.StructType):
        fields = [filler(f.dataType) for f in dtype.fields]
        if any(f is None for f in fields):
            return None
        return F.struct(*[f.alias(sf.name) for f, sf in zip(fields, dtype.fields, strict=True) if f is not None])
    return None


def not_null(expr: Column, name: str, dtype: T.DataType) -> Column:
    """``expr`` (a column of Spark type ``dtype`` named ``name`` in the table) non-nullable: a
    null raises naming the column (see the module docstring)."""
    fill = filler(dtype)
    if fill is None:
        return expr
    message = f"[DELTA_NOT_NULL_CONSTRAINT_VIOLATED] NOT NULL constraint violated for column: {name}."
    return F.coalesce(expr, F.raise_error(F.lit(message)), fill)
