"""Table features on the write path: clustering (domain metadata, stats, optimize),
column defaults (allowColumnDefaults), and collated strings (read as Spark collated
strings, never used for skipping, writes refused)."""

from __future__ import annotations

import json
import os

import pyarrow as pa
import pytest
from helpers import deltalake_table, log_actions

from delta_pyds import DeltaTable
from delta_pyds.errors import SchemaError, UnsupportedFeatureError
from delta_pyds.expressions.predicates import EqualTo
from delta_pyds.read.explain import explain_scan
from delta_pyds.table.snapshot import Snapshot
from delta_pyds.write.plan import commit_arrow


def _stats(path):
    return [json.loads(s) for s in Snapshot.load(path).files.column("stats").to_pylist()]


# ------------------------------------------------------------------ clustering
def test_clustered_table_created_by_spark_write_and_kept_on_append(spark, tmp_path):
    path = str(tmp_path / "t")
    df = spark.sql("select id, cast(id % 7 as string) k, named_struct('x', id * 1.5d) s, id % 3 z from range(40)")
    (
        df.write.format("pydelta")
        .mode("append")
        .option("clusterBy", "k, s.x")
        .option("delta.dataSkippingNumIndexedCols", "1")
        .save(path)
    )
    snap = Snapshot.load(path)
    assert {"clustering", "domainMetadata"} <= set(snap.protocol.writer_features)
    assert json.loads(snap.domain_metadata["delta.clustering"]) == {"clusteringColumns": [["k"], ["s", "x"]]}
    commit = log_actions(path, 0)[0]["commitInfo"]
    assert commit["operationParameters"]["clusterBy"] == json.dumps(["k", "s.x"])
    # clustering columns get stats beyond delta.dataSkippingNumIndexedCols=1 (id); z does not
    for st in _stats(path):
        assert set(st["minValues"]) == {"id", "k", "s"} and "x" in st["minValues"]["s"]
    # an append keeps the clustering and its stats; a different clusterBy is refused
    df.write.format("pydelta").mode("append").save(path)
    assert Snapshot.load(path).domain_metadata["delta.clustering"] == snap.domain_metadata["delta.clustering"]
    assert all("k" in st["minValues"] for st in _stats(path))
    with pytest.raises(Exception, match="clusterBy .z. does not match the table's clustering columns .k, s.x."):
        df.write.format("pydelta").mode("append").option("clusterBy", "z").save(path)
    assert DeltaTable.forPath(spark, path).detail().collect()[0].clusteringColumns == ["k", "s.x"]
    assert deltalake_table(path).num_rows == 80
    # OPTIMIZE on a clustered table compacts and sorts by the clustering columns; ZORDER is refused
    dt = DeltaTable.forPath(spark, path)
    with pytest.raises(ValueError, match="clustered by k, s.x"):
        dt.optimize().executeZOrderBy("id")
    before = sorted(tuple(r) for r in spark.read.format("pydelta").load(path).collect())
    dt.optimize().executeCompaction()
    assert Snapshot.load(path).num_files == 1
    rows = spark.read.format("pydelta").load(path).collect()
    assert sorted(tuple(r) for r in rows) == before
    assert [r.k for r in rows] == sorted(r.k for r in rows)  # clustered by k first (a string column)
    last = DeltaTable.forPath(spark, path).history(1).collect()[0]
    assert last.operation == "OPTIMIZE" and last.operationParameters["clusterBy"] == json.dumps(["k", "s.x"])


def test_clustering_columns_are_validated_and_replaced_only_by_overwrite_schema(tmp_path):
    path = str(tmp_path / "t")
    data = pa.table({"a": [1, 2], "b": ["x", "y"], "m": pa.array([[1], [2]])})
    for option, message in [
        ({"clusterBy": "q"}, "column 'q' is not in the table's schema"),
        ({"clusterBy": "m"}, "column m has type array<long>"),
        ({"clusterBy": "a,b,a"}, "column a is listed twice"),
        ({"clusterBy": "a", "partitionBy": "b"}, "either partitioned or clustered"),
    ]:
        with pytest.raises((SchemaError, ValueError), match=message):
            commit_arrow(path, data, options=option)
        assert not os.path.exists(os.path.join(path, "_delta_log"))
    commit_arrow(path, data, options={"clusterBy": "a"})
    # overwriteSchema keeps the clustering unless clusterBy says otherwise; an empty value removes it
    commit_arrow(path, data, mode="overwrite", options={"overwriteSchema": "true"})
    assert json.loads(Snapshot.load(path).domain_metadata["delta.clustering"])["clusteringColumns"] == [["a"]]
    with pytest.raises(SchemaError, match="clustered by a; the new schema lacks a"):
        commit_arrow(path, data.drop(["a"]), mode="overwrite", options={"overwriteSchema": "true"})
    commit_arrow(path, data.drop(["a"]), mode="overwrite", options={"overwriteSchema": "true", "clusterBy": ""})
    assert json.loads(Snapshot.load(path).domain_metadata["delta.clustering"])["clusteringColumns"] == []
    assert deltalake_table(path).num_rows == 2


def test_clustering_with_column_mapping_uses_physical_names(tmp_path):
    path = str(tmp_path / "t")
    commit_arrow(
        path, pa.table({"a b": [1, 2], "c": [3, 4]}), options={"clusterBy": "`a b`", "delta.columnMapping.mode": "name"}
    )
    snap = Snapshot.load(path)
    physical = snap.schema.field("a b").physical_name("name")
    assert physical != "a b"
    assert json.loads(snap.domain_metadata["delta.clustering"]) == {"clusteringColumns": [[physical]]}
    assert deltalake_table(path).num_rows == 2


def test_appending_to_a_clustered_table_another_writer_created(copy_table):
    path = copy_table("kernel-rs/crc-full")  # clustering + rowTracking + deletionVectors (Databricks)
    commit_arrow(path, pa.table({"id": [100, 101]}))
    snap = Snapshot.load(path)
    assert snap.version == 1 and snap.num_files == 1
    assert deltalake_table(path).column("id").to_pylist() == [100, 101]


# ------------------------------------------------------------- column defaults
def _table_with_defaults(path):
    os.makedirs(os.path.join(path, "_delta_log"))
    schema = {
        "type": "struct",
        "fields": [
            {"name": "id", "type": "long", "nullable": True, "metadata": {}},
            {
                "name": "n",
                "type": "integer",
                "nullable": True,
                "metadata": {"CURRENT_DEFAULT": "42", "EXISTS_DEFAULT": "42"},
            },
            {"name": "s", "type": "string", "nullable": True, "metadata": {"CURRENT_DEFAULT": "'a' || 'bc'"}},
            {"name": "d", "type": "date", "nullable": True, "metadata": {"CURRENT_DEFAULT": "DATE'2024-02-29'"}},
            {"name": "g", "type": "integer", "nullable": True, "metadata": {"delta.generationExpression": "n + 1"}},
            {"name": "u", "type": "string", "nullable": True, "metadata": {"CURRENT_DEFAULT": "uuid()"}},
        ],
    }
    with open(os.path.join(path, "_delta_log", f"{0:020d}.json"), "w") as f:
        f.write(
            json.dumps(
                {
                    "protocol": {
                        "minReaderVersion": 1,
                        "minWriterVersion": 7,
                        "writerFeatures": ["allowColumnDefaults", "generatedColumns", "appendOnly", "invariants"],
                    }
                }
            )
            + "\n"
        )
        f.write(
            json.dumps(
                {
                    "metaData": {
                        "id": "t",
                        "format": {"provider": "parquet", "options": {}},
                        "schemaString": json.dumps(schema),
                        "partitionColumns": [],
                        "configuration": {},
                        "createdTime": 1,
                    }
                }
            )
            + "\n"
        )


def test_missing_columns_get_their_defaults(spark, tmp_path):
    import datetime as dt

    path = str(tmp_path / "t")
    _table_with_defaults(path)
    # uuid() is beyond the evaluator: refused only when the write needs it
    with pytest.raises(UnsupportedFeatureError, match=r"default value of column u \(uuid\(\)\)"):
        commit_arrow(path, pa.table({"id": [0]}))
    spark.sql("select id, 'u' u from range(1, 3)").write.format("pydelta").mode("append").save(path)
    commit_arrow(path, pa.table({"id": [3], "n": pa.array([None], pa.int32()), "s": ["q"], "u": ["v"]}))
    rows = sorted(deltalake_table(path).to_pylist(), key=lambda r: r["id"])
    day = dt.date(2024, 2, 29)
    assert rows == [
        {"id": 1, "n": 42, "s": "abc", "d": day, "g": 43, "u": "u"},
        {"id": 2, "n": 42, "s": "abc", "d": day, "g": 43, "u": "u"},
        {"id": 3, "n": None, "s": "q", "d": day, "g": None, "u": "v"},
    ]  # explicit null stays


# ------------------------------------------------------------------ collations
def _collated_table(path):
    """Two files, 'A' and 'a', then the column becomes UTF8_LCASE-collated (as a
    collations-enabled writer would have declared it)."""
    commit_arrow(path, pa.table({"id": [1], "c": ["A"]}))
    commit_arrow(path, pa.table({"id": [2], "c": ["a"]}))
    schema = {
        "type": "struct",
        "fields": [
            {"name": "id", "type": "long", "nullable": True, "metadata": {}},
            {"name": "c", "type": "string", "nullable": True, "metadata": {"__COLLATIONS": {"c": "spark.UTF8_LCASE"}}},
        ],
    }
    meta = next(a["metaData"] for a in log_actions(path, 0) if "metaData" in a)
    meta["schemaString"] = json.dumps(schema)
    with open(os.path.join(path, "_delta_log", f"{2:020d}.json"), "w") as f:
        f.write(
            json.dumps(
                {
                    "protocol": {
                        "minReaderVersion": 3,
                        "minWriterVersion": 7,
                        "readerFeatures": ["collations-preview"],
                        "writerFeatures": ["collations-preview", "domainMetadata"],
                    }
                }
            )
            + "\n"
        )
        f.write(json.dumps({"metaData": meta}) + "\n")


def test_collated_strings_read_with_their_collation_and_never_prune(spark, tmp_path):
    path = str(tmp_path / "t")
    _collated_table(path)
    df = spark.read.format("pydelta").option("filterPushdown", "true").load(path)
    assert "UTF8_LCASE" in df.schema["c"].dataType.simpleString().upper()
    # case-insensitive equality finds both files' rows, though binary stats say 'A' != 'a'
    assert sorted(r.id for r in df.where("c = 'a'").collect()) == [1, 2]
    assert explain_scan(path, [EqualTo("c", "a")]).report.files_kept == 2
    assert explain_scan(path, [EqualTo("id", 1)]).report.files_kept == 1  # other columns still prune
    # appends keep the collation and delta-spark's earlier feature name (not doubled with `collations`)
    commit_arrow(path, pa.table({"id": [3], "c": ["b"]}))
    snap = Snapshot.load(path)
    assert snap.version == 3
    assert "collations-preview" in snap.protocol.writer_features
    assert "collations" not in snap.protocol.writer_features
    schema = json.loads(snap.metadata.schema_string)
    assert schema["fields"][1]["metadata"] == {"__COLLATIONS": {"c": "spark.UTF8_LCASE"}}


@pytest.mark.parametrize(
    "prop, feature",
    [("delta.enableIcebergCompatV2", "icebergCompatV2"), ("delta.enableIcebergCompatV1", "icebergCompatV1")],
)
def test_iceberg_compat_is_refused_by_name_before_writing(tmp_path, prop, feature):
    path = str(tmp_path / "t")
    with pytest.raises(UnsupportedFeatureError, match=f"does not support the table feature {feature}"):
        commit_arrow(path, pa.table({"a": [1]}), options={prop: "true"})
    assert not os.path.exists(path) or not os.listdir(path)
