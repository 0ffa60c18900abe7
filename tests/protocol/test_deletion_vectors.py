"""Tests for delta_pyds.protocol.deletion_vectors (pure pyarrow/numpy/pyroaring, no Spark).

The tables under tests/data are byte-identical copies of real tables from
/work/shared/tables (written by delta-spark, or hand-made by the delta-rs/kernel-rs
projects). Expected answers come from outside this package: delta-rs
(``DeltaTable.deletion_vectors()`` and its DataFusion query engine), the protocol's and
delta-kernel-rs's documented examples, and the tables' own commit predicates.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import uuid
import zlib
from pathlib import Path

import deltalake
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyroaring import BitMap64

from delta_pyds.errors import DeletionVectorError
from delta_pyds.protocol.deletion_vectors import (
    MAGIC_NUMBER,
    DeletionVectorDescriptor,
    deserialize_deleted_rows,
    inline_descriptor,
    keep_mask,
    load_deleted_rows,
    serialize_deleted_rows,
    write_deletion_vectors,
    z85_decode,
    z85_encode,
)
from delta_pyds.storage.store import Storage

DATA = Path(__file__).parent.parent / "data"
DV_TABLES = [
    "delta-rs/table-with-dv-small",
    "delta-rs/cdf-table-with-cdc-and-dvs",
    "kernel-rs/with-short-dv",
    "kernel-rs/cdf-table-with-dv",
]
SMALL = DATA / "delta-rs" / "table-with-dv-small"
SMALL_DV_FILE = "deletion_vector_61d16c75-6994-46b7-a15b-8b538852e50e.bin"
SMALL_DV = {
    "storageType": "u",
    "pathOrInlineDv": "vBn[lx{q8@P<9BNH/isA",
    "offset": 1,
    "sizeInBytes": 36,
    "cardinality": 2,
}


# -- helpers --------------------------------------------------------------------------
def commits(table: Path):
    """(version, [actions]) for each JSON commit, in order (these tables have no checkpoints)."""
    for f in sorted((table / "_delta_log").glob("*.json")):
        yield int(f.stem), [json.loads(line) for line in f.read_text().splitlines() if line.strip()]


def dv_adds(table: Path):
    """(version, add action) for every add carrying a deletion vector."""
    for version, actions in commits(table):
        for action in actions:
            add = action.get("add")
            if add and add.get("deletionVector"):
                yield version, add


def active_adds(table: Path, version: int) -> dict:
    """path -> add action at ``version``, by replaying the JSON log."""
    files = {}
    for v, actions in commits(table):
        if v > version:
            break
        for action in actions:
            if "add" in action:
                files[action["add"]["path"]] = action["add"]
            elif "remove" in action:
                files.pop(action["remove"]["path"], None)
    return files


def delta_rs_deleted_rows(table: Path, version: int) -> dict:
    """Data file name -> deleted row indexes, as delta-rs computes them."""
    dt = deltalake.DeltaTable(str(table), version=version)
    got = pa.table(dt.deletion_vectors().read_all()).to_pylist()
    return {r["filepath"].rsplit("/", 1)[-1]: np.flatnonzero(~np.array(r["selection_vector"], dtype=bool)) for r in got}


def sorted_rows(tables: list[pa.Table]) -> list:
    """All rows of ``tables`` as sorted tuples, with types normalised (Spark's naive INT96
    timestamps vs delta-rs's UTC ones, string vs string_view, nullability)."""
    rows = []
    for table in tables:
        columns = []
        for column in table.columns:
            if pa.types.is_timestamp(column.type):
                column = column.cast(pa.timestamp("us", tz="UTC"))
            elif (
                pa.types.is_string(column.type)
                or pa.types.is_large_string(column.type)
                or column.type == pa.string_view()
            ):
                column = column.cast(pa.string())
            columns.append(column.to_pylist())
        rows.extend(zip(*columns))
    return sorted(rows)


def framed(data: bytes) -> bytes:
    return len(data).to_bytes(4, "big") + data + zlib.crc32(data).to_bytes(4, "big")


def copy_small_table(tmp_path: Path) -> Path:
    dest = tmp_path / "table"
    shutil.copytree(SMALL, dest)
    for p in dest.rglob("*"):
        p.chmod(0o755 if p.is_dir() else 0o644)
    return dest


# -- the copied tables are what we think they are ------------------------------------
def test_data_tables_are_present_and_have_dvs():
    for name in DV_TABLES:
        assert list(dv_adds(DATA / name)), name


# -- real tables against delta-rs ----------------------------------------------------
@pytest.mark.parametrize("name", DV_TABLES)
def test_every_dv_in_real_tables_matches_delta_rs(name):
    table = DATA / name
    storage = Storage(str(table))
    checked = 0
    for version, add in dv_adds(table):
        descriptor = DeletionVectorDescriptor.from_dict(add["deletionVector"])
        rows = load_deleted_rows(storage, descriptor)
        assert rows.dtype == np.uint64
        assert np.all(np.diff(rows.astype(np.int64)) > 0)
        expected = delta_rs_deleted_rows(table, version)[add["path"]]
        np.testing.assert_array_equal(rows, expected)
        assert rows.size == descriptor.cardinality
        assert rows.size == 0 or int(rows[-1]) < json.loads(add["stats"])["numRecords"]
        checked += 1
    assert checked > 0


@pytest.mark.parametrize("name", DV_TABLES)
def test_kept_rows_equal_delta_rs_query_at_every_version(name):
    """Raw parquet rows filtered with keep_mask == what delta-rs's engine returns."""
    table = DATA / name
    storage = Storage(str(table))
    last = max(v for v, _ in commits(table))
    for version in range(last + 1):
        dt = deltalake.DeltaTable(str(table), version=version)
        theirs = pa.table(deltalake.QueryBuilder().register("t", dt).execute("select * from t").read_all())
        pieces = []
        for path, add in active_adds(table, version).items():
            # (some files written by UPDATE carry an extra internal column: keep table columns)
            data = pq.read_table(table / path).select(theirs.column_names)
            if add.get("deletionVector"):
                deleted = load_deleted_rows(storage, add["deletionVector"])
                data = data.filter(pa.array(keep_mask(deleted, 0, data.num_rows)))
            pieces.append(data)
        assert sorted_rows(pieces) == sorted_rows([theirs]), (name, version)


def test_known_values():
    """Row indexes stated by the tables' commits and by delta-kernel-rs's tests."""
    # table-with-dv-small: DELETE ... value IN (0, 9); the file holds values 0..9 in order
    values = pq.read_table(SMALL / "part-00000-fae5310a-a37d-4e51-827b-c3d5516560ca-c000.snappy.parquet")
    assert values.column("value").to_pylist() == list(range(10))
    assert load_deleted_rows(Storage(str(SMALL)), SMALL_DV).tolist() == [0, 9]

    # cdf-table-with-dv (kernel-rs cdf test): v1 removes 0,9; v3 removes 0,1,4,5;
    # v4 restores 1,4; v5 restores 0,5 and removes 3 (inline DVs from v3 on)
    table = DATA / "kernel-rs" / "cdf-table-with-dv"
    storage = Storage(str(table))
    got = {v: load_deleted_rows(storage, add["deletionVector"]).tolist() for v, add in dv_adds(table)}
    assert got == {1: [0, 9], 3: [0, 1, 4, 5], 4: [0, 5], 5: [3]}

    # with-short-dv: ids 0..4 in the first file, three deleted
    table = DATA / "kernel-rs" / "with-short-dv"
    ((_, add),) = dv_adds(table)
    ids = pq.read_table(table / add["path"]).column("id").to_pylist()
    rows = load_deleted_rows(Storage(str(table)), add["deletionVector"])
    assert rows.tolist() == [0, 1, 2] and ids == [0, 1, 2, 3, 4]


def test_multiple_dvs_in_one_file():
    table = DATA / "delta-rs" / "cdf-table-with-cdc-and-dvs"
    storage = Storage(str(table))
    ((_, actions),) = [(v, a) for v, a in commits(table) if v == 16]
    dvs = [a["add"]["deletionVector"] for a in actions if "add" in a]
    assert {d["offset"] for d in dvs} == {1, 43}
    assert len({DeletionVectorDescriptor.from_dict(d).absolute_path(storage) for d in dvs}) == 1
    assert len({DeletionVectorDescriptor.from_dict(d).unique_id for d in dvs}) == 2
    for d in dvs:
        assert load_deleted_rows(storage, d).size == 1


# -- descriptors ----------------------------------------------------------------------
def test_descriptor_dict_round_trip_and_unique_id():
    d = DeletionVectorDescriptor.from_dict(SMALL_DV)
    assert d == DeletionVectorDescriptor("u", "vBn[lx{q8@P<9BNH/isA", 1, 36, 2)
    assert d.to_dict() == SMALL_DV
    assert d.unique_id == "uvBn[lx{q8@P<9BNH/isA@1"
    inline = DeletionVectorDescriptor.from_dict(
        {"storageType": "i", "pathOrInlineDv": "abcde", "offset": None, "sizeInBytes": 4, "cardinality": 0}
    )
    assert inline.offset is None
    assert inline.unique_id == "iabcde"
    assert "offset" not in inline.to_dict()
    no_offset = dict(inline.to_dict().items())
    assert DeletionVectorDescriptor.from_dict(no_offset) == inline


@pytest.mark.parametrize(
    "bad",
    [
        {"pathOrInlineDv": "x", "sizeInBytes": 1, "cardinality": 1},
        {"storageType": "z", "pathOrInlineDv": "x", "sizeInBytes": 1, "cardinality": 1},
        {"storageType": "u", "pathOrInlineDv": "x", "sizeInBytes": "many", "cardinality": 1},
        {"storageType": "u", "pathOrInlineDv": "x", "offset": -1, "sizeInBytes": 1, "cardinality": 1},
        {"storageType": "u", "pathOrInlineDv": "", "sizeInBytes": 1, "cardinality": 1},
    ],
)
def test_descriptor_rejects_malformed(bad):
    with pytest.raises(DeletionVectorError):
        DeletionVectorDescriptor.from_dict(bad)


def test_absolute_paths():
    s3 = Storage("s3://mytable")
    # the protocol's examples
    rel = DeletionVectorDescriptor("u", "ab^-aqEH.-t@S}K{vb[*k^", 4, 40, 6)
    assert rel.absolute_path(s3) == "s3://mytable/ab/deletion_vector_d2c639aa-8816-431a-aaf6-d3fe2512ff61.bin"
    absolute = DeletionVectorDescriptor(
        "p", "s3://mytable/deletion_vector_d2c639aa-8816-431a-aaf6-d3fe2512ff61.bin", 4, 40, 6
    )
    assert absolute.absolute_path(s3) == "s3://mytable/deletion_vector_d2c639aa-8816-431a-aaf6-d3fe2512ff61.bin"
    assert DeletionVectorDescriptor("i", "abcde", None, 4, 0).absolute_path(s3) is None
    # no prefix, local table
    local = Storage(str(SMALL))
    assert DeletionVectorDescriptor.from_dict(SMALL_DV).absolute_path(local) == str(SMALL / SMALL_DV_FILE)
    with pytest.raises(DeletionVectorError, match="shorter"):
        DeletionVectorDescriptor("u", "tooShort", 1, 36, 2).absolute_path(local)


def test_absolute_p_path_with_encoded_characters(tmp_path):
    elsewhere = tmp_path / "other place"
    elsewhere.mkdir()
    shutil.copyfile(SMALL / SMALL_DV_FILE, elsewhere / "dv.bin")
    uri = "file://" + str(elsewhere).replace(" ", "%20") + "/dv.bin"
    d = DeletionVectorDescriptor("p", uri, 1, 36, 2)
    storage = Storage(str(tmp_path / "table"))
    assert d.absolute_path(storage) == str(elsewhere / "dv.bin")
    assert load_deleted_rows(storage, d).tolist() == [0, 9]


# -- Z85 ------------------------------------------------------------------------------
def test_z85_reference_vectors():
    assert z85_encode(bytes.fromhex("864FD26FB559F75B")) == "HelloWorld"  # ZeroMQ RFC 32
    assert z85_decode("HelloWorld") == bytes.fromhex("864FD26FB559F75B")
    # UUID encodings from delta-kernel-rs's tests and the protocol's example
    assert z85_encode(uuid.UUID("550e8400-e29b-41d4-a716-446655440000").bytes) == "rsTVZ&*Sl-RXRWjryu/!"
    assert z85_encode(uuid.UUID("123e4567-e89b-12d3-a456-426614174000").bytes) == "5<w-%>:JjlQ/G/]6C<1m"
    assert uuid.UUID(bytes=z85_decode("vBn[lx{q8@P<9BNH/isA")) == uuid.UUID("61d16c75-6994-46b7-a15b-8b538852e50e")
    assert z85_encode(b"") == "" and z85_decode("") == b""


def test_z85_padding_forms():
    # Delta (Java) pads with zero bytes; the Rust z85 crate marks missing bytes with '#'
    assert z85_encode(b"\x03\x00") == z85_encode(b"\x03\x00\x00\x00")
    assert z85_decode("##093") == b"\x03\x00"
    assert z85_decode("#0000") == b"\x00\x00\x00"
    assert z85_decode("###0a") == b"\x0a"


@pytest.mark.parametrize("bad", ["HelloWorl", "Hell~", "Héllo", "#####", "##zzz", "##093HelloWorld", "%%%%%"])
def test_z85_rejects_invalid(bad):
    with pytest.raises(DeletionVectorError, match="Z85"):
        z85_decode(bad)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=64))
def test_z85_round_trip(data):
    text = z85_encode(data)
    assert len(text) == 5 * -(-len(data) // 4)
    decoded = z85_decode(text)
    assert decoded[: len(data)] == data and set(decoded[len(data) :]) <= {0}


# -- inline DVs -----------------------------------------------------------------------
def test_inline_examples():
    # delta-kernel-rs's version of the protocol example (rows 3, 4, 7, 11, 18, 29)
    d = DeletionVectorDescriptor("i", "^Bg9^0rr910000000000iXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L", None, 44, 6)
    assert load_deleted_rows(None, d).tolist() == [3, 4, 7, 11, 18, 29]
    assert inline_descriptor([29, 3, 4, 7, 11, 18, 3]) == d  # we write the same bytes
    # the protocol text's own example uses the JVM "native" framing (big-endian magic
    # 1681511376), which the protocol does not allow for DVs: refuse, don't misread
    spec = DeletionVectorDescriptor("i", "wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L", None, 40, 6)
    with pytest.raises(DeletionVectorError, match="native"):
        load_deleted_rows(None, spec)


def test_inline_errors():
    good = inline_descriptor([1, 2, 3])
    with pytest.raises(DeletionVectorError, match="cardinality"):
        load_deleted_rows(None, DeletionVectorDescriptor("i", good.path_or_inline_dv, None, good.size_in_bytes, 4))
    with pytest.raises(DeletionVectorError, match="sizeInBytes"):
        load_deleted_rows(None, DeletionVectorDescriptor("i", good.path_or_inline_dv, None, good.size_in_bytes + 4, 3))
    with pytest.raises(DeletionVectorError, match="Z85"):
        load_deleted_rows(
            None, DeletionVectorDescriptor("i", good.path_or_inline_dv[:-1] + "~", None, good.size_in_bytes, 3)
        )


# -- corrupt or inconsistent stored DVs -----------------------------------------------
@pytest.fixture
def dv_copy(tmp_path):
    """A table root in tmp_path holding a copy of table-with-dv-small's DV file."""
    root = tmp_path / "t"
    root.mkdir()
    shutil.copyfile(SMALL / SMALL_DV_FILE, root / SMALL_DV_FILE)
    os.chmod(root / SMALL_DV_FILE, 0o644)
    return Storage(str(root)), root / SMALL_DV_FILE


def _flip(path: Path, index: int):
    data = bytearray(path.read_bytes())
    data[index] ^= 0x01
    path.write_bytes(bytes(data))


def test_copy_reads_fine(dv_copy):
    storage, _ = dv_copy
    assert load_deleted_rows(storage, SMALL_DV).tolist() == [0, 9]


@pytest.mark.parametrize("index", [5 + 4, 5 + 20, 5 + 35, 5 + 36, 5 + 39])  # bitmap bytes and checksum
def test_corrupted_byte_fails_checksum(dv_copy, index):
    storage, path = dv_copy
    _flip(path, index)
    with pytest.raises(DeletionVectorError, match="CRC-32") as err:
        load_deleted_rows(storage, SMALL_DV)
    assert str(path) in str(err.value)


def test_corrupted_magic_fails_checksum_or_magic(dv_copy):
    storage, path = dv_copy
    _flip(path, 5)
    with pytest.raises(DeletionVectorError, match="CRC-32"):
        load_deleted_rows(storage, SMALL_DV)


@pytest.mark.parametrize(
    "change, message",
    [
        ({"offset": 1000}, "out of range"),
        ({"offset": 0}, "header"),
        ({"offset": 2}, "out of range"),
        ({"sizeInBytes": 35}, "sizeInBytes 35"),
        ({"sizeInBytes": 40}, "out of range"),
        ({"cardinality": 3}, "cardinality 3"),
        ({"pathOrInlineDv": "00000000000000000000"}, "does not exist"),
    ],
)
def test_inconsistent_descriptor(dv_copy, change, message):
    storage, path = dv_copy
    with pytest.raises(DeletionVectorError, match=message) as err:
        load_deleted_rows(storage, {**SMALL_DV, **change})
    if "pathOrInlineDv" not in change:
        assert str(path) in str(err.value)


def test_bad_version_byte_and_bad_magic(tmp_path):
    storage = Storage(str(tmp_path))
    (d,) = write_deletion_vectors(storage, [[1, 2]])
    path = Path(d.absolute_path(storage))
    blob = bytearray(path.read_bytes())
    blob[0] = 2
    path.write_bytes(bytes(blob))
    with pytest.raises(DeletionVectorError, match="version 2"):
        load_deleted_rows(storage, d)
    # a well-framed block (good checksum) that is not a portable DV bitmap
    data = (MAGIC_NUMBER + 1).to_bytes(4, "little") + BitMap64([1, 2]).serialize()
    path.write_bytes(b"\x01" + framed(data))
    with pytest.raises(DeletionVectorError, match="magic"):
        load_deleted_rows(storage, d)
    # right magic, garbage bitmap
    data = MAGIC_NUMBER.to_bytes(4, "little") + b"\xff" * 20
    path.write_bytes(b"\x01" + framed(data))
    with pytest.raises(DeletionVectorError, match="malformed"):
        load_deleted_rows(storage, DeletionVectorDescriptor("u", d.path_or_inline_dv, 1, len(data), 2))


def test_row_index_with_top_bit_set_is_refused():
    data = MAGIC_NUMBER.to_bytes(4, "little") + BitMap64([2**63]).serialize()
    with pytest.raises(DeletionVectorError, match="top bit"):
        deserialize_deleted_rows(data)


# -- writing --------------------------------------------------------------------------
BIG = [0, 5, 65535, 65536, 2**32 - 1, 2**32, 2**32 + 7, 2**40 + 3, 2**63 - 1]


def test_serialize_round_trip_with_large_indexes():
    data = serialize_deleted_rows(np.array(BIG[::-1] + BIG, dtype=np.uint64))
    assert data[:4] == MAGIC_NUMBER.to_bytes(4, "little")
    assert deserialize_deleted_rows(data).tolist() == BIG
    assert BitMap64.deserialize(data[4:]) == BitMap64(BIG)  # the standard portable format
    assert deserialize_deleted_rows(serialize_deleted_rows([])).tolist() == []
    runs = np.arange(10_000, 200_000, dtype=np.int64)
    assert np.array_equal(deserialize_deleted_rows(serialize_deleted_rows(runs)), runs)
    inline = inline_descriptor(BIG)
    assert load_deleted_rows(None, inline).tolist() == BIG and inline.cardinality == len(BIG)


@pytest.mark.parametrize("bad", [[-1], [2**63], np.array([1.5]), ["a"]])
def test_serialize_rejects_bad_row_indexes(bad):
    with pytest.raises(ValueError):
        serialize_deleted_rows(bad)


def test_write_deletion_vectors_round_trip(tmp_path):
    storage = Storage(str(tmp_path))
    scattered = np.random.default_rng(0).choice(10**7, 5000, replace=False)  # ~10 KiB
    bitmaps = [[0, 9], scattered, BIG, np.arange(1000, 5000, 3), [], BitMap64([7])]
    descriptors = write_deletion_vectors(storage, bitmaps, prefix="ab")
    assert descriptors[2].offset > 4096  # read without the version-byte window too
    assert len(descriptors) == len(bitmaps)
    assert len({d.absolute_path(storage) for d in descriptors}) == 1
    path = Path(descriptors[0].absolute_path(storage))
    assert path.parent == tmp_path / "ab" and path.name.startswith("deletion_vector_")
    blob = path.read_bytes()
    assert blob[0] == 1
    assert descriptors[0].offset == 1
    for d, nxt in zip(descriptors, descriptors[1:]):
        assert nxt.offset == d.offset + 4 + d.size_in_bytes + 4
    assert descriptors[-1].offset + 8 + descriptors[-1].size_in_bytes == len(blob)
    for d, rows in zip(descriptors, bitmaps):
        assert d.storage_type == "u" and d.path_or_inline_dv.startswith("ab") and len(d.path_or_inline_dv) == 22
        expected = sorted({int(r) for r in rows})
        assert load_deleted_rows(storage, d).tolist() == expected
        assert d.cardinality == len(expected)
        assert DeletionVectorDescriptor.from_dict(json.loads(json.dumps(d.to_dict()))) == d
    assert write_deletion_vectors(storage, []) == []
    with pytest.raises(ValueError):
        write_deletion_vectors(storage, [[1]], prefix="../x")


def test_written_dvs_are_read_by_delta_rs(tmp_path):
    """Commit our DVs (file-based, then inline) to a copy of a real table; delta-rs agrees."""
    table = copy_small_table(tmp_path)
    storage = Storage(str(table))
    ((_, add),) = dv_adds(table)
    (stored,) = write_deletion_vectors(storage, [[1, 2, 3]])
    inline = inline_descriptor([2, 8])
    for version, (old, new) in enumerate(
        [(add["deletionVector"], stored.to_dict()), (stored.to_dict(), inline.to_dict())], start=2
    ):
        remove = {
            "path": add["path"],
            "deletionTimestamp": 1,
            "dataChange": True,
            "deletionVector": old,
            "size": add["size"],
            "partitionValues": {},
        }
        new_add = {**add, "deletionVector": new}
        lines = [json.dumps({"remove": remove}), json.dumps({"add": new_add})]
        (table / "_delta_log" / f"{version:020d}.json").write_text("\n".join(lines) + "\n")
    assert delta_rs_deleted_rows(table, 2)[add["path"]].tolist() == [1, 2, 3]
    assert delta_rs_deleted_rows(table, 3)[add["path"]].tolist() == [2, 8]
    dt = deltalake.DeltaTable(str(table))
    got = pa.table(deltalake.QueryBuilder().register("t", dt).execute("select * from t").read_all())
    assert sorted(got.column("value").to_pylist()) == [0, 1, 3, 4, 5, 6, 7, 9]


# -- keep_mask --------------------------------------------------------------------------
def test_keep_mask_basics():
    deleted = np.array([0, 3, 4, 2**33], dtype=np.uint64)
    assert keep_mask(deleted, 0, 6).tolist() == [False, True, True, False, False, True]
    assert keep_mask(deleted, 3, 3).tolist() == [False, False, True]
    assert keep_mask(deleted, 2**33 - 1, 3).tolist() == [True, False, True]
    assert keep_mask(deleted, 10, 0).tolist() == []
    assert keep_mask(np.array([], dtype=np.uint64), 5, 3).tolist() == [True] * 3
    with pytest.raises(ValueError):
        keep_mask(deleted, -1, 3)


@settings(max_examples=300, deadline=None)
@given(
    rows=st.lists(st.one_of(st.integers(0, 300), st.integers(2**32 - 50, 2**32 + 50)), max_size=60),
    start=st.one_of(st.integers(0, 300), st.integers(2**32 - 80, 2**32 + 80)),
    length=st.integers(0, 200),
)
def test_keep_mask_matches_naive(rows, start, length):
    deleted = np.unique(np.array(rows, dtype=np.uint64))
    naive = ~np.isin(np.arange(start, start + length, dtype=np.uint64), deleted)
    np.testing.assert_array_equal(keep_mask(deleted, start, length), naive)


# -- the core stays Spark-free ---------------------------------------------------------
def test_module_does_not_import_pyspark():
    code = "import sys, delta_pyds.protocol.deletion_vectors; assert 'pyspark' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(__file__).parent.parent.parent)


def test_the_row_cap_applies_only_when_the_file_row_count_is_unknown(tmp_path, monkeypatch):
    """A deletion vector larger than DEFAULT_MAX_DV_ROWS is fine wherever the data file's
    row count is known (reads, replaceWhere, the change data feed): the cap guards only
    vectors of unknown files. The cap is lowered here so a small table exercises it."""
    from table_files import read_rows

    import delta_pyds.protocol.deletion_vectors as dvmod
    from delta_pyds.cdf.reader import read_changes
    from delta_pyds.write.plan import commit_arrow

    monkeypatch.setattr(dvmod, "DEFAULT_MAX_DV_ROWS", 4)
    t = str(tmp_path / "t")
    commit_arrow(
        t,
        pa.table({"id": pa.array(range(10), pa.int64())}),
        options={"delta.enableDeletionVectors": "true", "delta.enableChangeDataFeed": "true"},
    )
    commit_arrow(
        t, pa.table({"id": pa.array([-1], pa.int64())}), mode="overwrite", options={"replaceWhere": "id < 6"}
    )  # 6 rows deleted by a vector
    commit_arrow(
        t, pa.table({"id": pa.array([6], pa.int64())}), mode="overwrite", options={"replaceWhere": "id = 6"}
    )  # merged with the existing vector: 7 rows
    assert sorted(read_rows(t).column("id").to_pylist()) == [-1, 6, 7, 8, 9]
    changes = read_changes(t, starting_version=1)
    deleted = sorted(r["id"] for r in changes.to_pylist() if r["_change_type"] == "delete")
    assert deleted == [0, 1, 2, 3, 4, 5, 6]
    with pytest.raises(DeletionVectorError, match="without a known file size"):
        dvmod.deserialize_deleted_rows(serialize_deleted_rows(list(range(5))))
