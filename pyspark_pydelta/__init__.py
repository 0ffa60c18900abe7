"""Auto-registration hook: Spark registers ``DefaultSource`` of installed top-level
``pyspark_*`` modules by name. This module must never fail to import (a broken
``pyspark_*`` module disables every auto-registered source), so errors only log."""

try:
    from delta_pyds.spark.datasource.source import DeltaDataSource as DefaultSource  # noqa: F401
except Exception as _exc:  # pragma: no cover - only when the install is broken
    import logging as _logging

    _logging.getLogger("delta_pyds").warning("pydelta auto-registration failed: %s", _exc)
