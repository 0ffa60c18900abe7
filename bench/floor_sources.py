"""Floors of Spark's Python Data Source API, for the benchmarks: the least any Python
source can cost, measured side by side with pydelta and Spark's own Parquet I/O.

* ``plainpq`` reads a directory of Parquet files and yields pyarrow's batches unchanged
  (no Delta log, no conversion, no deletion vectors): the cost of moving Arrow batches
  from a Python worker into Spark;
* ``noop_arrow`` is a ``DataSourceArrowWriter`` that receives every batch and writes
  nothing: the cost of moving a DataFrame from Spark into Python workers.

Registered with ``cloudpickle.register_pickle_by_value`` so that Spark's Python workers,
which do not have ``bench/`` on their path, receive the classes themselves."""

from __future__ import annotations

import glob
import os

from pyspark.sql.datasource import (
    DataSource,
    DataSourceArrowWriter,
    DataSourceReader,
    InputPartition,
    WriterCommitMessage,
)


class _PlainReader(DataSourceReader):
    def __init__(self, files):
        self.files = files

    def partitions(self):
        return [InputPartition(f) for f in self.files]

    def read(self, partition):
        import pyarrow.parquet as pq

        yield from pq.ParquetFile(partition.value).iter_batches(batch_size=1 << 20, use_threads=False)


class PlainParquetSource(DataSource):
    """spark.read.format("plainpq").schema(ddl).load(dir)"""

    @classmethod
    def name(cls):
        return "plainpq"

    def reader(self, schema):
        return _PlainReader(sorted(glob.glob(os.path.join(self.options["path"], "*.parquet"))))


class _NoopWriter(DataSourceArrowWriter):
    def write(self, iterator):
        for _ in iterator:
            pass
        return WriterCommitMessage()


class NoopArrowSource(DataSource):
    """df.write.format("noop_arrow").mode("append").save()"""

    @classmethod
    def name(cls):
        return "noop_arrow"

    def writer(self, schema, overwrite):
        return _NoopWriter()


def register(spark) -> None:
    import sys

    from pyspark import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    spark.dataSource.register(PlainParquetSource)
    spark.dataSource.register(NoopArrowSource)
