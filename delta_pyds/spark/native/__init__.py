"""The Spark-native data path: Spark's own Parquet reader and writer move the data, the
core handles the Delta log (see the design notes, section 2c)."""
