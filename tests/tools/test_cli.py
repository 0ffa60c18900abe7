"""``python -m delta_pyds``: every subcommand reads a real table, and fails with one clear
line on stderr and exit status 1 for a missing path, a directory that is not a Delta table
(empty, plain Parquet) and a file."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from delta_pyds.tools.cli import main
from delta_pyds.write.plan import commit_arrow

COMMANDS = ["history", "files", "protocol", "schema", "vacuum"]


@pytest.fixture(scope="module")
def places(tmp_path_factory):
    root = tmp_path_factory.mktemp("cli")
    (root / "empty").mkdir()
    (root / "parquet").mkdir()
    pq.write_table(pa.table({"a": [1]}), str(root / "parquet" / "part-0.parquet"))
    (root / "empty_log" / "_delta_log").mkdir(parents=True)
    table = str(root / "table")
    commit_arrow(table, pa.table({"a": [1, 2]}))
    commit_arrow(table, pa.table({"a": [3]}))
    return {
        "missing": str(root / "missing"),
        "empty": str(root / "empty"),
        "parquet": str(root / "parquet"),
        "empty_log": str(root / "empty_log"),
        "file": str(root / "parquet" / "part-0.parquet"),
        "table": table,
    }


@pytest.mark.parametrize("where", ["missing", "empty", "parquet", "empty_log", "file"])
@pytest.mark.parametrize("command", COMMANDS)
def test_no_table_is_an_error_with_status_1(places, capsys, command, where):
    path = places[where]
    assert main([command, path]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in err
    assert "not a Delta table" in lines[0] and path in lines[0]


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_reads_a_table(places, capsys, command):
    assert main([command, places["table"]]) == 0
    out = capsys.readouterr().out
    records = [json.loads(line) for line in out.splitlines()]
    if command == "history":
        assert [r["version"] for r in records] == [1, 0]
    elif command == "files":
        assert len(records) == 2
    elif command in ("protocol", "schema"):
        assert records[0]["version"] == 1
    else:
        assert records == []  # nothing to vacuum


def test_the_module_entry_point_exits_non_zero(places):
    env = dict(os.environ, PYTHONPATH=os.getcwd())
    done = subprocess.run(
        [sys.executable, "-m", "delta_pyds", "history", places["missing"]], capture_output=True, text=True, env=env
    )
    assert done.returncode == 1 and done.stdout == ""
    assert "not a Delta table" in done.stderr and places["missing"] in done.stderr
