"""DeltaTable.forPath, isDeltaTable, history() and detail(): versions newest first, the commit's
operation and timestamp, and detail's delta-spark row (format, files, size, properties,
table features, protocol versions, location). Runs on both DML engines."""

from __future__ import annotations

import pytest
from dml_engines import dml_engine  # noqa: F401  (autouse: native and python engines)
from dml_helpers import make_dml_table

from delta_pyds import DeltaTable

_make = make_dml_table


@pytest.mark.engine_independent  # history and detail read the log: no DML row scan
def test_for_path_history_detail(spark, tmp_path):
    path = _make(str(tmp_path / "t"), files=2, rows_per_file=10)
    assert DeltaTable.isDeltaTable(spark, path)
    assert not DeltaTable.isDeltaTable(spark, str(tmp_path))
    with pytest.raises(Exception):
        DeltaTable.forPath(spark, str(tmp_path / "nothing"))
    t = DeltaTable.forPath(spark, path)
    assert t.toDF().count() == 20
    h = t.history().collect()
    assert [r.version for r in h] == [1, 0]
    assert t.history(1).count() == 1
    assert h[0].operation == "WRITE" and h[0].timestamp is not None
    d = t.detail().collect()[0]
    assert d.format == "delta" and d.numFiles == 2 and d.sizeInBytes > 0
    assert d.properties["delta.enableDeletionVectors"] == "true"
    assert "deletionVectors" in d.tableFeatures
    assert d.minReaderVersion == 3 and d.minWriterVersion == 7
    assert d.location.endswith("t")
