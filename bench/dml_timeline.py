"""A MERGE's driver timeline (issue 47): the 200k-row upsert (``merge``) or the 10k-row CDC
batch (``cdc``) of bench/dml.py, run 5 times on fresh copies of the ``dml`` table; for the last
two runs, seconds from the statement's start to the entry and exit of ``source_keys`` (the
key-pruning job) and ``write_staged`` (the write), and to each Spark job's submission and
completion (Spark's status store). Session confs as ``key=value`` after the part::

    python bench/dml_timeline.py merge spark.pydelta.dml.singlePassMaxBytes=1073741824
"""

from __future__ import annotations

import os
import shutil
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import dml  # noqa: E402
from run import bench_session  # noqa: E402
from tables import DATA, merge_source  # noqa: E402

import delta_pyds.spark.commands.merge.pruning as pruning  # noqa: E402
import delta_pyds.spark.native.write as native_write  # noqa: E402
from delta_pyds import DeltaTable  # noqa: E402

ROWS = 4_000_000


def main(part: str, confs: list[str]) -> None:
    spark = bench_session()
    for kv in confs:
        key, value = kv.split("=", 1)
        spark.conf.set(key, value)
    base = os.path.join(DATA, f"dml-{ROWS}")
    src = merge_source(ROWS, 0.05) if part == "merge" else dml.cdc_source(ROWS)
    src_df = spark.createDataFrame(src.to_pandas()).cache()
    src_df.count()
    marks: list[tuple[float, str]] = []

    def wrap(module, name: str) -> None:
        fn = getattr(module, name)

        def timed(*args, **kwargs):
            marks.append((time.time(), "> " + name))
            try:
                return fn(*args, **kwargs)
            finally:
                marks.append((time.time(), "< " + name))

        setattr(module, name, timed)

    wrap(native_write, "write_staged")
    wrap(pruning, "source_keys")
    sc = spark.sparkContext
    work = os.path.join(os.environ.get("TMPDIR", "/tmp"), "pydelta-dml-timeline")
    for run in range(5):
        shutil.rmtree(work, ignore_errors=True)
        shutil.copytree(base, work)
        marks.clear()
        group = f"timeline-{time.time_ns()}"
        sc.setJobGroup(group, "timed")
        t0 = time.time()
        (
            DeltaTable.forPath(spark, work)
            .alias("t")
            .merge(src_df.alias("s"), "t.id = s.id")
            .whenMatchedUpdateAll()
            .whenNotMatchedInsertAll()
            .execute()
        )
        t1 = time.time()
        sc.setJobGroup("", "")
        events = list(marks)
        for job in sc.statusTracker().getJobIdsForGroup(group):
            data = sc._jsc.sc().statusStore().job(job)
            events.append((data.submissionTime().get().getTime() / 1000, f"  job {job} start"))
            events.append((data.completionTime().get().getTime() / 1000, f"  job {job} end"))
        if run >= 3:
            print(f"run {run}: {t1 - t0:.3f}s")
            for t, name in sorted(events):
                print(f"   {t - t0:7.3f} {name}")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
