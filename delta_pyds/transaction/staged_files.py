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
* :func:`delete_on_failure` is that for add actions: their files are deleted (with
  :func:`delete_files`) when the body raises.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from delta_pyds.log.files import LOG_DIR
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


def delete_on_failure(storage: Storage, adds: Sequence[dict[str, Any]]) -> Any:
    """A context manager deleting the files of ``adds`` (as the list is when the body
    fails) if the body raises: ``with delete_on_failure(storage, adds): commit(adds)``."""
    return cleanup_on_failure(lambda: delete_files(storage, adds), what=f"the data files written to {storage.root}")


def _in_recent_commits(storage: Storage, adds: list[dict[str, Any]]) -> set[str] | None:
    """The raw paths of ``adds`` that one of the newest commits names in an ``add`` or
    ``cdc`` action (a commit whose outcome was unknown may have landed), or None when
    the log cannot be read or parsed (then nothing may be deleted). The commits are
    parsed, not searched as text: a path is spelled differently in JSON depending on the
    writer (UTF-8 or ``\\u`` escapes, escaped ``/``)."""
    try:
        names = [e for e in storage.list_dir(storage.join(LOG_DIR)) if e.name.endswith(".json")]
        recent = names[-RECENT_COMMITS_CHECKED:]
        datas = storage.read_many([e.path for e in recent], sizes=[e.size for e in recent])
        named: set[str] = set()
        for data in datas:
            for line in data.decode("utf-8").split("\n"):  # not splitlines: U+2028 is no line break
                if not line.strip():
                    continue
                action = json.loads(line)
                for kind in ("add", "cdc"):
                    entry = action.get(kind) if isinstance(action, dict) else None
                    if isinstance(entry, dict) and isinstance(entry.get("path"), str):
                        named.add(entry["path"])
    except Exception:
        return None
    return {p for p in (str(a.get("path") or "") for a in adds) if p and p in named}


def delete_files(storage: Storage, adds: Iterable[dict[str, Any]]) -> None:
    """Deletes the data files of add actions that were never committed (module docstring)."""
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
