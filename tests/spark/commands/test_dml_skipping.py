"""File skipping of DELETE and UPDATE: the condition's conjuncts translated to skipping
predicates (only the exact ones), and the files a DML reads (DeltaTable.lastSkipping).
Runs on both DML engines."""

from __future__ import annotations

import json

from dml_engines import dml_engine  # noqa: F401  (autouse: native and python engines)
from dml_helpers import agree_with_deltalake, make_dml_table

from delta_pyds import DeltaTable

_make = make_dml_table
_agree = agree_with_deltalake


def test_delete_and_update_skip_files(spark, tmp_path):
    path = _make(str(tmp_path / "t"), files=5, rows_per_file=100, partition=True)
    t = DeltaTable.forPath(spark, path)
    t.delete("id >= 120 AND id < 130 AND id % 2 = 0 AND NOT (part = 5)")
    assert t.lastSkipping.files_kept == 3  # only the files of 100..199 (one per partition)
    expected = [i for i in range(500) if not (120 <= i < 130 and i % 2 == 0)]
    _agree(spark, path, expected)
    t.delete("part = 1 OR id IN (7, 8)")
    # partition 1 (5 files) + the first file of partitions 0 and 2 (stats 0..99 cannot exclude 7, 8)
    assert t.lastSkipping.files_kept == 5 + 2
    expected = [i for i in expected if not (i % 3 == 1 or i in (7, 8))]
    _agree(spark, path, expected)
    t.update("id < 3.5", {"name": "'low'"})  # 3.5 cannot be pruned exactly on a long: all files
    assert sum(r.name == "low" for r in t.toDF().collect()) == len([i for i in expected if i < 3.5])
    _agree(spark, path, expected)


def test_skipping_predicates_translation():
    from delta_pyds.expressions.to_predicates import skipping_predicates
    from delta_pyds.protocol.schema import parse_schema

    schema = parse_schema(
        json.dumps(
            {
                "type": "struct",
                "fields": [
                    {"name": "id", "type": "long", "nullable": True, "metadata": {}},
                    {"name": "s", "type": "string", "nullable": True, "metadata": {}},
                    {"name": "d", "type": "date", "nullable": True, "metadata": {}},
                ],
            }
        )
    )

    def tr(c):
        return [str(p) for p in skipping_predicates(c, schema)]

    assert tr("id % 10 = 3") == []
    assert tr("id < 5 AND id % 2 = 0") == ["id < 5"]
    assert tr("NOT (id = 1 AND id % 2 = 0)") == []  # NOT of a partial translation is unsafe
    assert tr("NOT (id = 1)") == ["NOT (id = 1)"]
    assert tr("3 < id") == ["id > 3"]
    assert tr("id < 0.5") == []  # not exact on a long column
    assert tr("id = 1 OR s LIKE 'a%'") == []
    assert tr("d = DATE'2024-01-01' AND s IS NULL") == ["(d = datetime.date(2024, 1, 1)) AND (s IS NULL)"]
    assert tr("d > '2024-01-01'") == []  # string vs date: left to Spark
