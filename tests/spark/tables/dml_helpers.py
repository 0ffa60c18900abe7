"""Helpers of the DML test files (import them: ``from dml_helpers import make_dml_table``): the
tables they start from (``DML_COLS`` rows from ``helpers.dml_data``, written by deltalake or
pydelta) and the checks that pydelta reads the same rows as deltalake (and, for
``rows_three_ways``, as ``read_delta``), and the ``dv_files`` fixture (import it:
``from dml_helpers import dv_files``)."""

from __future__ import annotations

import pytest
from deltalake import write_deltalake
from helpers import DML_COLS, arrow_rows, deltalake_table, dml_data, spark_rows

from delta_pyds import DeltaTable, read_delta

COLS = DML_COLS


def make_dml_table(path, files=4, rows_per_file=50, dv=True, partition=False, config=None, writer="deltalake"):
    """``files`` appends of ``rows_per_file`` rows (ids 0, 1, ... in order); the first sets the
    table's configuration (deletion vectors when ``dv``, plus ``config``)."""
    conf = dict(config or {})
    if dv:
        conf["delta.enableDeletionVectors"] = "true"
    for i in range(files):
        if writer == "pydelta":  # features deltalake cannot write (row tracking), paths it refuses
            from delta_pyds.write.plan import write_arrow

            write_arrow(path, dml_data(i * rows_per_file, rows_per_file), options=conf if i == 0 else None)
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
