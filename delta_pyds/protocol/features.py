"""Table features: one declarative table of every feature the protocol defines and what
this package supports, and one gate per operation (read, write, change data feed).

Guarantees: ``check_read`` / ``check_write`` raise :class:`UnsupportedFeatureError`
naming every feature (or protocol version) that blocks the operation, and return
silently otherwise. A feature not in the table is unknown and therefore unsupported.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from delta_pyds.errors import CorruptLogError, UnsupportedFeatureError
from delta_pyds.protocol.actions import Protocol

MAX_READER_VERSION = 3
MAX_WRITER_VERSION = 7


@dataclass(frozen=True)
class Feature:
    name: str
    reader: bool  # a reader-writer feature (listed in readerFeatures too)
    read: bool  # reads of tables with this feature are supported
    write: bool  # writes to tables with this feature are supported
    note: str = ""


# name, reader+writer?, read ok, write ok, note
FEATURES: dict[str, Feature] = {
    f.name: f
    for f in [
        Feature("appendOnly", False, True, True),
        Feature("invariants", False, True, True),
        Feature("checkConstraints", False, True, True),
        Feature("changeDataFeed", False, True, True),
        Feature("generatedColumns", False, True, True),
        Feature("identityColumns", False, True, True, "values generated; streaming sink refused"),
        Feature("columnMapping", True, True, True),
        Feature("deletionVectors", True, True, True),
        Feature("rowTracking", False, True, True),
        Feature("timestampNtz", True, True, True),
        Feature("domainMetadata", False, True, True),
        Feature("v2Checkpoint", True, True, True),
        Feature("vacuumProtocolCheck", True, True, True),
        Feature("typeWidening", True, True, True),
        Feature("typeWidening-preview", True, True, True),
        Feature("inCommitTimestamp", False, True, True),
        Feature("clustering", False, True, True),
        Feature("icebergCompatV1", False, True, False),
        Feature("icebergCompatV2", False, True, False),
        Feature("icebergWriterCompatV1", False, True, False),
        Feature("allowColumnDefaults", False, True, True),
        Feature("checkpointProtection", False, True, True),
        Feature("materializePartitionColumns", False, True, True),
        Feature("variantType", True, True, True),
        Feature("variantType-preview", True, True, True),
        Feature("variantShredding", True, True, True),
        Feature("variantShredding-preview", True, True, True),
        # writer-only (the collations RFC; delta-spark's golden tables): binary statistics are allowed
        Feature("collations", False, True, True, "collations kept in the schema; binary statistics only"),
        Feature("collations-preview", False, True, True, "collations kept in the schema; binary statistics only"),
        Feature("catalogManaged", True, False, False, "catalog-managed tables need the catalog to commit"),
        Feature("catalogOwned-preview", True, False, False, "catalog-managed tables need the catalog to commit"),
        Feature("geospatial", True, False, False),
    ]
}

# Features implied by legacy protocol versions (before table features).
_LEGACY_WRITER = {
    2: ("appendOnly", "invariants"),
    3: ("checkConstraints",),
    4: ("changeDataFeed", "generatedColumns"),
    5: ("columnMapping",),
    6: ("identityColumns",),
}


def reader_features(protocol: Protocol) -> tuple[str, ...]:
    """The reader features a table's protocol enables."""
    if protocol.min_reader_version >= 3:
        return tuple(protocol.reader_features or ())
    if protocol.min_reader_version == 2:
        return ("columnMapping",)
    return ()


def writer_features(protocol: Protocol) -> tuple[str, ...]:
    """The writer features a table's protocol enables (supersets reader features)."""
    if protocol.min_writer_version >= 7:
        return tuple(protocol.writer_features or ())
    out: list[str] = []
    for version, names in _LEGACY_WRITER.items():
        if protocol.min_writer_version >= version:
            out.extend(names)
    return tuple(out)


def is_enabled(protocol: Protocol, name: str) -> bool:
    return name in reader_features(protocol) or name in writer_features(protocol)


def column_mapping_mode(protocol: Protocol, configuration: Mapping[str, str]) -> str:
    """The column mapping mode readers apply: ``delta.columnMapping.mode`` (``none``,
    ``name``, ``id``) when the protocol supports ``columnMapping``, else ``none`` whatever the
    configuration says (delta-rs writes such tables: logical names in files and partition
    values). Every reader (scan, change feed, streams) keys partition values by this rule."""
    mode = (configuration.get("delta.columnMapping.mode") or "none").lower()
    if mode not in ("none", "name", "id"):
        raise CorruptLogError(f"unknown column mapping mode {mode!r}")
    if mode != "none" and not is_enabled(protocol, "columnMapping"):
        return "none"
    return mode


def check_read(protocol: Protocol) -> None:
    if protocol.min_reader_version > MAX_READER_VERSION or protocol.min_reader_version < 1:
        raise UnsupportedFeatureError(
            f"the table requires reader version {protocol.min_reader_version}; "
            f"delta_pyds reads versions 1 to {MAX_READER_VERSION}"
        )
    blocked = [n for n in reader_features(protocol) if not (n in FEATURES and FEATURES[n].read)]
    if blocked:
        raise UnsupportedFeatureError(_describe("read", blocked), tuple(blocked))


def check_write(protocol: Protocol) -> None:
    if protocol.min_writer_version > MAX_WRITER_VERSION or protocol.min_writer_version < 1:
        raise UnsupportedFeatureError(
            f"the table requires writer version {protocol.min_writer_version}; "
            f"delta_pyds writes versions 1 to {MAX_WRITER_VERSION}"
        )
    check_read(protocol)
    names = list(dict.fromkeys(writer_features(protocol) + reader_features(protocol)))
    blocked = [n for n in names if not (n in FEATURES and FEATURES[n].write)]
    if blocked:
        raise UnsupportedFeatureError(_describe("write to", blocked), tuple(blocked))


def _describe(verb: str, names: list[str]) -> str:
    parts = []
    for n in names:
        f = FEATURES.get(n)
        parts.append(f"{n} ({f.note})" if f and f.note else (n if f else f"{n} (unknown feature)"))
    plural = "features" if len(names) > 1 else "feature"
    return f"cannot {verb} this table: delta_pyds does not support the table {plural} " + ", ".join(parts)
