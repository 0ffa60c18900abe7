"""A copy-on-write DELETE or UPDATE in one Spark job instead of two, where the files it may
change are small (issue 47: a statement's fixed cost is mostly its Spark jobs).

The two-job plan, delta-spark's too, first finds the files holding a matching row (a scan),
then rewrites those files. The single pass rewrites every candidate file (the files data
skipping keeps) in one job and observes, in that same job (Spark's ``Observation``), how
many rows matched and which files held them.

Guarantees:

* the commit built from a single pass is the one the two-job plan builds: its rewrite is
  used only when every candidate file held a matching row, so the same files are removed
  and the same rows written; otherwise the files it wrote are deleted and the caller
  rewrites only the observed matched files (no second scan), or commits nothing when no
  row matched; a statement never runs more Spark jobs than the two-job plan;
* it is tried only when the candidates total at most
  ``spark.pydelta.dml.singlePassMaxBytes`` (default 16 MiB; 0 turns it off): the worst
  case, candidate files without a match (a needle in an unclustered table), costs a write
  of the candidates, which at that size is about the fixed cost of the Spark job the
  single pass saves when every candidate matches;
* a condition Spark cannot observe (non-deterministic, a subquery) or metrics that do not
  arrive runs the two-job plan, after deleting anything written;
* not used with a change feed (its change rows need a job of their own) or deletion
  vectors (one job already).
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from delta_pyds.spark.commands.dv_marks import matching_files
from delta_pyds.spark.commands.native_rows import SCAN_FILE
from delta_pyds.spark.session.conf import SINGLE_PASS_CONF, byte_count
from delta_pyds.transaction.staged_files import delete_files

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

    from delta_pyds.protocol.action_types import AddFile
    from delta_pyds.spark.commands.rewriter import OpTimes, TableRewriter
    from delta_pyds.table.snapshot import Snapshot

log = logging.getLogger(__name__)

DEFAULT_MAX_BYTES = 16 * 1024 * 1024
# the observed metrics arrive on Spark's listener bus right after the job; a wait this long
# means they will not (then the two-job plan runs)
METRICS_WAIT_SECONDS = 60.0


@dataclass(frozen=True)
class Matched:
    """What a copy-on-write DELETE/UPDATE changes: the files holding a matching row, the
    number of matching rows, the rows of those files (``in_files``, for change rows) and
    their rewrite."""

    files: list[str]
    rows: int
    in_files: DataFrame
    adds: list[AddFile]


def rewrite_matching(
    rw: TableRewriter,
    snap: Snapshot,
    candidates: pa.Table,
    scan: DataFrame,
    hit: Column,
    rewrite: Callable[[DataFrame], list[AddFile]],
    times: OpTimes,
    *,
    alias: str | None,
) -> Matched | None:
    """Finds the candidate files holding a row where ``hit`` holds and rewrites them with
    ``rewrite``: in one Spark job (the single pass, :func:`_single_pass`) where that applies, else a search
    job (:func:`~delta_pyds.spark.commands.dv_marks.matching_files`) then the rewrite of
    only the matched files. None when no row matches (nothing written is left). ``times``
    marks the end of the search."""
    one = _single_pass(rw, snap, candidates, scan, hit, rewrite)
    files, rows = (one.matched, one.rows) if one is not None else matching_files(scan, hit)
    times.scan_done()
    if not files:
        return None
    in_files = rw.rescan(snap, candidates, scan, files, alias=alias)
    adds = one.adds if one is not None and one.adds is not None else rewrite(in_files)
    return Matched(files, rows, in_files, adds)


@dataclass(frozen=True)
class _Pass:
    """What a single pass found: the files holding a matching row, the number of matching
    rows, and the rewrite of every candidate file when every one of them matched (None:
    the caller rewrites ``matched``)."""

    matched: list[str]
    rows: int
    adds: list[AddFile] | None


def _single_pass(
    rw: TableRewriter,
    snap: Snapshot,
    candidates: pa.Table,
    scan: DataFrame,
    hit: Column,
    rewrite: Callable[[DataFrame], list[AddFile]],
) -> _Pass | None:
    """Runs ``rewrite`` (the statement's rewrite of the rows of a scan) over ``scan`` (every
    candidate file) while observing where ``hit`` holds; None when the single pass does not
    apply or could not be observed (nothing it wrote is left: run the two-job plan)."""
    if not _applies(rw, snap, candidates):
        return None
    from pyspark.errors import AnalysisException
    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    obs = Observation(f"pydelta_dml_{uuid.uuid4().hex}")
    try:  # observe analyses its metrics at once: a subquery in them is refused here
        observed = scan.observe(
            obs,
            F.count(F.when(hit, F.lit(1))).alias("rows"),
            F.collect_set(F.when(hit, F.col(SCAN_FILE))).alias("files"),
        )
        adds = rewrite(observed)
    except AnalysisException as exc:  # a condition Spark's observed metrics refuse
        log.info("pydelta DML: one-job rewrite not possible (%s); two jobs", exc)
        return None
    metrics = observed_metrics(obs)
    if metrics is None:
        delete_files(rw.storage, adds)
        log.warning("pydelta DML: the rewrite's observed metrics did not arrive; rewriting in two jobs")
        return None
    matched = sorted(str(f) for f in metrics["files"] or ())
    rows = int(metrics["rows"] or 0)
    if len(matched) == candidates.num_rows:
        return _Pass(matched, rows, adds)
    delete_files(rw.storage, adds)
    return _Pass(matched, rows, None)


def _applies(rw: TableRewriter, snap: Snapshot, candidates: pa.Table) -> bool:
    return not rw.writes_changes(snap) and within_limit(rw, candidates)


def within_limit(rw: TableRewriter, candidates: pa.Table) -> bool:
    """Whether ``candidates`` (file rows) are some files totalling at most
    ``spark.pydelta.dml.singlePassMaxBytes`` (a single pass applies)."""
    if not candidates.num_rows:
        return False
    limit = byte_count(rw.spark, SINGLE_PASS_CONF, DEFAULT_MAX_BYTES)
    size = pc.sum(candidates.column("size")).as_py() or 0
    return 0 < limit and size <= limit


def observed_metrics(obs: Any) -> dict[str, Any] | None:
    """The observed metrics, or None when they did not arrive in time (``Observation.get``
    waits without a bound)."""
    got: list[dict[str, Any]] = []
    failed: list[Exception] = []

    def wait() -> None:
        try:
            got.append(obs.get)
        except Exception as exc:  # pragma: no cover - reported below
            failed.append(exc)

    waiter = threading.Thread(target=wait, name="pydelta-observation", daemon=True)
    waiter.start()
    waiter.join(METRICS_WAIT_SECONDS)
    if failed:
        log.warning("pydelta DML: reading the rewrite's observed metrics failed: %s", failed[0])
    return got[0] if got else None
