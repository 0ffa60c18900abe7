"""The fixed cost of a small DML on Spark's own engine, counted in Spark jobs (the stable
number; times are not asserted): a copy-on-write DELETE or UPDATE of small candidate files
runs one job (the rewrite observes the matching files: tests/spark/commands/test_single_pass.py),
a deletion-vector DELETE one job, a deletion-vector UPDATE two. Also: the per-file hits
(counts and row positions) are exact when a file's rows are spread over several tasks."""

from __future__ import annotations

import pytest
from deltalake import write_deltalake
from helpers import DML_COLS, deltalake_table, dml_data, spark_jobs, spark_rows
from pyspark.sql import functions as F

from delta_pyds import DeltaTable, read_delta
from delta_pyds.protocol.deletion_vectors import deserialize_deleted_rows
from delta_pyds.spark.commands.native_rows import SCAN_FILE
from delta_pyds.spark.commands.rewriter import TableRewriter
from delta_pyds.spark.session.conf import DML_ENGINE_CONF
from delta_pyds.storage.store import Storage


def _make(path, dv: bool, files: int = 4, rows: int = 50) -> str:
    for i in range(files):
        write_deltalake(
            path,
            dml_data(i * rows, rows),
            mode="append",
            configuration={"delta.enableDeletionVectors": "true"} if dv and i == 0 else None,
        )
    return path


@pytest.fixture
def native(spark):
    spark.conf.set(DML_ENGINE_CONF, "native")
    try:
        yield spark
    finally:
        spark.conf.unset(DML_ENGINE_CONF)


@pytest.mark.parametrize(
    ("dv", "op", "most"),
    [
        (False, "delete", 1),  # the rewrite, observing the matching files
        (False, "update", 1),
        (True, "delete", 1),  # matching rows' positions, nothing written
        (True, "update", 2),  # matching rows' positions, write of the changed rows
    ],
)
def test_small_dml_runs_few_sparkspark_jobs(native, tmp_path, dv, op, most):
    spark = native
    path = _make(str(tmp_path / "t"), dv)
    t = DeltaTable.forPath(spark, path)
    if op == "delete":
        n = spark_jobs(spark, lambda: t.delete("id % 10 = 3"))
    else:
        n = spark_jobs(spark, lambda: t.update("id % 10 = 3", {"value": "value + 1000"}))
    assert n <= most, f"{op} (dvs={dv}) ran {n} Spark jobs, expected at most {most}"
    m = t.history(1).collect()[0].operationMetrics
    assert m["numDeletedRows" if op == "delete" else "numUpdatedRows"] == "20"
    ours = spark_rows(spark.read.format("pydelta").load(path).select(*DML_COLS))
    assert ours == spark_rows(read_delta(spark, path).select(*DML_COLS))
    expected = [
        (i, i % 3, f"n{i}", i * 0.5 + (1000 if i % 10 == 3 else 0))
        for i in range(200)
        if not (op == "delete" and i % 10 == 3)
    ]
    assert sorted(tuple(r) for r in ours) == expected
    if not dv:  # deltalake 1.6.6 reads no deletion vectors through to_pyarrow
        theirs = sorted(tuple(r[c] for c in DML_COLS) for r in deltalake_table(path).select(DML_COLS).to_pylist())
        assert theirs == expected


def test_file_hits_merge_a_file_spread_over_tasks(native, tmp_path):
    """Rows of one file in several tasks: counts add up and the positions are the union."""
    from delta_pyds.spark.commands.dv_marks import file_hits

    spark = native
    path = _make(str(tmp_path / "t"), dv=False, files=2, rows=100)
    rw = TableRewriter(spark, path, {}, Storage(path))
    snap = rw.dml_snapshot()
    scan = rw.scan(snap, snap.files).repartition(5)  # every file's rows over 5 tasks
    hits = file_hits(scan, F.col("id") % 7 == 0, positions=True)
    assert len(hits) == 2
    by_file = {}
    for name, (n, data) in hits.items():
        rows = sorted(int(x) for x in deserialize_deleted_rows(data))
        assert n == len(rows)
        by_file[name] = rows
    first = [r for r in by_file.values() if 0 in r]
    assert first and first[0] == [i for i in range(100) if i % 7 == 0]
    assert sum(n for n, _ in hits.values()) == len([i for i in range(200) if i % 7 == 0])
    counts = file_hits(scan, F.col("id") % 7 == 0, positions=False)
    assert {k: n for k, (n, _) in counts.items()} == {k: n for k, (n, _) in hits.items()}
    assert all(d is None for _, d in counts.values())
    assert set(scan.select(SCAN_FILE).distinct().toPandas()[SCAN_FILE]) == set(hits)


def test_many_candidate_files_take_per_file_values_from_a_join(native, tmp_path):
    """Beyond MAX_LITERAL_FILES candidate files the scan joins the per-file values (one
    broadcast job more); rows, partition values and metrics are the same."""
    from delta_pyds.spark.commands.native_rows import MAX_LITERAL_FILES

    spark = native
    path = str(tmp_path / "t")
    files = MAX_LITERAL_FILES + 4
    for i in range(files):
        write_deltalake(path, dml_data(i * 5, 5), mode="append", partition_by=["part"])
    t = DeltaTable.forPath(spark, path)
    n = spark_jobs(spark, lambda: t.update("id % 2 = 0", {"name": "concat('u', name)"}))
    assert n <= 4
    m = t.history(1).collect()[0].operationMetrics
    assert m["numUpdatedRows"] == str(len(range(0, files * 5, 2)))
    expected = sorted((i, i % 3, f"un{i}" if i % 2 == 0 else f"n{i}", i * 0.5) for i in range(files * 5))
    ours = spark_rows(spark.read.format("pydelta").load(path).select(*DML_COLS))
    assert sorted(tuple(r) for r in ours) == expected
    assert ours == spark_rows(read_delta(spark, path).select(*DML_COLS))
    theirs = sorted(tuple(r[c] for c in DML_COLS) for r in deltalake_table(path).select(DML_COLS).to_pylist())
    assert theirs == expected


@pytest.mark.parametrize("op", ["delete", "update"])
def test_many_unpartitioned_files_need_no_join(native, tmp_path, op):
    """An unpartitioned, untracked table of more than MAX_LITERAL_FILES files: each row's
    file is its ``_metadata.file_path`` past the root (a projection Spark prunes from the
    rewrite), not a broadcast join every rewritten row goes through: still one job to find
    the matching files and one to write."""
    from delta_pyds.spark.commands.native_rows import MAX_LITERAL_FILES

    spark = native
    path = str(tmp_path / "t")
    files = MAX_LITERAL_FILES + 8
    for i in range(files):
        write_deltalake(path, dml_data(i * 5, 5), mode="append")
    t = DeltaTable.forPath(spark, path)
    if op == "delete":
        n = spark_jobs(spark, lambda: t.delete("id % 2 = 0"))
    else:
        n = spark_jobs(spark, lambda: t.update("id % 2 = 0", {"name": "concat('u', name)"}))
    assert n <= 2, f"{op} ran {n} Spark jobs"
    m = t.history(1).collect()[0].operationMetrics
    assert m["numDeletedRows" if op == "delete" else "numUpdatedRows"] == str(len(range(0, files * 5, 2)))
    expected = sorted(
        (i, i % 3, f"un{i}" if i % 2 == 0 else f"n{i}", i * 0.5)
        for i in range(files * 5)
        if not (op == "delete" and i % 2 == 0)
    )
    ours = spark_rows(spark.read.format("pydelta").load(path).select(*DML_COLS))
    assert sorted(tuple(r) for r in ours) == expected
    assert ours == spark_rows(read_delta(spark, path).select(*DML_COLS))
    theirs = sorted(tuple(r[c] for c in DML_COLS) for r in deltalake_table(path).select(DML_COLS).to_pylist())
    assert theirs == expected


def test_counting_matches_reads_no_row_index(native, tmp_path, monkeypatch):
    """Finding the files holding matching rows (copy-on-write DELETE / UPDATE) reads no
    ``_metadata.row_index`` (it costs Spark's scan 20-40%); the positions pass does."""
    from delta_pyds.spark.commands import dv_marks

    spark = native
    path = _make(str(tmp_path / "t"), dv=False, files=2, rows=20)
    rw = TableRewriter(spark, path, {}, Storage(path))
    snap = rw.dml_snapshot()
    scan = rw.scan(snap, snap.files)
    cls = type(scan)
    real = cls.mapInArrow
    inputs = []

    def recording(self, *args, **kwargs):
        inputs.append(self)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(cls, "mapInArrow", recording)
    assert dv_marks.matching_files(scan, F.col("id") % 2 == 0)[1] == 20
    hits = dv_marks.file_hits(scan, F.col("id") % 2 == 0, positions=True)
    assert sum(n for n, _ in hits.values()) == 20
    counted, positions = (df._jdf.queryExecution().executedPlan().toString().lower() for df in inputs)
    assert "_tmp_metadata_row_index" not in counted  # what Spark's scan reads for _metadata.row_index
    assert "_tmp_metadata_row_index" in positions


def test_the_tables_storage_options_are_not_read_as_write_options(tmp_path):
    """DeltaTable.forPath's third argument holds storage options; a rewrite's files are
    planned through write.rewrite.plan_rewrite, so an option named like a write option
    (maxRecordsPerFile, compression) changes nothing (it did through option strings)."""
    path = _make(str(tmp_path / "t"), dv=False, files=1)
    options = {"maxRecordsPerFile": "1", "compression": "gzip"}
    rw = TableRewriter(None, path, options, Storage(path))
    spec = rw.write_spec(rw.dml_snapshot())
    assert spec.max_records_per_file is None and spec.compression == "snappy"


def test_a_small_cdc_merge_runs_few_sparkspark_jobs(native, tmp_path):
    """A CDC upsert (issue #38 item 4's shape): every source row matches, more of them than
    phase 2 takes as literals, and their keys fall in 2 of 4 files. Three jobs: the source's
    keys (pruning), the broadcast of the source, the single pass's write of the 2 files
    (delta_pyds.spark.commands.merge.single_pass; it observes what phase 1 finds, so no
    summary job), and no job for inserts (every source row matched). Four with the single
    pass off (phase 1's summary job)."""
    from delta_pyds.spark.commands.merge.probe import LITERAL_IDS
    from delta_pyds.spark.session.conf import KEY_PRUNING_CONF

    spark = native
    path = str(tmp_path / "t")
    for i in range(4):
        write_deltalake(path, dml_data(i * 5000, 5000), mode="append")
    n = LITERAL_IDS + 1000
    lo = 5000 - n // 2
    src = spark.range(lo, lo + n, numPartitions=2).selectExpr(
        "id",
        "id % 3 AS part",
        "'cdc' AS name",
        "-2.0D AS value",
        "'x' AS s",  # a string column named as the alias
    )
    t = DeltaTable.forPath(spark, path)
    spark.conf.set(KEY_PRUNING_CONF, "0")
    try:
        jobs = spark_jobs(
            spark,
            lambda: (
                t.alias("t")
                .merge(src.alias("s"), "t.id = s.id")
                .whenMatchedUpdateAll()
                .whenNotMatchedInsertAll()
                .execute()
            ),
        )
    finally:
        spark.conf.unset(KEY_PRUNING_CONF)
    m = t.history(1).collect()[0].operationMetrics
    counted = (m["numTargetFilesAfterSkipping"], m["numTargetRowsUpdated"], m["numTargetRowsInserted"])
    assert counted == ("2", str(n), "0")
    assert m["numSourceRows"] == str(n)
    assert jobs <= 3, f"the CDC merge ran {jobs} Spark jobs, expected at most 3"
    rows = {r.id: (r.name, r.value) for r in read_delta(spark, path).select("id", "name", "value").collect()}
    assert len(rows) == 20_000
    assert all(rows[i] == ("cdc", -2.0) for i in range(lo, lo + n))
    assert rows[lo - 1] == (f"n{lo - 1}", (lo - 1) * 0.5) and rows[lo + n] == (f"n{lo + n}", (lo + n) * 0.5)


def test_merge_pruning_reads_the_source_alias_unless_the_qualifier_names_a_column_with_fields():
    # ``s.id`` with a string column ``s`` in the source can only be alias s's id (a string has
    # no fields); with a struct column ``s`` it could be the struct's field: no key pruning
    from types import SimpleNamespace

    from pyspark.sql.types import LongType, StringType, StructField, StructType

    from delta_pyds.expressions.lexer import DEFAULT_DIALECT
    from delta_pyds.spark.commands.merge.pruning import split_condition

    target = StructType([StructField("id", LongType())])

    def source(s_type):
        return SimpleNamespace(schema=StructType([StructField("id", LongType()), StructField("s", s_type)]))

    keys = split_condition("t.id = s.id AND t.id > 3", "t", target, source(StringType()), DEFAULT_DIALECT)
    assert keys == (["`id` > 3"], [("id", "id")])
    nested = source(StructType([StructField("id", LongType())]))
    assert split_condition("t.id = s.id AND t.id > 3", "t", target, nested, DEFAULT_DIALECT) == (["`id` > 3"], [])
