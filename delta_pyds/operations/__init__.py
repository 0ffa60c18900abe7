"""Table operations that need no Spark, run by the ``DeltaTable`` facade
(:mod:`delta_pyds.spark.tables`): vacuum, restore, properties and protocol upgrades, the
deletion-vector delete commit, row tracking for rewrites, DML read sets and optimize
plans. Nothing here imports pyspark."""
