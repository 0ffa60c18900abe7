"""Table names through Spark's own session catalog (the in-memory catalog or the Hive
metastore), for every API and statement of this package that takes a name.

Guarantees:

* a name is Spark's multi-part identifier: ``t``, ``db.t``, ``spark_catalog.db.t``, each part
  bare (letters, digits, ``_``) or backquoted (```a b```, a doubled backquote is one);
  :func:`parse_name` refuses anything else with :class:`~delta_pyds.errors.ArgumentTypeError`
  naming the argument. A catalog other than ``spark_catalog`` raises
  :class:`~delta_pyds.errors.NoCatalogError` (no Python catalog plugin exists on Spark 4.3);
* names resolve on every call, by one ``SHOW TABLE EXTENDED [IN spark_catalog.db] LIKE
  '<pattern>'`` statement (it works for entries of provider ``delta`` when no ``delta`` source is
  registered, for entries written by delta-spark with an empty schema, and from a Spark Connect
  client; DESIGN.md §2e), so another process's ``CREATE`` / ``DROP`` in a shared metastore is seen.
  The ``LIKE`` pattern is the name with every character other than a letter, digit or ``_``
  replaced by ``*``; only the row whose name equals the name (case-insensitively, as Spark
  compares) is taken;
* Spark's precedence holds: a one-part name (and ``global_temp.v``) is a temporary view first,
  then a table of the current database; :func:`lookup` reports a temporary view as such
  (``temporary=True``) and callers decide what a view means to them;
* an entry's location is returned as Spark stores it, except ``file:`` URIs, which become local
  paths (percent-decoded). No pyspark class is imported here: only the session's ``sql``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import unquote

from delta_pyds.errors import ArgumentTypeError, NoCatalogError, NotADeltaTableError, TableNotFoundError

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


def lookup(spark: SparkSession, name: str | Sequence[str]) -> CatalogEntry | None:
    """The catalog entry (or temporary view) ``name`` resolves to now, or None."""
    parts = parse_name(name)
    database, table = qualify(spark, parts)
    pattern = "".join(c if c in _BARE else "*" for c in table)
    if database is None:
        statement = f"SHOW TABLE EXTENDED LIKE '{pattern}'"
    elif database.lower() == global_temp_database(spark) and len(parts) == 2:
        statement = f"SHOW TABLE EXTENDED IN {quote(database)} LIKE '{pattern}'"
    else:
        statement = f"SHOW TABLE EXTENDED IN {SESSION_CATALOG}.{quote(database)} LIKE '{pattern}'"
    try:
        rows = spark.sql(statement).collect()
    except Exception as exc:
        if "SCHEMA_NOT_FOUND" in str(exc) or "NoSuchDatabase" in str(exc):
            return None
        raise
    found = [r for r in rows if str(r.tableName).lower() == table.lower()]
    if database is None:  # a temporary view shadows the table of the current database
        found.sort(key=lambda r: not r.isTemporary)
    else:
        found = [r for r in found if str(r.namespace).lower() == database.lower()]
    if not found:
        return None
    row = found[0]
    info = _information(str(row.information or ""))
    return CatalogEntry(
        database=str(row.namespace or ""),
        table=str(row.tableName),
        temporary=bool(row.isTemporary),
        provider=info.get("Provider"),
        kind=info.get("Type"),
        location=local_location(info["Location"]) if info.get("Location") else None,
    )


def _information(text: str) -> dict[str, str]:
    """The ``Key: value`` lines of ``SHOW TABLE EXTENDED``'s ``information`` (first of each)."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(": ")
        if sep and key and not key.startswith((" ", "|")):
            out.setdefault(key.strip(), value.strip())
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
