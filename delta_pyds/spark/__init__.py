"""The Spark layer: the ``pydelta`` data source on PySpark's Python Data Source API.

This package imports pyspark; the rest of ``delta_pyds`` does not."""

from __future__ import annotations

from typing import TYPE_CHECKING

from delta_pyds.spark.datasource import DeltaDataSource

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["DeltaDataSource", "register"]


def register(spark: SparkSession) -> None:
    """Registers the ``pydelta`` source on a session and enables filter pushdown.

    Needed when the package ships with ``--py-files`` (Spark only auto-registers
    pip-installed ``pyspark_*`` modules); harmless otherwise."""
    try:
        spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
    except Exception:  # pragma: no cover - some managed platforms lock confs
        pass
    spark.dataSource.register(DeltaDataSource)
