"""Streaming sink latency: how long after ``start()`` a ``rate`` stream's first micro-batch is
committed, and the ``addBatch`` time of the next ones, for the three sinks a user would pick:
``format("delta")`` after ``register(spark)`` (the Spark-native path: ``foreachBatch``, Spark's
Parquet writer, a driver-side commit), ``format("pydelta")`` (the Python data source's sink: Python
worker processes plan, write and commit each batch) and Spark's own ``format("parquet")`` sink
(the floor). Each sink runs in a fresh process with a fresh ``local[*]`` session, so the first
batch pays what a new query pays. Run from the repository root::

    TZ=UTC PYSPARK_PYTHON=$(which python) python bench/stream_first_batch.py

It prints one row per sink and writes bench/results/stream-first-batch.json."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile

CHILD = r"""
import json, os, sys, time
from pyspark.sql import SparkSession
import delta_pyds
sink, root = sys.argv[1], sys.argv[2]
spark = SparkSession.builder.appName("first-batch").master("local[*]").getOrCreate()
delta_pyds.register(spark)
marker = os.path.join(root, "t", "_spark_metadata" if sink == "parquet" else "_delta_log")
started = time.time()
q = (spark.readStream.format("rate").load().selectExpr("value AS id").writeStream.format(sink)
     .option("checkpointLocation", os.path.join(root, "ck")).start(os.path.join(root, "t")))
while not (os.path.isdir(marker) and any(f[0].isdigit() for f in os.listdir(marker))):
    time.sleep(0.05)
first = time.time() - started
while len(q.recentProgress) < 4:
    time.sleep(0.2)
later = [p["durationMs"]["addBatch"] / 1000 for p in q.recentProgress[1:4]]
q.stop()
print("@@" + json.dumps({"sink": sink, "first_commit_s": round(first, 2), "later_add_batch_s": later}))
"""


def main() -> None:
    rows = []
    for sink in ("delta", "pydelta", "parquet"):
        with tempfile.TemporaryDirectory() as root:
            out = subprocess.run([sys.executable, "-c", CHILD, sink, root], capture_output=True, text=True, timeout=600)
        found = [line[2:] for line in out.stdout.splitlines() if line.startswith("@@")]
        if not found:
            raise SystemExit(out.stderr[-3000:])
        rows.append(json.loads(found[0]))
        print(rows[-1], flush=True)
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", "stream-first-batch.json")
    command = "TZ=UTC PYSPARK_PYTHON=$(which python) python bench/stream_first_batch.py"
    with open(path, "w") as f:
        json.dump({"command": command, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
