"""Read options of the ``pydelta`` source: parsing and validation (no Spark needed).

Option names follow delta-spark where it has one (``versionAsOf``,
``timestampAsOf``). Spark lowercases option keys, so every lookup here is
case-insensitive. Bad values raise ``ValueError`` naming the option and what it accepts.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import overload

from delta_pyds.errors import OptionValueError
from delta_pyds.read.file_reader import DEFAULT_BATCH_ROWS
from delta_pyds.read.scan import DEFAULT_MAX_PARTITION_BYTES, DEFAULT_OPEN_COST_BYTES

STORAGE_PREFIX = "storage."

# every read option: lowercased name -> (canonical name, description)
READ_OPTIONS = {
    "path": ("path", "table location (local path or fsspec URL)"),
    "versionasof": ("versionAsOf", "read this table version (integer >= 0)"),
    "timestampasof": ("timestampAsOf", "read the version current at this timestamp"),
    "timezone": (
        "timeZone",
        "time zone of timestamps without a UTC offset (timestampAsOf, starting/"
        "endingTimestamp): the session's spark.sql.session.timeZone, which Spark "
        "does not pass to Python data sources",
    ),
    "columns": ("columns", "comma-separated columns to read (projection)"),
    "maxpartitionbytes": ("maxPartitionBytes", "max bytes packed into one Spark task (default 128 MiB)"),
    "opencostinbytes": ("openCostInBytes", "estimated cost of opening a file, in bytes (default 4 MiB)"),
    "parallelism": ("parallelism", "number of cores to spread a scan over (default: driver cores)"),
    "batchrows": ("batchRows", "rows per Arrow batch on executors (default: adaptive, ~64 MiB per batch)"),
    "filterpushdown": ("filterPushdown", "true/false/auto: use Spark's filters for file skipping"),
    "allowexternalpaths": (
        "allowExternalPaths",
        "false: refuse data, deletion vector and sidecar paths outside the table root",
    ),
}


def get_option(options: Mapping[str, str], name: str) -> str | None:
    lowered = name.lower()
    for k, v in options.items():
        if k.lower() == lowered:
            return v
    return None


@overload
def int_option(options: Mapping[str, str], name: str, default: int, *, minimum: int) -> int: ...
@overload
def int_option(options: Mapping[str, str], name: str, default: None, *, minimum: int) -> int | None: ...
def int_option(options: Mapping[str, str], name: str, default: int | None, *, minimum: int) -> int | None:
    raw = get_option(options, name)
    if raw is None or str(raw).strip() == "":
        return default
    try:
        value = int(str(raw).strip())
    except ValueError:
        raise OptionValueError(f"option {name}: expected an integer >= {minimum}, got {raw!r}") from None
    if value < minimum:
        raise OptionValueError(f"option {name}: expected an integer >= {minimum}, got {value}")
    return value


@dataclass(frozen=True)
class ReadOptions:
    path: str
    version: int | None = None
    timestamp: str | None = None
    time_zone: str | None = None  # None: the session's, unknown to a data source
    columns: tuple[str, ...] | None = None
    max_partition_bytes: int = DEFAULT_MAX_PARTITION_BYTES
    open_cost: int = DEFAULT_OPEN_COST_BYTES
    parallelism: int | None = None
    batch_rows: int = DEFAULT_BATCH_ROWS
    filter_pushdown: str = "auto"
    # may hold credentials: never part of repr
    storage_options: Mapping[str, str] = field(default_factory=dict, repr=False)

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> ReadOptions:
        path = get_option(options, "path")
        if not path:
            raise OptionValueError(
                "option path: a table location is required, e.g. "
                "spark.read.format('pydelta').load('/data/table'). Catalog tables "
                "(CREATE TABLE ... USING pydelta) cannot be read: Spark does not pass "
                "their location to Python data sources; use CREATE TEMPORARY VIEW "
                "name USING pydelta OPTIONS (path '...')"
            )
        version = int_option(options, "versionAsOf", None, minimum=0)
        timestamp = get_option(options, "timestampAsOf")
        if version is not None and timestamp:
            raise OptionValueError("options versionAsOf and timestampAsOf: give at most one")
        zone = (get_option(options, "timeZone") or "").strip() or None
        if zone is not None:
            from delta_pyds.log.time_travel import time_zone

            time_zone(zone)  # validates
        raw_cols = get_option(options, "columns")
        columns = None
        if raw_cols is not None:
            columns = tuple(c.strip() for c in raw_cols.split(",") if c.strip())
            if not columns:
                raise OptionValueError("option columns: expected a comma-separated list of column names")
        pushdown = (get_option(options, "filterPushdown") or "auto").strip().lower()
        if pushdown not in ("auto", "true", "false"):
            raise OptionValueError(f"option filterPushdown: expected auto, true or false, got {pushdown!r}")
        storage = {k[len(STORAGE_PREFIX) :]: v for k, v in options.items() if k.lower().startswith(STORAGE_PREFIX)}
        external = get_option(options, "allowExternalPaths")
        if external is not None:  # consumed by Storage (delta_pyds.storage.store), like storage.*
            storage["allowExternalPaths"] = external
        return cls(
            path=path,
            version=version,
            timestamp=timestamp or None,
            time_zone=zone,
            columns=columns,
            max_partition_bytes=int_option(options, "maxPartitionBytes", DEFAULT_MAX_PARTITION_BYTES, minimum=1),
            open_cost=int_option(options, "openCostInBytes", DEFAULT_OPEN_COST_BYTES, minimum=0),
            parallelism=int_option(options, "parallelism", None, minimum=1),
            batch_rows=int_option(options, "batchRows", DEFAULT_BATCH_ROWS, minimum=0),
            filter_pushdown=pushdown,
            storage_options=storage,
        )


# ------------------------------------------------------- change data feed and streaming
# Names as delta-spark spells them (DeltaOptions / DeltaDataSource).
READ_OPTIONS.update(
    {
        "readchangefeed": ("readChangeFeed", "true: read the change data feed (row changes) instead of the table"),
        "startingversion": ("startingVersion", "change feed / stream: first version to read (or 'latest' for streams)"),
        "startingtimestamp": (
            "startingTimestamp",
            "change feed / stream: start at the first version committed at or after it",
        ),
        "endingversion": ("endingVersion", "change feed: last version to read (inclusive; default latest)"),
        "endingtimestamp": ("endingTimestamp", "change feed: end at the last version committed at or before it"),
        "maxfilespertrigger": ("maxFilesPerTrigger", "stream: files per micro-batch (default 1000)"),
        "maxbytespertrigger": ("maxBytesPerTrigger", "stream: soft limit of bytes per micro-batch"),
        "ignoredeletes": ("ignoreDeletes", "stream: ignore commits that only remove files"),
        "ignorechanges": ("ignoreChanges", "stream: re-emit the files rewritten by updates/deletes (deprecated)"),
        "skipchangecommits": ("skipChangeCommits", "stream: skip commits that remove or rewrite files"),
    }
)

DEFAULT_MAX_FILES_PER_TRIGGER = 1000


def _bool_option(options: Mapping[str, str], name: str, default: bool = False) -> bool:
    raw = get_option(options, name)
    if raw is None or str(raw).strip() == "":
        return default
    text = str(raw).strip().lower()
    if text not in ("true", "false"):
        raise OptionValueError(f"option {name}: expected true or false, got {raw!r}")
    return text == "true"


def read_change_feed(options: Mapping[str, str]) -> bool:
    """Whether ``readChangeFeed`` (or delta-spark's legacy ``readChangeData``) is true."""
    return _bool_option(options, "readChangeFeed") or _bool_option(options, "readChangeData")


@dataclass(frozen=True)
class StartingPoint:
    """Where a change feed or stream starts: a version, 'latest', a timestamp, or nothing."""

    version: int | None = None
    latest: bool = False
    timestamp: str | None = None

    @property
    def given(self) -> bool:
        return self.version is not None or self.latest or self.timestamp is not None


def _starting_point(options: Mapping[str, str], *, allow_latest: bool) -> StartingPoint:
    raw_v = get_option(options, "startingVersion")
    raw_ts = get_option(options, "startingTimestamp")
    if raw_v is not None and str(raw_v).strip() and raw_ts is not None and str(raw_ts).strip():
        raise OptionValueError("options startingVersion and startingTimestamp: give at most one")
    if raw_ts is not None and str(raw_ts).strip():
        return StartingPoint(timestamp=str(raw_ts).strip())
    if raw_v is None or not str(raw_v).strip():
        return StartingPoint()
    if str(raw_v).strip().lower() == "latest":
        if not allow_latest:
            raise OptionValueError("option startingVersion: 'latest' is only valid for streams; give a version")
        return StartingPoint(latest=True)
    return StartingPoint(version=int_option(options, "startingVersion", None, minimum=0))


@dataclass(frozen=True)
class ChangeFeedOptions:
    """Batch change data feed range (``readChangeFeed=true``)."""

    start: StartingPoint
    ending_version: int | None = None
    ending_timestamp: str | None = None

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> ChangeFeedOptions:
        start = _starting_point(options, allow_latest=False)
        if not start.given:
            raise OptionValueError(
                "option startingVersion or startingTimestamp is required to read the "
                "change data feed, e.g. .option('startingVersion', 0)"
            )
        for name in ("versionAsOf", "timestampAsOf"):
            if get_option(options, name):
                raise OptionValueError(
                    f"option {name} cannot be combined with readChangeFeed; select the "
                    "versions with startingVersion/endingVersion instead"
                )
        ending_version = int_option(options, "endingVersion", None, minimum=0)
        ending_ts = get_option(options, "endingTimestamp")
        ending_ts = str(ending_ts).strip() if ending_ts is not None and str(ending_ts).strip() else None
        if ending_version is not None and ending_ts is not None:
            raise OptionValueError("options endingVersion and endingTimestamp: give at most one")
        return cls(start, ending_version, ending_ts)


@dataclass(frozen=True)
class StreamOptions:
    """Options of ``spark.readStream.format("pydelta")``."""

    start: StartingPoint = StartingPoint()
    max_files: int | None = None  # None: not given (the default of 1000 applies unless max_bytes)
    max_bytes: int | None = None
    ignore_deletes: bool = False
    ignore_changes: bool = False
    skip_change_commits: bool = False
    read_change_feed: bool = False

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> StreamOptions:
        for name in ("versionAsOf", "timestampAsOf", "endingVersion", "endingTimestamp"):
            if get_option(options, name):
                raise OptionValueError(
                    f"option {name} is not supported by streams; use startingVersion or startingTimestamp"
                )
        return cls(
            start=_starting_point(options, allow_latest=True),
            max_files=int_option(options, "maxFilesPerTrigger", None, minimum=1),
            max_bytes=_bytes_option(options, "maxBytesPerTrigger"),
            ignore_deletes=_bool_option(options, "ignoreDeletes"),
            ignore_changes=_bool_option(options, "ignoreChanges") or _bool_option(options, "ignoreFileDeletion"),
            skip_change_commits=_bool_option(options, "skipChangeCommits"),
            read_change_feed=read_change_feed(options),
        )

    @property
    def effective_max_files(self) -> int | None:
        """delta-spark: 1000 by default, unbounded when only maxBytesPerTrigger is given."""
        if self.max_files is not None:
            return self.max_files
        return None if self.max_bytes is not None else DEFAULT_MAX_FILES_PER_TRIGGER


_BYTE_UNITS = {
    "b": 1,
    "k": 1 << 10,
    "kb": 1 << 10,
    "m": 1 << 20,
    "mb": 1 << 20,
    "g": 1 << 30,
    "gb": 1 << 30,
    "t": 1 << 40,
    "tb": 1 << 40,
}


def _bytes_option(options: Mapping[str, str], name: str) -> int | None:
    """Bytes as an integer or with a unit (``10m``, ``1g``), as Spark byte strings."""
    raw = get_option(options, name)
    if raw is None or str(raw).strip() == "":
        return None
    text = str(raw).strip().lower()
    number = text.rstrip("bkmgt")
    unit = text[len(number) :] or "b"
    try:
        value = int(number) * _BYTE_UNITS[unit]
    except (ValueError, KeyError):
        raise OptionValueError(f"option {name}: expected a size in bytes such as 1048576 or 10m, got {raw!r}") from None
    if value < 1:
        raise OptionValueError(f"option {name}: expected a positive size, got {raw!r}")
    return value
