"""Helpers of the DML test files (import them: ``from dml_helpers import make_dml_table``): the
tables they start from (``DML_COLS`` rows from ``helpers.dml_data``, written by deltalake or
pydelta) and the checks that pydelta reads the same rows as deltalake (and, for
``rows_three_ways``, as ``read_delta``), the change-data-feed table of MERGE and change-data tests (``make_cdf_table``,
``change_rows``, ``same_cdf_rows``) and the ``dv_files`` fixture (import it:
``from dml_helpers import dv_files``)."""

from __future__ import annotations

import pyarrow as pa
import pytest
from deltalake import DeltaTable as DLTable
from deltalake import write_deltalake
from helpers import DML_COLS, arrow_rows, deltalake_table, dml_data, spark_rows

from delta_pyds import DeltaTable, read_delta

COLS = DML_COLS
CDF_COLS = ["id", "p", "name"]  # the rows of make_cdf_table
CHANGE_COLS = ["id", "p", "name", "_change_type", "_commit_version"]


def make_dml_table(path, files=4, rows_per_file=50, dv=True, partition=False, config=None, writer="deltalake"):
    """``files`` appends of ``rows_per_file`` rows (ids 0, 1, ... in order); the first sets the
    table's configuration (deletion vectors when ``dv``, plus ``config``)."""
    conf = dict(config or {})
    if dv:
        conf["delta.enableDeletionVectors"] = "true"
    for i in range(files):
        if writer == "pydelta":  # features deltalake cannot write (row tracking), paths it refuses
            from delta_pyds.write.plan import commit_arrow

            commit_arrow(path, dml_data(i * rows_per_file, rows_per_file), options=conf if i == 0 else None)
            continue
        write_deltalake(
            path,
            dml_data(i * rows_per_file, rows_per_file),
            mode="append",
            configuration=(conf or None) if i == 0 else None,
            partition_by=["part"] if partition else None,
        )
    return path


def agree_with_deltalake(spark, path, expected=None):
    """pydelta and deltalake read the same rows (and, if given, the expected ids)."""
    ours = spark_rows(DeltaTable.forPath(spark, path).toDF().select(*COLS))
    theirs = arrow_rows(deltalake_table(path), COLS)
    assert ours == theirs
    if expected is not None:
        assert sorted(r[0] for r in ours) == sorted(expected)
    return ours


def rows_three_ways(spark, path):
    """The table's rows through the data source, read_delta and deltalake (all equal)."""
    ours = spark_rows(spark.read.format("pydelta").load(path).select(*COLS))
    native = spark_rows(read_delta(spark, path).select(*COLS))
    theirs = sorted(tuple(r[c] for c in COLS) for r in deltalake_table(path).select(COLS).to_pylist())
    assert ours == native
    assert sorted(tuple(r) for r in ours) == theirs
    return {r[0]: r for r in ours}


def parquet_rows(path):
    """The number of rows in one Parquet file (from its footer)."""
    import pyarrow.parquet as pq

    return pq.ParquetFile(path).metadata.num_rows


@pytest.fixture
def dv_files(spark):
    """Deletion vectors always in files (never inline), as delta-spark writes them."""
    spark.conf.set("spark.pydelta.deletionVectors.inlineMaxBytes", "0")
    yield
    spark.conf.unset("spark.pydelta.deletionVectors.inlineMaxBytes")


def make_cdf_table(path, cdf=True, mapping=False):
    """Three deltalake appends of 10 rows (id, p, name), partitioned by ``p``; change data
    feed on (``cdf``), column mapping by name (``mapping``)."""
    conf = {"delta.enableChangeDataFeed": "true"} if cdf else {}
    if mapping:
        conf["delta.columnMapping.mode"] = "name"
    for start in (0, 10, 20):
        ids = list(range(start, start + 10))
        write_deltalake(
            path,
            pa.table(
                {"id": pa.array(ids, pa.int64()), "p": pa.array([i % 2 for i in ids]), "name": [f"n{i}" for i in ids]}
            ),
            mode="append",
            partition_by=["p"],
            configuration=conf if start == 0 else None,
        )
    return path


def change_rows(spark, path, version, cross_check=True):
    """The change rows (id, p, name, change type) from ``version`` on, as pydelta reads them;
    checked against deltalake's when ``cross_check``."""
    ours = spark_rows(
        spark.read.format("pydelta")
        .option("readChangeFeed", "true")
        .option("startingVersion", version)
        .load(path)
        .select(*CHANGE_COLS)
    )
    if cross_check:  # deltalake reads no change data feed of column-mapped tables
        theirs = arrow_rows(pa.table(DLTable(path).load_cdf(starting_version=version).read_all()), CHANGE_COLS)
        assert ours == theirs
    return [r[:4] for r in ours]


def same_cdf_rows(spark, path):
    """The table's (id, p, name) rows, the same through pydelta and deltalake."""
    ours = spark_rows(spark.read.format("pydelta").load(path).select(*CDF_COLS))
    assert ours == arrow_rows(deltalake_table(path), CDF_COLS)
    return ours
