"""Storage under network faults: a fault-injecting proxy (:mod:`faults`) in front of the
local S3 server (SeaweedFS), one fault kind per test. Commits are never lost or
duplicated (a commit PUT whose response was lost is recognised as ours), no read returns
a body cut short, retries are bounded, and when they run out a StoreFaultError names the
store, the path and the fault."""

from __future__ import annotations

import logging
import uuid

import pytest
from faults import Fault, FaultProxy, proxied, proxy_fixtures, upstream_of

from delta_pyds.errors import StoreFaultError
from delta_pyds.storage.store import Storage

BODY = b'{"commitInfo":{"n":1}}\n' * 40  # 920 bytes
QUICK = {"backoff_config.init_backoff": "0.01", "backoff_config.max_backoff": "0.05"}


s3_proxy, proxy = proxy_fixtures("s3")


def storage_via(server, proxy, **extra) -> Storage:
    root = server.url(f"faults-{uuid.uuid4().hex[:8]}")
    return Storage(root, {**proxied(server, proxy), "skip_instance_cache": True, **QUICK, **extra})


def commit(storage: Storage, v: int) -> str:
    return storage.join("_delta_log", f"{v:020d}.json")


def direct(server, storage: Storage) -> Storage:
    """The same table, not through the proxy."""
    return Storage(storage.root, {**server.options, "skip_instance_cache": True})


@pytest.mark.parametrize("status", [503, 500, 429])
def test_status_codes_on_commit_put_and_get_are_retried(s3_server, proxy, status):
    storage = storage_via(s3_server, proxy)
    storage._check_conditional_put()
    proxy.add(Fault("status", method="PUT", path=r"_delta_log/0+\.json", status=status, count=2))
    storage.put_if_absent(commit(storage, 0), BODY)
    proxy.add(Fault("status", method="GET", path=r"_delta_log/0+\.json", status=status, count=2))
    assert storage.read_bytes(commit(storage, 0), size=len(BODY)) == BODY
    assert proxy.counts["status"] == 4
    assert [e.name for e in direct(s3_server, storage).list_dir(storage.join("_delta_log"))] == [f"{0:020d}.json"]


def test_reset_in_the_middle_of_a_commit_put(s3_server, proxy):
    storage = storage_via(s3_server, proxy)
    storage._check_conditional_put()
    proxy.add(Fault("reset_request", method="PUT", path=r"_delta_log/", after_bytes=300))
    storage.put_if_absent(commit(storage, 0), BODY)
    assert proxy.counts["reset_request"] == 1
    assert direct(s3_server, storage).read_bytes(commit(storage, 0)) == BODY


def test_lost_response_of_a_commit_put_is_recognised_as_ours(s3_server, proxy):
    """The PUT is applied, its response lost; the client's retry gets 412; the commit is
    ours (same bytes), once."""
    storage = storage_via(s3_server, proxy)
    storage._check_conditional_put()
    proxy.add(Fault("lost_response", method="PUT", path=r"_delta_log/0+\.json"))
    storage.put_if_absent(commit(storage, 0), BODY)
    assert proxy.counts["lost_response"] == 1
    assert sum(1 for m, t in proxy.requests if m == "PUT" and "_delta_log" in t) >= 2
    entries = direct(s3_server, storage).list_dir(storage.join("_delta_log"))
    assert [(e.name, e.size) for e in entries] == [(f"{0:020d}.json", len(BODY))]
    # another writer's commit with a lost response... is not ours
    proxy.add(Fault("lost_response", method="PUT", path=r"_delta_log/0+1\.json"))
    other = direct(s3_server, storage)
    other.put_if_absent(commit(other, 1), b"theirs\n")
    with pytest.raises(FileExistsError):
        storage.put_if_absent(commit(storage, 1), BODY)


@pytest.mark.parametrize("kind", ["reset_response", "truncate"])
def test_response_cut_short_is_retried(s3_server, proxy, kind):
    storage = storage_via(s3_server, proxy)
    storage.write_bytes(commit(storage, 0), BODY)
    proxy.add(Fault(kind, method="GET", path=r"_delta_log/0+\.json", after_bytes=120))
    assert storage.read_bytes(commit(storage, 0), size=len(BODY)) == BODY
    assert proxy.counts[kind] == 1


def test_short_body_behind_a_matching_content_length_is_never_returned(s3_server, proxy, caplog):
    """Half the commit with a Content-Length that matches it (and no checksum): only the
    listing's size tells; the read is retried (and logged), then refused, never short."""
    storage = storage_via(s3_server, proxy, max_retries="2")
    storage.write_bytes(commit(storage, 0), BODY)
    storage.write_bytes(commit(storage, 1), BODY)
    size = storage.list_dir(storage.join("_delta_log"))[0].size
    proxy.add(Fault("short_body", method="GET", path=r"_delta_log/0+\.json"))
    with caplog.at_level(logging.WARNING, logger="delta_pyds.storage.retry"):
        assert storage.read_bytes(commit(storage, 0), size=size) == BODY
    assert "short read" in caplog.text and "retry 1 of 2" in caplog.text
    proxy.add(Fault("short_body", method="GET", path=r"_delta_log/0+1\.json"))
    assert storage.read_many([commit(storage, 0), commit(storage, 1)], sizes=[size, size]) == [BODY, BODY]
    proxy.add(Fault("short_body", method="GET", path=r"_delta_log/0+\.json"))
    assert storage.read_many([commit(storage, 0)], sizes=[size]) == [BODY]  # one file: same check
    proxy.add(Fault("short_body", method="GET", path=r"_delta_log/0+\.json", count=-1))
    with pytest.raises(StoreFaultError, match="short read") as info:
        storage.read_bytes(commit(storage, 0), size=size)
    assert commit(storage, 0) in str(info.value) and proxy.endpoint in str(info.value)
    assert "3 attempt(s)" in str(info.value)


def test_retries_run_out_with_an_error_naming_store_path_and_fault(s3_server, proxy):
    storage = storage_via(s3_server, proxy, max_retries="1")
    storage.write_bytes(commit(storage, 0), BODY)
    proxy.add(Fault("status", method="GET", path=r"_delta_log/0+\.json", status=503, count=-1))
    with pytest.raises(StoreFaultError) as info:
        storage.read_bytes(commit(storage, 0), size=len(BODY))
    text = str(info.value)
    assert proxy.endpoint in text and commit(storage, 0) in text and "503 SlowDown" in text
    assert s3_server.options["secret"] not in text
    # bounded: botocore (2 attempts) inside s3fs's retries (measured: 6 requests; 25
    # with the clients' defaults)
    assert 2 <= proxy.counts["status"] <= 8


def test_slow_store_with_a_timeout(s3_server, proxy):
    patient = storage_via(s3_server, proxy)
    patient.write_bytes(commit(patient, 0), BODY)
    proxy.add(Fault("latency", method="GET", path=r"_delta_log/0+\.json", delay=1.0))
    assert patient.read_bytes(commit(patient, 0), size=len(BODY)) == BODY
    hasty = Storage(patient.root, {**patient.options, "timeout": "0.3", "max_retries": "0"})
    proxy.add(Fault("latency", method="GET", path=r"_delta_log/0+\.json", delay=2.0, count=-1))
    with pytest.raises(StoreFaultError, match="timeout|connection"):
        hasty.read_bytes(commit(hasty, 0), size=len(BODY))


def test_bad_retry_options_name_the_option(s3_server):
    with pytest.raises(ValueError, match="max_retries"):
        Storage(s3_server.url("x"), {**s3_server.options, "max_retries": "-1"})
    with pytest.raises(ValueError, match="backoff_config.init_backoff"):
        Storage(s3_server.url("x"), {**s3_server.options, "backoff_config.init_backoff": "soon"})


@pytest.mark.parametrize("read_fault", ["short_body", "status"])
def test_lost_response_then_a_faulty_read_back_is_still_ours(s3_server, proxy, read_fault):
    """The commit PUT lands, its response is lost, the retry gets 412, and the read back
    of the object is cut short or throttled: still ours, never a lost race (a writer told
    'lost race' would retry on top of its own commit)."""
    storage = storage_via(s3_server, proxy)
    storage._check_conditional_put()
    proxy.add(
        Fault("lost_response", method="PUT", path=r"_delta_log/0+\.json"),
        Fault(read_fault, method="GET", path=r"_delta_log/0+\.json", status=503, count=1),
    )
    storage.put_if_absent(commit(storage, 0), BODY)
    assert proxy.counts["lost_response"] == 1 and proxy.counts[read_fault] == 1
    assert direct(s3_server, storage).read_bytes(commit(storage, 0)) == BODY


# ------------------------------------------------------------- Azure Blob and GCS
@pytest.fixture(scope="module", params=["azure", "gcs"])
def other_store(request):
    server = request.getfixturevalue(f"{request.param}_server")
    proxy = FaultProxy(upstream_of(server), name=request.param).start()
    yield server, proxy
    proxy.stop()


def test_azure_and_gcs_through_the_proxy(other_store):
    """503s are retried by the clients, a body cut short behind a matching
    Content-Length is caught by the listing's size, a lost commit response is ours."""
    server, proxy = other_store
    proxy.clear()
    proxy.reset_counts()
    storage = storage_via(server, proxy)
    storage.put_if_absent(commit(storage, 0), BODY)
    size = storage.list_dir(storage.join("_delta_log"))[0].size
    proxy.add(Fault("status", method="GET", path=r"0+\.json", status=503, count=1))
    assert storage.read_bytes(commit(storage, 0), size=size) == BODY
    proxy.add(Fault("short_body", method="GET", path=r"0+\.json", count=1))
    assert storage.read_bytes(commit(storage, 0), size=size) == BODY
    upload = r"uploadType" if server.kind == "gcs" else r"0+1\.json"  # gcsfs: the name is in the body
    proxy.add(Fault("lost_response", method="PUT|POST", path=upload, count=1))
    storage.put_if_absent(commit(storage, 1), BODY)
    assert proxy.counts["status"] == 1 and proxy.counts["short_body"] == 1
    assert proxy.counts["lost_response"] == 1
    entries = direct(server, storage).list_dir(storage.join("_delta_log"))
    assert [(e.name, e.size) for e in entries] == [(f"{0:020d}.json", len(BODY)), (f"{1:020d}.json", len(BODY))]


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
