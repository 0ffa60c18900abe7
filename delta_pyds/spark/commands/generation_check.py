"""Generation expressions of a table being defined, analysed by Spark SQL, as delta-spark's
``GeneratedColumn.validateGeneratedColumns`` does before ``CREATE`` / ``REPLACE TABLE``.

Guarantees: :func:`check_generation_expressions` analyses every generation expression over
an empty relation of the table's other (not generated) columns, so any Spark SQL function
is accepted (``make_date(y, m, d)``, not only this package's evaluator subset), and raises
:class:`~delta_pyds.errors.SchemaError` naming the column and delta-spark's error class when
Spark cannot resolve it (a missing column, or a reference to another generated column:
``DELTA_INVALID_GENERATED_COLUMN_REFERENCES``), when it is not deterministic
(``DELTA_NON_DETERMINISTIC_EXPRESSION_IN_GENERATED_COLUMN``) or when its type is not the
column's (``DELTA_GENERATED_COLUMNS_EXPR_TYPE_MISMATCH``). It runs no job."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from delta_pyds.errors import SchemaError
from delta_pyds.protocol.schema import StructField, StructType
from delta_pyds.write.constraints import GENERATION_EXPRESSION

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import DataType


def check_generation_expressions(spark: SparkSession, columns: Sequence[StructField]) -> None:
    """Raises SchemaError for a generation expression Spark cannot accept (see the module
    docstring); does nothing for a table without generated columns."""
    generated = [f for f in columns if GENERATION_EXPRESSION in (f.metadata or {})]
    if not generated:
        return
    from pyspark.errors import AnalysisException
    from pyspark.sql import functions as F

    from delta_pyds.spark.session.schema_convert import to_spark_schema

    normal = StructType(tuple(f for f in columns if GENERATION_EXPRESSION not in (f.metadata or {})))
    relation = spark.createDataFrame([], to_spark_schema(normal))
    types = {f.name: f.dataType for f in to_spark_schema(StructType(tuple(generated))).fields}
    for f in generated:
        text = str(f.metadata[GENERATION_EXPRESSION])
        where = f"column {f.name}: generation expression ({text})"
        try:
            found = relation.select(F.expr(text).alias("g")).schema["g"].dataType
        except AnalysisException as exc:
            raise SchemaError(
                f"{where} cannot be resolved over the table's other columns (delta-spark: "
                f"DELTA_INVALID_GENERATED_COLUMN_REFERENCES): {_first_line(exc)}"
            ) from None
        if not _deterministic(spark, relation, text):
            raise SchemaError(
                f"{where} is not deterministic (delta-spark: DELTA_NON_DETERMINISTIC_EXPRESSION_IN_GENERATED_COLUMN)"
            )
        if not _same_type(found, types[f.name]):
            raise SchemaError(
                f"{where} gives {found.simpleString()}, the column is {types[f.name].simpleString()} "
                "(delta-spark: DELTA_GENERATED_COLUMNS_EXPR_TYPE_MISMATCH)"
            )


def _deterministic(spark: SparkSession, relation: DataFrame, text: str) -> bool:
    """Spark's analyzer allows nondeterministic expressions only in some operators (Project,
    Filter, Aggregate, ...), not in a join condition: analysing one tells them apart."""
    from pyspark.errors import AnalysisException
    from pyspark.sql import functions as F

    probe = spark.range(0).toDF("__pydelta_probe")
    try:
        relation.join(probe, F.expr(f"({text}) IS NULL OR __pydelta_probe IS NULL")).schema  # noqa: B018
    except AnalysisException as exc:
        return "NON_DETERMINISTIC" not in str(exc).upper() and "NONDETERMINISTIC" not in str(exc).upper()
    return True


def _same_type(a: DataType, b: DataType) -> bool:
    """Types equal ignoring nullability (delta-spark's ``DataType.equalsIgnoreNullability``)."""
    return _strip(a.jsonValue()) == _strip(b.jsonValue())


def _strip(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: _strip(v) for k, v in obj.items() if k not in _NULLABILITY}
    if isinstance(obj, list):
        return [_strip(x) for x in obj]
    return obj


_NULLABILITY = ("nullable", "containsNull", "valueContainsNull", "metadata")


def _first_line(exc: Exception) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
