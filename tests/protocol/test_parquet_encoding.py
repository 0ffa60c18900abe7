"""Encoding choices of the executor-side Parquet writer: performance only, so the test
checks both the choice and that the data reads back identically (ours and deltalake)."""

from __future__ import annotations

import glob
import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from helpers import arrow_rows, deltalake_table

from delta_pyds.write.parquet_writer import dictionary_columns
from delta_pyds.write.plan import commit_arrow


def _encodings(path):
    md = pq.ParquetFile(path).metadata
    rg = md.row_group(0)
    return {rg.column(i).path_in_schema: set(rg.column(i).encodings) for i in range(rg.num_columns)}


def test_unique_fixed_width_columns_are_written_plain(tmp_path):
    n = 5000
    ids = np.arange(n, dtype=np.int64)
    table = pa.table(
        {
            "id": ids,  # unique: plain
            "x": np.linspace(0, 1, n),  # unique doubles: plain
            "k": (ids % 7).astype(np.int32),  # repeats: dictionary
            "s": pa.array([f"v{i}" for i in range(n)]),  # strings keep the dictionary
            "arr": pa.array([[int(i)] for i in ids]),  # nested keeps the dictionary
            "few": pa.array([1] * 10 + [None] * (n - 10), pa.int64()),  # too few values to judge
        }
    )
    assert dictionary_columns(table) == ["k", "s", "arr.list.element", "few"]
    path = str(tmp_path / "t")
    commit_arrow(path, table)
    (data_file,) = glob.glob(os.path.join(path, "*.parquet"))
    enc = _encodings(data_file)
    assert "PLAIN_DICTIONARY" not in enc["id"] and "RLE_DICTIONARY" not in enc["id"]
    assert "PLAIN_DICTIONARY" not in enc["x"] and "RLE_DICTIONARY" not in enc["x"]
    assert enc["k"] & {"PLAIN_DICTIONARY", "RLE_DICTIONARY"}
    assert enc["s"] & {"PLAIN_DICTIONARY", "RLE_DICTIONARY"}
    cols = ["id", "x", "k", "s", "arr", "few"]
    assert arrow_rows(deltalake_table(path), cols) == arrow_rows(table, cols)


def test_all_dictionary_when_nothing_is_unique():
    table = pa.table({"a": pa.array([1, 2] * 2000, pa.int64()), "b": pa.array(["x"] * 4000)})
    assert dictionary_columns(table) is True


def test_dictionaries_of_high_cardinality_strings_stop_growing(tmp_path):
    """Like Spark's writer, a string column with too many distinct values falls back to
    plain encoding once its dictionary is about half a MiB (the file stays readable)."""
    from delta_pyds.write.parquet_writer import DICTIONARY_PAGE_BYTES

    n = 200_000
    table = pa.table({"s": pa.array([f"value-{i:08d}" for i in range(n)])})  # ~3 MB of distinct values
    path = str(tmp_path / "t")
    commit_arrow(path, table, options={"compression": "none"})  # page sizes = value bytes
    (data_file,) = glob.glob(os.path.join(path, "*.parquet"))
    col = pq.ParquetFile(data_file).metadata.row_group(0).column(0)
    assert col.has_dictionary_page
    dictionary_bytes = col.data_page_offset - col.dictionary_page_offset
    assert DICTIONARY_PAGE_BYTES // 2 < dictionary_bytes <= DICTIONARY_PAGE_BYTES * 1.1
    assert arrow_rows(deltalake_table(path), ["s"]) == arrow_rows(table, ["s"])
