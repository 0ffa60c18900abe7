"""Front doors: ``df.writeStream`` of a Delta format (pyspark's ``DataStreamWriter``).

Guarantees, after ``delta_pyds.register(spark)``:

* ``format``, ``option(s)``, ``partitionBy``, ``outputMode``, ``queryName``, ``trigger``,
  ``clusterBy``, ``foreach`` and ``foreachBatch`` run as pyspark defines them and are recorded;
* ``start(path)`` of ``format("delta")`` (or no format where ``spark.sql.sources.default`` is
  ``delta``), in ``append`` or ``complete`` output mode, with a ``checkpointLocation`` or
  ``txnAppId`` option, to a store Spark's writer reaches, runs on the Spark-native data path: a
  fresh writer of the same DataFrame, with the same options, output mode, query name and trigger,
  starts the query with ``foreachBatch`` of :class:`DeltaBatchSink`, which writes each micro-batch
  with Spark's Parquet writer and commits it exactly once
  (:func:`~delta_pyds.spark.native.stream_write.write_batch`; then auto compaction with the
  session's confs). The returned query is that one (``sink`` of its progress is
  ``ForeachBatchSink``);
* every other ``start`` is pyspark's own call with the same arguments: ``format("pydelta")`` (the
  data source's sink, the fallback), ``update`` mode, a continuous or real-time trigger, ``foreach`` /
  ``foreachBatch`` / ``clusterBy`` called, no path, no ``checkpointLocation`` / ``txnAppId``, a
  ``txnVersion`` option (the sink's errors then name the problem);
* ``toTable(name)`` of a Delta format streams into the Delta table ``name``: a missing table is
  first created empty with the stream's schema and ``partitionBy`` columns and registered
  (EXTERNAL at ``option("path")``, else MANAGED), as Spark's ``toTable`` creates it; then the query
  is ``start`` at the table's location with the same format, output mode, query name and options
  (so the native path above, or the ``pydelta`` sink)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from delta_pyds.spark.front_doors.patching import (
    WriteState,
    bound,
    columns,
    copied,
    delta_format,
    original,
    recording,
    wrap,
    writer_dataframe,
    writer_session,
)
from delta_pyds.spark.front_doors.write_routes import existing_entry

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

_NATIVE_MODES = ("append", "complete")
_BATCH_TRIGGERS = {"processingTime", "once", "availableNow"}  # foreachBatch's (not continuous, realTime)


def _options(st: Any, **options: Any) -> None:
    for k, v in options.items():
        st.set_option(k, v)


def _partition_by(st: Any, *cols: Any) -> None:
    st.partition_by = columns(cols)


def install(cls: type) -> None:
    """Wraps ``cls`` (classic or Spark Connect ``DataStreamWriter``; see the module docstring)."""
    wrap(cls, "format", recording(lambda st, source: setattr(st, "source", source)))
    wrap(cls, "option", recording(lambda st, key, value: st.set_option(key, value)))
    wrap(cls, "options", recording(_options))
    wrap(cls, "partitionBy", recording(_partition_by))
    wrap(cls, "outputMode", recording(lambda st, mode: st.extra.__setitem__("outputMode", mode)))
    wrap(cls, "queryName", recording(lambda st, name: st.extra.__setitem__("queryName", name)))
    wrap(cls, "trigger", recording(lambda st, **kw: st.extra.__setitem__("trigger", kw)))
    for name in ("foreach", "foreachBatch", "clusterBy"):
        wrap(cls, name, recording(lambda st, *a, _n=name, **kw: st.extra.__setitem__(_n, True)))
    wrap(cls, "start", _start)
    wrap(cls, "toTable", _to_table)


@dataclass
class DeltaBatchSink:
    """The ``foreachBatch`` function of a native Delta stream: each micro-batch is
    :func:`~delta_pyds.spark.native.stream_write.write_batch` into ``path``, then auto
    compaction with the session's confs. Picklable (Spark Connect runs it in a server-side
    Python process)."""

    path: str
    options: dict[str, str]
    partition_by: list[str] | None
    complete: bool
    app_id: str | None = field(default=None, compare=False)

    def __call__(self, df: DataFrame, batch_id: int) -> None:
        from delta_pyds.spark.commands.auto_compaction import after_commit
        from delta_pyds.spark.native.stream_write import write_batch
        from delta_pyds.streaming.sink import sink_app_id

        if self.app_id is None:  # the query id, read once (Spark wrote it before the first batch)
            self.app_id = sink_app_id(self.options)
        storage, result = write_batch(
            df,
            self.path,
            batch_id,
            app_id=self.app_id,
            complete=self.complete,
            partition_by=self.partition_by,
            options=self.options,
        )
        if storage is not None:
            after_commit(df.sparkSession, storage, result)


def _overlaid(
    method: Callable[..., Any], writer: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[dict[str, Any], WriteState]:
    """A terminal call's arguments by name, and the writer's recorded state with the call's
    ``options``, ``format`` and ``partitionBy`` laid over a copy (the writer is not changed)."""
    call = bound(method, writer, args, kwargs)
    st = copied(writer)
    for k, v in dict(call.get("options") or {}).items():
        st.set_option(k, v)
    if call.get("format") is not None:
        st.source = call["format"]
    if call.get("partitionBy") is not None:
        st.partition_by = columns([call["partitionBy"]])
    return call, st


def _start(method: Callable[..., Any]) -> Callable[..., Any]:
    def start(self: Any, *args: Any, **kwargs: Any) -> Any:
        call, st = _overlaid(method, self, args, kwargs)
        for key in ("outputMode", "queryName"):
            if call.get(key) is not None:
                st.extra[key] = call[key]
        path = call.get("path") if call.get("path") is not None else st.option("path")
        sink = _native_sink(self, st, path)
        if sink is None:
            return method(self, *args, **kwargs)
        return _start_native(self, st, sink)

    return start


def _native_sink(writer: Any, st: WriteState, path: Any) -> DeltaBatchSink | None:
    """The native sink of a ``start`` (see the module docstring), or None for pyspark's own."""
    spark = writer_session(writer)
    name = st.source if st.source is not None else spark.conf.get("spark.sql.sources.default", "parquet")
    if str(name or "").strip().lower() != "delta" or not delta_format(spark, st.source):
        return None
    mode = str(st.extra.get("outputMode") or "append").strip().lower()
    trigger = {k for k, v in (st.extra.get("trigger") or {}).items() if v is not None}
    if not isinstance(path, str) or mode not in _NATIVE_MODES or not trigger <= _BATCH_TRIGGERS:
        return None
    if any(st.extra.get(n) for n in ("foreach", "foreachBatch", "clusterBy")) or st.option("txnVersion") is not None:
        return None
    if st.option("checkpointLocation") is None and not str(st.option("txnAppId") or "").strip():
        return None  # no query id to commit exactly once with: the sink's error says so
    from delta_pyds.spark.native.stream_write import native_stream_refusal

    if native_stream_refusal(spark, path, st.options) is not None:
        return None
    partition_by = [str(c) for c in st.partition_by] if st.partition_by else None
    options = {k: v for k, v in st.options.items() if k.lower() != "path"}
    return DeltaBatchSink(path, options, partition_by, mode == "complete")


def _start_native(writer: Any, st: WriteState, sink: DeltaBatchSink) -> Any:
    """The query of ``sink`` on a fresh writer of ``writer``'s DataFrame, with its recorded
    options, output mode, query name and trigger."""
    fresh = writer_dataframe(writer).writeStream
    cls = type(fresh)
    fresh = original(cls, "options")(fresh, **sink.options)
    if st.extra.get("outputMode") is not None:
        fresh = original(cls, "outputMode")(fresh, st.extra["outputMode"])
    if st.extra.get("queryName") is not None:
        fresh = original(cls, "queryName")(fresh, st.extra["queryName"])
    if st.extra.get("trigger"):
        fresh = original(cls, "trigger")(fresh, **st.extra["trigger"])
    fresh = original(cls, "foreachBatch")(fresh, sink)
    return original(cls, "start")(fresh)


def _to_table(method: Callable[..., Any]) -> Callable[..., Any]:
    def toTable(self: Any, *args: Any, **kwargs: Any) -> Any:
        call, st = _overlaid(method, self, args, kwargs)
        options = dict(call.get("options") or {})
        if not delta_format(writer_session(self), st.source):
            return method(self, *args, **kwargs)
        location = _table_location(self, call["tableName"], st)
        options.pop("path", None)
        return self.start(
            path=location,
            format=call.get("format"),
            outputMode=call.get("outputMode"),
            queryName=call.get("queryName"),
            **options,
        )

    return toTable


def _table_location(writer: Any, name: str, st: Any) -> str:
    """The location of the Delta table ``name``, created empty first when it does not exist."""
    from delta_pyds.spark.tables import DeltaTable

    df = writer_dataframe(writer)
    entry = existing_entry(df, name)
    if entry is None:
        builder = DeltaTable.createIfNotExists(writer_session(writer)).tableName(name).addColumns(df.schema)
        if st.partition_by:
            builder = builder.partitionedBy(*[str(c) for c in st.partition_by])
        if st.option("path") is not None:
            builder = builder.location(st.option("path"))
        builder.execute()
        entry = existing_entry(df, name)
    assert entry is not None and entry.location is not None
    return entry.location
