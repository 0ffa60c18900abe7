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


def table_path(name: str) -> str:
    """Path of a test table, e.g. ``table_path("delta-rs/simple_table")``."""
    path = os.path.join(DATA, name)
    if not os.path.isdir(path):
        raise FileNotFoundError(f"test table {name} is not in tests/data")
    return path


# fixtures that start a local object-store server (below)
SERVER_FIXTURES = frozenset({"s3_server", "azure_server", "gcs_server", "object_store"})


def pytest_collection_modifyitems(config, items):
    spark_dir = os.path.join(HERE, "spark") + os.sep
    for item in items:
        fixtures = getattr(item, "fixturenames", ())
        if str(item.path).startswith(spark_dir) or "spark" in fixtures:
            item.add_marker(pytest.mark.spark)
        if SERVER_FIXTURES.intersection(fixtures):
            item.add_marker(pytest.mark.objectstore)


@pytest.fixture
def copy_table(tmp_path):
    """Copies a test table to a temporary directory (for tests that modify it)."""

    def _copy(name: str) -> str:
        dest = tmp_path / name.replace("/", "__")
        shutil.copytree(table_path(name), dest)
        return str(dest)

    return _copy


@pytest.fixture(scope="session")
def spark():
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[2]")
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
        server = _servers.STARTERS[kind]()
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
