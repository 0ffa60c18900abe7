"""Delta schemas to Spark schemas: what ``DataSource.schema()`` returns.

Guarantees: the Spark schema has the table's logical names, types and nullability;
Delta-internal field metadata (column mapping, type changes, generation expressions,
identity, invariants) is dropped, comments, collations and declared CHAR/VARCHAR types
(``__CHAR_VARCHAR_TYPE_STRING``: Spark pads CHAR values on read and literals compared with
them, as for its own tables) are kept; ``void`` columns
are dropped, as delta-spark does.
"""

from __future__ import annotations

import copy
from typing import Any, cast

from pyspark.sql.types import StructType as SparkStructType

from delta_pyds.protocol.char_varchar import CHAR_VARCHAR_KEY
from delta_pyds.protocol.schema import (
    ArrayType,
    DataType,
    MapType,
    StructField,
    StructType,
    is_void_type,
    without_void_columns,
)

_KEEP_METADATA = {"comment", "__COLLATIONS", CHAR_VARCHAR_KEY}


def _clean_type(dtype: DataType) -> str | dict[str, Any]:
    if isinstance(dtype, StructType):
        return {
            "type": "struct",
            "fields": [_clean_field(f) for f in dtype.fields if not is_void_type(f.type)],
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


def _clean_field(f: StructField) -> dict[str, Any]:
    return {
        "name": f.name,
        "type": _clean_type(f.type),
        "nullable": f.nullable,
        # a deep copy: pyspark's StructField.fromJson rewrites the __COLLATIONS dict it is given
        "metadata": copy.deepcopy({k: v for k, v in f.metadata.items() if k in _KEEP_METADATA}),
    }


def to_spark_schema(schema: StructType) -> SparkStructType:
    return SparkStructType.fromJson(cast(dict[str, Any], _clean_type(schema)))  # a struct's JSON is a dict


def drop_void(schema: StructType) -> StructType:
    """The schema Spark sees: without the ``void`` columns (:func:`without_void_columns`)."""
    return without_void_columns(schema)
