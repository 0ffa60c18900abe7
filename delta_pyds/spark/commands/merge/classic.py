"""The two-phase MERGE executor (delta-spark's ``ClassicMergeExecutor``: ``findTouchedFiles``,
then ``writeAllChanges``) over the plan's pinned source.

Guarantees:

* the source is pinned once by the plan (a local checkpoint filled by the first job, with a
  row number per source row; delta-spark's ``materializeSource``), so both phases, the
  inserted rows, the change data, the deletion-vector marks and generated identity values
  see the same source rows: its blocks are never recomputed from the source (a block lost
  with an executor fails the statement before it commits), so a non-deterministic source
  cannot make them disagree;
* phase 1, :func:`find_touched_files`: the probe
  (:func:`~delta_pyds.spark.commands.merge.probe.probe`, what it pins by the pin policy of
  :mod:`~delta_pyds.spark.commands.merge.pruning`) and ONE Spark job over it
  (:func:`~delta_pyds.spark.commands.merge.summary.summarize`) giving the per-clause counts,
  the files a clause changes, the duplicate-match check, the matched source rows' numbers
  and, with deletion vectors, the rows the commit marks deleted; the probe is released if
  the job fails;
* phase 2, :func:`write_all_changes`: the rows to write from phase 1's pinned rows (the
  changed rows with deletion vectors, the touched files' rows of a pinned small target),
  else the changed files read again with every column and joined with the source (``left``
  outer: the files are rewritten whole), plus the inserted source rows (the source rows no
  candidate target row matches), written directly (pinned only when change data files are
  written from the same rows). Conditions are evaluated once per phase on the same rows:
  they must be deterministic (as delta-spark requires of merge conditions).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from delta_pyds.protocol.identity import IdentityColumn
from delta_pyds.spark.commands.merge.metrics import MergeOutcome
from delta_pyds.spark.commands.merge.output import (
    NEW,
    OLD,
    MergeRows,
    insert_rows,
    merge_rows_of,
    named,
    new_values,
    target_action,
)
from delta_pyds.spark.commands.merge.plan import ACTION, MATCHED, SRC, MergePlan
from delta_pyds.spark.commands.merge.probe import Probe, probe, unmatched_source
from delta_pyds.spark.commands.merge.pruning import (
    carries_changed_rows,
    pin_changed_max_bytes,
    pin_target_max_bytes,
    pins_whole_target,
)
from delta_pyds.spark.commands.merge.summary import summarize
from delta_pyds.spark.commands.native_rows import SCAN_FILE, SCAN_ROW, SCAN_ROW_ID, SCAN_ROW_VERSION
from delta_pyds.spark.session import projection
from delta_pyds.transaction.staged_files import cleanup_on_failure

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

log = logging.getLogger(__name__)


def find_touched_files(plan: MergePlan, *, dv: bool, generated: list[IdentityColumn]) -> tuple[Probe, MergeOutcome]:
    """Phase 1: the probe and what its one job found. Phase 1 pins the changed rows'
    written values with deletion vectors, every candidate row's in a small copy-on-write
    merge: no target file is read twice. Inserts are counted by the job only for identity
    values (``generated``: their high-water mark), else by the write."""
    rw = plan.rewriter
    whole = pins_whole_target(plan.files, dv=dv, changes_target=bool(plan.clauses), max_bytes=pin_target_max_bytes(rw))
    carry = _carries(plan, dv=dv)
    if whole:
        log.info("pydelta MERGE on %s: phase 1 pins every candidate row (small target)", rw.path)
    pr = probe(plan, carry=carry, keep_old=rw.writes_changes(plan.snap), whole=whole)
    # one job: it also fills the probe's checkpoint
    with cleanup_on_failure(pr.release, what="the merge's phase 1 rows"):
        outcome = summarize(plan, pr, count_inserts=bool(generated), marks=dv)
    return pr, outcome


def _carries(plan: MergePlan, *, dv: bool) -> bool:
    """Whether phase 1 of a deletion-vector merge pins the changed rows' written values
    (candidate files within ``spark.pydelta.merge.pinChangedRows.maxBytes``), logged."""
    if not dv:
        return False
    cap = pin_changed_max_bytes(plan.rewriter)
    carry = carries_changed_rows(plan.files, dv=dv, max_bytes=cap)
    what = (
        "phase 1 pins the changed rows' written values"
        if carry
        else f"phase 2 reads the changed files again (candidate files over {cap} bytes)"
    )
    log.info("pydelta MERGE on %s: %s", plan.rewriter.path, what)
    return carry


def write_all_changes(
    plan: MergePlan,
    pr: Probe | None,
    outcome: MergeOutcome,
    generated: list[IdentityColumn],
    *,
    dv: bool,
    keep_old: bool,
    rewritten: bool = False,
) -> MergeRows:
    """Phase 2 (delta-spark's ``writeAllChanges``): the ``touched`` files' rows joined with
    the pinned source (``left`` outer for copy-on-write or with a ``whenNotMatchedBySource``
    clause, else ``inner``: with deletion vectors only changed rows are written) with
    their actions and written values, and the inserted source rows
    (:func:`~delta_pyds.spark.commands.merge.probe.unmatched_source`). ``keep_old``: keep the
    target's values before the merge (change data files; the target rows are then pinned,
    as the data and the change data files both read them). Without a probe (``pr``: the
    single pass, :mod:`~delta_pyds.spark.commands.merge.single_pass`) the touched files are
    read again, or not at all when ``rewritten`` (the single pass wrote them)."""
    target = None
    if outcome.touched and plan.clauses and not rewritten:
        target = _pinned_rows(plan, pr, outcome.touched, keep_old=keep_old) if pr is not None and pr.carried else None
        if target is None:
            target = rejoined_rows(plan, outcome.touched, generated, dv=dv, keep_old=keep_old)
    unmatched = unmatched_source(plan, pr, outcome)
    inserts = insert_rows(plan, unmatched, generated, keep_old=keep_old)
    return merge_rows_of(plan, target, inserts, generated)


def _pinned_rows(plan: MergePlan, pr: Probe, touched: list[str], *, keep_old: bool) -> DataFrame:
    """Phase 2's target rows from phase 1's pinned rows (they carry their written values)."""
    from pyspark.sql import functions as F

    cols = [projection.ident(f"{NEW}{i}") for i in range(len(plan.names))]
    if keep_old:
        cols += [projection.ident(f"{OLD}{i}") for i in range(len(plan.names))]
    cols += [projection.ident(SCAN_FILE), projection.ident(SCAN_ROW)]
    if plan.tracking:
        cols += [projection.ident(SCAN_ROW_ID), projection.ident(SCAN_ROW_VERSION)]
    if not pr.whole:  # the changed rows (deletion vectors)
        kept = pr.rows.where(F.col(ACTION) > 0)
    elif len(touched) < plan.files.num_rows:  # every candidate row: the touched files' ones
        kept = pr.rows.where(F.col(SCAN_FILE).isin(touched))
    else:
        kept = pr.rows
    return projection.select(kept, [*cols, projection.ident(ACTION), projection.ident(MATCHED)])


def rejoined_rows(
    plan: MergePlan,
    touched: list[str],
    generated: list[IdentityColumn],
    *,
    dv: bool,
    keep_old: bool,
    scan: DataFrame | None = None,
    watch: Callable[[DataFrame], DataFrame] | None = None,
) -> DataFrame:
    """Phase 2's target rows: the touched files read again (or ``scan``, aliased as the
    target) and joined with the source; ``watch`` wraps the joined rows with their action and
    whether they are matched (the single pass observes them there)."""
    from pyspark.sql import functions as F

    shape = "inner" if dv and not plan.by_source else "left"
    joined = (scan if scan is not None else plan.scan_target(touched)).join(plan.src, plan.cond, shape)
    has_target, has_source = plan.tfile().isNotNull(), F.col(SRC).isNotNull()
    action, matched = target_action(plan, has_target, has_source)
    joined = joined.select("*", action.alias(ACTION), matched.alias(MATCHED))  # one analysis, not two
    if watch is not None:
        joined = watch(joined)
    tcol = plan.tcol()
    values = new_values(plan, tcol, generated, inserted=False)
    cols: list[Column | str] = [named(v, f"{NEW}{i}") for i, v in enumerate(values)]
    if keep_old:
        cols += [named(projection.ident(plan.talias, n), f"{OLD}{i}") for i, n in enumerate(plan.names)]
    cols += [plan.tfile().alias(SCAN_FILE), F.col(f"`{plan.talias}`.{SCAN_ROW}").alias(SCAN_ROW)]
    if plan.tracking:
        cols += [F.col(SCAN_ROW_ID), F.col(SCAN_ROW_VERSION)]
    cols += [F.col(ACTION), F.col(MATCHED)]
    target = projection.select(joined.where(F.col(ACTION) > 0) if dv else joined, cols)
    return target.localCheckpoint(eager=False) if keep_old else target
