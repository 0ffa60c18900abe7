"""Deleting the files of a write that did not commit: data files and deletion vector
files, never one that a commit may name.

Guarantees: :func:`delete_files` and :func:`delete_deletion_vector_files` delete only
files below the table root, and only after reading the newest
:data:`RECENT_COMMITS_CHECKED` commits and finding none that names them (a commit PUT of
unknown outcome may have landed: its files are kept, with a warning); when the log
cannot be read nothing is deleted (VACUUM removes what no commit names). Deletion is best
effort: a failure is logged, never raised.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable

from delta_pyds.log.files import LOG_DIR
from delta_pyds.protocol.deletion_vectors import DeletionVectorDescriptor
from delta_pyds.protocol.paths import canonical, is_absolute, unsafe_reason
from delta_pyds.storage.store import Storage

log = logging.getLogger(__name__)

# how many of the newest commits delete_files reads to prove files are not committed
RECENT_COMMITS_CHECKED = 10


def _recent_commits(storage: Storage) -> list[bytes] | None:
    """The newest commits' bytes, or None when the log cannot be read."""
    try:
        names = [e for e in storage.list_dir(storage.join(LOG_DIR)) if e.name.endswith(".json")]
        recent = names[-RECENT_COMMITS_CHECKED:]
        return storage.read_many([e.path for e in recent], sizes=[e.size for e in recent])
    except Exception:
        return None


def _in_recent_commits(storage: Storage, adds: list[dict]) -> set[str] | None:
    """The raw paths of ``adds`` that one of the newest commits names (a commit whose
    outcome was unknown may have landed), or None when the log cannot be read."""
    datas = _recent_commits(storage)
    if datas is None:
        return None
    raw = {str(a.get("path") or "") for a in adds}
    return {p for p in raw if p and any(json.dumps(p)[1:-1].encode() in d for d in datas)}


def delete_deletion_vector_files(storage: Storage, descriptors: Iterable[dict]) -> None:
    """Deletes the files of deletion vectors written for a commit that failed (``u``
    descriptors: a file below the table root), unless one of the newest commits names
    one (kept), or the log cannot be read (all kept, for VACUUM)."""
    files = [d for d in descriptors if d.get("storageType") == "u"]
    if not files:
        return
    datas = _recent_commits(storage)
    for d in files:
        name = str(d.get("pathOrInlineDv") or "")
        if datas is None or any(name.encode() in data for data in datas):
            log.warning("pydelta: keeping the deletion vector file of %s: a commit may name it", name)
            continue
        try:
            path = DeletionVectorDescriptor.from_dict(d).absolute_path(storage)
            if path is not None:
                storage.delete(path)
        except Exception:  # pragma: no cover - best effort
            log.warning("pydelta: could not delete the uncommitted deletion vector file of %s", name)


def delete_files(storage: Storage, adds: Iterable[dict]) -> None:
    """Deletes the data files of add actions that were never committed: only files
    below the table root (an absolute path or a '..' segment is never followed), and
    only when the newest commits can be read and name none of them (a commit PUT whose
    outcome was unknown may have landed: its files are kept; files of a write that
    did not commit and could not be checked are left to VACUUM)."""
    adds = list(adds)
    if not adds:
        return
    committed = _in_recent_commits(storage, adds)
    if committed is None:
        log.warning(
            "pydelta: keeping %d uncommitted data file(s) of %s: the log cannot be read to check that "
            "no commit names them (VACUUM removes them if none does)",
            len(adds),
            storage.root,
        )
        return
    for a in adds:
        if str(a.get("path") or "") in committed:
            log.warning("pydelta: keeping %s: a commit names it (a commit of unknown outcome landed)", a.get("path"))
            continue
        path = canonical(a.get("path") or "", storage.root)
        if is_absolute(path) or unsafe_reason(path) is not None:
            log.warning("pydelta: not deleting %r: it is not a file below the table root", a.get("path"))
            continue
        try:
            storage.delete(storage.resolve(path))
        except Exception:  # pragma: no cover - best effort
            log.warning("pydelta: could not delete uncommitted file %s", a.get("path"))
