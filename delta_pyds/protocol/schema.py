"""Delta table schemas: parsing the log's ``schemaString``, mapping to Arrow types, and
column mapping (logical <-> physical names and Parquet field ids).

Guarantees: ``parse_schema`` accepts exactly the JSON the protocol defines (Spark's
StructType JSON) and raises :class:`SchemaError` for anything else; ``to_arrow_type``
gives the Arrow type Spark's Python Data Source API expects for a Delta type
(``timestamp`` -> ``timestamp[us, tz=UTC]``, ``timestamp_ntz`` -> ``timestamp[us]``,
``string`` -> ``string``, ``variant`` -> ``struct<value, metadata>``...).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, overload

import pyarrow as pa

from delta_pyds.errors import SchemaError

COLUMN_MAPPING_ID = "delta.columnMapping.id"
COLUMN_MAPPING_PHYSICAL_NAME = "delta.columnMapping.physicalName"
PARQUET_FIELD_ID = b"PARQUET:field_id"
# a string field's declared Spark type (``char(5)``, ``varchar(3)``, ``array<char(2)>``), as
# Spark and delta-spark keep CHAR/VARCHAR columns: type ``string`` + this field metadata
CHAR_VARCHAR_TYPE_STRING = "__CHAR_VARCHAR_TYPE_STRING"

PRIMITIVE_TYPES = {
    "string",
    "long",
    "integer",
    "short",
    "byte",
    "float",
    "double",
    "boolean",
    "binary",
    "date",
    "timestamp",
    "timestamp_ntz",
    "void",
    "variant",
}
_DECIMAL_RE = re.compile(r"^decimal\(\s*(\d+)\s*,\s*(-?\d+)\s*\)$")


@dataclass(frozen=True)
class PrimitiveType:
    name: str

    def to_json(self) -> Any:
        return self.name

    def simple_string(self) -> str:
        return self.name


@dataclass(frozen=True)
class DecimalType:
    precision: int
    scale: int

    @property
    def name(self) -> str:
        return f"decimal({self.precision},{self.scale})"

    def to_json(self) -> Any:
        return self.name

    def simple_string(self) -> str:
        return self.name


@dataclass(frozen=True)
class ArrayType:
    element_type: DataType
    contains_null: bool = True
    name = "array"

    def to_json(self) -> Any:
        return {"type": "array", "elementType": self.element_type.to_json(), "containsNull": self.contains_null}

    def simple_string(self) -> str:
        return f"array<{self.element_type.simple_string()}>"


@dataclass(frozen=True)
class MapType:
    key_type: DataType
    value_type: DataType
    value_contains_null: bool = True
    name = "map"

    def to_json(self) -> Any:
        return {
            "type": "map",
            "keyType": self.key_type.to_json(),
            "valueType": self.value_type.to_json(),
            "valueContainsNull": self.value_contains_null,
        }

    def simple_string(self) -> str:
        return f"map<{self.key_type.simple_string()},{self.value_type.simple_string()}>"


@dataclass(frozen=True)
class StructField:
    name: str
    type: DataType
    nullable: bool = True
    metadata: Mapping[str, Any] = field(default_factory=dict, compare=False, hash=False)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "type": self.type.to_json(),
            "nullable": self.nullable,
            "metadata": dict(self.metadata),
        }

    def physical_name(self, mode: str) -> str:
        """The name of this field in data files under column mapping ``mode``."""
        if mode in ("name", "id"):
            physical: str | None = self.metadata.get(COLUMN_MAPPING_PHYSICAL_NAME)
            if physical:
                return physical
            if mode == "name":
                raise SchemaError(
                    f"column {self.name!r} has no {COLUMN_MAPPING_PHYSICAL_NAME} although the table uses column mapping"
                )
        return self.name

    @property
    def field_id(self) -> int | None:
        value = self.metadata.get(COLUMN_MAPPING_ID)
        return int(value) if value is not None else None


@dataclass(frozen=True)
class StructType:
    fields: tuple[StructField, ...] = ()
    name = "struct"

    def to_json(self) -> dict[str, Any]:
        return {"type": "struct", "fields": [f.to_json() for f in self.fields]}

    def json(self) -> str:
        return json.dumps(self.to_json(), separators=(",", ":"))

    def simple_string(self) -> str:
        return "struct<" + ",".join(f"{f.name}:{f.type.simple_string()}" for f in self.fields) + ">"

    def __iter__(self) -> Iterator[StructField]:
        return iter(self.fields)

    def __len__(self) -> int:
        return len(self.fields)

    @property
    def names(self) -> list[str]:
        return [f.name for f in self.fields]

    def field(self, name: str) -> StructField:
        for f in self.fields:
            if f.name == name:
                return f
        lowered = name.lower()
        matches = [f for f in self.fields if f.name.lower() == lowered]
        if len(matches) == 1:
            return matches[0]
        raise KeyError(name)

    def get(self, name: str) -> StructField | None:
        try:
            return self.field(name)
        except KeyError:
            return None

    def select(self, names: list[str]) -> StructType:
        return StructType(tuple(self.field(n) for n in names))


DataType = PrimitiveType | DecimalType | ArrayType | MapType | StructType


def is_void_type(dtype: DataType) -> bool:
    """Whether ``dtype`` is ``void`` (Spark's NullType): a column that holds only nulls and
    is never stored in data files. The one spelling of this test."""
    return isinstance(dtype, PrimitiveType) and dtype.name == "void"


def without_void_columns(schema: StructType) -> StructType:
    """``schema`` without its top-level ``void`` columns (what readers return and what
    data files hold; nested void fields are kept in the type)."""
    return StructType(tuple(f for f in schema.fields if not is_void_type(f.type)))


# ---------------------------------------------------------------------------- parsing
MAX_TYPE_DEPTH = 100  # nested struct/array/map levels accepted in a schema (see parse_schema)
MAX_DECIMAL_PRECISION = 38  # Spark's DecimalType.MAX_PRECISION


def parse_schema(schema_string: str) -> StructType:
    """Parses a ``schemaString`` from a metaData action.

    Refused with :class:`SchemaError`: invalid JSON, types outside the protocol,
    decimals outside Spark's range (precision 1..38, scale 0..precision), two fields of
    one struct whose names differ only in case (Spark resolves names case-insensitively:
    both would map to one data file column), and nesting deeper than
    :data:`MAX_TYPE_DEPTH` struct/array/map levels (Spark itself has no fixed limit, but
    no real schema comes near 100 levels, and deeper ones exhaust the stack of every
    recursive consumer)."""
    try:
        obj = json.loads(schema_string)
    except (TypeError, ValueError) as exc:
        raise SchemaError(f"the table schema is not valid JSON: {exc}") from None
    except RecursionError:
        raise SchemaError(f"the table schema is nested deeper than {MAX_TYPE_DEPTH} levels") from None
    result = parse_type(obj)
    if not isinstance(result, StructType):
        raise SchemaError("the table schema must be a struct")
    return result


def parse_type(obj: Any, *, column: str = "", depth: int = 0) -> DataType:
    """A Delta data type from its JSON form; ``column`` names the field in errors."""
    where = f" of column {column!r}" if column else ""
    if depth > MAX_TYPE_DEPTH:
        raise SchemaError(
            f"the type{where} is nested deeper than {MAX_TYPE_DEPTH} levels (struct, array and map levels count)"
        )
    if isinstance(obj, str):
        return _named_type(obj, where)
    if not isinstance(obj, dict):
        raise SchemaError(f"malformed data type{where} in the table schema: {_short(obj)}")
    kind = obj.get("type")
    prefix = f"{column}." if column else ""
    try:
        if kind == "struct":
            return _parse_struct(obj, prefix, where, depth)
        if kind == "array":
            return ArrayType(
                parse_type(obj["elementType"], column=prefix + "element", depth=depth + 1),
                bool(obj.get("containsNull", True)),
            )
        if kind == "map":
            return MapType(
                parse_type(obj["keyType"], column=prefix + "key", depth=depth + 1),
                parse_type(obj["valueType"], column=prefix + "value", depth=depth + 1),
                bool(obj.get("valueContainsNull", True)),
            )
    except (KeyError, TypeError) as exc:
        raise SchemaError(f"malformed {kind} type{where} in the table schema: missing or malformed {exc}") from None
    raise SchemaError(f"unsupported data type {_short(kind)}{where} in the table schema")


def _named_type(name: str, where: str) -> DataType:
    """A type written as a name: a primitive, ``decimal(p,s)``, or a string type Spark
    spells differently (``char(n)``, ``varchar(n)``, collated strings)."""
    if name in PRIMITIVE_TYPES:
        return PrimitiveType(name)
    m = _DECIMAL_RE.match(name)
    if m:
        return _decimal(int(m.group(1)), int(m.group(2)), where)
    if name == "decimal":
        return DecimalType(10, 0)
    if name.startswith(("char(", "varchar(")):
        return PrimitiveType("string")
    if name.startswith("string collate"):
        return PrimitiveType("string")
    raise SchemaError(f"unsupported data type {name!r}{where} in the table schema")


def _parse_struct(obj: dict[str, Any], prefix: str, where: str, depth: int) -> StructType:
    """A struct type from its JSON form (KeyError/TypeError for a malformed one; the caller
    names it); field names unique regardless of case."""
    fields = []
    seen: dict[str, str] = {}
    raw_fields = obj.get("fields", [])
    if not isinstance(raw_fields, list):
        raise TypeError("fields")
    for f in raw_fields:
        name = f["name"]
        if not isinstance(name, str):
            raise SchemaError(f"malformed field name {_short(name)}{where} in the table schema")
        other = seen.get(name.lower())
        if other is not None:
            raise SchemaError(
                f"the table schema has columns {prefix + other!r} and {prefix + name!r}, whose "
                "names differ only in case: Spark resolves column names case-insensitively, "
                "so both would map to the same data"
            )
        seen[name.lower()] = name
        metadata = f.get("metadata") or {}
        if not isinstance(metadata, dict):
            raise TypeError("metadata")
        fields.append(
            StructField(
                name,
                parse_type(f["type"], column=prefix + name, depth=depth + 1),
                bool(f.get("nullable", True)),
                with_declared_type(metadata, f["type"]),
            )
        )
    return StructType(tuple(fields))


def with_declared_type(metadata: Mapping[str, Any], type_json: Any) -> dict[str, Any]:
    """A field's metadata, with :data:`CHAR_VARCHAR_TYPE_STRING` added when its type (Spark's
    JSON) is or holds ``char(n)`` / ``varchar(n)`` outside nested structs (whose fields carry
    their own): the string type Delta stores and the declared type Spark reads."""
    text = _declared_text(type_json)
    out = dict(metadata)
    if text is not None and CHAR_VARCHAR_TYPE_STRING not in out:
        out[CHAR_VARCHAR_TYPE_STRING] = text
    return out


def _declared_text(obj: Any) -> str | None:
    if isinstance(obj, str):
        return obj.lower().replace(" ", "") if obj.lower().startswith(("char(", "varchar(")) else None
    if not isinstance(obj, dict):
        return None
    if obj.get("type") == "array":
        inner = _declared_text(obj.get("elementType"))
        return f"array<{inner}>" if inner else None
    if obj.get("type") == "map":
        key, value = _declared_text(obj.get("keyType")), _declared_text(obj.get("valueType"))
        if key is None and value is None:
            return None
        return f"map<{key or _type_name(obj.get('keyType'))},{value or _type_name(obj.get('valueType'))}>"
    return None


def _type_name(obj: Any) -> str:
    """A (non-char) Spark JSON type as Spark's simple type string (for map<...> texts)."""
    if isinstance(obj, str):
        return {"integer": "int", "long": "bigint", "short": "smallint", "byte": "tinyint"}.get(obj, obj)
    if isinstance(obj, dict) and obj.get("type") == "array":
        return f"array<{_type_name(obj.get('elementType'))}>"
    if isinstance(obj, dict) and obj.get("type") == "map":
        return f"map<{_type_name(obj.get('keyType'))},{_type_name(obj.get('valueType'))}>"
    if isinstance(obj, dict) and obj.get("type") == "struct":
        return "struct<" + ",".join(f"{f['name']}:{_type_name(f['type'])}" for f in obj.get("fields", [])) + ">"
    return str(obj)


def _decimal(precision: int, scale: int, where: str) -> DecimalType:
    if not 1 <= precision <= MAX_DECIMAL_PRECISION or not 0 <= scale <= precision:
        raise SchemaError(
            f"decimal({precision},{scale}){where} is not a valid decimal type: the "
            f"precision must be 1..{MAX_DECIMAL_PRECISION} and the scale 0..precision"
        )
    return DecimalType(precision, scale)


def _short(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


# ------------------------------------------------------------------------------ arrow
VARIANT_ARROW_TYPE = pa.struct(
    [
        pa.field("value", pa.binary(), nullable=False),
        pa.field("metadata", pa.binary(), nullable=False, metadata={b"variant": b"true"}),
    ]
)

_PRIMITIVE_ARROW = {
    "string": pa.string(),
    "long": pa.int64(),
    "integer": pa.int32(),
    "short": pa.int16(),
    "byte": pa.int8(),
    "float": pa.float32(),
    "double": pa.float64(),
    "boolean": pa.bool_(),
    "binary": pa.binary(),
    "date": pa.date32(),
    "timestamp": pa.timestamp("us", tz="UTC"),
    "timestamp_ntz": pa.timestamp("us"),
    "void": pa.null(),
}


def to_arrow_type(dtype: DataType) -> pa.DataType:
    """The Arrow type Spark exchanges for a Delta type (logical names)."""
    if isinstance(dtype, PrimitiveType):
        if dtype.name == "variant":
            return VARIANT_ARROW_TYPE
        return _PRIMITIVE_ARROW[dtype.name]
    if isinstance(dtype, DecimalType):
        return pa.decimal128(dtype.precision, dtype.scale)
    if isinstance(dtype, ArrayType):
        return pa.list_(pa.field("element", to_arrow_type(dtype.element_type), nullable=dtype.contains_null))
    if isinstance(dtype, MapType):
        return pa.map_(
            pa.field("key", to_arrow_type(dtype.key_type), nullable=False),
            pa.field("value", to_arrow_type(dtype.value_type), nullable=dtype.value_contains_null),
        )
    if isinstance(dtype, StructType):
        return pa.struct([to_arrow_field(f) for f in dtype.fields])
    raise SchemaError(f"no Arrow type for {dtype!r}")


def to_arrow_field(f: StructField) -> pa.Field:
    return pa.field(f.name, to_arrow_type(f.type), nullable=f.nullable)


def to_arrow_schema(schema: StructType) -> pa.Schema:
    return pa.schema([to_arrow_field(f) for f in schema.fields])


# ----------------------------------------------------------------------- column mapping
SPARK_FIELD_ID = "parquet.field.id"
"""The field metadata key Spark's Parquet reader and writer take as the Parquet field id."""


def physical_field(
    f: StructField, mode: str, *, force_nullable: bool = False, ids_in_name_mode: bool = False
) -> StructField:
    """``f`` as the data files hold it: physical names all the way down (column mapping
    ``mode``), no metadata but the Parquet field id (:data:`SPARK_FIELD_ID`) of every
    struct field that has one, in ``id`` mode (and in ``name`` mode with
    ``ids_in_name_mode``: what writers put in the files they write, so that a later switch
    to ``id`` mode finds them). Nullability is the field's (readers: a required field stays
    required), or, with ``force_nullable``, nullable at every level (what Spark's file
    writers produce)."""
    meta: dict[str, Any] = {}
    if f.field_id is not None and (mode == "id" or (ids_in_name_mode and mode == "name")):
        meta[SPARK_FIELD_ID] = f.field_id
    dtype = physical_type(f.type, mode, force_nullable=force_nullable, ids_in_name_mode=ids_in_name_mode)
    return StructField(f.physical_name(mode), dtype, force_nullable or f.nullable, meta)


def physical_type(
    dtype: DataType, mode: str, *, force_nullable: bool = False, ids_in_name_mode: bool = False
) -> DataType:
    """``dtype`` with every nested struct field as :func:`physical_field` gives it (array
    elements and map values nullable too with ``force_nullable``)."""
    options: dict[str, Any] = {"force_nullable": force_nullable, "ids_in_name_mode": ids_in_name_mode}
    if isinstance(dtype, StructType):
        return StructType(tuple(physical_field(f, mode, **options) for f in dtype.fields))
    if isinstance(dtype, ArrayType):
        return ArrayType(physical_type(dtype.element_type, mode, **options), force_nullable or dtype.contains_null)
    if isinstance(dtype, MapType):
        key, value = (physical_type(t, mode, **options) for t in (dtype.key_type, dtype.value_type))
        return MapType(key, value, force_nullable or dtype.value_contains_null)
    return dtype


def nullable_type(dtype: DataType) -> DataType:
    """``dtype`` with every nested field, element and value nullable (how Spark's file
    sources read a schema, and what a new table gets from a DataFrame)."""
    if isinstance(dtype, StructType):
        return StructType(tuple(StructField(f.name, nullable_type(f.type), True, f.metadata) for f in dtype.fields))
    if isinstance(dtype, ArrayType):
        return ArrayType(nullable_type(dtype.element_type), True)
    if isinstance(dtype, MapType):
        return MapType(nullable_type(dtype.key_type), nullable_type(dtype.value_type), True)
    return dtype


def leaf_paths(schema: StructType, prefix: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], StructField]]:
    """Every leaf column (nested struct fields flattened) with its logical path."""
    for f in schema.fields:
        path = prefix + (f.name,)
        if isinstance(f.type, StructType):
            yield from leaf_paths(f.type, path)
        else:
            yield path, f


def max_column_id(schema: StructType) -> int:
    best = 0

    def walk(dtype: DataType) -> None:
        nonlocal best
        if isinstance(dtype, StructType):
            for f in dtype.fields:
                if f.field_id is not None:
                    best = max(best, f.field_id)
                walk(f.type)
        elif isinstance(dtype, ArrayType):
            walk(dtype.element_type)
        elif isinstance(dtype, MapType):
            walk(dtype.key_type)
            walk(dtype.value_type)

    walk(schema)
    return best


@overload
def project(table_type: StructType, requested: StructType) -> StructType: ...
@overload
def project(table_type: DataType, requested: DataType) -> DataType: ...
def project(table_type: DataType, requested: DataType) -> DataType:
    """``requested`` (e.g. from a Spark schema) with the table's field metadata (physical
    names, field ids) attached wherever the table has a field of that name.

    Fields absent from the table keep the requested definition (they read as null)."""
    if isinstance(requested, StructType) and isinstance(table_type, StructType):
        fields = []
        for rf in requested.fields:
            tf = table_type.get(rf.name)
            if tf is None:
                fields.append(rf)
            else:
                fields.append(StructField(rf.name, project(tf.type, rf.type), rf.nullable, tf.metadata))
        return StructType(tuple(fields))
    if isinstance(requested, ArrayType) and isinstance(table_type, ArrayType):
        return ArrayType(project(table_type.element_type, requested.element_type), requested.contains_null)
    if isinstance(requested, MapType) and isinstance(table_type, MapType):
        return MapType(
            project(table_type.key_type, requested.key_type),
            project(table_type.value_type, requested.value_type),
            requested.value_contains_null,
        )
    return requested
