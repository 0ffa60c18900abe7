"""Storage access for one table root over fsspec.

Guarantees:

* ``list_dir`` returns entries sorted by name, with sizes and modification times in
  milliseconds, and an empty list for a missing directory. It never answers from a
  listing cache, so new commits by other processes are seen; ``list_dir_after`` returns
  the same entries filtered to names after a given one, asking S3 for only those
  (:mod:`delta_pyds.storage.start_after`);
* ``put_if_absent`` is an atomic create-if-absent on every backend it accepts (local
  disk, S3, Azure Blob, GCS, memory), never exists-then-write: how each backend does it,
  and what counts as a lost race, is :mod:`delta_pyds.storage.put_if_absent`. A lost
  race raises ``FileExistsError`` and never overwrites. Other backends (HDFS, SFTP,
  HTTP, ADLS Gen1, ...) are refused for commits with :class:`CommitFailedError` unless
  the caller opts in with ``allow_unsafe_commits`` (or the storage option
  ``allowUnsafeCommits=true``), which is only safe with a single writer. Other
  failures of a conditional create raise ``OSError``: the outcome is unknown;
* storage options may hold credentials: they never appear in ``repr``, in the errors
  this module raises, or in logs;
* reads are bounded: ``read_bytes`` / ``read_many`` (log files: commits, checkpoints in
  JSON, ``_last_checkpoint``) refuse files larger than ``max_log_file_bytes`` (storage
  option ``maxLogFileBytes``, default :data:`DEFAULT_MAX_LOG_FILE_BYTES`) with
  :class:`UnsafeFileError`; on local disk every read (also ``read_range`` and
  ``open_input``) refuses anything but a regular file (a FIFO would block forever, a
  symlink to ``/dev/zero`` never ends) and never reads past the bound even if the file
  grows. On object stores every object is a regular file; their size comes from the
  listing (callers pass it as ``size``);
* backend failures other than a missing or existing file (object store client errors,
  colliding client arguments...) are raised as :class:`StorageError` naming the
  operation and path, with every credential (also ``user:password@`` in URLs) redacted;
* the object pickles small (root URL and options only) and re-creates its filesystem
  lazily in each process, so it can travel to Spark executors.

Storage options are keyword arguments of the fsspec filesystem (``key``, ``secret``,
``endpoint_url`` for s3fs; ``connection_string``, ``account_name``, ``account_key``,
``sas_token`` for adlfs; ``token``, ``project``, ``endpoint_url`` for gcsfs). Values
may be strings, as they arrive from Spark options: keys are matched to the
filesystem's parameters case-insensitively and ignoring underscores (Spark lowercases
option keys, so ``endpointUrl``, ``endpointurl`` and ``endpoint_url`` all work), and
string values are converted to the parameter's type (``"true"`` to ``True`` for a bool
parameter, a JSON object for a ``*_kwargs`` or dict parameter, digits for an int).
"""

from __future__ import annotations

import errno
import logging
import os
import posixpath
import stat
import sys
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar, cast
from urllib.parse import unquote, urlsplit

import fsspec  # untyped (no stubs, no py.typed): Any, see [tool.mypy] in pyproject.toml

from delta_pyds.errors import (
    CommitFailedError,
    DeltaError,
    ExternalPathError,
    OptionValueError,
    ShortReadError,
    StorageError,
    StoreFaultError,
    UnsafeFileError,
)
from delta_pyds.protocol.paths import is_absolute, scheme_of
from delta_pyds.storage.checked_input import CheckedInput
from delta_pyds.storage.client_retries import client_options, configure_client
from delta_pyds.storage.local_files import list_local, open_local
from delta_pyds.storage.options import (  # noqa: F401
    filesystem_kwargs,
    is_secret_key,
    parse_bool,
    parse_positive_int,
    redact,
    squash_key,
)
from delta_pyds.storage.put_if_absent import (
    atomic_create_kind,
    check_conditional_put,
    conditional_create,
    put_if_absent_local,
    put_if_absent_memory,
    put_if_absent_object,
)
from delta_pyds.storage.retry import body_fault, fault_of, split_retry_options
from delta_pyds.storage.start_after import S3_PROTOCOLS, s3_objects_after

log = logging.getLogger(__name__)

_T = TypeVar("_T")

# storage options consumed here, never passed to fsspec (compared as squash_key gives them)
_UNSAFE_COMMITS_KEYS = {"allowunsafecommits"}
_EXTERNAL_PATHS_KEYS = {"allowexternalpaths"}
_MAX_LOG_FILE_KEYS = {"maxlogfilebytes"}

# the largest log file (commit, JSON checkpoint, compaction) read into memory; Parquet
# checkpoints and data files are streamed by pyarrow and not bounded by it
DEFAULT_MAX_LOG_FILE_BYTES = 1 << 30

# object stores: reads are checked against the object's size (bodies cut short)
OBJECT_STORES = frozenset({"s3", "s3a", "gs", "gcs", "az", "abfs", "abfss"})


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


def mtime_ms(info: Mapping[str, Any]) -> int:
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

    def __init__(
        self,
        root: str,
        options: Mapping[str, Any] | None = None,
        *,
        allow_unsafe_commits: bool = False,
        allow_external_paths: bool = True,
        max_log_file_bytes: int | None = None,
    ):
        if not root:
            raise OptionValueError("a table path is required")
        self.protocol = _protocol_of(root)
        if self.protocol == "file":
            # file:///p and Hadoop's file:/p (what Spark passes for catalog locations)
            local = (
                root[len("file://") :]
                if root.startswith("file://")
                else root[len("file:") :]
                if root.startswith("file:")
                else root
            )
            root = os.path.abspath(os.path.expanduser(unquote(local) if root.startswith("file:") else local))
        self.root = root.rstrip("/") if len(root) > 1 else root
        opts = {}
        unsafe = allow_unsafe_commits
        external = allow_external_paths
        bound = max_log_file_bytes
        for k, v in dict(options or {}).items():
            key = squash_key(k)
            if key in _UNSAFE_COMMITS_KEYS:
                unsafe = unsafe or parse_bool(v, "allowUnsafeCommits")
            elif key in _EXTERNAL_PATHS_KEYS:
                external = external and parse_bool(v, "allowExternalPaths")
            elif key in _MAX_LOG_FILE_KEYS:
                if bound is None:
                    bound = parse_positive_int(v, "maxLogFileBytes")
            else:
                opts[k] = v
        self.max_log_file_bytes = (
            DEFAULT_MAX_LOG_FILE_BYTES if bound is None else parse_positive_int(bound, "max_log_file_bytes")
        )
        # max_retries, backoff_config.*, timeout, connect_timeout: retry.py's, and the client's
        self.retry, self._client_settings, opts = split_retry_options(opts)
        self.options = opts
        self.allow_unsafe_commits = bool(unsafe)
        # False: refuse every data, deletion vector or sidecar path the log names outside
        # the table root (absolute paths), for tables from untrusted writers
        self.allow_external_paths = bool(external)
        self._fs: Any = None  # the fsspec filesystem (untyped), created lazily

    # -- pickling: never ship the live filesystem object ------------------------------
    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_fs"] = None
        return state

    def __repr__(self) -> str:  # never print options: they may hold credentials
        return f"Storage({self.root!r})"

    @property
    def fs(self) -> Any:
        if self._fs is None:
            try:
                cls = fsspec.get_filesystem_class(self.protocol)
            except (ImportError, ValueError) as exc:
                raise ImportError(_missing_backend_message(self.protocol, exc)) from None
            kwargs: dict[str, Any] = {}
            if self.protocol != "file":
                try:
                    kwargs.update(cls._get_kwargs_from_urls(self.root) or {})
                except Exception:  # pragma: no cover - backend-specific URL parsing
                    pass
            kwargs.update(filesystem_kwargs(cls, self.options))
            kwargs = client_options(self.protocol, self._client_settings, kwargs, self.retry)
            failure = None
            try:
                self._fs = cls(**kwargs)
                configure_client(self.protocol, self._client_settings, self._fs, self.retry, self.store)
            except Exception as exc:
                # the backend's message may quote a credential: raise it redacted, and
                # outside this block so that it keeps no link to the original
                failure = redact(f"{type(exc).__name__}: {exc}", self.options)
            if failure is not None:
                raise OptionValueError(f"cannot open the {self.protocol!r} filesystem for {self.root}: {failure}")
        return self._fs

    @property
    def store(self) -> str:
        """The store, as errors and logs name it (backend and endpoint, no credential)."""
        if self.protocol == "file":
            return "local filesystem"
        endpoint = ""
        for k, v in self.options.items():
            if squash_key(k) == "endpointurl" and v:
                endpoint = str(v)
            elif squash_key(k) == "connectionstring" and v and "BlobEndpoint=" in str(v):
                endpoint = str(v).split("BlobEndpoint=", 1)[1].split(";", 1)[0]
            elif squash_key(k) == "accountname" and v and not endpoint:
                endpoint = f"https://{v}.blob.core.windows.net"
        where = f" at {redact(endpoint, self.options)}" if endpoint else ""
        return f"{self.protocol!r} store{where}"

    @property
    def root_url(self) -> str:
        """The root as a URL (``file:///...`` for local paths)."""
        return "file://" + self.root if self.protocol == "file" else self.root

    @property
    def atomic_create(self) -> str | None:
        """How commits are made atomic here (``local``, ``s3``, ``azure``, ``gcs``,
        ``memory``), or None when this filesystem has no atomic create-if-absent."""
        return atomic_create_kind(self.fs)

    # -- paths ----------------------------------------------------------------------
    def join(self, *parts: str) -> str:
        return posixpath.join(self.root, *parts)

    def resolve(self, path: str) -> str:
        """A canonical log path (see :mod:`delta_pyds.protocol.paths`: decoded, root-relative when
        under the root) to the filesystem path to open.

        Relative paths are joined to the table root; absolute ones (shallow clones, other
        writers' layouts) are kept, unless this storage refuses external paths
        (``allowExternalPaths=false``), which raises :class:`ExternalPathError`.
        A path is never decoded here: :func:`delta_pyds.protocol.paths.canonical` did that once.
        """
        if not is_absolute(path):
            return posixpath.join(self.root, path)
        if not self.allow_external_paths:
            raise ExternalPathError(
                f"the log of {self.root} names {path!r}, outside the table root; this table is "
                "opened with allowExternalPaths=false"
            )
        if scheme_of(path) is None:  # /x: on this table's filesystem
            if self.protocol == "file":
                return path
            netloc = urlsplit(self.root).netloc
            return f"{self.protocol}://{netloc}{path}"
        return path

    # -- reads ----------------------------------------------------------------------
    def list_dir(self, path: str) -> list[FileEntry]:
        if self.protocol == "file":
            local = self._list_local(path, None)
            if local is not None:
                return local
        fs = self.fs
        self._invalidate(path)  # listings must see other writers' new commits
        try:
            infos = self._call("list", path, fs.ls, path, detail=True)
        except FileNotFoundError:
            return []
        entries = []
        for info in infos:
            if info.get("type") == "directory":
                continue
            full = info["name"]
            entries.append(
                FileEntry(posixpath.basename(full.rstrip("/")), full, int(info.get("size") or 0), mtime_ms(info))
            )
        entries.sort(key=lambda e: e.name)
        return entries

    def list_dir_after(self, path: str, after: str) -> list[FileEntry]:
        """The entries of directory ``path`` named after ``after`` (strictly), sorted by name:
        :meth:`list_dir` filtered. On S3 the store is asked for only those
        (:mod:`delta_pyds.storage.start_after`: ``StartAfter``); elsewhere, or when that
        cannot answer, the directory is listed whole and filtered."""
        if self.protocol == "file":
            local = self._list_local(path, after)
            if local is not None:
                return local
        objects = s3_objects_after(self.fs, path, after) if self.protocol in S3_PROTOCOLS else None
        if objects is None:
            return [e for e in self.list_dir(path) if e.name > after]
        entries = [FileEntry(name, full, int(obj.get("Size") or 0), mtime_ms(obj)) for name, full, obj in objects]
        entries.sort(key=lambda e: e.name)
        return entries

    def _list_local(self, path: str, after: str | None) -> list[FileEntry] | None:
        return list_local(self.fs._strip_protocol(path), after, FileEntry)

    def exists(self, path: str) -> bool:
        self._invalidate(path)
        return cast(bool, self._call("check", path, self.fs.exists, path))

    def read_bytes(self, path: str, *, size: int | None = None) -> bytes:
        """A whole (log) file, at most ``max_log_file_bytes``; ``size`` is its size from
        a listing, when known (the bound is checked before any request)."""
        self._check_size(path, size)
        if self.protocol == "file":
            return self._read_local(path)
        return self._call("read", path, self._read_whole, path, size)

    def _read_whole(self, path: str, size: int | None) -> bytes:
        """One GET of a whole object; a body of another length than the listing's size
        (a response cut short behind a correct-looking Content-Length) is a fault."""
        try:
            data = cast(bytes, self.fs.cat_file(path))
        except FileNotFoundError:  # s3fs sizes a GET from its listing cache: drop a stale one, ask again
            self._invalidate(posixpath.dirname(path))
            self._invalidate(path)
            data = cast(bytes, self.fs.cat_file(path))
        if size is not None and len(data) != size:
            raise ShortReadError(errno.EIO, f"got {len(data)} of the {size} bytes the listing reported")
        return data

    def read_many(self, paths: list[str], *, sizes: list[int] | None = None) -> list[bytes]:
        """Reads several whole (log) files (concurrently on async object stores); same
        bound as :meth:`read_bytes`."""
        if not paths:
            return []
        unknown: list[int | None] = [None] * len(paths)
        for p, n in zip(paths, sizes or unknown):
            self._check_size(p, n)
        if len(paths) == 1 or self.protocol == "file":
            return [self.read_bytes(p, size=n) for p, n in zip(paths, sizes or unknown)]
        try:
            got = self._call("read", paths[0], self.fs.cat, list(paths), on_error="raise")
        except FileNotFoundError:  # perhaps a stale listing cache: one by one, each asked again
            return [self.read_bytes(p, size=n) for p, n in zip(paths, sizes or unknown)]
        out = [got[p] if p in got else got[self.fs._strip_protocol(p)] for p in paths]
        for i, n in enumerate(sizes or unknown):
            if n is not None and len(out[i]) != n:  # cut short: read it again on its own
                out[i] = self.read_bytes(paths[i], size=n)
        return out

    def read_range(self, path: str, start: int, length: int) -> bytes:
        """``length`` bytes from ``start`` (fewer only where the object ends: a shorter
        body is checked against the object's size and read again, never returned)."""
        self._check_regular(path)
        if self.protocol not in OBJECT_STORES:
            return cast(bytes, self._call("read", path, self.fs.cat_file, path, start=start, end=start + length))
        return self._call("read", path, self._read_range_checked, path, start, length, None)

    def _read_range_checked(self, path: str, start: int, length: int, size: int | None) -> bytes:
        data = cast(bytes, self.fs.cat_file(path, start=start, end=start + length))
        if len(data) < length and size is None:  # the end of the object, or cut short?
            self._invalidate(posixpath.dirname(path))
            size = int(self.fs.info(path).get("size") or 0)
        if size is not None and len(data) != max(0, min(length, size - start)):
            raise ShortReadError(errno.EIO, f"got {len(data)} of bytes {start}-{start + length} of {size}")
        return data

    def open_input(self, path: str) -> Any:
        """A seekable binary file; on object stores a :class:`CheckedInput`, whose reads
        are never short (Parquet footers, column chunks, checkpoint parts, sidecars). On
        local disk a native ``pyarrow.OSFile``: pyarrow reads it without calling back into
        Python (an fsspec file costs about 0.5 ms more per small Parquet file, under the GIL)."""
        self._check_regular(path)
        if self.protocol == "file":
            return open_local(self.fs._strip_protocol(path))
        if self.protocol not in OBJECT_STORES:
            return self._call("open", path, self.fs.open, path, "rb")
        raw = self._call("open", path, self.fs.open, path, "rb", cache_type="readahead")
        size = int(raw.size)
        return CheckedInput(
            raw, path, size, lambda s, n: self._call("read", path, self._read_range_checked, path, s, n, size)
        )

    def info(self, path: str) -> FileEntry:
        self._invalidate(path)
        info = self._call("inspect", path, self.fs.info, path)
        return FileEntry(posixpath.basename(path), path, int(info.get("size") or 0), mtime_ms(info))

    # -- bounds and errors ----------------------------------------------------------
    def _too_large(self, path: str, size: int) -> UnsafeFileError:
        return UnsafeFileError(
            f"{path} is {size} bytes, more than the {self.max_log_file_bytes} bytes a log file may "
            "have here; it was not read (raise the bound with the storage option "
            "maxLogFileBytes if the file is genuine)"
        )

    def _check_size(self, path: str, size: int | None) -> None:
        if size is not None and size > self.max_log_file_bytes:
            raise self._too_large(path, size)

    def _check_regular(self, path: str) -> None:
        """On local disk: refuse FIFOs, devices and sockets before opening them."""
        if self.protocol != "file":
            return
        try:
            mode = os.stat(path).st_mode
        except FileNotFoundError:
            return  # the open that follows raises the usual FileNotFoundError
        except OSError:
            return
        if not stat.S_ISREG(mode) and not stat.S_ISDIR(mode):
            raise _not_regular(path)

    def _read_local(self, path: str) -> bytes:
        bound = self.max_log_file_bytes
        # O_NONBLOCK: opening a FIFO must not wait for a writer
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise _not_regular(path)
            if st.st_size > bound:
                raise self._too_large(path, st.st_size)
            chunks, total = [], 0
            while True:  # the file may grow while it is read: never past the bound
                chunk = os.read(fd, min(1 << 24, bound + 1 - total))
                if not chunk:
                    break
                chunks.append(chunk)
                total += len(chunk)
                if total > bound:
                    raise self._too_large(path, total)
            return b"".join(chunks)
        finally:
            os.close(fd)

    def _call(self, what: str, path: str, fn: Callable[..., _T], *args: Any, **kwargs: Any) -> _T:
        """``fn(*args, **kwargs)``; a backend failure other than a missing or existing file
        becomes a redacted :class:`StorageError` (local OSErrors are kept: they carry no
        credentials and callers rely on their types)."""
        failure = fault = None
        try:
            if self.protocol == "file":
                return fn(*args, **kwargs)
            # bodies cut short are retried here; the clients retried the rest already
            return self.retry.run(
                lambda: fn(*args, **kwargs),
                what=what,
                path=path,
                store=self.store,
                retry_on=body_fault,
                describe=lambda exc: _describe(exc, self.options),
            )
        except (FileNotFoundError, FileExistsError, DeltaError):
            raise
        except OSError:
            if self.protocol == "file":
                raise
            failure = _describe(sys.exc_info()[1], self.options)
            fault = fault_of(cast(BaseException, sys.exc_info()[1]))
        except Exception:
            failure = _describe(sys.exc_info()[1], self.options)
            fault = fault_of(cast(BaseException, sys.exc_info()[1]))
        # raised outside the except block: no link to the unredacted original
        if fault is not None:
            raise StoreFaultError(
                f"the {self.store} could not {what} {path}: {fault}, after the client's retries "
                f"(storage options max_retries, timeout); last error: {failure}"
            )
        raise StorageError(f"cannot {what} {path} on the {self.protocol!r} filesystem: {failure}")

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
            self._call("write", path, self.fs.pipe_file, path, data)

    def makedirs(self, path: str) -> None:
        if self.protocol == "file":
            os.makedirs(path, exist_ok=True)

    def check_commits_supported(self) -> None:
        """Raises CommitFailedError unless commits here are atomic or the caller opted
        in to unsafe commits. Cheap; writers may call it before writing data files."""
        if self.allow_unsafe_commits or self.atomic_create is not None:
            return
        raise CommitFailedError(self._unsafe_message())

    def _unsafe_message(self) -> str:
        name = type(self.fs).__name__
        return (
            f"pydelta cannot commit to {self.root}: the {self.protocol!r} filesystem "
            f"({name}) has no atomic create-if-absent, so two concurrent writers could "
            "both write the same log version and one commit would be lost. Commits are "
            "supported on local disk, S3 (s3fs), Azure Blob (adlfs: az://, abfs://, "
            "abfss://) and GCS (gcsfs). If only one writer ever writes this table, opt "
            "in with the write option allowUnsafeCommits=true "
            "(.option('allowUnsafeCommits', 'true')) or, in Python, "
            "Storage(..., allow_unsafe_commits=True)"
        )

    def put_if_absent(self, path: str, data: bytes) -> None:
        """Atomically creates ``path`` with ``data``; raises FileExistsError if it exists
        (per backend: :mod:`delta_pyds.storage.put_if_absent`)."""
        kind = self.atomic_create
        if kind == "local":
            put_if_absent_local(path, data)
        elif kind == "memory":
            put_if_absent_memory(self.fs, path, data)
        elif kind in ("s3", "azure", "gcs"):
            if kind == "s3":
                self._check_conditional_put()
            put_if_absent_object(
                kind,
                path,
                data,
                self.options,
                create=self._conditional_create,
                read_back=self._read_back,
                store=self.store,
            )
            self._invalidate(posixpath.dirname(path))
        elif self.allow_unsafe_commits:
            log.warning(
                "pydelta: unsafe commit (exists-then-write) of %s on %s: concurrent writers could lose commits",
                path,
                type(self.fs).__name__,
            )
            if self.exists(path):
                raise FileExistsError(errno.EEXIST, "commit already exists", path)
            self.fs.pipe_file(path, data)
        else:
            raise CommitFailedError(self._unsafe_message())

    def _conditional_create(self, kind: str, path: str, data: bytes) -> None:
        """One conditional create request on this filesystem (tests replace it to play a
        lost response or a server that ignores the condition)."""
        conditional_create(self.fs, kind, path, data)

    def _check_conditional_put(self) -> None:
        """Once per process and bucket: does this S3 server honour ``If-None-Match: *``?"""
        check_conditional_put(
            self.fs,
            self.root,
            self.options,
            allow_unsafe_commits=self.allow_unsafe_commits,
            create=self._conditional_create,
        )

    def _read_back(self, path: str) -> bytes:
        """The object at ``path`` as it is now (not from a listing cache)."""
        return self.read_back(path)

    def read_back(self, path: str) -> bytes:
        """A whole (log) file as it is now, its length checked against the size the store
        reports for it (a HEAD): for comparing a log entry with what we wrote, where a
        body cut short must not pass for another writer's entry."""
        if self.protocol == "file":
            return self.read_bytes(path)
        self._invalidate(posixpath.dirname(path))  # adlfs answers info() from a cached listing
        return self.read_bytes(path, size=self.info(path).size)

    def _invalidate(self, path: str) -> None:
        """Drops ``path`` from the filesystem's listing cache (some backends key it
        with the protocol, others without, with or without a trailing slash)."""
        if self.protocol == "file":
            return
        fs = self.fs
        stripped = fs._strip_protocol(path)
        for p in {path, stripped, stripped.rstrip("/"), stripped.rstrip("/") + "/"}:
            try:
                fs.invalidate_cache(p)
            except Exception:  # pragma: no cover - cache bookkeeping only
                pass

    def delete(self, path: str) -> None:
        try:
            self._call("delete", path, self.fs.rm_file, path)
        except FileNotFoundError:
            pass


def _not_regular(path: str) -> UnsafeFileError:
    return UnsafeFileError(f"{path} is not a regular file (a FIFO, a device or a link to one); it was not read")


def _describe(exc: BaseException | None, options: Mapping[str, Any]) -> str:
    return redact(f"{type(exc).__name__}: {exc}", options)


_BACKEND_PACKAGES = {
    "s3": "s3fs",
    "s3a": "s3fs",
    "gs": "gcsfs",
    "gcs": "gcsfs",
    "az": "adlfs",
    "abfs": "adlfs",
    "abfss": "adlfs",
}


def _missing_backend_message(protocol: str, exc: BaseException) -> str:
    package = _BACKEND_PACKAGES.get(protocol)
    if package:
        return (
            f"reading {protocol}:// paths needs the {package} package on the driver and "
            f"every executor: pip install {package} (or delta_pyds[{_extra(protocol)}])"
        )
    return f"no fsspec filesystem for {protocol!r} paths: {exc}"


def _extra(protocol: str) -> str:
    return {"s3fs": "s3", "gcsfs": "gcs", "adlfs": "azure"}[_BACKEND_PACKAGES[protocol]]
