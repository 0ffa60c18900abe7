"""DML on Spark's own engine: which engine runs (native, or the Python-worker fallback where
Spark's reader cannot serve the table, with a logged reason) and the engine conf's check.
MERGE with deletion vectors and source-key pruning is in test_merge.py, UPDATE with deletion
vectors in test_update.py."""

from __future__ import annotations

import logging

import pytest
from dml_engines import dml_engine  # noqa: F401  (autouse: native and python engines)
from dml_helpers import make_dml_table

from delta_pyds import DeltaTable
from delta_pyds.spark.native.engine import NativeReadUnavailable
from delta_pyds.spark.session.conf import DML_ENGINE_CONF

_make = make_dml_table


def test_fallback_where_spark_cannot_read_and_native_refuses(spark, tmp_path, dml_engine, caplog):  # noqa: F811
    """A table path with glob characters (Spark would expand them): DML falls back to the
    Python workers with a logged reason; spark.pydelta.dml.engine=native refuses instead."""
    path = _make(str(tmp_path / "a[1]"), files=2, rows_per_file=10, dv=False, writer="pydelta")
    t = DeltaTable.forPath(spark, path)
    if dml_engine == "native":
        with pytest.raises(NativeReadUnavailable, match="glob characters"):
            t.delete("id = 3")
        spark.conf.set(DML_ENGINE_CONF, "auto")
    with caplog.at_level(logging.WARNING, logger="delta_pyds.spark.commands.rewriter"):
        t.delete("id = 3")
    if dml_engine == "native":
        assert any("rows through Python workers" in r.getMessage() for r in caplog.records)
    assert sorted(r.id for r in t.toDF().collect()) == [i for i in range(20) if i != 3]


def test_engine_conf_is_checked(spark, tmp_path):
    path = _make(str(tmp_path / "t"), files=1, rows_per_file=5, dv=False)
    spark.conf.set(DML_ENGINE_CONF, "fast")
    with pytest.raises(ValueError, match="spark.pydelta.dml.engine: expected one of auto, native, python"):
        DeltaTable.forPath(spark, path).delete("id = 1")
