"""Skipping through Spark on tables written by another writer (deltalake): point and
range filters read only the files that can match, and results never change.

Spark up to 4.3 reuses the scan planned during filter pushdown for later queries of the
same DataFrame that push no filter, so by default pydelta skips files only on Spark
versions that keep pushdown results per scan; ``filterPushdown=true`` forces it (safe
when each DataFrame serves one filtered query, as in these tests)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import delta_pyds
from delta_pyds.expressions.predicates import EqualTo, GreaterThanOrEqual, In, LessThan
from delta_pyds.spark.datasource.source import scan_scoped_pushdown

FILES = 20
ROWS = 100


@pytest.fixture(scope="module")
def id_table(tmp_path_factory):
    """20 files, each a disjoint id range, partitioned by p (id % 2 within file order)."""
    from deltalake import write_deltalake

    path = str(tmp_path_factory.mktemp("skip") / "t")
    for f in range(FILES):
        ids = np.arange(f * ROWS, (f + 1) * ROWS, dtype=np.int64)
        write_deltalake(
            path,
            pa.table({"id": ids, "s": [f"v{i}" for i in ids], "part": pa.array([f % 4] * ROWS, pa.int32())}),
            mode="append",
            partition_by=["part"],
        )
    return path


def skipping(spark, path):
    return spark.read.format("pydelta").option("filterPushdown", "true").load(path)


def test_point_lookup_reads_one_file(spark, id_table):
    df = skipping(spark, id_table).where("id = 1234")
    assert df.rdd.getNumPartitions() == 1
    assert [r.s for r in df.collect()] == ["v1234"]
    explained = delta_pyds.explain_scan(id_table, [EqualTo("id", 1234)])
    assert explained.report.files_kept == 1 and explained.report.pruned_by_stats == FILES - 1


def test_range_and_partition_filters(spark, id_table):
    df = skipping(spark, id_table).where("id >= 1500 AND part = 1")
    expected = sorted(i for i in range(FILES * ROWS) if i >= 1500 and (i // ROWS) % 4 == 1)
    assert sorted(r.id for r in df.collect()) == expected
    explained = delta_pyds.explain_scan(id_table, [GreaterThanOrEqual("id", 1500), EqualTo("part", 1)])
    assert explained.report.files_kept == 1  # only file 17 is in part 1 with ids >= 1500
    assert explained.report.pruned_by_partition == 15


def test_in_and_string_filters_give_same_rows_as_full_scan(spark, id_table):
    for cond in [
        "id IN (5, 999, 1999)",
        "s = 'v42'",
        "s LIKE 'v19%'",
        "id < 0",
        "NOT (id >= 100)",
        "id = 50 OR id = 1950",
        "s IS NULL",
        "part IS NOT NULL AND id <= 3",
    ]:
        with_skipping = sorted(tuple(r) for r in skipping(spark, id_table).where(cond).collect())
        spark.conf.set("spark.sql.python.filterPushdown.enabled", "false")
        try:
            without = sorted(tuple(r) for r in spark.read.format("pydelta").load(id_table).where(cond).collect())
        finally:
            spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
        assert with_skipping == without, cond
    assert delta_pyds.explain_scan(id_table, [In("id", [5, 999, 1999])]).report.files_kept == 3
    assert delta_pyds.explain_scan(id_table, [LessThan("id", 0)]).report.files_kept == 0


def test_forced_skipping_reads_every_row_when_spark_pushes_nothing(spark, id_table):
    """#48 item 6: the reader defines ``pushFilters`` only in the worker Spark pushes filters
    to (``datasource.source.pushing_filters``), so ``filterPushdown=true`` with Spark's
    pushdown conf off still reads (Spark fails every read from a reader that defines it then),
    and a query with no filter plans every file."""
    spark.conf.set("spark.sql.python.filterPushdown.enabled", "false")
    try:
        df = skipping(spark, id_table).where("id = 1234")
        assert [r.s for r in df.collect()] == ["v1234"]
        assert df.rdd.getNumPartitions() == 2  # nothing pushed: every file is planned
    finally:
        spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
    assert skipping(spark, id_table).count() == FILES * ROWS
    assert skipping(spark, id_table).where("id = 1234").rdd.getNumPartitions() == 1  # pushed: one file


def test_default_is_correct_when_a_dataframe_is_reused(spark, id_table):
    """The Spark 4.3 hazard: a filtered query, then an unfiltered one on the same DataFrame
    (or view) must still see every row."""
    df = spark.read.format("pydelta").load(id_table)
    assert df.where("id = 1234").count() == 1
    assert df.count() == FILES * ROWS
    spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW skip_view USING pydelta OPTIONS (path '{id_table}')")
    assert spark.sql("SELECT count(*) FROM skip_view WHERE id = 7").collect()[0][0] == 1
    assert spark.sql("SELECT count(*) FROM skip_view").collect()[0][0] == FILES * ROWS
    spark.catalog.dropTempView("skip_view")  # the session is shared with the other tests
    expected_tasks = 1 if scan_scoped_pushdown() else 2  # skipping by default only where safe
    assert spark.read.format("pydelta").load(id_table).where("id = 1234").rdd.getNumPartitions() == expected_tasks


def test_decimal_literals_beyond_28_digits_never_prune_the_matching_file(spark, tmp_path):
    """#24 item 2: PySpark hands pushed decimals over rounded to 28 significant digits;
    a 38-digit literal pruned the file holding it (0 rows). Both read paths and deltalake
    must agree on every comparison."""
    import decimal

    from helpers import deltalake_table

    from delta_pyds.write.plan import commit_arrow

    path = str(tmp_path / "dec")
    literals = ["1234567890123456789012345678.1234567891", "1234567890123456789012345678.1234567899"]
    for v in literals:  # one file each, so statistics could prune either
        commit_arrow(path, pa.table({"d": pa.array([decimal.Decimal(v)], pa.decimal128(38, 10))}))
    truth = [decimal.Decimal(v) for v in deltalake_table(path).column("d").to_pylist()]
    ops = {"=": "__eq__", "<=>": "__eq__", ">=": "__ge__", "<=": "__le__", ">": "__gt__", "<": "__lt__"}
    for lit in literals:
        for op, method in ops.items():
            expected = sum(1 for t in truth if getattr(t, method)(decimal.Decimal(lit)))
            cond = f"d {op} {lit}BD"
            assert skipping(spark, path).where(cond).count() == expected, cond
            assert delta_pyds.read_delta(spark, path, where=cond).count() == expected, cond
        cond = f"d IN ({lit}BD, 1BD)"
        assert skipping(spark, path).where(cond).count() == 1, cond
