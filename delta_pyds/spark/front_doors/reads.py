"""Spark's own read front doors reaching Delta after ``delta_pyds.register(spark)``: reads by name
(``spark.table``, ``spark.read[.format("delta")].table``, ``spark.readStream[.format("delta")].table``),
the errors of ``spark.read.format("delta").load(path)``, and ``spark.sql`` (:mod:`.sql_door`).

Guarantees:

* :func:`install` changes nothing where a JVM source has the name ``delta`` (delta-spark's jars:
  :func:`~delta_pyds.spark.datasource.registration.register_delta_name` says so) and nothing at import time;
  it is idempotent. It sets ``spark.sql`` / ``spark.table`` on the session object itself and wraps
  the methods of pyspark's reader classes (classic, and Spark Connect's when the session is one);
  a wrapped method acts only for readers of a session it was installed on, else it is Spark's own;
* a read by name whose name Spark's catalog gives to a Delta table (provider ``delta``, resolved on
  each call by :func:`~delta_pyds.spark.catalog.lookup.lookup`; a temporary view shadows a table as in
  Spark) reads the table's location: batch reads as :func:`~delta_pyds.spark.native.read.read_path`
  with the reader's options (``versionAsOf``, ``timestampAsOf``, ``readChangeFeed`` with
  ``startingVersion`` / ``endingVersion`` / ``startingTimestamp`` / ``endingTimestamp`` ...),
  streaming reads as ``spark.readStream.format("pydelta")`` with them. Every other name, a reader
  with another format, a non-``str`` argument, and any error of the lookup other than a missing
  table (``spark.table`` raises Spark's own error then) goes to Spark's original method with the
  same arguments;
* ``format("delta").load(path)`` (one path, no schema, options the scan reads) reads as
  ``spark.read.table`` of a Delta name does (:func:`_native_load`: ``_metadata.file_path`` works,
  Spark's Parquet reader moves the rows); ``format("pydelta")`` stays the Python data source;
* ``format("delta"|"pydelta").load(path)`` of a path with no Delta table raises (on classic
  sessions, where Spark analyses at ``load``) :mod:`~delta_pyds.spark.session.analysis_errors`'s
  ``AnalysisException`` with delta-spark's text (``is not a Delta table`` / ``Path does not
  exist``); every other load is Spark's, unchanged."""

from __future__ import annotations

import functools
import weakref
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from delta_pyds.spark.catalog.lookup import CatalogEntry, lookup
from delta_pyds.spark.session.own_calls import own_calls

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

DELTA_FORMATS = frozenset({"delta", "pydelta"})
_INSTALLED: weakref.WeakSet[Any] = weakref.WeakSet()
_ORIGINAL = "__delta_pyds_original__"
_FORMAT, _OPTIONS, _SCHEMA = "_delta_pyds_format", "_delta_pyds_options", "_delta_pyds_schema"


def install(spark: SparkSession) -> None:
    """Installs the read front doors and ``spark.sql`` on ``spark`` (see the module docstring)."""
    from delta_pyds.spark.datasource.registration import delta_name_checked
    from delta_pyds.spark.front_doors import sql_door

    # only where register() gave this package the name delta (never beside a JVM delta source)
    if spark in _INSTALLED or not delta_name_checked(spark):
        return
    connect = type(spark).__module__.startswith("pyspark.sql.connect")
    _wrap_readers(connect)
    sql_door.install(spark)
    _set_table(spark)
    _INSTALLED.add(spark)


def installed(spark: Any) -> bool:
    """Whether the front doors are installed on ``spark``."""
    try:
        return spark in _INSTALLED
    except TypeError:  # not weak-referenceable: not a session
        return False


def delta_name(spark: SparkSession, name: Any) -> CatalogEntry | None:
    """The Delta catalog table ``name`` names now, or None (not a str, not a name, no entry, a view,
    another provider): the caller then hands the call to Spark."""
    if not isinstance(name, str):
        return None
    try:
        with own_calls():
            entry = lookup(spark, name)
    except Exception:  # not a name this package parses, another catalog ...: Spark's to answer
        return None
    return entry if entry is not None and entry.is_delta else None


# ------------------------------------------------------------------ wrapping
def _wrap(cls: type, method: str, make: Callable[[Callable[..., Any]], Callable[..., Any]]) -> None:
    current = getattr(cls, method)
    if getattr(current, _ORIGINAL, None) is not None:
        return  # already wrapped (another session installed it)
    wrapper = functools.wraps(current)(make(current))
    setattr(wrapper, _ORIGINAL, current)
    setattr(cls, method, wrapper)


def _wrap_readers(connect: bool) -> None:
    """Wraps ``table`` / ``load`` of the batch and streaming readers (and, on classic readers, which
    keep format and options in the JVM only, ``format`` / ``option`` / ``options`` to see them)."""
    if connect:
        from pyspark.sql.connect.readwriter import DataFrameReader as ConnectReader
        from pyspark.sql.connect.streaming.readwriter import DataStreamReader as ConnectStreamReader

        for cls in (ConnectReader, ConnectStreamReader):
            _wrap(cls, "table", functools.partial(_table_door, streaming=cls is ConnectStreamReader))
        _wrap(ConnectReader, "load", _load_door)
    else:
        _wrap_classic()


def _wrap_classic() -> None:
    from pyspark.sql.readwriter import DataFrameReader
    from pyspark.sql.streaming.readwriter import DataStreamReader

    for cls in (DataFrameReader, DataStreamReader):
        _wrap(cls, "format", _recording_format)
        _wrap(cls, "option", _recording_option)
        _wrap(cls, "options", _recording_options)
        _wrap(cls, "table", functools.partial(_table_door, streaming=cls is DataStreamReader))
    _wrap(DataFrameReader, "schema", _recording_schema)
    _wrap(DataFrameReader, "load", _load_door)


def _session(reader: Any) -> Any:
    return getattr(reader, "_client", None) or getattr(reader, "_spark", None)


def _reader_format(reader: Any) -> str | None:
    value = reader.__dict__.get(_FORMAT, getattr(reader, "_format", None))
    return value if isinstance(value, str) else None


def _reader_options(reader: Any) -> dict[str, str]:
    if _OPTIONS in reader.__dict__:
        return dict(reader.__dict__[_OPTIONS])
    return dict(getattr(reader, "_options", None) or {})


def _recording_format(original: Callable[..., Any]) -> Callable[..., Any]:
    def format(self: Any, source: str) -> Any:
        out = original(self, source)
        if installed(_session(self)):
            self.__dict__[_FORMAT] = source
        return out

    return format


def _recording_option(original: Callable[..., Any]) -> Callable[..., Any]:
    def option(self: Any, key: str, value: Any) -> Any:
        out = original(self, key, value)
        if installed(_session(self)):
            self.__dict__.setdefault(_OPTIONS, {})[str(key)] = _text(value)
        return out

    return option


def _recording_options(original: Callable[..., Any]) -> Callable[..., Any]:
    def options(self: Any, **opts: Any) -> Any:
        out = original(self, **opts)
        if installed(_session(self)):
            self.__dict__.setdefault(_OPTIONS, {}).update({str(k): _text(v) for k, v in opts.items()})
        return out

    return options


def _text(value: Any) -> str:
    """An option value as Spark keeps it (pyspark's ``to_str``: booleans lowercased)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else str(value)


# ------------------------------------------------------------------ the doors
def _table_door(original: Callable[..., Any], *, streaming: bool) -> Callable[..., Any]:
    def table(self: Any, tableName: str) -> DataFrame:
        spark = _session(self)
        fmt = _reader_format(self)
        if not installed(spark) or (fmt is not None and fmt.lower() not in DELTA_FORMATS):
            return original(self, tableName)
        entry = delta_name(spark, tableName)
        if entry is None:
            return original(self, tableName)
        assert entry.location is not None
        return read_entry(spark, entry.location, _reader_options(self), streaming=streaming)

    return table


def read_entry(spark: SparkSession, location: str, options: Mapping[str, str], *, streaming: bool) -> DataFrame:
    """The Delta table at ``location`` read with a reader's ``options`` (``path`` dropped: the entry's)."""
    opts = {k: v for k, v in options.items() if k.lower() not in ("path", "paths")}
    if streaming:
        return spark.readStream.format("pydelta").options(**opts).load(location)
    from delta_pyds.spark.native.read import read_path

    return read_path(spark, location, **opts)


def _set_table(spark: SparkSession) -> None:
    """``spark.table(name)``: a Delta name read as ``spark.read.table(name)`` reads it."""
    original = spark.table

    def table(tableName: str) -> DataFrame:
        entry = delta_name(spark, tableName)
        if entry is None:
            return original(tableName)
        assert entry.location is not None
        return read_entry(spark, entry.location, {}, streaming=False)

    table.__doc__ = original.__doc__
    setattr(table, _ORIGINAL, original)
    spark.table = table  # type: ignore[method-assign]


def _native_load(
    reader: Any, path: Any, format: str | None, schema: Any, options: Mapping[str, Any]
) -> DataFrame | None:
    """``format("delta").load(path)`` as :func:`~delta_pyds.spark.native.read.read_path` reads
    ``path`` with the reader's options (Spark's Parquet reader, ``_metadata`` columns, the
    data source as the fallback), or None for Spark's own ``load``: another format (``pydelta``
    stays the data source), no session with the doors, a schema given, a path that is not one
    string, or an option that the scan does not read (the data source warns of it by name)."""
    from delta_pyds.write.option_names import READ_NAMES, READ_PREFIXES, is_known

    spark = _session(reader)
    fmt = format or _reader_format(reader)
    if not (fmt and fmt.lower() == "delta" and installed(spark)) or schema is not None or _reader_schema(reader):
        return None
    opts = _reader_options(reader) | {str(k): _text(v) for k, v in options.items()}
    given = [v for k, v in opts.items() if k.lower() == "path"]
    path = path if path is not None else (given[-1] if given else None)
    opts = {k: v for k, v in opts.items() if k.lower() not in ("path", "paths")}
    if not isinstance(path, str) or not all(is_known(k, READ_NAMES, READ_PREFIXES) for k in opts):
        return None
    return read_entry(spark, path, opts, streaming=False)


def _reader_schema(reader: Any) -> bool:
    """Whether the reader was given a schema (``.schema(...)``: recorded on classic readers)."""
    return bool(reader.__dict__.get(_SCHEMA) or getattr(reader, "_schema", None))


def _recording_schema(original: Callable[..., Any]) -> Callable[..., Any]:
    def schema(self: Any, schema: Any) -> Any:
        out = original(self, schema)
        if installed(_session(self)):
            self.__dict__[_SCHEMA] = True
        return out

    return schema


def _load_door(original: Callable[..., Any]) -> Callable[..., Any]:
    def load(self: Any, path: Any = None, format: str | None = None, schema: Any = None, **options: Any) -> DataFrame:
        try:
            native = _native_load(self, path, format, schema, options)
            if native is not None:
                return native
            return original(self, path, format, schema, **options)
        except Exception as exc:
            fmt = format or _reader_format(self)
            if not (isinstance(path, str) and fmt and fmt.lower() in DELTA_FORMATS and installed(_session(self))):
                raise
            from delta_pyds.spark.front_doors.errors import not_a_table

            replacement = not_a_table(exc, path)
            if replacement is None:
                raise
            raise replacement from exc

    return load
