"""``DeltaTable``: table maintenance and DML from Python, shaped like delta-spark's API.

The facade is :mod:`delta_pyds.spark.tables.delta_table`; DELETE is in
:mod:`~delta_pyds.spark.commands.delete`, UPDATE in :mod:`~delta_pyds.spark.commands.update`
(both on the rewriting machinery of :mod:`~delta_pyds.spark.commands.rewriter`), MERGE in
:mod:`~delta_pyds.spark.commands.merge`, OPTIMIZE in :mod:`~delta_pyds.spark.commands.optimize`, the table builder in
:mod:`~delta_pyds.spark.tables.builder`, VACUUM / CONVERT / GENERATE / table features in
:mod:`~delta_pyds.spark.commands.maintenance`, argument checks in
:mod:`~delta_pyds.spark.commands.args`; the steps that need no Spark
(restore, properties, deletion-vector deletes, row tracking, read sets, optimize plans)
in :mod:`delta_pyds.operations`."""

from delta_pyds.spark.commands.merge import DeltaMergeBuilder
from delta_pyds.spark.commands.optimize import DeltaOptimizeBuilder
from delta_pyds.spark.tables.builder import DeltaTableBuilder, IdentityGenerator
from delta_pyds.spark.tables.delta_table import DeltaTable

__all__ = ["DeltaMergeBuilder", "DeltaOptimizeBuilder", "DeltaTable", "DeltaTableBuilder", "IdentityGenerator"]
