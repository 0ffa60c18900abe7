"""Storage under network faults: a fault-injecting proxy (:mod:`faults`) in front of each
local object store (S3: SeaweedFS, Azure: Azurite, GCS: fake-gcs-server), one fault kind
per test, each test on every store (errors in the store's own shape). Commits are never lost or
duplicated (a commit PUT whose response was lost is recognised as ours), no read returns
a body cut short, retries are bounded, and when they run out a StoreFaultError names the
store, the path and the fault."""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass
from typing import Any

import pytest
from faults import Fault, FaultProxy, proxied, upstream_of

from delta_pyds.errors import StoreFaultError
from delta_pyds.storage.store import Storage

BODY = b'{"commitInfo":{"n":1}}\n' * 40  # 920 bytes
QUICK = {"backoff_config.init_backoff": "0.01", "backoff_config.max_backoff": "0.05"}

# the statuses each store's client retries, in that store's own error shape (Azure's
# client does not retry 429: a throttled Azure account answers 503 ServerBusy)
STATUSES = {"s3": (503, 500, 429), "azure": (503, 500), "gcs": (503, 500, 429)}
FAULT_NAMES = {"s3": "503 SlowDown", "azure": "503", "gcs": "503"}


@dataclass
class Case:
    """One store behind its proxy, and how its requests look there."""

    server: Any
    proxy: FaultProxy

    @property
    def kind(self) -> str:
        return self.server.kind

    def name(self, regex: str) -> str:
        """``regex`` of an object name as it appears in a request target (GCS quotes
        the ``/`` in object names)."""
        return regex.replace("/", "(/|%2F)") if self.kind == "gcs" else regex

    def get(self, regex: str) -> dict:
        """Fault fields matching the GETs of an object's bytes (not GCS's metadata GETs)."""
        path = self.name(regex) + (r".*alt=media" if self.kind == "gcs" else "")
        return {"method": "GET", "path": path}

    def put(self, regex: str) -> dict:
        """Fault fields matching the upload of an object (GCS: a POST naming it in the body)."""
        if self.kind == "gcs":
            return {"method": "POST", "path": r"uploadType"}
        return {"method": "PUT", "path": regex}

    def uploads(self) -> int:
        return sum(1 for m, t in self.proxy.requests if (m == "PUT" and "_delta_log" in t) or "uploadType" in t)


# the servers come through request.getfixturevalue, which the conftest's marker hook cannot see
pytestmark = pytest.mark.objectstore


@pytest.fixture(scope="module", params=["s3", "azure", "gcs"])
def store_proxy(request):
    server = request.getfixturevalue(f"{request.param}_server")
    started = FaultProxy(upstream_of(server), name=f"{request.param}-kinds", flavor=request.param).start()
    yield server, started
    started.stop()


@pytest.fixture
def case(store_proxy):
    server, proxy = store_proxy
    proxy.clear()
    proxy.reset_counts()
    yield Case(server, proxy)
    proxy.clear()


def storage_via(server, proxy, **extra) -> Storage:
    root = server.url(f"faults-{uuid.uuid4().hex[:8]}")
    return Storage(root, {**proxied(server, proxy), "skip_instance_cache": True, **QUICK, **extra})


def commit(storage: Storage, v: int) -> str:
    return storage.join("_delta_log", f"{v:020d}.json")


def direct(server, storage: Storage) -> Storage:
    """The same table, not through the proxy."""
    return Storage(storage.root, {**server.options, "skip_instance_cache": True})


def prepare(storage: Storage) -> None:
    if storage.atomic_create == "s3":
        storage._check_conditional_put()  # its probe PUT must not take the scripted faults


def test_status_codes_on_commit_put_and_get_are_retried(case, caplog):
    # S3 with max_retries: botocore's standard mode, which does not retry 429 itself
    runs = [(status, {}) for status in STATUSES[case.kind]]
    runs += [(429, {"max_retries": "2"})] if case.kind == "s3" else []
    for status, extra in runs:
        storage = storage_via(case.server, case.proxy, **extra)
        prepare(storage)
        case.proxy.reset_counts()
        case.proxy.add(Fault("status", **case.put(r"_delta_log/0+\.json"), status=status, count=2))
        storage.put_if_absent(commit(storage, 0), BODY)
        case.proxy.clear()
        case.proxy.add(Fault("status", **case.get(r"_delta_log/0+\.json"), status=status, count=2))
        with caplog.at_level(logging.WARNING, logger="delta_pyds.storage"):
            assert storage.read_bytes(commit(storage, 0), size=len(BODY)) == BODY
        case.proxy.clear()
        assert case.proxy.counts["status"] == 4, (status, case.proxy.injected)
        # the client's retries, logged by pydelta (S3: botocore's needs-retry event)
        assert "retries GET" in caplog.text and f"HTTP {status}" in caplog.text, caplog.text
        caplog.clear()
        names = [e.name for e in direct(case.server, storage).list_dir(storage.join("_delta_log"))]
        assert names == [f"{0:020d}.json"], status


def test_reset_in_the_middle_of_a_commit_put(case):
    storage = storage_via(case.server, case.proxy)
    prepare(storage)
    case.proxy.add(Fault("reset_request", **case.put(r"_delta_log/"), after_bytes=300))
    storage.put_if_absent(commit(storage, 0), BODY)
    assert case.proxy.counts["reset_request"] == 1
    assert direct(case.server, storage).read_bytes(commit(storage, 0)) == BODY


def test_lost_response_of_a_commit_put_is_recognised_as_ours(case):
    """The PUT is applied, its response lost; the client's retry gets 412; the commit is
    ours (same bytes), once."""
    storage = storage_via(case.server, case.proxy)
    prepare(storage)
    case.proxy.add(Fault("lost_response", **case.put(r"_delta_log/0+\.json")))
    storage.put_if_absent(commit(storage, 0), BODY)
    assert case.proxy.counts["lost_response"] == 1
    assert case.uploads() >= 2
    entries = direct(case.server, storage).list_dir(storage.join("_delta_log"))
    assert [(e.name, e.size) for e in entries] == [(f"{0:020d}.json", len(BODY))]
    # another writer's commit with a lost response... is not ours
    other = direct(case.server, storage)
    other.put_if_absent(commit(other, 1), b"theirs\n")
    case.proxy.add(Fault("lost_response", **case.put(r"_delta_log/0+1\.json")))
    with pytest.raises(FileExistsError):
        storage.put_if_absent(commit(storage, 1), BODY)


@pytest.mark.parametrize("kind", ["reset_response", "truncate"])
def test_response_cut_short_is_retried(case, kind):
    storage = storage_via(case.server, case.proxy)
    storage.write_bytes(commit(storage, 0), BODY)
    case.proxy.add(Fault(kind, **case.get(r"_delta_log/0+\.json"), after_bytes=120))
    assert storage.read_bytes(commit(storage, 0), size=len(BODY)) == BODY
    assert case.proxy.counts[kind] == 1


def test_metadata_response_cut_short_is_retried(case):
    """The answer to an object's metadata request (S3 and Azure: a HEAD; GCS: a GET of
    its JSON metadata) cut short, also behind a matching Content-Length: read again,
    never a parse error (GCS soak: 13 reads failed with JSONDecodeError before)."""
    storage = storage_via(case.server, case.proxy)
    storage.write_bytes(commit(storage, 0), BODY)
    if case.kind == "gcs":  # its JSON, half of it behind a matching Content-Length
        kind, meta = "short_body", {"method": "GET", "path": case.name(r"_delta_log/0+\.json") + r"(?!.*alt=media)"}
    else:
        kind, meta = "truncate", {"method": "HEAD", "path": r"_delta_log/0+\.json"}
    case.proxy.add(Fault(kind, **meta, count=1))
    assert storage.info(commit(storage, 0)).size == len(BODY)
    assert case.proxy.counts[kind] == 1


def test_short_body_behind_a_matching_content_length_is_never_returned(case, caplog):
    """Half the commit with a Content-Length that matches it (and no checksum): only the
    listing's size tells; the read is retried (and logged), then refused, never short."""
    storage = storage_via(case.server, case.proxy, max_retries="2")
    storage.write_bytes(commit(storage, 0), BODY)
    storage.write_bytes(commit(storage, 1), BODY)
    size = storage.list_dir(storage.join("_delta_log"))[0].size
    case.proxy.add(Fault("short_body", **case.get(r"_delta_log/0+\.json")))
    with caplog.at_level(logging.WARNING, logger="delta_pyds.storage"):
        assert storage.read_bytes(commit(storage, 0), size=size) == BODY
    if case.kind == "azure":  # its client compares the body with Content-Range, and reads again
        assert len(case.proxy.requests) >= 2
    else:  # only the listing's size tells
        assert "short read" in caplog.text and "retry 1 of 2" in caplog.text
    case.proxy.add(Fault("short_body", **case.get(r"_delta_log/0+1\.json")))
    assert storage.read_many([commit(storage, 0), commit(storage, 1)], sizes=[size, size]) == [BODY, BODY]
    case.proxy.add(Fault("short_body", **case.get(r"_delta_log/0+\.json")))
    assert storage.read_many([commit(storage, 0)], sizes=[size]) == [BODY]  # one file: same check
    case.proxy.add(Fault("short_body", **case.get(r"_delta_log/0+\.json"), count=-1))
    with pytest.raises(StoreFaultError, match="short read|truncated") as info:
        storage.read_bytes(commit(storage, 0), size=size)
    assert commit(storage, 0) in str(info.value) and case.proxy.endpoint in str(info.value)
    assert "3 attempt(s)" in str(info.value)


def test_retries_run_out_with_an_error_naming_store_path_and_fault(case):
    storage = storage_via(case.server, case.proxy, max_retries="1")
    storage.write_bytes(commit(storage, 0), BODY)
    case.proxy.add(Fault("status", **case.get(r"_delta_log/0+\.json"), status=503, count=-1))
    with pytest.raises(StoreFaultError) as info:
        storage.read_bytes(commit(storage, 0), size=len(BODY))
    text = str(info.value)
    assert case.proxy.endpoint in text and commit(storage, 0) in text and FAULT_NAMES[case.kind] in text
    for k, v in case.server.options.items():
        if "secret" in k or "key" in k.lower():
            assert str(v) not in text
    # bounded: S3, botocore (2 attempts) inside s3fs's retries (measured: 6 requests; 25
    # with the clients' defaults); Azure and GCS: 2 attempts
    assert 2 <= case.proxy.counts["status"] <= (8 if case.kind == "s3" else 2)


def test_slow_store_with_a_timeout(case):
    patient = storage_via(case.server, case.proxy)
    patient.write_bytes(commit(patient, 0), BODY)
    case.proxy.add(Fault("latency", **case.get(r"_delta_log/0+\.json"), delay=1.0))
    assert patient.read_bytes(commit(patient, 0), size=len(BODY)) == BODY
    # Azure's timeouts are whole seconds (0.3 -> 1 s)
    hasty = Storage(patient.root, {**proxied(case.server, case.proxy), "timeout": "0.3", "max_retries": "0"})
    case.proxy.add(Fault("latency", **case.get(r"_delta_log/0+\.json"), delay=2.0, count=-1))
    with pytest.raises(StoreFaultError, match="timeout|connection"):
        hasty.read_bytes(commit(hasty, 0), size=len(BODY))


def test_bad_retry_options_name_the_option(s3_server):
    with pytest.raises(ValueError, match="max_retries"):
        Storage(s3_server.url("x"), {**s3_server.options, "max_retries": "-1"})
    with pytest.raises(ValueError, match="backoff_config.init_backoff"):
        Storage(s3_server.url("x"), {**s3_server.options, "backoff_config.init_backoff": "soon"})


@pytest.mark.parametrize("read_fault", ["short_body", "status"])
def test_lost_response_then_a_faulty_read_back_is_still_ours(case, read_fault):
    """The commit PUT lands, its response is lost, the retry gets 412, and the read back
    of the object is cut short or throttled: still ours, never a lost race (a writer told
    'lost race' would retry on top of its own commit)."""
    storage = storage_via(case.server, case.proxy)
    prepare(storage)
    case.proxy.add(
        Fault("lost_response", **case.put(r"_delta_log/0+\.json")),
        Fault(read_fault, **case.get(r"_delta_log/0+\.json"), status=503, count=1),
    )
    storage.put_if_absent(commit(storage, 0), BODY)
    assert case.proxy.counts["lost_response"] == 1 and case.proxy.counts[read_fault] == 1
    assert direct(case.server, storage).read_bytes(commit(storage, 0)) == BODY


def test_retry_options_reach_the_clients():
    s3 = Storage("s3://b/t", {"anon": "true", "max_retries": "2", "timeout": "7", "connect_timeout": "3"})
    assert s3.retry.max_retries == 2 and s3.fs.retries == 3
    config = s3.fs.config_kwargs
    assert config["retries"] == {"max_attempts": 3, "mode": "standard"}
    assert config["read_timeout"] == 7 and config["connect_timeout"] == 3
    az = Storage(
        "az://c/t", {"account_name": "devstoreaccount1", "anon": "true", "Timeout": "9", "connectTimeout": "4"}
    )
    assert az.fs._timeout_kwargs == {"read_timeout": 9, "connection_timeout": 4}
    assert Storage("s3://b/t", {"anon": "true"}).retry.max_retries == 3  # the default
    # Azure: the blob client's retry policy, pydelta's count and backoff (not 15 s + 3^n s)
    az = Storage("az://c/t", {"account_name": "devstoreaccount1", "anon": "true", "max_retries": "5"})
    policy = az.fs.service_client._config.retry_policy
    assert policy.total_retries == policy.status_retries == 5
    assert 0.05 <= policy.get_backoff_time({"count": 1, "history": []}) <= 0.1
    # GCS: aiohttp's socket timeouts, and gcsfs's requests retried by pydelta
    gs = Storage("gs://b/t", {"token": "anon", "timeout": "7", "connect_timeout": "3", "max_retries": "1"})
    timeout = gs.fs.requests_timeout
    assert (timeout.sock_read, timeout.sock_connect) == (7, 3)
    assert "_request" in vars(gs.fs)
