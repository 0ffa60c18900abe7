"""Clustered tables (the ``clustering`` writer feature, delta-spark's liquid clustering).

A clustered table records its clustering columns in the ``delta.clustering`` metadata
domain as ``{"clusteringColumns": [["a"], ["s", "b"]]}`` — physical names when column
mapping is on. Writers must collect statistics for every clustering column (even beyond
``delta.dataSkippingNumIndexedCols``) and must keep the domain on every commit.

Guarantees: :func:`resolve` validates clustering columns as delta-spark does (they
exist, are leaves of a type with min/max statistics, at most four, none repeated) and
returns their logical paths; :func:`table_clustering` returns the logical paths of an
existing table's clustering columns (None for an unclustered table); :func:`domain_config`
serializes them for the domain. Nothing here needs Spark.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, cast

from delta_pyds.errors import SchemaError
from delta_pyds.protocol.schema import DataType, DecimalType, PrimitiveType, StructField, StructType

CLUSTERING_DOMAIN = "delta.clustering"
MAX_CLUSTERING_COLUMNS = 4

# types with min/max statistics (what delta-spark accepts as clustering columns)
_ELIGIBLE = {"byte", "short", "integer", "long", "float", "double", "date", "timestamp", "timestamp_ntz", "string"}


def _eligible(dtype: DataType) -> bool:
    return isinstance(dtype, DecimalType) or (isinstance(dtype, PrimitiveType) and dtype.name in _ELIGIBLE)


def parse_columns(raw: str) -> list[tuple[str, ...]]:
    """The clusterBy option: ``"a, s.b"``, ``"`x.y`"`` or a JSON list of names -> paths."""
    from delta_pyds.protocol.stats import parse_column_list

    text = raw.strip()
    if text.startswith("["):
        try:
            values = json.loads(text)
        except ValueError:
            values = None
        if isinstance(values, list) and all(isinstance(v, str) for v in values):
            return [p for v in values for p in parse_column_list(v)]
        text = text.strip("[]")
    return parse_column_list(text)


def _field_path(schema: StructType, path: tuple[str, ...]) -> list[StructField] | None:
    fields: list[StructField] = []
    dtype: DataType = schema
    for part in path:
        if not isinstance(dtype, StructType):
            return None
        f = dtype.get(part)  # case-insensitive
        if f is None:
            return None
        fields.append(f)
        dtype = f.type
    return fields


def resolve(
    schema: StructType, names: Sequence[Sequence[str]], partition_columns: Sequence[str] = ()
) -> list[tuple[str, ...]]:
    """Logical paths (as the schema spells them) of the clustering columns ``names``
    (paths, as :func:`parse_columns` returns them)."""
    if partition_columns and names:
        raise SchemaError(
            "option clusterBy: a table cannot be both partitioned (partitionBy "
            f"{', '.join(partition_columns)}) and clustered; give one of them"
        )
    if len(names) > MAX_CLUSTERING_COLUMNS:
        raise SchemaError(
            f"option clusterBy: at most {MAX_CLUSTERING_COLUMNS} clustering columns, "
            f"got {len(names)} ({', '.join(dotted(n) for n in names)})"
        )
    out: list[tuple[str, ...]] = []
    for names_path in names:
        name = dotted(names_path)
        fields = _field_path(schema, tuple(names_path))
        if fields is None:
            raise SchemaError(
                f"option clusterBy: column {name!r} is not in the table's schema (columns: {', '.join(schema.names)})"
            )
        leaf = fields[-1]
        if not _eligible(leaf.type):
            raise SchemaError(
                f"option clusterBy: column {name} has type {leaf.type.simple_string()}; "
                "clustering columns must be numeric, date, timestamp or string columns "
                "(types with min/max statistics)"
            )
        path = tuple(f.name for f in fields)
        if path in out:
            raise SchemaError(f"option clusterBy: column {name} is listed twice")
        out.append(path)
    return out


def domain_config(schema: StructType, paths: Sequence[tuple[str, ...]], mode: str) -> str:
    physical = []
    for path in paths:
        fields = cast("list[StructField]", _field_path(schema, path))  # resolved: in the schema
        physical.append([f.physical_name(mode) for f in fields])
    return json.dumps({"clusteringColumns": physical}, separators=(",", ":"))


def table_clustering(schema: StructType, domains: Mapping[str, Any], mode: str) -> list[tuple[str, ...]] | None:
    """The logical paths of a table's clustering columns, from its ``delta.clustering``
    domain (physical names mapped back through the schema); None when not clustered."""
    raw = domains.get(CLUSTERING_DOMAIN)
    if raw is None:
        return None
    try:
        physical = json.loads(raw).get("clusteringColumns") or []
    except (ValueError, AttributeError):
        return None
    out = []
    for phys_path in physical:
        dtype: DataType = schema
        logical: list[str] = []
        for part in phys_path:
            match = None
            if isinstance(dtype, StructType):
                match = next((f for f in dtype.fields if f.physical_name(mode) == part), None)
            if match is None:
                break
            logical.append(match.name)
            dtype = match.type
        else:
            out.append(tuple(logical))
    return out


def dotted(path: Sequence[str]) -> str:
    return ".".join(f"`{p}`" if "." in p else p for p in path)
