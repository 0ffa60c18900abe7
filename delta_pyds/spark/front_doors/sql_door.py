"""``spark.sql(text, args, **kwargs)`` after ``delta_pyds.register(spark)``: Delta's statements and
queries naming Delta tables run as :func:`delta_pyds.sql` runs them; everything else is Spark's.

Guarantees:

* :func:`install` sets ``sql`` on the session object (no class changes): other sessions, and
  sessions with delta-spark's jars (:func:`~delta_pyds.spark.front_doors.reads.install` does not
  call it there), keep Spark's own ``sql``;
* a statement reaches Spark's original ``sql`` with the same text, the same ``args`` and the same
  keyword arguments (the same objects) when it is no Delta statement and names no Delta table.
  The check is cheap where it can be: a text with none of the words a table reference or a
  Delta statement needs (``FROM``, ``JOIN``, ``TABLE``, ``INTO``, ``UPDATE``, ``VACUUM`` ...,
  anywhere in the text, even in a literal or a comment) goes to Spark at once, with no
  tokenizing, no conf read and no catalog look-up (``SELECT 1``, ``SET k = v``, ``USE db``);
  ``DROP TABLE``, ``SHOW TABLES``, ``ALTER TABLE ... RENAME TO`` and the ``SHOW`` statements that
  are not Delta's (``SHOW TABLE EXTENDED``, ``SHOW DATABASES`` ...) go to Spark as given (the
  ``delta`` source they may need is registered already); every other text is
  :func:`delta_pyds.sql`'s, which hands a statement that is not Delta's to Spark unchanged after
  resolving the names it reads (one catalog look-up per table name);
* while a statement runs here or in :func:`delta_pyds.sql`, this package's own ``spark.sql`` calls
  (catalog look-ups, the rewritten query) in the same thread go straight to Spark's ``sql``
  (:mod:`delta_pyds.spark.session.own_calls`);
* a Delta statement that finds no Delta table raises
  :class:`~delta_pyds.spark.session.analysis_errors.DeltaTableNotFoundException` (an ``AnalysisException``),
  a name of another provider :class:`~delta_pyds.spark.session.analysis_errors.NotADeltaTableException`;
  Spark's own errors pass unchanged."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from delta_pyds.errors import NotADeltaTableError, TableNotFoundError
from delta_pyds.spark.session.analysis_errors import (
    DeltaAnalysisException,
    DeltaTableNotFoundException,
    NotADeltaTableException,
)
from delta_pyds.spark.session.own_calls import active, own_calls

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

_ORIGINAL = "__delta_pyds_original__"
# a statement without any of these words is neither Delta's nor names a table (see the docstring)
_TRIGGERS = re.compile(
    r"\b(FROM|JOIN|TABLE|TABLES|INTO|UPDATE|MERGE|DELETE|INSERT|VACUUM|OPTIMIZE|RESTORE|DESCRIBE|DESC|SHOW"
    r"|ALTER|TRUNCATE|GENERATE|CONVERT|CREATE|REPLACE|DROP|DELTA|CACHE|EXPLAIN|USING|LATERAL)\b",
    re.IGNORECASE,
)
_SPARKS = frozenset({"DROP TABLE", "SHOW TABLES", "ALTER TABLE RENAME"})


def install(spark: SparkSession) -> None:
    """Sets ``spark.sql`` to the door (idempotent)."""
    current = spark.sql
    if getattr(current, _ORIGINAL, None) is not None:
        return
    original: Callable[..., DataFrame] = current

    def sql(sqlQuery: str, args: Any = None, **kwargs: Any) -> DataFrame:
        if active() or not isinstance(sqlQuery, str) or not _TRIGGERS.search(sqlQuery):
            return original(sqlQuery, args, **kwargs)
        with own_calls():
            return route(spark, original, sqlQuery, args, kwargs)

    sql.__doc__ = original.__doc__
    setattr(sql, _ORIGINAL, original)
    spark.sql = sql  # type: ignore[method-assign]


def original_sql(spark: SparkSession) -> Callable[..., DataFrame]:
    """Spark's own ``sql`` of ``spark`` (the door's original, or ``spark.sql`` itself)."""
    return getattr(spark.sql, _ORIGINAL, None) or spark.sql


def route(
    spark: SparkSession, original: Callable[..., DataFrame], text: str, args: Any, kwargs: dict[str, Any]
) -> DataFrame:
    """Runs ``text`` as Spark's statement or as Delta's (see the module docstring)."""
    from delta_pyds.expressions.lexer import DEFAULT_DIALECT
    from delta_pyds.spark.sql.heads import recognise
    from delta_pyds.spark.sql.parser import Parser
    from delta_pyds.spark.sql.statements import sql as delta_sql

    try:
        p = Parser(text, dialect=DEFAULT_DIALECT)
        head = recognise(p)
    except Exception:  # not tokenizable by this package: Spark reports what is wrong
        return original(text, args, **kwargs)
    if (head is not None and head.key in _SPARKS) or (head is None and p.at("SHOW")):
        return original(text, args, **kwargs)  # Spark's catalog statements (SHOW TABLE EXTENDED ...)
    try:
        return delta_sql(spark, text, args, **kwargs)
    except DeltaAnalysisException:
        raise
    except TableNotFoundError as exc:
        raise DeltaTableNotFoundException(str(exc)) from exc
    except NotADeltaTableError as exc:
        raise NotADeltaTableException(str(exc)) from exc
