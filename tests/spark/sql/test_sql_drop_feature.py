"""ALTER TABLE ... DROP FEATURE f [TRUNCATE HISTORY] through delta_pyds.sql, compared with
DeltaTable.dropFeatureSupport on a twin table."""

from __future__ import annotations

import pytest

import delta_pyds
from delta_pyds import DeltaTable, FeatureDropError, SqlParseError, UnsupportedFeatureError
from delta_pyds.table.snapshot import Snapshot
from tests.helpers import table_version


def test_drop_feature_matches_the_api(spark, tmp_path):
    s, a = str(tmp_path / "sql"), str(tmp_path / "api")
    for p in (s, a):
        delta_pyds.write_delta(spark.createDataFrame([(1, "x")], "id long, name string"), p)
        DeltaTable.forPath(spark, p).addFeatureSupport("changeDataFeed")
        DeltaTable.forPath(spark, p).addConstraint("pos", "id > 0")
    delta_pyds.sql(spark, f"ALTER TABLE delta.`{s}` DROP FEATURE changeDataFeed")
    DeltaTable.forPath(spark, a).dropFeatureSupport("changeDataFeed")
    ps, pa_ = Snapshot.load(s).protocol, Snapshot.load(a).protocol
    assert ps == pa_
    assert (ps.min_reader_version, ps.min_writer_version, ps.writer_features) == (1, 3, None)  # as delta-spark
    assert [r.operation for r in DeltaTable.forPath(spark, s).history(1).collect()] == ["DROP FEATURE"]
    # checkConstraints is refused while a constraint exists, by both, nothing committed
    before = table_version(s)
    with pytest.raises(FeatureDropError, match="pos"):
        delta_pyds.sql(spark, f"ALTER TABLE delta.`{s}` DROP FEATURE 'checkConstraints' TRUNCATE HISTORY")
    with pytest.raises(FeatureDropError, match="pos"):
        DeltaTable.forPath(spark, a).dropFeatureSupport("checkConstraints", truncateHistory=True)
    assert table_version(s) == before
    with pytest.raises(UnsupportedFeatureError, match="madeUp") as sql_err:
        delta_pyds.sql(spark, f"ALTER TABLE delta.`{s}` DROP FEATURE madeUp")
    with pytest.raises(UnsupportedFeatureError) as api_err:
        DeltaTable.forPath(spark, a).dropFeatureSupport("madeUp")
    assert str(sql_err.value) == str(api_err.value)
    with pytest.raises(SqlParseError, match="DROP FEATURE f \\[TRUNCATE HISTORY\\]"):
        delta_pyds.sql(spark, f"ALTER TABLE delta.`{s}` DROP FEATURE changeDataFeed TRUNCATE")
