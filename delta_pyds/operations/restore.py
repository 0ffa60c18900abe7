"""RESTORE: bringing a table back to the files of an older version, in one new commit.

Guarantees (as delta-spark's RestoreTableCommand):

* the files of the old version that are not in the current one are re-added, and the
  files added since are removed, all with ``dataChange=true`` (a file is the same file
  only with the same deletion vector);
* the old version's metadata comes back when it differs from the current one;
* it fails, changing nothing, if a data file or deletion vector file it needs is gone
  (probably deleted by VACUUM);
* the commit reads the whole table (any concurrent change to it conflicts) and carries
  delta-spark's ``RESTORE`` parameters and metrics. No Spark."""

from __future__ import annotations

from typing import cast

import pyarrow as pa

from delta_pyds.errors import DataFileError
from delta_pyds.protocol.deletion_vectors import DeletionVectorDescriptor
from delta_pyds.storage.store import Storage
from delta_pyds.table.snapshot import Snapshot
from delta_pyds.table.state import file_actions
from delta_pyds.transaction.commit import CommitResult, Transaction
from delta_pyds.transaction.file_actions import add_actions, keys, remove_actions, sum_size


def restore(
    storage: Storage, current: Snapshot, target: Snapshot, *, table_path: str, timestamp: object = None
) -> tuple[CommitResult | None, dict[str, int]]:
    """Commits the files of ``target`` (an older snapshot) over ``current``; returns the
    commit's result and its metrics. ``timestamp`` (when the target was chosen by time)
    goes into the operation parameters instead of the version; ``table_path`` names the
    table in errors."""
    cur = file_actions(current).active
    old = file_actions(target).active
    cur_keys = keys(cur)
    old_keys = keys(old)
    add_rows = [i for i, k in enumerate(old_keys) if k not in set(cur_keys)]
    rem_rows = [i for i, k in enumerate(cur_keys) if k not in set(old_keys)]
    to_add = old.take(pa.array(add_rows, pa.int64()))
    missing = [p for p in to_add.column("path").to_pylist() if not storage.exists(storage.resolve(p))]
    if missing:
        raise DataFileError(
            f"cannot restore {table_path} to version {target.version}: {len(missing)} data file(s) "
            f"it needs are gone (e.g. {missing[0]}), probably deleted by VACUUM"
        )
    for d in to_add.column("deletionVector").to_pylist():
        if d and d.get("storageType") in ("u", "p"):
            path = cast(str, DeletionVectorDescriptor.from_dict(d).absolute_path(storage))  # "u"/"p": a file
            if not storage.exists(path):
                raise DataFileError(
                    f"cannot restore to version {target.version}: deletion vector "
                    f"file {path} is gone, probably deleted by VACUUM"
                )
    adds = add_actions(to_add, data_change=True)
    removes = remove_actions(current_rows := cur.take(pa.array(rem_rows, pa.int64())))
    txn = Transaction(storage, current)
    txn.read_whole_table()
    if target.metadata.to_dict() != current.metadata.to_dict():
        txn.update_metadata(target.metadata)
    txn.remove_files(removes)
    txn.add_files(adds)
    metrics = {
        "tableSizeAfterRestore": sum_size(old),
        "numOfFilesAfterRestore": old.num_rows,
        "numRemovedFiles": current_rows.num_rows,
        "numRestoredFiles": len(adds),
        "removedFilesSize": sum_size(current_rows),
        "restoredFilesSize": sum_size(to_add),
    }
    params = {"version": target.version} if timestamp is None else {"timestamp": str(timestamp)}
    return txn.commit("RESTORE", params, metrics=metrics), metrics
