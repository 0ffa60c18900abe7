"""Deployment, as users do it, in one fresh virtual environment taken through the steps a
user's would go through (the module's tests run in file order on one pytest worker):

* ``pip install`` of the built wheel, then ``spark.read.format("pydelta")`` with no
  register call (Spark auto-registers the ``pyspark_pydelta`` module);
* Spark Connect (``SparkSession.builder.remote("local[2]")``) in that environment;
* ``spark-submit --master local-cluster[2,1,1024] --py-files delta_pyds.zip`` from that
  environment once delta_pyds is uninstalled from it (its dependencies stay), with the shipped
  ``spark-conf/spark-defaults.conf``: deletion vectors are applied in separate executor
  JVMs and Python workers; object-store credentials come from Spark conf
  (``spark.executorEnv.FSSPEC_S3_*``) instead of data source options.

Scripts run with a temporary directory as working directory, so the repository's
checkout is never importable by accident.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest
from conftest import table_path
from helpers import deltalake_table

# one worker runs the module in order: the venv's steps (plain install, the connect extra,
# delta_pyds uninstalled for --py-files) build on each other
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("deploy")]

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DV_TABLE = "delta-rs/table-with-dv-small"  # 10 rows, 2 deleted by a deletion vector at v1


def project_dependencies():
    """The [project] dependencies of pyproject.toml."""
    import tomllib

    with open(os.path.join(REPO, "pyproject.toml"), "rb") as f:
        return tomllib.load(f)["project"]["dependencies"]


def run(cmd, *, cwd, env=None, timeout=900):
    result = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    if result.returncode != 0:
        with open(os.path.join(cwd, "failed-command.log"), "w") as f:
            f.write(f"{cmd}\n--- stdout\n{result.stdout}\n--- stderr\n{result.stderr}")
        raise AssertionError(
            f"{' '.join(map(str, cmd))} failed ({result.returncode}):\n"
            f"--- stdout\n{result.stdout[-6000:]}\n--- stderr\n{result.stderr[-6000:]}"
        )
    return result


def make_venv(path, packages):
    run([sys.executable, "-m", "venv", str(path)], cwd=str(path.parent))
    python = str(path / "bin" / "python")
    env = dict(os.environ, PIP_DISABLE_PIP_VERSION_CHECK="1")
    run([python, "-m", "pip", "install", "-q", *packages], cwd=str(path.parent), env=env)
    return python


def clean_env(python, **extra):
    """The environment of a user's shell: no PYTHONPATH or Spark settings of ours."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PYSPARK", "SPARK_", "PYTHON", "VIRTUAL_ENV", "FSSPEC_"))
    }
    env["PATH"] = os.path.dirname(python) + os.pathsep + env.get("PATH", "")
    env["PYSPARK_PYTHON"] = python
    env["TZ"] = "UTC"
    env.update(extra)
    return env


def expected_values(version=None):
    return sorted(deltalake_table(table_path(DV_TABLE), version).column("value").to_pylist())


def deltalake_ids(path):
    """The ``id`` column of a table as deltalake reads it."""
    return deltalake_table(str(path)).column("id").to_pylist()


def last_json_line(stdout):
    for line in reversed(stdout.strip().splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    raise AssertionError(f"no result line in:\n{stdout[-3000:]}")


# --------------------------------------------------------------- wheel install


@pytest.fixture(scope="module")
def wheel_venv(tmp_path_factory):
    """A fresh venv with the project's wheel installed (only its own dependencies)."""
    root = tmp_path_factory.mktemp("wheel")
    # build from a copy of what the wheel is made of: pip builds in-tree, and the
    # checkout must not get build/ directories
    src = root / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(os.path.join(REPO, name), src / name)
    for name in ("delta_pyds", "pyspark_pydelta"):
        shutil.copytree(os.path.join(REPO, name), src / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    out = root / "dist"
    run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(out), str(src)],
        cwd=str(root),
        env=dict(os.environ, PIP_DISABLE_PIP_VERSION_CHECK="1"),
    )
    wheels = list(out.glob("delta_pyds-*.whl"))
    assert len(wheels) == 1, wheels
    python = make_venv(root / "venv", [str(wheels[0])])
    yield root, python, wheels[0]
    remove_in_background(root / "venv")  # ~900 MB


def remove_in_background(path):
    """Deletes a large directory without making the run wait for it."""
    subprocess.Popen(["rm", "-rf", str(path)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def installed(python, module):
    """Whether ``module`` imports in the venv of ``python`` (in a user's clean shell)."""
    check = subprocess.run(  # -I and cwd /: neither the checkout nor the working directory is importable
        [python, "-I", "-c", f"import {module}"], cwd="/", capture_output=True, env=clean_env(python)
    )
    return check.returncode == 0


PLAIN_INSTALL = textwrap.dedent("""
    import json, sys
    from importlib.util import find_spec
    import delta_pyds, pyspark_pydelta
    from pyspark.sql import SparkSession
    from delta_pyds import DeltaTable
    spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
             .config("spark.sql.shuffle.partitions", "2").getOrCreate())
    # reads, with no register call
    df = spark.read.format("pydelta").load(sys.argv[1])
    v0 = spark.read.format("pydelta").option("versionAsOf", 0).load(sys.argv[1])
    read = {
        "values": sorted(r.value for r in df.collect()),
        "v0": sorted(r.value for r in v0.collect()),
        "filtered": df.where("value > 4").count(),
        "module": delta_pyds.__file__,
        "has_default_source": hasattr(pyspark_pydelta, "DefaultSource"),
    }
    # writes, DML and OPTIMIZE
    path = sys.argv[2]
    ids = lambda: sorted(r.id for r in spark.read.format("pydelta").load(path).collect())
    out = {}
    spark.range(10).selectExpr("id", "cast(id % 2 as int) p", "'x' s").repartition(3) \\
        .write.format("pydelta").mode("append").save(path)
    out["written"] = ids()
    t = DeltaTable.forPath(spark, path)
    t.delete("id < 2")
    out["deleted"] = ids()
    t.update("id = 5", {"s": "'updated'"})
    out["updated"] = sorted(r.s for r in t.toDF().where("id = 5").collect())
    src = spark.createDataFrame([(3, 1, "merged"), (42, 0, "new")], "id long, p int, s string")
    (t.alias("t").merge(src.alias("s"), "t.id = s.id").whenMatchedUpdateAll()
     .whenNotMatchedInsertAll().execute())
    out["merged"] = sorted((r.id, r.s) for r in t.toDF().where("s <> 'x'").collect())
    t.optimize().executeCompaction()
    out["optimized"] = ids()
    out["operations"] = [r.operation for r in t.history().collect()]
    out["not_installed"] = [d for d in ("grpcio", "deltalake", "pytest") if not find_spec(d)]
    import pandas
    out["pandas"] = pandas.__version__
    print(json.dumps({"read": read, "dml": out}))
    spark.stop()
""")


@pytest.fixture(scope="module")
def plain_install(wheel_venv):
    """One Spark application in the venv of the plain install (no extras): its reads with
    no register call and its DML (one JVM for both tests)."""
    root, python, _ = wheel_venv
    assert not installed(python, "grpc"), "the connect extra must come after the plain-install checks"
    script = root / "plain.py"
    script.write_text(PLAIN_INSTALL)
    target = root / "dml-table"
    result = run([python, str(script), table_path(DV_TABLE), str(target)], cwd=str(root), env=clean_env(python))
    return last_json_line(result.stdout), result.stderr, target


def test_pip_install_reads_with_no_register_call(wheel_venv, plain_install):
    root = wheel_venv[0]
    got = plain_install[0]["read"]
    assert got["values"] == expected_values()
    assert got["v0"] == expected_values(0)
    assert got["filtered"] == sum(1 for v in expected_values() if v > 4)
    assert got["module"].startswith(str(root / "venv")), got["module"]  # the wheel, not the checkout
    assert got["has_default_source"]


def test_pip_install_without_extras_runs_dml_and_optimize(plain_install):
    """``pip install delta_pyds`` with no extras has everything delete/update/merge/
    optimize need at run time (pyspark's mapInArrow/applyInArrow import pandas)."""
    results, stderr, target = plain_install
    got = results["dml"]
    # no extra in the venv (test_spark_connect_reads adds the connect one later)
    assert got["not_installed"] == ["grpcio", "deltalake", "pytest"]
    assert got["written"] == list(range(10))
    assert got["deleted"] == list(range(2, 10))
    assert got["updated"] == ["updated"]
    assert got["merged"] == [[3, "merged"], [5, "updated"], [42, "new"]]
    assert got["optimized"] == list(range(2, 10)) + [42]
    assert got["operations"][:4] == ["OPTIMIZE", "MERGE", "UPDATE", "DELETE"]
    assert sorted(deltalake_ids(target)) == list(range(2, 10)) + [42]
    # a plain install resolves a pandas pyspark supports (it warns on pandas >= 3)
    assert int(got["pandas"].split(".")[0]) == 2, got["pandas"]
    assert "does not yet fully support pandas" not in stderr


CONNECT = textwrap.dedent("""
    import json, sys
    from pyspark.sql import SparkSession
    spark = (SparkSession.builder.remote("local[2]").config("spark.ui.enabled", "false")
             .getOrCreate())
    assert type(spark).__module__.startswith("pyspark.sql.connect"), type(spark)
    path = sys.argv[1]
    df = spark.read.format("pydelta").load(path)                   # auto-registered
    v0 = spark.read.format("pydelta").option("versionAsOf", 0).load(path)
    spark.sql(f"CREATE TEMPORARY VIEW t USING pydelta OPTIONS (path '{path}')")
    out = {
        "values": sorted(r.value for r in df.collect()),
        "v0": sorted(r.value for r in v0.collect()),
        "sql": spark.sql("SELECT count(*) AS n FROM t WHERE value > 4").collect()[0].n,
    }
    import delta_pyds                                              # explicit registration
    delta_pyds.register(spark)
    out["pushdown"] = spark.conf.get("spark.sql.python.filterPushdown.enabled")
    out["registered_filtered"] = spark.read.format("pydelta").load(path).where("value > 4").count()
    # writes from the Connect client: create (partitioned), append, overwrite, SQL insert
    target = sys.argv[2]
    rows = spark.range(6).selectExpr("id", "cast(id % 2 as int) p")
    rows.write.format("pydelta").option("partitionBy", "p").mode("append").save(target)
    spark.range(6, 8).selectExpr("id", "cast(id % 2 as int) p").write.format("pydelta") \
        .mode("append").save(target)
    out["written"] = sorted(r.id for r in spark.read.format("pydelta").load(target).collect())
    spark.sql(f"CREATE TEMPORARY VIEW w USING pydelta OPTIONS (path '{target}')")
    spark.sql("INSERT INTO w SELECT 100L, 0")
    spark.range(3).selectExpr("id", "0 p").write.format("pydelta") \
        .option("partitionOverwriteMode", "static").mode("overwrite").save(target)
    out["overwritten"] = sorted(r.id for r in spark.read.format("pydelta").load(target).collect())
    out["v2"] = sorted(r.id for r in spark.read.format("pydelta").option("versionAsOf", 2)
                       .load(target).collect())
    print(json.dumps(out))
    spark.stop()
""")


def test_spark_connect_reads(wheel_venv, plain_install):
    root, python, wheel = wheel_venv  # after the plain-install checks (plain_install), as a user adds an extra
    # the Connect client: pip install 'delta_pyds[connect]' (pyspark's own connect extra)
    run(
        [python, "-m", "pip", "install", "-q", f"{wheel}[connect]"],
        cwd=str(root),
        env=dict(os.environ, PIP_DISABLE_PIP_VERSION_CHECK="1"),
    )
    script = root / "connect.py"
    script.write_text(CONNECT)
    # SPARK_TESTING makes the local Connect server take an ephemeral port (not 15002)
    target = root / "connect-written"
    result = run(
        [python, str(script), table_path(DV_TABLE), str(target)],
        cwd=str(root),
        env=clean_env(python, SPARK_TESTING="1"),
    )
    got = last_json_line(result.stdout)
    assert got["values"] == expected_values()
    assert got["v0"] == expected_values(0)
    assert got["sql"] == sum(1 for v in expected_values() if v > 4)
    assert got["pushdown"] == "true"
    assert got["registered_filtered"] == got["sql"]
    assert got["written"] == list(range(8))
    assert got["v2"] == list(range(8)) + [100]  # the SQL insert through the view
    assert got["overwritten"] == [0, 1, 2]
    assert sorted(deltalake_ids(target)) == [0, 1, 2]


# --------------------------------------------------- spark-submit --py-files

SUBMIT_JOB = textwrap.dedent("""
    import json, sys
    from pyspark.sql import SparkSession
    import delta_pyds                       # from --py-files delta_pyds.zip
    spark = SparkSession.builder.getOrCreate()
    delta_pyds.register(spark)
    sc = spark.sparkContext
    out = {
        "master": sc.master,
        "module": delta_pyds.__file__,
        "executors": sc._jsc.sc().getExecutorMemoryStatus().size() - 1,
        "pushdown": spark.conf.get("spark.sql.python.filterPushdown.enabled"),
        "pyfiles_on_executors": sc.parallelize(range(2), 2).map(
            lambda _: __import__("delta_pyds").__file__).collect(),
    }
    df = spark.read.format("pydelta").load(sys.argv[1])
    out["values"] = sorted(r.value for r in df.collect())
    out["filtered"] = df.where("value > 4").count()
    if len(sys.argv) > 2:                   # credentials from spark conf / environment only
        remote = spark.read.format("pydelta").load(sys.argv[2])
        out["remote_values"] = sorted(r.value for r in remote.collect())
    # writes: data files on the executors, the commit on the driver; local disk and S3
    for key, target in (("local", sys.argv[3]), ("remote", sys.argv[4])):
        df = spark.range(0, 1000, numPartitions=4).selectExpr("id", "cast(id % 4 as int) p")
        df.write.format("pydelta").option("partitionBy", "p").mode("append").save(target)
        spark.range(1000, 1010).selectExpr("id", "cast(id % 4 as int) p").write.format("pydelta") \
            .mode("append").save(target)
        back = spark.read.format("pydelta").load(target)
        out[key + "_written"] = [back.count(), back.agg({"id": "sum"}).collect()[0][0]]
    print(json.dumps(out))
    spark.stop()
""")


@pytest.fixture(scope="module")
def deps_venv(wheel_venv):
    """The venv with delta_pyds uninstalled (its dependencies stay) and s3fs added: the
    environment of a cluster that has the dependencies but not delta_pyds."""
    root, python, _ = wheel_venv
    env = dict(os.environ, PIP_DISABLE_PIP_VERSION_CHECK="1")
    run([python, "-m", "pip", "uninstall", "-q", "-y", "delta_pyds"], cwd=str(root), env=env)
    run([python, "-m", "pip", "install", "-q", "s3fs>=2025.2.0"], cwd=str(root), env=env)
    # in the user's environment (clean_env): a PYTHONPATH naming the checkout would import it
    assert not installed(python, "delta_pyds"), "delta_pyds must not be installed in this venv"
    assert installed(python, "pyroaring") and installed(python, "pyspark")
    return root, python


def test_spark_submit_py_files_local_cluster(deps_venv, s3_server):
    root, python = deps_venv
    # the documented command that builds the zip
    zip_path = root / "delta_pyds.zip"
    run([sys.executable, "-m", "delta_pyds.tools.package", "-o", str(zip_path)], cwd=str(root))
    job = root / "job.py"
    job.write_text(SUBMIT_JOB)
    remote = s3_server.upload_dir(table_path(DV_TABLE), "submit/table-with-dv-small")
    opts = s3_server.options
    env = clean_env(
        python,  # the driver's own Python workers read these
        FSSPEC_S3_KEY=opts["key"],
        FSSPEC_S3_SECRET=opts["secret"],
        FSSPEC_S3_ENDPOINT_URL=opts["endpoint_url"],
    )
    submit = os.path.join(os.path.dirname(python), "spark-submit")
    cmd = [
        submit,
        "--master",
        "local-cluster[2,1,1024]",
        "--properties-file",
        os.path.join(REPO, "spark-conf", "spark-defaults.conf"),
        "--conf",
        f"spark.pyspark.python={python}",
        "--conf",
        "spark.ui.enabled=false",
        "--conf",
        f"spark.executorEnv.FSSPEC_S3_KEY={opts['key']}",
        "--conf",
        f"spark.executorEnv.FSSPEC_S3_SECRET={opts['secret']}",
        "--conf",
        f"spark.executorEnv.FSSPEC_S3_ENDPOINT_URL={opts['endpoint_url']}",
        "--py-files",
        str(zip_path),
        str(job),
        table_path(DV_TABLE),
        remote,
        str(root / "submit-written"),
        s3_server.url("submit/written"),
    ]
    result = run(cmd, cwd=str(root), env=env, timeout=900)
    got = last_json_line(result.stdout)
    assert got["master"] == "local-cluster[2,1,1024]"
    assert got["executors"] == 2
    assert got["pushdown"] == "true"
    assert (
        got["module"].endswith(os.path.join("delta_pyds.zip", "delta_pyds", "__init__.py"))
        or "delta_pyds.zip" in got["module"]
    ), got["module"]
    assert all("delta_pyds.zip" in m for m in got["pyfiles_on_executors"]), got["pyfiles_on_executors"]
    assert got["values"] == expected_values()
    assert got["filtered"] == sum(1 for v in expected_values() if v > 4)
    assert got["remote_values"] == expected_values()
    expected_written = [1010, sum(range(1010))]
    assert got["local_written"] == expected_written and got["remote_written"] == expected_written
    assert sorted(deltalake_ids(root / "submit-written")) == list(range(1010))
    files = [
        n
        for d in os.listdir(root / "submit-written")
        if d.startswith("p=")
        for n in os.listdir(root / "submit-written" / d)
    ]
    assert len(files) >= 4  # written by the tasks on the executors, one per partition value
    assert opts["secret"] not in result.stdout


def test_package_zip_contents(tmp_path):
    import zipfile

    from delta_pyds.tools.package import build_zip

    first = build_zip(str(tmp_path / "a.zip"))
    second = build_zip(str(tmp_path / "b.zip"))
    names = zipfile.ZipFile(first).namelist()
    assert "delta_pyds/__init__.py" in names and "delta_pyds/spark/datasource/source.py" in names
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]
    assert open(first, "rb").read() == open(second, "rb").read()  # reproducible
