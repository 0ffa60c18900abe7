"""DML on tables whose column names SQL text must quote: spaces, dots, backquotes, a reserved
word, non-ASCII letters, a name equal to another column's name in another case of the source
(the projections of DELETE, UPDATE and MERGE name columns as SQL text,
:mod:`delta_pyds.spark.session.projection`). Each statement's rows are checked against a plain Python
computation and read back the same by the native path, the data source and deltalake; on
copy-on-write tables, with deletion vectors and the change data feed, and with column mapping;
each on both DML engines."""

from __future__ import annotations

import pyarrow as pa
import pytest
from dml_engines import dml_engine  # noqa: F401  (autouse: native and python engines)
from helpers import deltalake_table

from delta_pyds import DeltaTable
from delta_pyds.write.plan import commit_arrow

# a space is stored only with column mapping (delta-spark's rule): the other tables get a dash
NAMES = ["id", "my-col", "a.b", "x`y", "select", "ünï"]
FEATURES = {
    "plain": {},
    "dv_cdf": {"delta.enableDeletionVectors": "true", "delta.enableChangeDataFeed": "true"},
    "column_mapping": {"delta.columnMapping.mode": "name"},
}


def _names(feature: str) -> list[str]:
    return [n.replace("-", " ") for n in NAMES] if feature == "column_mapping" else NAMES


def _table(path: str, options: dict[str, str], names: list[str]) -> str:
    ids = list(range(6))
    data = {n: pa.array([i * 10 + k for i in ids], pa.int64()) for k, n in enumerate(names)}
    data["id"] = pa.array(ids, pa.int64())
    commit_arrow(path, pa.table(data), mode="overwrite", options={**options, "maxRecordsPerFile": "3"})
    return path


def _rows(spark, path: str, names: list[str]) -> list[tuple]:
    """The table's rows as the native path reads them, checked equal to the data source's
    read and to deltalake's."""
    ours = sorted(tuple(r[n] for n in names) for r in DeltaTable.forPath(spark, path).toDF().collect())
    source = sorted(tuple(r[n] for n in names) for r in spark.read.format("pydelta").load(path).collect())
    theirs = sorted(tuple(r[n] for n in names) for r in deltalake_table(path).to_pylist())
    assert ours == source == theirs
    return ours


@pytest.mark.parametrize("feature", list(FEATURES))
def test_delete_update_merge_with_names_sql_must_quote(spark, tmp_path, feature):
    names = _names(feature)
    mine = names[1]  # "my-col", or "my col" with column mapping
    path = _table(str(tmp_path / "t"), FEATURES[feature], names)
    expected = {i: [i] + [i * 10 + k for k in range(1, len(names))] for i in range(6)}
    dt = DeltaTable.forPath(spark, path)

    def rows() -> list[tuple]:
        return _rows(spark, path, names)

    dt.delete("`x``y` = 33")  # row 3
    del expected[3]
    assert rows() == sorted(tuple(v) for v in expected.values())

    dt.update("`a.b` > 40", {"`ünï`": "`ünï` + `select`", f"`{mine}`": "-1"})  # rows 4 and 5
    for i in (4, 5):
        expected[i][5] += expected[i][4]
        expected[i][1] = -1
    assert rows() == sorted(tuple(v) for v in expected.values())

    # the source spells one column in another case: updateAll and insertAll match it by name
    src_names = ["ID", *names[1:]]
    src = spark.createDataFrame([(1, 7, 8, 9, 10, 11), (9, 1, 2, 3, 4, 5)], src_names)
    merged = (
        dt.alias("t")
        .merge(src.alias("s"), "t.id = s.ID")
        .whenMatchedUpdateAll()
        .whenNotMatchedInsertAll()
        .execute()
        .collect()[0]
    )
    assert (merged.num_updated_rows, merged.num_inserted_rows) == (1, 1)
    expected[1] = [1, 7, 8, 9, 10, 11]
    expected[9] = [9, 1, 2, 3, 4, 5]
    assert rows() == sorted(tuple(v) for v in expected.values())

    # update clauses that set a quoted column from the source and delete by a quoted column
    src2 = spark.createDataFrame([(0, 100), (2, 200), (9, 900)], ["id", mine])
    (
        dt.alias("t")
        .merge(src2.alias("s"), "t.id = s.id")
        .whenMatchedDelete("t.`select` = 24")
        .whenMatchedUpdate(set={"`x``y`": f"s.`{mine}`", "t.`a.b`": "t.`a.b` + 1"})
        .execute()
    )
    del expected[2]
    expected[0][3], expected[0][2] = 100, expected[0][2] + 1
    expected[9][3], expected[9][2] = 900, expected[9][2] + 1
    assert rows() == sorted(tuple(v) for v in expected.values())
