"""DELETE (``DeltaTable.delete(condition)``), on the machinery of
:mod:`delta_pyds.spark.commands.rewriter`.

Guarantees:

* one commit through :class:`~delta_pyds.transaction.commit.Transaction` from the version
  it read, with conflict detection (a concurrent blind append does not fail it; a
  concurrent change to a file it read or removed does: :mod:`delta_pyds.operations.read_set`)
  and ``commitInfo`` with delta-spark's ``DELETE`` metrics (rows, files, bytes, deletion
  vectors, change files, ``executionTimeMs`` / ``scanTimeMs`` / ``rewriteTimeMs``); the
  commit made is :func:`delete_rows`'s result (None when no row matches: nothing is committed);
* without a condition every file is removed, nothing read or written;
* files that may hold matching rows are found by data skipping on the condition; only
  files holding a matching row change; when those candidates are small the rewrite and the
  search for matching rows are one Spark job (:mod:`delta_pyds.spark.commands.single_pass`);
* with a table alias (``DeltaTable.alias``, SQL ``DELETE FROM ... AS t``) the condition is
  evaluated by Spark on the table's rows under that alias (Spark's own scoping: a subquery's
  or a lambda's ``t`` is not the table's); skipping reads alias-qualified names only where
  its reading is certain, else it prunes nothing;
* with deletion vectors on (the ``deletionVectors`` feature and
  ``delta.enableDeletionVectors=true``) the matching rows are marked in the files'
  vectors and no data file is rewritten (:mod:`delta_pyds.operations.dv_delete`);
  otherwise the files holding matching rows are rewritten without them (copy-on-write,
  row ids and commit versions kept), and files whose rows are all deleted are removed;
* a copy-on-write delete on a table with ``delta.enableChangeDataFeed=true`` writes the
  deleted rows as change data files in the same commit;
* files written for a commit that then fails are deleted.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from delta_pyds.cdf.plan import CHANGE_TYPE
from delta_pyds.operations.dv_delete import commit_dv_delete
from delta_pyds.operations.read_set import record_read
from delta_pyds.spark.commands.dv_marks import dv_hits, writes_dvs
from delta_pyds.spark.commands.resolution import check_condition_resolves
from delta_pyds.spark.commands.rewriter import OpTimes, TableRewriter, table_spark_schema
from delta_pyds.spark.commands.single_pass import rewrite_matching
from delta_pyds.spark.session.dialect import session_dialect
from delta_pyds.table.snapshot import Snapshot
from delta_pyds.table.state import file_actions
from delta_pyds.transaction.commit import CommitResult, Transaction
from delta_pyds.transaction.file_actions import (
    num_live_rows,
    remove_actions,
    rewrite_metrics,
    rows_for_paths,
    stat_rows,
)
from delta_pyds.transaction.staged_files import delete_on_failure

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

    from delta_pyds.protocol.action_types import AddFile
    from delta_pyds.spark.commands.args import OptionalExpressionOrColumn


def delete_rows(
    rw: TableRewriter, condition: OptionalExpressionOrColumn = None, *, alias: str | None = None
) -> CommitResult | None:
    """Deletes the rows matching ``condition`` (SQL string or Column; None: all rows), over
    the table under ``alias`` when given (``t.id``: Spark resolves it on the aliased scan);
    returns the commit made (None when no row matches: nothing is committed)."""
    from pyspark.sql import functions as F

    times = OpTimes()
    snap = rw.dml_snapshot()
    check_condition_resolves(rw.spark, table_spark_schema(snap), condition, alias=alias)
    active = file_actions(snap).active
    txn = Transaction(rw.storage, snap)
    params = {"predicate": json.dumps([str(condition)] if condition is not None else [])}
    if condition is None:
        return _delete_all(txn, active, params, times)
    cond = F.expr(condition) if isinstance(condition, str) else condition
    candidates = rw.candidates(snap, condition, alias=alias)
    record_read(txn, snap, condition, candidates, alias=alias, bare_columns=True, dialect=session_dialect(rw.spark))
    scan = rw.scan(snap, candidates, alias=alias)
    if writes_dvs(snap):
        old, bitmaps = dv_hits(scan, cond, active)
        times.scan_done()
        if not bitmaps:
            return None
        return commit_dv_delete(
            rw.storage, txn, old, bitmaps, params, inline_max_bytes=rw.inline_dv_limit(), times=times.metrics
        )
    return _delete_copy_on_write(rw, txn, snap, active, candidates, scan, cond, params, times, alias)


def _delete_all(txn: Transaction, active: pa.Table, params: dict[str, str], times: OpTimes) -> CommitResult:
    """Removes every file: the whole table was read, nothing is written."""
    txn.read_whole_table()
    removes = remove_actions(active)
    txn.remove_files(removes)
    rows = num_live_rows(active)
    return txn.commit(
        "DELETE",
        params,
        metrics={
            **rewrite_metrics(active, [], 0),
            "numDeletedRows": rows if rows is not None else -1,
            "numCopiedRows": 0,
            **times.metrics(),
        },
    )


def _delete_copy_on_write(
    rw: TableRewriter,
    txn: Transaction,
    snap: Snapshot,
    active: pa.Table,
    candidates: pa.Table,
    scan: DataFrame,
    cond: Column,
    params: dict[str, str],
    times: OpTimes,
    alias: str | None,
) -> CommitResult | None:
    """Rewrites the files holding a matching row without those rows (plus the deleted rows
    as change data files when the table keeps a change feed), in one commit."""
    from pyspark.sql import functions as F

    hit = F.coalesce(cond, F.lit(False))
    spec = rw.write_spec(snap, row_tracking=True)

    def kept(rows: DataFrame) -> list[AddFile]:
        return rw.rewrite(rw.tracked(snap, rows.where(~hit)), spec, True)

    found = rewrite_matching(rw, snap, candidates, scan, hit, kept, times, alias=alias)
    if found is None:
        return None
    matched, deleted_rows, in_files, adds = found.files, found.rows, found.in_files, found.adds
    written: list[Mapping[str, Any]] = list(adds)
    with delete_on_failure(rw.storage, written):
        cdcs = []
        if rw.writes_changes(snap):
            cdcs = rw.write_changes(snap, in_files.where(hit).withColumn(CHANGE_TYPE, F.lit("delete")))
            written += cdcs
            txn.add_cdc_files(cdcs)
        victims = rows_for_paths(active, matched)
        txn.remove_files(remove_actions(victims))
        txn.add_files(adds)
        return txn.commit(
            "DELETE",
            params,
            metrics={
                **rewrite_metrics(victims, adds, len(cdcs)),
                "numDeletedRows": deleted_rows,
                "numCopiedRows": sum(stat_rows(a) for a in adds),
                **times.metrics(),
            },
        )
