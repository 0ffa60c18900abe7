"""Executor-side behaviour in local-cluster mode: separate executor JVMs and Python
workers read the files and apply deletion vectors."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from conftest import HERE, table_path
from helpers import deltalake_table


@pytest.mark.slow
def test_deletion_vectors_applied_on_executors():
    tables = [
        table_path("delta-rs/table-with-dv-small"),
        table_path("kernel-rs/cdf-table-with-dv"),
        table_path("delta-rs/delta-0.8.0-partitioned"),
    ]
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, TZ="UTC")
    out = subprocess.run(
        [sys.executable, os.path.join(HERE, "scripts", "read_in_cluster.py"), *tables],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    results = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    assert len(results) == len(tables)
    for result, path in zip(results, tables):
        expected = deltalake_table(path)
        assert result["count"] == expected.num_rows
        assert result["driver_pid"] not in result["executor_pids"]
        cols = expected.column_names
        exp_rows = sorted(tuple(str(r[c]) for c in cols) for r in expected.to_pylist())
        assert len(result["rows"]) == len(exp_rows)
    assert results[0]["count"] == 8  # two of ten rows deleted by the deletion vector
