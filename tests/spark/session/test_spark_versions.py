"""The differences between the supported pyspark versions (delta_pyds.spark.session.compat), checked on
whichever pyspark runs the tests: CI runs this module on the newest pyspark, the lowest 4.1.x
and the newest 4.2.x (.ci/matrix)."""

from __future__ import annotations

import pyarrow as pa
import pyspark
import pytest
from helpers import write_ids
from pyspark.sql.types import (
    ArrayType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
    TimestampNTZType,
    TimestampType,
)

from delta_pyds.errors import UnsupportedSparkVersionError
from delta_pyds.spark.session import compat


def test_arrow_schema_has_utc_timestamps_and_small_types():
    schema = StructType(
        [
            StructField("t", TimestampType()),
            StructField("ntz", TimestampNTZType()),
            StructField("s", StringType(), False),
            StructField("a", ArrayType(TimestampType())),
            StructField("m", MapType(StringType(), StructType([StructField("x", LongType())]))),
        ]
    )
    got = compat.arrow_schema(schema)
    assert got == pa.schema(
        [
            pa.field("t", pa.timestamp("us", tz="UTC")),
            pa.field("ntz", pa.timestamp("us")),
            pa.field("s", pa.string(), nullable=False),
            pa.field("a", pa.list_(pa.timestamp("us", tz="UTC"))),
            pa.field("m", pa.map_(pa.string(), pa.struct([pa.field("x", pa.int64())]))),
        ]
    )


def test_the_running_version_is_known():
    assert compat.PYSPARK_VERSION == tuple(int(p) for p in pyspark.__version__.split(".")[:2])
    assert compat.PYSPARK_VERSION >= compat.MIN_PYSPARK
    assert compat.STREAM_ADMISSION == (compat.PYSPARK_VERSION >= (4, 2))


@pytest.mark.parametrize("version", ["4.0.5", "3.5.3", "4.0.0.dev2"])
def test_older_pyspark_is_refused_by_name(version):
    with pytest.raises(UnsupportedSparkVersionError, match=rf"needs pyspark 4\.1 or later .*pyspark {version}"):
        compat.check_supported(version)


@pytest.mark.parametrize("version", ["4.1.0", "4.2.1", "4.3.0", "5.0.0.dev1"])
def test_supported_pyspark_passes(version):
    compat.check_supported(version)


def _memory_stream(spark, path, name, **options):
    reader = spark.readStream.format("pydelta")
    for k, v in options.items():
        reader = reader.option(k, v)
    query = reader.load(path).writeStream.format("memory").queryName(name).trigger(availableNow=True).start()
    query.awaitTermination()
    return [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]]


def test_streaming_read_on_every_version(spark, tmp_path):
    """4.2+: read limits per batch; 4.1: one batch of all available, and the limits refused by name."""
    path = str(tmp_path / "t")
    for k in range(3):
        write_ids(path, list(range(10 * k, 10 * k + 10)))  # one 10-row file per commit
    assert _memory_stream(spark, path, "versions_all") == [30]
    assert sorted(r.id for r in spark.sql("select id from versions_all").collect()) == list(range(30))
    if compat.STREAM_ADMISSION:
        assert _memory_stream(spark, path, "versions_limited", maxFilesPerTrigger="1") == [10, 10, 10]
    else:
        with pytest.raises(Exception, match=r"maxFilesPerTrigger / maxBytesPerTrigger needs pyspark 4\.2"):
            _memory_stream(spark, path, "versions_limited", maxFilesPerTrigger="1")


def test_latest_offset_without_arguments_reads_all_available(tmp_path):
    """pyspark 4.1 calls ``latestOffset()`` with no arguments: the end of all available data,
    the same offset 4.2+ get for ``ReadAllAvailable`` (run in-process on every version)."""
    from delta_pyds.spark.datasource.source import DeltaDataSource
    from delta_pyds.spark.datasource.stream_reader import stream_reader

    path = str(tmp_path / "t")
    for k in range(3):
        write_ids(path, list(range(10 * k, 10 * k + 10)))
    source = DeltaDataSource({"path": path})
    reader = stream_reader(source, source.schema())
    start = reader.initialOffset()
    end = reader.latestOffset()
    assert end == reader.latestOffset(start, compat.ReadAllAvailable())
    assert reader.latestOffset(start, compat.ReadMaxFiles(1)) != end
    ids = sorted(i for p in reader.partitions(start, end) for b in reader.read(p) for i in b.column("id").to_pylist())
    assert ids == list(range(30))
    write_ids(path, [30, 31])  # a later commit: the next batch's end moves past it
    later = reader.latestOffset()
    ids = sorted(i for p in reader.partitions(end, later) for b in reader.read(p) for i in b.column("id").to_pylist())
    assert ids == [30, 31]
