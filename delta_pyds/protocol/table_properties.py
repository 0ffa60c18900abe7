"""Delta table properties (``delta.*`` keys of ``metaData.configuration``) and the
protocol a table's metadata requires.

Guarantees:

* :func:`canonical_property` restores the canonical spelling of a property key that
  Spark lowercased (``delta.appendonly`` -> ``delta.appendOnly``) and raises
  ``ValueError`` for an unknown ``delta.*`` key, listing the known ones;
* :func:`validate_properties` raises ``ValueError`` naming the property and the accepted
  values for a value this package would misinterpret, and ``UnsupportedFeatureError``
  (delta-spark's ``DELTA_UNIVERSAL_FORMAT_VIOLATION``) for UniForm
  (``delta.universalFormat.enabledFormats`` naming any format): no Iceberg or Hudi
  metadata is written, and the IcebergCompat features UniForm needs are not writable;
* :func:`required_protocol` returns the smallest protocol that is at least the current
  one and supports every feature the schema and configuration use (legacy versions
  when they suffice, reader 3 / writer 7 with explicit feature lists otherwise); it
  never drops a feature.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from delta_pyds.errors import SettingValueError, UnsupportedFeatureError
from delta_pyds.protocol.actions import Protocol
from delta_pyds.protocol.features import FEATURES, reader_features, writer_features
from delta_pyds.protocol.schema import ArrayType, DataType, MapType, PrimitiveType, StructField, StructType

APPEND_ONLY = "delta.appendOnly"
CHECKPOINT_INTERVAL = "delta.checkpointInterval"
WRITE_STATS_AS_JSON = "delta.checkpoint.writeStatsAsJson"
WRITE_STATS_AS_STRUCT = "delta.checkpoint.writeStatsAsStruct"
COLUMN_MAPPING_MODE = "delta.columnMapping.mode"
COLUMN_MAPPING_MAX_ID = "delta.columnMapping.maxColumnId"
NUM_INDEXED_COLS = "delta.dataSkippingNumIndexedCols"
STATS_COLUMNS = "delta.dataSkippingStatsColumns"
DELETED_FILE_RETENTION = "delta.deletedFileRetentionDuration"
ENABLE_CDF = "delta.enableChangeDataFeed"
ENABLE_DV = "delta.enableDeletionVectors"
ENABLE_ROW_TRACKING = "delta.enableRowTracking"
ROW_TRACKING_SUSPENDED = "delta.rowTrackingSuspended"
ROW_ID_COLUMN = "delta.rowTracking.materializedRowIdColumnName"
ROW_COMMIT_VERSION_COLUMN = "delta.rowTracking.materializedRowCommitVersionColumnName"
ENABLE_ICT = "delta.enableInCommitTimestamps"
ICT_ENABLEMENT_VERSION = "delta.inCommitTimestampEnablementVersion"
ICT_ENABLEMENT_TIMESTAMP = "delta.inCommitTimestampEnablementTimestamp"
ISOLATION_LEVEL = "delta.isolationLevel"
COMPRESSION_CODEC = "delta.parquet.compression.codec"
ENABLE_TYPE_WIDENING = "delta.enableTypeWidening"
ENABLE_VARIANT_SHREDDING = "delta.enableVariantShredding"
UNIVERSAL_FORMATS = "delta.universalFormat.enabledFormats"
MIN_READER_VERSION = "delta.minReaderVersion"
MIN_WRITER_VERSION = "delta.minWriterVersion"
CONSTRAINT_PREFIX = "delta.constraints."
FEATURE_PREFIX = "delta.feature."

_KNOWN = [
    APPEND_ONLY,
    CHECKPOINT_INTERVAL,
    WRITE_STATS_AS_JSON,
    WRITE_STATS_AS_STRUCT,
    "delta.checkpointRetentionDuration",
    COLUMN_MAPPING_MODE,
    COLUMN_MAPPING_MAX_ID,
    NUM_INDEXED_COLS,
    STATS_COLUMNS,
    DELETED_FILE_RETENTION,
    ENABLE_CDF,
    ENABLE_DV,
    ENABLE_ROW_TRACKING,
    ROW_TRACKING_SUSPENDED,
    ROW_ID_COLUMN,
    ROW_COMMIT_VERSION_COLUMN,
    ENABLE_ICT,
    ICT_ENABLEMENT_VERSION,
    ICT_ENABLEMENT_TIMESTAMP,
    ISOLATION_LEVEL,
    "delta.logRetentionDuration",
    "delta.enableExpiredLogCleanup",
    MIN_READER_VERSION,
    MIN_WRITER_VERSION,
    "delta.randomizeFilePrefixes",
    "delta.randomPrefixLength",
    "delta.setTransactionRetentionDuration",
    "delta.targetFileSize",
    "delta.tuneFileSizesForRewrites",
    "delta.autoOptimize.optimizeWrite",
    "delta.autoOptimize.autoCompact",
    ENABLE_TYPE_WIDENING,
    "delta.enableIcebergCompatV1",
    "delta.enableIcebergCompatV2",
    UNIVERSAL_FORMATS,
    COMPRESSION_CODEC,
    "delta.parquet.format.version",
    ENABLE_VARIANT_SHREDDING,
    "delta.checkpointPolicy",
    "delta.compatibility.symlinkFormatManifest.enabled",
    "delta.sampleRetentionDuration",
    "delta.checkpoint.partSize",
    "delta.dataSkippingStringPrefixLength",
]
KNOWN_PROPERTIES = {k.lower(): k for k in _KNOWN}

# properties that configure the protocol at creation and are not stored in the metadata
PROTOCOL_PROPERTIES = (MIN_READER_VERSION, MIN_WRITER_VERSION)

_BOOLEAN = {
    APPEND_ONLY,
    WRITE_STATS_AS_JSON,
    WRITE_STATS_AS_STRUCT,
    ENABLE_CDF,
    ENABLE_DV,
    ENABLE_ROW_TRACKING,
    ROW_TRACKING_SUSPENDED,
    ENABLE_ICT,
    ENABLE_TYPE_WIDENING,
    ENABLE_VARIANT_SHREDDING,
    "delta.enableExpiredLogCleanup",
    "delta.randomizeFilePrefixes",
}


def canonical_property(key: str) -> str:
    """The canonical spelling of a ``delta.*`` table property key."""
    lowered = key.lower()
    if lowered in KNOWN_PROPERTIES:
        return KNOWN_PROPERTIES[lowered]
    if lowered.startswith(CONSTRAINT_PREFIX):
        name = key[len(CONSTRAINT_PREFIX) :]
        if not name:
            raise SettingValueError(f"table property {key!r}: a constraint needs a name")
        return CONSTRAINT_PREFIX + name.lower()
    if lowered.startswith(FEATURE_PREFIX):
        name = key[len(FEATURE_PREFIX) :]
        for f in FEATURES:
            if f.lower() == name.lower():
                return FEATURE_PREFIX + f
        raise SettingValueError(
            f"table property {key!r}: unknown table feature {name!r}; known: " + ", ".join(sorted(FEATURES))
        )
    raise SettingValueError(
        f"unknown table property {key!r}; known delta.* properties: "
        + ", ".join(sorted(_KNOWN))
        + ", delta.constraints.<name>, delta.feature.<name>"
    )


def is_true(configuration: Mapping[str, str], key: str, default: bool = False) -> bool:
    value = configuration.get(key)
    if value is None:
        return default
    return str(value).strip().lower() == "true"


def int_property(configuration: Mapping[str, str], key: str, default: int) -> int:
    value = configuration.get(key)
    if value is None or str(value).strip() == "":
        return default
    try:
        return int(str(value).strip())
    except ValueError:
        return default


def _refuse_uniform(value: str) -> None:
    """UniForm cannot be kept: refused by delta-spark's error class, naming the format."""
    formats = [f.strip().lower() for f in str(value).split(",") if f.strip()]
    if not formats:
        return
    name = "iceberg" if "iceberg" in formats else formats[0]
    raise UnsupportedFeatureError(
        f"[DELTA_UNIVERSAL_FORMAT_VIOLATION] The validation of Universal Format ({name}) has failed: "
        f"{UNIVERSAL_FORMATS}={value!r} asks for {name.capitalize()} metadata, which delta_pyds does not "
        "write; UniForm Iceberg requires IcebergCompat (IcebergCompatV1 or IcebergCompatV2) to be enabled, "
        "and delta_pyds does not support writing those table features. Write the table with delta-spark "
        "to use UniForm, or leave the property unset",
        ("icebergCompatV2",) if name == "iceberg" else (),
    )


def validate_properties(props: Mapping[str, str]) -> None:
    for key, value in props.items():
        text = str(value).strip()
        if key == UNIVERSAL_FORMATS:
            _refuse_uniform(text)
        if key in _BOOLEAN and text.lower() not in ("true", "false"):
            raise SettingValueError(f"table property {key}: expected true or false, got {value!r}")
        if key == CHECKPOINT_INTERVAL and not (text.isdigit() and int(text) > 0):
            raise SettingValueError(f"table property {key}: expected a positive integer, got {value!r}")
        if key == NUM_INDEXED_COLS and not re.fullmatch(r"-?\d+", text) or key == NUM_INDEXED_COLS and int(text) < -1:
            raise SettingValueError(f"table property {key}: expected an integer >= -1, got {value!r}")
        if key == COLUMN_MAPPING_MODE and text.lower() not in ("none", "name", "id"):
            raise SettingValueError(f"table property {key}: expected none, name or id, got {value!r}")
        if key == ISOLATION_LEVEL and text not in ("Serializable", "WriteSerializable"):
            raise SettingValueError(f"table property {key}: expected Serializable or WriteSerializable, got {value!r}")
        if key in PROTOCOL_PROPERTIES and not (text.isdigit() and 1 <= int(text) <= 7):
            raise SettingValueError(f"table property {key}: expected a protocol version, got {value!r}")
        if key == COMPRESSION_CODEC and text.lower() not in (
            "uncompressed",
            "none",
            "snappy",
            "gzip",
            "lz4",
            "lz4_raw",
            "zstd",
        ):
            raise SettingValueError(
                f"table property {key}: expected uncompressed, snappy, gzip, lz4_raw or zstd, got {value!r}"
            )
        if key.startswith(FEATURE_PREFIX) and text.lower() not in ("supported", "enabled"):
            raise SettingValueError(f"table property {key}: expected supported, got {value!r}")
        if key in (
            DELETED_FILE_RETENTION,
            "delta.logRetentionDuration",
            "delta.setTransactionRetentionDuration",
            "delta.checkpointRetentionDuration",
        ):
            parse_interval_ms(text, key)


_INTERVAL_RE = re.compile(r"^(?:interval\s+)?(\d+)\s*([a-z]+)$", re.IGNORECASE)
_INTERVAL_UNITS = {
    "millisecond": 1,
    "milliseconds": 1,
    "ms": 1,
    "second": 1000,
    "seconds": 1000,
    "s": 1000,
    "minute": 60_000,
    "minutes": 60_000,
    "hour": 3_600_000,
    "hours": 3_600_000,
    "day": 86_400_000,
    "days": 86_400_000,
    "week": 604_800_000,
    "weeks": 604_800_000,
}


def parse_interval_ms(text: str, key: str = "interval") -> int:
    """``"interval 1 week"`` / ``"7 days"`` -> milliseconds."""
    m = _INTERVAL_RE.match(str(text).strip())
    if not m or m.group(2).lower() not in _INTERVAL_UNITS:
        raise SettingValueError(f"table property {key}: expected an interval such as 'interval 7 days', got {text!r}")
    return int(m.group(1)) * _INTERVAL_UNITS[m.group(2).lower()]


def deleted_file_retention_ms(configuration: Mapping[str, str]) -> int:
    value = configuration.get(DELETED_FILE_RETENTION)
    try:
        return parse_interval_ms(value, DELETED_FILE_RETENTION) if value else 7 * 86_400_000
    except ValueError:
        return 7 * 86_400_000


# ------------------------------------------------------------------------- protocol
_LEGACY_WRITER_VERSION = {
    "appendOnly": 2,
    "invariants": 2,
    "checkConstraints": 3,
    "changeDataFeed": 4,
    "generatedColumns": 4,
    "columnMapping": 5,
    "identityColumns": 6,
}


def _walk_fields(dtype: DataType) -> Iterator[StructField]:
    if isinstance(dtype, StructType):
        for f in dtype.fields:
            yield f
            yield from _walk_fields(f.type)
    elif isinstance(dtype, ArrayType):
        yield from _walk_fields(dtype.element_type)
    elif isinstance(dtype, MapType):
        yield from _walk_fields(dtype.key_type)
        yield from _walk_fields(dtype.value_type)


def _walk_types(dtype: DataType) -> Iterator[DataType]:
    yield dtype
    if isinstance(dtype, StructType):
        for f in dtype.fields:
            yield from _walk_types(f.type)
    elif isinstance(dtype, ArrayType):
        yield from _walk_types(dtype.element_type)
    elif isinstance(dtype, MapType):
        yield from _walk_types(dtype.key_type)
        yield from _walk_types(dtype.value_type)


# a boolean property -> the features it needs when it is "true"
_ENABLING_PROPERTIES: tuple[tuple[str, tuple[str, ...]], ...] = (
    (APPEND_ONLY, ("appendOnly",)),
    (ENABLE_CDF, ("changeDataFeed",)),
    (ENABLE_DV, ("deletionVectors",)),
    (ENABLE_ROW_TRACKING, ("rowTracking", "domainMetadata")),
    (ENABLE_ICT, ("inCommitTimestamp",)),
    (ENABLE_TYPE_WIDENING, ("typeWidening",)),
    (ENABLE_VARIANT_SHREDDING, ("variantShredding", "variantType")),
    ("delta.enableIcebergCompatV2", ("icebergCompatV2",)),
    ("delta.enableIcebergCompatV1", ("icebergCompatV1",)),
)


def features_in_use(schema: StructType, configuration: Mapping[str, str]) -> set[str]:
    """Table features the schema and configuration need (by the protocol's rules): the union
    of :func:`_configuration_features` and :func:`_schema_features`."""
    return _configuration_features(configuration) | _schema_features(schema)


def _configuration_features(conf: Mapping[str, str]) -> set[str]:
    """The features the table properties need: the enabling properties set to true
    (:data:`_ENABLING_PROPERTIES`), CHECK constraints, column mapping ``name`` / ``id``, the
    ``v2`` checkpoint policy, and every feature asked for by name (``delta.feature.<name>``)."""
    used: set[str] = set()
    for key, features in _ENABLING_PROPERTIES:
        if is_true(conf, key):
            used.update(features)
    if any(k.startswith(CONSTRAINT_PREFIX) for k in conf):
        used.add("checkConstraints")
    if (conf.get(COLUMN_MAPPING_MODE) or "none").lower() in ("name", "id"):
        used.add("columnMapping")
    if str(conf.get("delta.checkpointPolicy", "")).lower() == "v2":
        used.add("v2Checkpoint")
    for key in conf:
        if key.startswith(FEATURE_PREFIX):
            used.add(key[len(FEATURE_PREFIX) :])
    return used


def _schema_features(schema: StructType) -> set[str]:
    """The features the schema needs: those its fields' metadata implies
    (:func:`_field_features`), ``timestampNtz`` and ``variantType`` for those types anywhere."""
    used: set[str] = set()
    for f in _walk_fields(schema):
        used |= _field_features(f.metadata or {})
    for t in _walk_types(schema):
        if isinstance(t, PrimitiveType) and t.name == "timestamp_ntz":
            used.add("timestampNtz")
        if isinstance(t, PrimitiveType) and t.name == "variant":
            used.add("variantType")
    return used


def _field_features(meta: Mapping[str, Any]) -> set[str]:
    """The features one field's metadata needs: invariants, generated and identity columns,
    defaults, and non-binary collations (with domainMetadata, as the collations RFC requires)."""
    used: set[str] = set()
    if "delta.invariants" in meta:
        used.add("invariants")
    if "delta.generationExpression" in meta:
        used.add("generatedColumns")
    if any(k.startswith("delta.identity.") for k in meta):
        used.add("identityColumns")
    if "CURRENT_DEFAULT" in meta:
        used.add("allowColumnDefaults")
    collations = meta.get("__COLLATIONS")
    if isinstance(collations, dict) and any(not str(v).upper().endswith("UTF8_BINARY") for v in collations.values()):
        used.update(("collations", "domainMetadata"))
    return used


def required_protocol(
    schema: StructType,
    configuration: Mapping[str, str],
    current: Protocol | None = None,
    *,
    min_reader: int | None = None,
    min_writer: int | None = None,
    extra_features: Iterable[str] = (),
) -> Protocol:
    """The protocol a table with this schema and configuration needs, never below
    ``current`` (``min_reader`` / ``min_writer``: explicitly requested versions;
    ``extra_features``: features the write needs beyond schema and configuration)."""
    used = features_in_use(schema, configuration) | set(extra_features)
    if current is not None and "collations-preview" in writer_features(current):
        used.discard("collations")  # delta-spark's earlier name of the same feature: kept, not doubled
    cur_reader = current.min_reader_version if current else 1
    cur_writer = current.min_writer_version if current else 2
    cur_features = set(writer_features(current)) | set(reader_features(current)) if current else set()
    needed = used | cur_features
    want_reader = max(cur_reader, min_reader or 1)
    want_writer = max(cur_writer, min_writer or 1)
    # a feature asked for by name (delta.feature.<name>) that the protocol does not support yet
    # upgrades to table features, as delta-spark's addFeatureSupport / SET TBLPROPERTIES do: a
    # legacy version would also imply features nobody asked for (writer 4: generatedColumns)
    asked = {k[len(FEATURE_PREFIX) :] for k in configuration if k.startswith(FEATURE_PREFIX)} - cur_features
    legacy_only = (
        not asked
        and all(f in _LEGACY_WRITER_VERSION for f in used)
        and cur_writer < 7
        and want_writer < 7
        and want_reader < 3
    )
    if legacy_only:
        writer = max([want_writer] + [_LEGACY_WRITER_VERSION[f] for f in used])
        reader = max(want_reader, 2 if "columnMapping" in used else 1)  # legacy writer 5+ implies it, unused
        return Protocol(reader, writer)
    # table features: list every feature in use and every feature the current protocol implied
    writer_list = sorted(needed, key=_feature_order)
    rw = [f for f in writer_list if f in FEATURES and FEATURES[f].reader]
    if "invariants" not in writer_list and cur_writer < 7:
        # legacy writer versions >= 2 implied appendOnly and invariants; keep them listed
        writer_list = sorted(
            set(writer_list) | set(writer_features(Protocol(1, max(cur_writer, 2)))), key=_feature_order
        )
    if rw or want_reader >= 3:
        reader_list = sorted(set(rw) | (set(reader_features(current)) if current else set()), key=_feature_order)
        return Protocol(3, 7, tuple(reader_list), tuple(writer_list))
    return Protocol(max(want_reader, 2 if "columnMapping" in needed else 1), 7, None, tuple(writer_list))


_ORDER = {name: i for i, name in enumerate(FEATURES)}


def _feature_order(name: str) -> tuple[int, str]:
    return (_ORDER.get(name, len(_ORDER)), name)


def constraints_of(configuration: Mapping[str, str]) -> dict[str, str]:
    """CHECK constraints: name -> SQL expression."""
    return {
        k[len(CONSTRAINT_PREFIX) :]: v
        for k, v in configuration.items()
        if k.startswith(CONSTRAINT_PREFIX) and v is not None
    }
