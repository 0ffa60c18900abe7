"""The Spark layer: the ``pydelta`` data source on PySpark's Python Data Source API.

This package imports pyspark; the rest of ``delta_pyds`` does not. Importing it on a pyspark
older than 4.1 raises :class:`~delta_pyds.errors.UnsupportedSparkVersionError` naming the
version that works (:mod:`delta_pyds.spark.session.compat`), so ``delta_pyds.register(spark)``, the
readers and the auto-registration refuse Spark 4.0 by name."""

from __future__ import annotations

from typing import TYPE_CHECKING

from delta_pyds.spark.session.compat import check_supported

check_supported()  # before any module that needs a newer pyspark API fails on its own

from delta_pyds.spark.datasource.registration import register_sources  # noqa: E402
from delta_pyds.spark.datasource.source import DeltaDataSource  # noqa: E402

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["DeltaDataSource", "register"]


def register(spark: SparkSession, *, delta_name: bool = True) -> None:
    """Registers the ``pydelta`` source on a session and enables filter pushdown; with
    ``delta_name`` (the default) also the short name ``delta`` for the same source, but only
    when Spark finds no ``delta`` source of its own (delta-spark's jars keep theirs; see
    :mod:`delta_pyds.spark.datasource.registration`).

    Also installs the front doors (:mod:`delta_pyds.spark.front_doors`): Spark's own
    ``df.write...save/saveAsTable/insertInto``, ``df.writeTo(...)``, ``writeStream...toTable``,
    ``spark.sql``, ``spark.table`` and reads by name of a Delta format or table then behave as
    delta-spark's, where ``delta`` is this package's (never beside delta-spark's jars).

    Needed when the package ships with ``--py-files`` (Spark only auto-registers
    pip-installed ``pyspark_*`` modules); harmless otherwise."""
    register_sources(spark, delta_name=delta_name)
    from delta_pyds.spark.front_doors import install  # the one place the front doors are installed

    install(spark)
