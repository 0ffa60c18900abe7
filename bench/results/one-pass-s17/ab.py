"""The A/B of the one-job MERGE prototype (README.md beside it): prototype on, off, deltalake."""

import os
import shutil
import statistics
import sys
import time

sys.path.insert(0, os.environ.get("BENCH", "/work/main/bench"))
from deltalake import DeltaTable as DL
from dml import cdc_source
from pyspark.sql import SparkSession

import delta_pyds
from delta_pyds import DeltaTable

spark = (
    SparkSession.builder.master("local[2]")
    .config("spark.sql.session.timeZone", "UTC")
    .config("spark.ui.enabled", "false")
    .config("spark.driver.memory", "4g")
    .getOrCreate()
)
spark.sparkContext.setLogLevel("ERROR")
delta_pyds.register(spark)
base = "/tmp/i39m-bench/dml-4000000"
work = "/tmp/s17/work"
srcpa = cdc_source(4_000_000)
src = spark.createDataFrame(srcpa.to_pandas()).cache()
src.count()


def run():
    t = DeltaTable.forPath(spark, work).alias("t")
    t.merge(src.alias("s"), "t.id = s.id").whenMatchedUpdateAll().whenNotMatchedInsertAll().execute()


def dl():
    m = DL(work).merge(srcpa, "t.id = s.id", source_alias="s", target_alias="t")
    m.when_matched_update_all().when_not_matched_insert_all().execute()


R = {"one": [], "two": [], "dl": []}
for _ in range(int(sys.argv[1]) if len(sys.argv) > 1 else 8):
    for k in R:
        spark.conf.set("spark.pydelta.merge.onePass.enabled", "true" if k == "one" else "false")
        shutil.rmtree(work, ignore_errors=True)
        shutil.copytree(base, work)
        a = time.perf_counter()
        (dl if k == "dl" else run)()
        R[k].append(time.perf_counter() - a)
for k, v in R.items():
    print(k, round(statistics.median(v[1:]), 3), round(min(v), 3))
print(
    "ratio one/dl",
    round(statistics.median(R["one"][1:]) / statistics.median(R["dl"][1:]), 2),
    "two/dl",
    round(statistics.median(R["two"][1:]) / statistics.median(R["dl"][1:]), 2),
)
