"""Transient object-store faults: how they are recognised, retried and reported.

Guarantees:

* :func:`fault_of` names a failure that is worth retrying (HTTP 5xx or 429 and the
  stores' throttling codes, reset or refused connections, timeouts, truncated bodies,
  checksum mismatches, a read shorter or longer than the listing's size) and returns
  None for everything else (missing objects, lost races, bad credentials, bad requests);
* :class:`RetryPolicy` retries at most ``max_retries`` times with exponential backoff
  (``init_backoff`` doubled up to ``max_backoff``, with jitter), logs every retry at
  WARNING (operation, path, fault, attempt, wait: never a credential), and when the
  retries run out raises :class:`~delta_pyds.errors.StoreFaultError` naming the store,
  the operation, the path, the fault and the attempts;
* the object store clients keep their own request retries (botocore for S3, azure-core,
  gcsfs): the policy here covers what they do not retry (bodies cut short, checksum
  mismatches, short reads) and reports what they gave up on.

Storage options (names as delta-rs / object_store spell them, matched ignoring case and
``_``): ``max_retries``, ``backoff_config.init_backoff`` and ``backoff_config.max_backoff``
(seconds); :mod:`delta_pyds.storage.client_retries` applies them, with ``timeout`` and
``connect_timeout``, to the clients' own retries.
"""

from __future__ import annotations

import errno
import logging
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from delta_pyds.errors import OptionValueError, StoreFaultError
from delta_pyds.storage.options import squash_key

log = logging.getLogger(__name__)

_T = TypeVar("_T")

DEFAULT_MAX_RETRIES = 3
DEFAULT_INIT_BACKOFF = 0.1
DEFAULT_MAX_BACKOFF = 5.0

# storage options consumed here (compared as squash_key gives them)
MAX_RETRIES_KEYS = {"maxretries"}
INIT_BACKOFF_KEYS = {"backoffconfig.initbackoff", "initbackoff"}
MAX_BACKOFF_KEYS = {"backoffconfig.maxbackoff", "maxbackoff"}
TIMEOUT_KEYS = {"timeout"}
CONNECT_TIMEOUT_KEYS = {"connecttimeout"}

_THROTTLE_CODES = (
    "SlowDown",
    "ThrottlingException",
    "Throttling",
    "TooManyRequests",
    "RequestLimitExceeded",
    "ServerBusy",
    "InternalError",
    "ServiceUnavailable",
    "RequestTimeout",
    "OperationTimedOut",
)
_BODY_ERRORS = (
    # a JSON response body (GCS object metadata, listings) cut short where the client
    # cannot tell (no Content-Length): only the parser notices
    "JSONDecodeError",
    "ClientPayloadError",
    "ContentLengthError",
    "IncompleteRead",
    "IncompleteReadError",
    "TransferEncodingError",
    "ResponseStreamingError",
)
_CONNECTION_ERRORS = (
    "EndpointConnectionError",
    "ConnectionClosedError",
    "ConnectTimeoutError",
    "ReadTimeoutError",
    "ServerDisconnectedError",
    "ClientConnectionError",
    "ClientOSError",
    "ConnectionResetError",
    "ConnectionRefusedError",
    "ConnectionAbortedError",
    "BrokenPipeError",
    "ServiceRequestError",
    "ServiceResponseError",
    "FSTimeoutError",
    "TimeoutError",
)


def _names(exc: BaseException) -> set[str]:
    return {k.__name__ for k in type(exc).__mro__}


def _chain(exc: BaseException | None) -> list[BaseException]:
    out: list[BaseException] = []
    while exc is not None and all(e is not exc for e in out):
        out.append(exc)
        exc = exc.__cause__ or exc.__context__
    return out


def _status(exc: BaseException) -> int | None:
    response = getattr(exc, "response", None)
    if isinstance(response, dict):
        value = response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        return int(value) if value else None
    for attr in ("status_code", "status", "code"):
        value = getattr(exc, attr, None)
        if isinstance(value, int) and 100 <= value < 600:
            return value
    return None


def body_fault(exc: BaseException) -> str | None:
    """The fault behind ``exc`` if it is a response body cut short or corrupted (what the
    clients do not retry themselves), else None."""
    fault = fault_of(exc)
    return fault if fault and fault.startswith(("short read", "checksum", "truncated")) else None


def fault_of(exc: BaseException) -> str | None:
    """A short name of the transient fault behind ``exc`` (``HTTP 503 SlowDown``,
    ``connection reset``, ``truncated response``...), or None if it is not one."""
    for e in _chain(exc):
        if isinstance(e, (FileNotFoundError, FileExistsError, PermissionError)):
            return None
        names = _names(e)
        if "ShortReadError" in names:
            return f"short read ({e})"
        if "FlexibleChecksumError" in names or "checksum" in str(e).lower() and "mismatch" in str(e).lower():
            return "checksum mismatch (a truncated or corrupted response body)"
        if names & set(_BODY_ERRORS):
            return f"truncated response ({type(e).__name__})"
        status = _status(e)
        text = str(e)
        code = next((c for c in _THROTTLE_CODES if c in text), "")
        if status is not None and (status >= 500 or status == 429):
            return f"HTTP {status}" + (f" {code}" if code else "")
        if code:
            return f"HTTP {code}"
        if isinstance(e, OSError) and e.errno == errno.EBUSY:  # s3fs: SlowDown
            return "HTTP 503 SlowDown"
        if names & set(_CONNECTION_ERRORS) or isinstance(e, ConnectionError):
            if "Timeout" in type(e).__name__ or isinstance(e, TimeoutError):
                return f"timeout ({type(e).__name__})"
            return f"connection failed ({type(e).__name__})"
    return None


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how patiently a transient fault is retried."""

    max_retries: int = DEFAULT_MAX_RETRIES
    init_backoff: float = DEFAULT_INIT_BACKOFF
    max_backoff: float = DEFAULT_MAX_BACKOFF

    def delay(self, retry: int) -> float:
        """The wait before retry number ``retry`` (1-based): doubling, with jitter."""
        cap = min(self.max_backoff, self.init_backoff * 2.0 ** (retry - 1))
        return float(cap * random.uniform(0.5, 1.0))

    def run(
        self,
        fn: Callable[[], _T],
        *,
        what: str,
        path: str,
        store: str,
        retry_on: Callable[[BaseException], str | None],
        describe: Callable[[BaseException], str],
        sleep: Callable[[float], None] = time.sleep,
    ) -> _T:
        """``fn()``, retried while ``retry_on`` names a fault; StoreFaultError when the
        retries run out (other exceptions propagate unchanged)."""
        retry = 0
        while True:
            fault = detail = None
            try:
                return fn()
            except Exception as exc:
                fault = retry_on(exc)
                if fault is None:
                    raise
                detail = describe(exc)
            retry += 1
            if retry > self.max_retries:
                raise StoreFaultError(
                    f"the {store} could not {what} {path}: {fault}, {retry} attempt(s) "
                    f"(storage option max_retries={self.max_retries}); last error: {detail}"
                )
            wait = self.delay(retry)
            log.warning(
                "pydelta: %s %s on the %s failed (%s); retry %d of %d in %.2f s",
                what,
                path,
                store,
                fault,
                retry,
                self.max_retries,
                wait,
            )
            sleep(wait)


def _non_negative(value: Any, name: str, kind: type) -> Any:
    try:
        number = kind(str(value).strip())
    except ValueError:
        number = -1
    if number < 0:
        raise OptionValueError(f"storage option {name}: expected a number >= 0, got {value!r}")
    return number


def split_retry_options(options: Mapping[str, Any]) -> tuple[RetryPolicy, dict[str, Any], dict[str, Any]]:
    """The retry policy, the client settings (``max_retries``, ``timeout``,
    ``connect_timeout`` as given) and the remaining options."""
    rest: dict[str, Any] = {}
    client: dict[str, Any] = {}
    kw: dict[str, Any] = {}
    for k, v in options.items():
        key = squash_key(k)
        if key in MAX_RETRIES_KEYS:
            kw["max_retries"] = client["max_retries"] = _non_negative(v, "max_retries", int)
        elif key in INIT_BACKOFF_KEYS:
            kw["init_backoff"] = _non_negative(v, "backoff_config.init_backoff", float)
        elif key in MAX_BACKOFF_KEYS:
            kw["max_backoff"] = _non_negative(v, "backoff_config.max_backoff", float)
        elif key in TIMEOUT_KEYS:
            client["timeout"] = _non_negative(v, "timeout", float)
        elif key in CONNECT_TIMEOUT_KEYS:
            client["connect_timeout"] = _non_negative(v, "connect_timeout", float)
        else:
            rest[k] = v
    return RetryPolicy(**kw), client, rest
