"""The session settings that change how Spark reads SQL text, as a core
:class:`~delta_pyds.expressions.lexer.Dialect`.

Guarantees: :func:`session_dialect` reads ``spark.sql.parser.escapedStringLiterals``,
``spark.sql.ansi.enabled`` and ``spark.sql.ansi.doubleQuotedIdentifiers`` from the session
(classic or Spark Connect) each time it is called, so a condition this package reads for file
skipping is read as Spark reads the same text in the same session. A session whose settings
cannot be read gives ``None``: callers then prune nothing rather than guess."""

from __future__ import annotations

from typing import TYPE_CHECKING

from delta_pyds.expressions.lexer import Dialect

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

ESCAPED_STRING_LITERALS = "spark.sql.parser.escapedStringLiterals"
ANSI_ENABLED = "spark.sql.ansi.enabled"
DOUBLE_QUOTED_IDENTIFIERS = "spark.sql.ansi.doubleQuotedIdentifiers"


def session_dialect(spark: SparkSession) -> Dialect | None:
    """The session's :class:`Dialect`, or None when its settings cannot be read."""
    try:
        conf = spark.conf
        escaped = _true(conf.get(ESCAPED_STRING_LITERALS, "false"))
        quoted = _true(conf.get(DOUBLE_QUOTED_IDENTIFIERS, "false")) and _true(conf.get(ANSI_ENABLED, "true"))
    except Exception:  # a session that refuses conf reads: no pruning rather than a guess
        return None
    return Dialect(escaped_string_literals=escaped, double_quoted_identifiers=quoted)


def _true(value: str | None) -> bool:
    return (value or "").strip().lower() == "true"
