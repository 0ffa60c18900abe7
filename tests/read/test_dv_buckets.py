"""Deletion vectors as bit buckets and bit words (delta_pyds.read.dv_buckets): exact bits, size
bounded by the file's rows whatever the vector deletes, the data source's checks."""

from __future__ import annotations

import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyroaring import BitMap64

from delta_pyds.errors import DataFileError, DeletionVectorError
from delta_pyds.protocol.deletion_vectors import inline_descriptor
from delta_pyds.read.dv_buckets import BUCKET_BYTES, BUCKET_ROWS, deleted_row_buckets, deleted_row_words
from delta_pyds.storage.store import Storage

ROWS = 200_000


@pytest.fixture
def table(tmp_path):
    pq.write_table(pa.table({"id": np.arange(ROWS, dtype=np.int64)}), tmp_path / "f.parquet")
    return Storage(str(tmp_path))


def _decode(buckets: pa.Table) -> np.ndarray:
    rows = []
    for bucket, words in zip(buckets.column("bucket").to_pylist(), buckets.column("words").to_pylist(), strict=True):
        bits = np.unpackbits(np.array(words, dtype="<i8").view(np.uint8), bitorder="little")
        rows.append(np.flatnonzero(bits) + bucket * BUCKET_ROWS)
    return np.concatenate(rows) if rows else np.array([], dtype=np.int64)


@pytest.mark.parametrize("deleted", [[0], [5, 32767, 32768, ROWS - 1], list(range(0, ROWS, 3)), list(range(1, ROWS))])
def test_buckets_hold_exactly_the_deleted_rows_within_the_files_size(table, deleted):
    desc = inline_descriptor(BitMap64(deleted)).to_dict()
    buckets = deleted_row_buckets(table, [("file:/x/f.parquet", "f.parquet", desc)], max_bytes=1 << 30)
    assert buckets is not None
    assert _decode(buckets).tolist() == deleted
    # never more than the file's rows / 8 bytes (rounded up to whole buckets)
    assert buckets.num_rows * BUCKET_BYTES <= -(-ROWS // BUCKET_ROWS) * BUCKET_BYTES
    assert buckets.num_rows == len({r // BUCKET_ROWS for r in deleted})


def test_over_the_byte_bound_is_none(table):
    desc = inline_descriptor(BitMap64([1, 40_000])).to_dict()
    files = [("file:/x/f.parquet", "f.parquet", desc)]
    assert deleted_row_buckets(table, files, max_bytes=2 * BUCKET_BYTES) is not None
    assert deleted_row_buckets(table, files, max_bytes=BUCKET_BYTES) is None


def test_checks_against_the_footer_name_the_data_file(table):
    claim = inline_descriptor(BitMap64(range(ROWS + 1))).to_dict()
    with pytest.raises(DeletionVectorError, match=r"data file file:/x/f.parquet: .*claims 200001 rows.*only 200000"):
        deleted_row_buckets(table, [("file:/x/f.parquet", "f.parquet", claim)], max_bytes=1 << 30)
    past = inline_descriptor(BitMap64([ROWS])).to_dict()
    with pytest.raises(DeletionVectorError, match=r"data file file:/x/f.parquet: .*deletes row 200000"):
        deleted_row_buckets(table, [("file:/x/f.parquet", "f.parquet", past)], max_bytes=1 << 30)
    with pytest.raises(DataFileError, match="missing"):
        deleted_row_buckets(table, [("file:/x/g.parquet", "g.parquet", past)], max_bytes=1 << 30)


@pytest.mark.parametrize("deleted", [[0], [63, 64, ROWS - 1], list(range(0, ROWS, 3)), list(range(ROWS))])
def test_words_hold_exactly_the_deleted_rows_of_each_file(tmp_path, deleted):
    """Two files (the second one 1 row longer than a whole word), words one after another."""
    pq.write_table(pa.table({"id": np.arange(ROWS, dtype=np.int64)}), tmp_path / "f.parquet")
    pq.write_table(pa.table({"id": np.arange(65, dtype=np.int64)}), tmp_path / "g.parquet")
    storage = Storage(str(tmp_path))
    files = [
        ("file:/x/g.parquet", "g.parquet", inline_descriptor(BitMap64([0, 64])).to_dict()),
        ("file:/x/f.parquet", "f.parquet", inline_descriptor(BitMap64(deleted)).to_dict()),
    ]
    found = deleted_row_words(storage, files, max_rows=ROWS + 65)
    assert found is not None
    starts, words, names, sizes = found
    assert names == {"id"}
    assert sizes == [os.path.getsize(tmp_path / "g.parquet"), os.path.getsize(tmp_path / "f.parquet")]
    assert starts == [0, 2] and len(words) == 2 + -(-ROWS // 64)  # one bit per row, whole words
    bits = np.unpackbits(words.view(np.uint8), bitorder="little")
    assert np.flatnonzero(bits[:128]).tolist() == [0, 64]
    assert np.flatnonzero(bits[128:]).tolist() == deleted
    assert deleted_row_words(storage, files, max_rows=ROWS + 64) is None  # counted before any vector


def test_words_check_the_vectors_as_the_buckets_do(table):
    past = inline_descriptor(BitMap64([ROWS])).to_dict()
    with pytest.raises(DeletionVectorError, match=r"data file file:/x/f.parquet: .*deletes row 200000"):
        deleted_row_words(table, [("file:/x/f.parquet", "f.parquet", past)], max_rows=1 << 30)
