"""Planning the Spark-native scan without Spark: file URIs as Spark spells them, partition
values from the log, deletion vector files, the physical read schema, pruning, and what
cannot be served natively."""

from __future__ import annotations

import json
import shutil

import pyarrow as pa
import pytest
from conftest import table_path

from delta_pyds.expressions import predicates as P
from delta_pyds.protocol.schema import SPARK_FIELD_ID, parse_schema
from delta_pyds.read.native_plan import (
    FILE_PATH,
    HAS_DV,
    hidden_by_listing,
    plan_native_scan,
    spark_file_uri,
    spark_path_encode,
    spark_path_encode_array,
    spark_root_uri,
    unreadable_type_changes,
)
from delta_pyds.table.snapshot import Snapshot


@pytest.mark.parametrize(
    "raw, spelled",
    [
        ("a b/f.parquet", "a%20b/f.parquet"),
        ("p=10%3A00/x.parquet", "p=10%253A00/x.parquet"),  # a '%' in the name is escaped once more
        ("ü=é/x.parquet", "ü=é/x.parquet"),  # non-ASCII letters and '=' are kept
        ("k=[1]{2}/q^|`#?.parquet", "k=%5B1%5D%7B2%7D/q%5E%7C%60%23%3F.parquet"),
        ("c=d:e/f,g;h@i&j+k$l!m~n*o'p(q)r.parquet", "c=d:e/f,g;h@i&j+k$l!m~n*o'p(q)r.parquet"),
        ('quote"back\\slash<>', "quote%22back%5Cslash%3C%3E"),
        ("tab\there\x7f", "tab%09here%7F"),
        ("nbsp\u00a0x\u2003y", "nbsp%C2%A0x%E2%80%83y"),
    ],
)
def test_paths_are_spelled_as_java_uri_does(raw, spelled):
    assert spark_path_encode(raw) == spelled
    assert spark_path_encode_array(pa.array([raw])).to_pylist() == [spelled]


def test_root_and_file_uris():
    assert spark_root_uri("/tmp/my table/") == "file:/tmp/my%20table"
    assert spark_root_uri("file:///tmp/x") == "file:/tmp/x"
    assert spark_root_uri("s3a://bucket/a b") == "s3a://bucket/a%20b"
    assert spark_file_uri("file:/t", "a//b c.parquet") == "file:/t/a/b%20c.parquet"


@pytest.mark.parametrize(
    "path, hidden",
    [
        ("part-0.parquet", False),
        ("_hidden/part-0.parquet", True),
        (".dot/part-0.parquet", True),
        ("_p=1/part-0.parquet", False),  # '_' names with '=' are partition directories
        ("a/_b/c.parquet", True),
        ("a/b_c/_d.parquet", True),
        ("x/y.parquet._COPYING_", True),
    ],
)
def test_what_spark_listing_hides(path, hidden, tmp_path):
    assert hidden_by_listing(path) is hidden


def test_partitioned_table_plan():
    snapshot = Snapshot.load(table_path("delta-rs/delta-0.8.0-partitioned"))
    plan = plan_native_scan(snapshot)
    assert plan.unsupported == []
    assert [c.name for c in plan.output] == ["value", "year", "month", "day"]
    assert [c.partition for c in plan.output] == [False, True, True, True]
    assert plan.read_schema.names == ["value"]
    assert plan.files.num_rows == 6
    uris = plan.files.column(FILE_PATH).to_pylist()
    assert all(u.startswith(spark_root_uri(snapshot.table_root) + "/year=") for u in uris)
    assert plan.files.column("year").type == pa.string()
    assert not any(plan.files.column(HAS_DV).to_pylist())
    assert plan.dv_files == []


def test_typed_partition_values_and_nulls():
    snapshot = Snapshot.load(table_path("delta-rs/delta-0.8.0-null-partition"))
    plan = plan_native_scan(snapshot)
    column = snapshot.partition_columns[0]
    values = plan.files.column(column).to_pylist()
    assert None in values


def test_predicates_prune_and_report():
    snapshot = Snapshot.load(table_path("delta-rs/delta-0.8.0-partitioned"))
    plan = plan_native_scan(snapshot, predicates=[P.EqualTo("year", "2021")])
    assert plan.report is not None and plan.report.files_kept == plan.files.num_rows < 6
    assert set(plan.files.column("year").to_pylist()) == {"2021"}


def test_columns_projection_and_errors():
    snapshot = Snapshot.load(table_path("delta-rs/delta-0.8.0-partitioned"))
    plan = plan_native_scan(snapshot, columns=["YEAR", "value"])
    assert [c.name for c in plan.output] == ["year", "value"]
    with pytest.raises(ValueError, match="nope"):
        plan_native_scan(snapshot, columns=["nope"])


def test_deletion_vector_files():
    snapshot = Snapshot.load(table_path("delta-rs/table-with-dv-small"))
    plan = plan_native_scan(snapshot)
    dvs = plan.dv_files
    assert len(dvs) == 1
    ((uri, log_path, descriptor),) = dvs
    assert uri.startswith("file:/") and uri.endswith(log_path) and descriptor["cardinality"] == 2


@pytest.mark.parametrize("mode", ["name", "id"])
def test_column_mapping_reads_physical_names(mode):
    snapshot = Snapshot.load(table_path(f"kernel-rs/partition_cm/{mode}"))
    plan = plan_native_scan(snapshot)
    data = [c for c in plan.output if not c.partition]
    assert data and all(c.physical != c.name for c in data)
    assert [f.name for f in plan.read_schema.fields] == [c.physical for c in data]
    ids = [f.metadata.get(SPARK_FIELD_ID) for f in plan.read_schema.fields]
    assert all(i is not None for i in ids) if mode == "id" else not any(ids)


def test_files_outside_root_or_hidden_are_not_native(tmp_path):
    path = shutil.copytree(table_path("delta-rs/simple_table"), tmp_path / "t")
    log_file = path / "_delta_log" / "00000000000000000000.json"
    lines = log_file.read_text().splitlines()
    for i, line in enumerate(lines):
        action = json.loads(line)
        if "add" in action:
            action["add"]["path"] = str(tmp_path / "elsewhere.parquet")
            lines[i] = json.dumps(action)
            break
    log_file.write_text("\n".join(lines) + "\n")
    plan = plan_native_scan(Snapshot.load(str(path), version=0))
    assert len(plan.unsupported) == 1 and "outside the table root" in plan.unsupported[0]


def test_type_changes_spark_cannot_widen():
    schema = parse_schema(
        json.dumps(
            {
                "type": "struct",
                "fields": [
                    {
                        "name": "a",
                        "type": "decimal(4,1)",
                        "nullable": True,
                        "metadata": {"delta.typeChanges": [{"fromType": "byte", "toType": "decimal(4,1)"}]},
                    },
                    {
                        "name": "b",
                        "type": "decimal(11,1)",
                        "nullable": True,
                        "metadata": {"delta.typeChanges": [{"fromType": "integer", "toType": "decimal(11,1)"}]},
                    },
                    {
                        "name": "c",
                        "type": "long",
                        "nullable": True,
                        "metadata": {"delta.typeChanges": [{"fromType": "integer", "toType": "long"}]},
                    },
                ],
            }
        )
    )
    assert unreadable_type_changes(schema) == ["a (byte -> decimal(4,1))"]
    snapshot = Snapshot.load(table_path("kernel-rs/type-widening"))
    assert any("byte_decimal" in r for r in plan_native_scan(snapshot).unsupported)
    assert plan_native_scan(snapshot, columns=["int_long"]).unsupported == []
