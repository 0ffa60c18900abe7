"""Delta schema JSON -> types (delta_pyds.protocol.schema.parse_type / parse_schema):
every spelling the log may hold, and malformed ones refused naming the column."""

from __future__ import annotations

import json

import pytest

from delta_pyds.errors import SchemaError
from delta_pyds.protocol.schema import (
    ArrayType,
    DecimalType,
    MapType,
    PrimitiveType,
    StructField,
    StructType,
    parse_schema,
    parse_type,
)

STRING = PrimitiveType("string")


@pytest.mark.parametrize(
    "text, expected",
    [
        ("long", PrimitiveType("long")),
        ("decimal(38,2)", DecimalType(38, 2)),
        ("decimal", DecimalType(10, 0)),
        ("char(3)", STRING),
        ("varchar(10)", STRING),
        ("string collate UNICODE_CI", STRING),
    ],
)
def test_named_types(text, expected):
    assert parse_type(text) == expected


def test_nested_types_keep_names_nullability_and_metadata():
    obj = {
        "type": "struct",
        "fields": [
            {
                "name": "a",
                "type": {"type": "array", "elementType": "integer", "containsNull": False},
                "nullable": False,
            },
            {
                "name": "m",
                "type": {"type": "map", "keyType": "string", "valueType": "double", "valueContainsNull": True},
                "metadata": {"comment": "c"},
            },
        ],
    }
    t = parse_type(obj)
    assert t == StructType(
        (
            StructField("a", ArrayType(PrimitiveType("integer"), False), False),
            StructField("m", MapType(STRING, PrimitiveType("double"), True), True),
        )
    )
    assert isinstance(t, StructType) and t.fields[1].metadata == {"comment": "c"}


@pytest.mark.parametrize(
    "obj, message",
    [
        ("decimal(39,0)", r"decimal\(39,0\) of column 's.x' is not a valid decimal"),
        ("interval", r"unsupported data type 'interval' of column 's.x'"),
        ({"type": "struct", "fields": [{"name": 1, "type": "long"}]}, "malformed field name 1 of column 's.x'"),
        ({"type": "struct", "fields": [{"type": "long"}]}, "malformed struct type of column 's.x'.*'name'"),
        ({"type": "struct", "fields": {}}, "malformed struct type of column 's.x'.*fields"),
        (
            {"type": "struct", "fields": [{"name": "a", "type": "long", "metadata": [1]}]},
            "malformed struct type.*metadata",
        ),
        (
            {"type": "struct", "fields": [{"name": "Ab", "type": "long"}, {"name": "aB", "type": "long"}]},
            "columns 's.x.Ab' and 's.x.aB', whose names differ only in case",
        ),
        ({"type": "array"}, "malformed array type of column 's.x'.*elementType"),
        ({"type": "udt"}, "unsupported data type 'udt' of column 's.x'"),
        (7, "malformed data type of column 's.x'"),
    ],
)
def test_malformed_types_name_the_column(obj, message):
    with pytest.raises(SchemaError, match=message):
        parse_type(obj, column="s.x")


def test_schema_must_be_a_struct():
    with pytest.raises(SchemaError, match="must be a struct"):
        parse_schema(json.dumps("long"))
