"""CHAR(n) and VARCHAR(n) columns: string columns whose field metadata
``__CHAR_VARCHAR_TYPE_STRING`` holds the declared type, as Spark and delta-spark keep them
(the Delta type stays ``string``).

Guarantees:

* :func:`declared_limits` names every top-level ``char(n)`` / ``varchar(n)`` column of a
  schema with its kind and length, and raises :class:`UnsupportedFeatureError` for a
  declared type this package cannot enforce on writes (CHAR/VARCHAR inside a struct, array
  or map): such a column is refused by name, never written unchecked;
* :func:`enforce` gives an Arrow string column the values Spark's write-side check
  (``CharVarcharCodegenUtils.charTypeWriteSideCheck`` / ``varcharTypeWriteSideCheck``)
  gives: a value of at most ``n`` characters is kept (CHAR: padded with spaces to ``n``),
  a longer one loses its trailing spaces down to ``n`` characters, and a longer one that
  cannot is refused with :class:`ConstraintViolationError` naming ``EXCEED_LIMIT_LENGTH``
  (Spark's error class) and the column;
* :func:`with_declared_types` copies the metadata onto a physical (column-mapped) schema,
  so that Spark's reader sees the declared types and pads CHAR values on read as it does for
  its own tables (``spark.sql.readSideCharPadding``);
* schemas parsed from Spark's JSON (:func:`delta_pyds.protocol.schema.with_declared_type`)
  keep ``char(n)`` / ``varchar(n)`` as ``string`` with this metadata, as delta-spark stores them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from delta_pyds.errors import ConstraintViolationError, UnsupportedFeatureError
from delta_pyds.protocol.schema import CHAR_VARCHAR_TYPE_STRING, ArrayType, DataType, MapType, StructField, StructType

CHAR_VARCHAR_KEY = CHAR_VARCHAR_TYPE_STRING
_DECLARED_RE = re.compile(r"^\s*(char|varchar)\s*\(\s*(\d+)\s*\)\s*$", re.IGNORECASE)


@dataclass(frozen=True)
class Declared:
    """A CHAR(n) or VARCHAR(n) column: ``kind`` is ``char`` or ``varchar``."""

    column: str
    kind: str
    length: int

    @property
    def type_text(self) -> str:
        return f"{self.kind}({self.length})"


def parse_declared(text: Any) -> tuple[str, int] | None:
    """``("char", 5)`` for ``char(5)`` (any case), None for anything else."""
    if not isinstance(text, str):
        return None
    m = _DECLARED_RE.match(text)
    return (m.group(1).lower(), int(m.group(2))) if m else None


def has_declared_types(schema: StructType) -> bool:
    """Whether any field (at any depth) carries a declared CHAR/VARCHAR type."""
    return any(CHAR_VARCHAR_KEY in (f.metadata or {}) for f in _walk(schema))


def declared_limits(schema: StructType) -> tuple[Declared, ...]:
    """The top-level CHAR/VARCHAR columns (see the module docstring)."""
    out = []
    for f in schema.fields:
        text = (f.metadata or {}).get(CHAR_VARCHAR_KEY)
        parsed = parse_declared(text) if text is not None else None
        if text is not None and (parsed is None or f.type.to_json() != "string"):
            raise _nested(f.name, str(text))
        if parsed is not None:
            out.append(Declared(f.name, parsed[0], parsed[1]))
        for inner in _walk(f.type):
            if CHAR_VARCHAR_KEY in (inner.metadata or {}):
                raise _nested(f"{f.name}.{inner.name}", str(inner.metadata[CHAR_VARCHAR_KEY]))
    return tuple(out)


def _nested(column: str, text: str) -> UnsupportedFeatureError:
    return UnsupportedFeatureError(
        f"column {column} is declared {text}: writes of CHAR/VARCHAR types inside structs, arrays or maps "
        "are not implemented (only top-level CHAR(n)/VARCHAR(n) string columns are checked and padded)"
    )


def _walk(dtype: DataType) -> list[StructField]:
    if isinstance(dtype, StructType):
        return [g for f in dtype.fields for g in (f, *_walk(f.type))]
    if isinstance(dtype, ArrayType):
        return _walk(dtype.element_type)
    if isinstance(dtype, MapType):
        return _walk(dtype.key_type) + _walk(dtype.value_type)
    return []


def exceeds_message(declared: Declared) -> str:
    """The error of a value too long for ``declared`` (Spark's error class and text, and the column)."""
    return (
        f"[EXCEED_LIMIT_LENGTH] Exceeds char/varchar type length limitation: {declared.length}. "
        f"(column {declared.column} is {declared.type_text})"
    )


def enforce(values: pa.Array | pa.ChunkedArray, declared: Declared) -> pa.Array | pa.ChunkedArray:
    """``values`` after Spark's write-side CHAR/VARCHAR check (see the module docstring)."""
    n = declared.length
    lengths = pc.utf8_length(values)
    over = pc.fill_null(pc.greater(lengths, n), False)
    if pc.any(over).as_py():
        tails = pc.utf8_slice_codeunits(values, n)  # utf8 slices count code points, as Spark does
        fits = pc.equal(pc.utf8_length(pc.utf8_rtrim(tails, characters=" ")), 0)
        if not pc.all(pc.or_(pc.invert(over), pc.fill_null(fits, False))).as_py():
            raise ConstraintViolationError(exceeds_message(declared))
        values = pc.if_else(over, pc.utf8_slice_codeunits(values, 0, n), values)
    if declared.kind == "char":
        values = pc.utf8_rpad(values, width=n, padding=" ")
    return values


def with_declared_types(physical: StructType, logical: StructType) -> StructType:
    """``physical`` (the same fields as ``logical``, physically named) with the logical fields'
    ``__CHAR_VARCHAR_TYPE_STRING`` metadata, at every struct depth."""
    return StructType(tuple(_copy_field(p, f) for p, f in zip(physical.fields, logical.fields, strict=True)))


def _copy_field(p: StructField, f: StructField) -> StructField:
    meta: Mapping[str, Any] = p.metadata
    text = (f.metadata or {}).get(CHAR_VARCHAR_KEY)
    if text is not None:
        meta = {**p.metadata, CHAR_VARCHAR_KEY: text}
    return StructField(p.name, _copy_type(p.type, f.type), p.nullable, meta)


def _copy_type(p: DataType, f: DataType) -> DataType:
    if isinstance(p, StructType) and isinstance(f, StructType):
        return with_declared_types(p, f)
    if isinstance(p, ArrayType) and isinstance(f, ArrayType):
        return ArrayType(_copy_type(p.element_type, f.element_type), p.contains_null)
    if isinstance(p, MapType) and isinstance(f, MapType):
        key, value = _copy_type(p.key_type, f.key_type), _copy_type(p.value_type, f.value_type)
        return MapType(key, value, p.value_contains_null)
    return p
