"""OPTIMIZE ZORDER BY from a Spark Connect client (one local Connect server in a subprocess, as
tests/spark/sql/test_sql_connect.py starts one): the Z-order key of many distinct quantile bounds
is a shallow expression (a deep chain of ``+`` exceeded the protobuf nesting limit of Spark
Connect's plan decoder), and the files it writes hold the rows in the order the classic path
writes them, with the same key values."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from delta_pyds import DeltaTable
from delta_pyds.table.snapshot import Snapshot
from delta_pyds.write.plan import commit_arrow

SCRIPT = r"""
import json, sys
from pyspark.sql import SparkSession
spark = (
    SparkSession.builder.remote("local[2]")  # as the tests' classic session: the same quantile sketches
    .config("spark.sql.session.timeZone", "UTC")
    .config("spark.sql.shuffle.partitions", "2")
    .config("spark.default.parallelism", "2")
    .getOrCreate()
)
assert type(spark).__module__.startswith("pyspark.sql.connect"), type(spark)
import delta_pyds
from delta_pyds import DeltaTable
from delta_pyds.spark.commands.zorder import with_zorder_key
delta_pyds.register(spark)
api, sql = sys.argv[1], sys.argv[2]
out = {}
df = delta_pyds.read_delta(spark, api)
out["keys"] = sorted([r.id, r.k] for r in with_zorder_key(df, ["x", "y"], "k").select("id", "k").collect())
m = DeltaTable.forPath(spark, api).optimize().executeZOrderBy("x", "y").collect()[0].metrics
out["api"] = [m.numFilesAdded, m.numFilesRemoved]
m = delta_pyds.sql(spark, f"OPTIMIZE delta.`{sql}` ZORDER BY (x, y)").collect()[0].metrics
out["sql"] = [m.numFilesAdded, m.numFilesRemoved]
print(json.dumps(out))
spark.stop()
"""


def _files_rows(path):
    """The rows (id) of each live file in file order, the files sorted by their first rows."""
    snap = Snapshot.load(path)
    out = [pq.read_table(os.path.join(path, p)).column("id").to_pylist() for p in snap.files.column("path").to_pylist()]
    return sorted(out)


@pytest.mark.slow
def test_zorder_from_spark_connect_matches_the_classic_path(spark, tmp_path):
    base = str(tmp_path / "base")
    n = 1200  # every column has far more distinct values than the 255 quantile bounds
    for lo in (0, n // 2):
        ids = list(range(lo, lo + n // 2))
        commit_arrow(
            base,
            pa.table(
                {
                    "id": pa.array(ids, pa.int64()),
                    "x": pa.array([(i * 7919) % n for i in ids], pa.int64()),
                    "y": pa.array([float((i * 104729) % 997) for i in ids], pa.float64()),
                }
            ),
        )
    paths = {name: str(tmp_path / name) for name in ("api", "sql", "classic")}
    for p in paths.values():
        shutil.copytree(base, p)  # the same files, the same names: the same Spark partitions
    script = tmp_path / "connect_zorder.py"
    script.write_text(SCRIPT)
    env = dict(os.environ, SPARK_TESTING="1", PYSPARK_PYTHON=sys.executable, TZ="UTC")
    result = subprocess.run(
        [sys.executable, str(script), paths["api"], paths["sql"]], capture_output=True, text=True, env=env, timeout=900
    )
    assert result.returncode == 0, result.stderr[-3000:]
    got = json.loads(result.stdout.strip().splitlines()[-1])
    assert got["api"] == got["sql"] == [1, 2]
    # the classic path on a twin: the same key values, the same files holding the rows in the same order
    from delta_pyds import read_delta
    from delta_pyds.spark.commands.zorder import with_zorder_key

    df = read_delta(spark, paths["classic"])
    keys = sorted([r.id, r.k] for r in with_zorder_key(df, ["x", "y"], "k").select("id", "k").collect())
    assert got["keys"] == keys
    assert len({k for _, k in keys}) > 255  # many buckets on both columns: a deep key before
    DeltaTable.forPath(spark, paths["classic"]).optimize().executeZOrderBy("x", "y")
    classic = _files_rows(paths["classic"])
    assert _files_rows(paths["api"]) == classic == _files_rows(paths["sql"])
    assert sorted(i for f in classic for i in f) == list(range(n))
