"""``DeltaTable``: table maintenance and DML from Python, shaped like delta-spark's
``delta.tables.DeltaTable`` (Spark rejects SQL DELETE/UPDATE/MERGE on Python sources).

    from delta_pyds import DeltaTable
    dt = DeltaTable.forPath(spark, "/data/events")
    dt.history(10).show(); dt.detail().show()
    dt.delete("country = 'FR' AND day < '2024-01-01'")
    dt.update("id = 3", {"name": "'bob'"})
    dt.optimize().executeCompaction()
    dt.vacuum()                      # DRY RUN: lists files; dryRun=False deletes
    dt.restoreToVersion(3)

This module is the facade; each operation's guarantees are stated where it is done:
delete and update in :mod:`delta_pyds.spark.tables.dml` (deletion vectors:
:mod:`delta_pyds.operations.dv_delete`), merge in :mod:`delta_pyds.spark.tables.merge`,
optimize in :mod:`delta_pyds.spark.tables.optimize`, vacuum in
:mod:`delta_pyds.operations.vacuum`, restore in :mod:`delta_pyds.operations.restore`,
properties and protocol in :mod:`delta_pyds.operations.properties`. In short:

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
* ``vacuum`` is a DRY RUN unless ``dryRun=False`` is given (delta-spark deletes by default);
* ``restore`` re-adds the files of the old version and removes the files added since
  (``dataChange=true``); it fails, changing nothing, if a needed file is gone (vacuumed).
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping
from typing import Any

import pyarrow.compute as pc

from delta_pyds.errors import TableNotFoundError
from delta_pyds.protocol import features
from delta_pyds.spark.tables.dml import TableRewriter, delete_rows, update_rows
from delta_pyds.spark.tables.merge import DeltaMergeBuilder
from delta_pyds.spark.tables.optimize import DeltaOptimizeBuilder
from delta_pyds.storage.store import Storage
from delta_pyds.table.snapshot import Snapshot


class DeltaTable:
    """A Delta table at a path, for maintenance and DML (see the module docstring)."""

    def __init__(self, spark, path: str, storage_options: Mapping[str, str] | None = None):
        self._spark = spark
        self._path = path
        self._options = dict(storage_options or {})
        self._storage = Storage(path, self._options or None)
        self._alias: str | None = None
        self._rewriter = TableRewriter(spark, path, self._options, self._storage)

    # ---------------------------------------------------------------- constructors
    @classmethod
    def forPath(cls, spark, path: str, hadoopConf: Mapping[str, str] | None = None) -> DeltaTable:
        """The table at ``path`` (``hadoopConf``: fsspec storage options). Raises
        :class:`TableNotFoundError` when there is no Delta table there."""
        table = cls(spark, path, hadoopConf)
        table._snapshot()
        return table

    @classmethod
    def isDeltaTable(cls, spark, identifier: str, hadoopConf: Mapping[str, str] | None = None) -> bool:
        try:
            Snapshot.load(Storage(identifier, dict(hadoopConf) if hadoopConf else None))
            return True
        except (TableNotFoundError, FileNotFoundError):
            return False

    def _snapshot(self, version: int | None = None) -> Snapshot:
        return Snapshot.load(self._storage, version=version)

    def _register(self) -> None:
        from delta_pyds.spark import register

        register(self._spark)

    def _session_time_zone(self) -> str:
        """``spark.sql.session.timeZone``: the zone of timestamps without a UTC offset."""
        from delta_pyds.log.time_travel import SESSION_TIME_ZONE

        return self._spark.conf.get(SESSION_TIME_ZONE, None) or "UTC"

    # ---------------------------------------------------------------------- reads
    def toDF(self):
        """The table's current version as a DataFrame read by Spark's own Parquet reader
        (:func:`delta_pyds.read_delta`; it falls back to the ``pydelta`` data source, with a
        logged notice, where Spark cannot read the table natively)."""
        from delta_pyds.spark.native.read import read_delta

        # hadoopConf holds storage options: read options take them as storage.<key>
        options = {k if k.lower().startswith("storage.") else f"storage.{k}": v for k, v in self._options.items()}
        return read_delta(self._spark, self._path, **options)

    def alias(self, name: str) -> DeltaTable:
        """This table under an alias, for merge conditions (``t.id = s.id``)."""
        other = DeltaTable(self._spark, self._path, self._options)
        other._alias = name
        return other

    def history(self, limit: int | None = None):
        """Commits newest first, as a DataFrame (delta-spark's DESCRIBE HISTORY columns)."""
        from pyspark.sql.types import (
            BooleanType,
            LongType,
            MapType,
            StringType,
            StructField,
            StructType,
            TimestampType,
        )

        from delta_pyds.log.history import history

        records = history(self._storage, limit=limit)
        schema = StructType(
            [
                StructField("version", LongType()),
                StructField("timestamp", TimestampType()),
                StructField("userId", StringType()),
                StructField("userName", StringType()),
                StructField("operation", StringType()),
                StructField("operationParameters", MapType(StringType(), StringType())),
                StructField("readVersion", LongType()),
                StructField("isolationLevel", StringType()),
                StructField("isBlindAppend", BooleanType()),
                StructField("operationMetrics", MapType(StringType(), StringType())),
                StructField("userMetadata", StringType()),
                StructField("engineInfo", StringType()),
            ]
        )
        rows = []
        for r in records:
            ts = (
                dt.datetime.fromtimestamp(r["timestamp"] / 1000, tz=dt.timezone.utc)
                if r.get("timestamp") is not None
                else None
            )
            rows.append(
                (
                    r["version"],
                    ts,
                    _str(r.get("userId")),
                    _str(r.get("userName")),
                    r.get("operation"),
                    _str_map(r.get("operationParameters")),
                    r.get("readVersion"),
                    r.get("isolationLevel"),
                    r.get("isBlindAppend"),
                    _str_map(r.get("operationMetrics")),
                    _str(r.get("userMetadata")),
                    _str(r.get("engineInfo")),
                )
            )
        return self._spark.createDataFrame(rows, schema)

    def detail(self):
        """One row like delta-spark's DESCRIBE DETAIL."""
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

        snap = self._snapshot()
        md, p = snap.metadata, snap.protocol
        files = snap.files
        size = int(pc.sum(files.column("size")).as_py() or 0) if files.num_rows else 0
        from delta_pyds.log.history import history

        last = history(self._storage, limit=1)
        utc = dt.timezone.utc
        created = dt.datetime.fromtimestamp(md.created_time / 1000, tz=utc) if md.created_time else None
        modified = dt.datetime.fromtimestamp(last[0]["timestamp"] / 1000, tz=utc) if last else None
        table_features = sorted(set(features.reader_features(p)) | set(features.writer_features(p)))
        from delta_pyds.protocol.clustering import table_clustering

        clustering = [
            ".".join(c) for c in table_clustering(snap.schema, snap.domain_metadata, snap.column_mapping_mode) or []
        ]
        schema = StructType(
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
        row = (
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
        return self._spark.createDataFrame([row], schema)

    # ---------------------------------------------------------------- maintenance
    def vacuum(self, retentionHours: float | None = None, dryRun: bool = True, *, enforceRetention: bool = True):
        """Deletes files no version inside the retention window needs.

        SAFE DEFAULT, unlike delta-spark: a dry run unless ``dryRun=False``. Returns a
        DataFrame with one ``path`` column (files deleted, or that would be)."""
        from delta_pyds.operations.vacuum import vacuum

        snap = self._snapshot()
        if "vacuumProtocolCheck" in features.writer_features(snap.protocol) or not dryRun:
            features.check_write(snap.protocol)
            features.check_read(snap.protocol)
        result = vacuum(snap, retention_hours=retentionHours, dry_run=dryRun, enforce_retention=enforceRetention)
        self.lastVacuum = result
        return self._spark.createDataFrame([(f,) for f in result.files], "path string")

    def setProperties(self, properties: Mapping[str, str]) -> int:
        """Sets table properties (``delta.*`` ones are validated); returns the version."""
        from delta_pyds.operations.properties import set_properties

        return set_properties(self._storage, properties)

    def upgradeProtocol(self, readerVersion: int, writerVersion: int) -> int:
        from delta_pyds.operations.properties import upgrade_protocol

        return upgrade_protocol(self._storage, reader_version=readerVersion, writer_version=writerVersion)

    # -------------------------------------------------------------------- restore
    def restoreToVersion(self, version: int):
        return self._restore(version=int(version))

    def restoreToTimestamp(self, timestamp):
        """Restores the version current at ``timestamp``: a string or date without a UTC
        offset is a time in the session time zone (``spark.sql.session.timeZone``), as in
        delta-spark; a naive ``datetime`` is the process's local time, as pyspark reads it."""
        return self._restore(timestamp=timestamp)

    def restore(self, version: int | None = None, timestamp=None):
        if (version is None) == (timestamp is None):
            raise ValueError("restore: give exactly one of version or timestamp")
        return self._restore(version=version, timestamp=timestamp)

    def _restore(self, *, version=None, timestamp=None):
        from delta_pyds.operations.restore import restore

        current = self._rewriter.dml_snapshot()
        if timestamp is not None:
            from delta_pyds.log.time_travel import localize

            timestamp = localize(timestamp, self._session_time_zone())
        target = Snapshot.load(self._storage, version=version, timestamp=timestamp)
        features.check_read(target.protocol)
        res, metrics = restore(self._storage, current, target, table_path=self._path, timestamp=timestamp)
        return (
            self._spark.createDataFrame([tuple(metrics.values())], ", ".join(f"{k} long" for k in metrics))
            if res
            else None
        )

    # ----------------------------------------------------------------------- DML
    @property
    def lastSkipping(self):
        """The data skipping report of the last ``delete`` / ``update`` whose condition
        pruned files (AttributeError before the first one)."""
        report = self._rewriter.last_skipping
        if report is None:
            raise AttributeError("lastSkipping: no delete or update of this DeltaTable has pruned files")
        return report

    def delete(self, condition=None) -> None:
        """Deletes the rows matching ``condition`` (SQL string or Column; None: all rows)."""
        delete_rows(self._rewriter, condition)

    def update(self, condition=None, set: Mapping[str, Any] | None = None) -> None:
        """Sets columns (``{"col": "SQL expr" | Column}``) on rows matching ``condition``
        (copy-on-write: the files holding matching rows are rewritten)."""
        update_rows(self._rewriter, condition, set)

    # ---------------------------------------------------------------------- merge
    def merge(self, source, condition) -> DeltaMergeBuilder:
        """``dt.alias("t").merge(src.alias("s"), "t.id = s.id")`` then ``whenMatched*`` /
        ``whenNotMatched*`` clauses and ``.execute()`` (copy-on-write)."""
        return DeltaMergeBuilder(self._rewriter, source, condition, target_alias=self._alias)

    # ------------------------------------------------------------------- optimize
    def optimize(self) -> DeltaOptimizeBuilder:
        return DeltaOptimizeBuilder(self._rewriter)


def _str(v):
    return None if v is None else (v if isinstance(v, str) else json.dumps(v))


def _str_map(v):
    if not isinstance(v, dict):
        return None
    return {str(k): _str(x) for k, x in v.items()}
