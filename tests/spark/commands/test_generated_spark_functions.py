"""A generated column whose expression uses a Spark SQL function outside this package's
evaluator (``make_date(y, m, d)``): created by the builder and by SQL (Spark analyses the
expression, as delta-spark does: unresolvable, nondeterministic and mistyped expressions are
refused by name), written by write_delta (Spark evaluates it) and recomputed by UPDATE and
MERGE; the format("pydelta") writer, which evaluates with the core evaluator, refuses by name
at write time. Values agree on both read paths and in deltalake."""

from __future__ import annotations

import datetime

import pytest
from helpers import arrow_rows, deltalake_table

import delta_pyds
from delta_pyds import DeltaTable
from delta_pyds.errors import SchemaError, UnsupportedFeatureError
from delta_pyds.table.snapshot import Snapshot

EXPR = "make_date(y, m, d)"


def _builder(spark, path, expr=EXPR, dtype="DATE"):
    return (
        DeltaTable.create(spark)
        .location(path)
        .addColumn("y", "INT")
        .addColumn("m", "INT")
        .addColumn("d", "INT")
        .addColumn("dt", dtype, generatedAlwaysAs=expr)
        .execute()
    )


def _sql(spark, path):
    delta_pyds.sql(
        spark, f"CREATE TABLE delta.`{path}` (y INT, m INT, d INT, dt DATE GENERATED ALWAYS AS ({EXPR})) USING delta"
    )


def _rows(spark, path):
    cols = ["y", "m", "d", "dt"]
    native = sorted(tuple(r) for r in delta_pyds.read_delta(spark, path).select(*cols).collect())
    source = sorted(tuple(r) for r in spark.read.format("pydelta").load(path).select(*cols).collect())
    rs = sorted(arrow_rows(deltalake_table(path), cols))
    assert native == source == rs
    return native


def _ymd(spark, rows):
    return spark.createDataFrame(rows, "y int, m int, d int")


@pytest.mark.parametrize("create", ["builder", "sql"])
def test_create_and_write_delta_evaluate_make_date(spark, tmp_path, create):
    path = str(tmp_path / "t")
    (_builder if create == "builder" else _sql)(spark, path)
    assert Snapshot.load(path).schema.get("dt").metadata.get("delta.generationExpression") == EXPR
    delta_pyds.write_delta(_ymd(spark, [(2024, 2, 29), (1999, 12, 31)]), path)
    assert _rows(spark, path) == [
        (1999, 12, 31, datetime.date(1999, 12, 31)),
        (2024, 2, 29, datetime.date(2024, 2, 29)),
    ]


def test_the_data_source_writer_refuses_by_name(spark, tmp_path):
    path = str(tmp_path / "t")
    _builder(spark, path)
    with pytest.raises(Exception, match=r"generation expression of column dt \(make_date\(y, m, d\)\).*write_delta"):
        _ymd(spark, [(2024, 1, 2)]).write.format("pydelta").mode("append").save(path)
    assert _rows(spark, path) == []  # nothing half-written


def test_update_and_merge_recompute_make_date(spark, tmp_path):
    path = str(tmp_path / "t")
    t = _builder(spark, path)
    delta_pyds.write_delta(_ymd(spark, [(2024, 1, 1), (2024, 1, 2)]), path)
    t.update("d = 2", {"m": "3"})
    (
        t.alias("t")
        .merge(_ymd(spark, [(2024, 1, 1), (2030, 6, 7)]).alias("s"), "t.d = s.d")
        .whenMatchedUpdate(set={"y": "s.y + 1"})
        .whenNotMatchedInsert(values={"y": "s.y", "m": "s.m", "d": "s.d"})
        .execute()
    )
    assert _rows(spark, path) == [
        (2024, 3, 2, datetime.date(2024, 3, 2)),
        (2025, 1, 1, datetime.date(2025, 1, 1)),
        (2030, 6, 7, datetime.date(2030, 6, 7)),
    ]


@pytest.mark.parametrize(
    "expr, dtype, error",
    [
        ("make_date(y, m, nosuch)", "DATE", "DELTA_INVALID_GENERATED_COLUMN_REFERENCES"),
        ("date_add(make_date(y, m, d), CAST(rand() * 3 AS INT))", "DATE", "DELTA_NON_DETERMINISTIC_EXPRESSION"),
        (EXPR, "INT", "DELTA_GENERATED_COLUMNS_EXPR_TYPE_MISMATCH"),
    ],
)
def test_create_refuses_what_spark_refuses(spark, tmp_path, expr, dtype, error):
    path = str(tmp_path / "t")
    with pytest.raises(SchemaError, match=error):
        _builder(spark, path, expr, dtype)
    assert not (tmp_path / "t").exists() or not list((tmp_path / "t").iterdir())


def test_core_create_still_refuses_an_expression_it_cannot_evaluate(tmp_path):
    from delta_pyds.operations.create import ColumnSpec, TableDefinition, create_table
    from delta_pyds.protocol.schema import PrimitiveType
    from delta_pyds.storage.store import Storage

    columns = [ColumnSpec(n, PrimitiveType("integer")).to_field() for n in ("y", "m", "d")]
    columns.append(ColumnSpec("dt", PrimitiveType("date"), generated_always_as=EXPR).to_field())
    with pytest.raises(UnsupportedFeatureError, match="make_date"):
        create_table(Storage(str(tmp_path / "t")), TableDefinition(columns=columns))
