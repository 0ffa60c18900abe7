"""delta-spark's history and operation metrics: DESCRIBE HISTORY's columns in ``DeltaHistory``'s
order and types (``job``, ``notebook``, ``clusterId`` included), the metric names delta-spark's
``DeltaOperationMetrics`` records for DELETE, UPDATE, MERGE and OPTIMIZE (timings, bytes, file-size
percentiles), MERGE's clause predicates, and ``delta_pyds.sql`` DML results taken from the
statement's own commit, not from whatever commit is newest when it is read back."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest
from conftest import table_path

import delta_pyds
from delta_pyds import DeltaTable
from delta_pyds.spark.tables.delta_table import DeltaTable as _DeltaTableClass
from delta_pyds.table.snapshot import Snapshot
from delta_pyds.write.plan import commit_arrow

# delta-spark's DeltaOperationMetrics (spark/.../DeltaOperations.scala), the names each records
DELETE = {
    "numAddedFiles", "numRemovedFiles", "numDeletionVectorsAdded", "numDeletionVectorsRemoved",
    "numDeletionVectorsUpdated", "numAddedChangeFiles", "numDeletedRows", "numCopiedRows", "executionTimeMs",
    "scanTimeMs", "rewriteTimeMs", "numRemovedBytes", "numAddedBytes",
}  # fmt: skip
UPDATE = DELETE - {"numDeletedRows"} | {"numUpdatedRows"}
MERGE = {
    "numSourceRows", "numTargetRowsInserted", "numTargetRowsUpdated", "numTargetRowsMatchedUpdated",
    "numTargetRowsNotMatchedBySourceUpdated", "numTargetRowsDeleted", "numTargetRowsMatchedDeleted",
    "numTargetRowsNotMatchedBySourceDeleted", "numTargetRowsCopied", "numTargetBytesAdded", "numTargetBytesRemoved",
    "numOutputRows", "numTargetFilesAdded", "numTargetFilesRemoved", "numTargetChangeFilesAdded", "executionTimeMs",
    "materializeSourceTimeMs", "scanTimeMs", "rewriteTimeMs", "numTargetDeletionVectorsAdded",
    "numTargetDeletionVectorsRemoved", "numTargetDeletionVectorsUpdated",
}  # fmt: skip
OPTIMIZE = {
    "numAddedFiles", "numRemovedFiles", "numAddedBytes", "numRemovedBytes", "minFileSize", "p25FileSize",
    "p50FileSize", "p75FileSize", "maxFileSize", "numDeletionVectorsRemoved",
}  # fmt: skip
TIMES = ("executionTimeMs", "scanTimeMs", "rewriteTimeMs")


def _table(path, files=2, **options):
    for i in range(files):
        ids = list(range(i * 5, i * 5 + 5))
        commit_arrow(path, pa.table({"id": pa.array(ids, pa.int64()), "v": pa.array(ids, pa.int64())}), options=options)
    return path


def _metrics(spark, path):
    return DeltaTable.forPath(spark, path).history(1).collect()[0].operationMetrics


def test_history_has_delta_sparks_columns_in_its_order_and_types(spark):
    h = DeltaTable.forPath(spark, table_path("delta-rs/simple_table_with_cdc")).history()
    assert [(f.name, f.dataType.simpleString()) for f in h.schema.fields] == [
        ("version", "bigint"),
        ("timestamp", "timestamp"),
        ("userId", "string"),
        ("userName", "string"),
        ("operation", "string"),
        ("operationParameters", "map<string,string>"),
        (
            "job",
            "struct<jobId:string,jobName:string,jobRunId:string,runId:string,jobOwnerId:string,triggerType:string>",
        ),
        ("notebook", "struct<notebookId:string>"),
        ("clusterId", "string"),
        ("readVersion", "bigint"),
        ("isolationLevel", "string"),
        ("isBlindAppend", "boolean"),
        ("operationMetrics", "map<string,string>"),
        ("userMetadata", "string"),
        ("engineInfo", "string"),
    ]
    first = h.where("version = 0").collect()[0]
    assert first.notebook.notebookId == "3736423866542999" and first.clusterId == "1018-130235-jmbkv29y"
    assert first.job is None and first.userId == "722754018832045"


@pytest.mark.parametrize("dv", [False, True])
def test_delete_and_update_record_delta_sparks_metrics(spark, tmp_path, dv):
    path = _table(str(tmp_path / "t"), **({"delta.enableDeletionVectors": "true"} if dv else {}))
    dt = DeltaTable.forPath(spark, path)
    dt.delete("id = 1")
    m = _metrics(spark, path)
    assert DELETE <= set(m), DELETE - set(m)
    assert (m["numDeletedRows"], m["numCopiedRows"]) == ("1", "0" if dv else "4")
    assert all(int(m[t]) >= 0 for t in TIMES) and int(m["executionTimeMs"]) >= int(m["scanTimeMs"])
    assert int(m["numRemovedBytes"]) == (0 if dv else Snapshot.load(path, version=1).files.column("size")[0].as_py())
    dt.update("id = 7", {"v": "70"})
    m = _metrics(spark, path)
    assert UPDATE <= set(m), UPDATE - set(m)
    assert m["numUpdatedRows"] == "1" and int(m["numAddedBytes"]) > 0
    assert dt.lastCommit.version == Snapshot.load(path).version
    assert dt.lastCommit.operation_metrics() == dict(m)


def test_merge_records_delta_sparks_metrics_and_clause_predicates(spark, tmp_path):
    path = _table(str(tmp_path / "t"))
    src = spark.createDataFrame([(1, 100), (2, 200), (50, 500)], "id long, v long")
    target = DeltaTable.forPath(spark, path).alias("t")
    (
        target.merge(src.alias("s"), "t.id = s.id")
        .whenMatchedUpdate("s.v > 150", {"v": "s.v"})
        .whenMatchedDelete()
        .whenNotMatchedInsertAll()
        .whenNotMatchedBySourceUpdate("t.id > 8", {"v": "-1"})
        .execute()
    )
    h = DeltaTable.forPath(spark, path).history(1).collect()[0]
    m = h.operationMetrics
    # the MERGE's own commit is the DeltaTable's lastCommit, as a DELETE's or an UPDATE's is
    assert target.lastCommit.version == h.version == Snapshot.load(path).version
    assert target.lastCommit.operation_metrics() == dict(m)
    assert MERGE <= set(m), MERGE - set(m)
    # rows written: the touched file's 5 rows less the deleted one, plus the insert, plus the
    # other file's 5 rows (id 9 updated by source)
    assert (m["numTargetRowsUpdated"], m["numTargetRowsDeleted"], m["numTargetRowsInserted"]) == ("2", "1", "1")
    assert m["numOutputRows"] == "10" and m["numTargetRowsCopied"] == "7"
    assert int(m["numTargetBytesAdded"]) > 0 and int(m["numTargetBytesRemoved"]) > 0
    assert all(int(m[t]) >= 0 for t in (*TIMES, "materializeSourceTimeMs"))
    p = h.operationParameters
    assert json.loads(p["matchedPredicates"]) == [
        {"predicate": "s.v > 150", "actionType": "update"},
        {"actionType": "delete"},
    ]
    assert p["matchedPredicates"] == '[{"predicate":"s.v > 150","actionType":"update"},{"actionType":"delete"}]'
    assert json.loads(p["notMatchedPredicates"]) == [{"actionType": "insert"}]
    assert json.loads(p["notMatchedBySourcePredicates"]) == [{"predicate": "t.id > 8", "actionType": "update"}]


def test_optimize_records_the_added_files_size_percentiles(spark, tmp_path):
    path = _table(str(tmp_path / "t"), files=6)
    DeltaTable.forPath(spark, path).optimize().option("targetFileSize", 1).executeZOrderBy("v")
    m = _metrics(spark, path)
    assert OPTIMIZE <= set(m), OPTIMIZE - set(m)
    sizes = sorted(Snapshot.load(path).files.column("size").to_pylist())
    n = len(sizes)
    picks = [sizes[0], sizes[n // 4], sizes[n // 2], sizes[n * 3 // 4], sizes[-1]]
    names = ["minFileSize", "p25FileSize", "p50FileSize", "p75FileSize", "maxFileSize"]
    assert [int(m[k]) for k in names] == picks


def test_sql_dml_results_are_the_statements_own_commit(spark, tmp_path, monkeypatch):
    # a concurrent writer commits between the statement's commit and the result: the result must
    # still be the statement's (read back from the newest commit it was the append's metrics)
    path = _table(str(tmp_path / "t"))
    appended = []

    def concurrent_append():
        commit_arrow(path, pa.table({"id": pa.array([100, 101], pa.int64()), "v": pa.array([0, 0], pa.int64())}))
        appended.append(Snapshot.load(path).version)

    for name in ("delete", "update"):
        original = getattr(_DeltaTableClass, name)

        def then_append(self, *args, _original=original, **kwargs):
            _original(self, *args, **kwargs)
            concurrent_append()

        monkeypatch.setattr(_DeltaTableClass, name, then_append)
    import delta_pyds.spark.commands.auto_compaction as compaction  # INSERT's write

    original_write = compaction.write_and_compact

    def write_then_append(*args, **kwargs):
        result = original_write(*args, **kwargs)
        concurrent_append()
        return result

    monkeypatch.setattr(compaction, "write_and_compact", write_then_append)
    assert delta_pyds.sql(spark, f"DELETE FROM delta.`{path}` WHERE id < 3").collect()[0].num_affected_rows == 3
    assert delta_pyds.sql(spark, f"UPDATE delta.`{path}` SET v = 0 WHERE id = 7").collect()[0].num_affected_rows == 1
    row = delta_pyds.sql(spark, f"INSERT INTO delta.`{path}` VALUES (200, 1), (201, 1), (202, 1)").collect()[0]
    assert (row.num_affected_rows, row.num_inserted_rows) == (3, 3)
    assert len(appended) == 3 and appended[-1] == Snapshot.load(path).version
    # nothing matched: no commit, zeros (the concurrent append's rows are not reported)
    assert delta_pyds.sql(spark, f"DELETE FROM delta.`{path}` WHERE id = -5").collect()[0].num_affected_rows == 0
