"""Data file paths of the Delta log, in one canonical form.

The log names a file (``add``/``remove``/``cdc`` paths, ``p`` deletion vectors, sidecars)
with a URI reference: relative to the table root (the usual case) or absolute
(``file:/t/x``, ``file:///t/x``, ``s3://bucket/t/x``, ``/t/x``), percent-encoded. A writer
that escapes a partition value in the directory name (``k=10%3A00``) therefore stores
``k=10%253A00/...``: the URI of a path that itself contains ``%``.

Guarantees — every module that keys, compares or opens data files goes through here:

* :func:`canonical` decodes a log path **exactly once**, turns ``file:`` URIs into
  absolute local paths and makes absolute paths under the table root relative to it, so
  ``a b.parquet``, ``a%20b.parquet``, ``/t/a b.parquet``, ``file:/t/a%20b.parquet`` and
  ``file:///t/a%20b.parquet`` (root ``/t``) are one file, spelled ``a b.parquet``.
  Its result is what the snapshot's file table holds in ``path``, what replay reconciles
  on, and what :meth:`Storage.resolve <delta_pyds.storage.store.Storage.resolve>` opens.
* :func:`canonical_array` does the same for an Arrow array, touching only the (rare)
  paths that contain ``%`` or ``:`` or start with ``/``.
* nothing here raises on odd paths (a ``remove`` never opens its path): a ``file:`` URI
  that is not absolute or names a host stays a ``file:`` URL, which :func:`unsafe_reason`
  reports, as it does relative paths with a ``..`` segment (they would leave the root);
  the snapshot refuses such active files and the file reader refuses to open them.
* :func:`relative_to` maps a name from a listing of the table root to its root-relative
  form, or None when it is not below the root (listings are never re-resolved).
"""

from __future__ import annotations

import re
from urllib.parse import unquote, urlsplit

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

# an RFC 3986 scheme of two or more characters (one letter is a Windows drive)
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]+):")
# the paths canonical() may change; every other path is canonical as it is
_SPECIAL = r"[%:]|^/"


def scheme_of(path: str) -> str | None:
    """The URI scheme of ``path`` (lowercased), or None for a plain path."""
    m = _SCHEME.match(path)
    return m.group(1).lower() if m else None


def decode(raw: str) -> str:
    """A log path, URI-decoded once: a relative path, an absolute local path (``file:``
    URIs become one) or a URL whose path part is decoded."""
    if "%" not in raw and ":" not in raw:
        return raw
    scheme = scheme_of(raw)
    if scheme is None:
        return unquote(raw)
    parts = urlsplit(raw)
    path = unquote(parts.path)
    if scheme == "file" and parts.netloc in ("", "localhost") and path.startswith("/"):
        return path
    return f"{scheme}://{parts.netloc}{path}"


def is_absolute(path: str) -> bool:
    """Whether a decoded path is absolute (a local absolute path or a URL)."""
    return path.startswith("/") or scheme_of(path) is not None


def relative_to(path: str, root: str) -> str | None:
    """``path`` (decoded, absolute or relative) relative to ``root``; None when an
    absolute path lies outside the root."""
    if not is_absolute(path):
        return path
    if not root:
        return None
    prefix = root.rstrip("/") + "/"
    if path.startswith(prefix) and len(path) > len(prefix):
        return path[len(prefix) :]
    return None


def canonical(raw: str, root: str) -> str:
    """The canonical spelling of a log path for the table at ``root`` (see the module)."""
    path = decode(raw)
    rel = relative_to(path, root)
    return path if rel is None else rel


def unsafe_reason(path: str) -> str | None:
    """Why a canonical path must not be opened, or None: a relative path with a ``..``
    segment (percent-encoded ones included, as they are decoded by now), a ``file:`` URI
    that is not an absolute local path, an empty path."""
    if not path:
        return "is empty"
    if scheme_of(path) == "file":
        return "is a file: URI that is not an absolute path on this machine"
    if not is_absolute(path) and ".." in path.replace("\\", "/").split("/"):
        return "has a '..' segment: relative paths in the log must stay inside the table root"
    return None


def canonical_array(raw: pa.Array | pa.ChunkedArray, root: str) -> pa.Array:
    """:func:`canonical` of every path of ``raw`` (nulls stay null)."""
    if isinstance(raw, pa.ChunkedArray):
        raw = raw.combine_chunks()
    if len(raw) == 0:
        return raw
    touch = pc.fill_null(pc.match_substring_regex(raw, _SPECIAL), False)
    if not pc.any(touch).as_py():
        return raw
    idx = np.flatnonzero(touch.to_numpy(zero_copy_only=False))
    values = raw.to_pylist()
    for i in idx:
        values[i] = canonical(values[i], root)
    return pa.array(values, pa.string())
