"""Delta log actions: the protocol/metaData records and the Arrow shapes in which file
actions are read from JSON commits and Parquet checkpoints.

Guarantees: ``Protocol.from_dict`` / ``Metadata.from_dict`` validate the fields the
protocol requires (versions are integers; ``readerFeatures``, ``writerFeatures`` and
``partitionColumns`` are arrays of strings) and raise :class:`CorruptLogError` naming
the file otherwise;
``read_json_actions`` parses newline-delimited JSON actions into one Arrow table with
the explicit schema below (unknown actions and fields are ignored, as the protocol
requires), falling back to a per-line parser only when the fast path rejects a file.
"""

from __future__ import annotations

import io
import json
import os
from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import Any, cast

import pyarrow as pa
import pyarrow.json as pj

from delta_pyds.errors import CorruptLogError

DV_TYPE = pa.struct(
    [
        ("storageType", pa.string()),
        ("pathOrInlineDv", pa.string()),
        ("offset", pa.int32()),
        ("sizeInBytes", pa.int32()),
        ("cardinality", pa.int64()),
    ]
)


_ADD_OPTIONAL = [
    ("stats", pa.string()),
    ("deletionVector", DV_TYPE),
    ("baseRowId", pa.int64()),
    ("defaultRowCommitVersion", pa.int64()),
]


# what json_actions_schema knows about the bytes to parse: the bytes themselves, the set
# of optional keys found in them, or nothing (None: every optional field)
PresentKeys = bytes | bytearray | memoryview | AbstractSet[str] | None


def _present(fields: Sequence[tuple[str, pa.DataType]], data: PresentKeys) -> list[tuple[str, pa.DataType]]:
    """Optional fields whose key occurs in ``data`` (all of them when data is None):
    parsing and null-filling absent fields costs more than a substring scan.
    ``data`` may also be a set of the keys known to be present."""
    if data is None:
        return list(fields)
    if isinstance(data, (set, frozenset)):
        return [f for f in fields if f[0] in data]
    return [f for f in fields if f'"{f[0]}"'.encode() in data]


OPTIONAL_KEYS = (
    "stats",
    "deletionVector",
    "baseRowId",
    "defaultRowCommitVersion",
    "cdc",
    "txn",
    "domainMetadata",
    "sidecar",
)


def add_type(partition_struct: pa.StructType, data: PresentKeys = None) -> pa.StructType:
    return pa.struct(
        [
            ("path", pa.string()),
            ("partitionValues", partition_struct),
            ("size", pa.int64()),
            ("modificationTime", pa.int64()),
            ("dataChange", pa.bool_()),
        ]
        + _present(_ADD_OPTIONAL, data)
    )


def remove_type(partition_struct: pa.StructType, data: PresentKeys = None) -> pa.StructType:
    return pa.struct(
        [
            ("path", pa.string()),
            ("deletionTimestamp", pa.int64()),
            ("dataChange", pa.bool_()),
            ("partitionValues", partition_struct),
            ("size", pa.int64()),
        ]
        + _present([("deletionVector", DV_TYPE)], data)
    )


def cdc_type(partition_struct: pa.StructType) -> pa.StructType:
    return pa.struct(
        [
            ("path", pa.string()),
            ("partitionValues", partition_struct),
            ("size", pa.int64()),
            ("dataChange", pa.bool_()),
        ]
    )


TXN_TYPE = pa.struct([("appId", pa.string()), ("version", pa.int64()), ("lastUpdated", pa.int64())])
DOMAIN_TYPE = pa.struct([("domain", pa.string()), ("configuration", pa.string()), ("removed", pa.bool_())])
SIDECAR_TYPE = pa.struct([("path", pa.string()), ("sizeInBytes", pa.int64()), ("modificationTime", pa.int64())])


def partition_struct_type(physical_partition_columns: Sequence[str]) -> pa.StructType:
    return pa.struct([(c, pa.string()) for c in physical_partition_columns])


def json_actions_schema(physical_partition_columns: Sequence[str], data: PresentKeys = None) -> pa.Schema:
    """The Arrow schema file actions are parsed with; given the bytes to parse (or the set
    of optional keys known to occur in them), actions and optional fields that do not occur
    in them are left out (always: add, remove)."""
    ps = partition_struct_type(physical_partition_columns)
    present: PresentKeys = data
    if isinstance(data, (bytes, bytearray, memoryview)):  # scan the bytes once per key
        present = {k for k in OPTIONAL_KEYS if f'"{k}"'.encode() in data}
    fields = [("add", add_type(ps, present)), ("remove", remove_type(ps, present))]
    fields += _present(
        [("cdc", cdc_type(ps)), ("txn", TXN_TYPE), ("domainMetadata", DOMAIN_TYPE), ("sidecar", SIDECAR_TYPE)], present
    )
    return pa.schema(fields)


@dataclass(frozen=True)
class Protocol:
    min_reader_version: int
    min_writer_version: int
    reader_features: tuple[str, ...] | None = None
    writer_features: tuple[str, ...] | None = None

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], *, source: str = "") -> Protocol:
        try:
            rv, wv = int(d["minReaderVersion"]), int(d["minWriterVersion"])
        except (KeyError, TypeError, ValueError):
            raise CorruptLogError(f"malformed protocol action{_in(source)}: {dict(d)!r}") from None
        rf = _string_list(d.get("readerFeatures"), "protocol action", "readerFeatures", source)
        wf = _string_list(d.get("writerFeatures"), "protocol action", "writerFeatures", source)
        return cls(rv, wv, rf, wf)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"minReaderVersion": self.min_reader_version, "minWriterVersion": self.min_writer_version}
        if self.reader_features is not None:
            out["readerFeatures"] = list(self.reader_features)
        if self.writer_features is not None:
            out["writerFeatures"] = list(self.writer_features)
        return out


@dataclass(frozen=True)
class Metadata:
    id: str
    schema_string: str
    partition_columns: tuple[str, ...] = ()
    configuration: Mapping[str, str] = field(default_factory=dict)
    name: str | None = None
    description: str | None = None
    format_provider: str = "parquet"
    format_options: Mapping[str, str] = field(default_factory=dict)
    created_time: int | None = None

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], *, source: str = "") -> Metadata:
        partition_columns = (
            _string_list(d.get("partitionColumns"), "metaData action", "partitionColumns", source)
            if isinstance(d, Mapping)
            else None
        )
        try:
            fmt = d.get("format") or {}
            conf = d.get("configuration") or {}
            if isinstance(conf, list):  # a map read from Parquet as key/value pairs
                conf = dict(conf)
            options = fmt.get("options") or {}
            if isinstance(options, list):
                options = dict(options)
            return cls(
                id=str(d["id"]),
                schema_string=d["schemaString"],
                partition_columns=partition_columns or (),
                # a null value (a Parquet map's null item) is kept as None (the readers of
                # table properties, e.g. is_true, take it for an absent key)
                configuration=cast(
                    "dict[str, str]", {str(k): (None if v is None else str(v)) for k, v in conf.items()}
                ),
                name=d.get("name"),
                description=d.get("description"),
                format_provider=fmt.get("provider") or "parquet",
                format_options=dict(options),
                created_time=d.get("createdTime"),
            )
        except (KeyError, TypeError, AttributeError):
            raise CorruptLogError(f"malformed metaData action{_in(source)}") from None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id}
        if self.name is not None:
            out["name"] = self.name
        if self.description is not None:
            out["description"] = self.description
        out["format"] = {"provider": self.format_provider, "options": dict(self.format_options)}
        out["schemaString"] = self.schema_string
        out["partitionColumns"] = list(self.partition_columns)
        out["configuration"] = dict(self.configuration)
        if self.created_time is not None:
            out["createdTime"] = self.created_time
        return out


def _in(source: str) -> str:
    return f" in {source}" if source else ""


def _string_list(value: Any, action: str, name: str, source: str) -> tuple[str, ...] | None:
    """A JSON array of strings (None when absent); a string, an object or an array with
    other members is a malformed action: never split into characters or ignored."""
    if value is None:
        return None
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise CorruptLogError(
        f"malformed {action}{_in(source)}: {name} must be an array of strings, got {_short_repr(value)}"
    )


def _short_repr(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


# --------------------------------------------------------------------------- JSON parsing
_THREADS = (os.cpu_count() or 1) > 2  # on two cores, threads cost more than they give


def count_actions(data: bytes) -> int:
    """An upper bound of the actions (lines) a newline-delimited JSON file holds: exact
    unless it has blank lines, which callers detect by comparing with the parsed rows."""
    if not data:
        return 0
    return data.count(b"\n") + (0 if data.endswith(b"\n") else 1)


def read_json_actions(data: bytes, schema: pa.Schema, *, source: str = "") -> pa.Table:
    """Parses newline-delimited JSON actions with ``schema`` (unknown keys ignored)."""
    if not data.strip():
        return schema.empty_table()
    if not data.isascii():
        try:  # Arrow's JSON reader does not validate UTF-8: bad bytes would end up in strings
            bytes(data).decode("utf-8")
        except UnicodeDecodeError:
            return _read_json_actions_slow(data, schema, source)  # names the bad line
    try:
        return pj.read_json(
            io.BytesIO(data),
            read_options=pj.ReadOptions(
                use_threads=_THREADS and len(data) > (32 << 20), block_size=max(1 << 20, min(len(data) + 1, 1 << 30))
            ),
            parse_options=pj.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore"),
        )
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return _read_json_actions_slow(data, schema, source)


def read_json_lines(data: bytes, schema: pa.Schema, *, source: str = "") -> pa.Table:
    """Like :func:`read_json_actions`, but strictly one JSON object per line (slower):
    any other line raises :class:`CorruptLogError` naming it."""
    return _read_json_actions_slow(data, schema, source)


def _read_json_actions_slow(data: bytes, schema: pa.Schema, source: str) -> pa.Table:
    rows = []
    for number, line in enumerate(data.splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except ValueError as exc:
            raise CorruptLogError(f"line {number}{_in(source)} is not valid JSON: {exc}") from None
        if not isinstance(obj, dict):
            raise CorruptLogError(f"line {number}{_in(source)} is not a JSON object")
        rows.append({name: _conform(obj.get(name), schema.field(name).type, source, number) for name in schema.names})
    try:
        return pa.Table.from_pylist(rows, schema=schema)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, OverflowError) as exc:
        raise CorruptLogError(f"malformed action{_in(source)}: {exc}") from None


def _conform(value: Any, dtype: pa.DataType, source: str, line: int) -> Any:
    """Drops unknown fields and coerces scalars the way a JSON reader would."""
    if value is None:
        return None
    if pa.types.is_struct(dtype):
        if not isinstance(value, dict):
            raise CorruptLogError(f"line {line}{_in(source)}: expected an object, got {value!r}")
        return {f.name: _conform(value.get(f.name), f.type, source, line) for f in dtype}
    if pa.types.is_string(dtype):
        if isinstance(value, (dict, list)):
            return json.dumps(value)
        if isinstance(value, bool):
            return "true" if value else "false"
        return str(value)
    if pa.types.is_integer(dtype):
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            raise CorruptLogError(f"line {line}{_in(source)}: expected an integer, got {value!r}")
        try:
            as_int = int(value)
        except (ValueError, OverflowError):  # "abc", NaN, Infinity
            raise CorruptLogError(f"line {line}{_in(source)}: expected an integer, got {value!r}") from None
        if isinstance(value, float) and as_int != value:
            raise CorruptLogError(f"line {line}{_in(source)}: expected an integer, got {value!r}")
        return as_int
    if pa.types.is_boolean(dtype):
        if not isinstance(value, bool):
            raise CorruptLogError(f"line {line}{_in(source)}: expected a boolean, got {value!r}")
        return value
    return value


def parse_special_lines(data: bytes, keys: Sequence[bytes], *, source: str = "") -> list[dict[str, Any]]:
    """The JSON objects of the lines that mention one of ``keys`` (protocol, metaData...)."""
    if not any(k in data for k in keys):
        return []
    out = []
    for number, line in enumerate(data.splitlines(), 1):
        if any(k in line for k in keys):
            try:
                obj = json.loads(line)
            except ValueError as exc:
                raise CorruptLogError(f"line {number}{_in(source)} is not valid JSON: {exc}") from None
            if isinstance(obj, dict):
                out.append(obj)
    return out


def first_action(data: bytes, *, source: str = "") -> dict[str, Any]:
    line = data.split(b"\n", 1)[0]
    try:
        obj = json.loads(line)
    except ValueError:
        raise CorruptLogError(f"the first line{_in(source)} is not valid JSON") from None
    return obj if isinstance(obj, dict) else {}
