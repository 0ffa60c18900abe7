"""Old import path of the ``DeltaTable`` API, kept for code written against it: the
classes live in :mod:`delta_pyds.spark.tables` (importing this module imports pyspark)."""

from delta_pyds.spark.tables import DeltaMergeBuilder, DeltaOptimizeBuilder, DeltaTable

__all__ = ["DeltaTable", "DeltaMergeBuilder", "DeltaOptimizeBuilder"]
