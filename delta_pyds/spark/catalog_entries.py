"""Writing, dropping and renaming Delta entries of Spark's session catalog.

Guarantees:

* an entry is written as delta-spark writes one (provider ``delta``, the location, EXTERNAL when
  a location was given, else MANAGED at Spark's default table path under
  ``spark.sql.warehouse.dir`` / the database's location, an empty schema), by ``CREATE TABLE
  <name> USING delta [LOCATION '<path>']`` through ``spark.sql`` (classic and Spark Connect
  sessions alike) with the ``delta`` short name of :mod:`delta_pyds.spark.delta_source`
  (delta-spark's own where its jars are loaded): either package finds the other's tables in one
  metastore, and the Delta log stays the truth for schema and properties;
* :func:`create_named` makes a table by name in the modes of delta-spark's builder (``create``:
  the name must be free, ``createIfNotExists``, ``replace``: the entry must exist,
  ``createOrReplace``); a new external table is committed first and then registered; a new
  managed table is registered first (Spark makes its directory and says where it is), and the
  entry is dropped again if the table cannot be made there;
* :func:`drop_entry` is ``DROP TABLE``: the catalog removes a managed table's directory (its
  data), never an external table's; :func:`rename_entry` is ``ALTER TABLE ... RENAME TO`` (the
  catalog moves a managed table's directory; the log's relative paths stay valid)."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, TypeVar

from delta_pyds.errors import NotADeltaTableError, TableExistsError, TableNotFoundError
from delta_pyds.spark.catalog import (
    SESSION_CATALOG,
    CatalogEntry,
    local_location,
    lookup,
    parse_name,
    quote,
    sql_string,
)
from delta_pyds.spark.delta_source import register_delta_name
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


def register_entry(spark: SparkSession, name: str | Sequence[str], location: str | None) -> CatalogEntry:
    """Writes the catalog entry of the Delta table ``name`` (EXTERNAL at ``location``, or
    MANAGED at Spark's default path when None) and returns it as stored."""
    parts = parse_name(name)
    register_delta_name(spark)
    clause = f" LOCATION {sql_string(absolute_location(location))}" if location is not None else ""
    spark.sql(f"CREATE TABLE {sql_name(parts)} USING delta{clause}")
    entry = lookup(spark, parts)
    if entry is None or entry.location is None:  # pragma: no cover - the catalog just took it
        raise TableNotFoundError(f"table {'.'.join(parts)}: the catalog did not keep the entry just written")
    return entry


def drop_entry(spark: SparkSession, name: str | Sequence[str], *, if_exists: bool = False) -> None:
    """``DROP TABLE [IF EXISTS] name`` (a managed table's data goes with it)."""
    register_delta_name(spark)
    spark.sql(f"DROP TABLE {'IF EXISTS ' if if_exists else ''}{sql_name(parse_name(name))}")


def rename_entry(spark: SparkSession, name: str | Sequence[str], new_name: str | Sequence[str]) -> None:
    """``ALTER TABLE name RENAME TO new_name``."""
    register_delta_name(spark)
    spark.sql(f"ALTER TABLE {sql_name(parse_name(name))} RENAME TO {sql_name(parse_name(new_name, 'newName'))}")


def same_location(a: str, b: str) -> bool:
    return local_location(absolute_location(a)).rstrip("/") == local_location(absolute_location(b)).rstrip("/")


def create_named(
    spark: SparkSession,
    name: str | Sequence[str],
    mode: str,
    location: str | None,
    make: Callable[[str], T],
) -> T:
    """Makes the table ``name`` in builder ``mode`` with ``make(location)`` (which commits the
    table at that location) and registers it (see the module docstring)."""
    parts = parse_name(name, "identifier")
    shown = ".".join(parts)
    entry = lookup(spark, parts)
    if entry is not None and entry.temporary:
        entry = None  # CREATE TABLE t makes a table of the current database, beside a view t
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
        register_entry(spark, parts, location)
        return result
    entry = register_entry(spark, parts, None)
    assert entry.location is not None
    with cleanup_on_failure(lambda: drop_entry(spark, parts, if_exists=True), what=f"the new entry {shown}"):
        return make(entry.location)
