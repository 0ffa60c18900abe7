"""MERGE's write and commit: the joined rows' new data files (and change data files, or
deletion vectors) written from :class:`~delta_pyds.spark.tables.merge_rows.MergeRows`, and
one commit carrying them with the removal of the touched files, schema evolution and
identity high-water marks.

Guarantees: one commit from the version the merge read, reading every target file (a
concurrent remove of one conflicts) and the partitions the condition's target-side
partition conjuncts select; ``commitInfo`` carries delta-spark's MERGE parameters and
metrics; every file written for the commit is deleted if it fails."""

from __future__ import annotations

from dataclasses import replace

from delta_pyds.operations.dv_delete import stage_dv_marks
from delta_pyds.operations.read_set import record_read
from delta_pyds.protocol.identity import with_high_water_marks
from delta_pyds.protocol.schema import parse_schema
from delta_pyds.spark.tables.dml import TableRewriter
from delta_pyds.spark.tables.merge_rows import MergeOutcome, MergeRows
from delta_pyds.spark.tables.merge_scope import MergeScope
from delta_pyds.transaction.file_actions import num_live_rows, rows_for_paths, stat_rows


def identity_marks(mr: MergeRows, outcome: MergeOutcome) -> dict:
    """The high-water mark per generated identity column (the largest identity number of
    an inserted row holds the extreme value); refuses values beyond a long."""
    if not mr.generated or outcome.top_k is None:
        return {}
    marks = {}
    for col in mr.generated:
        last = col.value(col.first_k + outcome.top_k)
        if not -(1 << 63) <= last < (1 << 63):
            raise ValueError(f"merge: identity column {col.name} would overflow a long ({last})")
        marks[col.name] = last
    return marks


def write_and_commit(
    rw: TableRewriter,
    scope: MergeScope,
    mr: MergeRows,
    outcome: MergeOutcome,
    metrics: dict,
    *,
    dv: bool,
    condition,
    parameters: dict,
) -> bool:
    """Writes the new files (and change data files, or the changed rows' deletion
    vectors) and commits them with the removal of the touched files (``condition``: the
    merge's; ``parameters``: the commit's operation parameters); deletes what it wrote if the commit fails.
    Fills ``metrics`` (files, copied rows, and inserted rows when phase 1 did not count
    them); returns False, committing nothing, when no file is touched and no row inserted."""

    from delta_pyds.table.state import file_actions
    from delta_pyds.transaction.commit import Transaction
    from delta_pyds.transaction.file_actions import remove_actions
    from delta_pyds.transaction.staged_files import delete_files

    snap = scope.snap
    marks = identity_marks(mr, outcome)
    txn = Transaction(rw.storage, snap)
    metadata = snap.metadata
    evolved = scope.evolved
    if evolved is not None:  # planned once: new columns keep one physical name everywhere
        new_metadata, new_protocol = rw.evolution(snap, evolved)
        metadata = new_metadata or metadata
        evolved = parse_schema(metadata.schema_string)
        if new_protocol is not None:
            txn.update_protocol(new_protocol)
        txn.update_metadata(metadata)
    out = mr.data_rows(dv=dv, tracking=scope.tracking)
    spec = rw.write_spec(snap, row_tracking=True, evolved_schema=evolved)
    adds = rw.rewrite(out, spec, True) if out is not None else []
    written = list(adds)
    active = file_actions(snap).active
    if not outcome.inserts_counted:
        metrics["numTargetRowsInserted"] = inserted_rows(mr, outcome, metrics, adds, active, dv=dv)
    if not outcome.touched and not adds:  # nothing matched, nothing inserted: no commit
        return False
    marked = with_high_water_marks(parse_schema(metadata.schema_string), marks)
    if marked is not None:
        txn.update_metadata(replace(metadata, schema_string=marked.json()))
    try:
        if rw.writes_changes(snap):
            changes = mr.change_rows(dedupe_deletes=scope.delete_all_matched and outcome.several_matches)
            if changes is not None:
                cdcs = rw.write_changes(snap, changes, evolved_schema=evolved)
                written += cdcs
                txn.add_cdc_files(cdcs)
        record_read(txn, snap, condition, snap.files, alias=scope.talias)
        if dv and outcome.touched:
            old, bitmaps = changed_files(active, outcome.changed or {})
            staged = stage_dv_marks(rw.storage, txn, old, bitmaps, inline_max_bytes=rw.inline_dv_limit())
            metrics.update(
                numTargetFilesRemoved=staged.files_removed,
                numTargetRowsCopied=0,
                numTargetDeletionVectorsAdded=staged.vectors_added,
                numTargetDeletionVectorsUpdated=staged.vectors_updated,
                numTargetDeletionVectorsRemoved=staged.files_removed,
            )
        else:
            victims = rows_for_paths(active, outcome.touched)
            txn.remove_files(remove_actions(victims))
            changed = metrics["numTargetRowsUpdated"] + metrics["numTargetRowsInserted"]
            metrics.update(
                numTargetFilesRemoved=victims.num_rows,
                numTargetRowsCopied=sum(stat_rows(a) for a in adds) - changed,
            )
            if dv:  # no touched file: no vector (an insert-only merge)
                metrics.update(
                    numTargetDeletionVectorsAdded=0,
                    numTargetDeletionVectorsUpdated=0,
                    numTargetDeletionVectorsRemoved=0,
                )
        txn.add_files(adds)
        metrics.update(numTargetFilesAdded=len(adds))
        txn.commit("MERGE", parameters, metrics=metrics)
    except BaseException:
        delete_files(rw.storage, written)
        raise
    return True


def changed_files(active, changed: dict) -> tuple:
    """(the active file actions of the files phase 1 found changed rows in, per file the
    serialized bitmap of those rows: the rows the commit marks deleted)."""
    import pyarrow as pa

    by_path = {p: i for i, p in enumerate(active.column("path").to_pylist())}
    names = list(changed)
    return active.take(pa.array([by_path[name] for name in names], pa.int64())), [changed[name] for name in names]


def inserted_rows(mr: MergeRows, outcome: MergeOutcome, metrics: dict, adds: list, active, *, dv: bool) -> int:
    """The inserted rows, from the written files' row counts: they hold the inserted rows
    and, with deletion vectors, the updated rows, else the touched files' live rows but the
    deleted ones (their ``numRecords`` and deletion vectors from the log). Counted by a
    Spark job only when a touched file's statistics lack ``numRecords``."""
    written = sum(stat_rows(a) for a in adds)
    if dv:
        return written - metrics["numTargetRowsUpdated"]
    live = num_live_rows(rows_for_paths(active, outcome.touched)) if outcome.touched else 0
    if live is None:
        return mr.inserts.count() if mr.inserts is not None else 0  # type: ignore[attr-defined]
    return written - (live - metrics["numTargetRowsDeleted"])
