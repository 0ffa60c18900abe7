"""Values conformed to a Delta table's types in Spark: a Delta type as a Spark type
(:func:`spark_type`, field metadata kept), without Delta-internal field metadata
(:func:`logical_type`), the test whether a Spark type already is a table type
(:func:`same_type`) and the expression that makes a column one (:func:`conform`).

Guarantees: :func:`conform` leaves a column of the table's type as it is (no cast in the plan),
matches struct fields by name case-insensitively (a field the value lacks is null; a null struct
stays null), converts array elements and map keys and values one by one, and casts any other
type with Spark's cast (the writer's row rules catch what the cast cannot hold)."""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql import types as T

from delta_pyds.protocol.schema import ArrayType, DataType, MapType, StructField, StructType


def spark_type(dtype: DataType) -> T.DataType:
    """A Delta type (field metadata kept: ``parquet.field.id``) as a Spark type."""
    wrapped = {"type": "struct", "fields": [{"name": "x", "type": dtype.to_json(), "nullable": True, "metadata": {}}]}
    return T.StructType.fromJson(wrapped).fields[0].dataType


def logical_type(dtype: DataType) -> DataType:
    """The type without field metadata (Delta-internal keys stay out of Spark's plan)."""
    if isinstance(dtype, StructType):
        return StructType(tuple(StructField(f.name, logical_type(f.type), f.nullable, {}) for f in dtype.fields))
    if isinstance(dtype, ArrayType):
        return ArrayType(logical_type(dtype.element_type), dtype.contains_null)
    if isinstance(dtype, MapType):
        return MapType(logical_type(dtype.key_type), logical_type(dtype.value_type), dtype.value_contains_null)
    return dtype


def same_type(src: T.DataType, target: DataType) -> bool:
    """Whether Spark type ``src`` is the table's logical ``target`` type (names and types;
    nullability and field metadata aside)."""
    return bool(src.simpleString() == spark_type(logical_type(target)).simpleString())


def conform(expr: Column, src: T.DataType, target: DataType) -> Column:
    """``expr`` of Spark type ``src`` as the table's logical ``target`` type: struct fields
    matched by name (case-insensitive; missing ones null), arrays and maps element-wise,
    other types cast."""
    if same_type(src, target):
        return expr
    if isinstance(target, StructType) and isinstance(src, T.StructType):
        by_name = {f.name.lower(): f for f in src.fields}
        parts = []
        for f in target.fields:
            sf = by_name.get(f.name.lower())
            if sf is None:
                parts.append(F.lit(None).cast(spark_type(logical_type(f.type))).alias(f.name))
            else:
                parts.append(conform(expr.getField(sf.name), sf.dataType, f.type).alias(f.name))
        return F.when(expr.isNull(), F.lit(None)).otherwise(F.struct(*parts))
    if isinstance(target, ArrayType) and isinstance(src, T.ArrayType):
        element, tgt = src.elementType, target.element_type
        return F.transform(expr, lambda x: conform(x, element, tgt))
    if isinstance(target, MapType) and isinstance(src, T.MapType):
        kt, vt, ktgt, vtgt = src.keyType, src.valueType, target.key_type, target.value_type
        out = expr if same_type(kt, ktgt) else F.transform_keys(expr, lambda k, _v: conform(k, kt, ktgt))
        return out if same_type(vt, vtgt) else F.transform_values(out, lambda _k, v: conform(v, vt, vtgt))
    return expr.cast(spark_type(logical_type(target)))
