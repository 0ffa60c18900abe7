"""Shared fixtures: one local Spark session per test run, and the test tables.

Tests mirror the package (tests/protocol/, tests/log/, ..., tests/spark/). Every test that
needs a JVM carries the ``spark`` marker: the ones under tests/spark/ and the ones that
use the ``spark`` fixture. ``python -m pytest -m "not spark"`` runs the core without Java.
Every test that uses an object-store server fixture carries the ``objectstore`` marker:
``-m "not objectstore"`` runs without starting SeaweedFS, Azurite or fake-gcs-server."""

from __future__ import annotations

import os
import shutil
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "data")

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
os.environ.setdefault("TZ", "UTC")
# Every JVM of the run (the shared session's, and those the subprocess tests start: Spark
# Connect servers, spark-submit, local-cluster executors, Hive) compiles with C1 only and
# collects with the serial GC. On 2 cores the suite is CPU-bound (97% busy under -n 2) and
# C2 compilation in short-lived JVMs is a large part of it: -20% wall time measured on
# 139 tests (211 s -> 170 s). Semantics do not change; set JAVA_TOOL_OPTIONS to override.
os.environ.setdefault("JAVA_TOOL_OPTIONS", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")


def table_path(name: str) -> str:
    """Path of a test table, e.g. ``table_path("delta-rs/simple_table")``."""
    path = os.path.join(DATA, name)
    if not os.path.isdir(path):
        raise FileNotFoundError(f"test table {name} is not in tests/data")
    return path


# fixtures that start a local object-store server (below)
SERVER_FIXTURES = frozenset({"s3_server", "azure_server", "gcs_server", "object_store"})


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the xdist_group markers
def pytest_collection_modifyitems(config, items):
    spark_dir = os.path.join(HERE, "spark") + os.sep
    for item in items:
        fixtures = getattr(item, "fixturenames", ())
        if str(item.path).startswith(spark_dir) or "spark" in fixtures:
            item.add_marker(pytest.mark.spark)
        if SERVER_FIXTURES.intersection(fixtures):
            item.add_marker(pytest.mark.objectstore)
        group = _worker_group(item)
        if group:
            item.add_marker(pytest.mark.xdist_group(group))


def _worker_group(item) -> str | None:
    """Under ``pytest -n 2 --dist loadgroup``, tests that share an
    expensive fixture run on one worker: a module's own ``xdist_group`` mark, else every
    object-store test (the servers start once per worker) and the tests of a module with a
    module-scoped fixture; the rest spread test by test."""
    if item.get_closest_marker("xdist_group"):  # the module chose (tests/spark/test_deploy.py)
        return None
    if item.get_closest_marker("objectstore"):
        return "objectstore"
    info = getattr(item, "_fixtureinfo", None)
    defs = info.name2fixturedefs.values() if info is not None else ()
    if any(d[-1].scope == "module" for d in defs if d):
        return item.nodeid.split("::")[0]
    return None


# set when a test's call phase failed (fixtures that check a test's behaviour at teardown skip it then)
CALL_FAILED = pytest.StashKey[bool]()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    if report.when == "call" and report.failed:
        item.stash[CALL_FAILED] = True
    return report


def pytest_generate_tests(metafunc):
    if "dml_engine" in metafunc.fixturenames:
        # tests/dml_engines.py, imported by the test module: each DML engine
        from dml_engines import parametrize_engines

        parametrize_engines(metafunc)


@pytest.fixture
def copy_table(tmp_path):
    """Copies a test table to a temporary directory (for tests that modify it)."""

    def _copy(name: str) -> str:
        dest = tmp_path / name.replace("/", "__")
        shutil.copytree(table_path(name), dest)
        return str(dest)

    return _copy


@pytest.fixture(scope="session")
def spark(tmp_path_factory):
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[2]")
        # managed tables of this session (one per xdist worker) under its own temp dir, not ./spark-warehouse
        .config("spark.sql.warehouse.dir", str(tmp_path_factory.mktemp("spark-warehouse")))
        .appName("delta_pyds-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.driver.memory", "2g")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    import delta_pyds

    delta_pyds.register(session)
    yield session
    session.stop()


# ------------------------------------------------------------ object-store servers
# Local servers on 127.0.0.1 (tests/servers.py): SeaweedFS for S3, Azurite for Azure
# Blob, fake-gcs-server for GCS. Started once per session on first use; a missing
# server binary fails the tests that need it (never a skip).
import servers as _servers  # noqa: E402  (sets GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT early)

OBJECT_STORES = ("s3", "azure", "gcs")


def _server_fixture(kind):
    @pytest.fixture(scope="session")
    def _fixture():
        server = _servers.start_with_retries(kind)
        yield server
        server.stop()

    return _fixture


s3_server = _server_fixture("s3")
azure_server = _server_fixture("azure")
gcs_server = _server_fixture("gcs")


@pytest.fixture(scope="session", params=OBJECT_STORES)
def object_store(request):
    """Each object-store server in turn (s3, azure, gcs)."""
    return request.getfixturevalue(f"{request.param}_server")
