"""The front doors' errors: a failure of Spark's own call, or of this package's, that delta-spark
raises as an ``AnalysisException``, turned into :mod:`delta_pyds.spark.session.analysis_errors`' classes.

Guarantees: only an error that says this package found no Delta table (its
:class:`~delta_pyds.errors.TableNotFoundError`, raised here or inside Spark's Python worker and
named in Spark's message) is turned into one, chained to the original; every other error is
left as it is (the functions return None for it)."""

from __future__ import annotations

from delta_pyds.errors import TableNotFoundError
from delta_pyds.spark.session.analysis_errors import DeltaTableNotFoundException, path_error

_MARK = "TableNotFoundError"


def not_a_table(exc: BaseException, path: str) -> Exception | None:
    """The ``AnalysisException`` for ``exc`` of a read of ``path``, or None (not a missing table)."""
    if isinstance(exc, DeltaTableNotFoundException):
        return None
    if isinstance(exc, TableNotFoundError) or _MARK in str(exc):
        return path_error(path, read=True)
    return None
