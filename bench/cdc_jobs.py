"""The Spark jobs of the CDC merge of bench/dml.py, from a job group and the status tracker
(stage names are call sites), with each run's time:

    PYDELTA_BENCH_DIR=... python bench/cdc_jobs.py   (after ``bench/run.py dml`` wrote dml-4000000)
"""

from __future__ import annotations

import os
import shutil
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def main() -> None:
    from dml import cdc_source
    from pyspark.sql import SparkSession
    from tables import DATA

    import delta_pyds
    from delta_pyds import DeltaTable

    spark = (
        SparkSession.builder.master("local[2]")
        .config("spark.driver.memory", "4g")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    delta_pyds.register(spark)
    base, work = os.path.join(DATA, "dml-4000000"), os.path.join(DATA, "cdc-jobs")
    src = spark.createDataFrame(cdc_source(4_000_000).to_pandas()).cache()
    src.count()
    sc = spark.sparkContext
    for rep in range(2):
        shutil.rmtree(work, ignore_errors=True)
        shutil.copytree(base, work)
        group = f"cdc{rep}"
        sc.setJobGroup(group, group)
        t = time.perf_counter()
        merge = DeltaTable.forPath(spark, work).alias("t").merge(src.alias("s"), "t.id = s.id")
        merge.whenMatchedUpdateAll().whenNotMatchedInsertAll().execute()
        seconds = time.perf_counter() - t
        sc.setJobGroup("", "")
        tracker = sc.statusTracker()
        print(f"run {rep}: {seconds:.2f}s")
        for job in sorted(tracker.getJobIdsForGroup(group)):
            info = tracker.getJobInfo(job)
            stages = [tracker.getStageInfo(s) for s in info.stageIds]
            names = " | ".join(f"{s.name} ({s.numTasks} tasks)" for s in stages if s is not None)
            print(f"  job {job} {info.status}: {names}")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
