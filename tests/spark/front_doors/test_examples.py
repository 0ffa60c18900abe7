"""delta-io/delta's own Python examples (examples/python of github:delta-io/delta, copied in
examples/ with their Apache-2.0 headers) run after only the changes a porting user makes
(examples.diff: ``from delta_pyds import DeltaTable``, ``import delta_pyds``, the two Delta session
confs dropped, ``delta_pyds.register(spark)`` after ``getOrCreate()``), on a classic session and on
Spark Connect. One subprocess per session kind runs every example (examples_runner.py); each step's
printed rows (``show()``) are checked against delta-spark's results, worked out here by hand from
what each step does (the examples delete their tables at the end, so the printed rows are the record).

Examples whose first write is ``df.write.format("delta").save(path)`` in the default save mode or
``saveAsTable`` run through the writers' front door (delta_pyds.spark.front_doors.writers);
streaming.py's repartition is a ``dataChange=false`` overwrite the stream skips. table_exists.py runs on classic
sessions only: Spark Connect analyses ``spark.read.load`` lazily (delta-spark's Delta Connect too),
so the example's ``exists()`` cannot see a missing table there."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLES = os.path.join(HERE, "examples")
RUNNER = os.path.join(HERE, "examples_runner.py")
ALL = (
    "quickstart.py",
    "quickstart_sql.py",
    "quickstart_sql_on_paths.py",
    "utilities.py",
    "change_data_feed.py",
    "table_exists.py",
    "streaming.py",
)
CLASSIC_ONLY = {"table_exists.py"}
# a Spark session (classic) or a Connect server per session kind, 7 examples; `examples`: .ci/matrix
# runs them on MATRIX_EXAMPLE_VERSIONS too (off in CI: docs/deployment.md)
pytestmark = [pytest.mark.slow, pytest.mark.examples]


def _run(mode: str, tmp: str) -> dict[str, dict]:
    env = dict(os.environ, PYTHONPATH=os.getcwd() + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("SPARK_REMOTE", None)
    names = [n for n in ALL if mode == "classic" or n not in CLASSIC_ONLY]
    if mode == "connect":
        env["SPARK_API_MODE"] = "connect"
    out = subprocess.run(
        [sys.executable, RUNNER, *[os.path.join(EXAMPLES, n) for n in names]],
        cwd=tmp,  # spark-warehouse and metastore_db of the examples' catalog tables
        env=env,
        capture_output=True,
        text=True,
        timeout=3300,  # ~3 min per session kind on 2 idle cores; far more on a loaded machine
    )
    results = {}
    for line in out.stdout.splitlines():
        if line.startswith("@@example@@ "):
            r = json.loads(line[len("@@example@@ ") :])
            results[r["name"]] = r
    assert results, out.stderr[-3000:]
    return results


@pytest.fixture(scope="module", params=["classic", "connect"])
def runs(request, tmp_path_factory):
    return request.param, _run(request.param, str(tmp_path_factory.mktemp(request.param)))


def tables(text: str) -> list[tuple[list[str], list[tuple[str, ...]]]]:
    """The tables ``show()`` printed, in order: (header, rows as cell strings)."""
    lines = text.splitlines()
    out = []
    i = 0
    while i < len(lines):
        if lines[i].startswith("+-") and i + 2 < len(lines) and lines[i + 1].startswith("|"):
            header = _cells(lines[i + 1])
            rows = []
            j = i + 3
            while j < len(lines) and lines[j].startswith("|"):
                rows.append(tuple(_cells(lines[j])))
                j += 1
            out.append((header, rows))
            i = j + 1
        else:
            i += 1
    return out


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def ids(*values: int) -> list[tuple[str, ...]]:
    return sorted((str(v),) for v in values)


def result(runs, name: str) -> dict:
    mode, results = runs
    if name in CLASSIC_ONLY and mode == "connect":
        pytest.skip(f"{name} runs on classic sessions only (see the module docstring)")
    return results[name]


def finished(r: dict) -> list[tuple[list[str], list[tuple[str, ...]]]]:
    assert r["error"] is None, r["error"]
    return tables(r["stdout"])


def test_diff_is_only_the_porting_changes():
    """examples.diff holds only the permitted changes, and reverses cleanly onto the copies."""
    allowed_minus = {
        "from delta.tables import DeltaTable",
        '    .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension") \\',
        '    .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog") \\',
    }
    allowed_plus = {"from delta_pyds import DeltaTable", "import delta_pyds", "delta_pyds.register(spark)"}
    diff = open(os.path.join(EXAMPLES, "examples.diff")).read()
    files = set()
    for line in diff.splitlines():
        if line.startswith(("--- ", "+++ ")):
            files.add(line.split()[1].split("/", 1)[1])
        elif line.startswith("-"):
            assert line[1:] in allowed_minus, line
        elif line.startswith("+"):
            assert line[1:] in allowed_plus, line
    assert files == set(ALL)
    for name in ALL:
        assert open(os.path.join(EXAMPLES, name)).read().count("delta_pyds.register(spark)") == 1
    check = subprocess.run(
        ["patch", "-R", "--dry-run", "-p1", "-d", EXAMPLES, "-i", os.path.join(EXAMPLES, "examples.diff")],
        capture_output=True,
        text=True,
    )
    assert check.returncode == 0, check.stdout + check.stderr


def _quickstart_sql_steps(shown) -> None:
    assert [h for h, _ in shown[:5]] == [["id"]] * 5
    assert sorted(shown[0][1]) == ids(0, 1, 2, 3, 4)  # INSERT INTO
    assert sorted(shown[1][1]) == ids(0, 1, 2, 3, 4, 5, 6)  # MERGE with a parquet table
    assert sorted(shown[2][1]) == ids(5, 6, 7, 8, 9)  # INSERT OVERWRITE
    assert sorted(shown[3][1]) == ids(5, 7, 9, 106, 108)  # UPDATE
    assert sorted(shown[4][1]) == ids(5, 7, 9)  # DELETE


def test_quickstart_sql(runs):
    shown = finished(result(runs, "quickstart_sql.py"))
    assert len(shown) == 6
    _quickstart_sql_steps(shown)
    assert shown[5] == (["id"], [])  # versionAsOf 0 by name: the CREATE TABLE commit, no rows


def test_quickstart_sql_on_paths(runs):
    shown = finished(result(runs, "quickstart_sql_on_paths.py"))
    assert len(shown) == 5
    _quickstart_sql_steps(shown)


def test_utilities(runs):
    r = result(runs, "utilities.py")
    shown = finished(r)
    assert shown[0][0] == ["id"] and sorted(shown[0][1]) == ids(0, 1, 2, 3, 4)
    history = shown[1]
    assert history[0][:2] == ["version", "timestamp"]
    operations = [row[history[0].index("operation")] for row in history[1]]
    assert operations[-1] == "CONVERT"  # newest first: the conversion is version 0
    detail = shown[2]
    assert detail[1][0][detail[0].index("format")] == "delta"
    assert "operation='CONVERT'" in r["stdout"]  # DESCRIBE HISTORY through spark.sql


CDF_V1 = [(str(i), str(i), str(i % 4 + 18), "insert", "1") for i in range(10)]
CDF_V2 = sorted(
    [(str(i), str(i), str(i % 4 + 18), "update_preimage", "2") for i in range(10)]
    + [(str(i + 1), str(i), str(i % 4 + 18), "update_postimage", "2") for i in range(10)],
    key=lambda r: (r[3], int(r[0])),
)
CDF_V3 = [(str(n + 1), str(n), str(n % 4 + 18), "delete", "3") for n in (6, 7, 8, 9)]
CDF_V4 = [("1", "0", "18", "delete", "4"), ("5", "4", "18", "delete", "4")]
CDF_V5 = [
    ("0", "0", "18", "insert", "5"),
    ("1", "1", "19", "insert", "5"),
    ("2", "1", "30", "update_postimage", "5"),
    ("2", "1", "19", "update_preimage", "5"),
]
CDF_HEADER = ["id", "name", "age", "_change_type", "_commit_version", "_commit_timestamp"]


def _changes(table) -> list[tuple[str, ...]]:
    header, rows = table
    assert header == CDF_HEADER
    return [row[:5] for row in rows]


def test_change_data_feed_until_merge(runs):
    """Every step before the example's saveAsTable: the table, then the change feed by name after
    each of an append, an UPDATE, a DELETE and a partition DELETE."""
    r = result(runs, "change_data_feed.py")
    shown = tables(r["stdout"])
    assert shown[0] == (["id", "name", "age"], [(str(i), str(i), str(i % 4 + 18)) for i in range(10)])
    assert [_changes(t) for t in shown[1:5]] == [CDF_V1, CDF_V2, CDF_V3, CDF_V4]


def test_change_data_feed(runs):
    shown = finished(result(runs, "change_data_feed.py"))
    assert [_changes(t) for t in shown[1:6]] == [CDF_V1, CDF_V2, CDF_V3, CDF_V4, CDF_V5]


def test_quickstart(runs):
    shown = finished(result(runs, "quickstart.py"))
    assert [sorted(rows) for _, rows in shown] == [
        ids(*range(5)),  # the first write
        ids(*range(20)),  # merge
        ids(*range(5, 10)),  # overwrite
        ids(5, 7, 9, 106, 108),  # update
        ids(5, 7, 9),  # delete
        ids(*range(5)),  # versionAsOf 0
    ]


def test_table_exists(runs):
    r = result(runs, "table_exists.py")
    finished(r)  # the example asserts exists() before and after its write
    assert "Verifying table exists at /tmp/table_exists" in r["stdout"]


def test_streaming(runs):
    shown = finished(result(runs, "streaming.py"))
    original, upserted, tbl1, after = shown[0], shown[1], shown[2], shown[-1]
    assert original[0] == ["id", "value"] and sorted(int(r[0]) for r in original[1]) == list(range(8))
    offsets = {int(v) - int(i) for i, v in original[1]}
    assert len(offsets) == 1 and 0 <= offsets.pop() <= 5000  # value = id + one random number
    assert {int(r[0]) for r in upserted[1]} >= set(range(8))  # the rate stream's upserts of id % 10
    assert {int(r[0]) for r in upserted[1]} <= set(range(10))
    assert sorted(tbl1[1]) == ids(*range(10))
    assert {int(r[0]) for r in after[1]} <= set(range(100)) and len(after[1]) >= 10  # show() prints up to 20
