"""Table names through Spark's own session catalog (the in-memory catalog or the Hive
metastore), for every API and statement of this package that takes a name.

Guarantees:

* a name is Spark's multi-part identifier: ``t``, ``db.t``, ``spark_catalog.db.t``, each part
  bare (letters, digits, ``_``) or backquoted (```a b```, a doubled backquote is one);
  :func:`parse_name` refuses anything else with :class:`~delta_pyds.errors.ArgumentTypeError`
  naming the argument. A catalog other than ``spark_catalog`` raises
  :class:`~delta_pyds.errors.NoCatalogError` (no Python catalog plugin exists on Spark 4.3);
* names resolve on every call, from a structured source where one exists: on a classic session
  the JVM session catalog's ``CatalogTable`` (:mod:`delta_pyds.spark.catalog.jvm`: type,
  provider, location URI; the in-memory catalog and the Hive metastore alike), so no comment or
  property can stand for a field (docs/catalog.md). A Spark Connect client has no JVM and no
  structured source that works for ``delta`` entries (measured on 4.3: ``DESCRIBE ... AS JSON``
  is refused for the ``PythonTable`` with ``NOT_SUPPORTED_COMMAND_FOR_V2_TABLE``,
  ``catalog.getTable`` describes the ``PythonTable``: MANAGED, no location); there one ``SHOW
  TABLE EXTENDED [IN spark_catalog.db] LIKE '<pattern>'`` is read, its row chosen by the
  structured columns, and :func:`information_fields` takes a field only when no other line
  could be read as it (else :class:`~delta_pyds.errors.AmbiguousCatalogEntryError`). Either
  way another process's ``CREATE`` / ``DROP`` in a shared metastore is seen at once;
* names compare as Spark's catalog compares them under the session's
  ``spark.sql.caseSensitive`` (the JVM catalog itself on classic sessions; on Connect the name
  formatted as Spark formats it, exactly, and case-insensitively in a Hive metastore, which
  lower-cases names): with case-sensitive names ``CS`` and ``cs`` are two tables;
* Spark's precedence holds: a one-part name (and ``global_temp.v``) is a temporary view first,
  then a table of the current database; :func:`lookup` reports a temporary view as such
  (``temporary=True``) and callers decide what a view means to them;
* an entry's location is returned as Spark stores it, except ``file:`` URIs, which become local
  paths (percent-decoded). No pyspark class is imported here."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import unquote

from delta_pyds.errors import (
    AmbiguousCatalogEntryError,
    ArgumentTypeError,
    NoCatalogError,
    NotADeltaTableError,
    TableNotFoundError,
)
from delta_pyds.spark.catalog import jvm as jvm_catalog
from delta_pyds.spark.session.jvm import is_classic
from delta_pyds.spark.session.own_calls import own_calls

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

SESSION_CATALOG = "spark_catalog"
_BARE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")


@dataclass(frozen=True)
class CatalogEntry:
    """One row of ``SHOW TABLE EXTENDED``: a table or a temporary view."""

    database: str  # "" for a local temporary view
    table: str
    temporary: bool
    provider: str | None = None
    kind: str | None = None  # EXTERNAL, MANAGED, VIEW
    location: str | None = None

    @property
    def is_delta(self) -> bool:
        """A table (not a view) of provider ``delta`` with a location."""
        return (
            not self.temporary
            and (self.provider or "").lower() == "delta"
            and (self.kind or "").upper() in ("EXTERNAL", "MANAGED")
            and bool(self.location)
        )

    @property
    def qualified(self) -> str:
        """``spark_catalog.db.t`` with every part quoted (the table's name in SQL text)."""
        parts = [self.database, self.table] if not self.database else [SESSION_CATALOG, self.database, self.table]
        return ".".join(quote(p) for p in parts if p)


def quote(part: str) -> str:
    """One name part as Spark SQL text (backquoted)."""
    return "`" + part.replace("`", "``") + "`"


def sql_string(text: str) -> str:
    """``text`` as a Spark SQL string literal (backslash escapes, Spark's default)."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def parse_name(name: str | Sequence[str], argument: str = "tableOrViewName") -> tuple[str, ...]:
    """The parts of a multi-part table name (``db.`my t``` -> ``("db", "my t")``); a tuple or
    list of parts is taken as given."""
    if not isinstance(name, str):
        if isinstance(name, (tuple, list)) and name and all(isinstance(p, str) and p for p in name):
            return tuple(name)
        raise ArgumentTypeError(f"'{argument}' must be a table name as a str (e.g. 'db.t'), got {name!r}")
    parts: list[str] = []
    i, n = 0, len(name)
    while True:
        while i < n and name[i].isspace():
            i += 1
        if i < n and name[i] == "`":
            part, i = _quoted(name, i, argument)
        else:
            start = i
            while i < n and name[i] in _BARE:
                i += 1
            part = name[start:i]
            if not part:
                raise ArgumentTypeError(
                    f"'{argument}': {name!r} is not a table name (parts are letters, digits and _ or backquoted,"
                    " separated by '.')"
                )
        parts.append(part)
        while i < n and name[i].isspace():
            i += 1
        if i == n:
            return tuple(parts)
        if name[i] != ".":
            raise ArgumentTypeError(f"'{argument}': unexpected {name[i]!r} at position {i} of table name {name!r}")
        i += 1


def _quoted(name: str, i: int, argument: str) -> tuple[str, int]:
    """The backquoted part starting at ``name[i]`` and the position after it."""
    buf: list[str] = []
    j = i + 1
    while True:
        if j >= len(name):
            raise ArgumentTypeError(f"'{argument}': unclosed backquote in table name {name!r}")
        if name[j] == "`":
            if j + 1 < len(name) and name[j + 1] == "`":
                buf.append("`")
                j += 2
                continue
            if not buf:
                raise ArgumentTypeError(f"'{argument}': empty name part in table name {name!r}")
            return "".join(buf), j + 1
        buf.append(name[j])
        j += 1


def qualify(spark: SparkSession, parts: Sequence[str]) -> tuple[str | None, str]:
    """``(database, table)`` of a name in the session catalog (database None: a one-part name,
    the current database or a temporary view)."""
    if len(parts) == 1:
        return None, parts[0]
    if len(parts) == 2:
        return parts[0], parts[1]
    if len(parts) == 3 and parts[0].lower() == SESSION_CATALOG:
        return parts[1], parts[2]
    raise NoCatalogError(
        f"table {'.'.join(parts)}: only Spark's session catalog ({SESSION_CATALOG}: the in-memory catalog or the"
        " Hive metastore) is reachable without jars; name the table as db.t or spark_catalog.db.t, or by its path"
    )


def global_temp_database(spark: SparkSession) -> str:
    return (spark.conf.get("spark.sql.globalTempDatabase", None) or "global_temp").lower()


def lookup(spark: SparkSession, name: str | Sequence[str], *, views: bool = True) -> CatalogEntry | None:
    """The catalog entry (or temporary view) ``name`` resolves to now, or None; with
    ``views=False`` a one-part name is the table of the current database even where a
    temporary view has the name (what ``CREATE TABLE name`` makes)."""
    parts = parse_name(name)
    database, table = qualify(spark, parts)
    if is_classic(spark):
        if database is None and not views:
            database = jvm_catalog.current_database(spark)
        fields = jvm_catalog.read_entry(spark, database, table)
        if fields is None:
            return None
        return CatalogEntry(
            database=fields.database,
            table=fields.table,
            temporary=fields.temporary,
            provider=fields.provider,
            kind=fields.kind,
            location=local_location(fields.location) if fields.location else None,
        )
    if database is None and not views:
        database = spark.catalog.currentDatabase()
    return text_lookup(spark, parts, database, table)


def text_lookup(spark: SparkSession, parts: Sequence[str], database: str | None, table: str) -> CatalogEntry | None:
    """:func:`lookup` where the session has no JVM (a Spark Connect client): one ``SHOW TABLE
    EXTENDED [IN spark_catalog.db] LIKE '<pattern>'``, the row chosen by its structured columns
    (name, namespace, isTemporary) as Spark's catalog compares names under
    ``spark.sql.caseSensitive``, the fields read from its ``information`` text by
    :func:`information_fields`."""
    pattern = "".join(c if c in _BARE else "*" for c in table)
    if database is None:
        statement = f"SHOW TABLE EXTENDED LIKE '{pattern}'"
    elif database.lower() == global_temp_database(spark) and len(parts) == 2:
        statement = f"SHOW TABLE EXTENDED IN {quote(database)} LIKE '{pattern}'"
    else:
        statement = f"SHOW TABLE EXTENDED IN {SESSION_CATALOG}.{quote(database)} LIKE '{pattern}'"
    try:
        with own_calls():
            rows = spark.sql(statement).collect()
    except Exception as exc:
        if "SCHEMA_NOT_FOUND" in str(exc) or "NoSuchDatabase" in str(exc):
            return None
        raise
    same = name_rule(spark)
    found = [r for r in rows if same(str(r.tableName), table, bool(r.isTemporary))]
    if database is not None:
        found = [r for r in found if same(str(r.namespace or ""), database, bool(r.isTemporary))]
        chosen = found
    else:  # a temporary view shadows the table of the current database
        chosen = [r for r in found if r.isTemporary] or [r for r in found if not r.isTemporary]
    shown = ".".join(parts)
    if len(chosen) > 1:
        raise AmbiguousCatalogEntryError(f"table {shown}: the catalog lists {len(chosen)} entries of that name")
    if not chosen:
        return None
    row = chosen[0]
    info = information_fields(str(row.information or ""), shown)
    return CatalogEntry(
        database=str(row.namespace or ""),
        table=str(row.tableName),
        temporary=bool(row.isTemporary),
        provider=info.get("Provider"),
        kind=info.get("Type"),
        location=local_location(info["Location"]) if info.get("Location") else None,
    )


def name_rule(spark: SparkSession) -> Callable[[str, str, bool], bool]:
    """``same(stored, asked, temporary)``: whether Spark's catalog finds the stored name
    ``stored`` for the name ``asked``. Spark formats a name (lower case unless
    ``spark.sql.caseSensitive``) and looks it up exactly; a Hive metastore lower-cases every
    table and database name itself."""
    sensitive = str(spark.conf.get("spark.sql.caseSensitive", "false")).lower() == "true"
    try:
        hive = str(spark.conf.get("spark.sql.catalogImplementation", "in-memory")).lower() == "hive"
    except Exception:  # pragma: no cover - a platform that hides the static conf
        hive = True  # the rule that finds more names; more than one found is refused

    def same(stored: str, asked: str, temporary: bool) -> bool:
        if hive and not temporary:
            return stored.lower() == asked.lower()
        return stored == (asked if sensitive else asked.lower())

    return same


# the fields read from SHOW TABLE EXTENDED's text; every other line may hold user-written text
FIELDS = ("Type", "Provider", "Location")
# every character some reader takes for the end of a line (str.splitlines' set)
_BREAKS = re.compile("[\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")


def information_fields(text: str, shown: str) -> dict[str, str]:
    """``Type``, ``Provider`` and ``Location`` of ``SHOW TABLE EXTENDED``'s ``information``
    (lines ``Key: value`` joined by ``\n``). Comments, properties, column names and the
    table's own name are printed in the same text, so a field is taken only when exactly one
    line could be read as it under any reading of line ends (any of ``str.splitlines``' line
    ends, leading blanks stripped, any letter case), the provider only on the line right after
    the type (where Spark prints it), and neither provider nor location for a view (a view has
    none: such a line is user text): anything else raises :class:`AmbiguousCatalogEntryError`,
    never a guess."""
    strict: dict[str, list[str]] = {k: [] for k in FIELDS}
    for line in text.split("\n"):
        key, sep, value = line.partition(": ")
        if sep and key in strict:
            strict[key].append(value)
    loose = dict.fromkeys(FIELDS, 0)
    for line in _BREAKS.split(text):
        head = line.lstrip().lower()
        for key in FIELDS:
            if head.startswith(key.lower() + ":"):
                loose[key] += 1
    out: dict[str, str] = {}
    for key in FIELDS:
        if len(strict[key]) > 1 or loose[key] != len(strict[key]):
            raise AmbiguousCatalogEntryError(
                f"table {shown}: its catalog metadata holds {max(loose[key], len(strict[key]))} lines that read as"
                f" '{key}: ' (a comment, property or name holds such a line), and a Spark Connect client sees that"
                " metadata as text only: refused rather than guessed. Name the table by its path, or change the"
                " comment or property from a classic session"
            )
        if strict[key]:
            out[key] = strict[key][0]
    if "Type" not in out:
        raise AmbiguousCatalogEntryError(f"table {shown}: its catalog metadata has no 'Type: ' line")
    lines = text.split("\n")
    after_type = lines[lines.index("Type: " + out["Type"]) + 1] if "Type: " + out["Type"] in lines else ""
    if out["Type"] == "VIEW" and ("Provider" in out or "Location" in out):  # a view has neither: user text
        raise AmbiguousCatalogEntryError(f"view {shown}: its catalog metadata holds a provider or location line")
    if "Provider" in out and after_type != "Provider: " + out["Provider"]:  # Spark prints it right after Type
        raise AmbiguousCatalogEntryError(f"table {shown}: its 'Provider: ' line is not where Spark prints it")
    return out


def local_location(uri: str) -> str:
    """A catalog location as this package's storage takes it (``file:/p`` -> ``/p``)."""
    if uri.startswith("file://"):
        return unquote(uri[len("file://") :])
    if uri.startswith("file:"):
        return unquote(uri[len("file:") :])
    return uri


def delta_entry(spark: SparkSession, name: str | Sequence[str], *, argument: str = "tableOrViewName") -> CatalogEntry:
    """The Delta catalog table ``name`` names now: :class:`TableNotFoundError` when nothing has
    the name, :class:`NotADeltaTableError` for a view or a table of another provider."""
    entry = lookup(spark, parse_name(name, argument))
    shown = name if isinstance(name, str) else ".".join(name)
    if entry is None:
        raise TableNotFoundError(f"[TABLE_OR_VIEW_NOT_FOUND] table {shown} is not in the catalog")
    if not entry.is_delta:
        what = "a temporary view" if entry.temporary else f"a {entry.kind or 'table'} of provider {entry.provider}"
        raise NotADeltaTableError(f"{shown} is not a Delta table: it is {what} (DELTA_MISSING_DELTA_TABLE)")
    return entry
