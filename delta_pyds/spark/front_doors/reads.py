"""Front doors: reads (to be built)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def install(spark: SparkSession) -> None:
    """Installs this half of the front doors (nothing yet)."""
    return None
