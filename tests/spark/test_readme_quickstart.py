"""The README's quickstart (its first ``python`` block, taken from README.md as a user copies it) runs
as it stands in a fresh Python process on a classic session; the tables it leaves hold the rows each
of its steps implies, read through both read paths and by deltalake."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from helpers import arrow_rows, deltalake_table

README = Path(__file__).resolve().parents[2] / "README.md"

RUNNER = r"""
import json, sys
code = open(sys.argv[1], encoding="utf-8").read()
ns = {"__name__": "__main__"}
exec(compile(code, "README.md#quickstart", "exec"), ns)
spark, path = ns["spark"], ns["path"]
from delta_pyds import DeltaTable
rows = lambda df: sorted([list(r) for r in df.select("id", "name", "day").collect()])
print("@@" + json.dumps({
    "path": path,
    "native": rows(spark.read.format("delta").load(path)),
    "datasource": rows(spark.read.format("pydelta").load(path)),
    "orders": rows(spark.table("sales.orders")),
    "orders_location": DeltaTable.forName(spark, "sales.orders").detail().first().location,
    "items": [spark.table("sales.items").count(), spark.table("sales.items").columns],
    "history": [r.operation for r in DeltaTable.forPath(spark, path).history().collect()],
}))
"""


def quickstart_code() -> str:
    text = README.read_text(encoding="utf-8")
    section = text[text.index("## Quickstart") :]
    match = re.search(r"```python\n(.*?)```", section, re.S)
    assert match is not None, "README's quickstart has no python block"
    return match.group(1)


def test_readme_quickstart_runs_and_leaves_the_rows_its_steps_imply(tmp_path):
    code = tmp_path / "quickstart.py"
    code.write_text(quickstart_code(), encoding="utf-8")
    runner = tmp_path / "runner.py"
    runner.write_text(RUNNER, encoding="utf-8")
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, TZ="UTC")
    env.pop("SPARK_REMOTE", None)
    result = subprocess.run(
        [sys.executable, str(runner), str(code)], capture_output=True, text=True, env=env, timeout=900, cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr[-4000:]
    got = json.loads(next(line[2:] for line in result.stdout.splitlines() if line.startswith("@@")))
    # two appends of ann/bob, bob deleted, ann updated then merged to ada (both rows), cy inserted, then
    # deleted by SQL, then the updates appended by write_delta
    want = [[1, "ada", "2024-05-01"]] * 3 + [[3, "cy", "2024-05-03"]]
    assert got["native"] == got["datasource"] == want
    assert sorted(list(r) for r in arrow_rows(deltalake_table(got["path"]), ["id", "name", "day"])) == want
    # (OPTIMIZE commits nothing: every partition holds one file by then, as in delta-spark)
    assert got["history"][::-1] == [
        "WRITE", "WRITE", "DELETE", "UPDATE", "MERGE", "DELETE", "VACUUM START", "VACUUM END", "WRITE",
    ]  # fmt: skip
    # saveAsTable (partitioned), INSERT INTO, then overwritePartitions of the two days the frame holds
    orders = [[1, "ann", "2024-05-01"], [2, "bob", "2024-05-02"], [4, "dee", "2024-05-04"]]
    assert got["orders"] == orders
    assert sorted(list(r) for r in arrow_rows(deltalake_table(got["orders_location"]), ["id", "name", "day"])) == orders
    assert got["items"] == [0, ["id", "day"]]
