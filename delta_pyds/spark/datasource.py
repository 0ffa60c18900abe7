"""The ``pydelta`` data source for Spark's Python Data Source API.

Read a Delta table::

    df = spark.read.format("pydelta").load("/path/to/table")
    df = spark.read.format("pydelta").option("versionAsOf", 3).load(path)
    df = spark.read.format("pydelta").option("timestampAsOf", "2024-05-01 10:00:00").load(path)
    df = spark.read.format("pydelta").option("columns", "id,name").load(path)  # projection

The Python Data Source API gives sources no column pruning: every column of the
returned schema is decoded. For wide tables pass ``columns`` (or a user schema with
``.schema("id long, name string")``) so only those columns are read.

File skipping uses Spark's filters when ``spark.sql.python.filterPushdown.enabled``
is true (``delta_pyds.register(spark)`` sets it); with it off, reads are still correct
but scan every file.

The table version is pinned when the DataFrame is created (``load()``): later commits
are not seen by that DataFrame, as with delta-spark.
"""

from __future__ import annotations

import logging
import sys

from pyspark.sql.datasource import DataSource
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StructType as SparkStructType

from ..errors import SchemaError
from ..file_reader import ReadSpec
from ..read_options import ReadOptions
from ..schema import StructType, parse_type, project
from ..snapshot import Snapshot
from ..storage import Storage
from .schema_convert import drop_void, to_spark_schema

log = logging.getLogger("delta_pyds")

PUSHDOWN_HINT = ("pydelta: spark.sql.python.filterPushdown.enabled is false, so scans read every "
                 "file; set it to true (delta_pyds.register(spark) does) to skip files with filters")


class DeltaDataSource(DataSource):
    """Delta Lake tables, read and written from PySpark with no JVM jars."""

    @classmethod
    def name(cls) -> str:
        return "pydelta"

    # -------------------------------------------------------------------- helpers
    def _read_options(self) -> ReadOptions:
        return ReadOptions.parse(self.options)

    def _storage(self, opts: ReadOptions) -> Storage:
        return Storage(opts.path, opts.storage_options)

    def _load(self, opts: ReadOptions, version: int | None = None) -> Snapshot:
        storage = self._storage(opts)
        if version is not None:
            from .reader import cached_snapshot
            return cached_snapshot(storage, version)
        return Snapshot.load(storage, version=opts.version, timestamp=opts.timestamp)

    def _output_schema(self, snapshot: Snapshot, opts: ReadOptions) -> StructType:
        schema = drop_void(snapshot.schema)
        if opts.columns:
            missing = [c for c in opts.columns if schema.get(c) is None]
            if missing:
                raise ValueError(f"option columns: {', '.join(missing)} not in the table; "
                                 f"available: {', '.join(schema.names)}")
            schema = schema.select(list(opts.columns))
        return schema

    # ------------------------------------------------------------------------ read
    def schema(self):
        opts = self._read_options()
        snapshot = self._load(opts)
        self._pinned_version = snapshot.version  # reaches reader(): the DataFrame's version
        return to_spark_schema(self._output_schema(snapshot, opts))

    def reader(self, schema: SparkStructType):
        from .reader import DeltaFilteringScanReader, DeltaScanReader
        opts = self._read_options()
        snapshot = self._load(opts, getattr(self, "_pinned_version", None))
        requested = parse_type(schema.jsonValue())
        if not isinstance(requested, StructType):  # pragma: no cover
            raise SchemaError("the read schema must be a struct")
        output = project(snapshot.schema, requested)
        missing = [f.name for f in output.fields if snapshot.schema.get(f.name) is None]
        if missing:
            raise ValueError(f"the schema given to the reader names columns not in the table: "
                             f"{', '.join(missing)}; available: {', '.join(snapshot.schema.names)}")
        spec = ReadSpec(
            storage=snapshot.storage,
            output=output,
            arrow_schema=to_arrow_schema(schema, timezone="UTC", prefers_large_types=False),
            partition_columns=tuple(snapshot.partition_columns),
            physical_partition_columns=tuple(snapshot.physical_partition_columns),
            column_mapping_mode=snapshot.column_mapping_mode,
            batch_rows=opts.batch_rows,
            table_schema=snapshot.schema,
        )
        pushdown = opts.filter_pushdown
        if pushdown == "auto":
            enabled = _planner_pushdown_flag()
            if enabled is False:
                log.warning(PUSHDOWN_HINT)
            pushdown = "true" if enabled else "false"
        cls = DeltaFilteringScanReader if pushdown == "true" else DeltaScanReader
        return cls(opts, snapshot.version, spec)


def _planner_pushdown_flag() -> bool | None:
    """Whether Spark's planner has filter pushdown on (None if it cannot be told).

    Spark passes the flag to the planning worker but not to the source; readers that
    define pushFilters fail when it is off, so we look it up in the caller's frame."""
    frame = sys._getframe(1)
    depth = 0
    while frame is not None and depth < 12:
        value = frame.f_locals.get("enable_pushdown")
        if isinstance(value, bool):
            return value
        frame = frame.f_back
        depth += 1
    return None
