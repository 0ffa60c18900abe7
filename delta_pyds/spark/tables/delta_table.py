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

Guarantees:

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
* copy-on-write DML on a table with ``delta.enableChangeDataFeed=true`` is refused (it would
  need ``_change_data`` files, not implemented); deletion-vector deletes need none;
* ``vacuum`` is a DRY RUN unless ``dryRun=False`` is given (delta-spark deletes by default);
* ``restore`` re-adds the files of the old version and removes the files added since
  (``dataChange=true``); it fails, changing nothing, if a needed file is gone (vacuumed).
"""

from __future__ import annotations

import datetime as dt
import json
from typing import Any, Mapping

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from delta_pyds.protocol import features
from delta_pyds.errors import DeltaError, TableNotFoundError
from delta_pyds.protocol.identity import identity_columns, with_high_water_marks
from delta_pyds.table.snapshot import Snapshot
from delta_pyds.protocol.stats import loosen_bounds
from delta_pyds.storage.store import Storage
from delta_pyds.protocol.table_properties import ENABLE_CDF, ENABLE_DV, is_true
from delta_pyds.expressions.to_predicates import skipping_predicates
from delta_pyds.transaction.file_actions import (add_actions, keys, num_live_rows, rows_for_paths, stat_rows,
                                                 sum_size)

CHANGE_TYPE = "_change_type"
INLINE_DV_CONF = "spark.pydelta.deletionVectors.inlineMaxBytes"
_ROW_ID = "__pydelta_row_id"
_ROW_VERSION = "__pydelta_row_version"
_FILE = "__pydelta_file"
_ROW = "__pydelta_row_index"
DEFAULT_TARGET_FILE_SIZE = 128 * 1024 * 1024


class DeltaTable:
    """A Delta table at a path, for maintenance and DML (see the module docstring)."""

    def __init__(self, spark, path: str, storage_options: Mapping[str, str] | None = None):
        self._spark = spark
        self._path = path
        self._options = dict(storage_options or {})
        self._storage = Storage(path, self._options or None)
        self._alias: str | None = None

    # ---------------------------------------------------------------- constructors
    @classmethod
    def forPath(cls, spark, path: str, hadoopConf: Mapping[str, str] | None = None) -> "DeltaTable":
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
        self._register()
        reader = self._spark.read.format("pydelta").option("timeZone", self._session_time_zone())
        for k, v in self._options.items():
            reader = reader.option(k, v)
        return reader.load(self._path)

    def alias(self, name: str) -> "DeltaTable":
        """This table under an alias, for merge conditions (``t.id = s.id``)."""
        other = DeltaTable(self._spark, self._path, self._options)
        other._alias = name
        return other

    def history(self, limit: int | None = None):
        """Commits newest first, as a DataFrame (delta-spark's DESCRIBE HISTORY columns)."""
        from pyspark.sql.types import (BooleanType, LongType, MapType, StringType, StructField,
                                       StructType, TimestampType)
        from delta_pyds.log.history import history
        records = history(self._storage, limit=limit)
        schema = StructType([
            StructField("version", LongType()), StructField("timestamp", TimestampType()),
            StructField("userId", StringType()), StructField("userName", StringType()),
            StructField("operation", StringType()),
            StructField("operationParameters", MapType(StringType(), StringType())),
            StructField("readVersion", LongType()), StructField("isolationLevel", StringType()),
            StructField("isBlindAppend", BooleanType()),
            StructField("operationMetrics", MapType(StringType(), StringType())),
            StructField("userMetadata", StringType()), StructField("engineInfo", StringType()),
        ])
        rows = []
        for r in records:
            ts = dt.datetime.fromtimestamp(r["timestamp"] / 1000, tz=dt.timezone.utc) \
                if r.get("timestamp") is not None else None
            rows.append((r["version"], ts, _str(r.get("userId")), _str(r.get("userName")),
                         r.get("operation"), _str_map(r.get("operationParameters")),
                         r.get("readVersion"), r.get("isolationLevel"), r.get("isBlindAppend"),
                         _str_map(r.get("operationMetrics")), _str(r.get("userMetadata")),
                         _str(r.get("engineInfo"))))
        return self._spark.createDataFrame(rows, schema)

    def detail(self):
        """One row like delta-spark's DESCRIBE DETAIL."""
        from pyspark.sql.types import (ArrayType, IntegerType, LongType, MapType, StringType,
                                       StructField, StructType, TimestampType)
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
        clustering = [".".join(c) for c in
                      table_clustering(snap.schema, snap.domain_metadata, snap.column_mapping_mode) or []]
        schema = StructType([
            StructField("format", StringType()), StructField("id", StringType()),
            StructField("name", StringType()), StructField("description", StringType()),
            StructField("location", StringType()), StructField("createdAt", TimestampType()),
            StructField("lastModified", TimestampType()),
            StructField("partitionColumns", ArrayType(StringType())),
            StructField("clusteringColumns", ArrayType(StringType())),
            StructField("numFiles", LongType()), StructField("sizeInBytes", LongType()),
            StructField("properties", MapType(StringType(), StringType())),
            StructField("minReaderVersion", IntegerType()), StructField("minWriterVersion", IntegerType()),
            StructField("tableFeatures", ArrayType(StringType())),
            StructField("version", LongType()),
        ])
        row = ("delta", md.id, md.name, md.description, snap.table_root, created, modified,
               list(md.partition_columns), clustering, files.num_rows, size, dict(md.configuration),
               p.min_reader_version, p.min_writer_version, table_features, snap.version)
        return self._spark.createDataFrame([row], schema)

    # ---------------------------------------------------------------- maintenance
    def vacuum(self, retentionHours: float | None = None, dryRun: bool = True, *,
               enforceRetention: bool = True):
        """Deletes files no version inside the retention window needs.

        SAFE DEFAULT, unlike delta-spark: a dry run unless ``dryRun=False``. Returns a
        DataFrame with one ``path`` column (files deleted, or that would be)."""
        from delta_pyds.operations.vacuum import vacuum
        snap = self._snapshot()
        if "vacuumProtocolCheck" in features.writer_features(snap.protocol) or not dryRun:
            features.check_write(snap.protocol)
            features.check_read(snap.protocol)
        result = vacuum(snap, retention_hours=retentionHours, dry_run=dryRun,
                        enforce_retention=enforceRetention)
        self.lastVacuum = result
        return self._spark.createDataFrame([(f,) for f in result.files], "path string")

    def setProperties(self, properties: Mapping[str, str]) -> int:
        """Sets table properties (``delta.*`` ones are validated); returns the version."""
        from dataclasses import replace
        from delta_pyds.protocol.table_properties import (COLUMN_MAPPING_MODE, ENABLE_ROW_TRACKING, MIN_READER_VERSION,
                                       MIN_WRITER_VERSION, PROTOCOL_PROPERTIES, canonical_property,
                                       required_protocol, validate_properties)
        from delta_pyds.transaction.commit import Transaction
        props = {(canonical_property(k) if k.lower().startswith("delta.") else k):
                 (str(v).lower() if isinstance(v, bool) else str(v)) for k, v in properties.items()}
        validate_properties(props)
        snap = self._snapshot()
        features.check_write(snap.protocol)
        conf = dict(snap.configuration)
        for key in (COLUMN_MAPPING_MODE, ENABLE_ROW_TRACKING):
            if key in props and props[key].lower() != str(conf.get(key, "")).lower():
                raise ValueError(f"setProperties: changing {key} on an existing table is not supported "
                                 "by delta_pyds (it needs a metadata/data rewrite)")
        conf.update({k: v for k, v in props.items() if k not in PROTOCOL_PROPERTIES})
        txn = Transaction(self._storage, snap)
        feature_keys = [k for k in conf if k.startswith("delta.feature.")]
        if any(k in props for k in PROTOCOL_PROPERTIES) or feature_keys:
            txn.update_protocol(required_protocol(
                snap.schema, conf, snap.protocol,
                min_reader=int(props[MIN_READER_VERSION]) if MIN_READER_VERSION in props else None,
                min_writer=int(props[MIN_WRITER_VERSION]) if MIN_WRITER_VERSION in props else None))
        for k in feature_keys:  # delta.feature.* only asks for a protocol change, as in delta-spark
            del conf[k]
        txn.update_metadata(replace(snap.metadata, configuration=conf))
        return txn.commit("SET TBLPROPERTIES", {"properties": props}).version

    def upgradeProtocol(self, readerVersion: int, writerVersion: int) -> int:
        from delta_pyds.protocol.table_properties import required_protocol
        from delta_pyds.transaction.commit import Transaction
        snap = self._snapshot()
        p = snap.protocol
        if readerVersion < p.min_reader_version or writerVersion < p.min_writer_version:
            raise ValueError(f"cannot downgrade the protocol ({p.min_reader_version}, {p.min_writer_version}) "
                             f"to ({readerVersion}, {writerVersion})")
        new = required_protocol(snap.schema, snap.configuration, p, min_reader=readerVersion,
                                min_writer=writerVersion)
        if new == p:
            return snap.version
        txn = Transaction(self._storage, snap)
        txn.update_protocol(new)
        return txn.commit("UPGRADE PROTOCOL", {"newProtocol": json.dumps(new.to_dict())}).version

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
        from delta_pyds.table.state import file_actions
        from delta_pyds.transaction.commit import Transaction, remove_actions
        current = self._dml_snapshot()
        if timestamp is not None:
            from delta_pyds.log.time_travel import localize
            timestamp = localize(timestamp, self._session_time_zone())
        target = Snapshot.load(self._storage, version=version, timestamp=timestamp)
        features.check_read(target.protocol)
        cur = file_actions(current).active
        old = file_actions(target).active
        cur_keys = keys(cur)
        old_keys = keys(old)
        add_rows = [i for i, k in enumerate(old_keys) if k not in set(cur_keys)]
        rem_rows = [i for i, k in enumerate(cur_keys) if k not in set(old_keys)]
        to_add = old.take(pa.array(add_rows, pa.int64()))
        missing = [p for p in to_add.column("path").to_pylist()
                   if not self._storage.exists(self._storage.resolve(p))]
        if missing:
            raise DeltaError(
                f"cannot restore {self._path} to version {target.version}: {len(missing)} data file(s) "
                f"it needs are gone (e.g. {missing[0]}), probably deleted by VACUUM")
        for d in to_add.column("deletionVector").to_pylist():
            if d and d.get("storageType") in ("u", "p"):
                from delta_pyds.protocol.deletion_vectors import DeletionVectorDescriptor
                path = DeletionVectorDescriptor.from_dict(d).absolute_path(self._storage)
                if not self._storage.exists(path):
                    raise DeltaError(f"cannot restore to version {target.version}: deletion vector "
                                     f"file {path} is gone, probably deleted by VACUUM")
        adds = add_actions(to_add, data_change=True)
        removes = remove_actions(current_rows := cur.take(pa.array(rem_rows, pa.int64())))
        txn = Transaction(self._storage, current)
        txn.read_whole_table()
        if target.metadata.to_dict() != current.metadata.to_dict():
            txn.update_metadata(target.metadata)
        txn.remove_files(removes)
        txn.add_files(adds)
        metrics = {"tableSizeAfterRestore": sum_size(old), "numOfFilesAfterRestore": old.num_rows,
                   "numRemovedFiles": current_rows.num_rows, "numRestoredFiles": len(adds),
                   "removedFilesSize": sum_size(current_rows), "restoredFilesSize": sum_size(to_add)}
        params = {"version": target.version} if timestamp is None else {"timestamp": str(timestamp)}
        res = txn.commit("RESTORE", params, metrics=metrics)
        return self._spark.createDataFrame([tuple(metrics.values())], ", ".join(f"{k} long" for k in metrics)) \
            if res else None

    # ---------------------------------------------------------------- DML helpers
    def _dml_snapshot(self) -> Snapshot:
        snap = self._snapshot()
        features.check_write(snap.protocol)
        _row_tracking_columns(snap)  # refuses a tracked table without materialized column names
        return snap

    def _scan(self, snap: Snapshot, files: pa.Table):
        """A DataFrame of the live rows of ``files`` with the file path and the row's
        position in the file (columns ``__pydelta_file``, ``__pydelta_row_index``)."""
        from pyspark.sql.pandas.types import to_arrow_schema
        from pyspark.sql.types import LongType, StringType, StructField
        from delta_pyds.read.file_reader import ReadSpec
        from delta_pyds.spark.schema_convert import drop_void, to_spark_schema
        schema = drop_void(snap.schema)
        spark_schema = to_spark_schema(schema)
        spec = ReadSpec(storage=snap.storage, output=schema,
                        arrow_schema=to_arrow_schema(spark_schema, timezone="UTC", prefers_large_types=False),
                        partition_columns=tuple(snap.partition_columns),
                        physical_partition_columns=tuple(snap.physical_partition_columns),
                        column_mapping_mode=snap.column_mapping_mode, table_schema=snap.schema)
        out_schema = spark_schema.add(StructField(_FILE, StringType(), False)) \
            .add(StructField(_ROW, LongType(), False))
        tracking = _row_tracking_columns(snap)
        if tracking:
            out_schema = out_schema.add(StructField(_ROW_ID, LongType(), True)) \
                .add(StructField(_ROW_VERSION, LongType(), True))
        out_arrow = to_arrow_schema(out_schema, timezone="UTC", prefers_large_types=False)
        pcols = list(snap.physical_partition_columns)
        pv = files.column("partition_values").to_pylist() if pcols else [None] * files.num_rows
        dvs = files.column("deletion_vector").to_pylist()
        bases = files.column("base_row_id").to_pylist() if tracking else [None] * files.num_rows
        drcvs = files.column("default_row_commit_version").to_pylist() if tracking else [None] * files.num_rows
        tasks = [(p, int(s), json.dumps([(v or {}).get(c) for c in pcols]), json.dumps(d) if d else None, b, r)
                 for p, s, v, d, b, r in zip(files.column("path").to_pylist(), files.column("size").to_pylist(),
                                             pv, dvs, bases, drcvs)]

        def read(batches):
            from delta_pyds.protocol.deletion_vectors import keep_mask
            from delta_pyds.read.file_reader import task_deleted_rows, read_file
            from delta_pyds.read.scan import FileTask
            for b in batches:
                for path, size, pvs, dv, base, drcv in zip(*(b.column(i).to_pylist() for i in range(6))):
                    task = FileTask(path, size, tuple(json.loads(pvs)), json.loads(dv) if dv else None)
                    deleted = task_deleted_rows(spec.storage, task)
                    plain = FileTask(path, size, task.partition_values, None)
                    ids = _materialized(spec.storage, path, tracking) if tracking else None
                    start = 0
                    for out in read_file(spec, plain):
                        n = out.num_rows
                        rows = pa.array(np.arange(start, start + n, dtype=np.int64))
                        extra = [pa.array([path] * n, pa.string()), rows]
                        if tracking:
                            extra += _row_ids(ids, start, n, base, drcv)
                        batch = pa.RecordBatch.from_arrays(out.columns + extra, schema=out_arrow)
                        if deleted is not None:
                            batch = batch.filter(pa.array(keep_mask(deleted, start, n)))
                        start += n
                        if batch.num_rows:
                            yield batch

        n = max(1, min(len(tasks), self._parallelism() * 2))
        tdf = self._spark.createDataFrame(tasks or [("", 0, "[]", None, None, None)],
                                          "path string, size long, pv string, dv string, base long, drcv long")
        if not tasks:
            tdf = tdf.limit(0)
        return tdf.repartition(n).mapInArrow(read, out_schema)

    def _candidates(self, snap: Snapshot, condition) -> pa.Table:
        """The files that may hold rows matching ``condition`` (partition values and stats)."""
        preds = skipping_predicates(condition, snap.schema) if condition is not None else ()
        if not preds:
            return snap.files
        from delta_pyds.skipping.files import prune_files
        files, report = prune_files(snap.files, preds, schema=snap.schema,
                                    partition_columns=snap.partition_columns,
                                    column_mapping_mode=snap.column_mapping_mode)
        self.lastSkipping = report
        return files

    def _inline_dv_limit(self) -> int:
        """Deletion vectors up to this many serialized bytes are stored inline in the log
        (``spark.pydelta.deletionVectors.inlineMaxBytes``, default 64; 0: never)."""
        from delta_pyds.protocol.deletion_vectors import DEFAULT_INLINE_MAX_BYTES
        try:
            raw = self._spark.conf.get(INLINE_DV_CONF, None)
        except Exception:  # Spark Connect without the conf
            raw = None
        try:
            return max(0, int(raw)) if raw not in (None, "") else DEFAULT_INLINE_MAX_BYTES
        except ValueError:
            raise ValueError(f"{INLINE_DV_CONF}: expected a number of bytes, got {raw!r}") from None

    def _parallelism(self) -> int:
        try:
            return int(self._spark.sparkContext.defaultParallelism)
        except Exception:  # Spark Connect
            return 2

    def _write_spec(self, snap: Snapshot, *, target_file_size: int | None = None, row_tracking: bool = False):
        """The spec of files rewritten from the table's rows; with ``row_tracking`` (on a
        tracked table) its input also has the materialized row id and row commit version
        columns (the physical names the table configures), written as such."""
        from dataclasses import replace
        from delta_pyds.write.options import WriteOptions
        from delta_pyds.write.plan import plan_write
        from delta_pyds.spark.schema_convert import drop_void
        opts = {"path": self._path, **self._options}
        if target_file_size:
            opts["targetFileSize"] = str(target_file_size)
        plan = plan_write(WriteOptions.parse(opts, overwrite=False), drop_void(snap.schema),
                          storage=self._storage, keep_identity_values=True)
        if plan.metadata is not None or plan.protocol is not None:  # pragma: no cover
            raise DeltaError("internal: a rewrite must not change the table's metadata")
        tracking = _row_tracking_columns(snap) if row_tracking else None
        if not tracking:
            return plan.spec
        extra = tuple(_extra_field(name, "long", snap.column_mapping_mode) for name in tracking)
        schema = plan.spec.table_schema
        from delta_pyds.protocol.schema import StructType as DeltaStruct
        table_schema = DeltaStruct(schema.fields + extra)
        return replace(plan.spec, table_schema=table_schema,
                       input_columns=plan.spec.input_columns + tuple(f.name for f in extra), _derived={})

    def _tracked(self, snap: Snapshot, df, *, updated=None):
        """``df`` (scan rows, table columns first) with the materialized row tracking columns
        appended when the table tracks rows: row ids kept, commit versions kept except for
        rows where ``updated`` holds (null: they take the commit's version)."""
        from pyspark.sql import functions as F
        tracking = _row_tracking_columns(snap)
        names = [f"`{f.name}`" for f in snap.schema.fields if f.name in df.columns]
        if not tracking:
            return df.select(*names)
        version = F.col(_ROW_VERSION)
        if updated is not None:
            version = F.when(F.coalesce(updated, F.lit(False)), F.lit(None).cast("long")).otherwise(version)
        return df.select(*names, F.col(_ROW_ID).alias(tracking[0]), version.alias(tracking[1]))

    def _rewrite(self, df, spec, data_change: bool) -> list[dict]:
        """Writes the rows of ``df`` (table columns) as new files on executors; returns
        their add actions."""
        from delta_pyds.write.parquet_writer import write_task

        def write(batches):
            from delta_pyds.spark.writer import task_attempt
            tid, attempt = task_attempt()
            result = write_task(spec, batches, task_id=tid, attempt=attempt)
            out = []
            for a in result.adds:
                a = dict(a)
                a["dataChange"] = data_change
                out.append(json.dumps(a))
            yield pa.RecordBatch.from_arrays([pa.array(out, pa.string())], names=["add"])

        rows = df.mapInArrow(write, "add string").collect()
        return [json.loads(r["add"]) for r in rows]

    def _writes_changes(self, snap: Snapshot) -> bool:
        """Whether a copy-on-write DML commit must carry change data files."""
        return is_true(snap.configuration, ENABLE_CDF)

    def _write_changes(self, snap: Snapshot, changes) -> list[dict]:
        """Writes ``changes`` (the table's columns plus ``_change_type``) as change data
        files under ``_change_data`` (partitioned like the table); returns ``cdc`` actions."""
        from dataclasses import replace
        from delta_pyds.protocol.schema import StructType as DeltaStruct
        from delta_pyds.spark.schema_convert import drop_void
        spec = self._write_spec(snap)
        schema = drop_void(snap.schema)
        table_schema = DeltaStruct(schema.fields + (_extra_field(CHANGE_TYPE, "string", snap.column_mapping_mode),))
        spec = replace(spec, table_schema=table_schema, input_columns=tuple(table_schema.names),
                       stats_columns=(), checks=None, directory="_change_data", tight_bounds=False,
                       target_file_size=None, _derived={})
        files = self._rewrite(changes.select(*[f"`{n}`" for n in table_schema.names]), spec, False)
        return [{"path": a["path"], "partitionValues": a["partitionValues"], "size": a["size"],
                 "dataChange": False} for a in files]

    # ----------------------------------------------------------------------- DML
    def delete(self, condition=None) -> None:
        """Deletes the rows matching ``condition`` (SQL string or Column; None: all rows)."""
        from pyspark.sql import functions as F
        from delta_pyds.table.state import file_actions
        from delta_pyds.transaction.commit import Transaction, delete_files, remove_actions
        snap = self._dml_snapshot()
        active = file_actions(snap).active
        txn = Transaction(self._storage, snap)
        params = {"predicate": json.dumps([str(condition)] if condition is not None else [])}
        if condition is None:
            txn.read_whole_table()
            removes = remove_actions(active)
            txn.remove_files(removes)
            rows = num_live_rows(active)
            txn.commit("DELETE", params, metrics={"numRemovedFiles": len(removes), "numAddedFiles": 0,
                                                  "numDeletedRows": rows if rows is not None else -1,
                                                  "numDeletionVectorsAdded": 0})
            return
        cond = F.expr(condition) if isinstance(condition, str) else condition
        candidates = self._candidates(snap, condition)
        _record_read(txn, snap, condition, candidates)
        scan = self._scan(snap, candidates)
        use_dv = features.is_enabled(snap.protocol, "deletionVectors") and \
            is_true(snap.configuration, ENABLE_DV)
        if use_dv:
            def to_bitmap(table: pa.Table) -> pa.Table:
                # on executors: the row positions of one file, as DV bitmap bytes
                from delta_pyds.protocol.deletion_vectors import serialize_deleted_rows
                rows = table.column(_ROW).to_numpy()
                return pa.table({"file": pa.array([table.column(_FILE)[0].as_py()], pa.string()),
                                 "rows": pa.array([serialize_deleted_rows(rows)], pa.binary())})
            hits = (scan.where(cond).select(_FILE, _ROW).groupBy(_FILE)
                    .applyInArrow(to_bitmap, "file string, rows binary").collect())
            if not hits:
                return
            by_path = {p: i for i, p in enumerate(active.column("path").to_pylist())}
            idx = [by_path[h["file"]] for h in hits]
            old = active.take(pa.array(idx, pa.int64()))
            self._commit_dv_delete(snap, txn, old, [h["rows"] for h in hits], params)
            return
        matched = [r[_FILE] for r in scan.where(cond).select(_FILE).distinct().collect()]
        if not matched:
            return
        deleted_rows = scan.where(cond).count()
        in_files = scan.where(F.col(_FILE).isin(matched))
        hit = F.coalesce(cond, F.lit(False))
        spec = self._write_spec(snap, row_tracking=True)
        adds = self._rewrite(self._tracked(snap, in_files.where(~hit)), spec, True)
        written = list(adds)
        try:
            if self._writes_changes(snap):
                cdcs = self._write_changes(snap, in_files.where(hit).withColumn(CHANGE_TYPE, F.lit("delete")))
                written += cdcs
                txn.add_cdc_files(cdcs)
            victims = rows_for_paths(active, matched)
            txn.remove_files(remove_actions(victims))
            txn.add_files(adds)
            txn.commit("DELETE", params, metrics={
                "numRemovedFiles": victims.num_rows, "numAddedFiles": len(adds),
                "numDeletedRows": deleted_rows, "numDeletionVectorsAdded": 0,
                "numCopiedRows": sum(stat_rows(a) for a in adds)})
        except BaseException:
            delete_files(self._storage, written)
            raise

    def _commit_dv_delete(self, snap, txn, old: pa.Table, new_bitmaps: list, params) -> None:
        """Commits deletion vectors: ``new_bitmaps`` (serialized, one per row of ``old``)
        hold the rows deleted now, merged with each file's existing vector."""
        from pyroaring import BitMap64
        from delta_pyds.protocol.deletion_vectors import (DeletionVectorDescriptor, deserialize_deleted_rows, load_deleted_rows,
                                       store_deletion_vectors)
        from delta_pyds.transaction.commit import remove_actions
        import pyarrow.parquet as pq
        olds = add_actions(old, data_change=True)
        bitmaps, dv_files, full_files = [], [], []
        deleted_now = 0
        for a, path, data in zip(olds, old.column("path").to_pylist(), new_bitmaps):
            total = stat_rows(a, default=None)
            if total is None:
                with self._storage.open_input(self._storage.resolve(path)) as f:
                    total = pq.ParquetFile(f).metadata.num_rows
            bm = BitMap64(deserialize_deleted_rows(data, max_rows=total))
            prev = a.get("deletionVector")
            if prev:
                bm |= BitMap64(load_deleted_rows(self._storage, DeletionVectorDescriptor.from_dict(prev),
                                                 max_rows=total))
                deleted_now += len(bm) - int(prev.get("cardinality") or 0)
            else:
                deleted_now += len(bm)
            if len(bm) >= total:
                full_files.append(a)
            else:
                bitmaps.append(bm)
                dv_files.append(a)
        # small vectors go inline in the log (no DV file to write and read), larger ones into
        # one deletion_vector_*.bin file
        descriptors = store_deletion_vectors(self._storage, bitmaps, inline_max_bytes=self._inline_dv_limit())
        new_adds = []
        for a, d in zip(dv_files, descriptors):
            a = dict(a)
            a["deletionVector"] = d.to_dict()
            a["dataChange"] = True
            if a.get("stats"):
                loose = loosen_bounds(a["stats"])
                if loose is None:
                    a.pop("stats")
                else:
                    a["stats"] = loose
            new_adds.append(a)
        txn.remove_files(remove_actions(old))
        txn.add_files(new_adds)
        txn.commit("DELETE", params, metrics={
            "numRemovedFiles": len(full_files), "numAddedFiles": 0,
            "numDeletedRows": deleted_now, "numDeletionVectorsAdded": len(new_adds),
            "numDeletionVectorsUpdated": sum(1 for a in dv_files if a.get("deletionVector")),
            "numCopiedRows": 0})

    def update(self, condition=None, set: Mapping[str, Any] | None = None) -> None:
        """Sets columns (``{"col": "SQL expr" | Column}``) on rows matching ``condition``
        (copy-on-write: the files holding matching rows are rewritten)."""
        from pyspark.sql import functions as F
        from delta_pyds.table.state import file_actions
        from delta_pyds.transaction.commit import Transaction, delete_files, remove_actions
        if not set:
            raise ValueError("update: set must name at least one column")
        snap = self._dml_snapshot()
        names = {f.name.lower(): f.name for f in snap.schema.fields}
        unknown = [k for k in set if k.lower() not in names]
        if unknown:
            raise ValueError(f"update: {', '.join(unknown)} not in the table; columns: {', '.join(names.values())}")
        cond = F.lit(True) if condition is None else (F.expr(condition) if isinstance(condition, str) else condition)
        candidates = self._candidates(snap, condition)
        scan = self._scan(snap, candidates)
        matched = [r[_FILE] for r in scan.where(cond).select(_FILE).distinct().collect()]
        if not matched:
            return
        updated_rows = scan.where(cond).count()
        hit = F.coalesce(cond, F.lit(False))
        exprs = {names[k.lower()]: (F.expr(v) if isinstance(v, str) else v) for k, v in set.items()}
        _refuse_identity_updates(snap, exprs, "update")
        cols = []
        for f in snap.schema.fields:
            if f.name in exprs:
                cols.append(F.when(hit, exprs[f.name]).otherwise(F.col(f"`{f.name}`")).alias(f.name))
            else:
                cols.append(F.col(f"`{f.name}`"))
        in_files = scan.where(F.col(_FILE).isin(matched))
        spec = self._write_spec(snap, row_tracking=True)
        extra = [F.col(_ROW_ID), F.col(_ROW_VERSION)] if _row_tracking_columns(snap) else []
        flagged = in_files.withColumn("__pydelta_hit", hit).select(*cols, *extra, "__pydelta_hit")
        adds = self._rewrite(self._tracked(snap, flagged, updated=F.col("__pydelta_hit")), spec, True)
        written = list(adds)
        txn = Transaction(self._storage, snap)
        try:
            if self._writes_changes(snap):
                changed = in_files.where(hit)
                old = [F.col(f"`{f.name}`") for f in snap.schema.fields]
                new = [exprs[f.name].alias(f.name) if f.name in exprs else F.col(f"`{f.name}`")
                       for f in snap.schema.fields]
                changes = changed.select(*old, F.lit("update_preimage").alias(CHANGE_TYPE)).unionAll(
                    changed.select(*new, F.lit("update_postimage").alias(CHANGE_TYPE)))
                cdcs = self._write_changes(snap, changes)
                written += cdcs
                txn.add_cdc_files(cdcs)
            active = file_actions(snap).active
            victims = rows_for_paths(active, matched)
            _record_read(txn, snap, condition, candidates)
            txn.remove_files(remove_actions(victims))
            txn.add_files(adds)
            txn.commit("UPDATE", {"predicate": json.dumps([str(condition)] if condition is not None else [])},
                       metrics={"numRemovedFiles": victims.num_rows, "numAddedFiles": len(adds),
                                "numUpdatedRows": updated_rows,
                                "numCopiedRows": sum(stat_rows(a) for a in adds) - updated_rows})
        except BaseException:
            delete_files(self._storage, written)
            raise

    # ---------------------------------------------------------------------- merge
    def merge(self, source, condition) -> "DeltaMergeBuilder":
        """``dt.alias("t").merge(src.alias("s"), "t.id = s.id")`` then ``whenMatched*`` /
        ``whenNotMatched*`` clauses and ``.execute()`` (copy-on-write)."""
        return DeltaMergeBuilder(self, source, condition)

    # ------------------------------------------------------------------- optimize
    def optimize(self) -> "DeltaOptimizeBuilder":
        return DeltaOptimizeBuilder(self)


class DeltaMergeBuilder:
    """Clauses of a MERGE, applied in order within each kind (the first whose condition
    holds wins), as in delta-spark: ``whenMatched*`` for target rows with a source match,
    ``whenNotMatched*`` (by target) for source rows without one, ``whenNotMatchedBySource*``
    for target rows without one. A target row matched by several source rows is an error
    (``DELTA_MULTIPLE_SOURCE_ROW_MATCHING_TARGET_ROW_IN_MERGE``) unless the only matched
    clause is an unconditional ``whenMatchedDelete()``, as in delta-spark.
    Only files holding a row some clause changes are rewritten; on tables with the change
    data feed the commit carries change data files (inserts, deletes, update pre/post
    images)."""

    def __init__(self, table: DeltaTable, source, condition):
        self._table, self._source, self._condition = table, source, condition
        self._matched: list = []  # (kind, condition, set) kind: update | delete
        self._not_matched: list = []  # (condition, values)
        self._not_matched_by_source: list = []  # (kind, condition, set)

    def whenNotMatchedBySourceUpdate(self, condition=None,
                                     set: Mapping[str, Any] | None = None) -> "DeltaMergeBuilder":
        """Updates target rows no source row matches (``set`` may use target columns only)."""
        if not set:
            raise ValueError("whenNotMatchedBySourceUpdate: set must name at least one column")
        self._not_matched_by_source.append(("update", condition, dict(set)))
        return self

    def whenNotMatchedBySourceDelete(self, condition=None) -> "DeltaMergeBuilder":
        """Deletes target rows no source row matches."""
        self._not_matched_by_source.append(("delete", condition, None))
        return self

    def whenMatchedUpdate(self, condition=None, set: Mapping[str, Any] | None = None) -> "DeltaMergeBuilder":
        if not set:
            raise ValueError("whenMatchedUpdate: set must name at least one column")
        self._matched.append(("update", condition, dict(set)))
        return self

    def whenMatchedUpdateAll(self, condition=None) -> "DeltaMergeBuilder":
        self._matched.append(("update", condition, None))
        return self

    def whenMatchedDelete(self, condition=None) -> "DeltaMergeBuilder":
        self._matched.append(("delete", condition, None))
        return self

    def whenNotMatchedInsert(self, condition=None, values: Mapping[str, Any] | None = None) -> "DeltaMergeBuilder":
        if not values:
            raise ValueError("whenNotMatchedInsert: values must name at least one column")
        self._not_matched.append((condition, dict(values)))
        return self

    def whenNotMatchedInsertAll(self, condition=None) -> "DeltaMergeBuilder":
        self._not_matched.append((condition, None))
        return self

    def execute(self):
        from pyspark.sql import functions as F
        from delta_pyds.spark.schema_convert import drop_void, to_spark_schema
        from delta_pyds.table.state import file_actions
        from delta_pyds.transaction.commit import Transaction, delete_files, remove_actions
        t = self._table
        by_source = self._not_matched_by_source
        if not self._matched and not self._not_matched and not by_source:
            raise ValueError("merge: add at least one whenMatched*, whenNotMatched* or "
                             "whenNotMatchedBySource* clause")
        snap = t._dml_snapshot()
        tracking = _row_tracking_columns(snap)
        identities = {c.name: c for c in identity_columns(snap.schema)}
        generated_always = {n for n, c in identities.items() if not c.allow_explicit_insert}
        target_schema = to_spark_schema(drop_void(snap.schema))
        names = [f.name for f in target_schema.fields]
        lowered = {n.lower(): n for n in names}

        def expr(e):
            return F.expr(e) if isinstance(e, str) else e

        def target_name(k):
            k2 = k.split(".")[-1] if k.lower() not in lowered else k
            if k2.lower() not in lowered:
                raise ValueError(f"merge: {k} is not a column of the table; columns: {', '.join(names)}")
            return lowered[k2.lower()]

        for _, _, sets in list(self._matched) + list(by_source):
            if sets is not None:
                _refuse_identity_updates(snap, {target_name(k): v for k, v in sets.items()}, "merge")
        src = self._source.withColumn("__pydelta_src", F.lit(True))
        src_cols = {c.lower(): c for c in self._source.columns}

        def source_col(n):
            if n.lower() not in src_cols:
                raise ValueError(f"merge: updateAll/insertAll needs column {n} in the source")
            return src[src_cols[n.lower()]]

        talias = t._alias or "__pydelta_target"
        target = t._scan(snap, snap.files).alias(talias)
        cond = expr(self._condition)
        tcol = {n: F.col(f"`{talias}`.`{n}`") for n in names}
        tfile = F.col(f"`{talias}`.{_FILE}")
        metrics: dict[str, int] = {"numTargetRowsUpdated": 0, "numTargetRowsDeleted": 0,
                                   "numTargetRowsInserted": 0, "numTargetRowsMatchedUpdated": 0,
                                   "numTargetRowsMatchedDeleted": 0, "numTargetRowsNotMatchedBySourceUpdated": 0,
                                   "numTargetRowsNotMatchedBySourceDeleted": 0, "numTargetFilesRemoved": 0,
                                   "numTargetFilesAdded": 0}
        parts, changes = [], []
        touched: list = []
        marks: dict = {}
        # target-side clauses: matched ones first, then not-matched-by-source ones
        clauses = [(k, c, st, True) for k, c, st in self._matched] + [(k, c, st, False) for k, c, st in by_source]
        # delta-spark allows several source rows to match one target row only when the one
        # matched clause is an unconditional delete (every such pair deletes the same row)
        delete_all_matched = len(self._matched) == 1 and self._matched[0][:2] == ("delete", None)
        if clauses:
            if not delete_all_matched:
                dup = target.join(src, cond, "inner").groupBy(tfile, F.col(f"`{talias}`.{_ROW}")) \
                    .count().where("count > 1").limit(1).collect()
                if dup:
                    raise DeltaError(
                        "merge: several source rows matched the same target row and could change it in "
                        "conflicting ways (delta-spark: DELTA_MULTIPLE_SOURCE_ROW_MATCHING_TARGET_ROW_IN_"
                        "MERGE); deduplicate the source, or make the only whenMatched clause an "
                        "unconditional whenMatchedDelete()")
            matched = F.col("__pydelta_src").isNotNull()
            action = F.lit(0)
            for i in reversed(range(len(clauses))):
                kind, c, _, on_match = clauses[i]
                base = matched if on_match else ~matched
                hit = base if c is None else (base & F.coalesce(expr(c), F.lit(False)))
                action = F.when(hit, F.lit(i + 1)).otherwise(action)
            how = "left" if by_source else "inner"
            acted = target.join(src, cond, how).withColumn("__pydelta_action", action)
            touched = [r[0] for r in acted.where("__pydelta_action > 0").select(tfile).distinct().collect()]
        if touched:
            joined = target.where(tfile.isin(touched)).join(src, cond, "left") \
                .withColumn("__pydelta_action", action)
            if delete_all_matched:  # one row per target row, however many source rows matched it
                joined = joined.dropDuplicates([_FILE, _ROW])
            cols = []
            for f in target_schema.fields:
                value = tcol[f.name]
                for i in reversed(range(len(clauses))):
                    kind, _, sets, on_match = clauses[i]
                    if kind != "update":
                        continue
                    if sets is None:
                        if f.name in generated_always or (f.name in identities and f.name.lower() not in src_cols):
                            continue  # updateAll keeps the values the table generated
                        new = source_col(f.name)
                    else:
                        given = {target_name(k): v for k, v in sets.items()}
                        if f.name not in given:
                            continue
                        new = expr(given[f.name])
                    value = F.when(F.col("__pydelta_action") == i + 1, new).otherwise(value)
                cols.append(value.cast(f.dataType).alias(f.name))
            deletes = [i + 1 for i, c in enumerate(clauses) if c[0] == "delete"]
            updates = [i + 1 for i, c in enumerate(clauses) if c[0] == "update"]
            counts = {r[0]: r[1] for r in joined.groupBy("__pydelta_action").count().collect()}
            for i, (kind, _, _, on_match) in enumerate(clauses):
                key = ("numTargetRowsMatched" if on_match else "numTargetRowsNotMatchedBySource") + \
                    ("Deleted" if kind == "delete" else "Updated")
                metrics[key] += counts.get(i + 1, 0)
                metrics["numTargetRowsDeleted" if kind == "delete" else "numTargetRowsUpdated"] += counts.get(i + 1, 0)
            kept = joined.where(~F.col("__pydelta_action").isin(deletes)) if deletes else joined
            if tracking:  # row ids kept; updated rows take the commit's version
                parts.append(kept.select(*cols, F.col(_ROW_ID).alias(tracking[0]), F.when(
                    F.col("__pydelta_action").isin(updates), F.lit(None).cast("long"))
                    .otherwise(F.col(_ROW_VERSION)).alias(tracking[1])))
            else:
                parts.append(kept.select(*cols))
            if updates:
                upd = joined.where(F.col("__pydelta_action").isin(updates))
                changes.append(upd.select(*tcol.values(), F.lit("update_preimage").alias(CHANGE_TYPE)))
                changes.append(upd.select(*cols, F.lit("update_postimage").alias(CHANGE_TYPE)))
            if deletes:
                changes.append(joined.where(F.col("__pydelta_action").isin(deletes))
                               .select(*tcol.values(), F.lit("delete").alias(CHANGE_TYPE)))
        if self._not_matched:
            anti = src.join(target, cond, "left_anti")
            action = F.lit(0)
            for i in reversed(range(len(self._not_matched))):
                c, _ = self._not_matched[i]
                hit = F.lit(True) if c is None else F.coalesce(expr(c), F.lit(False))
                action = F.when(hit, F.lit(i + 1)).otherwise(action)
            anti = anti.withColumn("__pydelta_action", action).where("__pydelta_action > 0")
            cols = []
            for f in target_schema.fields:
                value = F.lit(None)
                for i in reversed(range(len(self._not_matched))):
                    _, values = self._not_matched[i]
                    if values is None:
                        if f.name in identities and f.name.lower() not in src_cols:
                            continue  # generated below
                        new = source_col(f.name)
                    else:
                        given = {target_name(k): v for k, v in values.items()}
                        if f.name not in given:
                            continue
                        new = expr(given[f.name])
                    value = F.when(F.col("__pydelta_action") == i + 1, new).otherwise(value)
                cols.append(value.cast(f.dataType).alias(f.name))
            inserts = anti.select(*cols)
            if identities:
                inserts, marks = self._generate_identity(inserts, identities, src_cols, target_name)
            metrics["numTargetRowsInserted"] = inserts.count()
            if metrics["numTargetRowsInserted"]:
                parts.append(inserts.select("*", *[F.lit(None).cast("long").alias(n) for n in tracking or ()]))
                changes.append(inserts.withColumn(CHANGE_TYPE, F.lit("insert")))
        if not touched and not metrics["numTargetRowsInserted"]:
            return None
        out = parts[0]
        for p in parts[1:]:
            out = out.unionByName(p)
        adds = t._rewrite(out, t._write_spec(snap, row_tracking=True), True)
        written = list(adds)
        txn = Transaction(t._storage, snap)
        marked = with_high_water_marks(snap.schema, marks)
        if marked is not None:
            from dataclasses import replace
            txn.update_metadata(replace(snap.metadata, schema_string=marked.json()))
        try:
            if t._writes_changes(snap) and changes:
                change_df = changes[0]
                for c in changes[1:]:
                    change_df = change_df.unionByName(c)
                cdcs = t._write_changes(snap, change_df)
                written += cdcs
                txn.add_cdc_files(cdcs)
            victims = rows_for_paths(file_actions(snap).active, touched)
            _record_read(txn, snap, self._condition, snap.files, alias=t._alias or "__pydelta_target")
            txn.remove_files(remove_actions(victims))
            txn.add_files(adds)
            metrics.update(numTargetFilesRemoved=victims.num_rows, numTargetFilesAdded=len(adds))
            txn.commit("MERGE", {"predicate": json.dumps([str(self._condition)]),
                                 "matchedPredicates": json.dumps([{"actionType": k} for k, _, _ in self._matched]),
                                 "notMatchedPredicates": json.dumps([{"actionType": "insert"}
                                                                     for _ in self._not_matched]),
                                 "notMatchedBySourcePredicates": json.dumps([{"actionType": k}
                                                                             for k, _, _ in by_source])},
                       metrics=metrics)
        except BaseException:
            delete_files(t._storage, written)
            raise
        return t._spark.createDataFrame([tuple(metrics.values())], ", ".join(f"{k} long" for k in metrics))

    def _generate_identity(self, inserts, identities: dict, src_cols: dict, target_name):
        """Inserted rows with values generated for the identity columns no insert clause
        sets (the same numbering as :mod:`delta_pyds.protocol.identity`: ``monotonically_increasing_id``
        spaces partitions by 2**33), pinned with a local checkpoint so the data and change
        files see the same values; returns them and the extreme value per column."""
        from pyspark.sql import functions as F
        generate = []
        for name, col in identities.items():
            gives = [(name.lower() in src_cols) if values is None
                     else name in {target_name(k) for k in values} for _, values in self._not_matched]
            if not any(gives):
                generate.append(col)
            elif not all(gives):
                raise ValueError(f"merge: some insert clauses set identity column {name} and others do "
                                 "not; set it in all of them or in none (then the table generates it)")
            elif not col.allow_explicit_insert:
                raise ValueError(f"merge: cannot insert values into identity column {name}: the table "
                                 "generates them (delta.identity.allowExplicitInsert=false); leave it out "
                                 "of the insert clauses (insertAll with a source without the column)")
        if not generate:
            return inserts, {}
        k = "__pydelta_identity_k"
        out = inserts.withColumn(k, F.monotonically_increasing_id())
        for col in generate:
            dtype = dict(out.dtypes)[col.name]
            out = out.withColumn(col.name, ((F.lit(col.first_k) + F.col(k)) * F.lit(col.step)
                                            + F.lit(col.start)).cast(dtype))
        out = out.localCheckpoint()
        top = out.agg(F.max(k)).collect()[0][0]
        if top is None:
            return out.drop(k), {}
        marks = {}
        for col in generate:  # the largest k holds the extreme value
            last = col.value(col.first_k + top)
            if not -(1 << 63) <= last < (1 << 63):
                raise ValueError(f"merge: identity column {col.name} would overflow a long ({last})")
            marks[col.name] = last
        return out.drop(k), marks


def _record_read(txn, snap: Snapshot, condition, files: pa.Table, *, alias: str | None = None) -> None:
    """Records what a DML operation read, for conflict detection as delta-spark does:
    the files it read (a concurrent remove of one conflicts) and the partitions its
    condition selects (a concurrent add there, other than a blind append, conflicts);
    without a partition conjunct in ``condition`` that is every partition."""
    node = _partition_conjuncts(condition, snap, alias)
    if node is None:
        txn.read_files(files.column("path").to_pylist())
        txn.read_partitions(lambda values: [True] * len(values),
                            "the whole table" if condition is None else f"the rows matching {condition}")
        return
    from delta_pyds.write.plan import partition_predicate
    pred = partition_predicate(node, snap.schema, snap.partition_columns, snap.column_mapping_mode)

    def conservative(values: list[dict]) -> list[bool]:
        try:
            return pred(values)
        except Exception:  # a value the predicate cannot evaluate: assume it was read
            return [True] * len(values)
    read = conservative(files.column("partition_values").to_pylist()) if files.num_rows else []
    txn.read_files(p for p, r in zip(files.column("path").to_pylist(), read) if r)
    txn.read_partitions(conservative, f"the partitions matching {condition}")


def _partition_conjuncts(condition, snap: Snapshot, alias: str | None = None):
    """The AND of the top-level conjuncts of a SQL ``condition`` that reference only
    partition columns (``alias.col`` when ``alias`` is given, e.g. MERGE's target), as an
    expression over the bare column names; None when there is none."""
    if not isinstance(condition, str) or not snap.partition_columns:
        return None
    from delta_pyds.expressions.ast import Call, Col, ExpressionError, columns_of
    from delta_pyds.expressions.parser import parse
    try:
        node = parse(condition)
    except (ExpressionError, ValueError):
        return None
    pcols = {c.lower(): c for c in snap.partition_columns}

    def strip(n):
        if isinstance(n, Col):
            path = n.path
            if alias is not None:
                if len(path) != 2 or path[0].lower() != alias.lower():
                    raise LookupError(path)
                path = path[1:]
            if len(path) != 1 or path[0].lower() not in pcols:
                raise LookupError(path)
            return Col((pcols[path[0].lower()],))
        if isinstance(n, Call):
            return Call(n.name, tuple(strip(a) for a in n.args))
        if columns_of(n):  # casts, CASE: kept only without column references
            raise LookupError(n)
        return n

    def conjuncts(n):
        if isinstance(n, Call) and n.name == "and":
            return [c for a in n.args for c in conjuncts(a)]
        return [n]
    kept = []
    for c in conjuncts(node):
        try:
            kept.append(strip(c))
        except LookupError:
            continue
    if not kept:
        return None
    out = kept[0]
    for c in kept[1:]:
        out = Call("and", (out, c))
    return out


def _refuse_identity_updates(snap: Snapshot, exprs: Mapping[str, Any], what: str) -> None:
    """Identity columns that generate their values cannot be set by DML (as in delta-spark)."""
    for col in identity_columns(snap.schema):
        if col.name in exprs and not col.allow_explicit_insert:
            raise ValueError(f"{what}: cannot set identity column {col.name}: the table generates its "
                             "values (delta.identity.allowExplicitInsert=false)")


class DeltaOptimizeBuilder:
    """``DeltaTable.optimize()``: ``.where(partition filter)``, ``.option("targetFileSize", n)``,
    then ``.executeCompaction()``."""

    def __init__(self, table: DeltaTable):
        self._table = table
        self._where: str | None = None
        self._target = DEFAULT_TARGET_FILE_SIZE
        self._min_files = 2

    def where(self, partitionFilter: str) -> "DeltaOptimizeBuilder":
        self._where = partitionFilter
        return self

    def option(self, key: str, value) -> "DeltaOptimizeBuilder":
        if key.lower() in ("targetfilesize", "maxfilesize"):
            self._target = int(value)
            if self._target <= 0:
                raise ValueError("targetFileSize must be > 0")
        else:
            raise ValueError(f"optimize: unknown option {key!r} (known: targetFileSize)")
        return self

    def executeCompaction(self):
        """Bin-packs files smaller than the target size, per partition, into files of
        about the target size; returns a one-row metrics DataFrame."""
        return self._execute(None)

    def executeZOrderBy(self, *cols):
        """Rewrites every file of each (selected) partition with its rows clustered along a
        Z-order curve of ``cols`` (numeric, date or timestamp columns; each is bucketed into
        256 approximate quantiles), into files of about the target size."""
        if len(cols) == 1 and isinstance(cols[0], (list, tuple)):
            cols = tuple(cols[0])
        if not cols or len(cols) > 7:
            raise ValueError("executeZOrderBy: give 1 to 7 columns")
        return self._execute(list(cols))

    def _execute(self, zorder):
        from delta_pyds.table.state import file_actions
        from delta_pyds.transaction.commit import Transaction, delete_files, remove_actions
        t = self._table
        snap = t._dml_snapshot()
        active = file_actions(snap).active
        files = snap.files
        from delta_pyds.protocol.clustering import dotted, table_clustering
        clustered = table_clustering(snap.schema, snap.domain_metadata, snap.column_mapping_mode)
        if zorder and clustered is not None:
            raise ValueError(f"executeZOrderBy: the table is clustered by "
                             f"{', '.join(dotted(p) for p in clustered) or 'no columns'}; Z-ordering "
                             "a clustered table is not allowed (as in delta-spark): executeCompaction "
                             "clusters the rows it rewrites by the clustering columns")
        if zorder:
            lowered = {f.name.lower(): f for f in snap.schema.fields}
            pset = {c.lower() for c in snap.partition_columns}
            for c in zorder:
                f = lowered.get(c.lower())
                if f is None:
                    raise ValueError(f"executeZOrderBy: {c} is not a column of the table")
                if c.lower() in pset:
                    raise ValueError(f"executeZOrderBy: {c} is a partition column")
                if getattr(f.type, "name", None) not in ("byte", "short", "integer", "long", "float", "double",
                                                         "date", "timestamp", "timestamp_ntz") \
                        and not str(getattr(f.type, "name", "")).startswith("decimal"):
                    raise ValueError(f"executeZOrderBy: {c} has type {f.type}; only numeric, date and "
                                     "timestamp columns are supported")
            zorder = [lowered[c.lower()].name for c in zorder]
        if self._where:
            from delta_pyds.write.plan import partition_predicate
            from delta_pyds.expressions.parser import parse
            node = parse(self._where)
            pred = partition_predicate(node, snap.schema, snap.partition_columns, snap.column_mapping_mode)
            keep = pred(active.column("partitionValues").to_pylist()) if active.num_rows else []
            active = active.filter(pa.array(keep, pa.bool_())) if active.num_rows else active
        # bins: per partition, small files (or files with a DV) packed up to the target size;
        # z-order: one bin per partition with every file
        pv = active.column("partitionValues").to_pylist()
        sizes = active.column("size").to_pylist()
        dvs = active.column("deletionVector").to_pylist()
        groups: dict = {}
        for i, (v, s, d) in enumerate(zip(pv, sizes, dvs)):
            if zorder or s < self._target or d:
                groups.setdefault(json.dumps(v, sort_keys=True), []).append(i)
        bins = []
        for members in groups.values():
            if zorder:
                bins.append(members)
                continue
            members.sort(key=lambda i: sizes[i])
            current, total = [], 0
            for i in members:
                if current and total + sizes[i] > self._target:
                    bins.append(current)
                    current, total = [], 0
                current.append(i)
                total += sizes[i]
            if current:
                bins.append(current)
        if not zorder:
            bins = [b for b in bins if len(b) >= self._min_files or any(dvs[i] for i in b)]
        chosen = sorted(i for b in bins for i in b)
        metrics = {"numFilesAdded": 0, "numFilesRemoved": 0, "filesAdded_totalSize": 0,
                   "filesRemoved_totalSize": 0, "numBatches": len(bins)}
        if not chosen:
            return t._spark.createDataFrame([tuple(metrics.values())], ", ".join(f"{k} long" for k in metrics))
        victims = active.take(pa.array(chosen, pa.int64()))
        victim_paths = set(victims.column("path").to_pylist())
        sel = [p in victim_paths for p in files.column("path").to_pylist()]
        scan_files = files.filter(pa.array(sel, pa.bool_()))
        # one Spark task per bin: route each file's rows to its bin's task
        bin_of = {active.column("path")[i].as_py(): b for b, members in enumerate(bins)
                  for i in members}
        from pyspark.sql import functions as F
        mapping = t._spark.createDataFrame(list(bin_of.items()), f"{_FILE} string, __bin int")
        df = t._scan(snap, scan_files).join(F.broadcast(mapping), _FILE).repartition(len(bins), "__bin")
        if zorder:
            df = df.withColumn("__z", _zorder_key(df, zorder)).sortWithinPartitions("__bin", "__z").drop("__z")
        elif clustered:
            df = df.withColumn("__z", _cluster_key(df, clustered)).sortWithinPartitions("__bin", "__z")\
                .drop("__z")
        df = t._tracked(snap, df)  # table columns (+ row ids and commit versions, kept)
        spec = t._write_spec(snap, target_file_size=self._target, row_tracking=True)
        adds = t._rewrite(df, spec, False)
        removes = remove_actions(victims, data_change=False)
        txn = Transaction(t._storage, snap)
        txn.remove_files(removes)
        txn.add_files(adds)
        metrics.update(numFilesAdded=len(adds), numFilesRemoved=len(removes),
                       filesAdded_totalSize=sum(int(a["size"]) for a in adds),
                       filesRemoved_totalSize=sum_size(victims))
        try:
            txn.commit("OPTIMIZE", {"predicate": json.dumps([self._where] if self._where else []),
                                    "zOrderBy": json.dumps(zorder or []),
                                    **({"clusterBy": json.dumps([".".join(p) for p in clustered])}
                                       if clustered else {}),
                                    "targetFileSize": str(self._target)}, metrics=metrics)
        except BaseException:
            delete_files(t._storage, adds)
            raise
        return t._spark.createDataFrame([tuple(metrics.values())], ", ".join(f"{k} long" for k in metrics))


# ------------------------------------------------------------------------ helpers
def _cluster_key(df, paths):
    """A sort key clustering rows by the clustering columns: their Z-order code when
    every column is numeric, date or timestamp, else the columns themselves in order."""
    from pyspark.sql import functions as F
    if all(len(p) == 1 for p in paths):
        types = dict(df.dtypes)
        if all(types.get(p[0], "") in ("tinyint", "smallint", "int", "bigint", "float", "double", "date",
                                       "timestamp", "timestamp_ntz") or types.get(p[0], "").startswith("decimal")
               for p in paths):
            return _zorder_key(df, [p[0] for p in paths])
    return F.struct(*[F.col(".".join(f"`{x}`" for x in p)) for p in paths])


def _zorder_key(df, cols, bits: int = 8):
    """A Spark column: the Morton (bit-interleaved) code of each column's approximate
    quantile bucket (``2**bits`` buckets; nulls in bucket 0)."""
    from pyspark.sql import functions as F
    n = 1 << bits
    types = dict(df.dtypes)
    values = [_as_double(c, types.get(c, "")) for c in cols]
    probe = df.select(*[v.alias(f"__q{i}") for i, v in enumerate(values)])
    quantiles = probe.approxQuantile([f"__q{i}" for i in range(len(cols))],
                                     [j / n for j in range(1, n)], 0.001)
    buckets = []
    for v, bounds in zip(values, quantiles):
        bounds = sorted(set(b for b in bounds if b is not None))
        b = F.lit(0)
        for x in bounds:
            b = b + F.when(v > F.lit(x), 1).otherwise(0)
        buckets.append(F.coalesce(b, F.lit(0)).cast("long"))
    k = len(cols)
    key = F.lit(0).cast("long")
    for bit in range(bits):
        for i, b in enumerate(buckets):
            key = key + F.shiftleft(F.shiftright(b, bit).bitwiseAND(F.lit(1)), bit * k + i)
    return key


def _as_double(c, spark_type: str):
    from pyspark.sql import functions as F
    col = F.col(f"`{c}`")
    if spark_type in ("date", "timestamp", "timestamp_ntz"):
        return F.unix_micros(col.cast("timestamp")).cast("double")
    return col.cast("double")


def _row_tracking_columns(snap: Snapshot) -> tuple[str, str] | None:
    """The physical names of the materialized row id and row commit version columns when
    the table tracks rows (rewrites must then carry every row's id and version over);
    None otherwise."""
    from delta_pyds.protocol.table_properties import ROW_COMMIT_VERSION_COLUMN, ROW_ID_COLUMN, ROW_TRACKING_SUSPENDED
    if not features.is_enabled(snap.protocol, "rowTracking") or \
            is_true(snap.configuration, ROW_TRACKING_SUSPENDED):
        return None
    names = (snap.configuration.get(ROW_ID_COLUMN), snap.configuration.get(ROW_COMMIT_VERSION_COLUMN))
    if not all(names):
        raise DeltaError(
            "this table supports row tracking but does not name its materialized row tracking columns "
            f"({ROW_ID_COLUMN}, {ROW_COMMIT_VERSION_COLUMN}); delta_pyds cannot rewrite its files "
            "without losing row ids")
    return names


def _extra_field(name: str, type_name: str, mode: str):
    """A column beyond the table schema written to files as ``name`` (physical)."""
    from delta_pyds.protocol.schema import COLUMN_MAPPING_PHYSICAL_NAME, PrimitiveType, StructField as DeltaField
    return DeltaField(name, PrimitiveType(type_name), True,
                      {COLUMN_MAPPING_PHYSICAL_NAME: name} if mode != "none" else {})


def _materialized(storage, path: str, names) -> list:
    """The materialized row id / commit version columns of a data file (None where absent)."""
    import pyarrow.parquet as pq
    with storage.open_input(storage.resolve(path)) as f:
        pf = pq.ParquetFile(f)
        present = [n for n in names if n in pf.schema_arrow.names]
        table = pf.read(columns=present) if present else None
    return [table.column(n).combine_chunks().cast(pa.int64()) if table is not None and n in present else None
            for n in names]


def _row_ids(materialized, start: int, n: int, base, drcv) -> list:
    """Row ids and commit versions of rows ``start .. start+n`` of a file: the materialized
    value, else ``baseRowId + position`` / ``defaultRowCommitVersion``."""
    ids, versions = materialized
    fallback_id = pa.array(np.arange(start, start + n, dtype=np.int64) + base) if base is not None \
        else pa.nulls(n, pa.int64())
    fallback_version = pa.array([drcv] * n, pa.int64())
    out_ids = pc.coalesce(ids.slice(start, n), fallback_id) if ids is not None else fallback_id
    out_versions = pc.coalesce(versions.slice(start, n), fallback_version) if versions is not None \
        else fallback_version
    return [out_ids, out_versions]


def _str(v):
    return None if v is None else (v if isinstance(v, str) else json.dumps(v))


def _str_map(v):
    if not isinstance(v, dict):
        return None
    return {str(k): _str(x) for k, x in v.items()}
