"""Fuzzing the log loader (issues 9, 44): generated logs in three classes, checked apart.

* valid logs (every action of the protocol's shape, :data:`valid_actions`): the loader must
  load them, and its active files must equal the reference reconciliation below (an
  independent model of the protocol's replay); a refusal fails;
* corrupt logs (a valid log with one violation of the protocol, :data:`CORRUPTIONS`): the
  loader must raise :class:`CorruptLogError` (a named error), never load them;
* randomly mutated logs (bytes flipped, lines dropped, fields retyped): the loader either
  loads them with the reference's answer, or raises a ``CorruptLogError`` for a log that
  :func:`protocol_violation` (the protocol's field types, written out independently of the
  loader) finds malformed; a refusal of a log the model finds valid fails, and so does any
  other exception type.
"""

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

from delta_pyds.errors import CorruptLogError, SchemaError, UnsupportedFeatureError
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
    """The reference finds the log malformed: the loader must raise a CorruptLogError."""


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


# the protocol's types of the fields a snapshot reader reads (PROTOCOL.md, "Actions");
# commitInfo, cdc (the change feed's, not the snapshot's) and unknown actions are not read
# by a snapshot load and do not make its log invalid
_LONG, _INT, _BOOL, _STRING, _OBJECT = "long", "int", "bool", "string", "object"
_DV_FIELDS = {
    "storageType": _STRING,
    "pathOrInlineDv": _STRING,
    "offset": _INT,
    "sizeInBytes": _INT,
    "cardinality": _LONG,
}
_FIELDS = {
    "add": {
        "path": _STRING,
        "partitionValues": _OBJECT,
        "size": _LONG,
        "modificationTime": _LONG,
        "dataChange": _BOOL,
        "stats": _STRING,
        "deletionVector": _DV_FIELDS,
        "baseRowId": _LONG,
        "defaultRowCommitVersion": _LONG,
    },
    "remove": {
        "path": _STRING,
        "deletionTimestamp": _LONG,
        "dataChange": _BOOL,
        "partitionValues": _OBJECT,
        "size": _LONG,
        "deletionVector": _DV_FIELDS,
    },
    "txn": {"appId": _STRING, "version": _LONG, "lastUpdated": _LONG},
    "domainMetadata": {"domain": _STRING, "configuration": _STRING, "removed": _BOOL},
    "sidecar": {"path": _STRING, "sizeInBytes": _LONG, "modificationTime": _LONG},
}
_RANGES = {_LONG: 63, _INT: 31}


def _type_violation(value, kind) -> str | None:
    """Why ``value`` is not of the protocol type ``kind`` (None: it is, or it is null). A JSON
    number with an integral value is an integer; a string field takes any JSON scalar."""
    if value is None:
        return None
    if isinstance(kind, dict):
        if not isinstance(value, dict):
            return "not an object"
        for name, sub in kind.items():
            why = _type_violation(value.get(name), sub)
            if why:
                return f"{name}: {why}"
        return None
    if kind == _OBJECT:
        return None if isinstance(value, dict) else "not an object"
    if kind == _BOOL:
        return None if isinstance(value, bool) else "not a boolean"
    if kind in _RANGES:
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            return "not an integer"
        if isinstance(value, float) and not (value == value and abs(value) != float("inf") and value == int(value)):
            return "not an integer"
        if isinstance(value, str):
            try:
                value = int(value)
            except ValueError:
                return "not an integer"
        bits = _RANGES[kind]
        return None if -(2**bits) <= int(value) < 2**bits else "out of range"
    return None  # strings: JSON readers take any scalar as its text


def unsafe_key(key: str) -> bool:
    """A reference key (:func:`_reference_key`) no reader may open: empty, a ``file:`` URI that
    is no absolute local path (the key keeps those as ``file://...``), or a relative path with
    a ``..`` segment (it leaves the table root)."""
    if key == "" or key.lower().startswith("file:"):
        return True
    return not key.startswith("/") and not re.match(r"^[a-z][a-z0-9+.\-]*://", key) and ".." in key.split("/")


def protocol_violation(commits: list[bytes], root: str = ROOT) -> str | None:
    """The first violation of the protocol's action format in ``commits`` (one JSON object
    per line, UTF-8, file actions with a path, the field types of :data:`_FIELDS`), or an
    active file no reader may open (:func:`unsafe_key`); None: a valid log."""
    why = _format_violation(commits)
    if why is not None:
        return why
    try:
        active = reference_files(commits, root=root)
    except Invalid as exc:
        return str(exc)
    unsafe = sorted(k for k, _ in active if unsafe_key(k))
    return f"active file {unsafe[0]!r} is outside the table root" if unsafe else None


def _format_violation(commits: list[bytes]) -> str | None:
    for v, data in enumerate(commits):
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            return f"commit {v}: not UTF-8"
        for number, line in enumerate(data.splitlines(), 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except ValueError:
                return f"commit {v} line {number}: not JSON"
            if not isinstance(obj, dict):
                return f"commit {v} line {number}: not an object"
            for action, fields in _FIELDS.items():
                why = _type_violation(obj.get(action), fields)
                if why:
                    return f"commit {v} line {number}: {action}: {why}"
            if isinstance(obj.get("add"), dict) and obj["add"].get("path") is None:
                return f"commit {v} line {number}: add without path"
    return None


def _write_log(root: str, commits: list[bytes]) -> None:
    os.mkdir(os.path.join(root, "_delta_log"))
    for v, data in enumerate(commits):
        with open(os.path.join(root, "_delta_log", f"{v:020d}.json"), "wb") as f:
            f.write(data)


def check(commits: list[bytes], *, expect: str | None = None) -> str:
    """Writes ``commits`` as a fresh table log and checks the loader (see the module
    docstring): ``expect="valid"`` must load with the reference's files, ``"corrupt"`` must
    raise CorruptLogError; None (a random mutation): either, as the model allows."""
    root = tempfile.mkdtemp(prefix="fuzzlog-")
    commits = [_with_root(d, root) for d in commits]
    try:
        _write_log(root, commits)
        violation = protocol_violation(commits, root)
        if expect == "valid":
            assert violation is None, f"the generator made an invalid log: {violation}"
        try:
            got = loaded_files(root)
        except CorruptLogError as exc:
            assert expect != "valid", f"the loader refused a valid log: {exc}"
            assert violation is not None, f"the loader refused a log the protocol allows: {exc}"
            return "error"
        # any other exception type (another DeltaError or not) propagates and fails the test
        assert expect != "corrupt", f"the loader accepted a corrupt log ({violation})"
        try:
            expected = reference_files(commits, root=root)
        except Invalid:
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


# ----------------------------------------------------------------- valid logs only
valid_paths = st.one_of(paths.branches[0], st.text(min_size=1, max_size=12)).filter(  # the spellings and any text
    lambda p: not unsafe_key(_reference_key(p, ROOT))
)
string_maps = st.dictionaries(st.text(max_size=5), st.one_of(st.none(), st.text(max_size=5)), max_size=3)
valid_dv = st.one_of(st.none(), st.sampled_from(FIXED_DVS), good_dv)
valid_add = st.fixed_dictionaries(
    {
        "path": valid_paths,
        "partitionValues": st.just({}),
        "size": st.integers(0, 2**62),
        "modificationTime": st.integers(0, 2**62),
        "dataChange": st.booleans(),
    },
    optional={
        "stats": st.one_of(st.text(max_size=10), st.builds(json.dumps, json_values)),
        "deletionVector": valid_dv,
        "tags": string_maps,
        "baseRowId": st.integers(0, 2**62),
        "someFutureField": json_values,  # unknown fields are ignored
    },
)
valid_remove = st.fixed_dictionaries(
    {"path": valid_paths, "dataChange": st.booleans()},
    optional={
        "deletionTimestamp": st.integers(0, 2**62),
        "size": st.integers(0, 2**62),
        "deletionVector": valid_dv,
        "extendedFileMetadata": st.booleans(),
        "partitionValues": st.just({}),
    },
)
valid_actions = st.one_of(
    st.builds(lambda a: {"add": a}, valid_add),
    st.builds(lambda a: {"remove": a}, valid_remove),
    st.builds(
        lambda a, v, t: {"txn": {"appId": a, "version": v, **({"lastUpdated": t} if t is not None else {})}},
        st.text(max_size=5),
        st.integers(0, 2**62),
        st.one_of(st.none(), st.integers(0, 2**62)),
    ),
    st.builds(lambda v: {"commitInfo": v}, st.dictionaries(st.text(max_size=5), json_values, max_size=3)),
    st.builds(
        lambda d, c, r: {"domainMetadata": {"domain": d, "configuration": c, "removed": r}},
        st.text(max_size=5),
        st.text(max_size=5),
        st.booleans(),
    ),
    st.builds(
        lambda p, n, d: {"cdc": {"path": p, "partitionValues": {}, "size": n, "dataChange": d}},
        valid_paths,
        st.integers(0, 2**40),
        st.booleans(),
    ),
    # an action no reader knows (protocol: ignored); "x_" keeps it off the known names
    st.builds(lambda k, v: {"x_" + k: v}, st.text(max_size=6), json_values),
)

# ----------------------------------------------------------------- corrupt logs: one violation each
_NOT_LONG = st.one_of(
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
    st.booleans(),
    st.sampled_from(["abc", "", "1e", "0x10"]),
    st.sampled_from([2**63, -(2**63) - 1, 2**70, 1.5, -0.25]),
)
_NOT_BOOL = st.one_of(
    st.integers(), st.sampled_from(["true", "false", "1", ""]), st.lists(st.booleans(), max_size=2), st.just({})
)
_NOT_OBJECT = st.one_of(st.integers(), st.text(max_size=4), st.lists(st.integers(), max_size=2), st.booleans())


def _set(action: dict, kind: str, field: str, value) -> dict:
    out = json.loads(json.dumps(action))
    out[kind][field] = value
    return out


def _corrupt_lines(draw, good: dict) -> list[bytes]:
    """One line (or two) that breaks the protocol, built from the valid action ``good``."""
    kind = draw(
        st.sampled_from(
            ["not json", "not an object", "action not an object", "no path"]
            + ["long", "bool", "struct", "utf8", "outside"]
        )
    )
    line = _encode(good)
    if kind == "not json":
        return [line[: draw(st.integers(1, len(line) - 1))]]  # a cut object is never JSON
    if kind == "not an object":
        return [_encode(draw(st.one_of(st.lists(st.just(good), min_size=1, max_size=2), st.integers(), st.text())))]
    if kind == "action not an object":
        action = draw(st.sampled_from(["add", "remove", "txn", "domainMetadata"]))
        return [_encode({action: draw(_NOT_OBJECT)})]
    add = draw(valid_add)
    if kind == "no path":
        del add["path"]
        return [_encode({"add": add if draw(st.booleans()) else {**add, "path": None}})]
    if kind == "long":
        target = draw(
            st.sampled_from(
                [("add", "size"), ("add", "modificationTime"), ("remove", "deletionTimestamp"), ("txn", "version")]
            )
        )
        base = {"add": add, "remove": draw(valid_remove), "txn": {"appId": "a", "version": 1}}[target[0]]
        return [_encode(_set({target[0]: base}, target[0], target[1], draw(_NOT_LONG)))]
    if kind == "bool":
        target = draw(st.sampled_from([("add", "dataChange"), ("remove", "dataChange"), ("domainMetadata", "removed")]))
        base = {"add": add, "remove": draw(valid_remove), "domainMetadata": {"domain": "d", "configuration": "c"}}
        return [_encode(_set({target[0]: base[target[0]]}, target[0], target[1], draw(_NOT_BOOL)))]
    if kind == "outside":  # an active file that leaves the root, or a file: URI of no local path
        path = draw(st.sampled_from(["../x.parquet", "a/../../x", "file:x.parquet", "./"]))
        return [_encode({"add": {**add, "path": path}})]
    if kind == "struct":
        field = draw(st.sampled_from(["deletionVector", "partitionValues"]))
        return [_encode(_set({"add": add}, "add", field, draw(_NOT_OBJECT)))]
    # utf8: a byte sequence that is not UTF-8 inside a string value
    text = _encode({"add": {**add, "path": "PLACEHOLDER"}})
    return [text.replace(b"PLACEHOLDER", b"bad\xff\xfe".decode("unicode_escape").encode("latin-1"))]


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


@FUZZ
@given(extra=st.lists(st.tuples(st.integers(1, len(BASE_COMMITS) - 1), valid_actions), min_size=1, max_size=6))
def test_valid_actions_appended_to_real_commits_load_with_the_reference_files(extra):
    commits = list(BASE_COMMITS)
    for v, action in extra:
        commits[v] = commits[v].rstrip(b"\n") + b"\n" + _encode(action) + b"\n"
    assert check(commits, expect="valid") == "ok"


@FUZZ
@given(acts=st.lists(valid_actions, max_size=8))
def test_valid_actions_in_a_new_commit_load_with_the_reference_files(acts):
    commits = [BASE_COMMITS[0], b"\n".join(_encode(a) for a in acts) + b"\n"]
    assert check(commits, expect="valid") == "ok"


@FUZZ
@given(data=st.data())
def test_one_protocol_violation_in_a_valid_log_is_refused_by_name(data):
    """A valid log with one line that breaks the protocol, at any place of any commit after
    the first: the load raises CorruptLogError."""
    commits = list(BASE_COMMITS) + [b"\n".join(_encode(a) for a in data.draw(st.lists(valid_actions, max_size=4)))]
    v = data.draw(st.integers(1, len(commits) - 1))
    lines = [x for x in commits[v].splitlines() if x.strip()]
    bad = _corrupt_lines(data.draw, data.draw(valid_actions))
    at = data.draw(st.integers(0, len(lines)))
    commits[v] = b"\n".join(lines[:at] + bad + lines[at:]) + b"\n"
    assert check(commits, expect="corrupt") == "error"


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
@given(rows=cp_rows, tail=st.lists(valid_actions, max_size=4), garbage=st.sampled_from([None, "truncate", "footer"]))
def test_random_checkpoint_rows(tmp_path_factory, rows, tail, garbage):
    """A classic checkpoint at version 1 with random add/remove rows, then a commit of
    valid actions. Checkpoint rows are reconciled already: a remove there is a tombstone
    and never cancels an add of the checkpoint. The load gives the reference's files, or
    raises CorruptLogError exactly when an active file leaves the table root; a checkpoint
    cut short or with a broken footer (no commits to fall back on) always raises it."""
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
    size = os.path.getsize(cp)
    if garbage == "truncate":  # the footer is lost
        os.truncate(cp, size // 2)
    elif garbage == "footer":  # the footer's length and last bytes of its metadata overwritten
        with open(cp, "r+b") as f:
            f.seek(size - 24)
            f.write(b"\xffgarbage\xff" * 2)
    commit = _with_root(b"\n".join(_encode(a) for a in tail) + b"\n", root)
    with open(os.path.join(log, f"{2:020d}.json"), "wb") as f:
        f.write(commit)
    # reference: checkpoint adds (rows with a path) then the commit's actions
    cp_adds = [r["add"]["path"] for r in rows if r["add"] and r["add"]["path"] is not None]
    as_commits = [b"\n".join(_encode({"add": {"path": p}}) for p in cp_adds), commit]
    violation = protocol_violation(as_commits, root)
    if garbage or violation:
        with pytest.raises(CorruptLogError):
            loaded_files(root)
        return
    assert loaded_files(root) == reference_files(as_commits, root=root)


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
    any schemaString) load correctly or raise a named error (CorruptLogError, SchemaError,
    UnsupportedFeatureError): never another exception, never a
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
        except (CorruptLogError, SchemaError, UnsupportedFeatureError):
            return  # named errors only: any other DeltaError or exception fails
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
    good log, within 256 MiB: incomplete checkpoints are ignored (the reference answer); a
    complete one (one file, or every part of a multi-part one) is unreadable, so the load
    raises CorruptLogError (a CorruptCheckpointError) only when one exists."""
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
        parts: dict[tuple[int, int], set[int]] = {}
        complete = False
        for name in names:
            v, _, rest = name.partition(".checkpoint.")
            if rest == "parquet":
                complete = True
            else:
                i, n, _ = rest.split(".")
                parts.setdefault((int(v), int(n)), set()).add(int(i))
        complete |= any(1 <= n <= len(seen) and seen >= set(range(1, n + 1)) for (_, n), seen in parts.items())
        with memory_cap(256 << 20):
            try:
                got = loaded_files(root)
            except CorruptLogError:
                assert complete, "an incomplete checkpoint broke the load"
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
