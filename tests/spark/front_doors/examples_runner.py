"""Runs copies of delta-io/delta's examples/python one after another in this process (one JVM; a
Spark Connect session per example when SPARK_API_MODE=connect), each while holding a lock on the
fixed /tmp paths the examples write, and prints one JSON line per example (after MARK): its name,
the traceback of its failure (None: it ran to its end) and what it printed."""

from __future__ import annotations

import contextlib
import fcntl
import io
import json
import os
import runpy
import sys
import traceback

MARK = "@@example@@ "
LOCK = "/tmp/delta_pyds-examples.lock"  # the examples write /tmp/delta-table ... : one run at a time

for path in sys.argv[1:]:
    out = io.StringIO()
    error = None
    with open(LOCK, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        with contextlib.redirect_stdout(out):
            try:
                runpy.run_path(path, run_name="__main__")
            except BaseException:  # noqa: B036 - an example's failure is its result
                error = traceback.format_exc()
        try:  # an example that failed half-way leaves its session: the next one starts clean
            from pyspark.sql import SparkSession

            active = SparkSession.getActiveSession()
            if active is not None and error is not None:
                active.stop()
        except Exception:
            pass
    print(MARK + json.dumps({"name": os.path.basename(path), "error": error, "stdout": out.getvalue()}), flush=True)
