"""The names of every option some part of the product reads, and what to do with a name
none reads (no Spark needed).

Guarantees:

* :data:`READ_NAMES` / :data:`WRITE_NAMES` map each lowercased option name read by a scan
  (batch, change feed, stream) / by a write (batch, stream sink) to its canonical spelling;
  ``storage.*`` keys (both) and ``delta.*`` table properties (writes) are always accepted;
* :func:`check_keywords` raises :class:`~delta_pyds.errors.UnknownArgumentError` for a
  keyword argument of ``read_delta`` / ``write_delta`` that is none of them, naming it and
  the closest valid name (``difflib``): a misspelled ``verisonAsOf`` never silently reads
  the latest version;
* :func:`warn_unknown_options` warns (``UnknownOptionWarning``, and a log record) once per
  process and key for a ``.option(...)`` key of ``format("pydelta")`` that nothing reads;
  Spark lowercases option keys, so the key is shown lowercased with the suggestion spelled
  canonically.
"""

from __future__ import annotations

import difflib
import logging
import threading
import warnings
from collections.abc import Iterable, Mapping

from delta_pyds.errors import UnknownArgumentError
from delta_pyds.read.options import READ_OPTIONS
from delta_pyds.read.options import STORAGE_PREFIX as READ_STORAGE_PREFIX
from delta_pyds.write.options import WRITE_OPTIONS

log = logging.getLogger(__name__)

# lowercased -> canonical: the options tables plus the aliases read beside them
READ_NAMES: dict[str, str] = {k: v[0] for k, v in READ_OPTIONS.items()} | {
    "readchangedata": "readChangeData",  # delta-spark's legacy name of readChangeFeed
    "ignorefiledeletion": "ignoreFileDeletion",  # delta-spark's legacy name of ignoreChanges
}
WRITE_NAMES: dict[str, str] = {k: v[0] for k, v in WRITE_OPTIONS.items()} | {
    "checkpointlocation": "checkpointLocation",  # the streaming sink's appId comes from it
}
READ_PREFIXES = (READ_STORAGE_PREFIX,)
WRITE_PREFIXES = (READ_STORAGE_PREFIX, "delta.")


class UnknownOptionWarning(UserWarning):
    """A ``.option(...)`` key no part of pydelta reads (most likely a misspelling)."""


def is_known(key: str, names: Mapping[str, str], prefixes: Iterable[str]) -> bool:
    lowered = key.lower()
    return lowered in names or any(lowered.startswith(p) for p in prefixes)


def closest(key: str, names: Mapping[str, str]) -> str | None:
    """The canonical name closest to ``key`` (case-insensitive), or None if none is close."""
    match = difflib.get_close_matches(key.lower(), list(names), n=1, cutoff=0.6)
    return names[match[0]] if match else None


def _hint(key: str, names: Mapping[str, str], prefixes: Iterable[str]) -> str:
    near = closest(key, names)
    prefix_text = ", ".join(f"{p}*" for p in prefixes)
    accepted = ", ".join(sorted(set(names.values()), key=str.lower))
    return (f"did you mean {near!r}? " if near else "") + f"accepted: {accepted} and {prefix_text} keys"


def check_keywords(keys: Iterable[str], names: Mapping[str, str], prefixes: Iterable[str], *, function: str) -> None:
    """Raises :class:`UnknownArgumentError` for the first key that no option name matches."""
    prefixes = tuple(prefixes)
    for key in keys:
        if not is_known(key, names, prefixes):
            raise UnknownArgumentError(
                f"{function}() got an unknown keyword argument {key!r}; {_hint(key, names, prefixes)}"
            )


_warned: set[tuple[str, str]] = set()
_lock = threading.Lock()


def warn_unknown_options(
    options: Mapping[str, str], names: Mapping[str, str], prefixes: Iterable[str], *, what: str
) -> list[str]:
    """Warns once per process and key for each option key that nothing reads; returns the
    keys warned about by this call."""
    prefixes = tuple(prefixes)
    fresh = []
    for key in options:
        if is_known(key, names, prefixes):
            continue
        with _lock:
            if (what, key.lower()) in _warned:
                continue
            _warned.add((what, key.lower()))
        near = closest(key, names)
        message = f"pydelta {what}: option {key!r} is not read by pydelta and has no effect" + (
            f"; did you mean {near!r}?" if near else ""
        )
        log.warning(message)
        warnings.warn(message, UnknownOptionWarning, stacklevel=3)
        fresh.append(key)
    return fresh
