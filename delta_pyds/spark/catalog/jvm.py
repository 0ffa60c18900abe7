"""Spark's session catalog read and written through the JVM of a classic session (py4j): the
structured ``CatalogTable`` of an entry, never its text.

Guarantees:

* :func:`read_entry` returns the entry (or temporary view) a name resolves to as Spark's
  ``SessionCatalog.getTempViewOrPermanentTableMetadata`` resolves it (a one-part name: a
  temporary view first, then the current database; ``global_temp.v``: a global temporary
  view), with the type, provider and location URI of the stored ``CatalogTable``, on the
  in-memory catalog and the Hive metastore alike; None when nothing has the name;
* every call runs with the given session active on the JVM side (and the previous active
  session restored after), so ``spark.sql.caseSensitive`` and the data sources are that
  session's, also on a ``spark.newSession()``;
* :func:`create_managed` writes a MANAGED entry of provider ``delta`` at a location that
  already holds the committed table (``createTable(..., validateLocation = false)``, as
  delta-spark registers after committing); :func:`default_location` is Spark's default path
  of a managed table.

Only a classic session has a JVM (:func:`~delta_pyds.spark.session.jvm.is_classic`); a Spark Connect client has none."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from delta_pyds.spark.session.jvm import java_classes, jvm_active

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

NOT_FOUND = frozenset(
    {
        "org.apache.spark.sql.catalyst.analysis.NoSuchTableException",
        "org.apache.spark.sql.catalyst.analysis.NoSuchDatabaseException",
        "org.apache.spark.sql.catalyst.analysis.NoSuchNamespaceException",
    }
)
EXISTS = "org.apache.spark.sql.catalyst.analysis.TableAlreadyExistsException"


@dataclass(frozen=True)
class TableFields:
    """The fields of a stored ``CatalogTable`` this package uses."""

    database: str  # "" for a local temporary view
    table: str
    temporary: bool
    provider: str | None
    kind: str  # EXTERNAL, MANAGED, VIEW
    location: str | None  # the location URI as Spark stores it


@contextmanager
def active(spark: SparkSession) -> Iterator[Any]:
    """The session's JVM catalog, with the session active on the JVM side meanwhile."""
    with jvm_active(spark) as jsession:
        yield jsession.sessionState().catalog()


def _identifier(spark: SparkSession, database: str | None, table: str) -> Any:
    jvm: Any = spark._jvm
    option = jvm.scala.Some(database) if database is not None else jvm.scala.Option.empty()
    return jvm.org.apache.spark.sql.catalyst.TableIdentifier.apply(table, option)


def _get(option: Any) -> Any:
    return option.get() if option.isDefined() else None


def read_entry(spark: SparkSession, database: str | None, table: str) -> TableFields | None:
    """The entry ``database.table`` (database None: a one-part name) resolves to, or None."""
    ident = _identifier(spark, database, table)
    with active(spark) as catalog:
        try:
            temporary = bool(catalog.isTempView(ident))
            meta = catalog.getTempViewOrPermanentTableMetadata(ident)
        except Exception as exc:
            if java_classes(exc) & NOT_FOUND:
                return None
            raise
        location = _get(meta.storage().locationUri())
        provider = _get(meta.provider())
        return TableFields(
            database=str(_get(meta.identifier().database()) or ""),
            table=str(meta.identifier().table()),
            temporary=temporary,
            provider=str(provider) if provider is not None else None,
            kind=str(meta.tableType().name()),
            location=str(location.toString()) if location is not None else None,
        )


def current_database(spark: SparkSession) -> str:
    with active(spark) as catalog:
        return str(catalog.getCurrentDatabase())


def default_location(spark: SparkSession, database: str, table: str) -> str:
    """Spark's default location URI of the managed table ``database.table``."""
    ident = _identifier(spark, database, table)
    with active(spark) as catalog:
        return str(catalog.defaultTablePath(ident).toString())


def create_managed(spark: SparkSession, database: str, table: str, location: str) -> None:
    """Writes the MANAGED ``delta`` entry ``database.table`` at ``location`` (a URI holding the
    committed table): raises Spark's error (``TableAlreadyExistsException``: see
    :data:`EXISTS`) when the name is taken."""
    jvm: Any = spark._jvm
    pkg = jvm.org.apache.spark.sql.catalyst.catalog
    companion = jvm.java.lang.Class.forName("org.apache.spark.sql.catalyst.catalog.CatalogTable$")
    module = companion.getField("MODULE$").get(None)
    empty = pkg.CatalogStorageFormat.empty()
    fields = [
        jvm.scala.Some(jvm.java.net.URI(location)),
        empty.inputFormat(),
        empty.outputFormat(),
        empty.serde(),
        False,
        empty.properties(),
    ]
    # newer Sparks have a seventh field (an Option, empty here; 4.1 has six); CatalogTable's arity varies too
    extra = _arity(jvm, "org.apache.spark.sql.catalyst.catalog.CatalogStorageFormat") - len(fields)
    storage = pkg.CatalogStorageFormat(*fields, *[jvm.scala.Option.empty()] * extra)
    table_arity = _arity(jvm, "org.apache.spark.sql.catalyst.catalog.CatalogTable")
    defaults = [getattr(module, f"apply$default${n}")() for n in range(6, table_arity + 1)]
    entry = pkg.CatalogTable(
        _identifier(spark, database, table),
        pkg.CatalogTableType.MANAGED(),
        storage,
        jvm.org.apache.spark.sql.types.StructType(),
        jvm.scala.Some("delta"),
        *defaults,
    )
    with active(spark) as catalog:
        catalog.createTable(entry, False, False)


def _arity(jvm: Any, class_name: str) -> int:
    """The parameter count of the widest public constructor of a JVM class (a Scala case class's)."""
    constructors = jvm.java.lang.Class.forName(class_name).getConstructors()
    return max(int(c.getParameterCount()) for c in constructors)
