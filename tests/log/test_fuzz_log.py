"""Fuzzing the log loader (issue 9): random mutations of real commit lines, random JSON
actions appended to real commits, random checkpoint rows. The loader must either
return a snapshot whose active files equal the simple reference reconciliation below,
or raise a :class:`DeltaError` subclass — never another exception type, never
different files."""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from urllib.parse import quote, unquote

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import table_path
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from delta_pyds.errors import DeltaError
from delta_pyds.table.snapshot import Snapshot

BASE = table_path("delta-rs/simple_table")  # commits 0..4, adds and removes, no partitions
# DELTA_PYDS_FUZZ_EXAMPLES=2000 runs a deeper, randomised search (CI: 150, derandomized)
_DEEP = int(os.environ.get("DELTA_PYDS_FUZZ_EXAMPLES", "0"))
FUZZ = settings(
    max_examples=_DEEP or 150,
    deadline=None,
    derandomize=not _DEEP,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


def _commits(root: str) -> list[str]:
    log = os.path.join(root, "_delta_log")
    return sorted(os.path.join(log, n) for n in os.listdir(log) if n.endswith(".json"))


BASE_COMMITS = [open(p, "rb").read() for p in _commits(BASE)]


# ----------------------------------------------------------------- reference replay
class Invalid(Exception):
    """The reference finds the log malformed: the loader must raise a DeltaError."""


def _as_str(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (dict, list)):
        return json.dumps(v)
    return str(v)


def _dv_uid(dv) -> str:
    if dv is None:
        return ""
    if not isinstance(dv, dict):
        raise Invalid("deletionVector is not an object")
    st_, p, off = dv.get("storageType"), dv.get("pathOrInlineDv"), dv.get("offset")
    return (
        (_as_str(st_) if st_ is not None else "")
        + (_as_str(p) if p is not None else "")
        + (f"@{off}" if off is not None else "")
    )


def _objects_per_line(data: bytes):
    for line in data.splitlines():
        if not line.strip():
            continue
        try:
            yield json.loads(line)
        except ValueError:
            raise Invalid("bad JSON") from None


def _objects_lenient(data: bytes):
    """Whitespace-separated JSON values, as Arrow's reader accepts them (an object split
    over lines, two on one line)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise Invalid("not UTF-8") from None
    decoder, pos = json.JSONDecoder(), 0
    while True:
        while pos < len(text) and text[pos] in " \t\r\n":
            pos += 1
        if pos == len(text):
            return
        try:
            obj, pos = decoder.raw_decode(text, pos)
        except ValueError:
            raise Invalid("bad JSON") from None
        yield obj


ROOT = "/fuzz-table-root"  # stands for the table root in generated paths


_HIERARCHICAL_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]+:/|^file:", re.IGNORECASE)


def _drop_dot_segments(path: str) -> str:
    lead = "/" if path.startswith("/") else ""
    return lead + "/".join(seg for seg in path.split("/") if seg not in ("", "."))


def _reference_key(raw: str, root: str) -> str:
    """A path as the reference keys it: decoded once; ``file:/x``, ``file:///x`` and
    ``/x`` the same local path; ``./`` and empty segments dropped; a URI only when the
    ENCODED form starts ``scheme:/`` (or ``file:``), so ``data%3A1`` and ``s3:foo`` are
    relative names; below ``root`` relative to it."""
    if raw.startswith(("file:/", "file://localhost/")):
        local = (
            raw[len("file://localhost") :]
            if raw.startswith("file://localhost/")
            else raw[len("file://") :]
            if raw.startswith("file:///")
            else raw[len("file:") :]
        )
        if local.startswith("/") and not local.startswith("//"):
            path = _drop_dot_segments(unquote(local))
        else:
            path = unquote(raw)
    elif _HIERARCHICAL_URI.match(raw):
        scheme, _, rest = raw.partition(":")
        rest = rest[2:] if rest.startswith("//") else rest
        netloc, slash, tail = rest.partition("/")
        path = f"{scheme.lower()}://{netloc}{slash}{unquote(tail)}"
    else:
        path = _drop_dot_segments(unquote(raw))
    prefix = root.rstrip("/") + "/"
    return path[len(prefix) :] if path.startswith(prefix) and len(path) > len(prefix) else path


def reference_files(commits: list[bytes], *, lenient: bool = False, root: str = ROOT) -> set[tuple[str, str]]:
    """(canonical path, DV unique id) of the active files: the protocol's reconciliation,
    written as plainly as possible, plus "one data file is live once": an add drops every
    earlier entry of its path, whatever its DV. Strict: one JSON object per line, as the
    protocol says; ``lenient``: any whitespace between objects."""
    state: dict[tuple[str, str], bool] = {}
    for data in commits:
        for obj in _objects_lenient(data) if lenient else _objects_per_line(data):
            if not isinstance(obj, dict):
                raise Invalid("not an object")
            for kind in ("add", "remove"):
                action = obj.get(kind)
                if action is None:
                    continue
                if not isinstance(action, dict):
                    raise Invalid(f"{kind} is not an object")
                path = action.get("path")
                if path is None:
                    if kind == "add":
                        raise Invalid("add without path")
                    continue
                key = (_reference_key(_as_str(path), root), _dv_uid(action.get("deletionVector")))
                if kind == "add":
                    for other in [k for k in state if k[0] == key[0]]:
                        del state[other]
                    state[key] = True
                else:
                    state.pop(key, None)
    return set(state)


def loaded_files(root: str) -> set[tuple[str, str]]:
    files = Snapshot.load(root).files
    out = set()
    for row in files.select(["path", "deletion_vector"]).to_pylist():
        out.add((row["path"], _dv_uid(row["deletion_vector"])))
    assert len(out) == files.num_rows, "one row per logical file"
    return out


def _with_root(data: bytes, root: str) -> bytes:
    """Generated absolute paths name the real root (percent-encoded in file: URIs)."""
    return (
        data.replace(b"file:" + ROOT.encode(), b"file:" + quote(root).encode())
        .replace(b"file://" + ROOT.encode(), b"file://" + quote(root).encode())
        .replace(ROOT.encode(), root.encode())
    )


def check(commits: list[bytes]) -> str:
    """Writes ``commits`` as a fresh table log and compares loader and reference."""
    root = tempfile.mkdtemp(prefix="fuzzlog-")
    commits = [_with_root(d, root) for d in commits]
    try:
        os.mkdir(os.path.join(root, "_delta_log"))
        for v, data in enumerate(commits):
            with open(os.path.join(root, "_delta_log", f"{v:020d}.json"), "wb") as f:
                f.write(data)
        try:
            expected = reference_files(commits, root=root)
        except Invalid:
            expected = None
        try:
            got = loaded_files(root)
        except DeltaError:
            return "error"
        # any other exception type propagates and fails the test
        if expected is None:
            # the loader rejects an action split over lines or two actions on one line,
            # except when both occur in one file and the line count still matches; it
            # then reads them as Arrow's reader does, which must still be right
            try:
                expected = reference_files(commits, lenient=True, root=root)
            except Invalid:
                raise AssertionError("the loader accepted a log the reference finds malformed") from None
        assert got == expected
        return "ok"
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_reference_agrees_on_the_real_table():
    assert check(BASE_COMMITS) == "ok"
    assert len(reference_files(BASE_COMMITS)) == Snapshot.load(BASE).files.num_rows


# ----------------------------------------------------------------- strategies
json_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(allow_nan=False), st.text(max_size=8)
)
json_values = st.recursive(
    json_scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=3), st.dictionaries(st.text(max_size=5), children, max_size=3)
    ),
    max_leaves=6,
)
paths = st.one_of(
    st.sampled_from(
        [
            "part-00000-a72b1fb3-f2df-41fe-a8f0-e65b746382dd-c000.snappy.parquet",  # real ones
            "part-00001-c506e79a-0bf8-4e2b-a42b-9731b2e490ae-c000.snappy.parquet",
            "a%20b.parquet",
            "a b.parquet",
            "x=1/f.parquet",
            "x%3D1/f.parquet",
            "../escape.parquet",
            "s3://bucket/abs.parquet",
            # one file in many spellings: escaped partition directories, file: URIs
            "k=10%253A00/f.parquet",
            "k=10%3A00/f.parquet",
            f"{ROOT}/k=10%3A00/f.parquet",
            f"file:{ROOT}/k=10%253A00/f.parquet",
            f"file://{ROOT}/k=10%253A00/f.parquet",
            f"file:{ROOT}/a%20b.parquet",
            f"{ROOT}/a b.parquet",
            "file:/elsewhere/x%2520y.parquet",
            "/elsewhere/x%20y.parquet",
            # issue 24: ./ and empty segments, names whose first segment looks like a scheme
            "./a b.parquet",
            "./a%20b.parquet",
            "%2E/a%20b.parquet",
            "x=1//f.parquet",
            "./x=1/./f.parquet",
            f"file:{ROOT}/./a%20b.parquet",
            f"file://{ROOT}//x=1/f.parquet",
            f"{ROOT}/./x=1/f.parquet",
            "data%3A1.parquet",
            "data:1.parquet",
            "./data:1.parquet",
            f"file:{ROOT}/data%3A1.parquet",
            "s3:foo.parquet",
            "s3%3Afoo.parquet",
            "S3:/bucket/abs.parquet",
            "k=1/T10%3A00%3A00.parquet",
            "k=1/T10:00:00.parquet",
            f"file://{ROOT}/k=1/T10%3A00%3A00.parquet",
            "file:x.parquet",
        ]
    ),
    st.text(min_size=1, max_size=12),
    st.integers(),
    json_values,
)
good_dv = st.fixed_dictionaries(
    {
        "storageType": st.sampled_from(["u", "i", "p"]),
        "pathOrInlineDv": st.text(alphabet="abcdefXYZ0123456789", min_size=1, max_size=20),
        "sizeInBytes": st.integers(0, 1000),
        "cardinality": st.integers(0, 1000),
    },
    optional={"offset": st.integers(0, 2**31 - 1)},
)
FIXED_DVS = [
    {
        "storageType": "i",
        "pathOrInlineDv": "wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L",
        "sizeInBytes": 40,
        "cardinality": 6,
    },
    {"storageType": "u", "pathOrInlineDv": "ab^-aqEH.-t@S}K{vb[*k^", "offset": 1, "sizeInBytes": 36, "cardinality": 2},
    {"storageType": "u", "pathOrInlineDv": "ab^-aqEH.-t@S}K{vb[*k^", "offset": 45, "sizeInBytes": 36, "cardinality": 2},
]
file_action = st.fixed_dictionaries(
    {"path": paths},
    optional={
        "partitionValues": st.one_of(st.just({}), json_values),
        "size": st.one_of(st.integers(0, 10**9), json_values),
        "modificationTime": st.one_of(st.integers(0, 2**62), json_values),
        "dataChange": st.one_of(st.booleans(), json_values),
        "stats": st.one_of(st.text(max_size=10), json_values),
        # a few fixed DVs, so that one path is re-added under another DV (issue 24)
        "deletionVector": st.one_of(st.none(), st.sampled_from(FIXED_DVS), good_dv),
        "deletionTimestamp": st.integers(0, 2**40),
        "tags": json_values,
        "someFutureField": json_values,
    },
)
actions = st.one_of(
    st.builds(lambda a: {"add": a}, file_action),
    st.builds(lambda a: {"remove": a}, file_action),
    st.builds(
        lambda v: {"txn": v},
        st.one_of(st.fixed_dictionaries({"appId": st.text(max_size=5), "version": st.integers(0, 100)}), json_values),
    ),
    st.builds(lambda v: {"commitInfo": v}, json_values),
    st.builds(
        lambda v: {"domainMetadata": v},
        st.one_of(
            st.fixed_dictionaries(
                {"domain": st.text(max_size=5), "configuration": st.text(max_size=5), "removed": st.booleans()}
            ),
            json_values,
        ),
    ),
    st.builds(lambda v: {"cdc": v}, file_action),
    st.builds(lambda k, v: {k: v}, st.text(min_size=1, max_size=8), json_values),
)


def _encode(obj) -> bytes:
    return json.dumps(obj).encode()


# ----------------------------------------------------------------- tests
@FUZZ
@given(extra=st.lists(st.tuples(st.integers(1, len(BASE_COMMITS) - 1), actions), min_size=1, max_size=6))
def test_random_actions_appended_to_real_commits(extra):
    commits = list(BASE_COMMITS)
    for v, action in extra:
        data = commits[v] if commits[v].endswith(b"\n") else commits[v] + b"\n"
        commits[v] = data + _encode(action) + b"\n"
    check(commits)


@FUZZ
@given(data=st.data())
def test_random_mutations_of_real_commit_lines(data):
    commits = list(BASE_COMMITS)
    for _ in range(data.draw(st.integers(1, 3))):
        v = data.draw(st.integers(1, len(commits) - 1))  # commit 0 holds protocol/metaData
        lines = commits[v].splitlines()
        i = data.draw(st.integers(0, len(lines) - 1))
        line = lines[i]
        kind = data.draw(
            st.sampled_from(["flip", "delete", "insert", "truncate", "dup", "drop", "swap", "retype", "blank"])
        )
        if kind == "flip" and line:
            j = data.draw(st.integers(0, len(line) - 1))
            line = line[:j] + bytes([data.draw(st.integers(0, 255))]) + line[j + 1 :]
            lines[i] = line
        elif kind == "delete" and line:
            j = data.draw(st.integers(0, len(line) - 1))
            k = data.draw(st.integers(j, len(line)))
            lines[i] = line[:j] + line[k:]
        elif kind == "insert":
            j = data.draw(st.integers(0, len(line)))
            lines[i] = line[:j] + data.draw(st.binary(min_size=1, max_size=4)) + line[j:]
        elif kind == "truncate":
            lines[i] = line[: data.draw(st.integers(0, len(line)))]
        elif kind == "dup":
            lines.insert(i, line)
        elif kind == "drop":
            del lines[i]
        elif kind == "swap":
            j = data.draw(st.integers(0, len(lines) - 1))
            lines[i], lines[j] = lines[j], lines[i]
        elif kind == "blank":
            lines.insert(i, b"   ")
        elif kind == "retype":  # replace one field's value of a parsed action
            try:
                obj = json.loads(line)
            except ValueError:  # already mangled by an earlier mutation
                obj = None
            if isinstance(obj, dict) and obj:
                action = next(iter(obj.values()))
                if isinstance(action, dict) and action:
                    key = data.draw(st.sampled_from(sorted(action)))
                    action[key] = data.draw(json_values)
                lines[i] = _encode(obj)
        commits[v] = b"\n".join(lines) + data.draw(st.sampled_from([b"\n", b""]))
    check(commits)


@FUZZ
@given(acts=st.lists(actions, max_size=8))
def test_random_actions_in_a_new_commit_after_protocol_and_metadata(acts):
    commits = [BASE_COMMITS[0]] + [b"\n".join(_encode(a) for a in acts) + b"\n"]
    check(commits)


# ----------------------------------------------------------------- checkpoints
_CP_ADD = pa.struct(
    [
        ("path", pa.string()),
        ("partitionValues", pa.map_(pa.string(), pa.string())),
        ("size", pa.int64()),
        ("modificationTime", pa.int64()),
        ("dataChange", pa.bool_()),
        ("stats", pa.string()),
    ]
)
_CP_REMOVE = pa.struct([("path", pa.string()), ("deletionTimestamp", pa.int64()), ("dataChange", pa.bool_())])
cp_paths = st.one_of(
    st.none(),
    st.sampled_from(["a.parquet", "b.parquet", "c%20d.parquet", "../x.parquet"]),
    st.text(min_size=1, max_size=6),
)
cp_rows = st.lists(
    st.one_of(
        st.builds(
            lambda p, s: {
                "add": {
                    "path": p,
                    "partitionValues": [],
                    "size": s,
                    "modificationTime": 1,
                    "dataChange": True,
                    "stats": None,
                },
                "remove": None,
            },
            cp_paths,
            st.one_of(st.none(), st.integers(0, 2**40)),
        ),
        st.builds(lambda p: {"add": None, "remove": {"path": p, "deletionTimestamp": 1, "dataChange": True}}, cp_paths),
        st.just({"add": None, "remove": None}),
    ),
    max_size=8,
)


@FUZZ
@given(rows=cp_rows, tail=st.lists(actions, max_size=4), garbage=st.booleans())
def test_random_checkpoint_rows(tmp_path_factory, rows, tail, garbage):
    """A classic checkpoint at version 1 with random add/remove rows, then a commit of
    random actions. Checkpoint rows are reconciled already: a remove there is a
    tombstone and never cancels an add of the checkpoint."""
    root = str(tmp_path_factory.mktemp("fuzzcp"))
    log = os.path.join(root, "_delta_log")
    os.mkdir(log)
    proto = [json.loads(x) for x in BASE_COMMITS[0].splitlines()]
    state = [a for a in proto if "protocol" in a or "metaData" in a]
    table = pa.table(
        {
            "protocol": pa.array(
                [state[0].get("protocol")] + [None] * (len(rows) + 1),
                pa.struct([("minReaderVersion", pa.int32()), ("minWriterVersion", pa.int32())]),
            ),
            "metaData": pa.array(
                [
                    None,
                    {
                        "id": state[1]["metaData"]["id"],
                        "schemaString": state[1]["metaData"]["schemaString"],
                        "partitionColumns": [],
                    },
                ]
                + [None] * len(rows),
                pa.struct(
                    [("id", pa.string()), ("schemaString", pa.string()), ("partitionColumns", pa.list_(pa.string()))]
                ),
            ),
            "add": pa.array([None, None] + [r["add"] for r in rows], _CP_ADD),
            "remove": pa.array([None, None] + [r["remove"] for r in rows], _CP_REMOVE),
        }
    )
    cp = os.path.join(log, f"{1:020d}.checkpoint.parquet")
    pq.write_table(table, cp)
    if garbage:  # a broken checkpoint with no commits to fall back on: a named error
        with open(cp, "r+b") as f:
            f.seek(max(0, os.path.getsize(cp) // 2))
            f.write(b"\x00garbage\x00" * 4)
    commit = _with_root(b"\n".join(_encode(a) for a in tail) + b"\n", root)
    with open(os.path.join(log, f"{2:020d}.json"), "wb") as f:
        f.write(commit)
    # reference: checkpoint adds (rows with a path) then the commit's actions
    cp_adds = [r["add"]["path"] for r in rows if r["add"] and r["add"]["path"] is not None]
    try:
        after = reference_files([b"\n".join(_encode({"add": {"path": p}}) for p in cp_adds), commit], root=root)
    except Invalid:
        after = None
    try:
        got = loaded_files(root)
    except DeltaError:
        return
    assert not garbage or True  # a corrupt page may still decode; then the answer must be right
    assert after is not None
    assert got == after


# ----------------------------------------------------------------- one file, every spelling
SPELLINGS = {  # each group: one file (the table root stands as ROOT)
    "escaped partition": [
        "k=10%253A00/f.parquet",
        f"{ROOT}/k=10%253A00/f.parquet".replace("%25", "%"),
        f"file:{ROOT}/k=10%253A00/f.parquet",
        f"file://{ROOT}/k=10%253A00/f.parquet",
        f"file://localhost{ROOT}/k=10%253A00/f.parquet",
    ],
    "dot segments": [
        "sub/f.parquet",
        "./sub/f.parquet",
        "sub//f.parquet",
        "sub/./f.parquet",
        f"file:{ROOT}/./sub/f.parquet",
        f"file://{ROOT}/sub/f.parquet",
        f"{ROOT}//sub/f.parquet",
    ],
    "colon in the first segment": [
        "data%3A1.parquet",
        "data:1.parquet",
        "./data%3A1.parquet",
        f"file:{ROOT}/data%3A1.parquet",
        f"file://{ROOT}/data:1.parquet",
    ],
    "time-named file in a partition": [
        "k=1/T10%3A00%3A00.parquet",
        "k=1/T10:00:00.parquet",
        "./k=1/T10%3A00%3A00.parquet",
        f"file:{ROOT}/k=1/T10%3A00%3A00.parquet",
    ],
    "space and hash": [
        "with%20space/p@%23h.parquet",
        f"{ROOT}/with space/p@#h.parquet",
        f"file:{ROOT}/with%20space/p%40%23h.parquet",
        f"file://{ROOT}/with%20space/p@%23h.parquet",
    ],
}


@pytest.mark.parametrize("group", sorted(SPELLINGS))
def test_a_remove_in_any_spelling_cancels_an_add_in_any_other(group):
    spellings = SPELLINGS[group]
    for add in spellings:
        for remove in spellings:
            commits = [
                BASE_COMMITS[0]
                + _encode(
                    {"add": {"path": add, "size": 1, "modificationTime": 1, "dataChange": True, "partitionValues": {}}}
                )
                + b"\n",
                _encode({"remove": {"path": remove, "deletionTimestamp": 1, "dataChange": True}}) + b"\n",
            ]
            assert check(commits) == "ok", (add, remove)
            assert check(commits[:1]) == "ok", add


# ----------------------------------------------------------------- issue 16: hostile metadata
_BASE_STATE = [json.loads(x) for x in BASE_COMMITS[0].splitlines() if x.strip()]
_types = st.recursive(
    st.one_of(
        st.sampled_from(
            [
                "long",
                "integer",
                "string",
                "boolean",
                "double",
                "date",
                "timestamp",
                "binary",
                "void",
                "variant",
                "decimal",
                "char(3)",
                "nope",
            ]
        ),
        st.builds(lambda p, s: f"decimal({p},{s})", st.integers(-2, 60), st.integers(-3, 60)),
        json_values,
    ),
    lambda children: st.one_of(
        st.builds(lambda e: {"type": "array", "elementType": e, "containsNull": True}, children),
        st.builds(lambda k, v: {"type": "map", "keyType": k, "valueType": v}, children, children),
        st.builds(
            lambda fs: {"type": "struct", "fields": fs},
            st.lists(
                st.one_of(
                    st.builds(
                        lambda n, t, nl: {"name": n, "type": t, "nullable": nl, "metadata": {}},
                        st.sampled_from(["a", "A", "b", "id", "ID", "x.y"]),
                        children,
                        st.booleans(),
                    ),
                    json_values,
                ),
                max_size=3,
            ),
        ),
    ),
    max_leaves=8,
)


@FUZZ
@given(
    schema=st.one_of(_types, st.builds(json.dumps, _types), st.text(max_size=20)),
    partition_columns=st.one_of(st.just([]), st.lists(st.sampled_from(["a", "id", "p"]), max_size=2), json_values),
    reader_features=st.one_of(
        st.none(), st.lists(st.sampled_from(["deletionVectors", "columnMapping", "bogus"]), max_size=2), json_values
    ),
    writer_features=st.one_of(st.none(), json_values),
)
def test_random_protocol_and_metadata(schema, partition_columns, reader_features, writer_features):
    """Malformed protocol/metaData fields (features and partition columns of any JSON type,
    any schemaString) load correctly or raise a DeltaError: never a raw exception, never a
    feature list split into characters."""
    state = []
    for a in _BASE_STATE:
        if "protocol" in a:
            proto = {
                "minReaderVersion": 3 if reader_features is not None else 1,
                "minWriterVersion": 7 if writer_features is not None else 2,
            }
            if reader_features is not None:
                proto["readerFeatures"] = reader_features
            if writer_features is not None:
                proto["writerFeatures"] = writer_features
            a = {"protocol": proto}
        elif "metaData" in a:
            a = {
                "metaData": {
                    **a["metaData"],
                    "partitionColumns": partition_columns,
                    "schemaString": schema if isinstance(schema, str) else json.dumps(schema),
                }
            }
        state.append(a)
    root = tempfile.mkdtemp(prefix="fuzzmeta-")
    try:
        os.mkdir(os.path.join(root, "_delta_log"))
        with open(os.path.join(root, "_delta_log", f"{0:020d}.json"), "wb") as f:
            f.write(b"\n".join(_encode(a) for a in state) + b"\n")
        try:
            snap = Snapshot.load(root)
            snap.schema
            snap.files
        except DeltaError:
            return
        # absent or null partitionColumns read as none (actions._string_list); anything else
        # that loaded must have been an array of strings
        assert partition_columns is None or (
            isinstance(partition_columns, list) and all(isinstance(c, str) for c in partition_columns)
        )
        for feats in (reader_features, writer_features):
            assert feats is None or (isinstance(feats, list) and all(isinstance(x, str) for x in feats))
        names = [f.name.lower() for f in snap.schema.fields]
        assert len(names) == len(set(names))
    finally:
        shutil.rmtree(root, ignore_errors=True)


@FUZZ
@given(
    names=st.lists(
        st.one_of(
            st.builds(
                lambda v, i, n: f"{v:020d}.checkpoint.{i:010d}.{n:010d}.parquet",
                st.integers(0, 5),
                st.integers(0, 10**10 - 1),
                st.integers(0, 10**10 - 1),
            ),
            st.builds(lambda v: f"{v:020d}.checkpoint.parquet", st.integers(0, 5)),
        ),
        max_size=6,
    )
)
def test_random_checkpoint_names_cost_nothing_and_never_break_the_load(names):
    """Stray checkpoint files (any part counts, mostly incomplete, 4 bytes each) next to a
    good log: the load gives the reference answer or a DeltaError, within 256 MiB."""
    from table_files import memory_cap

    root = tempfile.mkdtemp(prefix="fuzzcpname-")
    try:
        os.mkdir(os.path.join(root, "_delta_log"))
        for v, data in enumerate(BASE_COMMITS):
            with open(os.path.join(root, "_delta_log", f"{v:020d}.json"), "wb") as f:
                f.write(data)
        for name in names:
            with open(os.path.join(root, "_delta_log", name), "wb") as f:
                f.write(b"PAR1")
        with memory_cap(256 << 20):
            try:
                got = loaded_files(root)
            except DeltaError:
                return
        assert got == reference_files(BASE_COMMITS)
    finally:
        shutil.rmtree(root, ignore_errors=True)


@FUZZ
@given(
    text=st.one_of(
        st.sampled_from(
            ["true", "false", "TRUE", "False", "tRuE", "maybe", "1", "0", "yes", " true", "true ", "t", ""]
        ),
        st.text(max_size=6),
    )
)
def test_random_boolean_partition_values(text):
    from delta_pyds.errors import CorruptLogError
    from delta_pyds.protocol.partition_values import parse_partition_values
    from delta_pyds.protocol.schema import PrimitiveType

    try:
        got = parse_partition_values(pa.array([text]), PrimitiveType("boolean"), column="p").to_pylist()
    except CorruptLogError:
        assert text.lower() not in ("true", "false", "")
        return
    assert got == [None if text == "" else text.lower() == "true"]
    assert text.lower() in ("true", "false", "")


# physical Arrow type -> declared Delta types it may be read as (the protocol's type
# widening and encodings of one logical type), written out independently of the reader
_INT_DECIMALS = {"decimal(10,0)", "decimal(12,2)", "decimal(20,0)", "decimal(22,2)"}  # 10 + k1, k2
# delta-spark also widens byte to any decimal with 3 integer digits (kernel-rs/type-widening)
_BYTE_DECIMALS = _INT_DECIMALS | {"decimal(4,1)", "decimal(5,2)", "decimal(7,3)"}
_PHYSICAL = {
    "int8": (pa.array([1, -2, None], pa.int8()), {"byte", "short", "integer", "long", "double"} | _BYTE_DECIMALS),
    "int16": (pa.array([1, -2, None], pa.int16()), {"short", "integer", "long", "double"} | _INT_DECIMALS),
    # Spark writes byte and short as INT32 (annotated INT(8)/INT(16))
    "int32": (pa.array([1, -2, None], pa.int32()), {"byte", "short", "integer", "long", "double"} | _INT_DECIMALS),
    "int64": (pa.array([1, -2, None], pa.int64()), {"long", "decimal(20,0)", "decimal(22,2)"}),  # 20 + k1, k2
    "float32": (pa.array([1.5, None, 2.0], pa.float32()), {"float", "double"}),
    "float64": (pa.array([1.5, None, 2.0], pa.float64()), {"double"}),
    "bool": (pa.array([True, None, False]), {"boolean"}),
    "string": (pa.array(["a", None, "b"]), {"string", "binary"}),
    "binary": (pa.array([b"a", None, b"b"]), {"string", "binary"}),
    "date32": (pa.array([1, None, 2], pa.date32()), {"date", "timestamp_ntz"}),
    "ts_us": (pa.array([1, None, 2], pa.timestamp("us")), {"timestamp", "timestamp_ntz"}),
    "ts_ms_utc": (pa.array([1, None, 2], pa.timestamp("ms", tz="UTC")), {"timestamp", "timestamp_ntz"}),
    "ts_ns": (pa.array([1000, None, 2000], pa.timestamp("ns")), {"timestamp", "timestamp_ntz"}),
    # decimal(p, s) -> decimal(p + k1, s + k2), k1 >= k2 >= 0
    "dec5_2": (
        pa.array([1, None, 2], pa.decimal128(5, 2)),
        {"decimal(5,2)", "decimal(7,3)", "decimal(12,2)", "decimal(22,2)"},
    ),
}
_DECLARED = sorted(
    {
        "byte",
        "short",
        "integer",
        "long",
        "float",
        "double",
        "boolean",
        "string",
        "binary",
        "date",
        "timestamp",
        "timestamp_ntz",
        "decimal(10,0)",
        "decimal(12,2)",
        "decimal(20,0)",
        "decimal(22,2)",
        "decimal(5,2)",
        "decimal(7,3)",
        "decimal(4,1)",
    }
)


@FUZZ
@given(
    physical=st.sampled_from(sorted(_PHYSICAL)),
    declared=st.sampled_from(_DECLARED),
    nested=st.sampled_from(["top", "array", "struct", "map"]),
)
def test_random_physical_and_declared_types(tmp_path_factory, physical, declared, nested):
    """A column of one physical type declared as another: read with the right values when
    the protocol allows it, a ColumnTypeError otherwise (also nested)."""
    from delta_pyds.errors import ColumnTypeError
    from delta_pyds.protocol.schema import parse_schema, to_arrow_schema, to_arrow_type
    from delta_pyds.read.file_reader import ReadSpec, read_file
    from delta_pyds.read.scan import FileTask
    from delta_pyds.storage.store import Storage

    arr, allowed = _PHYSICAL[physical]
    dtype: object = declared
    if nested == "array":
        arr = pa.ListArray.from_arrays(pa.array([0, 1, 2, 3], pa.int32()), arr)
        dtype = {"type": "array", "elementType": declared, "containsNull": True}
    elif nested == "struct":
        arr = pa.StructArray.from_arrays([arr], names=["x"])
        dtype = {"type": "struct", "fields": [{"name": "x", "type": declared, "nullable": True, "metadata": {}}]}
    elif nested == "map":
        arr = pa.MapArray.from_arrays(pa.array([0, 1, 2, 3], pa.int32()), pa.array(["k1", "k2", "k3"]), arr)
        dtype = {"type": "map", "keyType": "string", "valueType": declared, "valueContainsNull": True}
    root = tmp_path_factory.mktemp("types")
    pq.write_table(pa.table({"c": arr}), root / "f.parquet")
    schema = parse_schema(
        json.dumps({"type": "struct", "fields": [{"name": "c", "type": dtype, "nullable": True, "metadata": {}}]})
    )
    spec = ReadSpec(
        storage=Storage(str(root)), output=schema, arrow_schema=to_arrow_schema(schema), partition_columns=()
    )
    try:
        out = pa.Table.from_batches(list(read_file(spec, FileTask("f.parquet", 1, (), None))), schema=spec.arrow_schema)
    except ColumnTypeError as exc:
        assert declared not in allowed, f"{physical} -> {declared} is allowed but was refused: {exc}"
        return
    assert declared in allowed, f"{physical} -> {declared} was read although the protocol forbids it"
    assert out.column("c").type == to_arrow_type(schema.fields[0].type)
    assert out.num_rows == 3
