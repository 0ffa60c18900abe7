"""The typed entry of rewrites into the write path (delta_pyds.write.rewrite.plan_rewrite):
the table's own rules (partitioning, compression property, statistics columns, void
columns dropped), the rewrite's parameters (target file size, schema evolution), and
the table's storage options never read as write options."""

from __future__ import annotations

import pyarrow as pa
import pytest

from delta_pyds.protocol.schema import PrimitiveType, StructField, StructType
from delta_pyds.storage.store import Storage
from delta_pyds.table.snapshot import Snapshot
from delta_pyds.write.plan import commit_arrow
from delta_pyds.write.rewrite import plan_rewrite


@pytest.fixture
def table(tmp_path) -> str:
    root = str(tmp_path / "t")
    data = pa.table({"id": pa.array([1, 2], pa.int64()), "p": pa.array(["a", "b"])})
    options = {"partitionBy": "p", "delta.parquet.compression.codec": "zstd", "delta.dataSkippingNumIndexedCols": "1"}
    commit_arrow(root, data, options=options)
    return root


def test_a_rewrite_writes_with_the_tables_rules(table):
    storage = Storage(table)
    plan = plan_rewrite(storage, Snapshot.load(storage).schema, target_file_size=1 << 20)
    assert plan.metadata is None and plan.protocol is None and plan.spec is not None
    spec = plan.spec
    assert spec.partition_columns == ("p",) and spec.compression == "zstd"
    assert [c.logical_path for c in spec.stats_columns] == [("id",)]
    assert spec.target_file_size == 1 << 20 and spec.max_records_per_file is None
    assert spec.storage is storage


@pytest.mark.parametrize("size", [None, 0])
def test_no_target_file_size_is_the_write_paths_default(table, size):
    storage = Storage(table)
    assert plan_rewrite(storage, Snapshot.load(storage).schema, target_file_size=size).spec.target_file_size is None


def test_void_columns_are_not_written(table):
    storage = Storage(table)
    schema = Snapshot.load(storage).schema
    with_void = StructType(schema.fields + (StructField("v", PrimitiveType("void")),))
    spec = plan_rewrite(storage, with_void).spec
    assert "v" not in spec.table_schema.names and "v" not in spec.input_columns


def test_evolving_the_schema_gives_the_new_metadata(table):
    storage = Storage(table)
    schema = Snapshot.load(storage).schema
    evolved = StructType(schema.fields + (StructField("extra", PrimitiveType("string")),))
    plan = plan_rewrite(storage, evolved, evolve_schema=True)
    assert plan.metadata is not None and '"extra"' in plan.metadata.schema_string
    assert "extra" in plan.spec.table_schema.names
