"""Deletion vectors on the native read, by shape and by strategy: the rows ``read_delta``
keeps equal the rows the data source keeps and the rows deltalake keeps, for vectors on
the first and last row of a file, on word and bucket boundaries, deleting every row of a
file, on files beside files without a vector, and on more files than the literal and the
keyed paths take; every strategy of :func:`delta_pyds.spark.native.read.drop_deleted_rows`
(one literal array of bit words in the scan's filter, the bit-bucket join keyed by file
number or by (file, bucket), the Arrow UDF) gives the same rows."""

from __future__ import annotations

import json
import os

import numpy as np
import pyarrow as pa
import pytest
from pyroaring import BitMap64

from delta_pyds import read_delta
from delta_pyds.protocol.deletion_vectors import write_deletion_vectors
from delta_pyds.storage.store import Storage

STRATEGIES = ["words", "buckets", "pairs", "udf"]


def _strategy(monkeypatch, how: str) -> None:
    import delta_pyds.spark.native.deleted_rows as native_read

    if how != "words":
        monkeypatch.setattr(native_read, "MAX_LITERAL_DV_ROWS", 0)
    if how == "pairs":
        monkeypatch.setattr(native_read, "MAX_KEYED_DV_FILES", 0)
    if how == "udf":
        monkeypatch.setattr(native_read, "MAX_BUCKET_BYTES", 0)


def _table_with_dvs(path: str, files: list[tuple[int, list[int] | None]]) -> set[int]:
    """A table of ``len(files)`` files (file ``f`` holds ids ``f * 10**6 + row``), then one
    commit giving each file with a list of rows a deletion vector deleting them. Returns
    the ids that remain."""
    from deltalake import write_deltalake

    for f, (rows, _) in enumerate(files):
        ids = np.arange(rows, dtype=np.int64) + f * 1_000_000
        write_deltalake(
            path,
            pa.table({"id": pa.array(ids), "v": pa.array(ids % 7)}),
            mode="append",
            configuration={"delta.enableDeletionVectors": "true"} if f == 0 else None,
        )
    adds = {}
    for v in range(len(files)):
        with open(os.path.join(path, "_delta_log", f"{v:020d}.json")) as fh:
            for line in fh:
                action = json.loads(line)
                if "add" in action:
                    adds[v] = action["add"]
    kept: set[int] = set()
    marked = [(v, rows) for v, (_, rows) in enumerate(files) if rows is not None]
    descriptors = write_deletion_vectors(
        Storage(path), [BitMap64(np.array(rows, dtype=np.uint64)) for _, rows in marked]
    )
    by_file = {v: d for (v, _), d in zip(marked, descriptors, strict=True)}
    lines = []
    for v, (rows, deleted) in enumerate(files):
        gone = set(deleted or ())
        kept.update(v * 1_000_000 + r for r in range(rows) if r not in gone)
        if v in by_file:
            add = adds[v]
            lines.append({"remove": {"path": add["path"], "deletionTimestamp": 1, "dataChange": True}})
            lines.append({"add": {**add, "deletionVector": by_file[v].to_dict()}})
    version = len(files)
    with open(os.path.join(path, "_delta_log", f"{version:020d}.json"), "w") as fh:
        fh.write("\n".join(json.dumps(a) for a in lines) + "\n")
    return kept


def _deltalake_ids(path: str) -> set[int]:
    from deltalake import DeltaTable as DL
    from deltalake import QueryBuilder

    out = QueryBuilder().register("t", DL(path)).execute("SELECT id FROM t").read_all()
    return set(pa.table(out).column("id").to_pylist())


def _check(spark, path: str, kept: set[int]) -> None:
    native = read_delta(spark, path, native="require")
    ids = [r.id for r in native.select("id").collect()]
    assert len(ids) == len(set(ids))
    assert set(ids) == kept
    source = {r.id for r in spark.read.format("pydelta").load(path).select("id").collect()}
    assert source == kept
    assert _deltalake_ids(path) == kept
    # the other columns travel with their rows
    assert native.where("v != id % 7").count() == 0


@pytest.mark.parametrize("how", STRATEGIES)
def test_vector_shapes(spark, tmp_path, monkeypatch, how):
    """First and last rows, 64-row word and 32768-row bucket boundaries, a file whose
    vector deletes every row, a file without a vector, a file deleting one row in the
    middle, on every strategy."""
    _strategy(monkeypatch, how)
    n = 70_000  # three buckets of 32768 rows, the last one partial
    files = [
        (n, [0, n - 1]),
        (n, [63, 64, 65, 127, 32767, 32768, 65535, 65536, n - 1]),
        (1000, list(range(1000))),  # every row
        (5000, None),  # no vector
        (1, [0]),  # a one-row file, deleted
        (777, [388]),
    ]
    path = str(tmp_path / "shapes")
    kept = _table_with_dvs(path, files)
    _check(spark, path, kept)


@pytest.mark.parametrize("how", ["words", "buckets"])
def test_many_files_with_vectors(spark, tmp_path, monkeypatch, how):
    """More files with vectors than MAX_KEYED_DV_FILES: the (file, bucket) join; with the
    cap raised, the literal words take them all."""
    import delta_pyds.spark.native.deleted_rows as native_read

    files = [(300 + f, [f, 299 - f, 300 + f - 1]) for f in range(70)] + [(50, None)]
    path = str(tmp_path / "many")
    kept = _table_with_dvs(path, files)
    if how == "words":
        monkeypatch.setattr(native_read, "MAX_KEYED_DV_FILES", 100)
    _check(spark, path, kept)
    plan = read_delta(spark, path)._jdf.queryExecution().analyzed().toString()
    assert ("scalar-subquery" in plan) is (how == "words")
    assert ("__pydelta_dv_path" in plan) is (how == "buckets")


def test_words_are_the_default_for_few_small_files(spark, tmp_path):
    """A few files with vectors are filtered by one literal in the scan's filter: no join,
    no relation of buckets (one Spark job per action)."""
    files = [(1000, [0, 999]), (1000, [500])]
    path = str(tmp_path / "few")
    kept = _table_with_dvs(path, files)
    df = read_delta(spark, path)
    physical = df._jdf.queryExecution().executedPlan().toString()
    assert "Join" not in physical and "BroadcastExchange" not in physical
    assert {r.id for r in df.collect()} == kept


def _physical(df) -> str:
    return df._jdf.queryExecution().executedPlan().toString()


def test_the_words_are_not_rendered_in_the_plan(spark, tmp_path):
    """The words are a scalar subquery, not a literal: describing the plan (which Spark
    does for every action) does not render one number per 64 rows (200k rows: 3125
    words, about 60 KB of text as a literal)."""
    rows = 200_000
    path = str(tmp_path / "long")
    kept = _table_with_dvs(path, [(rows, list(range(0, rows, 10)))])
    df = read_delta(spark, path)
    assert len(_physical(df)) < 10_000
    assert len(df._jdf.queryExecution().toString()) < 20_000
    assert {r.id for r in df.select("id").collect()} == kept


def test_no_file_path_is_built_per_row(spark, tmp_path):
    """Spark's hidden row index column (no ``_metadata`` struct holding each row's file
    path): with one file with a vector there is no per-row file lookup at all; with files
    of distinct sizes the lookup is by ``_metadata.file_size``, a long."""
    path = str(tmp_path / "one")
    kept = _table_with_dvs(path, [(3000, [0, 1500, 2999])])
    df = read_delta(spark, path)
    physical = _physical(df)
    assert "_tmp_metadata_row_index" in physical and "file_path, " not in physical
    assert "file_size" not in physical
    _check(spark, path, kept)
    path = str(tmp_path / "three")
    kept = _table_with_dvs(path, [(3000 + 500 * f, [f, 2999]) for f in range(3)])
    physical = _physical(read_delta(spark, path))
    assert "file_size" in physical and "named_struct(file_path" not in physical
    _check(spark, path, kept)


def test_64_files_with_vectors_of_equal_size(spark, tmp_path):
    """MAX_KEYED_DV_FILES files whose sizes are all equal: each row finds its file's words
    by a binary search over the sorted paths; with every file's size distinct, over the
    sizes. Deleted rows on the first and last row of each file, and one file losing every
    row."""
    import delta_pyds.spark.native.deleted_rows as native_read

    n = native_read.MAX_KEYED_DV_FILES
    files: list[tuple[int, list[int] | None]] = [(200, [0, 199, f]) for f in range(n - 1)] + [(200, list(range(200)))]
    path = str(tmp_path / "equal")
    kept = _table_with_dvs(path, files)
    sizes = {os.path.getsize(os.path.join(path, f)) for f in os.listdir(path) if f.endswith(".parquet")}
    physical = _physical(read_delta(spark, path))
    assert ("named_struct(file_path" in physical) is (len(sizes) < n)
    assert "BroadcastExchange" not in physical
    _check(spark, path, kept)


def test_a_data_column_named_like_the_hidden_row_index(spark, tmp_path):
    """A table whose files hold a column named ``_tmp_metadata_row_index`` (Spark's
    vectorized reader would read it instead of filling row indexes): the scan reads
    ``_metadata.row_index`` instead."""
    from deltalake import write_deltalake

    path = str(tmp_path / "named")
    ids = np.arange(1000, dtype=np.int64)
    table = pa.table({"id": ids, "v": ids % 7, "_tmp_metadata_row_index": ids[::-1].copy()})
    write_deltalake(path, table, configuration={"delta.enableDeletionVectors": "true"})
    from delta_pyds import DeltaTable

    DeltaTable.forPath(spark, path).delete("id % 3 = 0")
    kept = {i for i in range(1000) if i % 3}
    native = read_delta(spark, path, native="require")
    assert {r.id for r in native.select("id").collect()} == kept
    assert native.where("_tmp_metadata_row_index != 999 - id").count() == 0
