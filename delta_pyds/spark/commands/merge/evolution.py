"""MERGE schema evolution on Spark's side: the schema the table takes, and the target and source
rows brought to it.

Guarantees: :func:`evolved_for` gives the columns the clauses write (every source column for
an ``updateAll`` / ``insertAll``, else the top-level columns of the ``set`` / ``values`` keys)
to :func:`evolved_schema`, which is
:func:`~delta_pyds.protocol.schema_evolution.evolve_for_merge` over the source DataFrame's
schema (delta-spark's rules: new columns and new nested struct fields appended, nullable);
:func:`to_schema` gives a DataFrame the evolved types column by column (struct fields by name,
missing ones null, inside arrays and maps too; a null struct stays null), so that a target
row and a source row meet with one type. Columns whose type did not change are not touched."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from delta_pyds.protocol.schema import StructType
from delta_pyds.protocol.schema_evolution import evolve_for_merge, from_spark_json
from delta_pyds.spark.commands.merge.clauses import MergeClause
from delta_pyds.spark.commands.resolution import parse_column_path
from delta_pyds.spark.native.conform import conform, spark_type


def evolved_for(table: StructType, source: DataFrame, clauses: Sequence[MergeClause]) -> StructType | None:
    """The table schema after a merge with schema evolution of ``clauses`` (None: unchanged):
    the source's columns an ``updateAll`` / ``insertAll`` or a ``set`` / ``values`` key names."""
    star = any(c.star for c in clauses)
    named = {
        parse_column_path(k, "values" if c.when == "not_matched" else "set")[-1].lower()
        for c in clauses
        for k, _ in c.assignments or ()
    }
    return evolved_schema(table, source, None if star else named)


def evolved_schema(table: StructType, source: DataFrame, columns: Iterable[str] | None) -> StructType | None:
    """The table schema after the merge (None: unchanged); ``columns``: the source's top-level
    columns the clauses write (None: all, an ``updateAll`` / ``insertAll``)."""
    return evolve_for_merge(table, from_spark_json(source.schema.jsonValue()), columns)


def to_schema(df: DataFrame, schema: StructType, *, add_missing: bool, complex_only: bool = False) -> DataFrame:
    """``df`` with each column of ``schema`` it has conformed to the column's type in
    ``schema`` (when it differs); ``add_missing``: the columns it lacks are added as nulls;
    ``complex_only``: only struct, array and map columns are conformed."""
    have = {f.name.lower(): f for f in df.schema.fields}
    for f in schema.fields:
        sf = have.get(f.name.lower())
        if sf is None:
            if add_missing:
                df = df.withColumn(f.name, F.lit(None).cast(spark_type(f.type)))
            continue
        if complex_only and not isinstance(sf.dataType, (T.StructType, T.ArrayType, T.MapType)):
            continue  # a source's atomic column keeps its type (its conditions stay as written)
        if sf.dataType.simpleString() != spark_type(f.type).simpleString():
            df = df.withColumn(sf.name, conform(F.col(f"`{sf.name}`"), sf.dataType, f.type))
    return df
