"""Data file paths of the Delta log, in one canonical form.

The log names a file (``add``/``remove``/``cdc`` paths, ``p`` deletion vectors, sidecars)
with a URI reference: relative to the table root (the usual case) or absolute
(``file:/t/x``, ``file:///t/x``, ``s3://bucket/t/x``, ``/t/x``), percent-encoded. A writer
that escapes a partition value in the directory name (``k=10%3A00``) therefore stores
``k=10%253A00/...``: the URI of a path that itself contains ``%``.

Guarantees — every module that keys, compares or opens data files goes through here
(log replay and checkpoints, both read paths, VACUUM's live set, conflict checks, CDF, the
removes of OPTIMIZE/DML/restore), so they all agree on what a file is:

* :func:`canonical` decodes a log path **exactly once**, turns ``file:`` URIs into
  absolute local paths, makes absolute paths under the table root relative to it and
  removes empty and ``.`` segments, so ``a b.parquet``, ``./a b.parquet``,
  ``a%20b.parquet``, ``/t/a b.parquet``, ``file:/t/a%20b.parquet`` and
  ``file:///t/a%20b.parquet`` (root ``/t``) are one file, spelled ``a b.parquet``, as in
  delta-spark (``canonicalizePath``: a Hadoop ``Path`` of the URI, made relative to the
  root). Absolute paths outside the root (shallow clones) stay absolute.
  Its result is what the snapshot's file table holds in ``path``, what replay reconciles
  on, and what :meth:`Storage.resolve <delta_pyds.storage.store.Storage.resolve>` opens.
* the scheme is parsed on the **encoded** form and only a hierarchical URI
  (``scheme:/...``) has one: ``data%3A1.parquet``, ``k=1/T10%3A00%3A00.parquet`` and a
  writer's unencoded ``data:1.parquet`` or ``s3:foo.parquet`` are relative file names
  (decoded ``data:1.parquet`` ...), as deltalake reads them. A canonical path is absolute
  iff it starts with ``/`` or ``scheme://`` (:func:`is_absolute`); a relative canonical
  path never holds ``//``, so the two cannot be confused.
* :func:`canonical_array` does the same for an Arrow array, touching only the (rare)
  paths that contain ``%``, ``:``, ``//`` or a ``.`` segment, or start with ``/``.
* nothing here raises on odd paths (a ``remove`` never opens its path): a ``file:`` URI
  that is not absolute (``file:../x``) or names a host stays a ``file://`` URL, which
  :func:`unsafe_reason` reports, as it does relative paths with a ``..`` segment (they would leave the root);
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

# an RFC 3986 scheme of two or more characters (one letter is a Windows drive) followed by
# ':/': only a hierarchical URI names a location (``file:/t/x``, ``s3://b/x``); ``data:1.parquet``
# or ``s3:foo.parquet`` (no '/' after the ':') is a relative file name a writer did not encode.
# A ``file:`` URI that is not absolute (``file:../x``) is still one: kept a ``file://`` URL, refused
_SCHEME = re.compile(r"^(?:([A-Za-z][A-Za-z0-9+.\-]+):/|([Ff][Ii][Ll][Ee]):)")
# a canonical absolute URL: decode() always spells one scheme://authority/path
_URL = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]+)://")
# the Arrow regex matching the canonical paths that are absolute (is_absolute, vectorised)
ABSOLUTE_PATTERN = r"^/|^[A-Za-z][A-Za-z0-9+.\-]+://"
# the paths canonical() may change; every other path is canonical as it is
_SPECIAL = r"[%:]|^/|//|(^|/)\.(/|$)"


def scheme_of(path: str) -> str | None:
    """The URI scheme (lowercased) of a raw log path or table root that is a hierarchical
    URI (``scheme:/...``) or any ``file:`` URI, or None for a plain path. Parsed on the encoded form: a
    ``%3A`` never makes a scheme."""
    m = _SCHEME.match(path)
    return (m.group(1) or m.group(2)).lower() if m else None


def _normalize_relative(path: str) -> str:
    """A decoded relative path with empty and ``.`` segments removed (``./x``, ``a//x``,
    ``a/./x`` -> ``x``, ``a/x``, ``a/x``), as Hadoop's ``Path``/``URI.normalize`` does. After
    this no relative canonical path holds ``//``, so none can be mistaken for a URL."""
    if "/" not in path:
        return path
    lead = "/" if path.startswith("/") else ""
    segs = [s for s in path.split("/") if s not in ("", ".")]
    return lead + "/".join(segs)


def decode(raw: str) -> str:
    """A log path, URI-decoded once: a relative path (empty and ``.`` segments removed), an
    absolute local path (``file:`` URIs become one) or a URL ``scheme://authority/path`` whose
    path part is decoded. The scheme is parsed on the encoded form, then the path decoded."""
    scheme = scheme_of(raw)
    if scheme is None:
        path = unquote(raw) if "%" in raw else raw
        return _normalize_relative(path) if "/" in path else path
    parts = urlsplit(raw)
    path = unquote(parts.path)
    if scheme == "file" and parts.netloc in ("", "localhost") and path.startswith("/"):
        return _normalize_relative(path)
    return f"{scheme}://{parts.netloc}{path}"


def is_absolute(path: str) -> bool:
    """Whether a canonical (decoded) path is absolute: a local absolute path (``/t/x``) or a
    URL (``scheme://...``). ``data:1.parquet`` and ``k=1/T10:00:00.parquet`` are relative."""
    return path.startswith("/") or _URL.match(path) is not None


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
    m = _URL.match(path)
    if m is not None and m.group(1).lower() == "file":
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
