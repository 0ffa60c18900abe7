"""MERGE's two phases (:mod:`delta_pyds.spark.commands.merge.classic`): every clause kind at once on
tables with the change data feed, row tracking, column mapping, deletion vectors and
partitions gives the rows a plain computation gives (read back the same by the data
source, ``read_delta`` and deltalake, and as deltalake's own merge on a plain table); the
written rows, the change data and the metrics come from one evaluation of the source (it
is pinned); a source row matching a row no clause changes is not inserted; copy-on-write
merges report the rows they copied; a merge runs a bounded number of Spark jobs."""

from __future__ import annotations

import logging

import pyarrow as pa
import pytest
from deltalake import DeltaTable as DLTable
from dml_engines import dml_engine  # noqa: F401  (autouse: native and python engines)
from helpers import DML_COLS, deltalake_table, dml_data, spark_rows

from delta_pyds import DeltaTable, read_delta
from delta_pyds.errors import DeltaError
from delta_pyds.spark.commands.merge.probe import LITERAL_IDS
from delta_pyds.spark.session.conf import PIN_CHANGED_CONF, PIN_TARGET_CONF
from delta_pyds.table.snapshot import Snapshot
from delta_pyds.write.plan import commit_arrow

COLS = DML_COLS
SOURCE_IDS = [3, 7, 8, 55, 120, 121, 199, 300, 301, 302]
FEATURES = {
    "plain": {},
    "partitioned": {"partitionBy": "part"},
    "cdf": {"delta.enableChangeDataFeed": "true"},
    "row_tracking": {"delta.enableRowTracking": "true", "delta.enableChangeDataFeed": "true"},
    "column_mapping": {"delta.columnMapping.mode": "name", "partitionBy": "part"},
    "dv": {"delta.enableDeletionVectors": "true", "delta.enableChangeDataFeed": "true"},
    # deletion vectors with every feature phase 1's pinned rows carry to the write
    "dv_tracked_mapped": {
        "delta.enableDeletionVectors": "true",
        "delta.enableChangeDataFeed": "true",
        "delta.enableRowTracking": "true",
        "delta.columnMapping.mode": "name",
        "partitionBy": "part",
    },
}


def _make(path: str, options: dict) -> str:
    for i in range(4):  # 4 files of 50 rows: ids 0..199
        commit_arrow(path, dml_data(i * 50, 50), options=options)
    return path


def _source_rows():
    return [(i, i % 3, f"s{i}", -float(i)) for i in SOURCE_IDS]


def _expected():
    """The merge below, computed in Python."""
    target = {r[0]: r for r in dml_data(0, 200).to_pylist() for r in [tuple(r[c] for c in COLS)]}
    out, changes = {}, []
    source = {r[0]: r for r in _source_rows()}
    for i, row in target.items():
        if i in source:
            if i % 2 == 1:
                changes.append((i, "delete"))
                continue
            out[i] = (i, row[1], source[i][2], row[3] + 100)
            changes += [(i, "update_preimage"), (i, "update_postimage")]
        elif i < 5:
            out[i] = (i, row[1], "nm", row[3])
            changes += [(i, "update_preimage"), (i, "update_postimage")]
        elif i >= 190:
            changes.append((i, "delete"))
        else:
            out[i] = row
    for i, row in source.items():
        if i not in target and i < 302:
            out[i] = row
            changes.append((i, "insert"))
    return sorted(out.values()), sorted(changes)


def _merge(spark, path):
    src = spark.createDataFrame(_source_rows(), "id long, part long, name string, value double")
    (
        DeltaTable.forPath(spark, path)
        .alias("t")
        .merge(src.alias("s"), "t.id = s.id")
        .whenMatchedDelete("s.id % 2 = 1")
        .whenMatchedUpdate(set={"name": "s.name", "value": "t.value + 100"})
        .whenNotMatchedInsert("s.id < 302", values={c: f"s.{c}" for c in COLS})
        .whenNotMatchedBySourceUpdate("t.id < 5", set={"name": "'nm'"})
        .whenNotMatchedBySourceDelete("t.id >= 190")
        .execute()
    )


PINNED = "phase 1 pins every candidate row"
CARRIED = "phase 1 pins the changed rows' written values"
RESCANNED = "phase 2 reads the changed files again"


@pytest.fixture
def phase_2(request, spark, caplog):
    """How phase 2 gets the touched files' rows: ``pinned`` by phase 1 (copy-on-write: every
    candidate row, the default for targets up to spark.pydelta.merge.pinTarget.maxBytes, as
    these small tables are; deletion vectors: the changed rows with their written values, up
    to spark.pydelta.merge.pinChangedRows.maxBytes of candidate files) or ``scanned`` again and
    joined with the source (larger targets: both caps set to 0); checks the merge took that
    path (its log line)."""
    if request.param == "scanned":
        spark.conf.set(PIN_TARGET_CONF, "0")
        spark.conf.set(PIN_CHANGED_CONF, "0")
    caplog.set_level(logging.INFO, logger="delta_pyds.spark.commands.merge")
    yield request.param
    spark.conf.unset(PIN_TARGET_CONF)
    spark.conf.unset(PIN_CHANGED_CONF)
    params = request.node.callspec.params
    said = "\n".join(r.getMessage() for r in caplog.get_records("call"))
    if params.get("dv") is True or "dv" in str(params.get("feature", "")):  # DVs never pin the whole target
        assert PINNED not in said, said
        assert (CARRIED in said, RESCANNED in said) == ((True, False) if request.param == "pinned" else (False, True))
    else:
        assert (PINNED in said) == (request.param == "pinned"), said
        assert CARRIED not in said and RESCANNED not in said, said


EVERY_SHAPE = [(f, p) for f in FEATURES for p in ("pinned", "scanned")]


@pytest.mark.parametrize(("feature", "phase_2"), EVERY_SHAPE, indirect=["phase_2"])
def test_merge_of_every_clause_kind_equals_a_plain_computation(spark, tmp_path, feature, phase_2):
    path = _make(str(tmp_path / "t"), FEATURES[feature])
    _merge(spark, path)
    rows, changes = _expected()
    ours = spark_rows(spark.read.format("pydelta").load(path).select(*COLS))
    assert ours == spark_rows(read_delta(spark, path).select(*COLS))
    assert sorted(tuple(r) for r in ours) == rows
    theirs = sorted(tuple(r[c] for c in COLS) for r in deltalake_table(path).select(COLS).to_pylist())
    assert theirs == rows
    m = DeltaTable.forPath(spark, path).history(1).collect()[0].operationMetrics
    assert (m["numTargetRowsMatchedDeleted"], m["numTargetRowsMatchedUpdated"]) == ("5", "2")
    assert (m["numTargetRowsNotMatchedBySourceUpdated"], m["numTargetRowsNotMatchedBySourceDeleted"]) == ("4", "9")
    assert (m["numTargetRowsInserted"], m["numTargetRowsUpdated"], m["numTargetRowsDeleted"]) == ("2", "6", "14")
    if "delta.enableChangeDataFeed" in FEATURES[feature]:
        v = Snapshot.load(path).version
        feed = (
            spark.read.format("pydelta")
            .option("readChangeFeed", "true")
            .option("startingVersion", v)
            .load(path)
            .collect()
        )
        assert sorted((r.id, r._change_type) for r in feed) == changes
    if feature == "plain":  # deltalake's own merge of the same clauses agrees
        other = _make(str(tmp_path / "dl2"), {})
        (
            DLTable(other)
            .merge(pa.Table.from_pylist([dict(zip(COLS, r)) for r in _source_rows()]), "t.id = s.id", "s", "t")
            .when_matched_delete("s.id % 2 = 1")
            .when_matched_update({"name": "s.name", "value": "t.value + 100"})
            .when_not_matched_insert({c: f"s.{c}" for c in COLS}, "s.id < 302")
            .when_not_matched_by_source_update({"name": "'nm'"}, "t.id < 5")
            .when_not_matched_by_source_delete("t.id >= 190")
            .execute()
        )
        assert sorted(tuple(r[c] for c in COLS) for r in deltalake_table(other).select(COLS).to_pylist()) == rows


@pytest.mark.parametrize("dv", [False, True])
def test_written_rows_change_data_and_metrics_come_from_one_evaluation_of_the_source(spark, tmp_path, dv):
    """A non-deterministic source (a fresh random value from the OS each time it is computed: a
    forked Python worker would repeat the `random` module's sequence): the
    table's updated rows, the change feed's post-images and the inserted count agree, as
    they come from the one pinned join."""
    from pyspark.sql import functions as F

    opts = {"delta.enableChangeDataFeed": "true"} | ({"delta.enableDeletionVectors": "true"} if dv else {})
    path = _make(str(tmp_path / "t"), opts)
    fresh = F.udf(lambda: __import__("random").SystemRandom().random(), "double").asNondeterministic()
    src = spark.range(150, 250).selectExpr("id", "id % 3 AS part", "'x' AS name").withColumn("value", fresh())
    (
        DeltaTable.forPath(spark, path)
        .alias("t")
        .merge(src.alias("s"), "t.id = s.id")
        .whenMatchedUpdateAll()
        .whenNotMatchedInsert("s.value < 0.5", values={c: f"s.{c}" for c in COLS})
        .execute()
    )
    v = Snapshot.load(path).version
    table = {r.id: r.value for r in read_delta(spark, path).where("id >= 150").collect()}
    feed = spark.read.format("pydelta").option("readChangeFeed", "true").option("startingVersion", v).load(path)
    post = {r.id: r.value for r in feed.where("_change_type IN ('update_postimage', 'insert')").collect()}
    assert post == table
    m = DeltaTable.forPath(spark, path).history(1).collect()[0].operationMetrics
    assert int(m["numTargetRowsInserted"]) == len([i for i in table if i >= 200])
    assert m["numTargetRowsUpdated"] == "50"


# Spark jobs of this test's upsert (10 source keys, all 4 files touched), measured on both
# engines: 12 (native) and 14 (python) with phase 1's two-level groupBy and the source key
# pruning's aggregate + distinct jobs; 6 and 8 with both as per-task reductions (one job
# each, no shuffle); still 6 and 8 without the source-key job (a 4-file table under
# spark.pydelta.merge.sourceKeyPruning.minTargetBytes: phase 1 counts the source), as AQE
# then fills the pinned source's cache in a JVM-only job of its own (a table cache query
# stage) in place of the key job's Python tasks. AQE runs each shuffle and broadcast as a
# job of its own; the bound guards against regressions
MAX_JOBS = {"native": 6, "python": 8}


def test_upsert_runs_no_more_spark_jobs_than_measured(spark, tmp_path, dml_engine):  # noqa: F811
    path = _make(str(tmp_path / "t"), {})
    src = spark.createDataFrame(_source_rows(), "id long, part long, name string, value double")
    merge = (
        DeltaTable.forPath(spark, path)
        .alias("t")
        .merge(src.alias("s"), "t.id = s.id")
        .whenMatchedUpdateAll()
        .whenNotMatchedInsertAll()
    )
    sc, group = spark.sparkContext, f"pydelta-merge-jobs-{dml_engine}"
    sc.setJobGroup(group, "merge job count")
    try:
        merge.execute()
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)
    jobs = len(sc.statusTracker().getJobIdsForGroup(group))
    assert jobs <= MAX_JOBS[dml_engine], f"{dml_engine}: {jobs} Spark jobs"
    assert DeltaTable.forPath(spark, path).toDF().count() == 200 + 3


@pytest.mark.parametrize("dv", [False, True])
def test_copy_on_write_merge_reports_the_rows_it_copied(spark, tmp_path, dv):
    """delta-spark's ``numTargetRowsCopied``: the unchanged rows of the rewritten files (4 files
    of 50 rows, all touched by the 7 matched keys: 200 - 7 updated); 0 with deletion vectors."""
    path = _make(str(tmp_path / "t"), {"delta.enableDeletionVectors": "true"} if dv else {})
    src = spark.createDataFrame(_source_rows(), "id long, part long, name string, value double")
    (
        DeltaTable.forPath(spark, path)
        .alias("t")
        .merge(src.alias("s"), "t.id = s.id")
        .whenMatchedUpdateAll()
        .whenNotMatchedInsertAll()
        .execute()
    )
    m = DeltaTable.forPath(spark, path).history(1).collect()[0].operationMetrics
    assert (m["numTargetRowsUpdated"], m["numTargetRowsInserted"]) == ("7", "3")
    assert m["numTargetRowsCopied"] == ("0" if dv else "193")
    assert read_delta(spark, path).count() == 203


@pytest.mark.parametrize(
    ("dv", "phase_2"),
    [(False, "pinned"), (False, "scanned"), (True, "pinned"), (True, "scanned")],
    indirect=["phase_2"],
)
def test_a_source_row_matching_a_row_no_clause_changes_is_neither_inserted_nor_rewritten(spark, tmp_path, dv, phase_2):
    """Phase 2 reads only the files a clause changes; a source row whose match sits in
    another file (the clause's condition is false there) must still count as matched: not
    inserted, and its file not rewritten."""
    path = _make(str(tmp_path / "t"), {"delta.enableDeletionVectors": "true"} if dv else {})
    src = spark.createDataFrame(
        [(3, 0, "x", 0.0), (55, 0, "y", 0.0), (300, 0, "z", 0.0)], "id long, part long, name string, value double"
    )
    (
        DeltaTable.forPath(spark, path)
        .alias("t")
        .merge(src.alias("s"), "t.id = s.id")
        .whenMatchedUpdate("t.id >= 50", set={"name": "s.name"})
        .whenNotMatchedInsertAll()
        .execute()
    )
    rows = {r.id: r.name for r in read_delta(spark, path).collect()}
    assert len(rows) == 201 and rows[55] == "y" and rows[3] != "x" and rows[300] == "z"
    assert rows == {r.id: r.name for r in spark.read.format("pydelta").load(path).collect()}
    m = DeltaTable.forPath(spark, path).history(1).collect()[0].operationMetrics
    assert (m["numTargetRowsUpdated"], m["numTargetRowsInserted"]) == ("1", "1")
    assert m["numTargetDeletionVectorsAdded" if dv else "numTargetFilesRemoved"] == "1"


def _split_duplicates(spark):
    """A source of 40,000 rows in 4 partitions whose key 7 is in the first and the last
    partition (every other key matches nothing): the target (200 rows) is the join's small
    side, so the two matches of target row 7 come out of different tasks."""
    return spark.range(0, 40_000, numPartitions=4).selectExpr(
        "CASE WHEN id IN (0, 39999) THEN 7L ELSE id + 1000 END AS id",
        "id % 3 AS part",
        "'s' AS name",
        "0.0D AS value",
    )


def test_a_target_row_matched_in_different_tasks_is_refused(spark, tmp_path):
    """Phase 1 reduces its rows per task: the duplicate-match check must still see two
    source rows matching one target row when their join rows are in different tasks."""
    path = _make(str(tmp_path / "t"), {})
    before = Snapshot.load(path).version
    merge = (
        DeltaTable.forPath(spark, path)
        .alias("t")
        .merge(_split_duplicates(spark).alias("s"), "t.id = s.id")
        .whenMatchedUpdate(set={"name": "s.name"})
    )
    with pytest.raises(DeltaError, match="MULTIPLE_SOURCE_ROW_MATCHING_TARGET_ROW"):
        merge.execute()
    assert Snapshot.load(path).version == before


def test_an_unconditional_delete_counts_a_row_matched_in_different_tasks_once(spark, tmp_path):
    path = _make(str(tmp_path / "t"), {})
    (
        DeltaTable.forPath(spark, path)
        .alias("t")
        .merge(_split_duplicates(spark).alias("s"), "t.id = s.id")
        .whenMatchedDelete()
        .execute()
    )
    m = DeltaTable.forPath(spark, path).history(1).collect()[0].operationMetrics
    assert m["numTargetRowsDeleted"] == "1"
    assert sorted(r.id for r in read_delta(spark, path).collect()) == [i for i in range(200) if i != 7]


def test_small_merge_reads_no_source_keys_and_still_counts_the_source(spark, tmp_path):
    """Below ``spark.pydelta.merge.sourceKeyPruning.minTargetBytes`` (and for one candidate
    file) the source's keys are not read (no pruning job): every candidate file is read by
    phase 1, which counts ``numSourceRows``; with the conf at 0 the same source prunes."""
    src = spark.createDataFrame([(3, 0, "a", 1.0), (7, 1, "b", 2.0), (500, 2, "c", 3.0)], COLS)

    def upsert(path: str) -> dict:
        t = DeltaTable.forPath(spark, path)
        t.alias("t").merge(src.alias("s"), "t.id = s.id").whenMatchedUpdateAll().whenNotMatchedInsertAll().execute()
        return t.history(1).collect()[0].operationMetrics

    m = upsert(_make(str(tmp_path / "small"), {}))
    assert (m["numTargetFilesBeforeSkipping"], m["numTargetFilesAfterSkipping"]) == ("4", "4")
    assert (m["numSourceRows"], m["numTargetRowsUpdated"], m["numTargetRowsInserted"]) == ("3", "2", "1")
    assert m["numTargetFilesRemoved"] == "1"
    from delta_pyds.errors import SettingValueError
    from delta_pyds.spark.session.conf import KEY_PRUNING_CONF

    spark.conf.set(KEY_PRUNING_CONF, "0")
    try:
        m = upsert(_make(str(tmp_path / "pruned"), {}))
        assert (m["numTargetFilesAfterSkipping"], m["numSourceRows"], m["numTargetRowsUpdated"]) == ("1", "3", "2")
        one = str(tmp_path / "one")
        commit_arrow(one, dml_data(0, 50))
        m = upsert(one)  # one file: nothing to prune
        assert (m["numTargetFilesAfterSkipping"], m["numSourceRows"], m["numTargetRowsInserted"]) == ("1", "3", "1")
        spark.conf.set(KEY_PRUNING_CONF, "lots")
        with pytest.raises(SettingValueError, match="minTargetBytes: expected a number of bytes, got 'lots'"):
            upsert(one)
    finally:
        spark.conf.unset(KEY_PRUNING_CONF)
    assert sorted(r.id for r in read_delta(spark, one).collect()) == [*range(50), 500]


@pytest.mark.parametrize("phase_2", ["pinned", "scanned"], indirect=True)
def test_inserts_exclude_matched_source_rows_beyond_the_literal_set(spark, tmp_path, phase_2):
    """More matched source rows than phase 1 hands over as literals: the inserted rows are the
    source anti-joined with the pinned matched rows instead, with the same result."""
    path = str(tmp_path / "t")
    for i in range(2):
        commit_arrow(path, dml_data(i * 3000, 3000))
    n = LITERAL_IDS + 1000  # matched source rows
    src = spark.range(6000 - n, 6000 + 500, numPartitions=3).selectExpr(
        "id", "id % 3 AS part", "'m' AS name", "-1.0D AS value"
    )
    (
        DeltaTable.forPath(spark, path)
        .alias("t")
        .merge(src.alias("s"), "t.id = s.id")
        .whenMatchedUpdate(set={"name": "s.name"})
        .whenNotMatchedInsertAll()
        .execute()
    )
    rows = {r.id: r.name for r in read_delta(spark, path).collect()}
    assert len(rows) == 6500 and sum(v == "m" for v in rows.values()) == n + 500
    assert rows == {r.id: r.name for r in spark.read.format("pydelta").load(path).collect()}
    m = DeltaTable.forPath(spark, path).history(1).collect()[0].operationMetrics
    assert (m["numTargetRowsUpdated"], m["numTargetRowsInserted"], m["numSourceRows"]) == (str(n), "500", str(n + 500))


def test_a_bad_pin_target_conf_is_refused_by_name_before_any_change(spark, tmp_path):
    from delta_pyds.errors import SettingValueError

    path = _make(str(tmp_path / "t"), {})
    before = Snapshot.load(path).version
    src = spark.createDataFrame(_source_rows(), "id long, part long, name string, value double")
    merge = DeltaTable.forPath(spark, path).alias("t").merge(src.alias("s"), "t.id = s.id").whenMatchedUpdateAll()
    spark.conf.set(PIN_TARGET_CONF, "16MB")
    try:
        with pytest.raises(SettingValueError, match="pinTarget.maxBytes: expected a number of bytes, got '16MB'"):
            merge.execute()
    finally:
        spark.conf.unset(PIN_TARGET_CONF)
    assert Snapshot.load(path).version == before
