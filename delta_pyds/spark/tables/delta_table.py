"""``DeltaTable``: table maintenance and DML from Python, shaped like delta-spark's
``delta.tables.DeltaTable`` (Spark rejects SQL DELETE/UPDATE/MERGE on Python sources).

    from delta_pyds import DeltaTable
    dt = DeltaTable.forPath(spark, "/data/events")
    dt.history(10).show(); dt.detail().show()
    dt.delete("country = 'FR' AND day < '2024-01-01'")
    dt.update("id = 3", {"name": "'bob'"})
    dt.optimize().executeCompaction()
    dt.vacuum()                      # deletes (as delta-spark); dryRun=True only lists
    dt.restoreToVersion(3)
    DeltaTable.create(spark).location("/data/new").addColumn("id", "BIGINT").execute()

This module is the facade; each operation's guarantees are stated where it is done:
delete in :mod:`delta_pyds.spark.commands.delete`, update in :mod:`delta_pyds.spark.commands.update` (deletion vectors:
:mod:`delta_pyds.operations.dv_delete`), merge in :mod:`delta_pyds.spark.commands.merge`,
optimize in :mod:`delta_pyds.spark.commands.optimize`, vacuum in
:mod:`delta_pyds.operations.vacuum`, restore in :mod:`delta_pyds.operations.restore`,
properties and protocol in :mod:`delta_pyds.operations.properties`, schema changes
(delta_pyds extensions: ``addColumns``, ``renameColumn``, ``dropColumns``, ``alterColumn``,
``addConstraint``, ``dropConstraint``) in :mod:`delta_pyds.spark.tables.schema_api`. In short:

* every mutating operation is one commit through :class:`~delta_pyds.transaction.commit.Transaction`
  from the version it read, with conflict detection (a concurrent blind append does not
  fail a delete/update/optimize; a concurrent change to a file it read or removed does)
  and ``commitInfo`` with the operation name and metrics;
* ``delete`` writes deletion vectors (no data file is rewritten) when the table has the
  ``deletionVectors`` feature and ``delta.enableDeletionVectors=true``; otherwise matching
  files are rewritten without the deleted rows (copy-on-write). Files whose rows are all
  deleted are removed;
* ``update`` rewrites the files holding matching rows (copy-on-write, existing deletion
  vectors applied); ``optimize().executeCompaction()`` bin-packs small files per
  partition (``dataChange=false``, deletion vectors applied, rewritten files have none);
* copy-on-write DML on a table with ``delta.enableChangeDataFeed=true`` writes change data
  files in the same commit; deletion-vector deletes need none;
* ``vacuum`` deletes as delta-spark's does (``dryRun=True`` only lists), guarded by the
  retention check (:mod:`delta_pyds.spark.commands.maintenance`);
* arguments are checked as delta-spark checks them (:mod:`delta_pyds.spark.commands.args`);
  every call first makes the table's session the active one of the calling thread;
* ``create`` / ``createIfNotExists`` / ``replace`` / ``createOrReplace`` return a
  :class:`~delta_pyds.spark.tables.builder.DeltaTableBuilder` (``location(path)`` and/or
  ``tableName(name)``); ``forName`` resolves a name through Spark's session catalog
  (:mod:`delta_pyds.spark.catalog.lookup`) on each call;
* ``restore`` re-adds the files of the old version and removes the files added since
  (``dataChange=true``); it fails, changing nothing, if a needed file is gone (vacuumed).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import pyarrow.compute as pc

from delta_pyds.errors import ArgumentTypeError, ArgumentValueError, NotADeltaTableError, TableNotFoundError
from delta_pyds.protocol import features
from delta_pyds.spark.commands import maintenance
from delta_pyds.spark.commands.args import (
    ColumnMapping,
    ExpressionOrColumn,
    OptionalExpressionOrColumn,
    activate,
    check_column_map,
    check_condition,
    check_feature_name,
    check_source,
    check_str,
    check_timestamp,
    check_version,
)
from delta_pyds.spark.commands.auto_compaction import after_commit
from delta_pyds.spark.commands.delete import delete_rows
from delta_pyds.spark.commands.merge import DeltaMergeBuilder
from delta_pyds.spark.commands.optimize import DeltaOptimizeBuilder
from delta_pyds.spark.commands.rewriter import TableRewriter
from delta_pyds.spark.commands.update import update_rows
from delta_pyds.spark.tables.builder import DeltaTableBuilder
from delta_pyds.spark.tables.schema_api import SchemaChanges
from delta_pyds.storage.store import Storage
from delta_pyds.table.latest import latest_snapshot
from delta_pyds.table.snapshot import Snapshot

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType as SparkStructType

    from delta_pyds.skipping.rules import SkippingReport
    from delta_pyds.transaction.commit import CommitResult


class DeltaTable(SchemaChanges):
    """A Delta table at a path, for maintenance and DML (see the module docstring)."""

    def __init__(self, spark: SparkSession, path: str, storage_options: Mapping[str, str] | None = None) -> None:
        if spark is None:
            raise ArgumentValueError("'sparkSession' cannot be None")
        path = os.fspath(path) if isinstance(path, os.PathLike) else path
        check_str(path, "path")
        activate(spark)
        self._spark = spark
        self._path = path
        self._options = dict(storage_options or {})
        self._storage = Storage(path, self._options or None)
        self._alias: str | None = None
        self._rewriter = TableRewriter(spark, path, self._options, self._storage)
        self._last_commit: CommitResult | None = None  # of the last delete / update / merge

    # ---------------------------------------------------------------- constructors
    @classmethod
    def forPath(cls, spark: SparkSession, path: str, hadoopConf: Mapping[str, str] | None = None) -> DeltaTable:
        """The table at ``path`` (``hadoopConf``: fsspec storage options). Raises
        :class:`TableNotFoundError` when there is no Delta table there."""
        table = cls(spark, path, hadoopConf)
        try:
            table._snapshot()
        except TableNotFoundError as exc:  # delta-spark's AnalysisException, also a TableNotFoundError
            from delta_pyds.spark.session.analysis_errors import path_error

            raise path_error(path) from exc
        return table

    @classmethod
    def forName(cls, sparkSession: SparkSession, tableOrViewName: str) -> DeltaTable:
        """The Delta table Spark's session catalog names ``tableOrViewName`` (``t``, ``db.t``,
        ``spark_catalog.db.t``; resolved now, see :mod:`delta_pyds.spark.catalog.lookup`). Raises
        :class:`TableNotFoundError` when nothing has the name, :class:`NotADeltaTableError` for
        a view or another provider's table, :class:`NoCatalogError` for another catalog."""
        from delta_pyds.spark.catalog.lookup import delta_entry

        if sparkSession is None:
            raise ArgumentValueError("'sparkSession' cannot be None")
        try:
            entry = delta_entry(sparkSession, tableOrViewName)
        except (TableNotFoundError, NotADeltaTableError) as exc:  # delta-spark's AnalysisException
            from delta_pyds.spark.catalog.lookup import parse_name
            from delta_pyds.spark.session.analysis_errors import name_error

            raise name_error(parse_name(tableOrViewName), exc) from exc
        assert entry.location is not None
        return cls.forPath(sparkSession, entry.location)

    @classmethod
    def _builder(cls, spark: SparkSession | None, mode: str) -> DeltaTableBuilder[DeltaTable]:
        if spark is None:
            from pyspark.sql import SparkSession

            spark = SparkSession.getActiveSession()
            if spark is None:
                raise ArgumentValueError(f"{mode}(): no active SparkSession; pass sparkSession")
        activate(spark)
        return DeltaTableBuilder(spark, mode, cls.forPath)

    @classmethod
    def create(cls, sparkSession: SparkSession | None = None) -> DeltaTableBuilder[DeltaTable]:
        """A builder that creates a table at ``location(path)``; fails if one exists."""
        return cls._builder(sparkSession, "create")

    @classmethod
    def createIfNotExists(cls, sparkSession: SparkSession | None = None) -> DeltaTableBuilder[DeltaTable]:
        """A builder that creates a table at ``location(path)`` unless one exists."""
        return cls._builder(sparkSession, "createIfNotExists")

    @classmethod
    def replace(cls, sparkSession: SparkSession | None = None) -> DeltaTableBuilder[DeltaTable]:
        """A builder that replaces the table at ``location(path)``; fails if none exists."""
        return cls._builder(sparkSession, "replace")

    @classmethod
    def createOrReplace(cls, sparkSession: SparkSession | None = None) -> DeltaTableBuilder[DeltaTable]:
        """A builder that creates or replaces the table at ``location(path)``."""
        return cls._builder(sparkSession, "createOrReplace")

    @classmethod
    def convertToDelta(
        cls,
        sparkSession: SparkSession,
        identifier: str,
        partitionSchema: str | SparkStructType | None = None,
        collectStats: bool = True,
        hadoopConf: Mapping[str, str] | None = None,
    ) -> DeltaTable:
        """Converts the Parquet directory ``parquet.`path``` in place (partition values from
        ``col=value`` directories typed by ``partitionSchema``, a DDL string or StructType;
        stats from the footers); an existing Delta table there is returned as is. A name of
        Spark's catalog (``db.t``) converts an EXTERNAL ``parquet`` table at its location and
        makes its entry a ``delta`` one (a MANAGED parquet table is refused:
        :class:`NotADeltaTableError`)."""
        if sparkSession is None:
            raise ArgumentValueError("'sparkSession' cannot be None")
        activate(sparkSession)
        named = _parquet_entry(sparkSession, identifier)
        if named is not None:
            path = maintenance.convert(sparkSession, f"parquet.`{named}`", partitionSchema, collectStats, hadoopConf)
            from delta_pyds.spark.catalog.entries import drop_entry, register_entry

            drop_entry(sparkSession, identifier)  # EXTERNAL: the files stay
            register_entry(sparkSession, identifier, path)
            return cls.forPath(sparkSession, path, hadoopConf)
        path = maintenance.convert(sparkSession, identifier, partitionSchema, collectStats, hadoopConf)
        return cls.forPath(sparkSession, path, hadoopConf)

    @classmethod
    def isDeltaTable(cls, spark: SparkSession, identifier: str, hadoopConf: Mapping[str, str] | None = None) -> bool:
        """Whether ``identifier`` is a Delta table: a path, or a name (no ``/``, ``\\`` or
        ``:``) that Spark's catalog gives to a Delta table; a name the catalog does not know is
        tried as a relative path."""
        check_str(identifier, "identifier")
        location = _catalog_location(spark, identifier)
        if location == "":
            return False
        try:
            Snapshot.load(Storage(location or identifier, dict(hadoopConf) if hadoopConf else None))
            return True
        except (TableNotFoundError, FileNotFoundError):
            return False

    def _snapshot(self, version: int | None = None) -> Snapshot:
        if version is None:
            return latest_snapshot(self._storage)
        return Snapshot.load(self._storage, version=version)

    def _register(self) -> None:
        from delta_pyds.spark.datasource.registration import register_sources

        register_sources(self._spark)

    def _session_time_zone(self) -> str:
        """``spark.sql.session.timeZone``: the zone of timestamps without a UTC offset."""
        from delta_pyds.log.time_travel import SESSION_TIME_ZONE

        return self._spark.conf.get(SESSION_TIME_ZONE, None) or "UTC"

    # ---------------------------------------------------------------------- reads
    def toDF(self) -> DataFrame:
        """The table's current version as a DataFrame read by Spark's own Parquet reader
        (:func:`delta_pyds.read_delta`; it falls back to the ``pydelta`` data source, with a
        logged notice, where Spark cannot read the table natively), under the table's alias
        when :meth:`alias` gave one (as delta-spark's)."""
        from delta_pyds.spark.native.read import read_path

        # hadoopConf holds storage options: read options take them as storage.<key>
        options = {k if k.lower().startswith("storage.") else f"storage.{k}": v for k, v in self._options.items()}
        df = read_path(self._spark, self._path, **options)
        return df.alias(self._alias) if self._alias is not None else df

    def alias(self, name: str) -> DeltaTable:
        """This table under an alias, as delta-spark's: for merge conditions (``t.id = s.id``),
        ``delete`` / ``update`` conditions and values (``t.id > 5``), resolved by Spark on the
        table's rows under that alias (its scoping rules: a subquery's or lambda's ``t`` is
        not the table's), and ``toDF()``."""
        check_str(name, "aliasName")
        other = DeltaTable(self._spark, self._path, self._options)
        other._alias = name
        return other

    def history(self, limit: int | None = None) -> DataFrame:
        """Commits newest first, as a DataFrame with delta-spark's DESCRIBE HISTORY columns in
        its order and types (``DeltaHistory``: ``version``, ``timestamp``, ``userId``,
        ``userName``, ``operation``, ``operationParameters``, ``job`` (struct of ``jobId``,
        ``jobName``, ``jobRunId``, ``runId``, ``jobOwnerId``, ``triggerType``), ``notebook``
        (struct of ``notebookId``), ``clusterId``, ``readVersion``, ``isolationLevel``,
        ``isBlindAppend``, ``operationMetrics``, ``userMetadata``, ``engineInfo``)."""
        from delta_pyds.log.history import history

        activate(self._spark)
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int)):
            raise TypeError(f"'limit' must be an int, got {type(limit)}")
        rows = [_history_row(r) for r in history(self._storage, limit=limit)]
        return self._spark.createDataFrame(rows, _history_schema())

    def detail(self) -> DataFrame:
        """One row like delta-spark's DESCRIBE DETAIL."""
        return self._spark.createDataFrame([_detail_row(self._snapshot(), self._storage)], _detail_schema())

    # ---------------------------------------------------------------- maintenance
    def vacuum(
        self, retentionHours: float | None = None, dryRun: bool = False, *, enforceRetention: bool | None = None
    ) -> DataFrame:
        """Deletes files no version inside the retention window needs (delta-spark's
        semantics: see :mod:`delta_pyds.spark.commands.maintenance`). Returns a DataFrame
        ``path``: the table's path, or with ``dryRun=True`` the files it would delete."""
        activate(self._spark)
        if not isinstance(dryRun, bool):
            raise TypeError(f"'dryRun' must be a bool, got {type(dryRun)}")
        df, result = maintenance.vacuum(
            self._spark, self._storage, retentionHours, dry_run=dryRun, enforce_retention=enforceRetention
        )
        self.lastVacuum = result
        return df

    def generate(self, mode: str) -> None:
        """Writes manifest files; ``mode``: ``"symlink_format_manifest"``."""
        from delta_pyds.operations.manifest import generate_manifest

        activate(self._spark)
        generate_manifest(self._snapshot(), mode)

    def setProperties(self, properties: Mapping[str, str]) -> int:
        """Sets table properties (``delta.*`` ones are validated); returns the version."""
        from delta_pyds.operations.properties import set_properties

        activate(self._spark)
        return set_properties(self._storage, properties)

    def upgradeProtocol(self, readerVersion: int, writerVersion: int) -> int:
        from delta_pyds.operations.properties import upgrade_protocol

        return upgrade_protocol(self._storage, reader_version=readerVersion, writer_version=writerVersion)

    def upgradeTableProtocol(self, readerVersion: int, writerVersion: int) -> None:
        """Raises the protocol to at least (``readerVersion``, ``writerVersion``), as
        delta-spark: versions the table already has or exceeds change nothing."""
        from delta_pyds.operations.properties import upgrade_protocol

        activate(self._spark)
        for value, name in ((readerVersion, "readerVersion"), (writerVersion, "writerVersion")):
            if isinstance(value, bool) or not isinstance(value, int):
                raise ArgumentTypeError(f"The {name} needs to be an integer but got '{type(value)}'.")
        p = self._snapshot().protocol
        upgrade_protocol(
            self._storage,
            reader_version=max(readerVersion, p.min_reader_version),
            writer_version=max(writerVersion, p.min_writer_version),
        )

    def addFeatureSupport(self, featureName: str) -> None:
        """Adds the table feature ``featureName`` to the protocol."""
        from delta_pyds.operations.feature_support import add_feature_support

        activate(self._spark)
        check_feature_name(featureName)
        add_feature_support(self._storage, featureName)

    def dropFeatureSupport(self, featureName: str, truncateHistory: bool | None = None) -> None:
        """Drops the table feature ``featureName`` (see
        :mod:`delta_pyds.operations.feature_support` for which and when)."""
        activate(self._spark)
        check_feature_name(featureName)
        maintenance.drop_feature(self._rewriter, featureName, truncateHistory)

    # -------------------------------------------------------------------- restore
    def restoreToVersion(self, version: int) -> DataFrame:
        return self._restore(version=check_version(version))

    def restoreToTimestamp(self, timestamp: str | dt.date) -> DataFrame:
        """Restores the version current at ``timestamp``: a string or date without a UTC
        offset is a time in the session time zone (``spark.sql.session.timeZone``), as in
        delta-spark; a naive ``datetime`` is the process's local time, as pyspark reads it."""
        check_timestamp(timestamp)
        return self._restore(timestamp=timestamp)

    def restore(self, version: int | None = None, timestamp: str | dt.date | None = None) -> DataFrame:
        if (version is None) == (timestamp is None):
            raise ArgumentValueError("restore: give exactly one of version or timestamp")
        if version is not None:
            check_version(version)
        else:
            check_timestamp(timestamp)
        return self._restore(version=version, timestamp=timestamp)

    def _restore(self, *, version: int | None = None, timestamp: str | dt.date | None = None) -> DataFrame:
        from delta_pyds.operations.restore import restore

        activate(self._spark)
        current = self._rewriter.dml_snapshot()
        if timestamp is not None:
            from delta_pyds.log.time_travel import localize

            timestamp = localize(timestamp, self._session_time_zone())
        target = Snapshot.load(self._storage, version=version, timestamp=timestamp)
        features.check_read(target.protocol)
        _, metrics = restore(self._storage, current, target, table_path=self._path, timestamp=timestamp)
        # delta-spark's result: the commit's metrics in snake_case
        names = [re.sub(r"(?<!^)(?=[A-Z])", "_", k).lower() for k in metrics]
        return self._spark.createDataFrame([tuple(metrics.values())], ", ".join(f"{n} long" for n in names))

    # ----------------------------------------------------------------------- DML
    @property
    def lastSkipping(self) -> SkippingReport:
        """The data skipping report of the last ``delete`` / ``update`` whose condition
        pruned files (AttributeError before the first one)."""
        report = self._rewriter.last_skipping
        if report is None:
            raise AttributeError("lastSkipping: no delete or update of this DeltaTable has pruned files")
        return report

    @property
    def lastCommit(self) -> CommitResult | None:
        """The commit the last ``delete`` / ``update`` / ``merge(...).execute()`` of this
        DeltaTable made (its ``version`` and ``operation_metrics()``), None when it committed nothing; a
        delta_pyds extension (``delta_pyds.sql`` reports a statement's own commit from it,
        never a concurrent one)."""
        return self._last_commit

    def _keep_commit(self, commit: CommitResult | None) -> None:
        """Keeps a command's commit as :attr:`lastCommit` (a MERGE's builder runs the post-commit
        hook itself, in the session its rows were read in)."""
        self._last_commit = commit

    def _record_commit(self, commit: CommitResult | None) -> None:
        """Keeps a command's commit as :attr:`lastCommit`, then runs the post-commit hook
        (auto compaction, :func:`~delta_pyds.spark.commands.auto_compaction.after_commit`)."""
        self._keep_commit(commit)
        after_commit(self._spark, self._storage, commit)

    def delete(self, condition: OptionalExpressionOrColumn = None) -> None:
        """Deletes the rows matching ``condition`` (SQL string or Column; None: all rows)."""
        check_condition(condition)
        activate(self._spark)
        self._record_commit(delete_rows(self._rewriter, condition, alias=self._alias))

    def update(self, condition: OptionalExpressionOrColumn = None, set: ColumnMapping | None = None) -> None:
        """Sets columns (``{"col": "SQL expr" | Column}``) on rows matching ``condition``
        (None: every row). ``set`` is required, as in delta-spark: ``update({...})`` (the
        dict alone, taken as the condition) raises ``ValueError("'set' cannot be None")``;
        write ``update(set={...})``. Keys may be backtick-quoted (```my col```) or name a
        struct field (``st.b``)."""
        sets = check_column_map(set, "'set'")
        check_condition(condition)
        activate(self._spark)
        self._record_commit(update_rows(self._rewriter, condition, sets, alias=self._alias))

    # ---------------------------------------------------------------------- merge
    def merge(self, source: DataFrame, condition: ExpressionOrColumn) -> DeltaMergeBuilder:
        """``dt.alias("t").merge(src.alias("s"), "t.id = s.id")`` then ``whenMatched*`` /
        ``whenNotMatched*`` clauses and ``.execute()`` (copy-on-write)."""
        check_source(source)
        check_condition(condition, "condition", required=True)
        rewriter = self._rewriter
        session = getattr(source, "sparkSession", None)
        if session is not None and _another_connect_session(session, self._spark):
            # a Spark Connect foreachBatch hands its batches over in a session of its own (a
            # DataFrame of the table's session cannot be joined with them): merge in that one
            rewriter = TableRewriter(session, self._path, self._options, self._storage)
        activate(rewriter.spark)
        return DeltaMergeBuilder(rewriter, source, condition, target_alias=self._alias, on_commit=self._keep_commit)

    # ------------------------------------------------------------------- optimize
    def optimize(self) -> DeltaOptimizeBuilder:
        activate(self._spark)
        return DeltaOptimizeBuilder(self._rewriter)


def _another_connect_session(session: Any, table_session: SparkSession) -> bool:
    """Whether ``session`` is a Spark Connect session other than ``table_session``."""
    ids = [getattr(s, "session_id", None) for s in (session, table_session)]
    return session is not None and session is not table_session and ids[0] is not None and ids[0] != ids[1]


def _history_schema() -> SparkStructType:
    """DESCRIBE HISTORY's columns (delta-spark's ``DeltaHistory``)."""
    from pyspark.sql.types import BooleanType, LongType, MapType, StringType, StructField, StructType, TimestampType

    strings = MapType(StringType(), StringType())
    return StructType(
        [
            StructField("version", LongType()),
            StructField("timestamp", TimestampType()),
            StructField("userId", StringType()),
            StructField("userName", StringType()),
            StructField("operation", StringType()),
            StructField("operationParameters", strings),
            StructField("job", StructType([StructField(n, StringType()) for n in JOB_FIELDS])),
            StructField("notebook", StructType([StructField("notebookId", StringType())])),
            StructField("clusterId", StringType()),
            StructField("readVersion", LongType()),
            StructField("isolationLevel", StringType()),
            StructField("isBlindAppend", BooleanType()),
            StructField("operationMetrics", strings),
            StructField("userMetadata", StringType()),
            StructField("engineInfo", StringType()),
        ]
    )


def _history_row(r: Mapping[str, Any]) -> tuple[Any, ...]:
    """One commit record of :func:`delta_pyds.log.history.history` as a DESCRIBE HISTORY row."""
    ts = r.get("timestamp")
    return (
        r["version"],
        dt.datetime.fromtimestamp(ts / 1000, tz=dt.timezone.utc) if ts is not None else None,
        _str(r.get("userId")),
        _str(r.get("userName")),
        r.get("operation"),
        _str_map(r.get("operationParameters")),
        _struct(r.get("job"), JOB_FIELDS),
        _struct(r.get("notebook"), ("notebookId",)),
        _str(r.get("clusterId")),
        r.get("readVersion"),
        r.get("isolationLevel"),
        r.get("isBlindAppend"),
        _str_map(r.get("operationMetrics")),
        _str(r.get("userMetadata")),
        _str(r.get("engineInfo")),
    )


# delta-spark's JobInfo (commitInfo.job), in its order
JOB_FIELDS = ("jobId", "jobName", "jobRunId", "runId", "jobOwnerId", "triggerType")


def _struct(v: Any, names: tuple[str, ...]) -> tuple[str | None, ...] | None:
    """A commitInfo object (``job``, ``notebook``) as a row of string fields (None: absent)."""
    if not isinstance(v, dict):
        return None
    return tuple(_str(v.get(n)) for n in names)


def _parquet_entry(spark: SparkSession, identifier: str) -> str | None:
    """The location of the EXTERNAL parquet table the catalog names ``identifier`` (None: a
    ``parquet.`path``` identifier or no such name); a Delta name is :meth:`forName`'s."""
    from delta_pyds.errors import NotADeltaTableError

    if not isinstance(identifier, str) or identifier.lower().startswith("parquet.`"):
        return None
    entry = _catalog_entry(spark, identifier)
    if entry is None or entry.temporary:
        return None
    if entry.is_delta:
        raise NotADeltaTableError(f"convertToDelta: {identifier} is already a Delta table (DeltaTable.forName)")
    if (entry.provider or "").lower() != "parquet" or (entry.kind or "").upper() != "EXTERNAL" or not entry.location:
        raise NotADeltaTableError(
            f"convertToDelta: {identifier} is a {entry.kind} table of provider {entry.provider}; only EXTERNAL"
            " parquet tables are converted by name (convert a managed one's files by path, parquet.`path`)"
        )
    return entry.location


def _catalog_entry(spark: SparkSession, identifier: str) -> Any:
    """The catalog entry ``identifier`` names, None when it is not a session-catalog name."""
    from delta_pyds.errors import DeltaError
    from delta_pyds.spark.catalog.lookup import lookup

    try:
        return lookup(spark, identifier)
    except DeltaError:  # not a name (ArgumentTypeError), another catalog (NoCatalogError)
        return None


def _catalog_location(spark: SparkSession, identifier: str) -> str | None:
    """The location of the Delta catalog table ``identifier`` names, "" when it names a table
    or view that is not Delta, None when it is a path or a name the catalog does not know."""
    if any(c in identifier for c in "/\\:"):
        return None
    entry = _catalog_entry(spark, identifier)
    if entry is None:
        return None
    return entry.location if entry.is_delta and entry.location else ""


def _str(v: Any) -> str | None:
    return None if v is None else (v if isinstance(v, str) else json.dumps(v))


def _str_map(v: Any) -> dict[str, str | None] | None:
    if not isinstance(v, dict):
        return None
    return {str(k): _str(x) for k, x in v.items()}


def _detail_schema() -> SparkStructType:
    """DESCRIBE DETAIL's columns (delta-spark's)."""
    from pyspark.sql.types import (
        ArrayType,
        IntegerType,
        LongType,
        MapType,
        StringType,
        StructField,
        StructType,
        TimestampType,
    )

    return StructType(
        [
            StructField("format", StringType()),
            StructField("id", StringType()),
            StructField("name", StringType()),
            StructField("description", StringType()),
            StructField("location", StringType()),
            StructField("createdAt", TimestampType()),
            StructField("lastModified", TimestampType()),
            StructField("partitionColumns", ArrayType(StringType())),
            StructField("clusteringColumns", ArrayType(StringType())),
            StructField("numFiles", LongType()),
            StructField("sizeInBytes", LongType()),
            StructField("properties", MapType(StringType(), StringType())),
            StructField("minReaderVersion", IntegerType()),
            StructField("minWriterVersion", IntegerType()),
            StructField("tableFeatures", ArrayType(StringType())),
            StructField("version", LongType()),
        ]
    )


def _detail_row(snap: Snapshot, storage: Storage) -> tuple[Any, ...]:
    """DESCRIBE DETAIL's row of ``snap`` (the last commit's time as ``lastModified``)."""
    from delta_pyds.log.history import history
    from delta_pyds.protocol.clustering import table_clustering

    md, p = snap.metadata, snap.protocol
    files = snap.files
    size = int(pc.sum(files.column("size")).as_py() or 0) if files.num_rows else 0
    last = history(storage, limit=1)
    utc = dt.timezone.utc
    created = dt.datetime.fromtimestamp(md.created_time / 1000, tz=utc) if md.created_time else None
    modified = dt.datetime.fromtimestamp(last[0]["timestamp"] / 1000, tz=utc) if last else None
    table_features = sorted(set(features.reader_features(p)) | set(features.writer_features(p)))
    clustering = [
        ".".join(c) for c in table_clustering(snap.schema, snap.domain_metadata, snap.column_mapping_mode) or []
    ]
    return (
        "delta",
        md.id,
        md.name,
        md.description,
        snap.table_root,
        created,
        modified,
        list(md.partition_columns),
        clustering,
        files.num_rows,
        size,
        dict(md.configuration),
        p.min_reader_version,
        p.min_writer_version,
        table_features,
        snap.version,
    )
