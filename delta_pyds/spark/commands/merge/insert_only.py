"""The insert-only MERGE executor (delta-spark's ``InsertOnlyMergeExecutor``): a merge with
only ``whenNotMatched*`` clauses (and no identity values to generate) runs no phase 1; its
inserted rows are the pinned source anti-joined with the candidate target rows on the merge
condition, appended.

Guarantees: no target row changes and no target file is removed; the source's rows
(``numSourceRows``) come from the pruning job, else from one job over the pinned source;
the inserted rows are counted by the write (:mod:`~delta_pyds.spark.commands.merge.commit`)."""

from __future__ import annotations

from delta_pyds.spark.commands.merge.metrics import MergeOutcome
from delta_pyds.spark.commands.merge.output import MergeRows, insert_action, insert_rows, merge_rows_of
from delta_pyds.spark.commands.merge.plan import ACTION, SRC_ID, MergePlan
from delta_pyds.spark.commands.merge.summary import count_task


def insert_only_outcome(plan: MergePlan) -> MergeOutcome:
    """The outcome of an insert-only merge without phase 1: no target row changes, the
    write counts the inserted rows."""
    rows = plan.source_rows
    if rows is None:
        got = plan.src.select(SRC_ID).mapInArrow(count_task, "rows long").collect()
        rows = sum(r["rows"] for r in got)
    return MergeOutcome(
        touched=[],
        counts=dict.fromkeys(range(1, 1 + len(plan.inserts)), 0),
        several_matches=False,
        top_k=None,
        matched_pairs=0,
        inserts_counted=False,
        source_rows=rows,
    )


def insert_only_rows(plan: MergePlan, *, keep_old: bool) -> MergeRows:
    """The inserted rows: the source rows no candidate target row matches (an anti-join on
    the merge condition), with their insert action (rows no insert clause takes dropped)."""
    from pyspark.sql import functions as F

    unmatched = plan.src.join(plan.target, plan.cond, "left_anti")
    unmatched = unmatched.withColumn(ACTION, insert_action(plan)).where(F.col(ACTION) > 0)
    return merge_rows_of(plan, None, insert_rows(plan, unmatched, [], keep_old=keep_old), [])
