"""Marks this package's own ``spark.sql`` calls, so that the ``spark.sql`` front door
(:mod:`delta_pyds.spark.front_doors.sql_door`) hands them straight to Spark's ``sql``.

Guarantees: :func:`active` is true only inside an :func:`own_calls` block of the same thread (a
context variable: another thread, e.g. a streaming ``foreachBatch``, is a user's again)."""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator

_ACTIVE: contextvars.ContextVar[bool] = contextvars.ContextVar("delta_pyds_own_calls", default=False)


def active() -> bool:
    """Whether the current code runs inside :func:`own_calls`."""
    return _ACTIVE.get()


@contextlib.contextmanager
def own_calls() -> Iterator[None]:
    """A block whose ``spark.sql`` calls are this package's own."""
    token = _ACTIVE.set(True)
    try:
        yield
    finally:
        _ACTIVE.reset(token)
