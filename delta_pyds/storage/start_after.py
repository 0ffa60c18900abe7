"""Listing a directory from a name on, on stores that can be asked for only that part.

Guarantees: :func:`s3_objects_after` returns exactly the objects directly in an S3
directory whose names sort after ``after`` (strictly), with their listing entries, through
``list_objects_v2`` with ``StartAfter`` (every page followed), so a 10,000-commit
``_delta_log`` read from a recent checkpoint costs one page instead of eleven. It returns
None, and the caller lists the directory whole, when the filesystem cannot be asked so (a
version-aware or non-s3fs filesystem), when a truncated page gives no way on (never part of
a directory), or when the listing fails for any reason other than an interrupt: the whole
listing's errors are the storage layer's (redacted, retried), so this fast path never
decides the answer.
"""

from __future__ import annotations

import logging
import posixpath
from typing import Any

log = logging.getLogger(__name__)

S3_PROTOCOLS = ("s3", "s3a")


def s3_objects_after(fs: Any, directory: str, after: str) -> list[tuple[str, str, dict[str, Any]]] | None:
    """``(name, full path, S3 object)`` of ``directory``'s objects named after ``after``,
    in the store's order, or None (see the module docstring)."""
    if getattr(fs, "version_aware", False) or not callable(getattr(fs, "call_s3", None)):
        return None
    try:
        bucket, key, _ = fs.split_path(directory)
        prefix = key.rstrip("/") + "/"
        kwargs: dict[str, Any] = {"Bucket": bucket, "Prefix": prefix, "Delimiter": "/", "StartAfter": prefix + after}
        objects = []
        while True:
            page = fs.call_s3("list_objects_v2", **kwargs)
            for obj in page.get("Contents") or ():
                name = obj["Key"][len(prefix) :]
                if name and "/" not in name:
                    objects.append((name, posixpath.join(bucket, obj["Key"]), obj))
            if not page.get("IsTruncated"):
                return objects
            token = page.get("NextContinuationToken")
            if not token:  # a truncated page with no way on: never answer with part of the directory
                return None
            kwargs["ContinuationToken"] = token
    except Exception as exc:  # the whole listing reports (redacted) what is wrong
        log.debug("start-after listing of %s failed (%s); listing it whole", directory, type(exc).__name__)
        return None
