"""Which schema changes a Delta stream may cross: delta-spark's ``DeltaSource`` rules for a
stream without a schema tracking log (no Spark).

A stream reads every file with one schema, the table's when the query (re)started. Files
written under another schema are readable with it only when the change between them is
*additive*:

* :func:`non_additive_change` (delta-spark's ``DeltaColumnMapping.hasNoColumnMappingSchemaChanges``):
  between an older and a newer metadata of a column mapping table, a column (nested ones
  included, by physical name) dropped or renamed, the partition columns changed, or column
  mapping removed is non-additive: the stream must stop
  (:class:`~delta_pyds.errors.StreamingSchemaChangeError`,
  ``DELTA_STREAMING_INCOMPATIBLE_SCHEMA_CHANGE_USE_SCHEMA_LOG``). Enabling column mapping
  on a table (``none`` to ``name``) is not: its columns keep their names as physical names;
* :func:`unreadable_change` (delta-spark's ``SchemaUtils.isReadCompatible``): every column
  of the files' schema must be in the stream's with the same physical name and type (a
  widening, e.g. ``int`` to ``long``, only for files older than the stream's schema on a
  table with type widening), and a nullable column cannot be read as NOT NULL; the
  stream's schema may have more columns (older files lack them).
"""

from __future__ import annotations

import json
from typing import Any

from delta_pyds.protocol.actions import Metadata
from delta_pyds.protocol.schema import (
    COLUMN_MAPPING_ID,
    COLUMN_MAPPING_PHYSICAL_NAME,
    ArrayType,
    DataType,
    MapType,
    StructField,
    StructType,
    parse_schema,
)
from delta_pyds.protocol.schema_evolution import is_widening
from delta_pyds.protocol.table_properties import COLUMN_MAPPING_MODE

INCOMPATIBLE_SCHEMA_CHANGE = "DELTA_STREAMING_INCOMPATIBLE_SCHEMA_CHANGE_USE_SCHEMA_LOG"


def mapping_mode(metadata: Metadata) -> str:
    return (metadata.configuration.get(COLUMN_MAPPING_MODE) or "none").lower()


def non_additive_change(old: Metadata, new: Metadata) -> str | None:
    """Why a stream cannot cross from ``old`` to the later ``new`` metadata (None: it can;
    see the module docstring)."""
    old_mode, new_mode = mapping_mode(old), mapping_mode(new)
    if new_mode == "none":
        return "column mapping was removed" if old_mode != "none" else None
    old_fields = physical_paths(parse_schema(old.schema_string), mapped=old_mode != "none")
    new_fields = physical_paths(parse_schema(new.schema_string), mapped=True)
    for path, logical in old_fields.items():
        now = new_fields.get(path)
        if now is None:
            return f"column {'.'.join(logical)} was dropped"
        if now[-1] != logical[-1]:
            return f"column {'.'.join(logical)} was renamed to {'.'.join(now)}"
    if [c.lower() for c in old.partition_columns] != [c.lower() for c in new.partition_columns]:
        return f"the partition columns changed from {list(old.partition_columns)} to {list(new.partition_columns)}"
    return None


def physical_paths(schema: StructType, *, mapped: bool) -> dict[tuple[str, ...], tuple[str, ...]]:
    """Every field's physical path (its logical names when ``mapped`` is False) -> its
    logical path, nested fields of structs, arrays and maps included."""
    out: dict[tuple[str, ...], tuple[str, ...]] = {}

    def walk(dtype: DataType, physical: tuple[str, ...], logical: tuple[str, ...]) -> None:
        if isinstance(dtype, StructType):
            for f in dtype.fields:
                name = str((f.metadata or {}).get(COLUMN_MAPPING_PHYSICAL_NAME) or f.name) if mapped else f.name
                out[physical + (name,)] = logical + (f.name,)
                walk(f.type, physical + (name,), logical + (f.name,))
        elif isinstance(dtype, ArrayType):
            walk(dtype.element_type, physical + ("element",), logical + ("element",))
        elif isinstance(dtype, MapType):
            walk(dtype.key_type, physical + ("key",), logical + ("key",))
            walk(dtype.value_type, physical + ("value",), logical + ("value",))

    walk(schema, (), ())
    return out


def unreadable_change(data: StructType, read: StructType, *, allow_widening: bool = False) -> str | None:
    """Why files written with schema ``data`` cannot be read with the stream's ``read``
    schema (None if they can; see the module docstring)."""
    for f in data.fields:
        r = read.get(f.name)
        if r is None:
            return f"column {f.name!r} is not in the stream's schema (added or renamed)"
        if _physical_name(f) != _physical_name(r) or _differs(_field_id(f), _field_id(r)):
            return f"column {f.name!r} was dropped and re-created or renamed"
        if _type_key(f.type) != _type_key(r.type) and not (allow_widening and is_widening(f.type, r.type)):
            return f"column {f.name!r} changed type"
        if f.nullable and not r.nullable:
            return f"column {f.name!r} is nullable there but not in the stream's schema"
    return None


def _physical_name(f: StructField) -> str:
    return str((f.metadata or {}).get(COLUMN_MAPPING_PHYSICAL_NAME) or f.name)


def _field_id(f: StructField) -> Any:
    return (f.metadata or {}).get(COLUMN_MAPPING_ID)


def _differs(a: Any, b: Any) -> bool:
    return a is not None and b is not None and a != b


def _type_key(dtype: DataType) -> str:
    """The type as JSON, field metadata reduced to the column mapping keys."""

    def strip(obj: Any) -> Any:
        if isinstance(obj, dict):
            return {
                k: (
                    strip(v)
                    if k != "metadata"
                    else {m: v[m] for m in (COLUMN_MAPPING_PHYSICAL_NAME, COLUMN_MAPPING_ID) if m in v}
                )
                for k, v in obj.items()
            }
        if isinstance(obj, list):
            return [strip(x) for x in obj]
        return obj

    return json.dumps(strip(dtype.to_json()), sort_keys=True)
