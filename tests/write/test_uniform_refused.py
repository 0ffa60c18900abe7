"""UniForm (``delta.universalFormat.enabledFormats``) is refused by name on every path that
sets table properties: this package writes no Iceberg or Hudi metadata, and delta-spark
itself refuses UniForm Iceberg without IcebergCompat (which this package cannot write)."""

from __future__ import annotations

import os

import pyarrow as pa
import pytest

import delta_pyds
from delta_pyds import DeltaTable
from delta_pyds.errors import UnsupportedFeatureError
from delta_pyds.operations.create import TableDefinition, create_table
from delta_pyds.operations.properties import set_properties
from delta_pyds.protocol.schema import PrimitiveType, StructField
from delta_pyds.storage.store import Storage
from delta_pyds.table.snapshot import Snapshot
from delta_pyds.write.plan import commit_arrow

KEY = "delta.universalFormat.enabledFormats"
MESSAGE = r"DELTA_UNIVERSAL_FORMAT_VIOLATION.*Universal Format \(iceberg\)"


def _empty(path):
    return not os.path.exists(path) or not os.listdir(path)


@pytest.mark.parametrize("key", [KEY, KEY.lower(), "delta.UNIVERSALFORMAT.enabledformats"])
def test_core_write_refuses_uniform(tmp_path, key):
    path = str(tmp_path / "t")
    with pytest.raises(UnsupportedFeatureError, match=MESSAGE):
        commit_arrow(path, pa.table({"a": [1]}), options={key: "iceberg"})
    assert _empty(path)


def test_hudi_is_refused_too_and_an_empty_value_is_accepted(tmp_path):
    path = str(tmp_path / "t")
    with pytest.raises(UnsupportedFeatureError, match=r"Universal Format \(hudi\)"):
        commit_arrow(path, pa.table({"a": [1]}), options={KEY: "hudi"})
    assert _empty(path)
    commit_arrow(path, pa.table({"a": [1]}), options={KEY: ""})  # no format asked for: nothing to refuse
    assert Snapshot.load(path).version == 0


def test_create_and_set_properties_refuse_uniform(tmp_path):
    path = str(tmp_path / "t")
    definition = TableDefinition(columns=[StructField("a", PrimitiveType("long"))], properties={KEY: "iceberg,hudi"})
    with pytest.raises(UnsupportedFeatureError, match=MESSAGE):
        create_table(Storage(path), definition)
    assert _empty(path)
    commit_arrow(path, pa.table({"a": [1]}))
    with pytest.raises(UnsupportedFeatureError, match=MESSAGE):
        set_properties(Storage(path), {KEY: "iceberg"})
    with pytest.raises(UnsupportedFeatureError, match=MESSAGE):  # with IcebergCompat asked for as well
        set_properties(Storage(path), {KEY: "iceberg", "delta.enableIcebergCompatV2": "true"})
    snap = Snapshot.load(path)
    assert snap.version == 0 and KEY not in snap.configuration


def test_spark_paths_refuse_uniform(spark, tmp_path):
    from delta_pyds.spark.native.write import write_path

    path = str(tmp_path / "t")
    df = spark.range(2)
    with pytest.raises(Exception, match=MESSAGE):
        df.write.format("pydelta").option(KEY, "iceberg").mode("append").save(path)
    assert _empty(path)
    with pytest.raises(UnsupportedFeatureError, match=MESSAGE):
        write_path(df, path, **{KEY: "iceberg"})
    assert _empty(path)
    with pytest.raises(UnsupportedFeatureError, match=MESSAGE):
        DeltaTable.create(spark).location(path).addColumn("id", "long").property(KEY, "iceberg").execute()
    assert _empty(path)
    for statement in (
        f"CREATE TABLE delta.`{path}` (id LONG) USING delta TBLPROPERTIES ('{KEY}' = 'iceberg')",
        f"CREATE TABLE delta.`{path}` USING delta TBLPROPERTIES ('{KEY}' = 'iceberg') AS SELECT 1 AS id",
    ):
        with pytest.raises(UnsupportedFeatureError, match=MESSAGE):
            delta_pyds.sql(spark, statement)
        assert _empty(path)
    write_path(df, path)
    with pytest.raises(UnsupportedFeatureError, match=MESSAGE):
        delta_pyds.sql(spark, f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES ('{KEY}' = 'iceberg')")
    with pytest.raises(UnsupportedFeatureError, match=MESSAGE):
        DeltaTable.forPath(spark, path).setProperties({KEY: "iceberg"})
    with pytest.raises(UnsupportedFeatureError, match=MESSAGE):
        write_path(df, path, mode="overwrite", overwriteSchema="true", **{KEY: "iceberg"})
    snap = Snapshot.load(path)
    assert snap.version == 0 and KEY not in snap.configuration
