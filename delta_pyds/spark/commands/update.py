"""UPDATE (``DeltaTable.update(condition, set)``), on the machinery of
:mod:`delta_pyds.spark.commands.rewriter`.

Guarantees:

* one commit through :class:`~delta_pyds.transaction.commit.Transaction` from the version
  it read, with conflict detection (:mod:`delta_pyds.operations.read_set`) and
  ``commitInfo`` with the ``UPDATE`` metrics; nothing is committed when no row matches;
* ``set`` keys name top-level columns or struct fields (resolved as delta-spark resolves
  them: :mod:`delta_pyds.spark.commands.resolution`); the condition and the values are
  analysed against the table's columns before anything is read; identity columns the
  table generates cannot be set; generated columns the update does not set are recomputed
  from the updated values (a generated partition column moves the row to its partition), and
  one set to a value its expression does not give fails the update
  (:class:`~delta_pyds.errors.ConstraintViolationError`, nothing committed);
* files that may hold matching rows are found by data skipping on the condition; when those
  candidates are small the rewrite and the search for matching rows are one Spark job
  (:mod:`delta_pyds.spark.commands.single_pass`);
* with a table alias (``DeltaTable.alias``, SQL ``UPDATE ... AS t``) the condition and the
  values are evaluated by Spark on the table's rows under that alias (Spark's own scoping); a
  ``set`` key may be qualified by it; skipping reads alias-qualified names only where its
  reading is certain, else it prunes nothing;
* with deletion vectors on (the ``deletionVectors`` feature and
  ``delta.enableDeletionVectors=true``) the matching rows are marked deleted in their
  files' merged vectors and only the updated rows are written, as new files; otherwise
  the files holding matching rows are rewritten (copy-on-write, existing deletion vectors
  applied). Row ids are kept; updated rows take the commit's version;
* on a table with ``delta.enableChangeDataFeed=true`` the pre- and post-images of the
  updated rows are written as change data files in the same commit;
* files written for a commit that then fails are deleted.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from delta_pyds.cdf.plan import CHANGE_TYPE
from delta_pyds.errors import ArgumentValueError
from delta_pyds.operations.dv_delete import stage_dv_marks
from delta_pyds.operations.read_set import record_read
from delta_pyds.operations.row_tracking import row_tracking_columns
from delta_pyds.protocol.action_types import AddFile
from delta_pyds.spark.commands.dv_marks import dv_hits, writes_dvs
from delta_pyds.spark.commands.native_rows import SCAN_ROW_ID, SCAN_ROW_VERSION
from delta_pyds.spark.commands.resolution import check_condition_resolves, set_columns
from delta_pyds.spark.commands.rewriter import (
    OpTimes,
    TableRewriter,
    generated_expressions,
    refuse_identity_updates,
    regenerate,
    table_spark_schema,
)
from delta_pyds.spark.commands.single_pass import rewrite_matching
from delta_pyds.spark.session import projection
from delta_pyds.spark.session.dialect import session_dialect
from delta_pyds.table.snapshot import Snapshot
from delta_pyds.table.state import file_actions
from delta_pyds.transaction.commit import CommitResult, Transaction
from delta_pyds.transaction.file_actions import remove_actions, rewrite_metrics, rows_for_paths, stat_rows
from delta_pyds.transaction.staged_files import delete_on_failure

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

    from delta_pyds.spark.commands.args import ColumnMapping, OptionalExpressionOrColumn


def update_rows(
    rw: TableRewriter,
    condition: OptionalExpressionOrColumn = None,
    set: ColumnMapping | None = None,
    *,
    alias: str | None = None,
) -> CommitResult | None:
    """Sets columns (``{"col": "SQL expr" | Column}``) on rows matching ``condition``
    (see the module docstring), over the table under ``alias`` when given; returns the commit
    made (None when no row matches: nothing is committed)."""
    from pyspark.sql import functions as F

    if not set:
        raise ArgumentValueError("update: set must name at least one column")
    times = OpTimes()
    snap = rw.dml_snapshot()
    schema = table_spark_schema(snap)
    exprs = set_columns(schema, set, lambda n: F.col(f"`{n}`"), what="update", alias=alias)
    check_condition_resolves(rw.spark, schema, condition, exprs.values(), alias=alias)
    cond = F.lit(True) if condition is None else (F.expr(condition) if isinstance(condition, str) else condition)
    candidates = rw.candidates(snap, condition, alias=alias)
    scan = rw.scan(snap, candidates, alias=alias)
    hit = F.coalesce(cond, F.lit(False))
    refuse_identity_updates(snap, exprs, "update")
    if writes_dvs(snap):
        return _update_with_dvs(rw, snap, condition, candidates, scan, hit, exprs, times, alias)
    return _update_copy_on_write(rw, snap, condition, candidates, scan, cond, exprs, times, alias)


def _update_copy_on_write(
    rw: TableRewriter,
    snap: Snapshot,
    condition: OptionalExpressionOrColumn,
    candidates: pa.Table,
    scan: DataFrame,
    cond: Column,
    exprs: Mapping[str, Column],
    times: OpTimes,
    alias: str | None,
) -> CommitResult | None:
    """Rewrites the files holding a matching row with the rows updated, in one commit."""
    from pyspark.sql import functions as F

    hit = F.coalesce(cond, F.lit(False))
    found = rewrite_matching(
        rw, snap, candidates, scan, hit, lambda rows: _rewrite_updated(rw, snap, rows, hit, exprs), times, alias=alias
    )
    if found is None:
        return None
    matched, updated_rows, in_files, adds = found.files, found.rows, found.in_files, found.adds
    written: list[Mapping[str, Any]] = list(adds)
    txn = Transaction(rw.storage, snap)
    with delete_on_failure(rw.storage, written):
        cdcs = []
        if rw.writes_changes(snap):
            names = [f.name for f in snap.schema.fields]
            cdcs = rw.write_changes(snap, _update_images(snap, in_files.where(hit), names, exprs))
            written += cdcs
            txn.add_cdc_files(cdcs)
        victims = rows_for_paths(file_actions(snap).active, matched)
        record_read(txn, snap, condition, candidates, alias=alias, bare_columns=True, dialect=session_dialect(rw.spark))
        txn.remove_files(remove_actions(victims))
        txn.add_files(adds)
        return txn.commit(
            "UPDATE",
            {"predicate": json.dumps([str(condition)] if condition is not None else [])},
            metrics={
                **rewrite_metrics(victims, adds, len(cdcs)),
                "numUpdatedRows": updated_rows,
                "numCopiedRows": sum(stat_rows(a) for a in adds) - updated_rows,
                **times.metrics(),
            },
        )


def _rewrite_updated(
    rw: TableRewriter, snap: Snapshot, in_files: DataFrame, hit: Column, exprs: Mapping[str, Column]
) -> list[AddFile]:
    """Writes every row of ``in_files`` (the files holding a matching row), the matching
    ones updated (their commit version reset); returns the add actions."""
    from pyspark.sql import functions as F

    cols: list[Column | str] = []
    for f in snap.schema.fields:
        if f.name in exprs:
            cols.append(F.when(hit, exprs[f.name]).otherwise(F.col(f"`{f.name}`")).alias(f.name))
        else:
            cols.append(projection.ident(f.name))
    spec = rw.write_spec(snap, row_tracking=True)
    extra = [projection.ident(SCAN_ROW_ID), projection.ident(SCAN_ROW_VERSION)] if row_tracking_columns(snap) else []
    flagged = projection.select(in_files.withColumn("__pydelta_hit", hit), [*cols, *extra, "__pydelta_hit"])
    flagged = regenerate(snap, flagged, _regenerated(snap, exprs, F.col("__pydelta_hit")))
    return rw.rewrite(rw.tracked(snap, flagged, updated=F.col("__pydelta_hit")), spec, True)


def _update_images(snap: Snapshot, changed: DataFrame, names: list[str], exprs: Mapping[str, Column]) -> DataFrame:
    """The change feed rows of an update: the columns ``names`` of the ``changed`` rows as
    they were (``update_preimage``) and as they become (``update_postimage``)."""
    from pyspark.sql import functions as F

    old = [projection.ident(n) for n in names]
    new = [exprs[n].alias(n) if n in exprs else projection.ident(n) for n in names]
    post = regenerate(snap, projection.select(changed, new), _regenerated(snap, exprs, F.lit(True)))
    pre = projection.select(changed, [*old, projection.aliased("'update_preimage'", CHANGE_TYPE)])
    return pre.unionAll(post.withColumn(CHANGE_TYPE, F.lit("update_postimage")))


def _regenerated(snap: Snapshot, exprs: Mapping[str, Column], hit: Column) -> dict[str, Column]:
    """The generated columns the update recomputes (those it does not set), each where ``hit``."""
    return {name: hit for name in generated_expressions(snap) if name not in exprs}


def _update_with_dvs(
    rw: TableRewriter,
    snap: Snapshot,
    condition: OptionalExpressionOrColumn,
    candidates: pa.Table,
    scan: DataFrame,
    hit: Column,
    exprs: Mapping[str, Column],
    times: OpTimes,
    alias: str | None,
) -> CommitResult | None:
    """UPDATE as delta-spark does with deletion vectors on: the matching rows are marked
    deleted in their files' (merged) vectors and written, updated, as new files."""
    from pyspark.sql import functions as F

    active = file_actions(snap).active
    old, bitmaps = dv_hits(scan, hit, active)
    times.scan_done()
    if not bitmaps:
        return None
    changed = scan.where(hit)
    names = [f.name for f in snap.schema.fields if f.name in changed.columns]
    new = [exprs[n].alias(n) if n in exprs else projection.ident(n) for n in names]
    extra = [projection.ident(SCAN_ROW_ID), projection.ident(SCAN_ROW_VERSION)] if row_tracking_columns(snap) else []
    spec = rw.write_spec(snap, row_tracking=True)
    rows = regenerate(snap, projection.select(changed, [*new, *extra]), _regenerated(snap, exprs, F.lit(True)))
    adds = rw.rewrite(rw.tracked(snap, rows, updated=F.lit(True)), spec, True)
    written: list[Mapping[str, Any]] = list(adds)
    txn = Transaction(rw.storage, snap)
    with delete_on_failure(rw.storage, written):
        cdcs = []
        if rw.writes_changes(snap):
            cdcs = rw.write_changes(snap, _update_images(snap, changed, names, exprs))
            written += cdcs
            txn.add_cdc_files(cdcs)
        record_read(txn, snap, condition, candidates, alias=alias, bare_columns=True, dialect=session_dialect(rw.spark))
        marks = stage_dv_marks(rw.storage, txn, old, bitmaps, inline_max_bytes=rw.inline_dv_limit())
        txn.add_files(adds)
        return txn.commit(
            "UPDATE",
            {"predicate": json.dumps([str(condition)] if condition is not None else [])},
            metrics={
                "numRemovedFiles": marks.files_removed,
                "numAddedFiles": len(adds),
                "numUpdatedRows": marks.deleted_now,
                "numCopiedRows": 0,
                "numDeletionVectorsAdded": marks.vectors_added,
                "numDeletionVectorsUpdated": marks.vectors_updated,
                "numDeletionVectorsRemoved": marks.files_removed,
                "numAddedChangeFiles": len(cdcs),
                "numRemovedBytes": marks.bytes_removed,
                "numAddedBytes": sum(int(a["size"]) for a in adds),
                **times.metrics(),
            },
        )
