"""``DeltaTable``: table maintenance and DML from Python, shaped like delta-spark's API.

The facade is :mod:`delta_pyds.spark.tables.delta_table`; DELETE is in
:mod:`~delta_pyds.spark.tables.delete`, UPDATE in :mod:`~delta_pyds.spark.tables.update`
(both on the rewriting machinery of :mod:`~delta_pyds.spark.tables.rewriter`), MERGE in
:mod:`~delta_pyds.spark.tables.merge`, OPTIMIZE in :mod:`~delta_pyds.spark.tables.optimize`, the table builder in
:mod:`~delta_pyds.spark.tables.builder`, VACUUM / CONVERT / GENERATE / table features in
:mod:`~delta_pyds.spark.tables.maintenance`, argument checks in
:mod:`~delta_pyds.spark.tables.args`; the steps that need no Spark
(restore, properties, deletion-vector deletes, row tracking, read sets, optimize plans)
in :mod:`delta_pyds.operations`."""

from delta_pyds.spark.tables.builder import DeltaTableBuilder, IdentityGenerator
from delta_pyds.spark.tables.delta_table import DeltaTable
from delta_pyds.spark.tables.merge import DeltaMergeBuilder
from delta_pyds.spark.tables.optimize import DeltaOptimizeBuilder

__all__ = ["DeltaMergeBuilder", "DeltaOptimizeBuilder", "DeltaTable", "DeltaTableBuilder", "IdentityGenerator"]
