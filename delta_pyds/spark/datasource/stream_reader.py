"""Streaming reads: ``spark.readStream.format("pydelta").load(path)``.

A ``DataSourceStreamReader`` with admission control over
:class:`delta_pyds.streaming.source.StreamSource`:

* offsets are delta-spark-shaped dicts ``{sourceVersion, reservoirId, reservoirVersion,
  index, isStartingVersion}``; Spark checkpoints them, so a restarted query resumes right
  after the last committed one and re-plans an uncommitted batch identically (batch 0
  too: ``initialOffset`` is a marker derived from the options, and batch 0's start is
  read back from the end offset Spark logged, see :mod:`delta_pyds.streaming.offsets`);
* ``maxFilesPerTrigger`` (default 1000) is the default read limit and
  ``maxBytesPerTrigger`` is applied with it (the Python API has no composite limit);
  ``ReadAllAvailable`` (e.g. ``Trigger.Once``) ignores both;
* ``Trigger.AvailableNow`` fixes the target offset at the query's first batch and then
  honours the limits batch by batch;
* the reader object is pickled into every task: it carries only the read spec and the
  options; the log state lives in a lazily built source, never pickled.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, cast

from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.types import StructType as SparkStructType

from delta_pyds.cdf.plan import ChangeFile, pack
from delta_pyds.cdf.reader import change_read_spec, reader_for, with_cdf_columns
from delta_pyds.protocol.schema import StructType, parse_type
from delta_pyds.read.file_reader import ReadSpec, read_file
from delta_pyds.read.options import ReadOptions, StreamOptions
from delta_pyds.read.scan_plan import cached_snapshot, project_output, table_storage
from delta_pyds.spark.session.compat import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxBytes,
    ReadMaxFiles,
    SupportsTriggerAvailableNow,
    arrow_schema,
    require_stream_admission,
)
from delta_pyds.streaming.offsets import AdmissionLimits, StreamOffset
from delta_pyds.streaming.source import StreamSource

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql.datasource import DataSource


def stream_reader(source: DataSource, schema: SparkStructType) -> DeltaStreamReader:
    """``DataSource.streamReader()``: the stream's schema is the one ``schema()`` gave at
    ``load()`` (the table's schema then, plus the change columns for change feeds)."""
    opts = ReadOptions.parse(source.options)
    stream_opts = StreamOptions.parse(source.options)
    if stream_opts.max_files is not None or stream_opts.max_bytes is not None:
        require_stream_admission("maxFilesPerTrigger / maxBytesPerTrigger")
    storage = table_storage(opts)
    if stream_opts.start.timestamp is not None:  # its zone: see delta_pyds.log.time_travel
        from dataclasses import replace

        from delta_pyds.log.commits import CommitLog
        from delta_pyds.log.time_travel import pin_zone

        log = CommitLog(storage)
        when = pin_zone(
            stream_opts.start.timestamp,
            zone=opts.time_zone,
            option="startingTimestamp",
            resolve=lambda ts: log.version_at_or_after(ts, option="startingTimestamp"),
        )
        text = when.isoformat() if hasattr(when, "isoformat") else str(when)
        stream_opts = replace(stream_opts, start=replace(stream_opts.start, timestamp=text))
    pinned = getattr(source, "_pinned_version", None)
    if pinned is None:
        from delta_pyds.log.commits import CommitLog

        pinned = CommitLog(storage).latest_version
    snapshot = cached_snapshot(storage, pinned)
    requested = cast(StructType, parse_type(schema.jsonValue()))  # Spark's schema is a struct
    table = with_cdf_columns(snapshot.schema) if stream_opts.read_change_feed else snapshot.schema
    output = project_output(table, requested)
    spark_arrow = arrow_schema(schema)
    spec = change_read_spec(storage, snapshot, output, spark_arrow, batch_rows=opts.batch_rows)
    return DeltaStreamReader(opts, stream_opts, snapshot.version, spec)


class StreamPartition(InputPartition):
    def __init__(self, items: list[Any]) -> None:
        super().__init__(None)
        self.items = items  # FileTasks (plain) or ChangeFiles (change feed)


class DeltaStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    def __init__(self, opts: ReadOptions, stream_opts: StreamOptions, version: int, spec: ReadSpec):
        self.opts = opts
        self.stream_opts = stream_opts
        self.version = version  # the table version when the query started
        self.spec = spec
        self._source: StreamSource | None = None

    def __getstate__(self) -> dict[str, Any]:  # executors need the spec only, never the log state
        state = self.__dict__.copy()
        state["_source"] = None
        return state

    @property
    def source(self) -> StreamSource:
        if self._source is None:
            snapshot = cached_snapshot(self.spec.storage, self.version)
            self._source = StreamSource(self.spec.storage, snapshot, self.stream_opts)
        return self._source

    def _offset(self, d: dict[str, Any]) -> StreamOffset:
        return StreamOffset.from_dict(d, self.source.table_id)

    # ------------------------------------------------------------ offsets
    def initialOffset(self) -> dict[str, Any]:
        return self.source.initial_offset().to_dict()

    def getDefaultReadLimit(self) -> ReadLimit:
        max_files = self.stream_opts.effective_max_files
        if max_files is not None:
            return ReadMaxFiles(max_files)
        return ReadMaxBytes(cast(int, self.stream_opts.max_bytes))  # no file limit: a byte limit

    def _limits(self, limit: ReadLimit) -> AdmissionLimits | None:
        if isinstance(limit, ReadAllAvailable):
            return None
        max_files = self.stream_opts.effective_max_files
        max_bytes = self.stream_opts.max_bytes
        if isinstance(limit, ReadMaxFiles):
            max_files = limit.max_files
        elif isinstance(limit, ReadMaxBytes):
            max_bytes = limit.max_bytes
        return AdmissionLimits(max_files, max_bytes)

    def latestOffset(self, start: dict[str, Any] | None = None, limit: ReadLimit | None = None) -> dict[str, Any]:
        if start is None:  # pyspark 4.1 (no read limits): all available from the query's start
            start, limit = self.initialOffset(), ReadAllAvailable()
        assert limit is not None
        return self.source.latest_offset(self._offset(start), self._limits(limit)).to_dict()

    def prepareForTriggerAvailableNow(self) -> None:
        self.source.prepare_available_now()

    def reportLatestOffset(self) -> dict[str, Any] | None:
        bound = self.source.available_now_bound
        return bound.to_dict() if bound is not None else None

    # ------------------------------------------------------------ batches
    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        items = self.source.batch_files(self._offset(start), self._offset(end))
        if not items:
            return []
        groups = pack(
            items,
            max_partition_bytes=self.opts.max_partition_bytes,
            open_cost=self.opts.open_cost,
            parallelism=self.opts.parallelism,
        )
        return [StreamPartition(g) for g in groups]

    # Spark hands back the partitions this reader made
    def read(self, partition: StreamPartition) -> Iterator[pa.RecordBatch]:  # type: ignore[override]
        read_change = None
        for item in partition.items:
            if isinstance(item, ChangeFile):
                read_change = read_change or reader_for(self.spec)
                yield from read_change(item)
            else:
                yield from read_file(self.spec, item)

    def commit(self, end: dict[str, Any]) -> None:
        pass

    def stop(self) -> None:
        self._source = None


__all__ = ["stream_reader", "DeltaStreamReader"]
