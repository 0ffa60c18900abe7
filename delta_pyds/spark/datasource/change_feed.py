"""Batch change data feed through Spark: ``.option("readChangeFeed", "true")``.

The schema is the table schema at the ending version (the latest when no ending is
given) plus ``_change_type`` (string), ``_commit_version`` (long) and
``_commit_timestamp`` (timestamp). Like plain reads, the DataFrame is pinned when it is
created: without ``endingVersion``/``endingTimestamp`` it ends at the version that was
latest at ``load()``. Planning (:func:`delta_pyds.cdf.plan.plan_changes`) happens once
per query on the driver; executors get small groups of
:class:`~delta_pyds.cdf.plan.ChangeFile`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, cast

from pyspark.sql.datasource import DataSourceReader, InputPartition
from pyspark.sql.types import StructType as SparkStructType

from delta_pyds.cdf.plan import CDF_COLUMNS, ChangeFile, pack, plan_changes, resolve_range
from delta_pyds.cdf.reader import change_read_spec, reader_for, with_cdf_columns
from delta_pyds.errors import OptionValueError
from delta_pyds.log.commits import CommitLog
from delta_pyds.protocol.schema import StructType, parse_type
from delta_pyds.read.file_reader import ReadSpec
from delta_pyds.read.options import ChangeFeedOptions, ReadOptions
from delta_pyds.read.scan_plan import cached_snapshot, project_output, select_columns, table_storage
from delta_pyds.spark.session.compat import arrow_schema
from delta_pyds.spark.session.schema_convert import to_spark_schema
from delta_pyds.table.snapshot import Snapshot

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql.datasource import DataSource


def _ending_version(log: CommitLog, options: Mapping[str, str]) -> int:
    """The version whose schema a change feed reads with (ending option, else latest)."""
    from delta_pyds.read.options import get_option, int_option

    ending = int_option(options, "endingVersion", None, minimum=0)
    if ending is not None:
        return min(ending, log.latest_version)
    ending_ts = get_option(options, "endingTimestamp")
    if ending_ts is not None and str(ending_ts).strip():
        v = log.version_at_or_before(_zoned(log, options, str(ending_ts).strip(), "endingTimestamp"))
        return max(v, 0)
    return log.latest_version


def _zoned(log: CommitLog, options: Mapping[str, str], value: str | None, option: str) -> str | None:
    """A starting/ending timestamp with its zone: the ``timeZone`` option's for one without
    a UTC offset; refused when no zone is given and the version would depend on it."""
    if value is None:
        return None
    from delta_pyds.log.time_travel import pin_zone

    resolve = log.version_at_or_after if option == "startingTimestamp" else log.version_at_or_before
    return pin_zone(
        value, zone=ReadOptions.parse(options).time_zone, option=option, resolve=lambda ts: resolve(ts, option=option)
    )


def output_schema(snapshot: Snapshot, opts: ReadOptions) -> StructType:
    return select_columns(with_cdf_columns(snapshot.schema), opts.columns, "the change feed")


def change_feed_schema(source: DataSource) -> tuple[SparkStructType, int]:
    """``DataSource.schema()`` for ``readChangeFeed=true``, and the version of the read
    schema (the caller pins it: :func:`change_feed_reader` reads with it)."""
    opts = ReadOptions.parse(source.options)
    storage = table_storage(opts)
    log = CommitLog(storage)
    snapshot = cached_snapshot(storage, _ending_version(log, source.options))
    return to_spark_schema(output_schema(snapshot, opts)), snapshot.version


def change_feed_reader(source: DataSource, schema: SparkStructType) -> DeltaChangeFeedReader:
    """``DataSource.reader()`` for ``readChangeFeed=true``."""
    opts = ReadOptions.parse(source.options)
    cdf = ChangeFeedOptions.parse(source.options)
    storage = table_storage(opts)
    log = CommitLog(storage)
    pinned = getattr(source, "_pinned_version", None)
    if pinned is None:
        pinned = _ending_version(log, source.options)
    start, end = resolve_range(
        log,
        starting_version=cdf.start.version,
        starting_timestamp=_zoned(log, source.options, cdf.start.timestamp, "startingTimestamp"),
        ending_version=cdf.ending_version,
        ending_timestamp=_zoned(log, source.options, cdf.ending_timestamp, "endingTimestamp"),
    )
    if cdf.ending_version is None and cdf.ending_timestamp is None:
        end = min(end, pinned)
        if end < start:
            raise OptionValueError(
                f"option startingVersion: version {start} is after the version this DataFrame was pinned to ({pinned})"
            )
    snapshot = cached_snapshot(storage, pinned)
    requested = cast(StructType, parse_type(schema.jsonValue()))  # Spark's schema is a struct
    output = project_output(with_cdf_columns(snapshot.schema), requested, "the change feed")
    spec = change_read_spec(
        storage,
        snapshot,
        output,
        arrow_schema(schema),
        batch_rows=opts.batch_rows,
    )
    return DeltaChangeFeedReader(opts, start, end, spec)


class ChangeFeedPartition(InputPartition):
    def __init__(self, files: list[ChangeFile]) -> None:
        super().__init__(None)
        self.files = files


class DeltaChangeFeedReader(DataSourceReader):
    """Reads change data of versions ``start``..``end`` (no filter pushdown: Spark filters)."""

    def __init__(self, opts: ReadOptions, start: int, end: int, spec: ReadSpec):
        self.opts = opts
        self.start = start
        self.end = end
        self.spec = spec

    def partitions(self) -> Sequence[InputPartition]:
        plan = plan_changes(self.spec.storage, start=self.start, end=self.end)
        groups = pack(
            plan.files,
            max_partition_bytes=self.opts.max_partition_bytes,
            open_cost=self.opts.open_cost,
            parallelism=self.opts.parallelism,
        )
        return [ChangeFeedPartition(g) for g in groups] or [ChangeFeedPartition([])]

    # Spark hands back the partitions this reader made
    def read(self, partition: ChangeFeedPartition) -> Iterator[pa.RecordBatch]:  # type: ignore[override]
        read = reader_for(self.spec)
        for f in partition.files:
            yield from read(f)


__all__ = ["change_feed_schema", "change_feed_reader", "DeltaChangeFeedReader", "CDF_COLUMNS"]
