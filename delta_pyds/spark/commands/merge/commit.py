"""MERGE's write and commit: the joined rows' new data files (and change data files, or
deletion vectors) written from :class:`~delta_pyds.spark.commands.merge.output.MergeRows`, and
one commit carrying them with the removal of the touched files, schema evolution and
identity high-water marks.

Guarantees: one commit from the version the merge read, reading every target file (a
concurrent remove of one conflicts) and the partitions the condition's target-side
partition conjuncts select; ``commitInfo`` carries delta-spark's MERGE parameters and
metrics; every file written for the commit is deleted if it fails."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from delta_pyds.errors import IdentityColumnError
from delta_pyds.operations.dv_delete import stage_dv_marks
from delta_pyds.operations.read_set import record_read
from delta_pyds.protocol.action_types import AddCDCFile, AddFile
from delta_pyds.protocol.identity import with_high_water_marks
from delta_pyds.protocol.schema import StructType as DeltaStruct
from delta_pyds.protocol.schema import parse_schema
from delta_pyds.spark.commands.merge.metrics import MergeOutcome, operation_parameters
from delta_pyds.spark.commands.merge.output import MergeRows
from delta_pyds.spark.commands.merge.plan import MergePlan
from delta_pyds.spark.commands.rewriter import TableRewriter, now_ms
from delta_pyds.spark.session.dialect import session_dialect
from delta_pyds.transaction.file_actions import num_live_rows, rows_for_paths, stat_rows, sum_size

if TYPE_CHECKING:
    import pyarrow as pa

    from delta_pyds.protocol.actions import Metadata
    from delta_pyds.transaction.commit import CommitResult, Transaction


def identity_marks(mr: MergeRows, outcome: MergeOutcome) -> dict[str, int]:
    """The high-water mark per generated identity column (the largest identity number of
    an inserted row holds the extreme value); refuses values beyond a long."""
    if not mr.generated or outcome.top_k is None:
        return {}
    marks = {}
    for col in mr.generated:
        last = col.value(col.first_k + outcome.top_k)
        if not -(1 << 63) <= last < (1 << 63):
            raise IdentityColumnError(f"merge: identity column {col.name} would overflow a long ({last})")
        marks[col.name] = last
    return marks


def commit_merge(
    plan: MergePlan,
    mr: MergeRows,
    outcome: MergeOutcome,
    metrics: dict[str, int],
    *,
    dv: bool,
    started_ms: int | None = None,
    written: list[AddFile] | None = None,
) -> CommitResult | None:
    """Writes the new files (and change data files, or the changed rows' deletion
    vectors) and commits them with the removal of the touched files (delta-spark's MERGE
    operation parameters); deletes what it wrote if the commit fails.
    Fills ``metrics`` (files, bytes, output and copied rows, change files, and inserted rows
    when phase 1 did not count them; ``rewriteTimeMs`` from this call on and
    ``executionTimeMs`` from ``started_ms``); returns the commit, or None, committing nothing,
    when no file is touched and no row inserted. ``written``: files already written for the
    commit (the single pass's rewrite of the touched files), committed with the new ones."""
    from delta_pyds.table.state import file_actions
    from delta_pyds.transaction.commit import Transaction
    from delta_pyds.transaction.staged_files import delete_on_failure

    rewrite_started = now_ms()
    rw, snap = plan.rewriter, plan.snap
    marks = identity_marks(mr, outcome)
    txn = Transaction(rw.storage, snap)
    metadata, evolved = _evolve(plan, txn)
    out = mr.data_rows(dv=dv, tracking=plan.tracking)
    spec = rw.write_spec(snap, row_tracking=True, evolved_schema=evolved)
    adds = [*(written or []), *(rw.rewrite(out, spec, True) if out is not None else [])]
    staged: list[Mapping[str, Any]] = list(adds)  # grows with the change data files: all deleted if the commit fails
    with delete_on_failure(rw.storage, staged):
        active = file_actions(snap).active
        if not outcome.inserts_counted:
            metrics["numTargetRowsInserted"] = inserted_rows(mr, outcome, metrics, adds, active, dv=dv)
        if not outcome.touched and not adds:  # nothing matched, nothing inserted: no commit
            return None
        marked = with_high_water_marks(parse_schema(metadata.schema_string), marks)
        if marked is not None:
            txn.update_metadata(replace(metadata, schema_string=marked.json()))
        changes = _stage_changes(plan, mr, outcome, txn, evolved) if rw.writes_changes(snap) else []
        staged += changes
        record_read(txn, snap, plan.condition, snap.files, alias=plan.talias, dialect=session_dialect(rw.spark))
        _stage_removals(rw, outcome, txn, active, adds, metrics, dv=dv)
        txn.add_files(adds)
        done = now_ms()
        metrics.update(
            numTargetFilesAdded=len(adds),
            numTargetBytesAdded=sum(int(a["size"]) for a in adds),
            numOutputRows=sum(stat_rows(a) for a in adds),
            numTargetChangeFilesAdded=len(changes),
            rewriteTimeMs=done - rewrite_started,
        )
        if started_ms is not None:
            metrics["executionTimeMs"] = done - started_ms
        return txn.commit("MERGE", operation_parameters(plan), metrics=metrics)


def _evolve(plan: MergePlan, txn: Transaction) -> tuple[Metadata, DeltaStruct | None]:
    """(the commit's metadata, the evolved schema as committed, or None): schema evolution
    planned once, so that new columns keep one physical name everywhere."""
    metadata, evolved = plan.snap.metadata, plan.evolved
    if evolved is None:
        return metadata, None
    new_metadata, new_protocol = plan.rewriter.evolution(plan.snap, evolved)
    metadata = new_metadata or metadata
    if new_protocol is not None:
        txn.update_protocol(new_protocol)
    txn.update_metadata(metadata)
    return metadata, parse_schema(metadata.schema_string)


def _stage_changes(
    plan: MergePlan, mr: MergeRows, outcome: MergeOutcome, txn: Transaction, evolved: DeltaStruct | None
) -> list[AddCDCFile]:
    """Writes the change data files and adds them to ``txn``; returns them."""
    changes = mr.change_rows(dedupe_deletes=plan.delete_all_matched and outcome.several_matches)
    if changes is None:
        return []
    cdcs = plan.rewriter.write_changes(plan.snap, changes, evolved_schema=evolved)
    txn.add_cdc_files(cdcs)
    return list(cdcs)


def _stage_removals(
    rw: TableRewriter,
    outcome: MergeOutcome,
    txn: Transaction,
    active: pa.Table,
    adds: list[AddFile],
    metrics: dict[str, int],
    *,
    dv: bool,
) -> None:
    """The touched files' deletion vectors (``dv``) or removes, and their metrics."""
    from delta_pyds.transaction.file_actions import remove_actions

    if dv and outcome.touched:
        old, bitmaps = changed_files(active, outcome.changed or {})
        staged = stage_dv_marks(rw.storage, txn, old, bitmaps, inline_max_bytes=rw.inline_dv_limit())
        metrics.update(
            numTargetBytesRemoved=0,  # as delta-spark: the files stay, with vectors
            numTargetFilesRemoved=staged.files_removed,
            numTargetRowsCopied=0,
            numTargetDeletionVectorsAdded=staged.vectors_added,
            numTargetDeletionVectorsUpdated=staged.vectors_updated,
            numTargetDeletionVectorsRemoved=staged.files_removed,
        )
        return
    victims = rows_for_paths(active, outcome.touched)
    txn.remove_files(remove_actions(victims))
    changed = metrics["numTargetRowsUpdated"] + metrics["numTargetRowsInserted"]
    metrics.update(
        numTargetFilesRemoved=victims.num_rows,
        numTargetBytesRemoved=sum_size(victims),
        numTargetRowsCopied=sum(stat_rows(a) for a in adds) - changed,
        # no vector written (copy-on-write, or an insert-only merge): zeros, as delta-spark records them
        numTargetDeletionVectorsAdded=0,
        numTargetDeletionVectorsUpdated=0,
        numTargetDeletionVectorsRemoved=0,
    )


def changed_files(active: pa.Table, changed: dict[str, bytes]) -> tuple[pa.Table, list[bytes]]:
    """(the active file actions of the files phase 1 found changed rows in, per file the
    serialized bitmap of those rows: the rows the commit marks deleted)."""
    import pyarrow as pa

    by_path = {p: i for i, p in enumerate(active.column("path").to_pylist())}
    names = list(changed)
    return active.take(pa.array([by_path[name] for name in names], pa.int64())), [changed[name] for name in names]


def inserted_rows(
    mr: MergeRows, outcome: MergeOutcome, metrics: dict[str, int], adds: list[AddFile], active: pa.Table, *, dv: bool
) -> int:
    """The inserted rows, from the written files' row counts: they hold the inserted rows
    and, with deletion vectors, the updated rows, else the touched files' live rows but the
    deleted ones (their ``numRecords`` and deletion vectors from the log). Counted by a
    Spark job only when a touched file's statistics lack ``numRecords``."""
    written = sum(stat_rows(a) for a in adds)
    if dv:
        return written - metrics["numTargetRowsUpdated"]
    live = num_live_rows(rows_for_paths(active, outcome.touched)) if outcome.touched else 0
    if live is None:
        return mr.inserts.count() if mr.inserts is not None else 0
    return written - (live - metrics["numTargetRowsDeleted"])
