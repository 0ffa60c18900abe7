"""Where a first write may create a table: a location holding visible files but no Delta log
(a folder of plain Parquet files) is refused for a first write that is not an overwrite, with
:class:`~delta_pyds.errors.TableExistsError` pointing to ``convertToDelta`` (the new table would
not contain those files and a VACUUM would delete them); a location that passes gets its
``_delta_log`` before any data file is written, so a retry after a crash, a concurrent first
writer or a streaming sink's first batch sees a table being created, not a foreign folder.
"""

from __future__ import annotations

import os

from delta_pyds.log.files import LOG_DIR
from delta_pyds.storage.store import Storage
from delta_pyds.storage.tree import list_tree, visible_files
from delta_pyds.transaction.commit import TableExistsError

__all__ = ["NEW_TABLE_MARKER", "mark_new_table_location", "refuse_non_delta_files"]

NEW_TABLE_MARKER = ".pydelta-new-table"  # in _delta_log on object stores (no directories there)


def refuse_non_delta_files(storage: Storage) -> bool:
    """A first write that is not an overwrite, to a location holding data files but no Delta
    log, would create a table that ignores them (and a later VACUUM would delete them).

    Returns whether the location passed without a ``_delta_log``: it then gets one
    (:func:`mark_new_table_location`) once the whole plan is valid, before any data file is written,
    so a retry after a crash, a concurrent first writer, or a sink committing its first
    batch sees the files of a table being created, not a foreign folder."""
    if storage.protocol == "file":
        if os.path.isdir(storage.join(LOG_DIR)):
            return False
    elif list_tree(storage, LOG_DIR):
        return False
    existing = visible_files(storage)
    if existing:
        raise TableExistsError(
            f"cannot write to {storage.root}: it is not a Delta table but holds files (e.g. "
            f"{existing[0].rel}, {len(existing)} in all), which a new table would not contain and a "
            "later VACUUM would delete. Convert the directory first with DeltaTable.convertToDelta "
            f"(DeltaTable.convertToDelta(spark, 'parquet.`{storage.root}`')), write to an empty "
            "location, or use mode('overwrite') to replace them"
        )
    return True


def mark_new_table_location(storage: Storage) -> None:
    """``_delta_log`` for a table being created: a directory on local disk, a marker object
    (which log listings ignore) on object stores, which have no directories."""
    if storage.protocol == "file":
        os.makedirs(storage.join(LOG_DIR), exist_ok=True)
    else:
        storage.write_bytes(storage.join(LOG_DIR, NEW_TABLE_MARKER), b"")
