"""The Spark-native data path: Delta's log planned in Python, the data read and written by
Spark's own Parquet format (see :mod:`delta_pyds.spark.native.read` and
:mod:`delta_pyds.spark.native.write`, and the design notes, section 2c)."""
