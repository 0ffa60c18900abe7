"""The Spark layer: the ``pydelta`` data source on PySpark's Python Data Source API.

This package imports pyspark; the rest of ``delta_pyds`` does not."""

from __future__ import annotations

from typing import TYPE_CHECKING

from delta_pyds.spark.datasource import DeltaDataSource
from delta_pyds.spark.delta_source import register_source

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["DeltaDataSource", "register"]


def register(spark: SparkSession, *, delta_name: bool = True) -> None:
    """Registers the ``pydelta`` source on a session and enables filter pushdown; with
    ``delta_name`` (the default) also the short name ``delta`` for the same source, but only
    when Spark finds no ``delta`` source of its own (delta-spark's jars keep theirs; see
    :mod:`delta_pyds.spark.delta_source`).

    With ``delta_name`` it also installs Spark's own front doors (``spark.sql``, ``spark.table``,
    reads by name, the writers' save modes: :mod:`delta_pyds.spark.front_doors`) where ``delta``
    is this package's. Needed when the package ships with ``--py-files`` (Spark only
    auto-registers pip-installed ``pyspark_*`` modules); harmless otherwise."""
    register_source(spark, delta_name=delta_name)
    if delta_name:
        from delta_pyds.spark import front_doors

        front_doors.install(spark)
