"""Unknown keyword arguments and options (#24 item 12): ``read_delta`` / ``write_delta``
refuse a keyword no part of pydelta reads, naming the closest valid one; a
``format("pydelta")`` ``.option`` key that nothing reads is warned about once."""

from __future__ import annotations

import pathlib
import re
import warnings

import pyarrow as pa
import pytest

import delta_pyds
from delta_pyds import UnknownArgumentError, read_delta, write_delta
from delta_pyds.spark.datasource.source import DeltaDataSource
from delta_pyds.write import option_names
from delta_pyds.write.option_names import READ_NAMES, WRITE_NAMES, UnknownOptionWarning
from delta_pyds.write.plan import commit_arrow


def _two_versions(path):
    commit_arrow(path, pa.table({"id": pa.array([0], pa.int64())}))
    commit_arrow(path, pa.table({"id": pa.array([1], pa.int64())}))
    return path


def test_read_delta_refuses_a_misspelled_keyword_naming_the_closest(spark, tmp_path):
    path = _two_versions(str(tmp_path / "t"))
    with pytest.raises(UnknownArgumentError, match=r"'verisonAsOf'.*did you mean 'versionAsOf'") as e:
        read_delta(spark, path, verisonAsOf=0)
    assert isinstance(e.value, TypeError)
    with pytest.raises(UnknownArgumentError, match="'wehre'"):
        read_delta(spark, path, wehre="id = 0")
    # valid spellings, any case, and storage.* keys still work
    assert [r.id for r in read_delta(spark, path, versionAsOf=0).collect()] == [0]
    assert [r.id for r in read_delta(spark, path, VERSIONASOF=0, **{"storage.anon": "x"}).collect()] == [0]


def test_write_delta_refuses_a_misspelled_keyword(spark, tmp_path):
    path = str(tmp_path / "w")
    df = spark.range(3)
    with pytest.raises(UnknownArgumentError, match=r"'mergeSchma'.*did you mean 'mergeSchema'"):
        write_delta(df, path, mergeSchma=True)
    with pytest.raises(UnknownArgumentError, match=r"'replace_where'.*'replaceWhere'"):
        write_delta(df, path, mode="overwrite", replace_where="id > 1")
    assert not (tmp_path / "w" / "_delta_log").exists()  # nothing was written
    write_delta(df, path, userMetadata="m", **{"delta.appendOnly": "false"})
    assert sorted(r.id for r in read_delta(spark, path).collect()) == [0, 1, 2]


def test_datasource_warns_once_per_unknown_option_key(tmp_path):
    path = _two_versions(str(tmp_path / "t"))
    option_names._warned.clear()
    with pytest.warns(UnknownOptionWarning, match=r"'verisonasof'.*did you mean 'versionAsOf'"):
        DeltaDataSource({"path": path, "verisonasof": "0"}).schema()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the same key again: no second warning
        DeltaDataSource({"path": path, "verisonasof": "0"}).schema()
        DeltaDataSource({"path": path, "versionasof": "0", "storage.x": "1"}).schema()
    with pytest.warns(UnknownOptionWarning, match="'partitonby'"):
        try:
            DeltaDataSource({"path": path, "partitonby": "id"}).writer(
                __import__("pyspark.sql.types", fromlist=["StructType"]).StructType.fromJson(
                    {"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": True, "metadata": {}}]}
                ),
                False,
            )
        except Exception:  # only the warning is under test here
            pass


def test_every_option_the_code_reads_is_a_known_name():
    """Every ``get_option(..., "name")``-style lookup in the package names a key in
    READ_NAMES or WRITE_NAMES, so the unknown-key check cannot flag an option that works."""
    root = pathlib.Path(delta_pyds.__file__).parent
    pattern = re.compile(r"(?:get_option|int_option|_bool_option|_bytes_option|_bool)\(\s*\w+,\s*\"([A-Za-z.]+)\"")
    read = set()
    for source in root.rglob("*.py"):
        read |= set(pattern.findall(source.read_text(encoding="utf-8")))
    assert len(read) > 30
    unknown = sorted(n for n in read if n.lower() not in READ_NAMES and n.lower() not in WRITE_NAMES)
    assert unknown == []


def test_safe_where_allows_only_columns_literals_and_functions(spark, tmp_path):
    """#24 item 9: ``where=`` is full Spark SQL (trusted); ``safe_where=`` parses with the
    package's SQL subset and refuses reflect(), subqueries and file reads."""
    from delta_pyds import ColumnNotFoundError, ExpressionError

    path = str(tmp_path / "s")
    commit_arrow(path, pa.table({"id": pa.array(range(10), pa.int64()), "s": pa.array([f"v{i}" for i in range(10)])}))
    secret = tmp_path / "secret.txt"
    secret.write_text("leak\n")
    got = read_delta(spark, path, safe_where="id >= 7 AND upper(s) <> 'V9' OR s = 'v1'")
    assert sorted(r.id for r in got.collect()) == [1, 7, 8]
    hostile = [
        "reflect('java.lang.Thread', 'sleep', CAST(1 AS BIGINT)) IS NULL",
        "java_method('java.lang.System', 'getenv', 'HOME') IS NOT NULL",
        f"id IN (SELECT length(value) FROM text.`{secret}`)",
        f"EXISTS (SELECT * FROM text.`{secret}`)",
        "rand() > 0.5",
        "id = 1; DROP TABLE x",
    ]
    for text in hostile:
        with pytest.raises(ExpressionError):
            read_delta(spark, path, safe_where=text)
    with pytest.raises(ColumnNotFoundError, match="nope"):
        read_delta(spark, path, safe_where="nope = 1")
    with pytest.raises(ValueError, match="not both"):
        read_delta(spark, path, where="id = 1", safe_where="id = 1")
    # the trusted form still runs Spark SQL, subqueries included
    trusted = read_delta(spark, path, where=f"id IN (SELECT length(value) FROM text.`{secret}`)")
    assert [r.id for r in trusted.collect()] == [4]
