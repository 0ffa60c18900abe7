"""Listing ``_delta_log`` from a version on, without listing what comes before it.

Guarantees: :func:`list_log_from` returns exactly the entries of the log directory whose
names sort at or after ``<version:020d>`` (every file of version ``version`` and later:
commits, checkpoints, compactions, checksums), sorted by name, as
:meth:`Storage.list_dir <delta_pyds.storage.store.Storage.list_dir>` would return them
filtered. The store is asked for them with
:meth:`Storage.list_dir_after <delta_pyds.storage.store.Storage.list_dir_after>` (on S3 a
``list_objects_v2`` ``StartAfter`` listing, so a 10,000-commit log with a recent
checkpoint costs one page instead of eleven; elsewhere the whole directory, filtered).
"""

from __future__ import annotations

from delta_pyds.storage.store import FileEntry, Storage


def version_prefix(version: int) -> str:
    """The name prefix of every log file of ``version`` (``%020d``)."""
    return f"{version:020d}"


def list_log_from(storage: Storage, directory: str, version: int) -> list[FileEntry]:
    """The entries of ``directory`` (the ``_delta_log`` of ``storage``) named at or after
    ``version``'s prefix, sorted by name."""
    # names sorting after the bare version digits are exactly the files of that version
    # and later: no log file is named by the digits alone
    return storage.list_dir_after(directory, version_prefix(version))
