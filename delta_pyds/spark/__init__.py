"""The Spark layer: the ``pydelta`` data source on PySpark's Python Data Source API.

This package imports pyspark; the rest of ``delta_pyds`` does not."""

from __future__ import annotations

from typing import TYPE_CHECKING

from delta_pyds.spark.datasource import DeltaDataSource
from delta_pyds.spark.delta_source import register_sources

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["DeltaDataSource", "register"]


def register(spark: SparkSession, *, delta_name: bool = True) -> None:
    """Registers the ``pydelta`` source on a session and enables filter pushdown; with
    ``delta_name`` (the default) also the short name ``delta`` for the same source, but only
    when Spark finds no ``delta`` source of its own (delta-spark's jars keep theirs; see
    :mod:`delta_pyds.spark.delta_source`).

    Also installs the front doors (:mod:`delta_pyds.spark.front_doors`): Spark's own
    ``df.write...save/saveAsTable/insertInto``, ``df.writeTo(...)`` and
    ``writeStream...toTable`` of a Delta format then behave as delta-spark's.

    Needed when the package ships with ``--py-files`` (Spark only auto-registers
    pip-installed ``pyspark_*`` modules); harmless otherwise."""
    register_sources(spark, delta_name=delta_name)
    from delta_pyds.spark.front_doors import install  # the one place the front doors are installed

    install(spark)
