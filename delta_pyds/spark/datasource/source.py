"""The ``pydelta`` data source for Spark's Python Data Source API.

Read a Delta table::

    df = spark.read.format("pydelta").load("/path/to/table")
    df = spark.read.format("pydelta").option("versionAsOf", 3).load(path)
    df = spark.read.format("pydelta").option("timestampAsOf", "2024-05-01 10:00:00+02:00").load(path)
    df = spark.read.format("pydelta").option("columns", "id,name").load(path)  # projection

The Python Data Source API gives sources no column pruning: every column of the
returned schema is decoded. For wide tables pass ``columns`` (or a user schema with
``.schema("id long, name string")``) so only those columns are read.

File skipping uses Spark's filters only where that is safe and Spark lets the source see
them: ``spark.sql.python.filterPushdown.enabled`` must be true (``delta_pyds.register(spark)``
sets it; with it off, reads are correct but scan every file), and with the default
``filterPushdown=auto`` only on a Spark whose planned scans are kept per query (one with
``DataSourceReader.pushLimit``; Spark 4.1-4.3 share one planned scan between a DataFrame's
queries, :func:`scan_scoped_pushdown`), else ``.option("filterPushdown", "true")`` turns it
on for a DataFrame that serves one filtered query. ``read_delta`` skips files on every
Spark.

The table version is pinned when the DataFrame is created (``load()``): later commits
are not seen by that DataFrame, as with delta-spark.

A timestamp without a UTC offset is a time in the session time zone, as in delta-spark,
but Spark does not pass ``spark.sql.session.timeZone`` to Python data sources: give the
offset, or ``.option("timeZone", ...)``; without either, such a timestamp is refused when
the version it names could depend on the zone (see :func:`delta_pyds.log.time_travel.pin_zone`).
"""

from __future__ import annotations

import logging
import sys

from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
)
from pyspark.sql.types import StructType as SparkStructType

from delta_pyds.errors import SchemaError
from delta_pyds.protocol.schema import StructType, parse_type
from delta_pyds.read.options import ReadOptions, read_change_feed
from delta_pyds.read.scan_plan import load_snapshot, project_output, read_spec, select_columns
from delta_pyds.spark.session.compat import arrow_schema
from delta_pyds.spark.session.schema_convert import to_spark_schema
from delta_pyds.write.option_names import READ_NAMES, READ_PREFIXES, WRITE_NAMES, WRITE_PREFIXES, warn_unknown_options

log = logging.getLogger(__name__)

NO_FILTERS_PUSHED_HINT = (
    "pydelta: filterPushdown is on but Spark pushed no filter to this read: the query has none, or "
    "spark.sql.python.filterPushdown.enabled is false (delta_pyds.register(spark) sets it), so the "
    "scan reads every file"
)


class DeltaDataSource(DataSource):
    """Delta Lake tables, read and written from PySpark with no JVM jars."""

    @classmethod
    def name(cls) -> str:
        return "pydelta"

    # -------------------------------------------------------------------- helpers
    def _read_options(self) -> ReadOptions:
        return ReadOptions.parse(self.options)

    # ------------------------------------------------------------------------ read
    def schema(self) -> SparkStructType:
        warn_unknown_options(self.options, READ_NAMES, READ_PREFIXES, what="read")
        if read_change_feed(self.options):
            from delta_pyds.spark.datasource.change_feed import change_feed_schema

            schema, self._pinned_version = change_feed_schema(self)  # reaches reader()
            return schema
        opts = self._read_options()
        snapshot = load_snapshot(opts)
        self._pinned_version = snapshot.version  # reaches reader(): the DataFrame's version
        return to_spark_schema(select_columns(snapshot.schema, opts.columns))

    def reader(self, schema: SparkStructType) -> DataSourceReader:
        if read_change_feed(self.options):
            from delta_pyds.spark.datasource.change_feed import change_feed_reader

            return change_feed_reader(self, schema)
        from delta_pyds.spark.datasource.reader import DeltaFilteringScanReader, DeltaScanReader

        opts = self._read_options()
        snapshot = load_snapshot(opts, version=getattr(self, "_pinned_version", None))
        requested = parse_type(schema.jsonValue())
        if not isinstance(requested, StructType):  # pragma: no cover
            raise SchemaError("the read schema must be a struct")
        spec = read_spec(
            snapshot,
            project_output(snapshot.schema, requested),
            arrow_schema(schema),
            batch_rows=opts.batch_rows,
        )
        cls = DeltaFilteringScanReader if _use_skipping(opts.filter_pushdown) else DeltaScanReader
        return cls(opts, snapshot.version, spec)

    # ------------------------------------------------------------------- streaming
    def streamReader(self, schema: SparkStructType) -> DataSourceStreamReader:
        """``spark.readStream.format("pydelta")``: see :mod:`delta_pyds.spark.datasource.stream_reader`."""
        from delta_pyds.spark.datasource.stream_reader import stream_reader

        return stream_reader(self, schema)

    def streamWriter(self, schema: SparkStructType, overwrite: bool) -> DataSourceStreamWriter:
        """``df.writeStream.format("pydelta")``: see :mod:`delta_pyds.spark.datasource.stream_writer`."""
        from delta_pyds.spark.datasource.stream_writer import stream_writer

        warn_unknown_options(self.options, WRITE_NAMES, WRITE_PREFIXES, what="write")
        return stream_writer(self, schema, overwrite)

    # ----------------------------------------------------------------------- write
    def writer(self, schema: SparkStructType, overwrite: bool) -> DataSourceWriter:
        """``df.write.format("pydelta").mode("append"|"overwrite").save(path)``.

        Spark lets Python sources run only in append and overwrite mode and rejects
        ``.partitionBy()``: pass ``.option("partitionBy", "a,b")`` and, for the
        errorifexists / ignore semantics, ``.option("saveMode", "errorifexists")``
        (see the README's Writing section).

        Spark passes Python data sources no session conf (measured on 4.3: the planner
        workers get an empty conf, the write tasks only Arrow and time zone settings), so
        ``spark.sql.sources.partitionOverwriteMode`` is unknown here: an overwrite of a
        partitioned table whose result depends on it is refused at commit unless the
        ``partitionOverwriteMode`` option says which mode (or ``replaceWhere`` /
        ``overwriteSchema`` make it irrelevant)."""
        from delta_pyds.protocol.schema_evolution import from_spark_json
        from delta_pyds.spark.datasource.writer import DeltaBatchWriter
        from delta_pyds.write.options import WriteOptions
        from delta_pyds.write.plan import plan_write

        warn_unknown_options(self.options, WRITE_NAMES, WRITE_PREFIXES, what="write")
        opts = WriteOptions.parse(self.options, overwrite=overwrite, session_partition_overwrite_mode=None)
        plan = plan_write(opts, from_spark_json(schema.jsonValue()))
        return DeltaBatchWriter(plan)


STALE_PUSHDOWN_HINT = (
    "pydelta: file skipping is off because this Spark version shares one planned scan between "
    "all queries of a DataFrame (a filtered query's pruned file list would be reused by later "
    "queries on the same DataFrame and return too few rows); pass .option('filterPushdown', "
    "'true') to skip files anyway when each DataFrame (and view) serves a single filtered query"
)


def scan_scoped_pushdown() -> bool:
    """Whether this Spark keeps filter-pushdown results per scan.

    Spark 4.1-4.3 store the partitions planned during filter pushdown on the data source
    relation, where every later query of the same DataFrame or view that pushes no
    filter reuses them. Skipping files there would make ``df.where(...).count()``
    followed by ``df.count()`` return too few rows. Spark fixed it together with limit
    pushdown (``DataSourceReader.pushLimit``), which is what we detect."""
    from pyspark.sql.datasource import DataSourceReader

    return hasattr(DataSourceReader, "pushLimit")


def _use_skipping(setting: str) -> bool:
    """Whether the reader may define pushFilters and prune files with the filters."""
    if setting == "false":
        return False
    if not pushing_filters():
        if setting == "true":
            log.info(NO_FILTERS_PUSHED_HINT)
        return False  # Spark calls no pushFilters here; defining it fails the read when the conf is off
    if setting == "true":
        return True
    if not scan_scoped_pushdown():
        log.info(STALE_PUSHDOWN_HINT)
        return False
    return True


PUSHDOWN_WORKER = "pyspark.sql.worker.data_source_pushdown_filters"


def pushing_filters() -> bool:
    """Whether this ``reader()`` call is the one whose reader Spark gives the query's filters.

    Spark does not tell sources whether filter pushdown is on, and it fails every read from a
    reader that defines ``pushFilters`` while ``spark.sql.python.filterPushdown.enabled`` is off.
    It calls ``pushFilters`` in one Python worker only, pyspark's
    ``data_source_pushdown_filters`` module (4.1-4.3), which it runs only when the conf is on and
    the query has filters; every other read is planned in ``plan_data_source_read``, where a
    reader without ``pushFilters`` is right whatever the conf (nothing is pushed there). Each
    Python worker process runs one worker module (``pyspark.daemon`` imports the one it is
    started for), so the pushdown worker is the process that has loaded that module: no
    caller's frames or local variables are read."""
    return PUSHDOWN_WORKER in sys.modules
