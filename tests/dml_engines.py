"""The fixtures that run a DML test twice: on Spark's own Parquet reader and writer (``native``,
the default) and on the Python-worker fallback (``python``), chosen with the session conf
``spark.pydelta.dml.engine`` (``native`` raises instead of falling back, so a test of the
native engine cannot pass on the fallback by accident). ``dml_engine`` applies to every Spark
test of a module that imports it (``from dml_engines import dml_engine``); ``each_dml_engine``
to the tests that ask for it (``@pytest.mark.usefixtures("each_dml_engine")``).

Only a test whose result depends on the engine runs twice. A test that never reads the conf
(no DML row scan or rewrite: history, RESTORE, argument checks, reads) carries the
``engine_independent`` marker (on the test, or ``pytestmark`` for a module) and runs once with
the conf unset. Both are checked, by counting the calls of
:func:`delta_pyds.spark.native.engine.dml_engine` (the one reader of the conf) during the
test: a test run on each engine that never read it fails ("mark it engine_independent"), and
so does a test marked ``engine_independent`` that read it. Tests without the ``spark`` fixture
run once. ``pytest_generate_tests`` (``tests/conftest.py``) calls :func:`parametrize_engines`.

``PYDELTA_TEST_DML_ENGINES`` (space-separated, default ``native python``) narrows the engines:
``.ci/matrix`` runs the other pyspark versions on ``native`` only (the fallback's pyspark
interface, ``mapInArrow``, is also what the native engine's row marks run on every version)."""

from __future__ import annotations

import os

import pytest
from conftest import CALL_FAILED

from delta_pyds.spark.native import engine as row_engine
from delta_pyds.spark.session.conf import DML_ENGINE_CONF

ENGINES = os.environ.get("PYDELTA_TEST_DML_ENGINES", "native python").split()
if not ENGINES or set(ENGINES) - {"native", "python"}:
    raise ValueError(f"PYDELTA_TEST_DML_ENGINES: expected native and/or python, got {ENGINES}")
INDEPENDENT = "engine_independent"


def parametrize_engines(metafunc) -> None:
    """Runs a Spark test that uses ``dml_engine`` on each engine, unless marked
    ``engine_independent``."""
    if "dml_engine" not in metafunc.fixturenames or "spark" not in metafunc.fixturenames:
        return
    if metafunc.definition.get_closest_marker(INDEPENDENT) is not None:
        return
    metafunc.parametrize("dml_engine", ENGINES, indirect=True)


class _EngineReads:
    """Counts the calls of ``row_engine.dml_engine`` while installed (it calls the real one)."""

    def __init__(self) -> None:
        self.count = 0
        self._real = row_engine.dml_engine

    def __call__(self, spark):
        self.count += 1
        return self._real(spark)

    def __enter__(self) -> _EngineReads:
        row_engine.dml_engine = self
        return self

    def __exit__(self, *exc) -> None:
        row_engine.dml_engine = self._real


def _with_engine(request):
    if "spark" not in request.fixturenames:
        yield None
        return
    engine = getattr(request, "param", None)
    spark = request.getfixturevalue("spark")
    if engine is not None:
        spark.conf.set(DML_ENGINE_CONF, engine)
    try:
        with _EngineReads() as reads:
            yield engine
    finally:
        if engine is not None:
            spark.conf.unset(DML_ENGINE_CONF)
    if request.node.stash.get(CALL_FAILED, False):
        return
    if engine is None and reads.count:
        pytest.fail(f"{request.node.nodeid} is marked {INDEPENDENT} but read {DML_ENGINE_CONF}: remove the marker")
    if engine is not None and not reads.count:
        pytest.fail(
            f"{request.node.nodeid} never read {DML_ENGINE_CONF}: its result does not depend on the DML "
            f"engine, mark it @pytest.mark.{INDEPENDENT} so it runs once"
        )


@pytest.fixture(autouse=True)
def dml_engine(request):
    yield from _with_engine(request)


@pytest.fixture(params=ENGINES)
def each_dml_engine(request):
    yield from _with_engine(request)
