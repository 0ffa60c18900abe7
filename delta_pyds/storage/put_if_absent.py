"""Atomic put-if-absent (create-if-absent) per storage backend, the primitive Delta
commits rely on, and the classification of a lost race.

Guarantees: each function here is an atomic create-if-absent, never exists-then-write:

===========  ==============================================================
local disk   write a temporary file, then ``os.link`` it into place (or
             ``O_CREAT|O_EXCL`` where hard links are not supported)
S3 (s3fs)    one ``PUT`` with ``If-None-Match: *`` (``pipe_file(mode="create")``,
             forced to a single request); the first commit of a process
             checks once per bucket that the server honours the condition
             (:func:`check_conditional_put`)
Azure Blob   ``upload_blob(overwrite=False)`` (``If-None-Match: *``) via adlfs
GCS          one upload with ``ifGenerationMatch=0`` via gcsfs
memory       a lock around check-and-write (one process only: for tests)
===========  ==============================================================

A lost race raises ``FileExistsError`` and never overwrites; servers that answer a
lost race with HTTP 412 ``PreconditionFailed`` (which s3fs raises as
``OSError(EINVAL)``) count as a lost race too (:func:`is_precondition_failure`), and a
retried request whose first attempt had created our very bytes counts as success.
Other failures of a conditional create raise ``OSError``: the outcome is unknown. No
error raised here quotes a credential from the storage options, nor keeps a link to an
unredacted original. Which backends qualify is :func:`atomic_create_kind`; the policy
for the others (refuse, or an opted-in unsafe write) is the caller's
(:meth:`delta_pyds.storage.store.Storage.put_if_absent`).
"""

from __future__ import annotations

import errno
import logging
import os
import posixpath
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from delta_pyds.errors import CommitFailedError
from delta_pyds.storage.options import redact
from delta_pyds.storage.retry import fault_of

log = logging.getLogger(__name__)

#: ``create(kind, path, data)``: one conditional create request (see :func:`conditional_create`)
ConditionalCreate = Callable[[str, str, bytes], None]

_MEMORY_LOCK = threading.Lock()

#: (filesystem class name, endpoint, bucket) -> True once a conditional PUT was seen to
#: work (or was accepted as unsafe); per process. Tests may replace it to probe again.
CONDITIONAL_PUT_CHECKED: dict[tuple[str, str, str], bool] = {}
_CONDITIONAL_PUT_LOCK = threading.Lock()


def atomic_create_kind(fs: Any) -> str | None:
    """How this filesystem creates a file atomically (``local``, ``s3``, ``azure``,
    ``gcs``, ``memory``), or None if it cannot."""
    names = {f"{k.__module__}.{k.__name__}" for k in type(fs).__mro__}
    if "fsspec.implementations.local.LocalFileSystem" in names:
        return "local"
    if "s3fs.core.S3FileSystem" in names:
        return "s3"
    if "adlfs.spec.AzureBlobFileSystem" in names:
        return "azure"
    if "gcsfs.core.GCSFileSystem" in names:
        return "gcs"
    if "fsspec.implementations.memory.MemoryFileSystem" in names:
        return "memory"
    return None


# --------------------------------------------------------------- lost races
def _http_status(exc: BaseException) -> int | None:
    response = getattr(exc, "response", None)
    if isinstance(response, dict):  # botocore ClientError
        status = response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        return int(status) if status else None
    for attr in ("status_code", "code", "status"):  # azure HttpResponseError, gcsfs HttpError
        value = getattr(exc, attr, None)
        if isinstance(value, int) and 100 <= value < 600:
            return value
    return None


def _error_code(exc: BaseException) -> str:
    response = getattr(exc, "response", None)
    if isinstance(response, dict):
        return str(response.get("Error", {}).get("Code") or "")
    return str(getattr(exc, "error_code", "") or "")


def _causes(exc: BaseException | None) -> Iterator[BaseException]:
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        yield exc
        exc = exc.__cause__ or exc.__context__


def is_precondition_failure(exc: BaseException) -> bool:
    """A conditional create lost to an existing object (HTTP 412 or the store's code)."""
    for e in _causes(exc):
        if isinstance(e, FileExistsError):
            return True
        code = _error_code(e)
        if code in ("PreconditionFailed", "ConditionNotMet", "BlobAlreadyExists"):
            return True
        if _http_status(e) == 412:
            return True
        text = str(e)
        if "PreconditionFailed" in text or "ConditionNotMet" in text or "BlobAlreadyExists" in text:
            return True
    return False


def is_conditional_conflict(exc: BaseException) -> bool:
    """S3's 409 ConditionalRequestConflict: a concurrent conditional write is in flight;
    the request should be retried (it then succeeds or fails with 412)."""
    for e in _causes(exc):
        if _error_code(e) in ("ConditionalRequestConflict", "OperationAborted"):
            return True
        if "ConditionalRequestConflict" in str(e):
            return True
    return False


# --------------------------------------------------------------- local disk and memory
def put_if_absent_local(path: str, data: bytes) -> None:
    """Creates the local file ``path`` with ``data`` (durably); FileExistsError if it exists."""
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
            f.flush()
            os.fsync(f.fileno())
    finally:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass


def put_if_absent_memory(fs: Any, path: str, data: bytes) -> None:
    """Check-and-write under a process-wide lock (fsspec's memory filesystem, for tests)."""
    with _MEMORY_LOCK:
        if fs.exists(path):
            raise FileExistsError(errno.EEXIST, "commit already exists", path)
        fs.pipe_file(path, data)


# --------------------------------------------------------------- object stores
def conditional_create(fs: Any, kind: str, path: str, data: bytes) -> None:
    """One conditional create request (a single request: multi-part uploads of
    s3fs and resumable uploads of gcsfs do not all carry the condition)."""
    if kind in ("s3", "gcs"):
        chunk = max(50 * 2**20, len(data) + 1)
        fs.pipe_file(path, data, mode="create", chunksize=chunk)
    else:
        fs.pipe_file(path, data, mode="create")


def put_if_absent_object(
    kind: str,
    path: str,
    data: bytes,
    options: Mapping[str, Any],
    *,
    create: ConditionalCreate,
    read_back: Callable[[str], bytes],
    store: str = "object store",
) -> None:
    """Creates the object ``path`` with ``data`` on an object store (``kind`` ``s3``,
    ``azure`` or ``gcs``) through ``create``; retries S3's 409 conflicts a few times.

    ``read_back(path)`` reads the object as it is now (bypassing listing caches): after
    a lost race, an object holding exactly ``data`` is ours (the retry of a successful
    request fails with 412), anything else raises FileExistsError. ``options`` are the
    storage options whose secrets are redacted from errors; ``store`` names the store in
    them."""
    attempts = 0
    while True:
        attempts += 1
        outcome = failure = None
        try:
            create(kind, path, data)
            outcome = "created"
        except Exception as exc:
            if is_precondition_failure(exc):
                outcome = "exists"
            elif is_conditional_conflict(exc) and attempts < 8:
                outcome = "retry"
            else:
                fault = fault_of(exc)
                failure = (f"{fault}: " if fault else "") + redact(f"{type(exc).__name__}: {exc}", options)
        if outcome == "retry":
            time.sleep(min(0.05 * 2**attempts, 1.0))
            continue
        if outcome == "exists":
            if _already_ours(read_back, path, data):
                break  # a retried request whose first attempt had succeeded
            raise FileExistsError(errno.EEXIST, "commit already exists", path)
        if failure is not None:
            # an OSError, not a DeltaError: the outcome is unknown (the object may have
            # been written), so callers check before retrying. Raised here, outside the
            # except block, so that it keeps no link to the unredacted original.
            raise OSError(
                errno.EIO, f"the {store} could not create {path} (the outcome is unknown: it may exist): {failure}"
            )
        break


def _already_ours(read_back: Callable[[str], bytes], path: str, data: bytes) -> bool:
    """After a lost race: is the existing object byte-identical to ours? Clients
    retry requests whose response was lost; the retry of a successful conditional
    PUT fails with 412 although the commit is ours. When the object cannot be read
    back, the outcome is unknown: OSError (never a lost race: that would make the
    writer retry on top of its own commit)."""
    failure = None
    try:
        return read_back(path) == data
    except FileNotFoundError:
        return False
    except Exception as exc:
        failure = f"{type(exc).__name__}: {exc}"
    raise OSError(errno.EIO, f"{path} exists but could not be read back to compare with ours: {failure}")


def _s3_endpoint(fs: Any) -> str:
    """The S3 endpoint ``fs`` talks to (its client's, else the environment's; ``aws``)."""
    return str(
        getattr(fs, "client_kwargs", {}).get("endpoint_url")
        or getattr(fs, "endpoint_url", None)
        or os.environ.get("AWS_ENDPOINT_URL_S3")
        or os.environ.get("AWS_ENDPOINT_URL")
        or "aws"
    )


def _probe_conditional_put(fs: Any, root: str, options: Mapping[str, Any], create: ConditionalCreate) -> bool:
    """Whether the server refuses a second ``create`` of a hidden probe object under ``root``
    (the probe is deleted after). Raises CommitFailedError, with ``options``' secrets
    redacted, when the probe itself fails."""
    probe = posixpath.join(root, f".pydelta-conditional-put-probe-{uuid.uuid4().hex}")
    honoured = False
    failure = None
    try:
        create("s3", probe, b"1")
        try:
            create("s3", probe, b"2")
        except Exception as exc:
            if not is_precondition_failure(exc):
                raise
            honoured = True
    except Exception as exc:
        failure = redact(f"{type(exc).__name__}: {exc}", options)
    finally:
        try:
            fs.rm_file(probe)
        except Exception:
            pass
    if failure is not None:
        raise CommitFailedError(
            f"pydelta cannot commit to {root}: checking that the S3 server supports "
            f"conditional writes (If-None-Match: *) failed: {failure}"
        )
    return honoured


def check_conditional_put(
    fs: Any, root: str, options: Mapping[str, Any], *, allow_unsafe_commits: bool, create: ConditionalCreate
) -> None:
    """Once per process and bucket: verify that this S3 server honours
    ``If-None-Match: *`` (servers that ignore it would silently overwrite
    commits). Writes and deletes a small hidden probe object under ``root`` with
    ``create``. Raises CommitFailedError when the server ignores the condition (unless
    ``allow_unsafe_commits``: then it only warns) or the probe fails."""
    endpoint = _s3_endpoint(fs)
    bucket = fs._strip_protocol(root).split("/", 1)[0]
    key = (type(fs).__name__, str(endpoint), bucket)
    if CONDITIONAL_PUT_CHECKED.get(key):
        return
    with _CONDITIONAL_PUT_LOCK:
        if CONDITIONAL_PUT_CHECKED.get(key):
            return
        if not _probe_conditional_put(fs, root, options, create):
            if allow_unsafe_commits:
                log.warning(
                    "pydelta: the S3 server at %s ignores If-None-Match: commits are unsafe with concurrent writers",
                    endpoint,
                )
                CONDITIONAL_PUT_CHECKED[key] = True
                return
            raise CommitFailedError(
                f"pydelta cannot commit to {root}: the S3 server at {endpoint} ignores "
                "conditional writes (If-None-Match: *), so concurrent writers could overwrite "
                "each other's commits. Use a server that supports them (AWS S3, SeaweedFS, "
                "MinIO, recent Ceph RGW) or, with a single writer only, set the storage "
                "option allowUnsafeCommits=true"
            )
        CONDITIONAL_PUT_CHECKED[key] = True
