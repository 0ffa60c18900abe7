"""Read options of the ``pydelta`` source: parsing and validation (no Spark needed).

Option names follow delta-spark where it has one (``versionAsOf``,
``timestampAsOf``). Spark lowercases option keys, so every lookup here is
case-insensitive. Bad values raise ``ValueError`` naming the option and what it accepts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from .scan import DEFAULT_MAX_PARTITION_BYTES, DEFAULT_OPEN_COST_BYTES
from .file_reader import DEFAULT_BATCH_ROWS

STORAGE_PREFIX = "storage."

# every read option: lowercased name -> (canonical name, description)
READ_OPTIONS = {
    "path": ("path", "table location (local path or fsspec URL)"),
    "versionasof": ("versionAsOf", "read this table version (integer >= 0)"),
    "timestampasof": ("timestampAsOf", "read the version current at this timestamp"),
    "columns": ("columns", "comma-separated columns to read (projection)"),
    "maxpartitionbytes": ("maxPartitionBytes", "max bytes packed into one Spark task (default 128 MiB)"),
    "opencostinbytes": ("openCostInBytes", "estimated cost of opening a file, in bytes (default 4 MiB)"),
    "parallelism": ("parallelism", "number of cores to spread a scan over (default: driver cores)"),
    "batchrows": ("batchRows", "rows per Arrow batch on executors (default: adaptive, ~64 MiB per batch)"),
    "filterpushdown": ("filterPushdown", "true/false/auto: use Spark's filters for file skipping"),
}


def _get(options: Mapping[str, str], name: str) -> str | None:
    lowered = name.lower()
    for k, v in options.items():
        if k.lower() == lowered:
            return v
    return None


def _int_option(options: Mapping[str, str], name: str, default: int | None, *, minimum: int) -> int | None:
    raw = _get(options, name)
    if raw is None or str(raw).strip() == "":
        return default
    try:
        value = int(str(raw).strip())
    except ValueError:
        raise ValueError(f"option {name}: expected an integer >= {minimum}, got {raw!r}") from None
    if value < minimum:
        raise ValueError(f"option {name}: expected an integer >= {minimum}, got {value}")
    return value


@dataclass(frozen=True)
class ReadOptions:
    path: str
    version: int | None = None
    timestamp: str | None = None
    columns: tuple[str, ...] | None = None
    max_partition_bytes: int = DEFAULT_MAX_PARTITION_BYTES
    open_cost: int = DEFAULT_OPEN_COST_BYTES
    parallelism: int | None = None
    batch_rows: int = DEFAULT_BATCH_ROWS
    filter_pushdown: str = "auto"
    storage_options: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> "ReadOptions":
        path = _get(options, "path")
        if not path:
            raise ValueError("option path: a table location is required, e.g. "
                             "spark.read.format('pydelta').load('/data/table')")
        version = _int_option(options, "versionAsOf", None, minimum=0)
        timestamp = _get(options, "timestampAsOf")
        if version is not None and timestamp:
            raise ValueError("options versionAsOf and timestampAsOf: give at most one")
        raw_cols = _get(options, "columns")
        columns = None
        if raw_cols is not None:
            columns = tuple(c.strip() for c in raw_cols.split(",") if c.strip())
            if not columns:
                raise ValueError("option columns: expected a comma-separated list of column names")
        pushdown = (_get(options, "filterPushdown") or "auto").strip().lower()
        if pushdown not in ("auto", "true", "false"):
            raise ValueError(f"option filterPushdown: expected auto, true or false, got {pushdown!r}")
        storage = {k[len(STORAGE_PREFIX):]: v for k, v in options.items()
                   if k.lower().startswith(STORAGE_PREFIX)}
        return cls(
            path=path, version=version, timestamp=timestamp or None, columns=columns,
            max_partition_bytes=_int_option(options, "maxPartitionBytes", DEFAULT_MAX_PARTITION_BYTES, minimum=1),
            open_cost=_int_option(options, "openCostInBytes", DEFAULT_OPEN_COST_BYTES, minimum=0),
            parallelism=_int_option(options, "parallelism", None, minimum=1),
            batch_rows=_int_option(options, "batchRows", DEFAULT_BATCH_ROWS, minimum=0),
            filter_pushdown=pushdown, storage_options=storage)
