"""The one place that knows how the supported pyspark versions differ (4.1, 4.2, 4.3).

Every difference this package meets is here, measured against pyspark's own source of
each version (docs/deployment.md's version table says what each version gets):

* ``pyspark.sql.pandas.types.to_arrow_schema`` takes ``timezone=`` from 4.2 on; 4.1 has
  ``timestamp_utc=`` (True: timestamps as UTC instants), which is the same Arrow schema
  for ``timezone="UTC"``: :func:`arrow_schema`.
* ``pyspark.sql.streaming.datasource`` (read limits, ``SupportsTriggerAvailableNow``) and
  ``DataSourceStreamReader.latestOffset(start, limit)`` exist from 4.2 on; 4.1 calls
  ``latestOffset()`` with no arguments and has no admission control:
  :data:`STREAM_ADMISSION` says which, and :func:`require_stream_admission` refuses, by
  name, the options that need it.

pyspark older than :data:`MIN_PYSPARK` is refused when the Spark layer is imported
(:func:`check_supported`), naming the version that works.
"""

from __future__ import annotations

import importlib.util
from typing import TYPE_CHECKING

import pyspark

from delta_pyds.errors import UnsupportedSparkVersionError

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql.types import StructType

MIN_PYSPARK = (4, 1)
"""The lowest pyspark (major, minor) the package supports and CI tests (pyproject's bound)."""


def _version(text: str) -> tuple[int, int]:
    parts = text.split(".")
    return int(parts[0]), int("".join(c for c in parts[1] if c.isdigit()) or 0)


PYSPARK_VERSION = _version(pyspark.__version__)
"""The running pyspark's (major, minor)."""

STREAM_ADMISSION = importlib.util.find_spec("pyspark.sql.streaming.datasource") is not None
"""Whether Python streaming sources get read limits (pyspark 4.2+): ``latestOffset(start, limit)``,
``getDefaultReadLimit`` and ``Trigger.AvailableNow`` preparation."""


if STREAM_ADMISSION:
    from pyspark.sql.streaming.datasource import (
        ReadAllAvailable,
        ReadLimit,
        ReadMaxBytes,
        ReadMaxFiles,
        SupportsTriggerAvailableNow,
    )
else:  # pyspark 4.1: stand-ins of the same names, so one stream reader serves every version

    class ReadLimit:  # type: ignore[no-redef]
        """pyspark 4.2's read limit (4.1 has none: every batch reads all available)."""

    class ReadAllAvailable(ReadLimit):  # type: ignore[no-redef]
        pass

    class ReadMaxFiles(ReadLimit):  # type: ignore[no-redef]
        def __init__(self, max_files: int) -> None:
            self.max_files = max_files

    class ReadMaxBytes(ReadLimit):  # type: ignore[no-redef]
        def __init__(self, max_bytes: int) -> None:
            self.max_bytes = max_bytes

    class SupportsTriggerAvailableNow:  # type: ignore[no-redef]
        """4.1 never calls ``prepareForTriggerAvailableNow``: Spark fixes the batch's end itself."""


def check_supported(version: str | None = None) -> None:
    """Refuses a pyspark older than :data:`MIN_PYSPARK` by name (see docs/deployment.md)."""
    text = pyspark.__version__ if version is None else version
    if _version(text) < MIN_PYSPARK:
        raise UnsupportedSparkVersionError(
            f"delta_pyds needs pyspark {MIN_PYSPARK[0]}.{MIN_PYSPARK[1]} or later (Spark "
            f"{MIN_PYSPARK[0]}.{MIN_PYSPARK[1]}+); this is pyspark {text}. Spark 4.0's Python Data "
            "Source API lacks what the package stands on (docs/deployment.md, 'Spark versions')"
        )


def arrow_schema(schema: StructType) -> pa.Schema:
    """Spark's Arrow schema for ``schema`` with timestamps as UTC instants and no large
    types: ``to_arrow_schema(schema, timezone="UTC", prefers_large_types=False)`` on 4.2+."""
    from pyspark.sql.pandas.types import to_arrow_schema

    if PYSPARK_VERSION >= (4, 2):
        return to_arrow_schema(schema, timezone="UTC", prefers_large_types=False)
    return to_arrow_schema(schema, timestamp_utc=True, prefers_large_types=False)  # type: ignore[call-arg]


def require_stream_admission(what: str) -> None:
    """Refuses ``what`` (a streaming read option or trigger that needs read limits) by name
    on pyspark 4.1, naming 4.2 as the version that has them."""
    if not STREAM_ADMISSION:
        raise UnsupportedSparkVersionError(
            f"{what} needs pyspark 4.2 or later (read limits for Python streaming sources, "
            f"pyspark.sql.streaming.datasource); this is pyspark {pyspark.__version__}, whose "
            "streaming reads read everything available in each batch"
        )


__all__ = [
    "MIN_PYSPARK",
    "ReadAllAvailable",
    "ReadLimit",
    "ReadMaxBytes",
    "ReadMaxFiles",
    "SupportsTriggerAvailableNow",
    "PYSPARK_VERSION",
    "STREAM_ADMISSION",
    "arrow_schema",
    "check_supported",
    "require_stream_admission",
]
