"""A table partitioned by a boolean column when pruning leaves no file (issue #44 item 10):
DELETE, UPDATE and reads return nothing instead of failing (``pc.all`` of no values is null)."""

from __future__ import annotations

import pyarrow as pa
from helpers import spark_rows

import delta_pyds
from delta_pyds import DeltaTable, read_delta
from delta_pyds.write.plan import commit_arrow


def test_nothing_left_after_pruning_a_boolean_partitioned_table(spark, tmp_path):
    path = str(tmp_path / "t")
    commit_arrow(
        path, pa.table({"id": pa.array([1, 2], pa.int64()), "b": pa.array([True, False])}), options={"partitionBy": "b"}
    )
    assert spark_rows(read_delta(spark, path, where="b IS NULL")) == []
    assert spark_rows(read_delta(spark, path, where="id = 999")) == []
    assert delta_pyds.sql(spark, f"DELETE FROM delta.`{path}` WHERE id = 999").collect()[0].num_affected_rows == 0
    DeltaTable.forPath(spark, path).update("b IS NULL", {"id": "id + 1"})
    assert spark_rows(read_delta(spark, path).select("id", "b")) == [(1, True), (2, False)]
