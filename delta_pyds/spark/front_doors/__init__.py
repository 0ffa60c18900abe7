"""Spark's own front doors to Delta, met in the Python session after ``delta_pyds.register(spark)``.

(Skeleton: the writers half lives in :mod:`.writers`, the reads / ``spark.sql`` half in :mod:`.reads`
and :mod:`.sql_door`; :func:`install` is called once per session by ``register()``.)"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def install(spark: SparkSession) -> None:
    """Installs the front doors for ``spark``'s kind of session (classic or Connect); idempotent."""
    from delta_pyds.spark.front_doors import reads, writers

    writers.install(spark)
    reads.install(spark)
