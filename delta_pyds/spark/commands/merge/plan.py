"""The plan of one MERGE (:class:`MergePlan`), built once by :func:`plan_merge` from the
builder's clauses and the snapshot read, and the names of the internal columns the merge
adds to its joined rows.

Guarantees:

* a plan is complete when built and its fields are not reassigned after: the clauses (typed
  :class:`~delta_pyds.spark.commands.merge.clauses.MergeClause` values, checked against the
  target and the source), the target's schema and alias, the schema evolution result, the
  pinned source, the candidate target files after pruning and their scan all come from the
  ONE snapshot passed in (no step loads the table again); what it memoizes on first use
  (column references, the target's column lists) is derived from those fields only;
* action numbers: target-side clauses (``whenMatched*``, then ``whenNotMatchedBySource*``,
  each kind in the order given) are ``1..n``, insert clauses ``n+1..``; ``0`` is no clause;
* the internal column names start with ``__pydelta_`` (they never collide with a user's
  column in practice and never reach a written file);
* :meth:`MergePlan.target_name` resolves a user's column name case-insensitively or raises
  :class:`~delta_pyds.errors.ColumnNotFoundError` (a ``ValueError``) naming the table's
  columns; the source is pinned (a local checkpoint) before anything reads it and released if
  planning fails.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

from delta_pyds.errors import ColumnNotFoundError
from delta_pyds.operations.row_tracking import row_tracking_columns
from delta_pyds.protocol.identity import IdentityColumn, identity_columns
from delta_pyds.protocol.schema import StructType as DeltaStruct
from delta_pyds.spark.commands.args import ExpressionOrColumn
from delta_pyds.spark.commands.merge.clauses import Expression, MergeClause
from delta_pyds.spark.commands.merge.evolution import evolved_for, to_schema
from delta_pyds.spark.commands.merge.pruning import candidate_files
from delta_pyds.spark.commands.native_rows import SCAN_FILE
from delta_pyds.spark.commands.resolution import check_merge_resolves, parse_column_path, set_column_names
from delta_pyds.spark.commands.rewriter import TableRewriter, only_files, refuse_identity_updates
from delta_pyds.spark.session import projection
from delta_pyds.table.snapshot import Snapshot
from delta_pyds.transaction.staged_files import cleanup_on_failure

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import Column, DataFrame
    from pyspark.sql.types import StructType as SparkStructType

DEFAULT_TARGET_ALIAS = "__pydelta_target"
SRC = "__pydelta_src"  # a non-null column of the source: null on target rows no source row matches
ACTION = "__pydelta_action"  # which clause a joined row takes (see output.target_action)
MATCHED = "__pydelta_matched"  # the row pairs a target row with a source row
SRC_ID = "__pydelta_src_id"  # a unique number per source row (pinned with the source): inserts, identity values
SRC_REF = "__pydelta_s"  # + index of the source column: its second, unambiguous name (SQL text of written values)


@dataclass(frozen=True)
class MergePlan:
    """What every step of one MERGE execution reads: the snapshot, the clauses, the target's
    columns, candidate files and scan, the pinned source and the join condition."""

    rewriter: TableRewriter
    snap: Snapshot
    condition: ExpressionOrColumn  # the merge condition as given (commit parameters, read set)
    cond: Column  # the join condition as a Column
    clauses: tuple[MergeClause, ...]  # target-side: matched, then not matched by source (actions 1..n)
    inserts: tuple[MergeClause, ...]  # the not-matched (insert) clauses, in order (actions n+1..)
    talias: str
    target_schema: SparkStructType  # the target's columns (evolved when the schema evolves)
    src: DataFrame  # the pinned source, with the non-null __pydelta_src and __pydelta_src_id columns
    src_cols: Mapping[str, str]  # lowercase -> source column name
    tracking: tuple[str, str] | None
    identities: Mapping[str, IdentityColumn]
    generated_always: frozenset[str]
    evolved: DeltaStruct | None  # the table's schema with the source's new columns (schema evolution)
    evolve: bool  # withSchemaEvolution()
    files: pa.Table  # the candidate target files (snapshot file rows) after pruning
    target: DataFrame  # the target's scan of every candidate file, aliased
    source_rows: int | None  # the source's rows (numSourceRows), when the pruning job counted them
    pinned: DataFrame | None = None  # the checkpointed source under ``src`` (src adds the SQL names below)
    # source column -> a unique name ``src`` also gives it: SQL text can name it unambiguously
    src_refs: Mapping[str, str] = field(default_factory=dict)

    @property
    def by_source(self) -> bool:
        """A ``whenNotMatchedBySource*`` clause exists (every target row is needed)."""
        return any(c.when == "not_matched_by_source" for c in self.clauses)

    @property
    def delete_all_matched(self) -> bool:
        """The only matched clause is an unconditional delete: several source rows may then
        match one target row (delta-spark allows it: every such pair deletes the same row)."""
        matched = [c for c in self.clauses if c.when == "matched"]
        return len(matched) == 1 and matched[0].action == "delete" and matched[0].condition is None

    @property
    def insert_only(self) -> bool:
        """Only ``whenNotMatched*`` (insert) clauses: no target row changes (delta-spark's
        ``InsertOnlyMergeExecutor``: an anti-join and an append)."""
        return not self.clauses and bool(self.inserts)

    @property
    def files_after_skipping(self) -> int:
        """Target files left by pruning (partitions, stats, source keys)."""
        return int(self.files.num_rows)

    @property
    def names(self) -> list[str]:
        return [f.name for f in self.target_schema.fields]

    def target_name(self, k: str) -> str:
        lowered = {n.lower(): n for n in self.names}
        k2 = k if k.lower() in lowered else parse_column_path(k, "values")[-1]  # `a.b`, or t.a qualified
        if k2.lower() not in lowered:
            raise ColumnNotFoundError(f"merge: {k} is not a column of the table; columns: {', '.join(self.names)}")
        return lowered[k2.lower()]

    def source_col(self, n: str) -> Column:
        if n.lower() not in self.src_cols:
            raise ColumnNotFoundError(f"merge: updateAll/insertAll needs column {n} in the source")
        name = self.src_cols[n.lower()]
        cached = self._source_columns.get(name)
        if cached is None:
            cached = self._source_columns[name] = self.src[projection.ident(name)]  # a dot or backquote: one name
            self._own_columns[id(cached)] = ("source", name)
        return cached

    def source_text(self, value: Column) -> str | None:
        """The SQL text naming ``value`` when it is one of :meth:`source_col`'s columns (by
        its unique name in ``src``: no clash with a target column of the same name)."""
        kind, name = self._own_columns.get(id(value), ("", ""))
        return projection.ident(self.src_refs[name]) if kind == "source" and name in self.src_refs else None

    def target_column(self, name: str) -> Column | None:
        """The Column :meth:`tcol` gives for ``name`` (the same object)."""
        return self._target_columns.get(name)

    def tcol(self) -> dict[str, Column]:
        """The target's columns, qualified by the target alias (built once per plan: each
        Column costs py4j round trips on a classic session)."""
        return dict(self._target_columns)

    @cached_property
    def _target_columns(self) -> dict[str, Column]:
        from pyspark.sql import functions as F

        # F.expr of the qualified name: the same reference as F.col, a third of its py4j calls
        columns = {n: F.expr(projection.ident(self.talias, n)) for n in self.names}
        self._own_columns.update({id(c): ("target", n) for n, c in columns.items()})
        return columns

    @cached_property
    def _source_columns(self) -> dict[str, Column]:
        return {}

    @cached_property
    def _own_columns(self) -> dict[int, tuple[str, str]]:
        # id of a Column of _target_columns / _source_columns (kept alive there) -> (side, name)
        return {}

    def known_type(self, value: Column) -> Any:
        """The Spark type of ``value`` when it is one of the plan's own target or source
        column references (:meth:`tcol`, :meth:`source_col`), else None."""
        kind, name = self._own_columns.get(id(value), ("", ""))
        if not kind:
            return None
        target_types, source_types = self._column_types
        return (target_types if kind == "target" else source_types).get(name)

    @cached_property
    def _column_types(self) -> tuple[dict[str, Any], dict[str, Any]]:
        return (
            {f.name: f.dataType for f in self.target.schema.fields},
            {f.name: f.dataType for f in self.src.schema.fields},
        )

    def tfile(self) -> Column:
        from pyspark.sql import functions as F

        return F.col(f"`{self.talias}`.{SCAN_FILE}")

    def scan_target(self, paths: list[str]) -> DataFrame:
        """The target's rows of the candidate files among ``paths``, aliased (phase 2's
        scan): the candidate scan itself when ``paths`` names every candidate file."""
        if len(set(paths)) == self.files.num_rows:
            return self.target  # every candidate file: the same scan (no second planning)
        return _target_rows(self.rewriter, self.snap, only_files(self.files, paths), self.evolved, self.talias)

    def release(self) -> None:
        """Frees the pinned source's blocks."""
        release_checkpoint(self.pinned if self.pinned is not None else self.src)


def release_checkpoint(df: DataFrame) -> None:
    """Frees the blocks of ``df``, a DataFrame behind a local checkpoint, now (classic sessions:
    its RDD is unpersisted); a Spark Connect server drops it with the client's DataFrame, and
    Spark's cleaner does in any case once the JVM no longer references it."""
    jdf = getattr(df, "_jdf", None)
    if jdf is None:
        return
    plan = jdf.queryExecution().analyzed()
    if plan.getClass().getSimpleName() == "LogicalRDD":
        plan.rdd().unpersist(False)


def sql_expr(e: Expression) -> Column:
    """A Spark Column for a condition or value given as SQL text or as a Column."""
    from pyspark.sql import functions as F

    return F.expr(e) if isinstance(e, str) else e


def plan_merge(
    rw: TableRewriter,
    snap: Snapshot,
    source: DataFrame,
    condition: ExpressionOrColumn,
    clauses: Sequence[MergeClause],
    *,
    target_alias: str | None,
    evolve: bool,
) -> MergePlan:
    """The plan of a MERGE over ``snap`` (the one snapshot the merge reads): the clauses
    checked against the target and the source, the source pinned (delta-spark's
    ``materializeSource``: a cache, not a checkpoint, so that the condition's references to
    the source's alias resolve; released by :meth:`MergePlan.release`) and the target's
    candidate files pruned (:func:`~delta_pyds.spark.commands.merge.pruning.candidate_files`)."""
    from delta_pyds.spark.session.schema_convert import drop_void, to_spark_schema

    target_side = tuple(c for c in clauses if c.when == "matched") + tuple(
        c for c in clauses if c.when == "not_matched_by_source"
    )
    inserts = tuple(c for c in clauses if c.when == "not_matched")
    identities = {c.name: c for c in identity_columns(snap.schema)}
    talias = target_alias or DEFAULT_TARGET_ALIAS
    evolved = evolved_for(snap.schema, source, clauses) if evolve else None
    target_schema = to_spark_schema(drop_void(evolved if evolved is not None else snap.schema))
    _check_clauses(rw, snap, target_schema, talias, source, condition, clauses)
    src = _pinned_source(source, evolved)
    by_source = any(c.when == "not_matched_by_source" for c in clauses)
    with cleanup_on_failure(lambda: release_checkpoint(src), what="the pinned merge source"):
        files, source_rows = candidate_files(
            rw, snap, condition, talias, target_schema, src, by_source=by_source, insert_only=not target_side
        )
        target = _target_rows(rw, snap, files, evolved, talias)
        view, refs = _named_source(src, source.columns)
    return MergePlan(
        rewriter=rw,
        snap=snap,
        condition=condition,
        cond=sql_expr(condition),
        clauses=target_side,
        inserts=inserts,
        talias=talias,
        target_schema=target_schema,
        src=view,
        src_cols={c.lower(): c for c in source.columns},
        tracking=row_tracking_columns(snap),
        identities=identities,
        generated_always=frozenset(n for n, c in identities.items() if not c.allow_explicit_insert),
        evolved=evolved,
        evolve=evolve,
        files=files,
        target=target,
        source_rows=source_rows,
        pinned=src,
        src_refs=refs,
    )


def _named_source(src: DataFrame, columns: list[str]) -> tuple[DataFrame, dict[str, str]]:
    """(the pinned source with a second, unique name per source column (``__pydelta_s<i>``:
    SQL text names it without clashing with a target column; Spark reads the cached column
    once), source column -> that name)."""
    refs = {c: f"{SRC_REF}{i}" for i, c in enumerate(columns)}
    return projection.select(src, ["*", *[projection.renamed(c, r) for c, r in refs.items()]]), refs


def _pinned_source(source: DataFrame, evolved: DeltaStruct | None) -> DataFrame:
    """The source with a non-null ``__pydelta_src`` and a row number ``__pydelta_src_id``,
    its structs in the evolved shape (new fields null), pinned before anything reads it: the
    pruning by its keys, both phases and the row numbers inserts and identity values come
    from see the same source rows."""
    from pyspark.sql import functions as F

    src = source.withColumn(SRC, F.lit(True)).withColumn(SRC_ID, F.monotonically_increasing_id())
    if evolved is not None:
        src = to_schema(src, evolved, add_missing=False, complex_only=True)
    # a local checkpoint, as delta-spark's materializeSource: its blocks are never recomputed
    # from the source (a lost block fails the statement before it commits), where a cache's
    # evicted or lost blocks would be, and a non-deterministic source could then give the two
    # phases different rows
    return src.localCheckpoint(eager=False)


def _target_rows(
    rw: TableRewriter, snap: Snapshot, files: pa.Table, evolved: DeltaStruct | None, talias: str
) -> DataFrame:
    """The target's rows of ``files``, aliased; with schema evolution null in the new
    columns and fields."""
    target = rw.scan(snap, files)
    if evolved is not None:
        target = to_schema(target, evolved, add_missing=True)
    return target.alias(talias)


def _check_clauses(
    rw: TableRewriter,
    snap: Snapshot,
    target_schema: SparkStructType,
    talias: str,
    source: DataFrame,
    condition: ExpressionOrColumn,
    clauses: Sequence[MergeClause],
) -> None:
    """Refuses updates of identity columns the table generates, unknown columns in update
    sets and clauses that do not resolve against the target and the source."""
    for c in clauses:
        sets = c.mapping
        if c.action == "update" and sets is not None:
            named = set_column_names(target_schema, sets, what="merge", alias=talias)
            refuse_identity_updates(snap, named, "merge")

    def used(when: str) -> list[Expression | None]:  # the conditions and values of one kind's clauses
        return [e for c in clauses if c.when == when for e in [c.condition, *(v for _, v in c.assignments or ())]]

    check_merge_resolves(
        rw.spark,
        target_schema,
        talias,
        source,
        condition,
        matched=used("matched"),
        not_matched=used("not_matched"),
        by_source=used("not_matched_by_source"),
    )
