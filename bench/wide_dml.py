"""DELETE, UPDATE and MERGE latency on a wide, small table: the driver's cost of building each
statement's projections, which grows with the number of columns (a 100-row table of N long
columns in one file, written by deltalake; each run on a fresh copy; median of the runs after
the first):

    python bench/wide_dml.py 300 [reps]

Prints one line per statement: ``<statement> <N> columns: <seconds> s``.
"""

from __future__ import annotations

import os
import shutil
import statistics
import sys
import tempfile
import time


def main() -> None:
    import pyarrow as pa
    from deltalake import write_deltalake
    from pyspark.sql import SparkSession

    import delta_pyds
    from delta_pyds import DeltaTable

    columns = int(sys.argv[1]) if len(sys.argv) > 1 else 300
    reps = int(sys.argv[2]) if len(sys.argv) > 2 else 4
    spark = (
        SparkSession.builder.master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    delta_pyds.register(spark)
    work = os.path.join(tempfile.mkdtemp(prefix="wide-dml-"), "t")

    def fresh() -> None:
        shutil.rmtree(work, ignore_errors=True)
        write_deltalake(work, pa.table({f"c{i}": pa.array(range(100)) for i in range(columns)}))

    rows = pa.table({f"c{i}": pa.array(range(95, 105)) for i in range(columns)})
    src = spark.createDataFrame(rows.to_pandas()).cache()
    src.count()
    statements = {
        "delete": lambda: DeltaTable.forPath(spark, work).delete("c0 = 5"),
        "update": lambda: DeltaTable.forPath(spark, work).update("c0 = 5", {"c1": "c1 + 1"}),
        "merge": lambda: (
            DeltaTable.forPath(spark, work)
            .alias("t")
            .merge(src.alias("s"), "t.c0 = s.c0")
            .whenMatchedUpdateAll()
            .whenNotMatchedInsertAll()
            .execute()
        ),
    }
    for name, run in statements.items():
        times = []
        for _ in range(reps):
            fresh()
            started = time.perf_counter()
            run()
            times.append(time.perf_counter() - started)
        print(f"{name} {columns} columns: {statistics.median(times[1:] or times):.3f} s", flush=True)
    shutil.rmtree(os.path.dirname(work), ignore_errors=True)


if __name__ == "__main__":
    main()
