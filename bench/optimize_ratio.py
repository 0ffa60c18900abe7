"""OPTIMIZE of the 400-small-file table (bench/dml.py's ``dml-small-1000``), pydelta and
deltalake alternated on fresh copies: each pair runs back to back, so a shared machine's
load weighs on both alike; prints every pair's ratio, the median ratio and the load.

    PYDELTA_BENCH_DIR=/tmp/b python bench/optimize_ratio.py [PAIRS]   (default 9; first dropped)
"""

from __future__ import annotations

import os
import shutil
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def main(pairs: int) -> None:
    from deltalake import DeltaTable as DL
    from pyspark.sql import SparkSession
    from tables import DATA, dml_table

    from delta_pyds import DeltaTable

    base = dml_table(os.path.join(DATA, "dml-small-1000"), 400_000, 400)
    work = os.path.join(DATA, "optimize-ratio-work")
    spark = SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false").getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")

    def timed(fn) -> float:
        shutil.rmtree(work, ignore_errors=True)
        shutil.copytree(base, work)
        t = time.perf_counter()
        fn(work)
        return time.perf_counter() - t

    print("load before:", os.getloadavg(), flush=True)
    ours, theirs = [], []
    for i in range(pairs):
        a = timed(lambda p: DeltaTable.forPath(spark, p).optimize().executeCompaction())
        b = timed(lambda p: DL(p).optimize.compact())
        print(f"pair {i}: pydelta {a:.3f} s, deltalake {b:.3f} s, ratio {a / b:.2f}", flush=True)
        if i or pairs == 1:
            ours.append(a)
            theirs.append(b)
    shutil.rmtree(work, ignore_errors=True)
    ratios = sorted(a / b for a, b in zip(ours, theirs))
    print(
        f"median: pydelta {statistics.median(ours):.3f} s, deltalake {statistics.median(theirs):.3f} s, "
        f"ratio of medians {statistics.median(ours) / statistics.median(theirs):.2f}, "
        f"median pair ratio {statistics.median(ratios):.2f}",
        flush=True,
    )
    print("load after:", os.getloadavg(), flush=True)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 9)
