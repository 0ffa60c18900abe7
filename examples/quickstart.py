"""Quickstart: read a Delta table with pydelta (no Delta jars), time travel, projection.

    python examples/quickstart.py [TABLE_PATH]

Without an argument it reads a small table bundled with the tests (written by
delta-spark, with a checkpoint and several versions).
"""
import os
import sys

from pyspark.sql import SparkSession

import delta_pyds

HERE = os.path.dirname(os.path.abspath(__file__))
path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
    HERE, "..", "tests", "data", "delta-rs", "simple_table_with_checkpoint")

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
spark = (SparkSession.builder.master("local[2]").appName("pydelta-quickstart")
         .config("spark.ui.showConsoleProgress", "false").getOrCreate())
spark.sparkContext.setLogLevel("ERROR")
delta_pyds.register(spark)  # only needed with --py-files; pip installs auto-register

df = spark.read.format("pydelta").load(path)
print("schema:", df.schema.simpleString())
print("rows at the latest version:", df.count())
df.orderBy(df.columns[0]).show(5)

v0 = spark.read.format("pydelta").option("versionAsOf", 0).load(path)
print("rows at version 0:", v0.count())

spark.stop()
