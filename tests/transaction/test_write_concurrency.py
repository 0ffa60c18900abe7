"""Concurrent writers in separate processes: nothing lost, nothing duplicated, every
version readable by deltalake."""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import subprocess
import sys
import textwrap

import pyarrow as pa
import pytest
from helpers import arrow_rows, deltalake_table

from delta_pyds.table.snapshot import Snapshot
from delta_pyds.write.plan import commit_arrow


def _appender(args):
    path, k, n = args
    import pyarrow as pa

    from delta_pyds.write.plan import commit_arrow

    versions = []
    for j in range(n):
        ids = [k * 1000 + j * 10 + i for i in range(3)]
        result = commit_arrow(path, pa.table({"id": ids, "p": [k % 2] * 3}))
        versions.append(result.version)
    return versions


def test_concurrent_appenders_in_processes(tmp_path):
    path = str(tmp_path / "t")
    commit_arrow(path, pa.table({"id": [-1], "p": [0]}), options={"partitionBy": "p"})
    workers, each = 4, 6
    with mp.get_context("spawn").Pool(workers) as pool:
        versions = pool.map(_appender, [(path, k, each) for k in range(workers)])
    flat = sorted(v for vs in versions for v in vs)
    assert flat == list(range(1, workers * each + 1))  # every commit got its own version
    expected = sorted([-1] + [k * 1000 + j * 10 + i for k in range(workers) for j in range(each) for i in range(3)])
    assert sorted(r[0] for r in arrow_rows(deltalake_table(path), ["id"])) == expected
    for v in range(0, workers * each + 1, 5):  # every version is readable
        assert len(arrow_rows(deltalake_table(path, version=v), ["id"])) == 1 + 3 * v
    assert os.path.exists(os.path.join(path, "_delta_log", "00000000000000000020.checkpoint.parquet"))
    assert Snapshot.load(path).version == workers * each


def _overwriter(args):
    path, k = args
    import pyarrow as pa

    from delta_pyds.errors import ConcurrentModificationError
    from delta_pyds.write.plan import commit_arrow

    try:
        commit_arrow(path, pa.table({"id": [k] * 2, "p": [0, 1]}), mode="overwrite")
        return "ok"
    except ConcurrentModificationError:
        return "conflict"


def test_concurrent_overwrites_never_mix(tmp_path):
    path = str(tmp_path / "t")
    commit_arrow(path, pa.table({"id": [0], "p": [0]}), options={"partitionBy": "p"})
    with mp.get_context("spawn").Pool(4) as pool:
        outcomes = pool.map(_overwriter, [(path, k) for k in range(1, 9)])
    assert "ok" in outcomes
    rows = arrow_rows(deltalake_table(path), ["id", "p"])
    # the table holds exactly one overwrite's rows (or several successive ones, the last wins)
    assert len(rows) == 2 and len({r[0] for r in rows}) == 1
    commits = [f for f in os.listdir(os.path.join(path, "_delta_log")) if f.endswith(".json")]
    assert len(commits) == 1 + outcomes.count("ok")


_SPARK_WRITER = textwrap.dedent("""
    import sys
    from pyspark.sql import SparkSession
    import delta_pyds
    spark = (SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
             .config("spark.sql.session.timeZone", "UTC").getOrCreate())
    delta_pyds.register(spark)
    path, k = sys.argv[1], int(sys.argv[2])
    for j in range(3):
        spark.range(k * 100 + j * 10, k * 100 + j * 10 + 5, numPartitions=2).selectExpr(
            "id", "cast(id % 3 as int) p").write.format("pydelta").option("partitionBy", "p") \\
            .mode("append").save(path)
    spark.stop()
""")


@pytest.mark.slow
@pytest.mark.spark  # spark-submit processes
def test_concurrent_spark_writers(tmp_path):
    path = str(tmp_path / "t")
    commit_arrow(
        path, pa.table({"id": pa.array([-1], pa.int64()), "p": pa.array([2], pa.int32())}), options={"partitionBy": "p"}
    )
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, TZ="UTC")
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _SPARK_WRITER, path, str(k)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        for k in range(3)
    ]
    for p in procs:
        _, err = p.communicate(timeout=600)
        assert p.returncode == 0, err.decode()[-3000:]
    expected = sorted([-1] + [k * 100 + j * 10 + i for k in range(3) for j in range(3) for i in range(5)])
    assert sorted(r[0] for r in arrow_rows(deltalake_table(path), ["id"])) == expected
    infos = []
    for v in range(1, 10):
        with open(os.path.join(path, "_delta_log", f"{v:020d}.json")) as f:
            infos.append(json.loads(f.readline())["commitInfo"])
    assert all(i["isBlindAppend"] for i in infos)
