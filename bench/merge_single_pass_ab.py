"""A/B of the CDC MERGE of bench/dml.py: MERGE's single pass on (the default) and off
(``spark.pydelta.dml.singlePassMaxBytes=0``: the two-phase plan), alternated in one process
with deltalake's merge of the same source, each on a fresh copy of ``dml-4000000``; the
medians after the first (warm-up) round::

    TZ=UTC PYSPARK_PYTHON=$(command -v python) python bench/merge_single_pass_ab.py [ROUNDS]

(after ``bench/run.py dml`` wrote the table under ``PYDELTA_BENCH_DIR``).
"""

from __future__ import annotations

import os
import shutil
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def main(rounds: int) -> None:
    from deltalake import DeltaTable as DL
    from dml import cdc_source
    from run import bench_session
    from tables import DATA

    from delta_pyds import DeltaTable

    spark = bench_session()
    base, work = os.path.join(DATA, "dml-4000000"), os.path.join(DATA, "cdc-ab")
    src = cdc_source(4_000_000)
    sdf = spark.createDataFrame(src.to_pandas()).cache()
    sdf.count()

    def pydelta(single: bool) -> None:
        spark.conf.set("spark.pydelta.dml.singlePassMaxBytes", str(16 << 20) if single else "0")
        merge = DeltaTable.forPath(spark, work).alias("t").merge(sdf.alias("s"), "t.id = s.id")
        merge.whenMatchedUpdateAll().whenNotMatchedInsertAll().execute()

    def deltalake() -> None:
        merge = DL(work).merge(src, "t.id = s.id", source_alias="s", target_alias="t")
        merge.when_matched_update_all().when_not_matched_insert_all().execute()

    runs = {"one job": lambda: pydelta(True), "two phases": lambda: pydelta(False), "deltalake": deltalake}
    times: dict[str, list[float]] = {k: [] for k in runs}
    for rnd in range(rounds):
        for name, fn in runs.items():
            shutil.rmtree(work, ignore_errors=True)
            shutil.copytree(base, work)
            started = time.perf_counter()
            fn()
            if rnd:
                times[name].append(time.perf_counter() - started)
    med = {k: statistics.median(v) for k, v in times.items()}
    for name, seconds in med.items():
        each = ", ".join(f"{x:.3f}" for x in times[name])
        print(f"{name:12s} median {seconds:.3f} s  / deltalake {seconds / med['deltalake']:.2f}  (runs: {each})")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 9)
