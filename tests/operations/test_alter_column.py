"""ALTER COLUMN without Spark (delta_pyds.operations.schema_changes): type widening and
SET NOT NULL, checked against the log and deltalake."""

from __future__ import annotations

import deltalake
import pyarrow as pa
import pytest

from delta_pyds.errors import ConstraintViolationError, SchemaChangeError
from delta_pyds.operations.schema_changes import alter_column
from delta_pyds.table.snapshot import Snapshot
from delta_pyds.write.plan import commit_arrow


def _table(path: str, widening: bool) -> None:
    data = pa.table({"id": pa.array([1, 2], pa.int32()), "p": pa.array([1, 2], pa.int32()), "s": [None, "x"]})
    options = {"partitionBy": "p", **({"delta.enableTypeWidening": "true"} if widening else {})}
    commit_arrow(path, data, options=options)


def test_alter_column_type_widening_rules(tmp_path):
    off, on = str(tmp_path / "off"), str(tmp_path / "on")
    _table(off, widening=False)
    _table(on, widening=True)
    with pytest.raises(SchemaChangeError, match="type widening is not enabled"):
        alter_column(off, "id", data_type="long")
    with pytest.raises(SchemaChangeError, match="not a type widening Delta supports"):
        alter_column(on, "id", data_type="short")
    with pytest.raises(SchemaChangeError, match="is a partition column"):
        alter_column(on, "p", data_type="long")
    assert Snapshot.load(on).version == 0  # nothing committed
    version = alter_column(on, "id", data_type="long", comment="widened")
    field = Snapshot.load(on).schema.fields[0]
    assert (version, field.type.simple_string(), field.metadata["comment"]) == (1, "long", "widened")
    assert field.metadata["delta.typeChanges"] == [{"fromType": "integer", "toType": "long"}]
    assert alter_column(on, "id", data_type="long") == 2  # the same type: no type change recorded
    assert Snapshot.load(on).schema.fields[0].metadata["delta.typeChanges"] == [
        {"fromType": "integer", "toType": "long"}
    ]
    assert deltalake.DeltaTable(on).schema().to_arrow().field("id").type == pa.int64()


def test_alter_column_set_not_null_needs_a_scan_without_nulls(tmp_path):
    path = str(tmp_path / "t")
    _table(path, widening=False)
    with pytest.raises(SchemaChangeError, match="needs a scan of the column"):
        alter_column(path, "s", nullable=False)
    with pytest.raises(ConstraintViolationError, match="1 existing rows have a null in s"):
        alter_column(path, "s", nullable=False, null_count=lambda version: 1)
    seen = []
    alter_column(path, "id", nullable=False, null_count=lambda version: seen.append(version) or 0)
    assert seen == [0] and not Snapshot.load(path).schema.fields[0].nullable


def test_a_column_is_found_in_expressions_as_spark_reads_them():
    from delta_pyds.operations.schema_changes import expression_mentions

    assert expression_mentions("`pri``ce` > 0", "pri`ce")  # a backquote inside the name (a regex missed it)
    assert expression_mentions("PRICE > 0 -- x", "price")
    assert not expression_mentions("name = 'price' /* price */ -- price", "price")  # literal and comments only
    assert not expression_mentions("s.price > 0", "price")  # a field of another column
    assert expression_mentions("'unterminated", "price")  # unreadable: counted, the change is refused
