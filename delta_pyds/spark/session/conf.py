"""The Spark session confs this package reads of its own (``spark.pydelta.*``) and the
``spark.databricks.delta.*`` ones it honours as delta-spark does, with their readers.

Guarantees:

* :data:`CONFS` names each ``spark.pydelta.*`` and ``spark.databricks.delta.*`` conf the
  package reads, with its default and what it accepts, except delta-spark's auto compaction
  family (``spark.databricks.delta.autoCompact.*``), whose names and defaults live with the
  settings they make (:data:`delta_pyds.operations.auto_compact.CONF_KEYS`); docs/dml.md
  documents every one of them (tests/test_structure.py checks the names);
* Spark's own confs the package follows (the session time zone, case sensitivity, the
  catalog implementation, the SQL dialect's switches, the partition overwrite mode, the
  default source) are read where that behaviour is followed, each by a named constant;
* a session that cannot answer (a Spark Connect server refusing ``conf.get``) reads as
  unset: the default applies;
* a value that does not parse raises :class:`~delta_pyds.errors.SettingValueError` (a
  ``ValueError``) naming the conf, what it accepts and what it holds; byte counts read
  the same way everywhere (:func:`byte_count`), negative counts as 0;
* reading never changes the session."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from delta_pyds.errors import SettingValueError
from delta_pyds.write.options import AUTO_MERGE_OPTION

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

# the pydelta confs
DML_ENGINE_CONF = "spark.pydelta.dml.engine"
INLINE_DV_CONF = "spark.pydelta.deletionVectors.inlineMaxBytes"
KEY_PRUNING_CONF = "spark.pydelta.merge.sourceKeyPruning.minTargetBytes"
PIN_TARGET_CONF = "spark.pydelta.merge.pinTarget.maxBytes"
PIN_CHANGED_CONF = "spark.pydelta.merge.pinChangedRows.maxBytes"
LOCAL_MAX_BYTES_CONF = "spark.pydelta.optimize.localMaxBytes"
SINGLE_PASS_CONF = "spark.pydelta.dml.singlePassMaxBytes"
# delta-spark's
RETENTION_CHECK_CONF = "spark.databricks.delta.retentionDurationCheck.enabled"
OPTIMIZE_WRITE_CONF = "spark.databricks.delta.optimizeWrite.enabled"
BIN_SIZE_CONF = "spark.databricks.delta.optimizeWrite.binSize"
AUTO_MERGE_CONF = AUTO_MERGE_OPTION  # spark.databricks.delta.schema.autoMerge.enabled
# Spark's
ADVISORY_CONF = "spark.sql.adaptive.advisoryPartitionSizeInBytes"

DML_ENGINES = ("auto", "native", "python")

CONFS: dict[str, tuple[str, str]] = {
    DML_ENGINE_CONF: ("auto", "auto | native | python: the engine of DML's row work"),
    INLINE_DV_CONF: ("64", "bytes: deletion vectors up to this size are stored inline in the log (0: never)"),
    KEY_PRUNING_CONF: ("16777216", "bytes: candidate files from which MERGE prunes by the source's keys"),
    PIN_TARGET_CONF: ("16777216", "bytes: a copy-on-write MERGE pins every candidate row up to this size"),
    PIN_CHANGED_CONF: ("1073741824", "bytes: a deletion-vector MERGE pins the changed rows up to this size"),
    LOCAL_MAX_BYTES_CONF: ("268435456", "bytes: OPTIMIZE rewrites up to this much in the driver's process"),
    SINGLE_PASS_CONF: (
        "16777216",
        "bytes: a copy-on-write DELETE/UPDATE/MERGE of candidates up to this size runs one job (0: off)",
    ),
    RETENTION_CHECK_CONF: ("true", "true | false: VACUUM refuses a retention below the table's"),
    OPTIMIZE_WRITE_CONF: ("(table property)", "true | false: optimized writes, over the table property"),
    BIN_SIZE_CONF: ("512", "MiB (or a size with k/m/g): the shuffle bin of an optimized write"),
    AUTO_MERGE_CONF: (
        "false",
        "true | false: schema evolution of appends and overwrites (as mergeSchema=true, which an explicit "
        "mergeSchema overrides), of MERGE (as WITH SCHEMA EVOLUTION) and of INSERT by position (extra columns)",
    ),
}

_UNITS = {"": 1 << 20, "b": 1, "k": 1 << 10, "kb": 1 << 10, "m": 1 << 20, "mb": 1 << 20, "g": 1 << 30, "gb": 1 << 30}


def raw(spark: SparkSession, name: str) -> str | None:
    """The conf's text, None when unset (or when the session cannot answer)."""
    try:
        value = spark.conf.get(name, None)
    except Exception:  # a Spark Connect server refusing the key
        return None
    return None if value is None else str(value)


def byte_count(spark: SparkSession, name: str, default: int) -> int:
    """A number of bytes (``default`` when unset or empty; negative as 0)."""
    text = raw(spark, name)
    if text is None or not text.strip():
        return default
    try:
        return max(0, int(text.strip()))
    except ValueError:
        raise SettingValueError(f"{name}: expected a number of bytes, got {text!r}") from None


def auto_merge(spark: SparkSession) -> bool:
    """Whether delta-spark's schema evolution switch (:data:`AUTO_MERGE_CONF`) is on."""
    return bool(flag(spark, AUTO_MERGE_CONF, False))


def flag(spark: SparkSession, name: str, default: bool | None) -> bool | None:
    """``true`` / ``false`` in any case (``default`` when unset)."""
    text = raw(spark, name)
    if text is None:
        return default
    value = text.strip().lower()
    if value not in ("true", "false"):
        raise SettingValueError(f"{name} must be true or false; found {text!r}")
    return value == "true"


def choice(spark: SparkSession, name: str, choices: tuple[str, ...], default: str) -> str:
    """One of ``choices`` in any case (``default`` when unset or empty)."""
    text = raw(spark, name)
    value = (text or default).strip().lower()
    if value not in choices:
        raise SettingValueError(f"{name}: expected one of {', '.join(choices)}, got {text!r}")
    return value


def size_mib(spark: SparkSession, name: str, default_mib: int) -> int:
    """A positive size in bytes written as MiB (``512``) or with a unit (``64m``, ``1g``,
    ``100kb``, ``1024b``), as delta-spark's size confs."""
    text = raw(spark, name)
    if text is None:
        return default_mib << 20
    m = re.fullmatch(r"\s*(\d+)\s*([a-zA-Z]*)\s*", text)
    if m is None or m.group(2).lower() not in _UNITS or int(m.group(1)) <= 0:
        raise SettingValueError(f"{name} must be a positive size in MiB (or with a k/m/g suffix); found {text!r}")
    return int(m.group(1)) * _UNITS[m.group(2).lower()]
