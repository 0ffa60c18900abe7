"""The object-store clients' own request retries and timeouts: set from the storage
options, and logged.

Guarantees, per client (options as :func:`delta_pyds.storage.retry.split_retry_options`
reads them; an option not given leaves the client's default unless said otherwise):

* S3 (s3fs over botocore): ``max_retries`` n becomes botocore's
  ``retries={"max_attempts": n + 1, "mode": "standard"}`` and s3fs's ``retries = n + 1``;
  ``timeout`` / ``connect_timeout`` botocore's ``read_timeout`` / ``connect_timeout``;
* Azure Blob (adlfs over azure-storage-blob): the blob service client's retry policy
  retries a request at most ``max_retries`` times (default 3, azure's own count) and
  waits pydelta's backoff (``backoff_config.init_backoff`` doubled up to
  ``max_backoff``, with jitter; default 0.1 s to 5 s) instead of azure's 15 s + 3^n s;
  ``timeout`` / ``connect_timeout`` become adlfs's ``read_timeout`` /
  ``connection_timeout`` (whole seconds);
* GCS (gcsfs): every request is retried by pydelta instead of gcsfs's fixed 6 attempts
  (1-17 s apart): on what gcsfs retries (5xx, 408, 429, connection errors, checksum
  mismatches; never 404), at most ``max_retries`` times (default 3) with pydelta's
  backoff; ``timeout`` / ``connect_timeout`` become aiohttp's ``sock_read`` /
  ``sock_connect`` (gcsfs's ``requests_timeout``);
* every retry the clients make is logged at WARNING on ``delta_pyds.storage.client_retries``
  (store, operation, path without its query, attempt, fault; the wait where pydelta
  sets it): S3 through a handler of botocore's ``needs-retry`` event (when botocore
  gives up, that too), Azure and GCS where pydelta computes the backoff. Never a
  credential or a signed URL.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from delta_pyds.storage.retry import RetryPolicy

log = logging.getLogger(__name__)

S3_PROTOCOLS = ("s3", "s3a")
AZURE_PROTOCOLS = ("az", "abfs", "abfss")
GCS_PROTOCOLS = ("gs", "gcs")


def client_options(
    protocol: str, client: Mapping[str, Any], kwargs: dict[str, Any], policy: RetryPolicy | None = None
) -> dict[str, Any]:
    """``kwargs`` of the fsspec filesystem with ``client`` (``max_retries``, ``timeout``,
    ``connect_timeout`` as given) applied where the backend takes them as parameters."""
    out = dict(kwargs)
    if protocol in S3_PROTOCOLS and client:
        config = dict(out.get("config_kwargs") or {})
        if "max_retries" in client:
            # botocore retries whole requests (5xx, 429, throttling, connection errors);
            # s3fs retries a few more errors around them: both bounded by max_retries
            config["retries"] = {"max_attempts": client["max_retries"] + 1, "mode": "standard"}
        if "timeout" in client:
            config["read_timeout"] = client["timeout"]
        if "connect_timeout" in client:
            config["connect_timeout"] = client["connect_timeout"]
        out["config_kwargs"] = config
    elif protocol in AZURE_PROTOCOLS:  # adlfs: azure-core's transport timeouts
        if "timeout" in client:
            out["read_timeout"] = max(1, round(client["timeout"]))
        if "connect_timeout" in client:
            out["connection_timeout"] = max(1, round(client["connect_timeout"]))
    elif protocol in GCS_PROTOCOLS and ("timeout" in client or "connect_timeout" in client):
        import aiohttp

        default = aiohttp.ClientTimeout()  # 300 s per request, 30 s to connect
        out["requests_timeout"] = aiohttp.ClientTimeout(
            total=None if "timeout" in client else default.total,
            sock_read=client.get("timeout"),
            sock_connect=client.get("connect_timeout", default.sock_connect),
        )
    if protocol in AZURE_PROTOCOLS + GCS_PROTOCOLS and policy is not None and policy != RetryPolicy():
        # the retry settings are set on the filesystem object after it is made: one
        # with other settings must not be fsspec's cached instance of the defaults
        out["skip_instance_cache"] = True
    return out


def configure_client(protocol: str, client: Mapping[str, Any], fs: Any, policy: RetryPolicy, store: str) -> None:
    """Settings of a created filesystem that are not constructor parameters."""
    if protocol in S3_PROTOCOLS:
        if "max_retries" in client:
            fs.retries = client["max_retries"] + 1  # s3fs's own retries around botocore's
        attempts = client["max_retries"] + 1 if "max_retries" in client else BOTOCORE_DEFAULT_ATTEMPTS
        # standard mode (max_retries given) does not retry HTTP 429: pydelta's handler does
        configure_s3(fs, attempts, store, policy if "max_retries" in client else None)
    elif protocol in AZURE_PROTOCOLS:
        configure_azure(fs, policy, store)
    elif protocol in GCS_PROTOCOLS:
        configure_gcs(fs, policy, store)


def _where(url: Any) -> str:
    """A request URL's path, without the query (which may hold a SAS signature)."""
    try:
        return urlsplit(str(url)).path or "/"
    except ValueError:  # pragma: no cover - not a URL
        return "?"


def _log_retry(store: str, method: str, path: str, attempt: int, total: int, fault: str, wait: float) -> None:
    log.warning(
        "pydelta: the client of the %s retries %s %s (attempt %d of %d failed: %s) in %.2f s",
        store,
        method,
        path,
        attempt,
        total,
        fault,
        wait,
    )


# botocore's legacy retry mode (s3fs's default): 5 attempts
BOTOCORE_DEFAULT_ATTEMPTS = 5


def configure_s3(fs: Any, attempts: int, store: str, retry_429: RetryPolicy | None = None) -> None:
    """Botocore's retries of the s3fs filesystem logged: a handler of its ``needs-retry``
    event on the session its client is made from (before the client exists). With
    ``retry_429`` (botocore's standard mode, which retries 429 only for a few throttling
    codes, never on a HEAD) the handler retries HTTP 429 itself with that backoff."""
    if getattr(fs, "_s3", None) is not None or getattr(fs, "session", None) is not None:
        return  # connected already (a cached instance: configured when it was made)
    import aiobotocore.session

    def needs_retry(
        response: Any = None, attempts: int = 0, caught_exception: Any = None, request_dict: Any = None, **_: Any
    ) -> float | None:
        fault = None
        status = 0
        if caught_exception is not None:
            fault = type(caught_exception).__name__
        elif response is not None:
            http, parsed = response
            status = getattr(http, "status_code", 0)
            if status >= 500 or status == 429:
                code = (parsed or {}).get("Error", {}).get("Code", "") if isinstance(parsed, dict) else ""
                fault = f"HTTP {status}" + (f" {code}" if code and code != str(status) else "")
        if fault is None:
            return None
        request = request_dict or {}
        method, path = request.get("method", "?"), _where(request.get("url", ""))
        if attempts < total and status == 429 and retry_429 is not None:
            wait = retry_429.delay(attempts)
            _log_retry(store, method, path, attempts, total, fault, wait)
            return wait  # botocore sleeps this long, then retries
        if attempts < total:
            _log_retry(store, method, path, attempts, total, fault, 0.0)
        else:
            log.warning(
                "pydelta: the client of the %s gives up on %s %s after %d attempt(s): %s",
                store,
                method,
                path,
                attempts,
                fault,
            )
        return None

    total = attempts
    session = aiobotocore.session.AioSession(**(getattr(fs, "kwargs", None) or {}))
    session.register("needs-retry.s3", needs_retry, unique_id="delta_pyds-retry-log")
    fs.session = session
    fs._session_is_owned = True


def configure_azure(fs: Any, policy: RetryPolicy, store: str) -> None:
    """The adlfs filesystem's blob service client retries as ``policy`` says, logged."""
    config = getattr(getattr(fs, "service_client", None), "_config", None)
    retry = getattr(config, "retry_policy", None)
    if retry is None:  # pragma: no cover - another azure-storage-blob layout
        return
    n = policy.max_retries
    retry.total_retries = retry.connect_retries = retry.read_retries = retry.status_retries = n

    def backoff(settings: dict[str, Any]) -> float:
        count = int(settings.get("count") or 1)
        wait = policy.delay(count)
        history = settings.get("history") or []
        method = path = fault = "?"
        if history:
            last = history[-1]
            method = getattr(last.http_request, "method", "?")
            path = _where(getattr(last.http_request, "url", ""))
            response, error = last.http_response, last.error
            if response is not None:
                code = response.headers.get("x-ms-error-code", "") if response.headers else ""
                fault = f"HTTP {response.status_code}" + (f" {code}" if code else "")
            elif error is not None:
                fault = type(error).__name__
        _log_retry(store, method, path, count, n + 1, fault, wait)
        return wait

    retry.get_backoff_time = backoff


def configure_gcs(fs: Any, policy: RetryPolicy, store: str) -> None:
    """The gcsfs filesystem's requests retried as ``policy`` says (on what gcsfs
    retries), logged; gcsfs's own retry decorator is bypassed."""
    from gcsfs.core import GCSFileSystem
    from gcsfs.retry import HttpError, is_retriable

    inner = getattr(GCSFileSystem._request, "__wrapped__", None)
    if inner is None:  # pragma: no cover - another gcsfs layout
        return

    def retriable(exc: BaseException) -> bool:
        if isinstance(exc, FileNotFoundError) or (isinstance(exc, HttpError) and exc.code in (400, 404)):
            return False
        return bool(is_retriable(exc))

    async def request(method: str, path: str, *args: Any, **kwargs: Any) -> Any:
        attempt = 1
        while True:
            try:
                return await inner(fs, method, path, *args, **kwargs)
            except Exception as exc:
                if attempt > policy.max_retries or not retriable(exc):
                    raise
                wait = policy.delay(attempt)
                code = getattr(exc, "code", None)
                fault = f"HTTP {code}" if isinstance(code, int) else type(exc).__name__
                _log_retry(store, method, _where(path), attempt, policy.max_retries + 1, fault, wait)
                attempt += 1
                await asyncio.sleep(wait)

    fs._request = request
