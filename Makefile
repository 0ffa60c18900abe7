# One task runner for the checks CI runs (.ci/run, .ci/checks). Use the project's venv:
#   python3 -m venv .venv && . .venv/bin/activate && pip install -e '.[test]'
# then `make quick` (the inner loop), `make test`, `make matrix` (other pyspark versions), `make lint`, `make docs`, `make bench`. Variables: TESTS (what pytest
# runs, e.g. make test TESTS=tests/protocol), PYTEST_ARGS (e.g. PYTEST_ARGS="-m 'not spark'"),
# BENCH (bench/run.py's modes and options).

PYTHON ?= python
TESTS ?= tests
PYTEST_ARGS ?=
# XDIST="-n 2 --dist loadgroup": two pytest workers, each with its own Spark session (tests/conftest.py groups)
XDIST ?= -n 2 --dist loadgroup
BENCH ?= full narrow selective dv plan write --reps 3

.PHONY: quick test matrix lint docs bench check

quick:  ## the inner loop: core tests only (no JVM, no object-store servers, nothing marked slow)
	$(PYTHON) -m pytest -q -p no:cacheprovider -m "not spark and not objectstore and not slow" $(PYTEST_ARGS) $(TESTS)

test:  ## the test suite (.ci/run's pytest command; XDIST="-n 2 --dist loadgroup" for two workers)
	$(PYTHON) -m pytest -q -p no:cacheprovider $(XDIST) $(PYTEST_ARGS) $(TESTS)

matrix:  ## the Spark-facing tests on the lowest pyspark 4.1.x and the newest 4.2.x, a venv each (.ci/matrix; MATRIX_VERSIONS, MATRIX_TESTS)
	bash .ci/matrix

lint:  ## the static checks of .ci/checks: ruff, ruff format, mypy, import contracts
	ruff check .
	ruff format --check .
	mypy
	lint-imports

docs:  ## the documentation site, as CI builds it (warnings fail)
	NO_MKDOCS_2_WARNING=1 mkdocs build --strict --quiet -d "$$(mktemp -d)"

bench:  ## benchmarks (needs the bench extra); results in bench/results/, page in docs/benchmarks.md
	TZ=UTC PYSPARK_PYTHON="$$(command -v $(PYTHON))" $(PYTHON) bench/run.py $(BENCH)
	$(PYTHON) bench/report.py

check: lint docs  ## everything .ci/checks runs
