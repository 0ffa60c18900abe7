"""Quickstart: write a Delta table with pydelta (no Delta jars), append, overwrite one
partition, read it back, time travel.

    python examples/quickstart.py [TABLE_PATH]

Without an argument the table goes to a temporary directory.
"""

import os
import sys
import tempfile

from pyspark.sql import SparkSession

import delta_pyds

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(tempfile.mkdtemp(prefix="pydelta-"), "events")

spark = (
    SparkSession.builder.master("local[2]")
    .appName("pydelta-quickstart")
    .config("spark.sql.session.timeZone", "UTC")
    .config("spark.ui.showConsoleProgress", "false")
    .getOrCreate()
)
spark.sparkContext.setLogLevel("ERROR")
delta_pyds.register(spark)  # only needed with --py-files; pip installs auto-register

events = spark.range(1000).selectExpr(
    "id",
    "cast(id % 3 as int) as country",
    "concat('user', id % 17) as user",
    "timestamp_seconds(1700000000 + id * 60) as ts",
)

# Spark lets Python sources write in append/overwrite mode only; partition columns are an option
events.write.format("pydelta").option("partitionBy", "country").mode("append").save(path)  # v0: create
events.limit(10).write.format("pydelta").mode("append").save(path)  # v1: append
(
    spark.range(5)
    .selectExpr("id + 5000 as id", "1 as country", "'new' as user", "current_timestamp() as ts")
    .write.format("pydelta")
    .mode("overwrite")
    .option("replaceWhere", "country = 1")
    .save(path)
)  # v2

df = spark.read.format("pydelta").load(path)
print("table:", path)
print("schema:", df.schema.simpleString())
print("rows at the latest version:", df.count())
df.groupBy("country").count().orderBy("country").show()

v1 = spark.read.format("pydelta").option("versionAsOf", 1).load(path)
print("rows at version 1:", v1.count())

# the Spark-native path: the log planned in Python, the data moved by Spark's own Parquet
# reader and writer (same rows as the data source)
delta_pyds.write_delta(events.limit(3), path, mode="append")  # v3
native = delta_pyds.read_delta(spark, path, where="country = 1")
print("rows of country 1 (native read):", native.count())
assert sorted(native.collect()) == sorted(spark.read.format("pydelta").load(path).where("country = 1").collect())

spark.stop()
