"""A small copy-on-write MERGE in one Spark job where the two-phase plan runs two (issue 47),
as :mod:`delta_pyds.spark.commands.single_pass` does for DELETE and UPDATE.

The two-phase plan (delta-spark's ``ClassicMergeExecutor``) first joins the candidate target
rows with the source to find the touched files, the per-clause counts and duplicate matches
(phase 1, a job), then writes the touched files' rows and the inserted rows (phase 2). The
single pass writes every candidate file's rows joined with the source (``left`` outer: the
rewrite phase 2 makes of a touched file) in one job and observes in that job (Spark's
``Observation``) what phase 1 would have found.

Guarantees:

* the commit is the one the two-phase plan makes: the rewrite is kept only when every
  candidate file holds a row a clause changes, so the same files are removed and the same
  rows written; otherwise the rewrite is deleted and the touched files alone are rewritten
  from the observed outcome (no phase-1 job), or nothing when no row changes;
* a target row matched by several source rows is found exactly: the joined rows outnumber
  the candidate rows (both observed in the same job) exactly when one is; the rewrite is
  then deleted before the error (``DELTA_MULTIPLE_SOURCE_ROW_MATCHING_TARGET_ROW_IN_MERGE``);
  an unconditional ``whenMatchedDelete()`` counts such a row once;
* the inserted rows are the pinned source rows no candidate target row matches, written by a
  second job and committed in the same commit: none, and no job, when the distinct matched
  source rows (observed) are as many as the source's rows; else the rows outside the
  observed numbers of the matched ones (when at most
  :data:`~delta_pyds.spark.commands.merge.probe.LITERAL_IDS` can match), else the source
  anti-joined with the candidate rows on the merge condition;
* tried only for a copy-on-write merge with a target-side clause and no
  ``whenNotMatchedBySource`` clause, no change data feed, no generated identity values, no
  schema evolution, a source the key-pruning job counted, the target read by Spark's own
  Parquet reader, candidate files totalling at most ``spark.pydelta.dml.singlePassMaxBytes``
  (the DELETE/UPDATE single pass's limit; 0 turns both off); a condition Spark will not
  observe, or metrics that do not arrive, run the two-phase plan after deleting anything
  written.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from delta_pyds.spark.commands.merge.classic import rejoined_rows
from delta_pyds.spark.commands.merge.metrics import MergeOutcome
from delta_pyds.spark.commands.merge.output import merge_rows_of
from delta_pyds.spark.commands.merge.plan import ACTION, MATCHED, SRC_ID, MergePlan
from delta_pyds.spark.commands.merge.probe import LITERAL_IDS, TASK_IDS
from delta_pyds.spark.commands.single_pass import observed_metrics, within_limit
from delta_pyds.transaction.staged_files import delete_files

if TYPE_CHECKING:
    from pyspark.sql import Column

    from delta_pyds.protocol.action_types import AddFile
    from delta_pyds.protocol.identity import IdentityColumn

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SinglePass:
    """What the single pass found (phase 1's outcome) and, when every candidate file was
    touched, its rewrite of them (None: the touched files are still to be rewritten)."""

    outcome: MergeOutcome
    adds: list[AddFile] | None


def single_pass(plan: MergePlan, *, dv: bool, generated: list[IdentityColumn], keep_old: bool) -> SinglePass | None:
    """Writes every candidate file joined with the source in one job while observing phase
    1's outcome; None when the single pass does not apply or could
    not be observed (nothing it wrote is left: run the two-phase plan)."""
    if dv or generated or keep_old or not _applies(plan):
        return None
    from pyspark.errors import AnalysisException
    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    rw = plan.rewriter
    tag = uuid.uuid4().hex
    scanned, joined = (Observation(f"pydelta_merge_{k}_{tag}") for k in ("scan", "join"))
    n = len(plan.clauses)
    count = F.count(F.lit(1)).alias("rows")
    try:  # observe analyses its metrics at once: a subquery in them is refused here
        target = rejoined_rows(
            plan,
            plan.files.column("path").to_pylist(),
            generated,
            dv=False,
            keep_old=False,
            scan=plan.target.observe(scanned, count).alias(plan.talias),
            watch=lambda rows: rows.observe(joined, *_joined_metrics(plan, n)),
        )
        out = merge_rows_of(plan, target, None, generated).data_rows(dv=False, tracking=plan.tracking)
        if out is None:  # pragma: no cover - the target's rows are always there
            return None
        adds = rw.rewrite(out, rw.write_spec(plan.snap, row_tracking=True), True)
    except AnalysisException as exc:
        log.info("pydelta MERGE on %s: one-job merge not possible (%s); two phases", rw.path, exc)
        return None
    got = [observed_metrics(o) for o in (scanned, joined)]
    if got[0] is None or got[1] is None:
        delete_files(rw.storage, adds)
        log.warning("pydelta MERGE on %s: the observed metrics did not arrive; two phases", rw.path)
        return None
    outcome = _outcome(plan, n, got[0], got[1], plan.source_rows or 0)
    several = outcome.several_matches and not plan.delete_all_matched
    keep = len(outcome.touched) == plan.files.num_rows and not several
    if not keep:
        delete_files(rw.storage, adds)
    log.info("pydelta MERGE on %s: one job (%s)", rw.path, "its rewrite kept" if keep else "rewrite deleted")
    return SinglePass(outcome, adds if keep else None)


def _applies(plan: MergePlan) -> bool:
    """Spark's own reader, a target-side clause, none by source, no schema evolution, a source the pruning job
    counted (its size known: else Spark plans the join as a shuffle, whose stages run as
    jobs of their own in the single pass and in its fallback), small candidates."""
    if not plan.clauses or plan.by_source or plan.evolved is not None or plan.source_rows is None:
        return False
    if plan.rewriter.engine != "native":  # Python workers' scan has no size: shuffles, not one job
        return False
    return within_limit(plan.rewriter, plan.files)


def _joined_metrics(plan: MergePlan, n: int) -> list[Column]:
    """What phase 1 counts, as aggregates over the joined rows (one per target row and
    matching source row, or per unmatched target row): the rows, the matched pairs, the rows
    per target-side action, the touched files and, with insert clauses, the distinct matched
    source rows (when at most TASK_IDS can match) and their numbers (one string: no JVM call
    per number) when at most LITERAL_IDS can (:func:`_bounded_matches`)."""
    from pyspark.sql import functions as F

    action, matched = F.col(ACTION), F.col(MATCHED)
    cols = [
        F.count(F.lit(1)).alias("rows"),
        F.count(F.when(matched, F.lit(1))).alias("pairs"),
        *[F.count(F.when(action == a, F.lit(1))).alias(f"t{a}") for a in range(1, n + 1)],
        F.collect_set(F.when(action > 0, plan.tfile())).alias("files"),
    ]
    most = _bounded_matches(plan) if plan.inserts else None
    if most is not None and most <= TASK_IDS:
        cols.append(F.size(F.collect_set(F.when(matched, F.col(SRC_ID)))).alias("sources"))
    if most is not None and most <= LITERAL_IDS:
        ids = F.collect_set(F.when(matched, F.col(SRC_ID).cast("string")))
        cols.append(F.array_join(ids, ",").alias("ids"))
    return cols


def _bounded_matches(plan: MergePlan) -> int | None:
    """The most source rows that can match: the source's rows, or the candidate files' rows
    (by their statistics: a target row matched twice is an error but for an unconditional
    ``whenMatchedDelete()``, whose matched source rows may then outnumber them: the numbers
    observed are still all of them, only more), whichever is known and smaller; None when
    neither is."""
    from delta_pyds.transaction.file_actions import stat_rows

    bounds = [plan.source_rows] if plan.source_rows is not None else []
    if "stats" in plan.files.column_names:
        rows = [stat_rows({"stats": s}, None) for s in plan.files.column("stats").to_pylist()]
        if None not in rows:
            bounds.append(sum(r for r in rows if r is not None))
    return min(bounds) if bounds else None


def _outcome(plan: MergePlan, n: int, scanned: dict[str, Any], got: dict[str, Any], source_rows: int) -> MergeOutcome:
    """Phase 1's outcome from the observed metrics. Each candidate row gives one joined row
    per matching source row, or one when none matches: the joined rows exceed the candidate
    rows exactly when some target row is matched twice, and the matched target rows are the
    candidate rows less the unmatched (joined rows less matched pairs)."""
    rows, pairs, candidates = int(got["rows"] or 0), int(got["pairs"] or 0), int(scanned["rows"] or 0)
    counts = dict.fromkeys(range(1, n + 1 + len(plan.inserts)), 0)
    counts.update({a: int(got[f"t{a}"] or 0) for a in range(1, n + 1)})
    several = rows > candidates
    if several and plan.delete_all_matched:  # every matched row takes action 1: count target rows once
        counts[1] = candidates - (rows - pairs)
    return MergeOutcome(
        touched=sorted(str(f) for f in got["files"] or ()),
        counts=counts,
        several_matches=several,
        top_k=None,
        matched_pairs=pairs,
        inserts_counted=False,
        source_rows=source_rows,
        matched_ids=[int(i) for i in str(got["ids"]).split(",") if i] if got.get("ids") is not None else None,
        matched_sources=int(got["sources"]) if got.get("sources") is not None else None,
    )
