"""``DeltaMergeBuilder``: the clauses of ``DeltaTable.merge`` (one list of typed
:class:`~delta_pyds.spark.commands.merge.clauses.MergeClause` values, in the order given) and
``execute()``, which loads the table's snapshot ONCE, plans the merge
(:func:`~delta_pyds.spark.commands.merge.plan.plan_merge`), runs the two-phase executor
(:mod:`~delta_pyds.spark.commands.merge.classic`) or the insert-only one
(:mod:`~delta_pyds.spark.commands.merge.insert_only`) and commits
(:mod:`~delta_pyds.spark.commands.merge.commit`).

Guarantees: clause arguments are checked when the clause is added, as delta-spark checks
them (:mod:`delta_pyds.spark.commands.args`; ``add_clause`` as the ``when*`` method of the same
kind); ``execute()`` without a clause raises ``ValueError``; a target row matched by several
source rows raises :class:`~delta_pyds.errors.MergeMultipleMatchesError` unless the only
matched clause is an unconditional ``whenMatchedDelete()``; the pinned source and phase 1's
and phase 2's pinned rows are released whatever happens; ``execute()`` returns delta-spark's
one-row DataFrame (zeros, and no commit, when nothing changes).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from delta_pyds.errors import ArgumentValueError, MergeMultipleMatchesError
from delta_pyds.spark.commands.args import (
    ColumnMapping,
    ExpressionOrColumn,
    OptionalExpressionOrColumn,
    check_column_map,
    check_condition,
)
from delta_pyds.spark.commands.dv_marks import writes_dvs
from delta_pyds.spark.commands.merge.classic import find_touched_files, write_all_changes
from delta_pyds.spark.commands.merge.clauses import MergeClause
from delta_pyds.spark.commands.merge.commit import commit_merge
from delta_pyds.spark.commands.merge.insert_only import insert_only_outcome, insert_only_rows
from delta_pyds.spark.commands.merge.metrics import MergeOutcome, row_metrics
from delta_pyds.spark.commands.merge.output import MergeRows, identity_to_generate
from delta_pyds.spark.commands.merge.plan import MergePlan, plan_merge
from delta_pyds.spark.commands.merge.probe import Probe
from delta_pyds.spark.commands.merge.single_pass import SinglePass, single_pass
from delta_pyds.spark.commands.rewriter import TableRewriter, now_ms
from delta_pyds.spark.session import conf
from delta_pyds.transaction.staged_files import delete_on_failure

if TYPE_CHECKING:
    from collections.abc import Callable

    from pyspark.sql import DataFrame

    from delta_pyds.transaction.commit import CommitResult

__all__ = ["DeltaMergeBuilder"]

_SEVERAL_MATCHES = (
    "merge: several source rows matched the same target row and could change it in "
    "conflicting ways (delta-spark: DELTA_MULTIPLE_SOURCE_ROW_MATCHING_TARGET_ROW_IN_"
    "MERGE); deduplicate the source, or make the only whenMatched clause an "
    "unconditional whenMatchedDelete()"
)


class DeltaMergeBuilder:
    """Clauses of a MERGE, applied in order within each kind (the first whose condition
    holds wins), as in delta-spark: ``whenMatched*`` for target rows with a source match,
    ``whenNotMatched*`` (by target) for source rows without one, ``whenNotMatchedBySource*``
    for target rows without one. A target row matched by several source rows is an error
    (``DELTA_MULTIPLE_SOURCE_ROW_MATCHING_TARGET_ROW_IN_MERGE``) unless the only matched
    clause is an unconditional ``whenMatchedDelete()``, as in delta-spark.
    Only files holding a row some clause changes are rewritten; on tables with the change
    data feed the commit carries change data files (inserts, deletes, update pre/post
    images). Made by ``DeltaTable.merge``."""

    def __init__(
        self,
        rewriter: TableRewriter,
        source: DataFrame,
        condition: ExpressionOrColumn,
        *,
        target_alias: str | None = None,
        on_commit: Callable[[CommitResult | None], None] | None = None,
    ) -> None:
        self._rewriter, self._source, self._condition = rewriter, source, condition
        self._on_commit = on_commit  # told the commit execute() made (DeltaTable.lastCommit)
        self._target_alias = target_alias
        self._clauses: list[MergeClause] = []  # in the order given
        self._evolve = False

    # -------------------------------------------------------------------- clauses
    def withSchemaEvolution(self) -> DeltaMergeBuilder:
        """Adds the source's columns the table lacks to the table (see the module docstring)."""
        self._evolve = True
        return self

    def whenNotMatchedBySourceUpdate(
        self, condition: OptionalExpressionOrColumn = None, set: ColumnMapping | None = None
    ) -> DeltaMergeBuilder:
        """Updates target rows no source row matches (``set`` may use target columns only).
        ``set`` is required: the dict alone (as ``condition``) is refused, as in delta-spark."""
        sets = check_column_map(set, "'set' in whenNotMatchedBySourceUpdate")
        check_condition(condition)
        if not sets:
            raise ArgumentValueError("whenNotMatchedBySourceUpdate: set must name at least one column")
        self._clauses.append(MergeClause.of("not_matched_by_source", "update", condition, sets))
        return self

    def whenNotMatchedBySourceDelete(self, condition: OptionalExpressionOrColumn = None) -> DeltaMergeBuilder:
        """Deletes target rows no source row matches."""
        check_condition(condition)
        self._clauses.append(MergeClause("not_matched_by_source", "delete", condition))
        return self

    def whenMatchedUpdate(
        self, condition: OptionalExpressionOrColumn = None, set: ColumnMapping | None = None
    ) -> DeltaMergeBuilder:
        """Updates matched target rows by ``set`` (required: the dict alone, as ``condition``,
        is refused with delta-spark's ``ValueError``)."""
        sets = check_column_map(set, "'set' in whenMatchedUpdate")
        check_condition(condition)
        if not sets:
            raise ArgumentValueError("whenMatchedUpdate: set must name at least one column")
        self._clauses.append(MergeClause.of("matched", "update", condition, sets))
        return self

    def whenMatchedUpdateAll(self, condition: OptionalExpressionOrColumn = None) -> DeltaMergeBuilder:
        check_condition(condition)
        self._clauses.append(MergeClause("matched", "update", condition))
        return self

    def whenMatchedDelete(self, condition: OptionalExpressionOrColumn = None) -> DeltaMergeBuilder:
        check_condition(condition)
        self._clauses.append(MergeClause("matched", "delete", condition))
        return self

    def whenNotMatchedInsert(
        self, condition: OptionalExpressionOrColumn = None, values: ColumnMapping | None = None
    ) -> DeltaMergeBuilder:
        """Inserts unmatched source rows with ``values`` (required: the dict alone, as
        ``condition``, is refused with delta-spark's ``ValueError``)."""
        vals = check_column_map(values, "'values' in whenNotMatchedInsert")
        check_condition(condition)
        if not vals:
            raise ArgumentValueError("whenNotMatchedInsert: values must name at least one column")
        self._clauses.append(MergeClause.of("not_matched", "insert", condition, vals))
        return self

    def whenNotMatchedInsertAll(self, condition: OptionalExpressionOrColumn = None) -> DeltaMergeBuilder:
        check_condition(condition)
        self._clauses.append(MergeClause("not_matched", "insert", condition))
        return self

    def add_clause(self, clause: MergeClause) -> DeltaMergeBuilder:
        """Adds one typed clause (what the SQL front door builds), checked as the
        ``when*`` method of the same kind checks its arguments."""
        cond, sets = clause.condition, clause.mapping
        if clause.when == "not_matched":
            if sets is None:
                return self.whenNotMatchedInsertAll(cond)
            return self.whenNotMatchedInsert(cond, sets)
        if clause.when == "matched":
            if clause.action == "delete":
                return self.whenMatchedDelete(cond)
            return self.whenMatchedUpdateAll(cond) if sets is None else self.whenMatchedUpdate(cond, sets)
        if clause.action == "delete":
            return self.whenNotMatchedBySourceDelete(cond)
        return self.whenNotMatchedBySourceUpdate(cond, sets)

    # ------------------------------------------------------------------ execution
    def execute(self) -> DataFrame:
        """Runs the MERGE in one commit; returns delta-spark's one-row DataFrame
        (``num_affected_rows``, ``num_updated_rows``, ``num_deleted_rows``,
        ``num_inserted_rows``), zeros when no row changes; auto compaction after it
        (:mod:`delta_pyds.spark.commands.auto_compaction`)."""
        from delta_pyds.spark.commands.auto_compaction import after_commit

        rw = self._rewriter
        if not self._clauses:
            raise ArgumentValueError(
                "merge: add at least one whenMatched*, whenNotMatched* or whenNotMatchedBySource* clause"
            )
        started = now_ms()
        plan = plan_merge(
            rw,
            rw.dml_snapshot(),  # the one snapshot the merge reads
            self._source,
            self._condition,
            self._clauses,
            target_alias=self._target_alias,
            evolve=self._evolve or conf.auto_merge(rw.spark),  # delta-spark: either turns evolution on
        )
        try:
            metrics, commit = _run(plan, started)
        finally:
            plan.release()
        if self._on_commit is not None:
            self._on_commit(commit)  # DeltaTable.lastCommit
        after_commit(rw.spark, rw.storage, commit)  # the post-commit hook, in the session of the rows
        updated, deleted = metrics["numTargetRowsUpdated"], metrics["numTargetRowsDeleted"]
        inserted = metrics["numTargetRowsInserted"]
        return rw.spark.createDataFrame(
            [(updated + deleted + inserted, updated, deleted, inserted)],
            "num_affected_rows long, num_updated_rows long, num_deleted_rows long, num_inserted_rows long",
        )


def _run(plan: MergePlan, started: int) -> tuple[dict[str, int], CommitResult | None]:
    """The MERGE of :meth:`DeltaMergeBuilder.execute` over its plan: phase 1 (or the
    insert-only outcome), the duplicate-match check, phase 2 and the commit; its metrics and
    the commit (None when no row changed)."""
    materialized = now_ms()
    dv = writes_dvs(plan.snap)
    keep_old = plan.rewriter.writes_changes(plan.snap)
    pr: Probe | None = None
    one: SinglePass | None = None
    rows: MergeRows | None = None
    commit: CommitResult | None = None
    try:
        generated = identity_to_generate(plan)  # refuses bad identity inserts before any job
        outcome: MergeOutcome
        if plan.insert_only and not generated:  # no phase 1: an anti-join and an append
            outcome = insert_only_outcome(plan)
        elif (one := single_pass(plan, dv=dv, generated=generated, keep_old=keep_old)) is not None:
            outcome = one.outcome  # phase 1 observed on the rewrite of every candidate file
        else:
            pr, outcome = find_touched_files(plan, dv=dv, generated=generated)
        written = one.adds if one is not None and one.adds is not None else []
        with delete_on_failure(plan.rewriter.storage, written):
            if plan.clauses and outcome.several_matches and not plan.delete_all_matched:
                raise MergeMultipleMatchesError(_SEVERAL_MATCHES)
            metrics = row_metrics(plan, outcome.counts)
            metrics.update(
                numSourceRows=outcome.source_rows,
                materializeSourceTimeMs=materialized - started,
                scanTimeMs=now_ms() - materialized,  # phase 1 (delta-spark: finding the touched files)
            )
            inserts = metrics["numTargetRowsInserted"] if outcome.inserts_counted else len(plan.inserts)
            if outcome.touched or inserts:
                if pr is None and one is None:
                    rows = insert_only_rows(plan, keep_old=keep_old)
                else:
                    rows = write_all_changes(
                        plan, pr, outcome, generated, dv=dv, keep_old=keep_old, rewritten=bool(written)
                    )
                commit = commit_merge(plan, rows, outcome, metrics, dv=dv, started_ms=started, written=written)
    finally:
        if rows is not None:
            rows.release()
        if pr is not None:
            pr.release()
    return metrics, commit
