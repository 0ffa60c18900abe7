"""What the write front doors do with a Delta write, once :mod:`.writers` has met the call:
delta-spark's semantics of ``save``, ``saveAsTable`` and ``insertInto`` over this package's
Spark-native writer (:func:`delta_pyds.write_delta`) and its catalog entries.

Guarantees (delta-spark's behaviour, each checked before any file is written):

* ``save(path)``: the save mode of the call (``errorifexists`` when none was given, any case):
  ``errorifexists`` on an existing Delta table raises ``DELTA_PATH_EXISTS`` as an
  ``AnalysisException`` (also a :class:`~delta_pyds.errors.TableExistsError`), ``ignore`` writes
  nothing there, ``append`` / ``overwrite`` write with the options as delta-spark names them;
  ``partitionBy(...)`` is the new table's partitioning (an existing table's must match); the
  path is the argument or ``option("path")``, never both (Spark's rule);
* ``saveAsTable(name)``: an existing Delta entry is appended to (``append``, operation
  ``WRITE``) or overwritten (``overwrite``: its data replaced, its schema kept unless
  ``overwriteSchema``, as delta-spark's V1 ``saveAsTable``), ``errorifexists`` raises
  ``TABLE_OR_VIEW_ALREADY_EXISTS``, ``ignore`` writes nothing; a new name makes the table in one
  commit (operation ``CREATE TABLE AS SELECT``, or ``CREATE OR REPLACE TABLE AS SELECT`` in
  ``overwrite``; with other write options than table properties, one ``WRITE``) and registers it:
  EXTERNAL at ``option("path")``, else MANAGED under the warehouse;
* ``insertInto(name, overwrite)``: the table must exist (``TABLE_OR_VIEW_NOT_FOUND``); columns
  are matched by position, as Spark matches them (``INSERT_COLUMN_ARITY_MISMATCH`` when the
  counts differ); ``overwrite=True`` (or ``mode("overwrite")``) overwrites, honouring
  ``spark.sql.sources.partitionOverwriteMode``; ``partitionBy`` is refused as Spark refuses it;
* option keys nothing reads are warned about once and ignored, as ``format("pydelta")`` does."""

from __future__ import annotations

from typing import TYPE_CHECKING

from delta_pyds.errors import ArgumentTypeError, DeltaError, SchemaError, TableExistsError, TableNotFoundError
from delta_pyds.spark.catalog.entries import create_named, same_location
from delta_pyds.spark.catalog.lookup import delta_entry, lookup, parse_name
from delta_pyds.spark.front_doors.patching import WriteState, analysis_error, save_mode
from delta_pyds.spark.io import read_delta, write_delta
from delta_pyds.write.option_names import WRITE_NAMES, WRITE_PREFIXES, warn_unknown_options
from delta_pyds.write.options import split_columns

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from delta_pyds.spark.catalog.lookup import CatalogEntry

_TABLE_EXISTS = (
    "Cannot create table or view {name} because it already exists. Choose a different name, drop or replace"
    " the existing object, or add the IF NOT EXISTS clause to tolerate pre-existing objects."
)


def write_options(st: WriteState) -> tuple[dict[str, str], list[str] | None]:
    """The options ``write_delta`` takes (no ``path``; unknown keys warned about and left out)
    and the partition columns (``partitionBy(...)``, else an ``option("partitionBy")``)."""
    options = {k: v for k, v in st.options.items() if k.lower() != "path"}
    for key in warn_unknown_options(options, WRITE_NAMES, WRITE_PREFIXES, what="write"):
        options.pop(key)
    parts: list[str] | None = [str(c) for c in st.partition_by] if st.partition_by is not None else None
    given = next((k for k in options if k.lower() == "partitionby"), None)
    if given is not None:
        text = options.pop(given)
        parts = parts if parts is not None else list(split_columns(text))
    if "mode" in options:  # write_delta's own argument: the option is its alias saveMode
        options["saveMode"] = options.pop("mode")
    return options, parts


def save_path(df: DataFrame, path: str | None, st: WriteState) -> None:
    """``df.write.format("delta")...save(path)`` (see the module docstring)."""
    given = st.option("path")
    if path is not None and given is not None:
        raise ArgumentTypeError(
            "There is a 'path' option set and save() is called with a path parameter. Either remove the path"
            " option, or call save() without the parameter."
        )
    path = path if path is not None else given
    if not path:
        raise ArgumentTypeError("'path' is not specified: save(path) or option('path', ...)")
    mode = save_mode(st.mode)
    options, parts = write_options(st)
    try:
        write_delta(df, path, mode=mode, partitionBy=parts, **options)
    except TableExistsError as exc:
        if "saveMode=errorifexists" not in str(exc):  # a folder of other files: this package's own refusal
            raise
        message = f"Cannot write to already existent path {path} without setting OVERWRITE = 'true'."
        raise analysis_error(exc, "DELTA_PATH_EXISTS", "42K04", message) from None


def existing_entry(df: DataFrame, name: str) -> CatalogEntry | None:
    """The Delta entry ``name`` has now (None: no table of that name; a temporary view of the
    name does not count, as for Spark's ``saveAsTable``)."""
    spark = df.sparkSession
    parts = parse_name(name, "name")
    entry = lookup(spark, parts)
    if entry is None or entry.temporary:
        return None
    return delta_entry(spark, parts, argument="name")


def already_exists(entry: CatalogEntry) -> DeltaError:
    exc = TableExistsError(f"table {entry.qualified} already exists")
    return analysis_error(exc, "TABLE_OR_VIEW_ALREADY_EXISTS", "42P07", _TABLE_EXISTS.format(name=entry.qualified))


def save_table(df: DataFrame, name: str, st: WriteState) -> None:
    """``df.write.format("delta")...saveAsTable(name)`` (see the module docstring)."""
    mode = save_mode(st.mode)
    options, parts = write_options(st)
    path = st.option("path")
    entry = existing_entry(df, name)
    if entry is not None:
        assert entry.location is not None
        if mode == "errorifexists":
            raise already_exists(entry)
        if mode == "ignore":
            return
        if path is not None and not same_location(path, entry.location):
            raise TableExistsError(f"saveAsTable: table {name} is at {entry.location}, not at path {path}")
        write_delta(df, entry.location, mode=mode, partitionBy=parts, **options)
        return
    if any(not k.lower().startswith("delta.") for k in options):
        kind = "overwrite" if mode == "overwrite" else "append"
        write_delta(df, path, name=name, mode=kind, partitionBy=parts, **options)
        return
    create_as_select(df, name, path, "createOrReplace" if mode == "overwrite" else "create", parts, options)


def create_as_select(
    df: DataFrame,
    name: str,
    path: str | None,
    mode: str,
    parts: list[str] | None,
    properties: dict[str, str],
    cluster_by: list[str] | None = None,
) -> None:
    """The table ``name`` defined by ``df``'s rows in builder ``mode`` (``CREATE [OR REPLACE]
    TABLE AS SELECT`` / ``REPLACE TABLE AS SELECT``, one commit), registered in the catalog."""
    from delta_pyds.operations.create import TableDefinition
    from delta_pyds.spark.commands.create_as_select import create_as_select as define
    from delta_pyds.storage.store import Storage

    definition = TableDefinition(
        partition_columns=tuple(parts or ()), cluster_by=cluster_by, properties=dict(properties)
    )
    spark = df.sparkSession
    create_named(spark, name, mode, path, lambda location: define(spark, Storage(location), definition, df, mode=mode))


def insert_into(df: DataFrame, name: str, overwrite: bool | None, st: WriteState) -> None:
    """``df.write.insertInto(name, overwrite)`` of a Delta table (see the module docstring)."""
    if st.partition_by is not None:
        raise analysis_error(
            SchemaError("insertInto() can't be used together with partitionBy()"),
            "_LEGACY_ERROR_TEMP_1309",
            "42000",
            "insertInto() can't be used together with partitionBy(). Partition columns have already been"
            " defined for the table. It is not necessary to use partitionBy().",
        )
    if overwrite is None:
        overwrite = save_mode(st.mode) == "overwrite"
    spark = df.sparkSession
    try:
        entry = delta_entry(spark, name, argument="tableName")
    except TableNotFoundError as exc:
        message = (
            f"The table or view {name} cannot be found. Verify the spelling and correctness of the schema and catalog."
        )
        raise analysis_error(exc, "TABLE_OR_VIEW_NOT_FOUND", "42P01", message) from None
    assert entry.location is not None
    names = read_delta(spark, entry.location).columns
    if len(df.columns) != len(names):
        arity = SchemaError(f"insertInto {name}: the data has {len(df.columns)} columns, the table {len(names)}")
        message = (
            f"Cannot write to {entry.qualified}, the reason is the number of columns does not match: the table has"
            f" {len(names)} columns ({', '.join(names)}) but the inserted data has {len(df.columns)}."
        )
        raise analysis_error(arity, "INSERT_COLUMN_ARITY_MISMATCH", "21S01", message) from None
    options, _ = write_options(st)
    options.pop("saveMode", None)
    write_delta(df.toDF(*names), entry.location, mode="overwrite" if overwrite else "append", **options)
