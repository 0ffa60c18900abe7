"""DELETE, UPDATE and MERGE over a table alias (issue #44 item 0): the alias is bound to the
target relation and Spark's analyzer resolves ``t.id`` with its own scoping, so a subquery's or a
lambda's ``t`` (or ``k``) is its own, never the table's. Spark's own evaluation of the same text
over the same rows (a temporary view of the table under the same alias) is the expected answer;
each case runs copy-on-write and with deletion vectors, on both DML engines, and the files the
condition prunes are checked to hold no matching row by the result itself."""

from __future__ import annotations

import pyarrow as pa
import pytest
from dml_engines import dml_engine  # noqa: F401  (runs each test on both DML engines)
from helpers import spark_rows
from pyspark.sql import functions as F

import delta_pyds
from delta_pyds import DeltaTable, read_delta
from delta_pyds.write.plan import commit_arrow

ELEMENT = pa.struct([("x", pa.int64())])
ROWS = {  # id: (x, grp, arr)
    1: (10, "a", [{"x": 1}]),
    2: (20, "a", [{"x": 6}]),
    3: (None, "b", [{"x": 7}, {"x": 2}]),
    4: (40, "b", []),
    5: (50, "c", None),
    6: (6, "c", [{"x": 3}]),
}
COLUMNS = "id, x, grp, arr"


def _table(path: str, dv: bool) -> str:
    ids = sorted(ROWS)
    data = pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "x": pa.array([ROWS[i][0] for i in ids], pa.int64()),
            "grp": pa.array([ROWS[i][1] for i in ids]),
            "arr": pa.array([ROWS[i][2] for i in ids], pa.list_(ELEMENT)),
        }
    )
    options = {"partitionBy": "grp"}  # one file per group: a wrong reading prunes a matching file
    if dv:
        options["delta.enableDeletionVectors"] = "true"
    commit_arrow(path, data, options=options)
    return path


@pytest.fixture
def ids_view(spark):
    """``ids``: the subqueries' relation; it has columns named like the target's (``id``, ``x``)."""
    spark.createDataFrame([(1, 10), (4, 100)], "id long, x long").createOrReplaceTempView("ids")
    yield "ids"
    spark.catalog.dropTempView("ids")


# (condition over the target aliased t, ids Spark deletes) -- the ids are asserted too, so a
# case cannot pass by Spark and this package agreeing on an error-free nothing
CONDITIONS = [
    ("EXISTS (SELECT 1 FROM ids k WHERE k.id = t.id)", {1, 4}),
    ("exists(t.arr, t -> t.x > 5)", {2, 3}),  # the lambda's t shadows the alias
    ("t.id IN (SELECT k.id FROM ids k WHERE k.x = t.x)", {1}),
    ("t.x >= (SELECT max(k.x) FROM ids k WHERE k.id = t.id)", {1}),
    ("x IN (SELECT t.x * 2 FROM ids t)", {2}),  # a subquery alias equal to the target's
    (
        "EXISTS (SELECT 1 FROM ids k WHERE k.id = t.id"
        " AND EXISTS (SELECT 1 FROM ids t WHERE t.id = k.id AND t.x = 100))",
        {4},
    ),
    ("size(filter(t.arr, x -> x.x > t.x / 10)) > 0", {2, 6}),  # the lambda's x shadows column x
    ("array_contains(transform(t.arr, t -> t.x + 1), 8)", {3}),
    ("aggregate(t.arr, 0L, (acc, t) -> acc + t.x) > 5", {2, 3}),
    ("t.id > 3 AND grp = 'b'", {4}),
    ("t.grp = 'c'", {5, 6}),
    ("t.x IS NULL OR t.id = 6", {3, 6}),
    ("t.id = 2 OR x > 45", {2, 5}),
    ("NOT (t.x > 15)", {1, 6}),  # NULL: kept
    ("T.ID = 2 AND `t`.`grp` = 'a'", {2}),
]


def _cases(dv: bool, update: bool, engine: str | None) -> list[tuple[int, tuple[str, set[int]]]]:
    """The conditions a run takes (kept lean: every one for a copy-on-write DELETE on Spark's
    engine, a spread of them for the other runs; every run evaluates the same Column on a scan
    aliased the same way)."""
    if engine == "python":
        return [(k, c) for k, c in enumerate(CONDITIONS) if k % 4 == (1 + dv + 2 * update) % 4]
    step = (3 if dv else 1) + (1 if update else 0)
    return [(k, c) for k, c in enumerate(CONDITIONS) if k % step == (1 if dv else 0)]


def _ids(rows) -> set[int]:
    return {r[0] for r in rows}


def _spark_view(spark, path: str) -> str:
    read_delta(spark, path).createOrReplaceTempView("tgt")
    return "tgt"


def _expected_survivors(spark, path: str, condition: str, alias: str = "t") -> list:
    view = _spark_view(spark, path)
    return spark_rows(spark.sql(f"SELECT {COLUMNS} FROM {view} AS {alias} WHERE NOT coalesce(({condition}), false)"))


def _rows(spark, path: str) -> list:
    return spark_rows(read_delta(spark, path).select(*COLUMNS.split(", ")))


@pytest.mark.parametrize("dv", [False, True], ids=["cow", "dv"])
def test_sql_delete_resolves_the_alias_as_spark(spark, tmp_path, ids_view, dv, dml_engine):  # noqa: F811
    for k, (condition, deleted) in _cases(dv, False, dml_engine):
        path = _table(str(tmp_path / f"d{k}"), dv)
        expected = _expected_survivors(spark, path, condition)
        assert _ids(expected) == set(ROWS) - deleted, condition  # Spark's own answer
        got = delta_pyds.sql(spark, f"DELETE FROM delta.`{path}` t WHERE {condition}").collect()
        assert _rows(spark, path) == expected, condition
        assert got[0].num_affected_rows == len(deleted), condition


@pytest.mark.parametrize("dv", [False, True], ids=["cow", "dv"])
def test_sql_update_resolves_the_alias_as_spark(spark, tmp_path, ids_view, dv, dml_engine):  # noqa: F811
    value = "t.x + aggregate(t.arr, 0L, (acc, t) -> acc + t.x) + 1000"  # a lambda's t in the value too
    for k, (condition, updated) in _cases(dv, True, dml_engine):
        path = _table(str(tmp_path / f"u{k}"), dv)
        view = _spark_view(spark, path)
        expected = spark_rows(
            spark.sql(
                f"SELECT t.id, CASE WHEN coalesce(({condition}), false) THEN {value} ELSE t.x END AS x, t.grp, t.arr"
                f" FROM {view} AS t"
            )
        )
        got = delta_pyds.sql(spark, f"UPDATE delta.`{path}` AS t SET t.x = {value} WHERE {condition}").collect()
        assert _rows(spark, path) == expected, condition
        assert got[0].num_affected_rows == len(updated), condition


def test_backquoted_alias_and_a_column_named_like_the_alias(spark, tmp_path, ids_view):
    path = _table(str(tmp_path / "q"), False)
    condition = "EXISTS (SELECT 1 FROM ids k WHERE k.id = `my t`.id) OR `my t`.`x` = 6"
    expected = _expected_survivors(spark, path, condition, alias="`my t`")
    assert _ids(expected) == {2, 3, 5}
    delta_pyds.sql(spark, f"DELETE FROM delta.`{path}` AS `my t` WHERE {condition}")
    assert _rows(spark, path) == expected
    # a struct column named t beside a column id: Spark reads t.id as the table's id
    # (qualifier first); the skipping reading is uncertain there and prunes nothing
    for k, condition in enumerate(("t.id = 1", "t.t.id = 1", "t.id = 4 OR t.t.id = 2")):
        p2 = str(tmp_path / f"c{k}")
        for part in ([(1, 3), (2, 1), (3, 2)], [(4, 1)]):  # two files
            ids = pa.array([r[0] for r in part], pa.int64())
            commit_arrow(p2, pa.table({"id": ids, "t": pa.array([{"id": r[1]} for r in part])}))
        read_delta(spark, p2).createOrReplaceTempView("tgt")
        want = spark_rows(spark.sql(f"SELECT id, t FROM tgt AS t WHERE NOT coalesce(({condition}), false)"))
        assert len(want) < 4, condition
        delta_pyds.sql(spark, f"DELETE FROM delta.`{p2}` t WHERE {condition}")
        assert spark_rows(read_delta(spark, p2).select("id", "t")) == want, condition


def test_merge_conditions_keep_spark_scoping(spark, tmp_path, ids_view):
    """MERGE keeps its aliases: a lambda whose parameter is named like the target or the source
    alias, and a subquery alias equal to the target's, in the ON and WHEN conditions and values."""
    spark.createDataFrame([(1, 5), (2, 7), (3, 9), (9, 1)], "id long, y long").createOrReplaceTempView("src")
    cases = [
        ("t.id = s.id AND exists(t.arr, s -> s.x > 5)", "exists(t.arr, t -> t.x < s.y)"),
        ("t.id = s.id", "aggregate(t.arr, 0L, (acc, s) -> acc + s.x) >= s.y - 3"),
        ("t.id = s.id", "s.y > (SELECT max(t.x) FROM ids t WHERE t.id = 1) - 4"),
    ]
    try:
        for k, (on, when) in enumerate(cases):
            path = _table(str(tmp_path / f"m{k}"), k == 1)
            view = _spark_view(spark, path)
            value = "s.y + aggregate(t.arr, 0L, (acc, t) -> acc + t.x)"
            matched = spark.sql(
                f"SELECT t.id AS mid, {value} AS nx FROM {view} AS t JOIN src AS s ON {on}"
                f" WHERE coalesce(({when}), false)"
            )
            matched.createOrReplaceTempView("hits")
            expected = spark_rows(
                spark.sql(
                    f"SELECT t.id, coalesce(h.nx, t.x) AS x, t.grp, t.arr FROM {view} AS t"
                    " LEFT JOIN hits h ON h.mid = t.id"
                )
            )
            assert 0 < matched.count() < len(ROWS), (on, when)
            delta_pyds.sql(
                spark,
                f"MERGE INTO delta.`{path}` t USING src s ON {on} WHEN MATCHED AND {when} THEN UPDATE SET x = {value}",
            )
            assert _rows(spark, path) == expected, (on, when)
    finally:
        spark.catalog.dropTempView("src")
        spark.catalog.dropTempView("hits")


def test_delta_table_api_alias_and_plain_conditions(spark, tmp_path, ids_view):
    """``DeltaTable.alias(t).delete / update`` resolve ``t.`` as delta-spark's; Column
    conditions and plain column names keep working, with and without an alias."""
    cases = [
        (lambda dt: dt.alias("t").delete("EXISTS (SELECT 1 FROM ids k WHERE k.id = t.id)"), {1, 4}),
        (lambda dt: dt.alias("t").delete(F.col("t.id") == 2), {2}),
        (lambda dt: dt.alias("t").delete(F.expr("exists(t.arr, t -> t.x > 5)")), {2, 3}),
        (lambda dt: dt.delete(F.col("id") == 2), {2}),
        (lambda dt: dt.delete("id = 2 OR grp = 'c'"), {2, 5, 6}),
        (lambda dt: dt.alias("t").delete("id = 2"), {2}),
    ]
    for k, (run, deleted) in enumerate(cases):
        path = _table(str(tmp_path / f"a{k}"), False)
        run(DeltaTable.forPath(spark, path))
        assert _ids(_rows(spark, path)) == set(ROWS) - deleted, k
    path = _table(str(tmp_path / "up"), False)
    dt = DeltaTable.forPath(spark, path).alias("t")
    dt.update("EXISTS (SELECT 1 FROM ids k WHERE k.id = t.id)", {"t.x": "t.x + (SELECT max(t.x) FROM ids t)"})
    assert {r[0]: r[1] for r in _rows(spark, path)}[1] == 110
    assert {r[0]: r[1] for r in _rows(spark, path)}[2] == 20
    assert dt.toDF().select("t.id").count() == len(ROWS)


def test_alias_conditions_still_prune_files(spark, tmp_path):
    """A condition the skipping reads exactly (``t.grp = 'c'``) prunes as without the alias."""
    path = _table(str(tmp_path / "p"), False)
    dt = DeltaTable.forPath(spark, path).alias("t")
    dt.delete("t.grp = 'c' AND t.id = 5")
    report = dt._rewriter.last_skipping
    assert report is not None and report.files_kept == 1, report
    assert _ids(_rows(spark, path)) == set(ROWS) - {5}
