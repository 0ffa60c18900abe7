"""The fixtures that run a DML test twice: on Spark's own Parquet reader and writer (``native``,
the default) and on the Python-worker fallback (``python``), chosen with the session conf
``spark.pydelta.dml.engine`` (``native`` raises instead of falling back, so a test of the
native engine cannot pass on the fallback by accident). ``dml_engine`` applies to every test
of a module that imports it (``from dml_engines import dml_engine``); ``each_dml_engine`` to
the tests that ask for it (``@pytest.mark.usefixtures("each_dml_engine")``)."""

from __future__ import annotations

import pytest

from delta_pyds.spark.tables.native_rows import DML_ENGINE_CONF

ENGINES = ["native", "python"]


def _with_engine(request):
    if "spark" not in request.fixturenames:
        yield None
        return
    spark = request.getfixturevalue("spark")
    spark.conf.set(DML_ENGINE_CONF, request.param)
    try:
        yield request.param
    finally:
        spark.conf.unset(DML_ENGINE_CONF)


@pytest.fixture(autouse=True, params=ENGINES)
def dml_engine(request):
    yield from _with_engine(request)


@pytest.fixture(params=ENGINES)
def each_dml_engine(request):
    yield from _with_engine(request)
