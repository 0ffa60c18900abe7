"""Temporary views over ``pydelta`` as the target of Delta statements (``DELETE FROM v``,
``VACUUM v``, ``ALTER TABLE v ...``).

Guarantees: a name resolves to a table path only when it is a temporary view whose analyzed
plan is the whole ``pydelta`` relation (``spark.read.format("pydelta").load(p)`` or
``CREATE TEMPORARY VIEW v USING pydelta OPTIONS (path 'p')``) with no option that changes its
rows (``versionAsOf``, ``timestampAsOf``, ``columns``, ``readChangeFeed``); the path is read
from the relation's options in the JVM plan (classic sessions). A view with a filter, a
projection or such an option over a ``pydelta`` read raises :class:`TemporaryViewError`
(delta-spark's ``DELTA_OPERATION_ON_VIEW_NOT_ALLOWED``) before anything runs; so does a
``pydelta`` view named from a Spark Connect client, whose plan does not show the path (measured
on Spark 4.3: the analyzed plan prints ``RelationV2[...] pydelta`` without options, and
``inputFiles()``, ``DESCRIBE EXTENDED`` and ``SHOW CREATE TABLE`` do not give it either).
Any other name (a catalog table, a view over something else, no such name) resolves to None,
and the statement goes to ``spark.sql`` as before. A ``pydelta`` read pins the table version
when it is loaded, so after a Delta statement on a view, :func:`refresh_view` makes the view
again with the same options: it then reads the table's new version, as a delta-spark view does."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, cast

from delta_pyds.errors import TemporaryViewError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

_NOT_A_TABLE_OPTIONS = ("versionasof", "timestampasof", "columns", "readchangefeed")
_PYDELTA_RELATION = re.compile(r"RelationV2\[[^\]]*\] pydelta\s*$", re.M)


def view_path(spark: SparkSession, name: str) -> str | None:
    """The table path of temporary view ``name`` over a whole ``pydelta`` table (see the
    module docstring), or None when ``name`` is no such view."""
    if getattr(spark, "_jsparkSession", None) is None:
        return _connect_view(spark, name)
    options = view_options(spark, name)
    return None if options is None else options["path"]


def refresh_view(spark: SparkSession, name: str) -> None:
    """Makes temporary view ``name`` (over a whole ``pydelta`` table) again with the same read
    options, so that it reads the table's latest version."""
    options = view_options(spark, name)
    if options is None:
        return
    df = spark.read.format("pydelta").options(**options).load()
    parts = name.split(".")
    if (
        len(parts) == 2
        and parts[0].lower() == (spark.conf.get("spark.sql.globalTempDatabase") or "global_temp").lower()
    ):
        df.createOrReplaceGlobalTempView(parts[1])
    else:
        df.createOrReplaceTempView(name)


def view_options(spark: SparkSession, name: str) -> dict[str, str] | None:
    """The read options (with ``path``) of temporary view ``name`` over a whole ``pydelta``
    table on a classic session; None when ``name`` is no such view."""
    try:
        plan = spark.table(name)._jdf.queryExecution().analyzed()
    except Exception:  # no such table or view: not ours, spark.sql reports it
        return None
    node = plan
    temp = False
    while node.nodeName() in ("SubqueryAlias", "View"):
        if node.nodeName() == "View":
            temp = bool(node.isTempView())
        node = node.children().apply(0)
    if node.nodeName() == "DataSourceV2Relation" and node.table().name() == "pydelta":
        if not temp:
            return None
        options = {str(k): str(v) for k, v in dict(node.options().asCaseSensitiveMap()).items()}
        lowered = {k.lower(): v for k, v in options.items()}
        changing = sorted(k for k in options if k.lower() in _NOT_A_TABLE_OPTIONS)
        if changing:
            raise _not_a_table(name, f"its read has the option(s) {changing}")
        if lowered.get("path"):
            options = {k: v for k, v in options.items() if k.lower() != "path"}
            options["path"] = lowered["path"]
            return options
        raise _not_a_table(name, "its read has no path option")
    if _PYDELTA_RELATION.search(plan.toString()):
        raise _not_a_table(name, "it filters, projects or combines a pydelta read")
    return None


def _connect_view(spark: SparkSession, name: str) -> str | None:
    try:
        text = cast(Any, spark.table(name))._explain_string(mode="extended")  # Spark Connect's DataFrame
    except Exception:  # no such table or view
        return None
    analyzed = text.split("== Analyzed Logical Plan ==", 1)[-1].split("== Optimized Logical Plan ==", 1)[0]
    if not _PYDELTA_RELATION.search(analyzed):
        return None
    nodes = [line.strip().lstrip("+- ").strip() for line in analyzed.splitlines()[2:] if line.strip()]
    nodes = [n for n in nodes if not n.startswith(("SubqueryAlias", "View ("))]
    if len(nodes) != 1:
        raise _not_a_table(name, "it filters, projects or combines a pydelta read")
    raise TemporaryViewError(
        f"temporary view {name} reads a pydelta table, but a Spark Connect client cannot see the"
        " view's table path (Spark Connect shows no view plan options); name the table as"
        ' delta.`<path>` or register it with delta_pyds.sql(spark, "CREATE TABLE <name> USING'
        " delta LOCATION '<path>'\")"
    )


def _not_a_table(name: str, why: str) -> TemporaryViewError:
    return TemporaryViewError(
        f"[DELTA_OPERATION_ON_VIEW_NOT_ALLOWED] temporary view {name} is not a Delta table: {why}."
        " Delta statements take a view only over a whole table"
        " (spark.read.format('pydelta').load(path)); name the table as delta.`<path>` instead"
    )
