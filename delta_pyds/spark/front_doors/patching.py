"""The machinery of the write front doors: wrapping pyspark's writer classes, recording what
their builder methods were given, deciding whether a write is Delta's, and delta-spark's
error classes as ``AnalysisException``.

Guarantees:

* :func:`wrap` replaces a method of a pyspark class by a wrapper once (a wrapped method is
  marked and never wrapped again, so installing twice, or from a second session, changes
  nothing); :func:`original` gives the method pyspark defined;
* a recording wrapper (:func:`recording`) calls pyspark's method with the same arguments first
  and records only when it returned, so Spark's own argument errors (``INVALID_SAVE_MODE`` ...)
  are raised as before; what it records lives on the writer object (:class:`WriteState`), as
  the classic writer keeps it only in its JVM builder;
* :func:`delta_format` says whether a format names this package: ``pydelta`` always, ``delta``
  only in a session where ``register(spark)`` registered the name (it found no JVM ``delta``
  source: delta-spark's jars keep every ``format("delta")`` call; not with
  ``register(spark, delta_name=False)``, nor in a session never registered); no format is
  the session's ``spark.sql.sources.default``; names compare ignoring case, as Spark's lookup;
* :func:`analysis_error` turns one of this package's errors into an exception that is also
  pyspark's ``AnalysisException`` (``except AnalysisException`` catches it, ``getCondition()``
  and ``getSqlState()`` give delta-spark's error class and SQLSTATE) and is still the
  package's error class (``except TableExistsError`` catches it too).

Version-dependent: the classes and their module paths are those of pyspark 4.1-4.3
(:func:`writer_classes`)."""

from __future__ import annotations

import functools
import inspect
import types
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from delta_pyds.errors import DeltaError, OptionValueError
from delta_pyds.spark.catalog.lookup import lookup
from delta_pyds.spark.datasource.registration import delta_name_checked

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

_MARK = "__pydelta_front_door__"
STATE = "_pydelta_front_door_state"
SAVE_MODES = {
    "append": "append",
    "overwrite": "overwrite",
    "ignore": "ignore",
    "error": "errorifexists",
    "errorifexists": "errorifexists",
    "default": "errorifexists",
}


@dataclass
class WriteState:
    """What a writer's builder methods were given (None: never called)."""

    source: str | None = None
    mode: str | None = None
    options: dict[str, str] = field(default_factory=dict)
    partition_by: list[Any] | None = None
    properties: dict[str, str] = field(default_factory=dict)  # writeTo's tableProperty
    extra: dict[str, Any] = field(default_factory=dict)  # outputMode, queryName, trigger ...

    def set_option(self, key: str, value: Any) -> None:
        """One option, replacing one of the same name in any case (Spark's case-insensitive map)."""
        if value is None:
            return
        for k in [k for k in self.options if k.lower() == str(key).lower()]:
            del self.options[k]
        self.options[str(key)] = option_text(value)

    def option(self, key: str) -> str | None:
        return next((v for k, v in self.options.items() if k.lower() == key.lower()), None)


def option_text(value: Any) -> str:
    """An option value as Spark keeps it (``True`` -> ``"true"``)."""
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


def state(writer: Any) -> WriteState:
    """The recorded state of ``writer`` (made empty on first use)."""
    found = writer.__dict__.get(STATE)
    if found is None:
        found = writer.__dict__[STATE] = WriteState()
    return found


def copied(writer: Any) -> WriteState:
    """A copy of ``writer``'s state (to overlay a terminal call's arguments without changing it)."""
    s = state(writer)
    return WriteState(s.source, s.mode, dict(s.options), s.partition_by, dict(s.properties), dict(s.extra))


def columns(cols: Iterable[Any]) -> list[Any]:
    """``partitionBy("a", "b")`` / ``partitionBy(["a", "b"])`` -> ``["a", "b"]`` (as pyspark reads them)."""
    cols = list(cols)
    if len(cols) == 1 and isinstance(cols[0], (list, tuple)):
        return list(cols[0])
    return cols


def save_mode(mode: str | None) -> str:
    """A save mode as Spark spells it in any case, normalized (None: ``errorifexists``)."""
    if mode is None:
        return "errorifexists"
    found = SAVE_MODES.get(str(mode).strip().lower()) if isinstance(mode, str) else None
    if found is None:
        raise OptionValueError(
            f'[INVALID_SAVE_MODE] The specified save mode "{mode}" is invalid. Valid save modes include "append",'
            ' "overwrite", "ignore", "error", "errorifexists", and "default".'
        )
    return found


def wrap(cls: type, name: str, make: Callable[[Callable[..., Any]], Callable[..., Any]]) -> None:
    """Replaces ``cls.name`` by ``make(pyspark's method)``, once."""
    current = cls.__dict__.get(name)
    if current is None or getattr(current, _MARK, None) is not None:
        return
    wrapper = functools.wraps(current)(make(current))
    setattr(wrapper, _MARK, current)
    setattr(cls, name, wrapper)


def original(cls: type, name: str) -> Callable[..., Any]:
    """The method pyspark defined (unwrapped)."""
    method = cls.__dict__[name]
    return getattr(method, _MARK, method)


def recording(record: Callable[..., None]) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """A wrapper maker: pyspark's method runs, then ``record(writer_state, *args, **kwargs)``."""

    def make(method: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
            result = method(self, *args, **kwargs)
            record(state(self), *args, **kwargs)
            return result

        return wrapper

    return make


def bound(method: Callable[..., Any], self: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    """The arguments of a call of pyspark's ``method`` by parameter name, defaults applied
    (``**options`` under its own name)."""
    call = inspect.signature(method).bind(self, *args, **kwargs)
    call.apply_defaults()
    return dict(call.arguments)


def delta_format(spark: SparkSession, source: str | None) -> bool:
    """Whether a write of format ``source`` (None: the session's default) is this package's."""
    if source is None:
        source = spark.conf.get("spark.sql.sources.default", "parquet") or "parquet"
    name = str(source).strip().lower()
    if name == "pydelta":
        return True
    return name == "delta" and bool(delta_name_checked(spark))


def is_delta_entry(spark: SparkSession, name: str) -> bool:
    """Whether ``name`` is a Delta catalog table that this package writes (a session where a JVM
    ``delta`` source exists keeps it; a name this package cannot resolve is Spark's)."""
    if not delta_name_checked(spark):
        return False
    try:
        entry = lookup(spark, name)
    except DeltaError:
        return False
    return entry is not None and entry.is_delta


def writer_dataframe(writer: Any) -> DataFrame:
    """The DataFrame a writer writes: classic writers hold it, Spark Connect ones its plan
    (a Connect ``DataStreamWriter`` in its write operation; version-dependent: pyspark 4.1-4.3's
    attribute names)."""
    df = getattr(writer, "_df", None)
    if df is not None and hasattr(df, "sparkSession"):
        return df
    from pyspark.sql.connect.dataframe import DataFrame as ConnectDataFrame

    if df is None:
        return ConnectDataFrame(writer._write_stream._child, writer._session)
    return ConnectDataFrame(df, writer._spark)


def writer_session(writer: Any) -> SparkSession:
    """The session of a writer (classic writers and Connect batch writers: ``_spark``; a Connect
    ``DataStreamWriter``: ``_session``)."""
    found = getattr(writer, "_spark", None)
    return found if found is not None else writer._session


def is_connect(spark: SparkSession) -> bool:
    return type(spark).__module__.startswith("pyspark.sql.connect")


def writer_classes(spark: SparkSession) -> tuple[type, type, type]:
    """``(DataFrameWriter, DataFrameWriterV2, DataStreamWriter)`` of ``spark``'s kind of session
    (version-dependent: the module paths of pyspark 4.1-4.3)."""
    if is_connect(spark):
        from pyspark.sql.connect.readwriter import DataFrameWriter, DataFrameWriterV2
        from pyspark.sql.connect.streaming.readwriter import DataStreamWriter
    else:
        from pyspark.sql.readwriter import DataFrameWriter, DataFrameWriterV2  # type: ignore[assignment]
        from pyspark.sql.streaming.readwriter import DataStreamWriter  # type: ignore[assignment]
    return DataFrameWriter, DataFrameWriterV2, DataStreamWriter


_ADAPTED: dict[type, type] = {}


def analysis_error(exc: DeltaError, condition: str, sqlstate: str, message: str) -> DeltaError:
    """``exc``'s class made also pyspark's ``AnalysisException``, with delta-spark's error class
    ``condition`` and ``message`` (shown as ``[condition] message``)."""
    from pyspark.errors import AnalysisException

    base = type(exc)
    cls = _ADAPTED.get(base)
    if cls is None:
        namespace = {"__module__": base.__module__, "getSqlState": _sqlstate}
        bases = (base, AnalysisException)
        cls = _ADAPTED[base] = types.new_class(base.__name__, bases, {}, lambda ns: ns.update(namespace))
    out: Any = cast(Any, cls).__new__(cls)
    AnalysisException.__init__(out, message=message, errorClass=condition, messageParameters={})
    Exception.__init__(out, f"[{condition}] {message}")
    out._pydelta_sqlstate = sqlstate
    return cast(DeltaError, out)


def _sqlstate(self: Any) -> str | None:
    return getattr(self, "_pydelta_sqlstate", None)
