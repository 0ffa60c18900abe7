"""``delta_pyds.sql(spark, statement)``: Delta's SQL without Delta's JVM extension.

Spark cannot be taught Delta's statements without a JVM extension, and Spark cannot read a
catalog table of a Python source (it loses its location); this front door recognises Delta's statements and runs them
through :class:`~delta_pyds.DeltaTable` and :func:`~delta_pyds.read_delta`. Guarantees:

* a statement that is not a Delta statement and names no Delta table reaches
  ``spark.sql(statement, args, **kwargs)`` unchanged (same text, same arguments);
* a query naming ``delta.`/path``` (with ``@v<n>``, ``VERSION AS OF`` or ``TIMESTAMP AS OF``) or
  a Delta table named at a table reference of Spark's grammar (never a column, alias or argument;
  a CTE in scope, then a temporary view, shadow it), ``delta.`path``` or a table of Spark's session
  catalog (``t``, ``db.t``, ``spark_catalog.db.t``, resolved on each statement), reads each table
  through the native path, as ``read_delta`` does, and the rest of the query (joins, subqueries,
  CTEs, parameters) is Spark's;
* ``args`` and format arguments reach every statement: Spark binds them in a query, and a Delta
  statement gets them bound into its text first (typed literals, DataFrames as views);
* Delta statements run through the public ``DeltaTable`` API, one commit each, and return
  delta-spark's result shapes; conditions and expressions reach Spark as Spark SQL text;
* a Delta statement in a form this module does not support raises
  :class:`~delta_pyds.errors.SqlParseError` naming the statement, the position and the
  supported form, before anything is changed.

The statements are listed in docs/sql.md. A statement is parsed into a frozen value of
:mod:`delta_pyds.spark.sql.ast` with no SparkSession (:func:`parse`: text, the session's
``Dialect`` and ``args`` in, a statement out), then run on the session (:func:`execute`);
:func:`sql` does both.
"""

from delta_pyds.spark.sql.execute import execute
from delta_pyds.spark.sql.statements import parse, sql
from delta_pyds.spark.sql.table_refs import table_names

__all__ = ["execute", "parse", "sql", "table_names"]
