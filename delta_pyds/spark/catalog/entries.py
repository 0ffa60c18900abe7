"""Writing, dropping and renaming Delta entries of Spark's session catalog.

Guarantees:

* an entry is written as delta-spark writes one (provider ``delta``, the location, EXTERNAL when
  a location was given, else MANAGED at Spark's default table path under
  ``spark.sql.warehouse.dir`` / the database's location, an empty schema), by ``CREATE TABLE
  <name> USING delta [LOCATION '<path>']`` through ``spark.sql`` (classic and Spark Connect
  sessions alike) with the ``delta`` short name of :mod:`delta_pyds.spark.datasource.registration`
  (delta-spark's own where its jars are loaded): either package finds the other's tables in one
  metastore, and the Delta log stays the truth for schema and properties;
* :func:`create_named` makes a table by name in the modes of delta-spark's builder (``create``:
  the name must be free, ``createIfNotExists``, ``replace``: the entry must exist,
  ``createOrReplace``; a temporary view of the name is no entry: ``CREATE TABLE v`` makes the
  database's table beside it, as Spark does). A new external table is committed first and then
  registered. A new managed table is committed first and registered after, as delta-spark does,
  where the session has a JVM (:func:`commit_then_register`: no entry ever names a directory
  without a Delta table, a concurrent ``CREATE``/``RENAME`` onto the name's location is refused by
  Spark, a name taken meanwhile removes the new directory again). A Spark Connect client can
  write entries only through SQL, and Spark refuses a MANAGED entry on a non-empty directory
  (``LOCATION_ALREADY_EXISTS``, measured): there the entry is written first and checked after
  the commit (:func:`register_then_commit`: an entry dropped, renamed or replaced meanwhile
  removes the committed table and raises :class:`~delta_pyds.errors.ConcurrentModificationError`);
* :func:`drop_entry` is ``DROP TABLE``: the catalog removes a managed table's directory (its
  data), never an external table's; :func:`rename_entry` is ``ALTER TABLE ... RENAME TO`` (the
  catalog moves a managed table's directory; the log's relative paths stay valid)."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, TypeVar

from delta_pyds.errors import (
    AmbiguousCatalogEntryError,
    ConcurrentModificationError,
    NotADeltaTableError,
    TableExistsError,
    TableNotFoundError,
)
from delta_pyds.spark.catalog import jvm as jvm_catalog
from delta_pyds.spark.catalog.lookup import (
    SESSION_CATALOG,
    CatalogEntry,
    local_location,
    lookup,
    parse_name,
    qualify,
    quote,
    sql_string,
)
from delta_pyds.spark.datasource.registration import register_delta_name
from delta_pyds.spark.session.jvm import is_classic, java_classes
from delta_pyds.spark.session.own_calls import own_calls
from delta_pyds.storage.store import Storage
from delta_pyds.storage.tree import list_tree
from delta_pyds.transaction.staged_files import cleanup_on_failure

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

T = TypeVar("T")
MODES = ("create", "createIfNotExists", "replace", "createOrReplace")


def sql_name(parts: Sequence[str]) -> str:
    """A name's parts as SQL text (three parts: the session catalog's)."""
    if len(parts) == 3:
        return ".".join([SESSION_CATALOG] + [quote(p) for p in parts[1:]])
    return ".".join(quote(p) for p in parts)


def absolute_location(location: str) -> str:
    """A local path made absolute (Spark would resolve it against its own working directory)."""
    return location if "://" in location or location.startswith("file:") else os.path.abspath(location)


def register_entry(
    spark: SparkSession, name: str | Sequence[str], location: str | None, clauses: str = ""
) -> CatalogEntry:
    """Writes the catalog entry of the Delta table ``name`` (EXTERNAL at ``location``, or
    MANAGED at Spark's default path when None; ``clauses``: `` COMMENT '...'`` / ``TBLPROPERTIES
    (...)`` SQL text the entry keeps, quoted by the caller) and returns it as stored (the table of
    the database, also where a temporary view has the name)."""
    parts = parse_name(name)
    register_delta_name(spark)
    clause = f" LOCATION {sql_string(absolute_location(location))}" if location is not None else ""
    with own_calls():  # the package's own statement: Spark's, not the spark.sql door's
        spark.sql(f"CREATE TABLE {sql_name(parts)} USING delta{clause}{clauses}")
    try:
        entry = lookup(spark, parts, views=False)
    except AmbiguousCatalogEntryError:
        if location is None or not clauses:
            raise
        # a Spark Connect client reads the entry as text, and the COMMENT / TBLPROPERTIES just
        # written make that text ambiguous: the entry is the one written (later lookups refuse)
        return CatalogEntry(
            parts[-2] if len(parts) > 1 else "", parts[-1], False, "delta", "EXTERNAL", absolute_location(location)
        )
    if entry is None or entry.location is None:
        raise TableNotFoundError(
            f"[TABLE_OR_VIEW_NOT_FOUND] table {'.'.join(parts)}: the entry just written is gone (dropped or renamed"
            " concurrently)"
        )
    return entry


def drop_entry(spark: SparkSession, name: str | Sequence[str], *, if_exists: bool = False) -> None:
    """``DROP TABLE [IF EXISTS] name`` (a managed table's data goes with it)."""
    register_delta_name(spark)
    with own_calls():
        spark.sql(f"DROP TABLE {'IF EXISTS ' if if_exists else ''}{sql_name(parse_name(name))}")


def rename_entry(spark: SparkSession, name: str | Sequence[str], new_name: str | Sequence[str]) -> None:
    """``ALTER TABLE name RENAME TO new_name``."""
    register_delta_name(spark)
    with own_calls():
        spark.sql(f"ALTER TABLE {sql_name(parse_name(name))} RENAME TO {sql_name(parse_name(new_name, 'newName'))}")


def same_location(a: str, b: str) -> bool:
    return local_location(absolute_location(a)).rstrip("/") == local_location(absolute_location(b)).rstrip("/")


def create_named(
    spark: SparkSession,
    name: str | Sequence[str],
    mode: str,
    location: str | None,
    make: Callable[[str], T],
    clauses: str = "",
) -> T:
    """Makes the table ``name`` in builder ``mode`` with ``make(location)`` (which commits the
    table at that location) and registers it (see the module docstring; ``clauses``: see
    :func:`register_entry`, for an external table)."""
    parts = parse_name(name, "identifier")
    shown = ".".join(parts)
    entry = lookup(spark, parts, views=False)  # CREATE TABLE t makes a table of the database, beside a view t
    if entry is not None:
        if not entry.is_delta:
            raise NotADeltaTableError(
                f"{mode}: {shown} is a {entry.kind or 'table'} of provider {entry.provider}, not a Delta table"
            )
        if mode == "create":
            raise TableExistsError(f"[TABLE_OR_VIEW_ALREADY_EXISTS] table {shown} already exists")
        assert entry.location is not None
        if location is not None and not same_location(location, entry.location):
            raise TableExistsError(
                f"{mode}: table {shown} is at {entry.location}, not at the location given ({location})"
            )
        return make(entry.location)
    if mode == "replace":
        raise TableNotFoundError(f"[TABLE_OR_VIEW_NOT_FOUND] replace: table {shown} does not exist")
    if location is not None:
        result = make(absolute_location(location))
        register_entry(spark, parts, location, clauses)
        return result
    if is_classic(spark):
        return commit_then_register(spark, parts, make)
    return register_then_commit(spark, parts, make)


def commit_then_register(spark: SparkSession, parts: Sequence[str], make: Callable[[str], T]) -> T:
    """A new managed table as delta-spark makes one: committed at Spark's default path first,
    then registered (the JVM catalog, ``validateLocation = false``). A non-empty default path
    refuses (``LOCATION_ALREADY_EXISTS``, as Spark does). The directory is made first (with its
    ``_delta_log``: on local disk Spark then refuses a concurrent ``RENAME`` or managed ``CREATE``
    onto it, ``LOCATION_ALREADY_EXISTS``); when the name is taken meanwhile (an EXTERNAL
    entry elsewhere), or the commit fails, the directory this call made is removed again
    (:class:`TableExistsError` for a taken name)."""
    database, table = qualify(spark, parts)
    database = database if database is not None else jvm_catalog.current_database(spark)
    uri = jvm_catalog.default_location(spark, database, table)
    path = local_location(uri)
    shown = ".".join(parts)
    storage = Storage(path)
    made = reserve(storage)
    if not made and list_tree(storage):
        raise TableExistsError(
            f"[LOCATION_ALREADY_EXISTS] cannot create the managed table {shown}: its location {path} already exists"
            " and is not empty (drop the table it belongs to, or move the files away)"
        )
    if storage.protocol == "file":  # a non-empty location: Spark refuses a RENAME or managed CREATE onto it
        os.makedirs(storage.join("_delta_log"), exist_ok=True)

    def abandon() -> None:  # the directory this call made, unless an entry (another's) points there now
        entry = lookup(spark, parts, views=False)
        if made and not (entry is not None and entry.location and same_location(entry.location, path)):
            if storage.fs.exists(storage.root):
                storage.fs.rm(storage.root, recursive=True)

    with cleanup_on_failure(abandon, what=f"the new table at {path}"):
        result = make(path)
    try:
        jvm_catalog.create_managed(spark, database, table, uri)
    except Exception as exc:
        abandon()
        if jvm_catalog.EXISTS in java_classes(exc):
            raise TableExistsError(
                f"[TABLE_OR_VIEW_ALREADY_EXISTS] table {shown} was created concurrently; the table this call"
                f" committed at {path} is removed again"
            ) from exc
        raise
    return result


def reserve(storage: Storage) -> bool:
    """Makes the table's directory; False when it exists already (on an object store, where
    directories do not exist: whether anything is there)."""
    if storage.protocol != "file":
        return not storage.fs.exists(storage.root)
    try:
        os.makedirs(os.path.dirname(storage.root), exist_ok=True)
        os.mkdir(storage.root)  # atomic: of two creators, one makes it
    except FileExistsError:
        return False
    return True


def register_then_commit(spark: SparkSession, parts: Sequence[str], make: Callable[[str], T]) -> T:
    """A new managed table from a session without a JVM (Spark Connect), where only SQL writes
    entries and Spark refuses a MANAGED entry on a non-empty directory (``LOCATION_ALREADY_EXISTS``,
    measured): registered first (Spark makes the directory and says where it is), then
    committed there, then checked: when the entry was dropped, renamed or replaced meanwhile,
    the table this call committed is removed (and the entry, if it is still the one this call
    made) and :class:`~delta_pyds.errors.ConcurrentModificationError` raised."""
    shown = ".".join(parts)
    entry = register_entry(spark, parts, None)
    assert entry.location is not None
    path = entry.location
    with cleanup_on_failure(lambda: drop_entry(spark, parts, if_exists=True), what=f"the new entry {shown}"):
        result = make(path)
    now = lookup(spark, parts, views=False)
    if now is not None and now.is_delta and now.location is not None and same_location(now.location, path):
        return result
    storage = Storage(path)
    if storage.fs.exists(storage.root):
        storage.fs.rm(storage.root, recursive=True)
    raise ConcurrentModificationError(
        f"[DELTA_CONCURRENT_TABLE_CREATION] table {shown} was dropped or renamed while it was being created; the"
        f" table committed at {path} is removed again (nothing was created)"
    )
