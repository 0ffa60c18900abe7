"""Delta schemas to Spark schemas: what ``DataSource.schema()`` returns.

Guarantees: the Spark schema has the table's logical names, types and nullability;
Delta-internal field metadata (column mapping, type changes, generation expressions,
identity, invariants) is dropped, comments and collations are kept; ``void`` columns
are dropped, as delta-spark does.
"""

from __future__ import annotations

from pyspark.sql.types import StructType as SparkStructType

from delta_pyds.protocol.schema import ArrayType, DataType, MapType, PrimitiveType, StructField, StructType
from delta_pyds.read.scan_plan import visible_schema

_KEEP_METADATA = {"comment", "__COLLATIONS"}


def _clean_type(dtype: DataType):
    if isinstance(dtype, StructType):
        return {
            "type": "struct",
            "fields": [
                _clean_field(f)
                for f in dtype.fields
                if not (isinstance(f.type, PrimitiveType) and f.type.name == "void")
            ],
        }
    if isinstance(dtype, ArrayType):
        return {"type": "array", "elementType": _clean_type(dtype.element_type), "containsNull": dtype.contains_null}
    if isinstance(dtype, MapType):
        return {
            "type": "map",
            "keyType": _clean_type(dtype.key_type),
            "valueType": _clean_type(dtype.value_type),
            "valueContainsNull": dtype.value_contains_null,
        }
    return dtype.to_json()


def _clean_field(f: StructField) -> dict:
    return {
        "name": f.name,
        "type": _clean_type(f.type),
        "nullable": f.nullable,
        "metadata": {k: v for k, v in f.metadata.items() if k in _KEEP_METADATA},
    }


def to_spark_schema(schema: StructType) -> SparkStructType:
    return SparkStructType.fromJson(_clean_type(schema))


def drop_void(schema: StructType) -> StructType:
    """The read core's visible columns (:func:`delta_pyds.read.scan_plan.visible_schema`)."""
    return visible_schema(schema)
