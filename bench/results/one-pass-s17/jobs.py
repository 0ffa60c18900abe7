"""The Spark jobs of the CDC merge with the gaps between them (Spark UI REST times)."""

import json
import shutil
import sys
import time
import urllib.request

sys.path.insert(0, "/work/main/bench")
from datetime import datetime

from dml import cdc_source
from pyspark.sql import SparkSession

import delta_pyds
from delta_pyds import DeltaTable

spark = (
    SparkSession.builder.master("local[2]")
    .config("spark.sql.session.timeZone", "UTC")
    .config("spark.ui.showConsoleProgress", "false")
    .config("spark.driver.memory", "4g")
    .getOrCreate()
)
spark.sparkContext.setLogLevel("ERROR")
delta_pyds.register(spark)
base = "/tmp/i39m-bench/dml-4000000"
work = "/tmp/s17/work"
src = spark.createDataFrame(cdc_source(4_000_000).to_pandas()).cache()
src.count()
sc = spark.sparkContext
ui = sc.uiWebUrl
app = sc.applicationId


def ts(s):
    return datetime.strptime(s.replace("GMT", ""), "%Y-%m-%dT%H:%M:%S.%f").timestamp()


def run():
    t = DeltaTable.forPath(spark, work).alias("t")
    t.merge(src.alias("s"), "t.id = s.id").whenMatchedUpdateAll().whenNotMatchedInsertAll().execute()


for i in range(int(sys.argv[1]) if len(sys.argv) > 1 else 4):
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(base, work)
    g = f"g{i}"
    sc.setJobGroup(g, g)
    t0 = time.time()
    run()
    t1 = time.time()
    sc.setJobGroup("", "")
    jobs = json.load(urllib.request.urlopen(f"{ui}/api/v1/applications/{app}/jobs?status=succeeded"))
    jobs = [j for j in jobs if j.get("jobGroup") == g]
    print(f"run {i}: {t1 - t0:.3f}s")
    prev = t0
    for j in sorted(jobs, key=lambda j: j["jobId"]):
        s, e = ts(j["submissionTime"]), ts(j["completionTime"])
        print(f"  gap {s - prev:6.3f}  job {j['jobId']:3d} {e - s:6.3f}s {j['name'][:70]}")
        prev = e
    print(f"  gap {t1 - prev:6.3f}  (end)")
