"""Listing ``_delta_log`` from a version on, without listing what comes before it.

Guarantees: :func:`list_log_from` returns exactly the entries of the log directory whose
names sort at or after ``<version:020d>`` (every file of version ``version`` and later:
commits, checkpoints, compactions, checksums), sorted by name, as
:meth:`Storage.list_dir <delta_pyds.storage.store.Storage.list_dir>` would return them
filtered. On S3 (s3fs, not version-aware) the store is asked for them with a
``list_objects_v2`` ``StartAfter`` listing, so a 10,000-commit log with a recent
checkpoint costs one page instead of eleven; everywhere else (local disk, Azure, GCS,
memory) the directory is listed whole and filtered. A start-after listing that fails for
any reason other than an interrupt falls back to the whole listing, whose errors are the
storage layer's (redacted, retried): the fast path never decides the answer.

The S3 part belongs with the other backend specifics in ``storage/`` (a
``Storage.list_dir_from``); it sits here until that package is free to change.
"""

from __future__ import annotations

import logging
import posixpath
from typing import Any

from delta_pyds.storage.store import FileEntry, Storage, mtime_ms

log = logging.getLogger(__name__)

_S3_PROTOCOLS = ("s3", "s3a")


def version_prefix(version: int) -> str:
    """The name prefix of every log file of ``version`` (``%020d``)."""
    return f"{version:020d}"


def list_log_from(storage: Storage, directory: str, version: int) -> list[FileEntry]:
    """The entries of ``directory`` (the ``_delta_log`` of ``storage``) named at or after
    ``version``'s prefix, sorted by name."""
    first = version_prefix(version)
    entries = _s3_list_after(storage, directory, first) if storage.protocol in _S3_PROTOCOLS else None
    if entries is None:
        entries = [e for e in storage.list_dir(directory) if e.name >= first]
    return entries


def _s3_list_after(storage: Storage, directory: str, first: str) -> list[FileEntry] | None:
    """``directory``'s objects named after ``first`` through ``StartAfter``, or None when
    this filesystem cannot be asked so (then the caller lists the directory whole)."""
    fs = storage.fs
    if getattr(fs, "version_aware", False) or not callable(getattr(fs, "call_s3", None)):
        return None
    try:
        bucket, key, _ = fs.split_path(directory)
        prefix = key.rstrip("/") + "/"
        # names sorting after the bare version digits are exactly the files of that
        # version and later: no log file is named by the digits alone
        kwargs: dict[str, Any] = {"Bucket": bucket, "Prefix": prefix, "Delimiter": "/", "StartAfter": prefix + first}
        entries = []
        while True:
            page = fs.call_s3("list_objects_v2", **kwargs)
            for obj in page.get("Contents") or ():
                name = obj["Key"][len(prefix) :]
                if not name or "/" in name:
                    continue
                full = posixpath.join(bucket, obj["Key"])
                entries.append(FileEntry(name, full, int(obj.get("Size") or 0), mtime_ms(obj)))
            if not page.get("IsTruncated"):
                break
            token = page.get("NextContinuationToken")
            if not token:  # a truncated page with no way on: never answer with part of the log
                return None
            kwargs["ContinuationToken"] = token
    except Exception as exc:  # the whole listing below reports (redacted) what is wrong
        log.debug("start-after listing of %s failed (%s); listing it whole", storage.root, type(exc).__name__)
        return None
    entries.sort(key=lambda e: e.name)
    return entries
