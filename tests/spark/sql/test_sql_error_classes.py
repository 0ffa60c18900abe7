"""Schema-change errors carry delta-spark's error-class names (delta-error-classes.json), through
delta_pyds.sql and the Python API alike, and commit nothing."""

from __future__ import annotations

import pytest

import delta_pyds
from delta_pyds import ColumnNotFoundError, ConstraintViolationError, DeltaTable, SchemaChangeError
from tests.helpers import table_version


def test_schema_change_errors_name_delta_spark_error_classes(spark, tmp_path):
    p = str(tmp_path / "t")
    delta_pyds.write_delta(spark.createDataFrame([(1, None), (2, "b")], "id long, name string"), p)
    t = f"delta.`{p}`"
    before = table_version(p)
    cases = [
        (f"ALTER TABLE {t} RENAME COLUMN name TO n", SchemaChangeError, "DELTA_UNSUPPORTED_RENAME_COLUMN"),
        (f"ALTER TABLE {t} DROP COLUMN name", SchemaChangeError, "DELTA_UNSUPPORTED_DROP_COLUMN"),
        (f"ALTER TABLE {t} ADD COLUMNS (name STRING)", SchemaChangeError, "DELTA_DUPLICATE_COLUMNS_FOUND"),
        (f"ALTER TABLE {t} ADD COLUMNS (id.x INT)", SchemaChangeError, "DELTA_ADD_COLUMN_PARENT_NOT_STRUCT"),
        (
            f"ALTER TABLE {t} ALTER COLUMN id TYPE STRING",
            SchemaChangeError,
            "DELTA_UNSUPPORTED_ALTER_TABLE_CHANGE_COL_OP",
        ),
        (f"ALTER TABLE {t} ALTER COLUMN name SET NOT NULL", ConstraintViolationError, "DELTA_NEW_NOT_NULL_VIOLATION"),
        (f"ALTER TABLE {t} ALTER COLUMN nope COMMENT 'c'", ColumnNotFoundError, "DELTA_COLUMN_NOT_FOUND_IN_SCHEMA"),
        (
            f"ALTER TABLE {t} ADD CONSTRAINT c CHECK (id > 1)",
            ConstraintViolationError,
            "DELTA_NEW_CHECK_CONSTRAINT_VIOLATION",
        ),
    ]
    for statement, error, name in cases:
        with pytest.raises(error, match=rf"^\[{name}\] "):
            delta_pyds.sql(spark, statement)
    dt = DeltaTable.forPath(spark, p)
    with pytest.raises(SchemaChangeError, match=r"^\[DELTA_UNSUPPORTED_RENAME_COLUMN\] "):
        dt.renameColumn("name", "n")
    with pytest.raises(ConstraintViolationError, match=r"^\[DELTA_NEW_NOT_NULL_VIOLATION\] "):
        dt.alterColumn("name", nullable=False)
    assert table_version(p) == before
