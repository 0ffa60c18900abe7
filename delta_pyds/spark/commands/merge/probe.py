"""Phase 1's pinned rows of the two-phase MERGE (delta-spark's ``findTouchedFiles`` join):
:func:`probe` joins the candidate target rows with the pinned source; :func:`unmatched_source`
gives the source rows no candidate target row matches (the inserted rows).

Guarantees:

* the probe reads only the target columns the condition and the clauses' conditions need
  (Spark prunes the scan) and keeps only matched or changed rows (file, row index, action,
  matched, source row number), pinned by a lazy local checkpoint that phase 1's one job
  (:func:`~delta_pyds.spark.commands.merge.summary.summarize`) fills;
* with ``carry`` (deletion vectors) the pinned rows also carry the changed rows' written
  values (old values for the change data, row tracking columns); with ``whole`` (a small
  copy-on-write target) every candidate row is pinned with its written values (``left``
  outer join): phase 2 then reads no target file again;
* the unmatched source rows are the pinned source rows outside the matched source row
  numbers (none, with no Spark job, when phase 1 counted as many distinct matched source
  rows as the source holds; a literal set of at most :data:`LITERAL_IDS`; else an anti-join
  with the probe's matched rows, broadcast up to :data:`BROADCAST_IDS` pairs): the same
  source rows phase 1 saw, whatever the source's determinism.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from delta_pyds.spark.commands.merge.metrics import MergeOutcome
from delta_pyds.spark.commands.merge.output import carried_columns, insert_action, target_action
from delta_pyds.spark.commands.merge.plan import ACTION, MATCHED, SRC, SRC_ID, MergePlan, release_checkpoint
from delta_pyds.spark.commands.native_rows import SCAN_FILE, SCAN_ROW
from delta_pyds.spark.session import projection

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

# up to this many matched pairs, the inserted rows' anti-join broadcasts the matched source
# row numbers (8 bytes each) instead of shuffling the source
BROADCAST_IDS = 2_000_000
# up to this many matched source rows (counted by phase 1's job), the inserted rows are the
# source rows whose numbers are not in a literal set (no job to broadcast the numbers)
LITERAL_IDS = 4096
# each task of phase 1's job sends its matched source rows' numbers (a bitmap) up to this many,
# else a marker: the driver then knows how many distinct source rows matched (every one: no
# insert can happen and phase 2 runs no anti-join)
TASK_IDS = 1 << 20


@dataclass
class Probe:
    """Phase 1's pinned rows: per target row a clause changes or a source row matches,
    its file (log path) and row index, its action, whether it is matched and the matched
    source row's number (``__pydelta_src_id``)."""

    rows: DataFrame  # behind a lazy local checkpoint
    carried: bool = False  # the rows carry their written values (see probe)
    whole: bool = False  # every candidate target row is pinned, not only matched or changed ones

    def release(self) -> None:
        release_checkpoint(self.rows)


def probe(plan: MergePlan, *, carry: bool = False, keep_old: bool = False, whole: bool = False) -> Probe:
    """Phase 1 (delta-spark's ``findTouchedFiles``): the candidate target rows joined with
    the pinned source, ``inner`` (or ``left`` outer with a ``whenNotMatchedBySource`` clause:
    every target row is needed), reduced to the columns the conditions read (Spark prunes the
    target scan to them) and to the rows some clause changes or a source row matches, behind
    a lazy local checkpoint filled by :func:`~delta_pyds.spark.commands.merge.summary.summarize`.

    With ``carry`` (deletion vectors: only changed rows are written) the pinned rows also
    carry what phase 2 writes of a changed row: its written values (``__pydelta_new_<i>``;
    Spark reads the target columns an update keeps, and no other), its old values with
    ``keep_old`` (change data), its row tracking columns; phase 2 then reads no target file
    again. With ``whole`` (a small copy-on-write merge,
    :func:`~delta_pyds.spark.commands.merge.pruning.pins_whole_target`) every candidate target
    row is pinned (``left`` outer join) with its written values: phase 2 keeps the touched
    files' rows of them."""
    from pyspark.sql import functions as F

    joined = plan.target.join(plan.src, plan.cond, "left" if plan.by_source or whole else "inner")
    has_target, has_source = plan.tfile().isNotNull(), F.col(SRC).isNotNull()
    action, matched = target_action(plan, has_target, has_source)
    cols: list[Column | str] = [
        plan.tfile().alias(SCAN_FILE),
        F.col(f"`{plan.talias}`.{SCAN_ROW}").alias(SCAN_ROW),
        F.col(ACTION),
        F.col(MATCHED),
        F.col(SRC_ID),
    ]
    if carry or whole:
        cols += carried_columns(plan, keep_old=keep_old, only_updated=not whole)
    rows = joined.select("*", action.alias(ACTION), matched.alias(MATCHED))  # one analysis of the CASE trees
    if not whole:
        rows = rows.where((F.col(ACTION) > 0) | F.col(MATCHED))
    rows = projection.select(rows, cols)
    return Probe(rows.localCheckpoint(eager=False), carried=carry or whole, whole=whole)


def unmatched_source(plan: MergePlan, pr: Probe | None, outcome: MergeOutcome | None = None) -> DataFrame | None:
    """The source rows no candidate target row matches, with their insert action (rows no
    insert clause takes dropped); None without insert clauses, or when phase 1's ``outcome``
    counted every source row as matched. They are the pinned source rows whose numbers are
    not in the outcome's ``matched_ids`` (when phase 1 collected them), else the source
    anti-joined with the probe's matched source row numbers (broadcast when the number of
    matched (target, source) pairs is known and at most :data:`BROADCAST_IDS`); without a
    probe (``pr``: the single pass) the source anti-joined with the candidate target rows on
    the merge condition."""
    from pyspark.sql import functions as F

    if not plan.inserts:
        return None
    matched_ids = outcome.matched_ids if outcome is not None else None
    matched_pairs = outcome.matched_pairs if outcome is not None else None
    if outcome is not None and outcome.matched_sources is not None and outcome.matched_sources >= outcome.source_rows:
        return None  # every source row matched: nothing to insert, no job
    if matched_ids is not None:  # a literal set: no job
        rows = plan.src.where(f"NOT ({SRC_ID} IN ({','.join(map(str, matched_ids))}))") if matched_ids else plan.src
    elif pr is None:
        rows = plan.src.join(plan.target, plan.cond, "left_anti")
    else:
        hit_ids = pr.rows.where(F.col(MATCHED)).select(SRC_ID)
        if matched_pairs is not None and matched_pairs <= BROADCAST_IDS:
            hit_ids = F.broadcast(hit_ids)  # a checkpoint has no size estimate: Spark would shuffle
        rows = plan.src.join(hit_ids, SRC_ID, "left_anti")
    return rows.withColumn(ACTION, insert_action(plan)).where(F.col(ACTION) > 0)
