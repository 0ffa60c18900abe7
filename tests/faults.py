"""A fault-injecting HTTP/1.1 proxy on 127.0.0.1, for putting a local object-store
server (SeaweedFS, Azurite, fake-gcs-server: :mod:`servers`) behind a bad network.

Toxiproxy (the maintained tool for this) is TCP-only and needs its Go server; faults
here must be chosen per HTTP request (method and path) and include HTTP answers, so
this is a small asyncio proxy. It forwards requests byte for byte (the ``Host`` header
included: S3 signatures stay valid), one upstream connection per client connection,
and parses just enough HTTP (request and response heads, ``Content-Length`` and
chunked bodies) to find request boundaries. ``Expect: 100-continue`` is answered by
the proxy itself and not forwarded.

Faults (:class:`Fault`) are scripted per request: the first fault whose ``method`` and
``path`` patterns match and whose budget (``count``, ``skip``, ``rate``) allows fires:

==================  ==========================================================
``status``          answer ``status`` (503 ``SlowDown``, 500 ``InternalError``,
                    429 ...) with the store's error body (``flavor``: S3 XML,
                    Azure XML and ``x-ms-error-code``, GCS JSON); nothing is
                    forwarded
``reset_request``   forward ``after_bytes`` bytes of the request, then reset both
                    connections (the store never sees a whole request)
``reset_response``  forward the request, send ``after_bytes`` bytes of the
                    response, then reset the client connection
``truncate``        forward, send the response head unchanged (its
                    ``Content-Length`` says more) and half the body, then close
``short_body``      forward, then answer with half the body and a
                    ``Content-Length`` rewritten to match (a store or middlebox
                    that returns fewer bytes than asked: only the size the
                    listing reported can tell)
``latency``         wait ``delay`` seconds, then forward normally
``lost_response``   forward the whole request (the store applies it), read the
                    response, then reset the client connection without a byte
==================  ==========================================================

The proxy runs its own event loop in a daemon thread; ``counts`` holds the faults
injected by kind, ``requests`` the requests seen. Probabilistic faults (``rate``) draw
from one ``random.Random(seed)``; the seed is printed when the proxy starts.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import os
import random
import re
import socket
import struct
import threading
from dataclasses import dataclass, field

HOST = "127.0.0.1"
KINDS = ("status", "reset_request", "reset_response", "truncate", "short_body", "latency", "lost_response")

_REASONS = {500: "Internal Server Error", 503: "Service Unavailable", 429: "Too Many Requests"}
_CODES = {500: "InternalError", 503: "SlowDown", 429: "TooManyRequests"}
_MESSAGES = {
    500: "We encountered an internal error. Please try again.",
    503: "Please reduce your request rate.",
    429: "Too many requests.",
}


@dataclass
class Fault:
    """One scripted fault. ``method``/``path``: regular expressions searched in the
    request's method and target (path and query); ``count``: how many times it fires
    (-1: unbounded); ``skip``: matching requests let through first; ``rate``: the
    probability it fires on a matching request."""

    kind: str
    method: str = ""
    path: str = ""
    count: int = 1
    skip: int = 0
    rate: float = 1.0
    status: int = 503
    after_bytes: int = 0
    delay: float = 0.0
    fired: int = field(default=0, init=False)
    seen: int = field(default=0, init=False)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"fault kind {self.kind!r}: expected one of {', '.join(KINDS)}")

    def matches(self, method: str, target: str) -> bool:
        return (not self.method or re.search(self.method, method) is not None) and (
            not self.path or re.search(self.path, target) is not None
        )

    @property
    def spent(self) -> bool:
        return self.count >= 0 and self.fired >= self.count


class _Closed(Exception):
    pass


async def _read_head(reader: asyncio.StreamReader) -> bytes:
    try:
        return await reader.readuntil(b"\r\n\r\n")
    except (asyncio.IncompleteReadError, ConnectionError) as exc:
        raise _Closed from exc
    except asyncio.LimitOverrunError as exc:
        raise _Closed from exc


def _headers(head: bytes) -> tuple[str, dict[str, str]]:
    lines = head.decode("latin-1").split("\r\n")
    out = {}
    for line in lines[1:]:
        if ":" in line:
            k, _, v = line.partition(":")
            out[k.strip().lower()] = v.strip()
    return lines[0], out


async def _read_chunked(reader: asyncio.StreamReader) -> bytes:
    parts = []
    while True:
        line = await reader.readuntil(b"\r\n")
        parts.append(line)
        size = int(line.split(b";", 1)[0].strip() or b"0", 16)
        if size == 0:
            while True:  # trailers, then the empty line
                trailer = await reader.readuntil(b"\r\n")
                parts.append(trailer)
                if trailer == b"\r\n":
                    return b"".join(parts)
        parts.append(await reader.readexactly(size + 2))


async def _read_body(reader: asyncio.StreamReader, headers: dict[str, str], *, until_eof: bool) -> bytes:
    if "chunked" in headers.get("transfer-encoding", "").lower():
        return await _read_chunked(reader)
    if "content-length" in headers:
        return await reader.readexactly(int(headers["content-length"]))
    return await reader.read() if until_eof else b""


def _reset(writer: asyncio.StreamWriter) -> None:
    """Close with a TCP RST (SO_LINGER 0), as a crashed peer or middlebox would."""
    sock = writer.get_extra_info("socket")
    with contextlib.suppress(OSError, AttributeError):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    if sock is None:
        writer.transport.abort()
    else:
        writer.close()


_AZURE_CODES = {500: "InternalError", 503: "ServerBusy"}
_AZURE_MESSAGES = {
    500: "The server encountered an internal error. Please retry the request.",
    503: "The server is busy.",
}


def error_response(status: int, target: str, flavor: str = "s3") -> bytes:
    """An error answer in the store's own shape: S3 XML (``SlowDown``...), Azure XML
    with ``x-ms-error-code`` (``ServerBusy``, ``InternalError``), GCS JSON."""
    resource = target.split("?", 1)[0]
    extra = ""
    if flavor == "azure":
        code = _AZURE_CODES.get(status, "ServerBusy")
        body = (
            '<?xml version="1.0" encoding="utf-8"?>\n'
            f"<Error><Code>{code}</Code><Message>{_AZURE_MESSAGES.get(status, code)}\n"
            "RequestId:fault-proxy</Message></Error>"
        ).encode()
        ctype = "application/xml"
        extra = f"x-ms-error-code: {code}\r\nx-ms-request-id: fault-proxy\r\n"
    elif flavor == "gcs":
        message = {503: "Service Unavailable", 429: "The rate of requests is too high."}.get(status, "Backend Error")
        body = (
            '{"error": {"code": %d, "message": "%s", "errors": [{"message": "%s", "reason": "backendError"}]}}'
            % (status, message, message)
        ).encode()
        ctype = "application/json; charset=UTF-8"
    else:
        code = _CODES.get(status, "ServiceUnavailable")
        body = (
            '<?xml version="1.0" encoding="UTF-8"?>\n'
            f"<Error><Code>{code}</Code><Message>{_MESSAGES.get(status, code)}</Message>"
            f"<Resource>{resource}</Resource><RequestId>fault-proxy</RequestId></Error>"
        ).encode()
        ctype = "application/xml"
        extra = "x-amz-request-id: fault-proxy\r\n"
    head = (
        f"HTTP/1.1 {status} {_REASONS.get(status, 'Error')}\r\n"
        f"Content-Type: {ctype}\r\n"
        f"Content-Length: {len(body)}\r\n"
        f"{extra}\r\n"
    ).encode()
    return head + body


class FaultProxy:
    """A proxy from ``127.0.0.1:<port>`` to ``upstream`` (``host:port``)."""

    def __init__(
        self, upstream: str, *, seed: int | None = None, name: str = "proxy", quiet: bool = False, flavor: str = "s3"
    ):
        host, _, port = upstream.rpartition(":")
        self.flavor = flavor  # the error bodies' shape: s3, azure or gcs
        self.upstream = (host or HOST, int(port))
        self.seed = int(os.environ.get("DELTA_PYDS_FAULT_SEED", "0") or 0) or (
            seed if seed is not None else random.SystemRandom().randrange(1, 2**31)
        )
        self.name = name
        self.quiet = quiet
        self.rng = random.Random(self.seed)
        self.faults: list[Fault] = []
        self.counts: collections.Counter[str] = collections.Counter()
        self.requests: list[tuple[str, str]] = []
        self.injected: list[tuple[str, str, str]] = []  # (kind, method, target)
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.base_events.Server | None = None
        self._thread: threading.Thread | None = None
        self.port = 0

    # -- control (any thread) -------------------------------------------------------
    @property
    def endpoint(self) -> str:
        return f"http://{HOST}:{self.port}"

    def add(self, *faults: Fault) -> FaultProxy:
        with self._lock:
            self.faults.extend(faults)
        return self

    def clear(self) -> None:
        with self._lock:
            self.faults.clear()

    def reset_counts(self) -> None:
        with self._lock:
            self.counts.clear()
            self.requests.clear()
            self.injected.clear()

    def _choose(self, method: str, target: str) -> Fault | None:
        with self._lock:
            self.requests.append((method, target))
            for f in self.faults:
                if f.spent or not f.matches(method, target):
                    continue
                f.seen += 1
                if f.seen <= f.skip or (f.rate < 1.0 and self.rng.random() >= f.rate):
                    continue
                f.fired += 1
                self.counts[f.kind] += 1
                self.injected.append((f.kind, method, target))
                return f
        return None

    # -- lifecycle ------------------------------------------------------------------
    def start(self) -> FaultProxy:
        ready = threading.Event()

        def run() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            self._server = loop.run_until_complete(asyncio.start_server(self._serve, HOST, 0, limit=1 << 20))
            self.port = self._server.sockets[0].getsockname()[1]
            ready.set()
            loop.run_forever()
            loop.close()

        self._thread = threading.Thread(target=run, name=f"fault-proxy-{self.name}", daemon=True)
        self._thread.start()
        if not ready.wait(10):
            raise RuntimeError("the fault proxy did not start")
        if not self.quiet:
            print(
                f"fault proxy {self.name}: 127.0.0.1:{self.port} -> "
                f"{self.upstream[0]}:{self.upstream[1]} seed={self.seed}"
            )
        return self

    def stop(self) -> None:
        loop = self._loop
        if loop is None:
            return
        server = self._server

        async def shutdown() -> None:
            if server is not None:
                server.close()
            for task in asyncio.all_tasks():
                if task is not asyncio.current_task():
                    task.cancel()

        asyncio.run_coroutine_threadsafe(shutdown(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        if self._thread is not None:
            self._thread.join(10)
        self._loop = None

    # -- one client connection --------------------------------------------------------
    async def _serve(self, creader: asyncio.StreamReader, cwriter: asyncio.StreamWriter) -> None:
        upstream: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None
        try:
            while True:
                try:
                    head = await _read_head(creader)
                except _Closed:
                    return
                request_line, headers = _headers(head)
                method, target = (request_line.split(" ") + ["", ""])[:2]
                if headers.get("expect", "").lower() == "100-continue":
                    head = re.sub(rb"(?im)^expect:[^\r\n]*\r\n", b"", head)
                    cwriter.write(b"HTTP/1.1 100 Continue\r\n\r\n")
                    await cwriter.drain()
                body = await _read_body(creader, headers, until_eof=False)
                request = head + body
                fault = self._choose(method, target)
                kind = fault.kind if fault else None
                if fault is not None and kind == "status":
                    answer = error_response(fault.status, target, self.flavor)
                    if method == "HEAD":  # a head only: HEAD responses have no body
                        answer = answer.split(b"\r\n\r\n", 1)[0] + b"\r\n\r\n"
                    cwriter.write(answer)
                    await cwriter.drain()
                    continue
                if fault is not None and kind == "latency":
                    await asyncio.sleep(fault.delay)
                if upstream is None:
                    upstream = await asyncio.open_connection(*self.upstream, limit=1 << 20)
                ureader, uwriter = upstream
                if fault is not None and kind == "reset_request":
                    uwriter.write(request[: fault.after_bytes])
                    await uwriter.drain()
                    await asyncio.sleep(0.05)
                    _reset(uwriter)
                    upstream = None
                    _reset(cwriter)
                    return
                uwriter.write(request)
                await uwriter.drain()
                try:
                    rhead = await _read_head(ureader)
                except _Closed:
                    _reset(cwriter)
                    return
                status_line, rheaders = _headers(rhead)
                status = int(status_line.split(" ")[1])
                no_body = method == "HEAD" or status in (204, 304) or 100 <= status < 200
                closing = rheaders.get("connection", "").lower() == "close"
                rbody = b"" if no_body else await _read_body(ureader, rheaders, until_eof=True)
                response = rhead + rbody
                if fault is not None and kind == "lost_response":
                    _reset(cwriter)
                    return
                if fault is not None and kind == "reset_response":
                    cwriter.write(response[: fault.after_bytes])
                    await cwriter.drain()
                    await asyncio.sleep(0.05)
                    _reset(cwriter)
                    return
                if fault is not None and kind == "truncate":
                    cwriter.write(rhead + rbody[: len(rbody) // 2])
                    await cwriter.drain()
                    cwriter.close()
                    return
                if fault is not None and kind == "short_body" and rbody and "content-length" in rheaders:
                    short = rbody[: len(rbody) // 2]
                    rhead = re.sub(rb"(?im)^content-length:[^\r\n]*", b"Content-Length: %d" % len(short), rhead)
                    # and no checksum headers: the client cannot tell
                    rhead = re.sub(rb"(?im)^(x-amz-checksum-[^:]*|content-md5|etag):[^\r\n]*\r\n", b"", rhead)
                    response = rhead + short
                cwriter.write(response)
                await cwriter.drain()
                if closing:
                    cwriter.close()
                    return
        except (ConnectionError, asyncio.IncompleteReadError, OSError):
            return
        except asyncio.CancelledError:
            return
        finally:
            if upstream is not None:
                with contextlib.suppress(Exception):
                    upstream[1].close()
            with contextlib.suppress(Exception):
                cwriter.close()


def proxied(server, proxy: FaultProxy):
    """The storage options of ``server`` (from :mod:`servers`) with the endpoint
    pointing at ``proxy``."""
    opts = dict(server.options)
    if "endpoint_url" in opts:
        opts["endpoint_url"] = proxy.endpoint
    elif "connection_string" in opts:
        opts["connection_string"] = re.sub(
            r"BlobEndpoint=http://[^/;]+", f"BlobEndpoint=http://{HOST}:{proxy.port}", opts["connection_string"]
        )
    return opts


def upstream_of(server) -> str:
    """``host:port`` of a :mod:`servers` server."""
    opts = server.options
    url = opts.get("endpoint_url") or re.search(r"BlobEndpoint=(http://[^/;]+)", opts["connection_string"]).group(1)
    return url.split("://", 1)[1].rstrip("/")


def proxy_fixtures(name: str):
    """The fixtures a test module of faults on S3 uses: ``s3_proxy`` (one proxy named
    ``name`` per module, in front of the session's S3 server) and ``proxy`` (that proxy
    with no faults scripted and its counters zeroed around each test). Assign both at
    module level: ``s3_proxy, proxy = proxy_fixtures("s3")``."""
    import pytest

    @pytest.fixture(scope="module")
    def s3_proxy(s3_server):
        started = FaultProxy(upstream_of(s3_server), name=name).start()
        yield started
        started.stop()

    @pytest.fixture
    def proxy(s3_proxy):
        s3_proxy.clear()
        s3_proxy.reset_counts()
        yield s3_proxy
        s3_proxy.clear()

    return s3_proxy, proxy
