"""The Spark machinery every rewriting operation (DELETE: :mod:`~delta_pyds.spark.commands.delete`,
UPDATE: :mod:`~delta_pyds.spark.commands.update`, MERGE, OPTIMIZE) shares: reading a table's
live rows into Spark with their file and row position, rewriting rows as new data files on
executors, writing change data files.

Guarantees:

* :class:`TableRewriter` reads the snapshot a rewrite starts from after the writer
  protocol check; the files that may hold rows matching a condition are found by data
  skipping on it (partition values and statistics:
  :mod:`delta_pyds.expressions.to_predicates`, through the read core's
  :func:`~delta_pyds.read.scan_plan.plan_scan`);
* rows are read by Spark's Parquet reader and written by Spark's Parquet writer
  (:mod:`delta_pyds.spark.commands.native_rows`), or, where Spark's reader cannot serve the
  table, by pyarrow in Python workers (logged; ``TableRewriter.engine`` says which);
* rewritten files are planned as every write is (:func:`~delta_pyds.write.rewrite.plan_rewrite`)
  and keep every row's row id and commit version on tracked tables (rows an operation
  changes take the commit's version: :mod:`delta_pyds.operations.row_tracking`);
* change data files (``_change_data``, with ``_change_type``) are written partitioned like
  the table, for the copy-on-write operations of a table with
  ``delta.enableChangeDataFeed=true``;
* identity columns the table generates cannot be set by DML
  (:func:`refuse_identity_updates`); generated columns a statement does not set are
  recomputed from the rows' new values (:func:`regenerate`).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import pyarrow as pa

from delta_pyds.cdf.plan import CHANGE_TYPE
from delta_pyds.errors import CommitFailedError, ConstraintViolationError, IdentityColumnError, UnsupportedFeatureError
from delta_pyds.expressions.lexer import DEFAULT_DIALECT
from delta_pyds.expressions.to_predicates import skipping_predicates
from delta_pyds.operations.row_tracking import (
    read_materialized,
    row_ids,
    row_tracking_columns,
)
from delta_pyds.protocol import features
from delta_pyds.protocol.action_types import AddCDCFile, AddFile
from delta_pyds.protocol.identity import identity_columns
from delta_pyds.protocol.schema import StructType as DeltaStruct
from delta_pyds.protocol.table_properties import ENABLE_CDF, is_true
from delta_pyds.read.scan_plan import plan_scan
from delta_pyds.skipping.rules import SkippingReport
from delta_pyds.spark.commands.native_rows import SCAN_FILE, SCAN_ROW, SCAN_ROW_ID, SCAN_ROW_VERSION
from delta_pyds.spark.native import engine as row_engine
from delta_pyds.spark.session import projection
from delta_pyds.spark.session.dialect import session_dialect
from delta_pyds.storage.store import Storage
from delta_pyds.table.latest import latest_snapshot
from delta_pyds.table.snapshot import Snapshot
from delta_pyds.write.constraints import GENERATION_EXPRESSION
from delta_pyds.write.parquet_writer import WriteSpec
from delta_pyds.write.plan import WritePlan
from delta_pyds.write.rewrite import plan_rewrite

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession
    from pyspark.sql.types import StructType as SparkStructType

    from delta_pyds.protocol.actions import Metadata, Protocol
    from delta_pyds.protocol.schema import StructField as DeltaField
    from delta_pyds.read.file_reader import ReadSpec
    from delta_pyds.spark.commands.args import OptionalExpressionOrColumn

log = logging.getLogger(__name__)


def now_ms() -> int:
    """Milliseconds since the epoch (the operations' timing metrics)."""
    return int(time.time() * 1000)


class OpTimes:
    """An operation's timing metrics, as delta-spark records them: ``executionTimeMs`` (the
    whole operation up to its commit), ``scanTimeMs`` (finding the rows it changes) and
    ``rewriteTimeMs`` (writing what replaces them)."""

    def __init__(self) -> None:
        self.started = now_ms()
        self.scanned: int | None = None

    def scan_done(self) -> None:
        self.scanned = now_ms()

    def metrics(self) -> dict[str, int]:
        done = now_ms()
        scanned = self.scanned if self.scanned is not None else done
        return {
            "executionTimeMs": done - self.started,
            "scanTimeMs": scanned - self.started,
            "rewriteTimeMs": done - scanned,
        }


class TableRewriter:
    """Reads a table's live rows into Spark and writes rows back as data files: what
    delete, update, merge and optimize run on."""

    def __init__(self, spark: SparkSession, path: str, options: Mapping[str, str], storage: Storage) -> None:
        self.spark = spark
        self.path = path
        self.options = dict(options)
        self.storage = storage
        self.last_skipping: SkippingReport | None = None  # the report of the last pruned scan
        # which engine the last scan / rewrite ran on: "native" (Spark's Parquet reader and
        # writer) or "python" (pyarrow in Python workers; why not native is logged)
        self.engine: str | None = None

    def dml_snapshot(self) -> Snapshot:
        """The latest snapshot, after the writer protocol check (and the row tracking one)."""
        snap = latest_snapshot(self.storage)
        features.check_write(snap.protocol)
        row_tracking_columns(snap)  # refuses a tracked table without materialized column names
        return snap

    def scan(self, snap: Snapshot, files: pa.Table, *, alias: str | None = None) -> DataFrame:
        """A DataFrame of the live rows of ``files`` with the file path and the row's
        position in the file (columns ``__pydelta_file``, ``__pydelta_row_index``).
        Read by Spark's Parquet reader (:mod:`delta_pyds.spark.commands.native_rows`), or
        by pyarrow in Python workers where Spark's reader cannot serve the table. With
        ``alias`` the DataFrame is that relation under the alias (``DataFrame.alias``), so
        Spark's analyzer resolves ``alias.col`` in conditions and values with its own scoping
        (subqueries, lambdas)."""
        df = self._scan(snap, files)
        return df.alias(alias) if alias is not None else df

    def _scan(self, snap: Snapshot, files: pa.Table) -> DataFrame:
        from delta_pyds.spark.commands.native_rows import native_rows

        engine = row_engine.dml_engine(self.spark)  # module attribute: tests count the reads
        if engine != "python":
            df, reason = native_rows(
                self.spark,
                snap,
                files,
                file_col=SCAN_FILE,
                row_col=SCAN_ROW,
                tracking=row_tracking_columns(snap),
                row_id_col=SCAN_ROW_ID,
                row_version_col=SCAN_ROW_VERSION,
            )
            if df is not None:
                self.engine = "native"
                log.info("pydelta DML on %s v%s: Spark's Parquet reader and writer", self.path, snap.version)
                return df
            row_engine.fall_back(
                engine == "native",
                f"pydelta: Spark's reader cannot serve {self.path}: {reason}",
                f"pydelta DML on {self.path}: rows through Python workers: {reason}",
                log,
            )
        self.engine = "python"
        return self._python_scan(snap, files)

    def _python_scan(self, snap: Snapshot, files: pa.Table) -> DataFrame:
        """:meth:`scan` by pyarrow in Python workers: one task row per file, read there."""
        from delta_pyds.spark.session.compat import arrow_schema
        from delta_pyds.spark.session.schema_convert import to_spark_schema

        scan = plan_scan(snap, files=files)  # the read core: same columns and files as every reader
        spark_schema = to_spark_schema(scan.output)
        spec = scan.read_spec(arrow_schema(spark_schema))
        tracking = row_tracking_columns(snap)
        out_schema = _scan_schema(spark_schema, tracking)
        out_arrow = arrow_schema(out_schema)
        tasks = _scan_tasks(snap, scan.files, tracking)
        n = max(1, min(len(tasks), self.parallelism() * 2))
        tdf = self.spark.createDataFrame(
            tasks or [("", 0, "[]", None, None, None)],
            "path string, size long, pv string, dv string, base long, drcv long",
        )
        if not tasks:
            tdf = tdf.limit(0)
        return tdf.repartition(n).mapInArrow(_row_reader(spec, out_arrow, tracking), out_schema)

    def rescan(
        self, snap: Snapshot, candidates: pa.Table, scan: DataFrame, matched: list[str], *, alias: str | None = None
    ) -> DataFrame:
        """The rows of the ``matched`` files among ``candidates``: ``scan`` (their scan)
        again when every candidate matched (no second planning and listing), else a scan
        of only those files (Spark then reads only them), under ``alias`` as ``scan`` is."""
        if len(set(matched)) == candidates.num_rows:
            return scan
        return self.scan(snap, only_files(candidates, matched), alias=alias)

    def candidates(
        self,
        snap: Snapshot,
        condition: OptionalExpressionOrColumn,
        *,
        rendered: bool = False,
        alias: str | None = None,
    ) -> pa.Table:
        """The files that may hold rows matching ``condition`` (partition values and stats).
        SQL text is read as Spark reads it in this session, or in the default dialect when
        ``rendered`` (text this package rendered itself); with ``alias``, over the table under
        that alias (:func:`~delta_pyds.expressions.to_predicates.skipping_predicates`)."""
        dialect = DEFAULT_DIALECT if rendered else session_dialect(self.spark)
        preds = skipping_predicates(condition, snap.schema, dialect, alias=alias) if condition is not None else ()
        if not preds:
            return snap.files
        scan = plan_scan(snap, predicates=preds)  # the read core's pruning, as every reader's
        self.last_skipping = scan.report
        return scan.files

    def inline_dv_limit(self) -> int:
        """Deletion vectors up to this many serialized bytes are stored inline in the log
        (``spark.pydelta.deletionVectors.inlineMaxBytes``, default 64; 0: never)."""
        from delta_pyds.protocol.deletion_vectors import DEFAULT_INLINE_MAX_BYTES
        from delta_pyds.spark.session.conf import INLINE_DV_CONF, byte_count

        return byte_count(self.spark, INLINE_DV_CONF, DEFAULT_INLINE_MAX_BYTES)

    def parallelism(self) -> int:
        try:
            return int(self.spark.sparkContext.defaultParallelism)
        except Exception:  # Spark Connect
            return 2

    def write_spec(
        self,
        snap: Snapshot,
        *,
        target_file_size: int | None = None,
        row_tracking: bool = False,
        evolved_schema: DeltaStruct | None = None,
    ) -> WriteSpec:
        """The spec of files rewritten from the table's rows; with ``row_tracking`` (on a
        tracked table) its input also has the materialized row id and row commit version
        columns (the physical names the table configures), written as such. With
        ``evolved_schema`` (the table's schema plus new columns: MERGE with schema
        evolution) the spec writes that schema; :meth:`evolution` gives its metadata."""
        from dataclasses import replace

        plan = self._plan(snap, target_file_size, evolved_schema)
        if evolved_schema is None and (plan.metadata is not None or plan.protocol is not None):  # pragma: no cover
            raise CommitFailedError("internal: a rewrite must not change the table's metadata")
        spec = cast(WriteSpec, plan.spec)  # a write without metadata changes has its spec
        tracking = row_tracking_columns(snap) if row_tracking else None
        if not tracking:
            return spec
        extra = tuple(_extra_field(name, "long", snap.column_mapping_mode) for name in tracking)
        schema = spec.table_schema
        table_schema = DeltaStruct(schema.fields + extra)
        return replace(
            spec,
            table_schema=table_schema,
            input_columns=spec.input_columns + tuple(f.name for f in extra),
            _derived={},
        )

    def evolution(self, snap: Snapshot, evolved_schema: DeltaStruct) -> tuple[Metadata | None, Protocol | None]:
        """``(metadata, protocol)`` to commit for a rewrite into ``evolved_schema`` (either
        None when unchanged), with the schema as the write path reconciles it (column
        mapping ids for new columns)."""
        plan = self._plan(snap, None, evolved_schema)
        return plan.metadata, plan.protocol

    def _plan(self, snap: Snapshot, target_file_size: int | None, evolved_schema: DeltaStruct | None) -> WritePlan:
        return plan_rewrite(
            self.storage,
            evolved_schema if evolved_schema is not None else snap.schema,
            target_file_size=target_file_size,
            evolve_schema=evolved_schema is not None,
            snapshot=snap,  # the version the rows were read from: no second load
            spark_sql_rules=self.engine == "native",  # Spark's writer evaluates every rule
        )

    def tracked(self, snap: Snapshot, df: DataFrame, *, updated: Column | None = None) -> DataFrame:
        """``df`` (scan rows, table columns first) with the materialized row tracking columns
        appended when the table tracks rows: row ids kept, commit versions kept except for
        rows where ``updated`` holds (null: they take the commit's version)."""
        from pyspark.sql import functions as F

        tracking = row_tracking_columns(snap)
        present = set(df.columns)
        names: list[Column | str] = [projection.ident(f.name) for f in snap.schema.fields if f.name in present]
        if not tracking:
            return projection.select(df, names)
        version = F.col(SCAN_ROW_VERSION)
        if updated is not None:
            version = F.when(F.coalesce(updated, F.lit(False)), F.lit(None).cast("long")).otherwise(version)
        return projection.select(df, [*names, F.col(SCAN_ROW_ID).alias(tracking[0]), version.alias(tracking[1])])

    def rewrite(self, df: DataFrame, spec: WriteSpec, data_change: bool) -> list[AddFile]:
        """Writes the rows of ``df`` (table columns) as new files on executors; returns
        their add actions (with ``spec.directory``: files under that directory, e.g.
        change data files). Spark's Parquet writer writes them when the last scan ran on
        Spark's reader, else Python workers with pyarrow; also Python workers when Spark's
        writer turns out not to reach the store (a scan of no files never asked Spark),
        unless the session's engine is ``native``."""
        if self.engine == "native":
            from delta_pyds.spark.commands.native_rows import native_rewrite

            adds, why = native_rewrite(self.spark, self.storage, df, spec, data_change=data_change)
            if adds is not None:
                return adds
            row_engine.fall_back(
                row_engine.dml_engine(self.spark) == "native",
                f"pydelta: Spark's writer cannot reach {self.path}: {why}",
                f"pydelta DML on {self.path}: rows written by Python workers: {why}",
                log,
            )
            self.engine = "python"
        return self._python_rewrite(df, spec, data_change)

    def _python_rewrite(self, df: DataFrame, spec: WriteSpec, data_change: bool) -> list[AddFile]:
        from delta_pyds.write.parquet_writer import write_task

        spark_only = spec.checks.spark_only() if spec.checks else []
        if spark_only:  # planned for Spark's writer, which cannot reach the store
            raise UnsupportedFeatureError(
                f"cannot rewrite {self.path} with Python workers: {spark_only[0]} cannot be evaluated by "
                "delta_pyds (only Spark SQL evaluates it, and Spark's writer cannot reach this store)",
                (),
            )
        names = df.columns
        # pyspark's mapInArrow looks each column up by its name (df[name]), which a name with a
        # backquote or a dot breaks: the columns go through it by position, renamed in the task
        df = df.toDF(*[f"c{i}" for i in range(len(names))])

        def write(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            from delta_pyds.spark.datasource.writer import task_attempt

            tid, attempt = task_attempt()
            named = (b.rename_columns(names) for b in batches)
            result = write_task(spec, named, task_id=tid, attempt=attempt)
            out = []
            for a in result.adds:
                a = dict(a)
                a["dataChange"] = data_change
                out.append(json.dumps(a))
            yield pa.RecordBatch.from_arrays([pa.array(out, pa.string())], names=["add"])

        try:
            rows = df.mapInArrow(write, "add string").collect()
        except Exception as exc:  # a rule a task refused: the named error, as the native writer raises it
            violation = _worker_violation(exc)
            if violation is None:
                raise
            raise ConstraintViolationError(violation) from None
        return [json.loads(r["add"]) for r in rows]

    def writes_changes(self, snap: Snapshot) -> bool:
        """Whether a copy-on-write DML commit must carry change data files."""
        return is_true(snap.configuration, ENABLE_CDF)

    def write_changes(
        self, snap: Snapshot, changes: DataFrame, *, evolved_schema: DeltaStruct | None = None
    ) -> list[AddCDCFile]:
        """Writes ``changes`` (the table's columns plus ``_change_type``) as change data
        files under ``_change_data`` (partitioned like the table); returns ``cdc`` actions."""
        from dataclasses import replace

        from delta_pyds.spark.session.schema_convert import drop_void

        spec = self.write_spec(snap, evolved_schema=evolved_schema)
        schema = spec.table_schema if evolved_schema is not None else drop_void(snap.schema)
        table_schema = DeltaStruct(schema.fields + (_extra_field(CHANGE_TYPE, "string", snap.column_mapping_mode),))
        spec = replace(
            spec,
            table_schema=table_schema,
            input_columns=tuple(table_schema.names),
            stats_columns=(),
            checks=None,
            directory="_change_data",
            tight_bounds=False,
            target_file_size=None,
            _derived={},
        )
        files = self.rewrite(projection.select(changes, [projection.ident(n) for n in table_schema.names]), spec, False)
        return [
            {"path": a["path"], "partitionValues": a["partitionValues"], "size": a["size"], "dataChange": False}
            for a in files
        ]


def _worker_violation(exc: BaseException) -> str | None:
    """The message of a ``ConstraintViolationError`` a Python worker raised, if ``exc`` (Spark's
    error for the failed job) carries one."""
    marker = ConstraintViolationError.__name__ + ": "
    for line in str(exc).splitlines():
        at = line.find(marker)
        if at >= 0:
            return line[at + len(marker) :].strip()
    return None


def only_files(files: pa.Table, paths: list[str]) -> pa.Table:
    """The rows of ``files`` (snapshot file rows) whose path is in ``paths``."""
    import pyarrow.compute as pc

    return files.filter(pc.is_in(files.column("path"), value_set=pa.array(paths, pa.string())))


def table_spark_schema(snap: Snapshot) -> SparkStructType:
    """The Spark schema of the table's columns (what DML conditions and sets resolve against)."""
    from delta_pyds.spark.session.schema_convert import drop_void, to_spark_schema

    return to_spark_schema(drop_void(snap.schema))


def generated_expressions(snap: Snapshot) -> dict[str, str]:
    """The table's generated columns: name -> generation expression (Spark SQL text)."""
    return {
        f.name: str(f.metadata[GENERATION_EXPRESSION])
        for f in snap.schema.fields
        if (f.metadata or {}).get(GENERATION_EXPRESSION)
    }


def regenerate(snap: Snapshot, df: DataFrame, where: Mapping[str, Column]) -> DataFrame:
    """``df`` (the table's columns by name, holding the values to write) with each generated
    column named in ``where`` set to its expression over those values on the rows where its
    condition holds, as delta-spark recomputes generated columns on UPDATE and MERGE (the
    write then checks the columns a statement set explicitly)."""
    from pyspark.sql import functions as F

    if not where:
        return df
    expressions = generated_expressions(snap)
    types = {f.name: f.dataType for f in table_spark_schema(snap).fields}
    for name, hit in where.items():
        value = F.expr(expressions[name]).cast(types[name])
        df = df.withColumn(name, F.when(hit, value).otherwise(F.col(f"`{name}`")))
    return df


def refuse_identity_updates(snap: Snapshot, exprs: Mapping[str, Any], what: str) -> None:
    """Identity columns that generate their values cannot be set by DML (as in delta-spark)."""
    for col in identity_columns(snap.schema):
        if col.name in exprs and not col.allow_explicit_insert:
            raise IdentityColumnError(
                f"{what}: cannot set identity column {col.name}: the table generates its "
                "values (delta.identity.allowExplicitInsert=false)"
            )


def _extra_field(name: str, type_name: str, mode: str) -> DeltaField:
    """A column beyond the table schema written to files as ``name`` (physical)."""
    from delta_pyds.protocol.schema import COLUMN_MAPPING_PHYSICAL_NAME, PrimitiveType
    from delta_pyds.protocol.schema import StructField as DeltaField

    return DeltaField(
        name, PrimitiveType(type_name), True, {COLUMN_MAPPING_PHYSICAL_NAME: name} if mode != "none" else {}
    )


def _scan_schema(spark_schema: SparkStructType, tracking: tuple[str, str] | None) -> SparkStructType:
    """The scan's Spark schema: the table's columns, the file and row position, and the
    row id and commit version on tracked tables."""
    from pyspark.sql.types import LongType, StringType, StructField

    out = spark_schema.add(StructField(SCAN_FILE, StringType(), False)).add(StructField(SCAN_ROW, LongType(), False))
    if tracking:
        out = out.add(StructField(SCAN_ROW_ID, LongType(), True)).add(StructField(SCAN_ROW_VERSION, LongType(), True))
    return out


def _scan_tasks(snap: Snapshot, files: pa.Table, tracking: tuple[str, str] | None) -> list[tuple[Any, ...]]:
    """One row per file: path, size, partition values and deletion vector (JSON), and the
    row tracking base id and default commit version (None on untracked tables)."""
    pcols = list(snap.physical_partition_columns)
    pv = files.column("partition_values").to_pylist() if pcols else [None] * files.num_rows
    dvs = files.column("deletion_vector").to_pylist()
    bases = files.column("base_row_id").to_pylist() if tracking else [None] * files.num_rows
    drcvs = files.column("default_row_commit_version").to_pylist() if tracking else [None] * files.num_rows
    return [
        (p, int(s), json.dumps([(v or {}).get(c) for c in pcols]), json.dumps(d) if d else None, b, r)
        for p, s, v, d, b, r in zip(
            files.column("path").to_pylist(), files.column("size").to_pylist(), pv, dvs, bases, drcvs
        )
    ]


def _row_reader(
    spec: ReadSpec, out_arrow: pa.Schema, tracking: tuple[str, str] | None
) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The executor side of :meth:`TableRewriter._python_scan`: the live rows of each task
    row's file with the file, the row's position and (tracked tables) its row id and
    commit version."""

    def read(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from delta_pyds.protocol.deletion_vectors import keep_mask
        from delta_pyds.read.file_reader import read_file, task_deleted_rows
        from delta_pyds.read.scan import FileTask

        for b in batches:
            for path, size, pvs, dv, base, drcv in zip(*(b.column(i).to_pylist() for i in range(6))):
                task = FileTask(path, size, tuple(json.loads(pvs)), json.loads(dv) if dv else None)
                deleted = task_deleted_rows(spec.storage, task)
                plain = FileTask(path, size, task.partition_values, None)
                ids = read_materialized(spec.storage, path, tracking) if tracking else None
                start = 0
                for out in read_file(spec, plain):
                    n = out.num_rows
                    rows = pa.array(np.arange(start, start + n, dtype=np.int64))
                    extra = [pa.array([path] * n, pa.string()), rows]
                    if tracking:
                        extra += row_ids(ids, start, n, base, drcv)
                    batch = pa.RecordBatch.from_arrays(out.columns + extra, schema=out_arrow)
                    if deleted is not None:
                        batch = batch.filter(pa.array(keep_mask(deleted, start, n)))
                    start += n
                    if batch.num_rows:
                        yield batch

    return read
