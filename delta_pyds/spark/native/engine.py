"""Which engine moves a statement's rows: the one place the Spark layer chooses it.

Two engines move rows:

* ``native``: Spark's own Parquet reader and writer over the files the log names (``read_delta``,
  ``DeltaTable.toDF()``, ``write_delta``, the native stream sink, and the scans and rewrites of
  DELETE, UPDATE, MERGE and OPTIMIZE: :mod:`delta_pyds.spark.native.read`,
  :mod:`~delta_pyds.spark.native.write`, :mod:`delta_pyds.spark.commands.native_rows`);
* ``python``: Python workers with pyarrow (the ``pydelta`` data source for reads and writes
  by path; ``mapInArrow`` scans and writes for DML).

Guarantees:

* the native engine is used wherever Spark can serve it; where it cannot (a store Spark has no
  Hadoop filesystem for, a feature Spark's reader does not read exactly, the change feed), the
  caller falls back to the Python workers through :func:`fall_back`, which logs the reason as a
  warning, or raises :class:`NativeReadUnavailable` with it when the user
  asked for the native engine (``read_delta(native="require")``,
  ``spark.pydelta.dml.engine=native``; ``write_delta`` always falls back, with its own notice);
  results never depend on the engine;
* the user's choice is read in one way each: :func:`read_mode` for ``read_delta``'s ``native``
  argument (``auto``, ``require``, ``never``), :func:`dml_engine` for the session conf
  :data:`~delta_pyds.spark.session.conf.DML_ENGINE_CONF` (``auto``, ``native``, ``python``)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from delta_pyds.errors import OptionValueError, UnsupportedFeatureError
from delta_pyds.spark.session import conf
from delta_pyds.spark.session.conf import DML_ENGINE_CONF, DML_ENGINES

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

READ_MODES = ("auto", "require", "never")


class NativeReadUnavailable(UnsupportedFeatureError):
    """Spark's own reader or writer cannot serve the table, and the user asked for it
    (``native="require"``, ``spark.pydelta.dml.engine=native``)."""


def read_mode(native: object) -> str:
    """``read_delta``'s ``native`` argument, checked: ``auto`` (Spark's reader, else the data
    source with a notice), ``require`` (else :class:`NativeReadUnavailable`) or ``never``."""
    if native not in READ_MODES:
        raise OptionValueError(f"native: expected 'auto', 'require' or 'never', got {native!r}")
    return str(native)


def dml_engine(spark: SparkSession) -> str:
    """The session's :data:`~delta_pyds.spark.session.conf.DML_ENGINE_CONF` (``auto`` when unset)."""
    return conf.choice(spark, DML_ENGINE_CONF, DML_ENGINES, "auto")


def fall_back(required: bool, refusal: str, notice: str, logger: logging.Logger) -> None:
    """The Python workers take over from Spark's reader or writer: raises
    :class:`NativeReadUnavailable` (``refusal``) when the user ``required`` the native engine,
    else logs ``notice`` as a warning on the caller's ``logger``."""
    if required:
        raise NativeReadUnavailable(refusal)
    logger.warning(notice)
