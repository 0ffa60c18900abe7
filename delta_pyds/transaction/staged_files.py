"""Data files written for a commit that has not happened yet, and their cleanup.

Guarantees:

* :func:`delete_files` deletes the data files of add actions that were never committed:
  only files below the table root (an absolute path or a ``..`` segment is never
  followed), and only when the newest commits can be read and name none of them (a
  commit PUT whose outcome was unknown may have landed: its files are kept; files of a
  write that did not commit and could not be checked are left to VACUUM). Best effort:
  it never raises for a file it could not delete.
* :func:`cleanup_on_failure` is the one way a writer cleans up after itself: when the
  body raises anything (an error, ``KeyboardInterrupt``, ``SystemExit``), the cleanup
  runs and the exception propagates unchanged (a failing cleanup is logged, never raised
  in its place); when the body returns, nothing is cleaned up. The cleanup reads its
  inputs when it runs, so a body may append to the list of written files as it writes.
* :func:`delete_deletion_vector_files` does for the deletion vector files of a failed
  commit what :func:`delete_files` does for data files (kept when a recent commit's add
  names the vector).
* :func:`delete_on_failure` is that for add actions: their files are deleted (with
  :func:`delete_files`) when the body raises.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from delta_pyds.log.files import LOG_DIR
from delta_pyds.protocol.deletion_vectors import DeletionVectorDescriptor
from delta_pyds.protocol.paths import canonical, is_absolute, unsafe_reason
from delta_pyds.storage.store import Storage

log = logging.getLogger(__name__)

# how many of the newest commits delete_files reads to prove files are not committed
RECENT_COMMITS_CHECKED = 10


@contextmanager
def cleanup_on_failure(cleanup: Callable[[], Any], *, what: str = "written files") -> Iterator[None]:
    """Runs ``cleanup`` if the body raises (anything), then re-raises the body's exception."""
    try:
        yield
    except BaseException:
        try:
            cleanup()
        except Exception as exc:  # never hide the body's exception behind the cleanup's
            log.warning("pydelta: could not clean up %s after a failure (%s: %s)", what, type(exc).__name__, exc)
        raise


def delete_on_failure(storage: Storage, adds: Sequence[Mapping[str, Any]]) -> Any:
    """A context manager deleting the files of ``adds`` (as the list is when the body
    fails) if the body raises: ``with delete_on_failure(storage, adds): commit(adds)``."""
    return cleanup_on_failure(lambda: delete_files(storage, adds), what=f"the data files written to {storage.root}")


def _named_by_recent_commits(storage: Storage) -> tuple[set[str], set[str]] | None:
    """The paths that the newest :data:`RECENT_COMMITS_CHECKED` commits name in ``add`` or
    ``cdc`` actions, and the ``pathOrInlineDv`` of the deletion vectors their adds name
    (a commit whose outcome was unknown may have landed); None when the log cannot be read
    or parsed (then nothing may be deleted). The commits are parsed, not searched as text:
    a path is spelled differently in JSON depending on the writer (UTF-8 or ``\\u``
    escapes, escaped ``/``)."""
    try:
        names = [e for e in storage.list_dir(storage.join(LOG_DIR)) if e.name.endswith(".json")]
        recent = names[-RECENT_COMMITS_CHECKED:]
        datas = storage.read_many([e.path for e in recent], sizes=[e.size for e in recent])
        paths: set[str] = set()
        vectors: set[str] = set()
        for data in datas:
            for line in data.decode("utf-8").split("\n"):  # not splitlines: U+2028 is no line break
                if not line.strip():
                    continue
                action = json.loads(line)
                for kind in ("add", "cdc"):
                    entry = action.get(kind) if isinstance(action, dict) else None
                    if isinstance(entry, dict) and isinstance(entry.get("path"), str):
                        paths.add(entry["path"])
                        dv = entry.get("deletionVector")
                        if isinstance(dv, dict) and isinstance(dv.get("pathOrInlineDv"), str):
                            vectors.add(dv["pathOrInlineDv"])
    except Exception:
        return None
    return paths, vectors


def delete_deletion_vector_files(storage: Storage, descriptors: Iterable[Mapping[str, Any]]) -> None:
    """Deletes the files of deletion vectors written for a commit that failed (``u``
    descriptors: a file below the table root), unless one of the newest commits names
    one (kept: a commit of unknown outcome landed), or the log cannot be read (all kept,
    for VACUUM). Best effort: never raises."""
    files = [d for d in descriptors if d.get("storageType") == "u"]
    if not files:
        return
    named = _named_by_recent_commits(storage)
    for d in files:
        name = str(d.get("pathOrInlineDv") or "")
        if named is None or name in named[1]:
            log.warning("pydelta: keeping the deletion vector file of %s: a commit may name it", name)
            continue
        try:
            path = DeletionVectorDescriptor.from_dict(d).absolute_path(storage)
            if path is not None:
                storage.delete(path)
        except Exception:  # pragma: no cover - best effort
            log.warning("pydelta: could not delete the uncommitted deletion vector file of %s", name)


def delete_files(storage: Storage, adds: Iterable[Mapping[str, Any]]) -> None:
    """Deletes the data files of add actions that were never committed (module docstring)."""
    adds = list(adds)
    if not adds:
        return
    named = _named_by_recent_commits(storage)
    if named is None:
        log.warning(
            "pydelta: keeping %d uncommitted data file(s) of %s: the log cannot be read to check that "
            "no commit names them (VACUUM removes them if none does)",
            len(adds),
            storage.root,
        )
        return
    for a in adds:
        if str(a.get("path") or "") in named[0]:
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
