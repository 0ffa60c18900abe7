"""Deletion vectors marking rows of existing files: the commit of a DELETE by deletion
vectors (no data file is rewritten), and the marks UPDATE and MERGE stage beside the new
files holding the changed rows.

Guarantees:

* the rows deleted now are merged with each file's existing deletion vector; the file is
  re-added with the merged vector (``dataChange=true``) and its statistics marked
  ``tightBounds: false`` (the vector now hides rows), or removed when every row is
  deleted;
* small vectors are stored inline in the log (no DV file to write and read), larger ones
  in one ``deletion_vector_*.bin`` file;
* a file's row count comes from its statistics, else from its Parquet footer, and bounds
  what a vector may hold;
* the commit carries delta-spark's ``DELETE`` metrics (``numDeletedRows`` counts only rows
  not already deleted). No Spark."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

import pyarrow as pa
import pyarrow.parquet as pq
from pyroaring import BitMap64

from delta_pyds.protocol.action_types import AddFile, DeletionVectorDict
from delta_pyds.protocol.deletion_vectors import (
    DeletionVectorDescriptor,
    deserialize_deleted_rows,
    load_deleted_rows,
    store_deletion_vectors,
    with_deletion_vector,
)
from delta_pyds.storage.store import Storage
from delta_pyds.transaction.commit import CommitResult, Transaction
from delta_pyds.transaction.file_actions import add_actions, remove_actions, stat_rows


@dataclass
class DvMarks:
    """What :func:`stage_dv_marks` added to a transaction."""

    deleted_now: int  # rows newly deleted (not already in the files' vectors)
    vectors_added: int  # files re-added with a (new or merged) vector
    vectors_updated: int  # of those, files that had a vector before
    files_removed: int  # files whose every row is now deleted (removed)


def stage_dv_marks(
    storage: Storage, txn: Transaction, old: pa.Table, new_bitmaps: list, *, inline_max_bytes: int
) -> DvMarks:
    """Adds to ``txn`` (not committed) the removes of ``old`` (active file actions) and
    their re-adds with deletion vectors: ``new_bitmaps`` (serialized, one per row of
    ``old``) hold the rows marked now, merged with each file's existing vector; vectors up
    to ``inline_max_bytes`` serialized bytes go inline. Used by DELETE, and by UPDATE and
    MERGE, which also add the changed rows as new files."""
    olds = add_actions(old, data_change=True)
    bitmaps, dv_files, full_files = [], [], []
    deleted_now = 0
    for a, path, data in zip(olds, old.column("path").to_pylist(), new_bitmaps):
        total = stat_rows(a, default=None)
        if total is None:
            with storage.open_input(storage.resolve(path)) as f:
                total = pq.ParquetFile(f).metadata.num_rows
        bm = BitMap64(deserialize_deleted_rows(data, max_rows=total))
        prev = a.get("deletionVector")
        if prev:
            bm |= BitMap64(load_deleted_rows(storage, DeletionVectorDescriptor.from_dict(prev), max_rows=total))
            deleted_now += len(bm) - int(prev.get("cardinality") or 0)
        else:
            deleted_now += len(bm)
        if len(bm) >= total:
            full_files.append(a)
        else:
            bitmaps.append(bm)
            dv_files.append(a)
    # small vectors go inline in the log (no DV file to write and read), larger ones into
    # one deletion_vector_*.bin file
    descriptors = store_deletion_vectors(storage, bitmaps, inline_max_bytes=inline_max_bytes)
    new_adds = []
    for a, d in zip(dv_files, descriptors):
        new_adds.append(cast(AddFile, with_deletion_vector(a, d)))  # dataChange: true (add_actions above)
    txn.remove_files(remove_actions(old))
    txn.add_files(new_adds)
    # the vector files are deleted if the commit fails
    txn.written_deletion_vectors.extend(cast(DeletionVectorDict, d.to_dict()) for d in descriptors)
    return DvMarks(
        deleted_now=deleted_now,
        vectors_added=len(new_adds),
        vectors_updated=sum(1 for a in dv_files if a.get("deletionVector")),
        files_removed=len(full_files),
    )


def commit_dv_delete(
    storage: Storage,
    txn: Transaction,
    old: pa.Table,
    new_bitmaps: list,
    params: Mapping[str, Any],
    *,
    inline_max_bytes: int,
) -> CommitResult:
    """Commits deletion vectors on the files ``old`` (active file actions): ``new_bitmaps``
    (serialized, one per row of ``old``) hold the rows deleted now, merged with each file's
    existing vector; vectors up to ``inline_max_bytes`` serialized bytes go inline."""
    marks = stage_dv_marks(storage, txn, old, new_bitmaps, inline_max_bytes=inline_max_bytes)
    return txn.commit(
        "DELETE",
        params,
        metrics={
            "numRemovedFiles": marks.files_removed,
            "numAddedFiles": 0,
            "numDeletedRows": marks.deleted_now,
            "numDeletionVectorsAdded": marks.vectors_added,
            "numDeletionVectorsUpdated": marks.vectors_updated,
            "numCopiedRows": 0,
        },
    )
