"""Spark glue for the maintenance calls of ``DeltaTable`` that delta-spark shapes: VACUUM,
CONVERT TO DELTA, GENERATE (manifests) and adding / dropping table features.

Guarantees:

* ``vacuum`` deletes (delta-spark's default) unless ``dry_run``; a retention shorter than
  the table's ``delta.deletedFileRetentionDuration`` is refused with ``ValueError`` unless
  ``spark.databricks.delta.retentionDurationCheck.enabled`` is ``false`` (or the call says
  ``enforceRetention=False``); it returns what delta-spark returns: a one-row DataFrame
  ``path`` holding the table's path after a real run, the files it would delete (full
  paths) after a dry run; the Spark-free work is :mod:`delta_pyds.operations.vacuum`;
* ``convert`` parses delta-spark's identifier (``parquet.`path```), refuses other formats
  by name, takes the partition schema as a DDL string or ``StructType``, and converts
  with :mod:`delta_pyds.operations.convert`;
* ``generate`` writes manifests (:mod:`delta_pyds.operations.manifest`);
* ``drop_feature`` purges deletion vectors with a Spark rewrite when dropping
  ``deletionVectors`` (:mod:`delta_pyds.operations.feature_support` does the rest).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, cast

from delta_pyds.errors import ArgumentValueError, SqlParseError
from delta_pyds.expressions.lexer import tokenize
from delta_pyds.operations.feature_support import drop_feature_support
from delta_pyds.protocol import features
from delta_pyds.protocol.schema import StructType, parse_schema
from delta_pyds.protocol.table_properties import deleted_file_retention_ms
from delta_pyds.spark.commands.args import check_boolean
from delta_pyds.spark.commands.optimize import purge_deletion_vectors
from delta_pyds.spark.commands.rewriter import TableRewriter
from delta_pyds.spark.session import conf
from delta_pyds.spark.session.conf import RETENTION_CHECK_CONF
from delta_pyds.storage.store import Storage
from delta_pyds.table.snapshot import Snapshot

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType as SparkStructType

    from delta_pyds.operations.vacuum import VacuumResult


def qualified(storage: Storage, rel: str | None = None) -> str:
    """A table path (or a file under it) as Hadoop prints it (``file:/...`` locally)."""
    path = storage.join(rel) if rel else storage.root
    return "file:" + path if storage.protocol == "file" and path.startswith("/") else path


def retention_check_enabled(spark: SparkSession) -> bool:
    """``spark.databricks.delta.retentionDurationCheck.enabled`` (true when unset)."""
    return bool(conf.flag(spark, RETENTION_CHECK_CONF, True))


def vacuum(
    spark: SparkSession,
    storage: Storage,
    retention_hours: float | None,
    *,
    dry_run: bool,
    enforce_retention: bool | None,
) -> tuple[DataFrame, VacuumResult]:
    """Runs VACUUM (see the module docstring); returns (DataFrame, VacuumResult)."""
    from delta_pyds.operations.vacuum import vacuum as run_vacuum

    if retention_hours is not None:
        if isinstance(retention_hours, bool) or not isinstance(retention_hours, (int, float)):
            raise TypeError(f"'retentionHours' must be a number of hours, got {type(retention_hours)}")
        if retention_hours < 0:
            raise ArgumentValueError(f"'retentionHours' must be >= 0, got {retention_hours}")
    snap = Snapshot.load(storage)
    if "vacuumProtocolCheck" in features.writer_features(snap.protocol) or not dry_run:
        features.check_write(snap.protocol)
        features.check_read(snap.protocol)
    enforce = retention_check_enabled(spark) if enforce_retention is None else bool(enforce_retention)
    table_ms = deleted_file_retention_ms(snap.configuration)
    if enforce and retention_hours is not None and float(retention_hours) * 3_600_000 < table_ms:
        raise ArgumentValueError(
            "requirement failed: Are you sure you would like to vacuum files with such a low retention "
            f"period ({retention_hours} hours, the table keeps {table_ms / 3_600_000:g} hours: "
            "delta.deletedFileRetentionDuration)? If you have writers that are currently writing to "
            "this table, there is a risk that you may corrupt the state of your Delta table. If you "
            "are certain that there are no operations being performed on this table, such as "
            "insert/upsert/delete/optimize, then you may turn off this check by setting: "
            f"{RETENTION_CHECK_CONF} = false"
        )
    result = run_vacuum(snap, retention_hours=retention_hours, dry_run=dry_run, enforce_retention=False)
    if dry_run:
        rows = [(qualified(storage, f),) for f in result.files]
    else:
        rows = [(qualified(storage),)]
    return spark.createDataFrame(rows, "path string"), result


def parse_identifier(identifier: str) -> str:
    """The path of delta-spark's ``parquet.`path``` identifier."""
    if not isinstance(identifier, str):
        raise TypeError(f"'identifier' must be a str like \"parquet.`/path`\", got {type(identifier)}")
    try:  # Spark's lexical rules: parquet.`p`, a doubled backquote inside the path is one
        toks = [t for t in tokenize(identifier) if not t.blank]
    except SqlParseError:
        toks = []
    if (
        len(toks) != 3
        or toks[0].kind != "word"
        or toks[1].text != "."
        or toks[2].kind != "ident"
        or toks[2].text == "``"
    ):
        raise ArgumentValueError(
            f"convertToDelta: identifier {identifier!r} is not of the form parquet.`path` "
            "or a name of an EXTERNAL parquet table of Spark's session catalog"
        )
    fmt, path = toks[0].text, toks[2].value()
    if fmt.lower() != "parquet":
        raise ArgumentValueError(
            f"convertToDelta: cannot convert {fmt} tables, only parquet.`path` "
            "(delta-spark: DELTA_CONVERSION_UNSUPPORTED_SOURCE)"
        )
    return path


def partition_schema(value: str | SparkStructType | None) -> StructType | None:
    """A partition schema given as a DDL string (``"part int, day date"``) or a Spark
    ``StructType``, as a protocol schema."""
    if value is None:
        return None
    from pyspark.sql.types import StructType as SparkStruct

    if isinstance(value, str):
        try:
            value = cast(SparkStruct, SparkStruct.fromDDL(value))
        except Exception as exc:
            raise ArgumentValueError(f"partitionSchema: cannot parse {value!r} as a DDL schema: {exc}") from None
    if not isinstance(value, SparkStruct):
        raise TypeError(f"'partitionSchema' must be a DDL string or a StructType, got {type(value)}")
    return parse_schema(value.json())


def convert(
    spark: SparkSession,
    identifier: str,
    partition_schema_value: str | SparkStructType | None,
    collect_stats: bool,
    options: Mapping[str, str] | None,
) -> str:
    """Converts the Parquet directory named by ``identifier``; returns its path."""
    from delta_pyds.operations.convert import convert_to_delta

    path = parse_identifier(identifier)
    if not isinstance(collect_stats, bool):
        raise TypeError(f"'collectStats' must be a bool, got {type(collect_stats)}")
    convert_to_delta(
        Storage(path, options or None),
        partition_schema=partition_schema(partition_schema_value),
        collect_stats=collect_stats,
    )
    return path


def drop_feature(rewriter: TableRewriter, name: str, truncate_history: bool | None) -> None:
    if truncate_history is not None:
        check_boolean(truncate_history, "truncateHistory")

    def purge(_snapshot: Snapshot) -> None:
        purge_deletion_vectors(rewriter)  # its result DataFrame is not needed

    drop_feature_support(rewriter.storage, name, truncate_history=bool(truncate_history), purge=purge)
