"""File paths in the log: one canonical form everywhere files are keyed (issue 15).

Partition values that need escaping give directory names with ``%`` and log paths that
are percent-encoded twice (``k=10%253A00``). Every add, remove and checkpoint entry must
be decoded exactly once, and the spellings ``/t/x``, ``file:/t/x``, ``file:///t/x`` and
their percent-encoded forms must name one file. Each test reads with pydelta and, where
it can, with deltalake, and compares both with the expected rows.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import string
from urllib.parse import quote

import pyarrow as pa
import pytest
from helpers import SPARK_ESCAPED, deltalake_table
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from table_files import read_rows

from delta_pyds.protocol.paths import canonical, canonical_array, decode, is_absolute, scheme_of, unsafe_reason
from delta_pyds.table.snapshot import Snapshot
from delta_pyds.transaction.checkpoint_writer import write_checkpoint
from delta_pyds.write.plan import commit_arrow

HOSTILE = [
    "10:00",
    "x/y",
    "a=b",
    "100%",
    "50%25",
    "#1",
    "it's",
    "tab\there",
    "sp ace",
    "ü€😀",
    "%3A",
    "..",
    "a/../b",
    "file:/x",
    "s3://b/k",
    "{x}",
    "[y]",
    "^",
    "?q",
    "*",
    "\\",
]


def _checkpoint(t: str) -> None:
    snap = Snapshot.load(t)
    write_checkpoint(snap.storage, snap.version)


def _rows(table: pa.Table, cols=("id", "k")) -> list:
    return sorted(tuple(r[c] for c in cols) for r in table.select(list(cols)).to_pylist())


def _both(path: str, cols=("id", "k")) -> tuple[list, list]:
    return _rows(read_rows(path), cols), _rows(deltalake_table(path), cols)


# ------------------------------------------------------------------ the functions
def test_canonical_spellings_of_one_file():
    root = "/t"
    for raw in (
        "a b/p@#h.parquet",
        "a%20b/p@%23h.parquet",
        "/t/a b/p@#h.parquet",
        "file:/t/a%20b/p@%23h.parquet",
        "file:///t/a%20b/p@%23h.parquet",
        "file://localhost/t/a%20b/p%40%23h.parquet",
    ):
        assert canonical(raw, root) == "a b/p@#h.parquet", raw
    # decoded exactly once: a directory named with an escape keeps it
    assert canonical("k=10%253A00/f.parquet", root) == "k=10%3A00/f.parquet"
    assert canonical("file:/t/k=10%253A00/f.parquet", root) == "k=10%3A00/f.parquet"
    # outside the root: absolute, kept
    assert canonical("file:/elsewhere/x%20y", root) == "/elsewhere/x y"
    assert canonical("/tt/x", root) == "/tt/x"
    assert canonical("s3://bucket/t/x%2By", "s3://bucket/t") == "x+y"
    assert canonical("s3://other/t/x", "s3://bucket/t") == "s3://other/t/x"
    assert decode("file:../x") == "file://../x"  # not an absolute local path: stays a URL


def test_dot_segments_and_colon_names_issue_24():
    root = "/t"
    for raw in ("x", "./x", "././x", "file:///t/x", "file:/t/x", "file:/t/./x", "/t//x", "%2E/x"):
        assert canonical(raw, root) == "x", raw
    assert canonical("a//b/./c", root) == "a/b/c"
    # a scheme is parsed on the encoded form and needs ':/': these are relative file names
    for raw, name in (
        ("data%3A1.parquet", "data:1.parquet"),
        ("data:1.parquet", "data:1.parquet"),
        ("s3:foo.parquet", "s3:foo.parquet"),
        ("s3%3Afoo.parquet", "s3:foo.parquet"),
        ("k=a/T10%3A00%3A00.parquet", "k=a/T10:00:00.parquet"),
        ("./T10%3A00%3A00.parquet", "T10:00:00.parquet"),
        ("file:/t/data%3A1.parquet", "data:1.parquet"),
        ("s3%3A//b/x", "s3:/b/x"),  # a decoded relative path never looks like a URL
    ):
        assert canonical(raw, root) == name, raw
        assert not is_absolute(canonical(raw, root)), raw
        assert scheme_of(raw) is None or raw.startswith("file:"), raw
    assert is_absolute(canonical("s3://b/x", root)) and is_absolute(canonical("/elsewhere/x", root))
    assert canonical_array(pa.array(["./x", "data%3A1.parquet", "a//b"]), root).to_pylist() == [
        "x",
        "data:1.parquet",
        "a/b",
    ]


_SEGMENT = st.text(alphabet=string.ascii_letters + string.digits + ":%=. _-@#~", min_size=1, max_size=8).filter(
    lambda s: s not in (".", "..")
)


@settings(max_examples=300, deadline=None)
@given(segments=st.lists(_SEGMENT, min_size=1, max_size=3))
def test_every_spelling_of_a_relative_name_is_that_name(segments):
    name = "/".join(segments)
    enc = "/".join(quote(s, safe="=@~") for s in segments)
    for raw in (enc, f"./{enc}", f"file:///t/{enc}", f"file:/t/{enc}", f"/t/{enc}"):
        got = canonical(raw, "/t")
        assert got == name, raw
        assert not is_absolute(got) and unsafe_reason(got) is None


def test_canonical_array_touches_only_what_needs_it():
    raw = pa.array(["plain/f.parquet", "k=a%253Ab/f.parquet", None, "file:///t/x", "/t/y"])
    assert canonical_array(raw, "/t").to_pylist() == ["plain/f.parquet", "k=a%3Ab/f.parquet", None, "x", "y"]
    plain = pa.array(["a", "b/c"])
    assert canonical_array(plain, "/t") is plain


# ------------------------------------------------------------------ overwrite / replaceWhere
@pytest.mark.parametrize("value", HOSTILE)
def test_overwrite_of_an_escaped_partition_removes_the_old_file(tmp_path, value):
    t = str(tmp_path / "t")
    commit_arrow(t, pa.table({"id": [1, 2], "k": [value, "plain"]}), options={"partitionBy": "k"})
    commit_arrow(t, pa.table({"id": [3], "k": [value]}), mode="overwrite")
    ours, theirs = _both(t)
    assert ours == theirs == [(3, value)]


def test_timestamp_partition_append_then_overwrite(tmp_path):
    t = str(tmp_path / "t")
    ts = dt.datetime(2024, 5, 1, 10, 0, tzinfo=dt.timezone.utc)
    schema = pa.schema([("id", pa.int64()), ("k", pa.timestamp("us", tz="UTC"))])
    commit_arrow(t, pa.table({"id": [1], "k": [ts]}, schema=schema), options={"partitionBy": "k"})
    commit_arrow(t, pa.table({"id": [3], "k": [ts]}, schema=schema), mode="overwrite")
    ours, theirs = _both(t)
    assert ours == theirs == [(3, ts)]


def test_replace_where_on_an_escaped_partition(tmp_path):
    t = str(tmp_path / "t")
    commit_arrow(t, pa.table({"id": [1, 2, 3], "k": ["x/y", "x/y", "z"]}), options={"partitionBy": "k"})
    commit_arrow(t, pa.table({"id": [9], "k": ["x/y"]}), mode="overwrite", options={"replaceWhere": "k = 'x/y'"})
    ours, theirs = _both(t)
    assert ours == theirs == [(3, "z"), (9, "x/y")]


def test_removes_in_a_checkpoint_and_after_it(tmp_path):
    t = str(tmp_path / "t")
    commit_arrow(t, pa.table({"id": [1], "k": ["a:b"]}), options={"partitionBy": "k"})
    commit_arrow(t, pa.table({"id": [2], "k": ["a:b"]}), mode="overwrite")
    _checkpoint(t)
    commit_arrow(t, pa.table({"id": [3], "k": ["a:b"]}), mode="overwrite")
    ours, theirs = _both(t)
    assert ours == theirs == [(3, "a:b")]
    snap = Snapshot.load(t)
    assert snap.tombstones.num_rows == 2
    assert all(p.startswith("k=a%3Ab/") for p in snap.tombstones.column("path").to_pylist())


# ------------------------------------------------------------------ other writers' logs
def test_tables_deltalake_changed_after_its_own_delete_and_overwrite(tmp_path):
    from deltalake import DeltaTable, write_deltalake

    t = str(tmp_path / "t")
    data = pa.table({"id": pa.array([1, 2, 3, 4], pa.int64()), "k": ["10:00", "x/y", "a b", "10:00"]})
    write_deltalake(t, data, partition_by=["k"])
    DeltaTable(t).delete("id = 1")
    assert _both(t)[0] == _both(t)[1] == [(2, "x/y"), (3, "a b"), (4, "10:00")]
    write_deltalake(
        t, pa.table({"id": pa.array([7], pa.int64()), "k": ["x/y"]}), mode="overwrite", predicate="k = 'x/y'"
    )
    ours, theirs = _both(t)
    assert ours == theirs == [(3, "a b"), (4, "10:00"), (7, "x/y")]
    # and our own writes on top of theirs
    commit_arrow(
        t,
        pa.table({"id": pa.array([8], pa.int64()), "k": ["10:00"]}),
        mode="overwrite",
        options={"replaceWhere": "k = '10:00'"},
    )
    ours, theirs = _both(t)
    assert ours == theirs == [(3, "a b"), (7, "x/y"), (8, "10:00")]


def _hand_log(t: str, actions_per_version: list[list[dict]]) -> None:
    os.makedirs(os.path.join(t, "_delta_log"), exist_ok=True)
    schema = {"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": True, "metadata": {}}]}
    head = [
        {"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}},
        {
            "metaData": {
                "id": "x",
                "format": {"provider": "parquet", "options": {}},
                "schemaString": json.dumps(schema),
                "partitionColumns": [],
                "configuration": {},
                "createdTime": 1,
            }
        },
    ]
    for v, actions in enumerate(actions_per_version):
        lines = (head if v == 0 else []) + actions
        with open(os.path.join(t, "_delta_log", f"{v:020}.json"), "w") as f:
            f.write("\n".join(json.dumps(a) for a in lines) + "\n")


@pytest.mark.parametrize(
    "add_spelling, remove_spelling",
    [
        ("with%20space/p@%23h.parquet", "{root}/with space/p@#h.parquet"),
        ("with%20space/p@%23h.parquet", "file:{uroot}/with%20space/p@%23h.parquet"),
        ("file://{uroot}/with%20space/p%40%23h.parquet", "with%20space/p@%23h.parquet"),
        ("{root}/with space/p@#h.parquet", "file:///{uroot_noslash}/with%20space/p@%23h.parquet"),
    ],
)
def test_hand_written_logs_with_every_spelling(tmp_path, add_spelling, remove_spelling):
    t = str(tmp_path / "t")
    os.makedirs(os.path.join(t, "with space"))
    pq_path = os.path.join(t, "with space", "p@#h.parquet")
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"id": pa.array([5], pa.int64())}), pq_path)
    fmt = {"root": t, "uroot": quote(t), "uroot_noslash": quote(t).lstrip("/")}
    add = {
        "add": {
            "path": add_spelling.format(**fmt),
            "partitionValues": {},
            "size": os.path.getsize(pq_path),
            "modificationTime": 1,
            "dataChange": True,
        }
    }
    remove = {"remove": {"path": remove_spelling.format(**fmt), "deletionTimestamp": 2, "dataChange": True}}
    _hand_log(t, [[add]])
    assert read_rows(t).column("id").to_pylist() == [5]
    assert Snapshot.load(t).files.column("path").to_pylist() == ["with space/p@#h.parquet"]
    _hand_log(t, [[add], [remove]])
    assert read_rows(t).num_rows == 0
    assert Snapshot.load(t).tombstones.column("path").to_pylist() == ["with space/p@#h.parquet"]


# ------------------------------------------------------------------ property test
_ALPHABET = st.characters(codec="utf-8", exclude_categories=("Cs",), exclude_characters="\x00")
_VALUES = st.text(
    alphabet=st.one_of(st.sampled_from(SPARK_ESCAPED + list(string.ascii_letters)), _ALPHABET), min_size=1, max_size=6
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(values=st.lists(_VALUES, min_size=1, max_size=3, unique=True), data=st.data())
def test_replay_with_partition_values_from_all_of_unicode(tmp_path_factory, values, data):
    """Append one row per value, overwrite one value's partition, overwrite the table:
    after each step pydelta and deltalake read exactly the expected rows."""
    t = str(tmp_path_factory.mktemp("prop") / "t")
    rows = [(i, v) for i, v in enumerate(values)]
    commit_arrow(t, pa.table({"id": [i for i, _ in rows], "k": [v for _, v in rows]}), options={"partitionBy": "k"})
    victim = data.draw(st.sampled_from(values))
    literal = victim.replace("\\", "\\\\").replace("'", "\\'")
    commit_arrow(
        t, pa.table({"id": [100], "k": [victim]}), mode="overwrite", options={"replaceWhere": f"k = '{literal}'"}
    )
    expected = sorted([(i, v) for i, v in rows if v != victim] + [(100, victim)])
    ours, theirs = _both(t)
    assert ours == expected
    assert theirs == expected
    _checkpoint(t)
    commit_arrow(t, pa.table({"id": [200], "k": [values[0]]}), mode="overwrite")
    ours, theirs = _both(t)
    assert ours == theirs == [(200, values[0])]
