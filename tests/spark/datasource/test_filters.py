"""Spark's pushed filters translated into the package's predicates (delta_pyds.spark.datasource.filters):
names resolved case-insensitively against the schema, what is not understood returned
unused (Spark still applies every filter)."""

from __future__ import annotations

from helpers import field, make_schema, struct

from delta_pyds.expressions import predicates as P


def test_translate_filters():
    from pyspark.sql import datasource as ds

    from delta_pyds.spark.datasource.filters import translate_filters

    schema = make_schema(field("Id", "long"), field("s", struct(field("X", "string"))))
    filters = [
        ds.EqualTo(("id",), 1),
        ds.EqualNullSafe(("ID",), None),
        ds.GreaterThan(("Id",), 2),
        ds.GreaterThanOrEqual(("Id",), 3),
        ds.LessThan(("Id",), 4),
        ds.LessThanOrEqual(("Id",), 5),
        ds.In(("Id",), (1, 2)),
        ds.IsNull(("s", "x")),
        ds.IsNotNull(("S",)),
        ds.Not(ds.EqualTo(("Id",), 7)),
        ds.StringStartsWith(("s", "x"), "ab"),
        ds.StringEndsWith(("s", "x"), "z"),
        ds.StringContains(("s", "x"), "q"),
        ds.Not(ds.StringContains(("s", "x"), "q")),
        ds.EqualTo(("nope",), 1),
        ds.EqualTo(("Id", "deeper"), 1),
        ds.EqualTo(("Id",), bytearray(b"ab")),
    ]
    preds, unused = translate_filters(filters, schema)
    assert preds == [
        P.EqualTo(("Id",), 1),
        P.EqualNullSafe(("Id",), None),
        P.GreaterThan(("Id",), 2),
        P.GreaterThanOrEqual(("Id",), 3),
        P.LessThan(("Id",), 4),
        P.LessThanOrEqual(("Id",), 5),
        P.In(("Id",), (1, 2)),
        P.IsNull(("s", "X")),
        P.IsNotNull(("s",)),
        P.Not(P.EqualTo(("Id",), 7)),
        P.StartsWith(("s", "X"), "ab"),
        P.EqualTo(("Id",), b"ab"),
    ]
    assert unused == filters[11:16]
    # without a schema names are kept as given
    preds, unused = translate_filters([ds.EqualTo(("a", "b"), 1)])
    assert preds == [P.EqualTo(("a", "b"), 1)] and unused == []
