"""``DeltaTable`` schema changes, delta_pyds extensions of delta-spark's API (delta-spark has
them only as SQL ``ALTER TABLE`` statements): ``addColumns``, ``renameColumn``,
``dropColumns``, ``alterColumn``, ``clusterBy`` and ``addConstraint`` / ``dropConstraint``.

Guarantees: each method is one commit of :mod:`delta_pyds.operations.schema_changes` (its
rules are delta-spark's: rename/drop need column mapping, ADD COLUMNS nullable only, type
changes only the widenings of the ``typeWidening`` feature) or of
:mod:`delta_pyds.operations.properties`; SET NOT NULL and ADD CONSTRAINT first scan the
table through Spark at the version the change is based on and refuse, changing nothing,
when an existing row violates them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from delta_pyds.errors import ArgumentTypeError
from delta_pyds.operations import schema_changes as ops
from delta_pyds.spark.session import projection

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from delta_pyds.storage.store import Storage


def _type_text(dtype: Any, arg: str) -> Any:
    """A type given as a name, a Delta type or a pyspark DataType -> what ops takes."""
    if isinstance(dtype, str) or dtype is None:
        return dtype
    if hasattr(dtype, "jsonValue"):  # a pyspark DataType
        import json

        value = dtype.jsonValue()
        return json.dumps(value) if isinstance(value, dict) else str(value)
    if hasattr(dtype, "to_json"):  # a delta_pyds type
        return dtype
    raise ArgumentTypeError(
        f"'{arg}' must be a type name (str), a pyspark DataType or a Delta type, got {type(dtype).__name__}"
    )


class SchemaChanges:
    """The schema-change methods of :class:`~delta_pyds.spark.tables.DeltaTable`."""

    _spark: Any
    _path: str
    _options: dict[str, str]

    def _storage_for_changes(self) -> Storage:
        from delta_pyds.storage.store import Storage

        return Storage(self._path, self._options or None)

    def _read_at(self, version: int) -> DataFrame:
        from delta_pyds.spark.native.read import read_path

        options = {k if k.lower().startswith("storage.") else f"storage.{k}": v for k, v in self._options.items()}
        return read_path(self._spark, self._path, versionAsOf=str(version), **options)

    def addColumns(self, columns: Any) -> int:
        """Adds nullable columns (delta_pyds extension; SQL ``ALTER TABLE ADD COLUMNS``).
        ``columns``: a pyspark ``StructType``, a ``{name: type}`` dict, or a list of
        ``(name, type[, comment[, position]])``, the position ``"FIRST"`` or ``"AFTER <column>"``
        (SQL's ``FIRST`` / ``AFTER``; default: at the end); a name ``"a.b"`` adds field ``b``
        to struct ``a``. Returns the version committed."""
        items: list[tuple[Any, ...]] = []
        if hasattr(columns, "fields") and hasattr(columns, "jsonValue"):
            for f in columns.fields:
                if not f.nullable:
                    raise ArgumentTypeError(f"addColumns: {f.name!r} is NOT NULL; only nullable columns can be added")
                items.append((f.name, _type_text(f.dataType, "columns"), (f.metadata or {}).get("comment")))
        elif isinstance(columns, Mapping):
            items = [(k, _type_text(v, "columns"), None) for k, v in columns.items()]
        elif isinstance(columns, Sequence) and not isinstance(columns, str):
            for c in columns:
                if not isinstance(c, (tuple, list)) or len(c) not in (2, 3, 4):
                    raise ArgumentTypeError(
                        "addColumns: each column must be (name, type), (name, type, comment) or"
                        f" (name, type, comment, position), got {c!r}"
                    )
                items.append((c[0], _type_text(c[1], "columns"), c[2] if len(c) >= 3 else None, *c[3:]))
        else:
            raise ArgumentTypeError(
                "addColumns: 'columns' must be a pyspark StructType, a {name: type} dict or a list of "
                f"(name, type[, comment]), got {type(columns).__name__}"
            )
        return ops.add_columns(self._storage_for_changes(), items)

    def renameColumn(self, column: str | Sequence[str], newName: str) -> int:
        """Renames a column or nested field ``"a.b"`` (delta_pyds extension; SQL ``ALTER TABLE
        RENAME COLUMN``); needs column mapping. Returns the version committed."""
        return ops.rename_column(self._storage_for_changes(), column, newName)

    def dropColumns(self, columns: str | Sequence[str | Sequence[str]], ifExists: bool = False) -> int | None:
        """Drops columns or nested fields (delta_pyds extension; SQL ``ALTER TABLE DROP
        COLUMNS``); needs column mapping; a column is ``"a.b"`` or a list of names
        (``["a.b"]``: a top-level column whose name holds a dot). Returns the version committed (None: ``ifExists``
        and none exists)."""
        cols = [columns] if isinstance(columns, str) else list(columns)
        return ops.drop_columns(self._storage_for_changes(), cols, if_exists=bool(ifExists))

    def alterColumn(
        self,
        column: str | Sequence[str],
        *,
        comment: str | None = None,
        nullable: bool | None = None,
        dataType: Any = None,
        position: str | None = None,
    ) -> int:
        """Changes a column's comment, nullability (``nullable=False``: SET NOT NULL, checked
        against the existing rows first), type (a widening; needs
        ``delta.enableTypeWidening``) and/or position in its struct (``"FIRST"``, ``"AFTER
        <column>"``) in one commit (delta_pyds extension; SQL ``ALTER TABLE ALTER COLUMN``).
        Returns the version committed."""
        parts = column.split(".") if isinstance(column, str) else list(column)

        def null_count(version: int) -> int:
            cond = f"{projection.ident(*parts)} IS NULL"
            if len(parts) > 1:
                cond = f"{projection.ident(*parts[:-1])} IS NOT NULL AND {cond}"
            return int(self._read_at(version).where(cond).count())

        return ops.alter_column(
            self._storage_for_changes(),
            column,
            comment=comment,
            nullable=nullable,
            data_type=_type_text(dataType, "dataType"),
            null_count=null_count,
            position=position,
        )

    def clusterBy(self, *columns: str) -> int:
        """Sets the table's clustering columns (none: CLUSTER BY NONE) without rewriting data
        (delta_pyds extension; SQL ``ALTER TABLE CLUSTER BY``); ``optimize()`` then clusters
        the files. Returns the version committed."""
        cols: list[str] = []
        for c in columns:
            if isinstance(c, (list, tuple)):
                cols.extend(c)
            elif isinstance(c, str):
                cols.append(c)
            else:
                raise ArgumentTypeError(f"clusterBy: columns must be str, got {type(c).__name__}")
        return ops.cluster_by(self._storage_for_changes(), cols)

    def addConstraint(self, name: str, expression: str) -> int:
        """Adds a CHECK constraint ``delta.constraints.<name>`` after checking every existing
        row satisfies it (delta_pyds extension; SQL ``ALTER TABLE ADD CONSTRAINT``)."""
        for arg, value in (("name", name), ("expression", expression)):
            if not isinstance(value, str) or not value.strip():
                raise ArgumentTypeError(f"addConstraint: '{arg}' must be a non-empty str")

        def violations(version: int) -> int:
            return int(self._read_at(version).where(f"NOT coalesce(({expression}), true)").count())

        return ops.add_constraint(self._storage_for_changes(), name, expression, violations)

    def dropConstraint(self, name: str, ifExists: bool = False) -> int | None:
        """Drops a CHECK constraint (delta_pyds extension; SQL ``ALTER TABLE DROP
        CONSTRAINT``); an unknown name is a ``MissingPropertyError`` unless ``ifExists``."""
        from delta_pyds.operations.properties import unset_properties

        if not isinstance(name, str) or not name:
            raise ArgumentTypeError("dropConstraint: 'name' must be a non-empty str")
        return unset_properties(self._storage_for_changes(), [f"delta.constraints.{name.lower()}"], if_exists=ifExists)
