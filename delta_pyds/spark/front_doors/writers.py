"""Front doors: Spark's own write calls of a Delta format, met in the Python session.

Spark refuses save modes ErrorIfExists (its default) and Ignore, and ``partitionBy()``, for every
Python data source before the source runs (docs/limits.md), and hands a Python source's catalog
table no location (docs/catalog.md). :func:`install` (called by ``delta_pyds.register(spark)`` only, through
:func:`delta_pyds.spark.front_doors.install`) therefore wraps, for ``spark``'s kind of session
(classic or Spark Connect), the methods of pyspark's ``DataFrameWriter`` (here),
``DataFrameWriterV2`` (:mod:`.writers_v2`) and ``DataStreamWriter`` (:mod:`.stream_writers`).

Guarantees:

* the builder methods (``format``, ``mode``, ``option``, ``options``, ``partitionBy``) run as
  pyspark defines them and their arguments are recorded on the writer;
* ``save`` and ``saveAsTable`` of a Delta format (``pydelta``; ``delta`` where no JVM ``delta``
  source exists; no format: the session's ``spark.sql.sources.default``), and ``insertInto`` of a
  Delta catalog table (the target's format decides, as in Spark), run in this package with
  delta-spark's semantics (:mod:`.write_routes`), positional and keyword forms
  (``save(path, format=, mode=, partitionBy=, **options)``) alike. ``save`` of ``format("delta")``
  is the Spark-native writer; ``save`` of ``format("pydelta")`` stays the data source: in append or
  overwrite mode without ``partitionBy()`` it is pyspark's own call, otherwise a fresh writer of the
  same DataFrame passes the save mode and partition columns as the source's ``saveMode`` /
  ``partitionBy`` options. Every other call (another format, a ``delta`` backed by delta-spark's
  jars) is pyspark's own method with the same arguments, and nothing else (``parquet()``,
  ``csv()``, ``jdbc()`` ...) is wrapped;
* nothing changes at import time; installing twice, or for a second session, wraps nothing again."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from delta_pyds.spark.front_doors import stream_writers, write_routes, writers_v2
from delta_pyds.spark.front_doors.patching import (
    WriteState,
    bound,
    columns,
    copied,
    delta_format,
    is_delta_entry,
    recording,
    save_mode,
    wrap,
    writer_classes,
    writer_dataframe,
)

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def install(spark: SparkSession) -> None:
    """Wraps the writer classes of ``spark``'s kind of session (see the module docstring)."""
    writer, writer_v2, stream_writer = writer_classes(spark)
    install_builders(writer)
    wrap(writer, "save", _terminal(_save, _save_decide))
    wrap(writer, "saveAsTable", _terminal(_save_as_table))
    wrap(writer, "insertInto", _terminal(_insert_into, _delta_table))
    writers_v2.install(writer_v2)
    stream_writers.install(stream_writer)


def _set(field: str) -> Callable[..., None]:
    def record(st: WriteState, value: Any) -> None:
        if value is not None:
            setattr(st, field, value)

    return record


def _options(st: WriteState, **options: Any) -> None:
    for k, v in options.items():
        st.set_option(k, v)


def _partition_by(st: WriteState, *cols: Any) -> None:
    st.partition_by = columns(cols)


def install_builders(cls: type) -> None:
    """Records ``format``, ``mode``/``outputMode``, ``option(s)`` and ``partitionBy`` of a
    ``DataFrameWriter`` or ``DataStreamWriter``."""
    wrap(cls, "format", recording(lambda st, source: _set("source")(st, source)))
    if "mode" in cls.__dict__:
        wrap(cls, "mode", recording(lambda st, saveMode: _set("mode")(st, saveMode)))
    wrap(cls, "option", recording(lambda st, key, value: st.set_option(key, value)))
    wrap(cls, "options", recording(_options))
    wrap(cls, "partitionBy", recording(_partition_by))


def overlay(writer: Any, call: dict[str, Any], mode_key: str = "mode") -> WriteState:
    """The writer's state with a terminal call's ``mode``, ``options``, ``partitionBy`` and
    ``format`` applied in pyspark's order (the writer itself is not changed)."""
    st = copied(writer)
    if call.get(mode_key) is not None:
        st.mode = call[mode_key]
    for k, v in (call.get("options") or {}).items():
        st.set_option(k, v)
    if call.get("partitionBy") is not None:
        st.partition_by = columns([call["partitionBy"]])
    if call.get("format") is not None:
        st.source = call["format"]
    return st


Route = Callable[[Any, dict[str, Any], WriteState], Any]


def _delta_source(writer: Any, call: dict[str, Any], st: WriteState) -> bool:
    return delta_format(writer._spark, st.source)


def _delta_table(writer: Any, call: dict[str, Any], st: WriteState) -> bool:
    """``insertInto`` writes in the target's format, whatever ``format()`` said (Spark's rule)."""
    return is_delta_entry(writer._spark, call["tableName"])


def _terminal(route: Route, decide: Route = _delta_source) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """A wrapper maker for a terminal method: a Delta write (``decide``) goes to ``route``, any
    other to pyspark's method with the same arguments."""

    def make(method: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
            call = bound(method, self, args, kwargs)
            st = overlay(self, call)
            if not decide(self, call, st):
                return method(self, *args, **kwargs)
            return route(self, call, st)

        return wrapper

    return make


def _is_pydelta(st: WriteState) -> bool:
    return str(st.source or "").strip().lower() == "pydelta"


def _save_decide(writer: Any, call: dict[str, Any], st: WriteState) -> bool:
    """A Delta ``save``, except a ``pydelta`` one the data source takes as it is (append or
    overwrite, no ``partitionBy()``): that one stays pyspark's call."""
    if not delta_format(writer._spark, st.source):
        return False
    return not (_is_pydelta(st) and save_mode(st.mode) in ("append", "overwrite") and st.partition_by is None)


def _save(writer: Any, call: dict[str, Any], st: WriteState) -> None:
    df = writer_dataframe(writer)
    if not _is_pydelta(st):  # format("delta"): the Spark-native writer, as delta-spark's JVM writer
        write_routes.save_path(df, call.get("path"), st)
        return
    # format("pydelta"): the data source, told what Spark refuses to pass as its options
    mode = save_mode(st.mode)
    fresh = df.write.format("pydelta").mode("overwrite" if mode == "overwrite" else "append").options(**st.options)
    if mode in ("errorifexists", "ignore") and st.option("saveMode") is None and st.option("mode") is None:
        fresh = fresh.option("saveMode", mode)
    if st.partition_by is not None:
        fresh = fresh.option("partitionBy", json.dumps([str(c) for c in st.partition_by]))
    fresh.save(call.get("path"))


def _save_as_table(writer: Any, call: dict[str, Any], st: WriteState) -> None:
    write_routes.save_table(writer_dataframe(writer), call["name"], st)


def _insert_into(writer: Any, call: dict[str, Any], st: WriteState) -> None:
    write_routes.insert_into(writer_dataframe(writer), call["tableName"], call.get("overwrite"), st)
