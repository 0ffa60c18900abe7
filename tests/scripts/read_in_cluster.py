"""Reads tables with pydelta in local-cluster mode (separate executor JVMs and Python
workers) and prints one JSON line per table: row count, sorted rows, executor pids."""

import json
import os
import sys

from pyspark.sql import SparkSession

import delta_pyds

spark = (
    SparkSession.builder.master("local-cluster[2,1,1024]")
    .appName("pydelta-cluster")
    .config("spark.ui.enabled", "false")
    .config("spark.sql.session.timeZone", "UTC")
    .config("spark.executorEnv.PYSPARK_PYTHON", sys.executable)
    .getOrCreate()
)
spark.sparkContext.setLogLevel("ERROR")
delta_pyds.register(spark)
driver_pid = os.getpid()
for path in sys.argv[1:]:
    df = spark.read.format("pydelta").load(path)
    rows = sorted(tuple(r) for r in df.collect())
    pids = spark.sparkContext.parallelize(range(4), 4).map(lambda _: os.getpid()).distinct().collect()
    print(
        json.dumps(
            {
                "path": path,
                "count": df.count(),
                "rows": [list(map(str, r)) for r in rows],
                "executor_pids": sorted(pids),
                "driver_pid": driver_pid,
            }
        )
    )
spark.stop()
