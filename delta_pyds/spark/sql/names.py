"""The one place where a name at a table-reference position of :func:`delta_pyds.sql` becomes a
Delta table path.

Guarantees: :func:`resolver` gives the parser one function, ``resolve(parts, target)``, called
only for a multipart name that Spark's grammar reads as a table (a relation of a FROM / JOIN,
``TABLE t``, an INSERT / MERGE / UPDATE / DELETE target, a MERGE source, the table of a Delta
statement) and that no CTE in scope shadows; it follows Spark's precedence: a temporary view
of that name shadows a session name (``CREATE TABLE <name> USING delta LOCATION``), so the
name is left to Spark, except that a Delta statement's target may be a temporary view over a
whole ``pydelta`` table (``target=True``: its path, kind ``view``). Session names are kept per
SparkSession object in this process only, keyed by :func:`name_key` (parts compared
ignoring case, a backquoted ```a.b``` distinct from ``a.b``); :func:`register` refuses a name
a temporary view already holds (:class:`~delta_pyds.errors.SessionNameError`). Catalog
names (another layer) plug in at the marked line of ``resolve``."""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from delta_pyds.errors import SessionNameError
from delta_pyds.spark.sql.parser import Resolved, Resolver, name_text, quote_part
from delta_pyds.spark.sql.views import view_path

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

NAMES: weakref.WeakKeyDictionary[Any, dict[str, str]] = weakref.WeakKeyDictionary()


def name_key(parts: Sequence[str]) -> str:
    """The key of a session name: its SQL text, lower-cased (Spark compares names ignoring
    case)."""
    return name_text(parts).lower()


def table_names(spark: SparkSession) -> dict[str, str]:
    """The session names of Delta tables made by ``CREATE TABLE ... LOCATION`` on ``spark``
    (name -> path); a copy."""
    return dict(NAMES.get(spark, {}))


def temp_view_exists(spark: SparkSession, parts: Sequence[str]) -> bool:
    """Whether ``parts`` names a temporary view of ``spark`` (local, or ``global_temp.v``)."""
    if len(parts) == 1:
        statement = "SHOW VIEWS"
    else:
        try:
            global_db = spark.conf.get("spark.sql.globalTempDatabase") or "global_temp"
        except Exception:  # a session without the conf
            global_db = "global_temp"
        if len(parts) != 2 or parts[0].lower() != str(global_db).lower():
            return False
        statement = f"SHOW VIEWS IN {quote_part(parts[0])}"
    try:
        rows = spark.sql(statement).collect()
    except Exception:  # no such database, or a session that cannot list: nothing shadows
        return False
    return any(bool(r[2]) and str(r[1]).lower() == parts[-1].lower() for r in rows)


def resolver(spark: SparkSession) -> Resolver:
    """``resolve(parts, target)``: the Delta table a name at a table-reference position
    stands for, or None (see the module docstring)."""
    names = NAMES.get(spark, {})

    def resolve(parts: tuple[str, ...], target: bool) -> Resolved | None:
        if target:
            path = view_path(spark, name_text(parts))
            if path is not None:
                return Resolved(path, "view")
        found = names.get(name_key(parts))
        # catalog names resolve here (after session names), when a catalog layer is given
        if found is None or temp_view_exists(spark, parts):
            return None
        return Resolved(found, "session")

    return resolve


def register(spark: SparkSession, parts: Sequence[str], path: str, *, if_not_exists: bool = False) -> None:
    """Makes ``parts`` a session name of the table at ``path`` (a name already given stays);
    refuses what :func:`check_free` refuses (another table's name only without
    ``if_not_exists``)."""
    check_free(spark, parts, None if if_not_exists else path)
    NAMES.setdefault(spark, {}).setdefault(name_key(parts), path)


def check_free(spark: SparkSession, parts: Sequence[str], path: str | None) -> None:
    """Refuses (before anything runs) a session name held by a temporary view or naming
    another table than ``path``."""
    if temp_view_exists(spark, parts):
        raise SessionNameError(
            f"CREATE TABLE {name_text(parts)}: a temporary view of that name exists, and Spark resolves"
            " the view first, so the session name would never be used; drop the view or choose another name"
        )
    names = NAMES.get(spark, {})
    key = name_key(parts)
    if key in names and path is not None and names[key] != path:
        raise SessionNameError(f"CREATE TABLE: the session name {name_text(parts)} already names {names[key]}")
