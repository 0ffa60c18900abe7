"""``DeltaTableBuilder`` and ``IdentityGenerator``: ``DeltaTable.create()`` /
``createIfNotExists()`` / ``replace()`` / ``createOrReplace()`` as in delta-spark, for
tables given by ``location(path)``.

Guarantees:

* the builder checks its arguments as delta-spark's does (``TypeError`` naming what was
  expected); data types are Spark ``DataType`` objects or DDL strings (``"INT"``,
  ``"decimal(10,2)"``, ``"struct<a: int>"``);
* ``execute()`` commits the table definition once (:mod:`delta_pyds.operations.create`:
  no data files; generated and identity columns recorded in field metadata; the protocol
  the definition needs) and returns a ``DeltaTable`` for the location;
* ``tableName(name)`` names the table in Spark's session catalog
  (:func:`~delta_pyds.spark.catalog.entries.create_named`): with ``location(path)`` it is an
  EXTERNAL table there, without one a MANAGED table at Spark's default path under
  ``spark.sql.warehouse.dir`` (where delta-spark puts it); ``create`` fails on a name in use,
  ``replace`` on a free one, ``createIfNotExists`` / ``createOrReplace`` use the entry's
  location. A builder with neither a name nor a location raises delta-spark's
  ``DELTA_CREATE_TABLE_MISSING_TABLE_NAME_OR_LOCATION`` at ``execute()``, ``partitionedBy`` with
  ``clusterBy`` its ``DELTA_CLUSTER_BY_WITH_PARTITIONED_BY`` at the second call, as
  ``AnalysisException`` s (:class:`~delta_pyds.spark.session.analysis_errors.DeltaUsageException`); two
  generation specs or an identity step of 0 raise its ``ValueError`` texts at ``addColumn``; a
  table to create with no columns raises its ``DELTA_SCHEMA_NOT_PROVIDED``
  (:class:`~delta_pyds.spark.session.analysis_errors.SchemaNotProvidedException`) at ``execute()``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, NoReturn, TypeVar

from delta_pyds.errors import ArgumentValueError, SchemaError
from delta_pyds.operations.create import ColumnSpec, Identity, TableDefinition, create_table
from delta_pyds.protocol.schema import parse_schema, parse_type, with_declared_type
from delta_pyds.spark.commands.args import activate
from delta_pyds.spark.commands.generation_check import check_generation_expressions
from delta_pyds.spark.session.analysis_errors import (
    CLUSTER_BY_WITH_PARTITIONED_BY,
    MISSING_NAME_OR_LOCATION,
    DeltaUsageException,
    SchemaNotProvidedException,
)
from delta_pyds.storage.store import Storage

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.types import DataType, StructField, StructType

    from delta_pyds.protocol.schema import DataType as DeltaDataType

# what execute() returns: the DeltaTable of the location (DeltaTable.forPath's result)
TableT = TypeVar("TableT")


@dataclass(frozen=True)
class IdentityGenerator:
    """An identity column's values: ``start`` then every ``step`` (delta-spark's
    ``delta.tables.IdentityGenerator``). Pass it as ``generatedAlwaysAs`` or
    ``generatedByDefaultAs`` to ``addColumn``."""

    start: int = 1
    step: int = 1


def _raise_type_error(msg: str, objs: Sequence[Any]) -> NoReturn:
    raise TypeError(msg + "".join(f" Found {o!s} with type {type(o)!s}" for o in objs))


def _to_delta_type(name: str, data_type: str | DataType) -> tuple[DeltaDataType, dict[str, Any]]:
    """A Spark DataType or DDL string as a protocol data type, and the field metadata it
    implies for column ``name`` (collations, a declared CHAR/VARCHAR type), as Spark's
    ``StructField`` JSON carries them."""
    from pyspark.sql.types import DataType, StructField

    if isinstance(data_type, str):
        try:
            data_type = DataType.fromDDL(data_type)
        except Exception as exc:
            raise ArgumentValueError(f"dataType: cannot parse {data_type!r} as a Spark SQL type: {exc}") from None
    field_json = StructField(name, data_type).jsonValue()  # collations move into the field's metadata
    return parse_type(field_json["type"]), with_declared_type(field_json.get("metadata") or {}, field_json["type"])


class DeltaTableBuilder(Generic[TableT]):
    """Builds a table definition; see the module docstring (made by ``DeltaTable.create``
    and friends)."""

    def __init__(
        self,
        spark: SparkSession,
        mode: str,
        open_table: Callable[[SparkSession, str, Mapping[str, str] | None], TableT],
    ) -> None:
        self._spark = spark
        self._open_table = open_table  # (spark, path, options) -> DeltaTable
        self._mode = mode
        self._location: str | None = None
        self._name: str | None = None
        self._options: dict[str, str] = {}
        self._columns: list[Any] = []  # the StructFields and column specs added, in order
        self._partitioned: list[str] = []
        self._cluster: list[str] | None = None
        self._properties: dict[str, str] = {}
        self._comment: str | None = None

    def tableName(self, identifier: str) -> DeltaTableBuilder[TableT]:
        from delta_pyds.spark.catalog.lookup import parse_name

        if not isinstance(identifier, str):
            _raise_type_error("Identifier must be str.", [identifier])
        parse_name(identifier, "identifier")  # a malformed name fails here, not at execute()
        self._name = identifier
        return self

    def location(self, location: str) -> DeltaTableBuilder[TableT]:
        if not isinstance(location, str):
            _raise_type_error("Location must be str.", [location])
        self._location = location
        return self

    def option(self, key: str, value: str) -> DeltaTableBuilder[TableT]:
        """A storage option (fsspec) for the location, as ``forPath``'s ``hadoopConf``."""
        self._options[str(key)] = str(value)
        return self

    def comment(self, comment: str) -> DeltaTableBuilder[TableT]:
        if not isinstance(comment, str):
            _raise_type_error("Table comment must be str.", [comment])
        self._comment = comment
        return self

    def addColumn(
        self,
        colName: str,
        dataType: Any,
        nullable: bool = True,
        generatedAlwaysAs: str | IdentityGenerator | None = None,
        generatedByDefaultAs: IdentityGenerator | None = None,
        comment: str | None = None,
    ) -> DeltaTableBuilder[TableT]:
        from pyspark.sql.types import DataType

        if not isinstance(colName, str):
            _raise_type_error("Column name must be str.", [colName])
        if not isinstance(dataType, (str, DataType)):
            _raise_type_error("Column data type must be str or DataType.", [dataType])
        if not isinstance(nullable, bool):
            _raise_type_error("Column nullable must be bool.", [nullable])
        identity = None
        expression = None
        if generatedAlwaysAs is not None and generatedByDefaultAs is not None:
            raise ArgumentValueError("generatedByDefaultAs and generatedAlwaysAs cannot both be set.")
        if isinstance(generatedAlwaysAs, IdentityGenerator):
            identity = Identity(generatedAlwaysAs.start, generatedAlwaysAs.step, always=True)
        elif generatedAlwaysAs is not None:
            if not isinstance(generatedAlwaysAs, str):
                _raise_type_error(
                    "Generated always as expression must be str or IdentityGenerator.", [generatedAlwaysAs]
                )
            expression = generatedAlwaysAs
        if generatedByDefaultAs is not None:
            if not isinstance(generatedByDefaultAs, IdentityGenerator):
                _raise_type_error("Generated by default expression must be IdentityGenerator.", [generatedByDefaultAs])
            identity = Identity(generatedByDefaultAs.start, generatedByDefaultAs.step, always=False)
        for value, name in ((identity.start, "start"), (identity.step, "step")) if identity else ():
            if isinstance(value, bool) or not isinstance(value, int):
                _raise_type_error(f"IdentityGenerator {name} must be int.", [value])
        if identity is not None and identity.step == 0:
            raise ArgumentValueError("Column identity generation requires step to be non-zero.")
        if comment is not None and not isinstance(comment, str):
            _raise_type_error("Column comment must be str.", [comment])
        delta_type, metadata = _to_delta_type(colName, dataType)
        self._columns.append(
            ColumnSpec(colName, delta_type, nullable, expression, identity, comment, metadata).to_field()
        )
        return self

    def addColumns(self, cols: StructType | list[StructField]) -> DeltaTableBuilder[TableT]:
        from pyspark.sql.types import StructField, StructType

        if isinstance(cols, list):
            for c in cols:
                if not isinstance(c, StructField):
                    _raise_type_error("Column in existing schema must be StructField.", [c])
            cols = StructType(cols)
        if not isinstance(cols, StructType):
            _raise_type_error("Schema must be StructType or a list of StructField.", [cols])
        self._columns.extend(parse_schema(cols.json()).fields)
        return self

    def partitionedBy(self, *cols: str | list[str] | tuple[str, ...]) -> DeltaTableBuilder[TableT]:
        if len(cols) == 1 and isinstance(cols[0], (list, tuple)):
            cols = tuple(cols[0])
        names: list[str] = []
        for c in cols:
            if not isinstance(c, str):
                _raise_type_error("Partitioning column must be str.", [c])
            names.append(c)
        self._partitioned = names
        self._check_partitioning()
        return self

    def clusterBy(self, *cols: str | list[str] | tuple[str, ...]) -> DeltaTableBuilder[TableT]:
        if len(cols) == 1 and isinstance(cols[0], (list, tuple)):
            cols = tuple(cols[0])
        names: list[str] = []
        for c in cols:
            if not isinstance(c, str):
                _raise_type_error("Clustering column must be str.", [c])
            names.append(c)
        self._cluster = names
        self._check_partitioning()
        return self

    def _check_partitioning(self) -> None:
        """delta-spark's ``validatePartitioning``: clustering and partitioning exclude each other."""
        if self._partitioned and self._cluster:
            raise DeltaUsageException(CLUSTER_BY_WITH_PARTITIONED_BY)

    def property(self, key: str, value: str) -> DeltaTableBuilder[TableT]:
        if not isinstance(key, str) or not isinstance(value, str):
            _raise_type_error("Key and value of property must be string.", [key, value])
        self._properties[key] = value
        return self

    def execute(self) -> TableT:
        """Creates (or replaces) the table; returns its ``DeltaTable``."""
        activate(self._spark)
        definition = TableDefinition(
            columns=list(self._columns),
            partition_columns=tuple(self._partitioned),
            cluster_by=self._cluster,
            properties=dict(self._properties),
            description=self._comment,
        )

        check_generation_expressions(self._spark, definition.columns)  # any Spark SQL function

        def make(location: str) -> TableT:
            try:
                create_table(Storage(location, self._options or None), definition, mode=self._mode, spark_sql=True)
            except SchemaError as exc:
                if definition.columns:
                    raise
                raise SchemaNotProvidedException() from exc  # the one refusal of a table with no columns
            return self._open_table(self._spark, location, self._options or None)

        if self._name is not None:
            from delta_pyds.spark.catalog.entries import create_named

            return create_named(self._spark, self._name, self._mode, self._location, make)
        if self._location is None:
            raise DeltaUsageException(MISSING_NAME_OR_LOCATION)
        return make(self._location)
