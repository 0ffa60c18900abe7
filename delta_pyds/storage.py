"""Storage access for one table root over fsspec.

Guarantees:

* ``list_dir`` returns entries sorted by name, with sizes and modification times in
  milliseconds, and an empty list for a missing directory;
* ``put_if_absent`` is an atomic create-if-absent on every backend it accepts (local
  disk: write a temporary file then hard-link it into place; S3, Azure Blob, GCS:
  ``pipe_file(mode="create")``, i.e. conditional PUT). A lost race raises
  ``FileExistsError`` and never overwrites. Backends with no atomic create are refused
  for writes unless the caller opts in with ``allow_unsafe_commits``;
* the object pickles small (root URL and options only) and re-creates its filesystem
  lazily in each process, so it can travel to Spark executors.
"""

from __future__ import annotations

import errno
import os
import posixpath
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Iterable, Mapping
from urllib.parse import unquote, urlsplit

import fsspec

from .errors import CommitFailedError

_ATOMIC_CREATE_PROTOCOLS = {"s3", "s3a", "gs", "gcs", "az", "abfs", "abfss", "adl", "memory"}


@dataclass(frozen=True)
class FileEntry:
    name: str  # base name
    path: str  # full filesystem path (no protocol for local paths)
    size: int
    modification_time: int  # milliseconds since the epoch


def _protocol_of(url: str) -> str:
    scheme = urlsplit(url).scheme
    if len(scheme) <= 1:  # no scheme, or a Windows drive letter
        return "file"
    return scheme.lower()


def _mtime_ms(info: Mapping) -> int:
    for key in ("mtime", "LastModified", "last_modified", "updated", "mtime_ns", "modified", "created"):
        value = info.get(key)
        if value is None:
            continue
        if key == "mtime_ns":
            return int(value) // 1_000_000
        if isinstance(value, datetime):
            return int(value.timestamp() * 1000)
        if isinstance(value, (int, float)):
            return int(float(value) * 1000)
        if isinstance(value, str):
            return int(datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp() * 1000)
    return 0


class Storage:
    """The filesystem under one table root (a local path or any fsspec URL)."""

    def __init__(self, root: str, options: Mapping[str, str] | None = None, *,
                 allow_unsafe_commits: bool = False):
        if not root:
            raise ValueError("a table path is required")
        self.protocol = _protocol_of(root)
        if self.protocol == "file":
            local = root[len("file://"):] if root.startswith("file://") else root
            root = os.path.abspath(os.path.expanduser(unquote(local) if root.startswith("file:") else local))
        self.root = root.rstrip("/") if len(root) > 1 else root
        self.options = dict(options or {})
        self.allow_unsafe_commits = allow_unsafe_commits
        self._fs = None

    # -- pickling: never ship the live filesystem object ------------------------------
    def __getstate__(self):
        state = self.__dict__.copy()
        state["_fs"] = None
        return state

    def __repr__(self) -> str:  # never print options: they may hold credentials
        return f"Storage({self.root!r})"

    @property
    def fs(self):
        if self._fs is None:
            self._fs = fsspec.filesystem(self.protocol, **self.options)
        return self._fs

    @property
    def root_url(self) -> str:
        """The root as a URL (``file:///...`` for local paths)."""
        return "file://" + self.root if self.protocol == "file" else self.root

    # -- paths ----------------------------------------------------------------------
    def join(self, *parts: str) -> str:
        return posixpath.join(self.root, *parts)

    def resolve(self, path_in_log: str) -> str:
        """A path as stored in the log (already URI-decoded) to a filesystem path.

        Relative paths are resolved against the table root; absolute URIs are kept and
        must use this table's filesystem protocol.
        """
        scheme = urlsplit(path_in_log).scheme
        if len(scheme) > 1:
            if scheme.lower() == "file" or self.protocol == "file":
                if scheme.lower() != "file":
                    return path_in_log
                return unquote(urlsplit(path_in_log).path)
            return path_in_log
        if path_in_log.startswith("/"):
            return path_in_log if self.protocol == "file" else f"{self.protocol}://{path_in_log.lstrip('/')}"
        return posixpath.join(self.root, path_in_log)

    # -- reads ----------------------------------------------------------------------
    def list_dir(self, path: str) -> list[FileEntry]:
        try:
            infos = self.fs.ls(path, detail=True)
        except FileNotFoundError:
            return []
        entries = []
        for info in infos:
            if info.get("type") == "directory":
                continue
            full = info["name"]
            entries.append(FileEntry(posixpath.basename(full.rstrip("/")), full,
                                     int(info.get("size") or 0), _mtime_ms(info)))
        entries.sort(key=lambda e: e.name)
        return entries

    def exists(self, path: str) -> bool:
        return self.fs.exists(path)

    def read_bytes(self, path: str) -> bytes:
        return self.fs.cat_file(path)

    def read_many(self, paths: list[str]) -> list[bytes]:
        """Reads several whole files (concurrently on async object stores)."""
        if not paths:
            return []
        if len(paths) == 1 or self.protocol == "file":
            return [self.fs.cat_file(p) for p in paths]
        got = self.fs.cat(list(paths), on_error="raise")
        return [got[p] if p in got else got[self.fs._strip_protocol(p)] for p in paths]

    def read_range(self, path: str, start: int, length: int) -> bytes:
        return self.fs.cat_file(path, start=start, end=start + length)

    def open_input(self, path: str):
        return self.fs.open(path, "rb")

    def info(self, path: str) -> FileEntry:
        info = self.fs.info(path)
        return FileEntry(posixpath.basename(path), path, int(info.get("size") or 0), _mtime_ms(info))

    # -- writes ---------------------------------------------------------------------
    def write_bytes(self, path: str, data: bytes) -> None:
        """Writes (or overwrites) a file that is not a log entry (data, checkpoints)."""
        if self.protocol == "file":
            os.makedirs(os.path.dirname(path), exist_ok=True)
            tmp = f"{path}.{uuid.uuid4().hex}.tmp"
            with open(tmp, "wb") as f:
                f.write(data)
            os.replace(tmp, path)
        else:
            self.fs.pipe_file(path, data)

    def makedirs(self, path: str) -> None:
        if self.protocol == "file":
            os.makedirs(path, exist_ok=True)

    def put_if_absent(self, path: str, data: bytes) -> None:
        """Atomically creates ``path`` with ``data``; raises FileExistsError if it exists."""
        if self.protocol == "file":
            self._put_if_absent_local(path, data)
            return
        if self.protocol in _ATOMIC_CREATE_PROTOCOLS:
            try:
                self.fs.pipe_file(path, data, mode="create")
            except FileExistsError:
                raise
            except OSError as exc:
                if _is_precondition_failure(exc):
                    raise FileExistsError(errno.EEXIST, "commit already exists", path) from exc
                raise
            return
        if not self.allow_unsafe_commits:
            raise CommitFailedError(
                f"the {self.protocol!r} filesystem has no atomic create-if-absent, so concurrent "
                "writers could overwrite each other's commits; set the option "
                "allowUnsafeCommits=true only if a single writer uses this table")
        if self.fs.exists(path):
            raise FileExistsError(errno.EEXIST, "commit already exists", path)
        self.fs.pipe_file(path, data)

    @staticmethod
    def _put_if_absent_local(path: str, data: bytes) -> None:
        directory = os.path.dirname(path)
        os.makedirs(directory, exist_ok=True)
        tmp = os.path.join(directory, f".{os.path.basename(path)}.{uuid.uuid4().hex}.tmp")
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        try:
            os.link(tmp, path)  # atomic; fails with FileExistsError if the commit exists
        except OSError as exc:
            if isinstance(exc, FileExistsError):
                raise
            if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EXDEV, errno.EOPNOTSUPP):
                raise
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)  # no hard links here
            with os.fdopen(fd, "wb") as f:
                f.write(data)
        finally:
            try:
                os.unlink(tmp)
            except FileNotFoundError:
                pass

    def delete(self, path: str) -> None:
        try:
            self.fs.rm_file(path)
        except FileNotFoundError:
            pass

    def delete_many(self, paths: Iterable[str]) -> None:
        for p in paths:
            self.delete(p)


def _is_precondition_failure(exc: BaseException) -> bool:
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        text = str(exc)
        if "PreconditionFailed" in text or "412" in text or "ConditionNotMet" in text:
            return True
        exc = exc.__cause__ or exc.__context__
    return False
