"""Range reads under network faults: Parquet checkpoints, v2 checkpoint sidecars,
deletion vector files and data files read from S3 through the fault proxy
(:mod:`faults`). A GET that returns fewer bytes than asked (half the body behind a
matching ``Content-Length``: ``short_body``; a body cut off by a closed connection:
``truncate``) is read again and the rows are exactly those read without the proxy, or,
when every answer is short, the read is refused with :class:`StoreFaultError` naming
the store and the path: never wrong rows, never a pyarrow or deletion vector error."""

from __future__ import annotations

import logging
import uuid

import pytest
from conftest import table_path
from faults import Fault, FaultProxy, proxied, proxy_fixtures, upstream_of
from table_files import read_rows

from delta_pyds.errors import StoreFaultError
from delta_pyds.storage.store import Storage
from delta_pyds.table.snapshot import Snapshot

QUICK = {"backoff_config.init_backoff": "0.01", "backoff_config.max_backoff": "0.05"}

s3_proxy, proxy = proxy_fixtures("s3-ranges")

# (test table, what the faults hit: a regular expression on the GET's path)
TARGETS = {
    "checkpoint": ("delta-rs/simple_table_with_checkpoint", r"_delta_log/\d{20}\.checkpoint\.parquet"),
    "sidecar": ("delta-rs/checkpoint-v2-table", r"_delta_log/_sidecars/.*\.parquet"),
    "deletion-vector": ("delta-rs/table-with-dv-small", r"/deletion_vector_[^/]*\.bin"),
    "data-file": ("delta-rs/table-with-dv-small", r"/part-[^/]*\.parquet"),
}

# the same GETs on GCS: object names quoted in the path, the bytes' GETs with alt=media
GCS_TARGETS = {
    "checkpoint": r"_delta_log%2F\d{20}\.checkpoint\.parquet\?.*alt=media",
    "data-file": r"%2Fpart-[^?]*\.parquet\?.*alt=media",
    "deletion-vector": r"%2Fdeletion_vector_[^?]*\.bin\?.*alt=media",
}

_uploaded: dict[str, str] = {}


def _table(server, name: str) -> str:
    """The test table ``name`` uploaded once per session and store (read-only here)."""
    key = f"{server.kind}:{name}"
    if key not in _uploaded:
        _uploaded[key] = server.upload_dir(table_path(name), f"ranges-{uuid.uuid4().hex[:8]}")
    return _uploaded[key]


def _options(server, proxy, **extra) -> dict:
    return {**proxied(server, proxy), **QUICK, "skip_instance_cache": True, **extra}


def _rows(url: str, options: dict) -> list:
    table = read_rows(url, options=options)
    return sorted(tuple(r.values()) for r in table.to_pylist())


@pytest.mark.parametrize("kind", ["short_body", "truncate"])
@pytest.mark.parametrize("target", sorted(TARGETS))
def test_a_short_range_read_is_read_again(s3_server, proxy, target, kind, caplog):
    name, path = TARGETS[target]
    url = _table(s3_server, name)
    want = _rows(url, {**s3_server.options, "skip_instance_cache": True})
    assert want
    proxy.add(Fault(kind, method="GET", path=path, count=2))
    with caplog.at_level(logging.WARNING, logger="delta_pyds.storage"):
        assert _rows(url, _options(s3_server, proxy)) == want
    assert proxy.counts[kind] == 2, (proxy.counts, proxy.requests)
    if kind == "short_body":  # nothing in the client notices: pydelta's check does, and says so
        assert url.split("://", 1)[1] in caplog.text


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_every_range_read_short_is_refused_naming_store_and_path(s3_server, proxy, target):
    name, path = TARGETS[target]
    url = _table(s3_server, name)
    proxy.add(Fault("short_body", method="GET", path=path, count=-1))
    with pytest.raises(StoreFaultError, match="short read") as info:
        _rows(url, _options(s3_server, proxy, max_retries="1"))
    assert proxy.endpoint in str(info.value) and url.split("://", 1)[1] in str(info.value)


def test_read_range_returns_the_end_of_an_object_without_a_fault(s3_server):
    """A range past the end of the object is short by right (no retry, no error)."""
    storage = Storage(s3_server.url(f"ranges-{uuid.uuid4().hex[:8]}"), {**s3_server.options, **QUICK})
    path = storage.join("blob.bin")
    storage.write_bytes(path, b"0123456789")
    assert storage.read_range(path, 4, 100) == b"456789"
    assert storage.read_range(path, 2, 3) == b"234"
    with storage.open_input(path) as f:
        f.seek(-3, 2)
        assert f.read(10) == b"789" and f.read(10) == b"" and f.tell() == 10
        f.seek(0)
        assert f.read() == b"0123456789"


def test_snapshot_through_a_short_checkpoint_matches_the_direct_one(s3_server, proxy):
    name, path = TARGETS["checkpoint"]
    url = _table(s3_server, name)
    direct = Snapshot.load(url, options={**s3_server.options, "skip_instance_cache": True})
    proxy.add(Fault("short_body", method="GET", path=path, count=1))
    faulty = Snapshot.load(url, options=_options(s3_server, proxy))
    assert proxy.counts["short_body"] == 1
    assert sorted(faulty.files.column("path").to_pylist()) == sorted(direct.files.column("path").to_pylist())


# the servers come through request.getfixturevalue, which the conftest's marker hook cannot see
pytestmark = pytest.mark.objectstore


@pytest.fixture(scope="module", params=["azure", "gcs"])
def other_store(request):
    server = request.getfixturevalue(f"{request.param}_server")
    started = FaultProxy(upstream_of(server), name=f"{request.param}-ranges", flavor=request.param).start()
    yield server, started
    started.stop()


@pytest.mark.parametrize("target", ["checkpoint", "data-file", "deletion-vector"])
def test_a_short_range_read_on_azure_and_gcs(other_store, target):
    """The same on Azure (its client also compares the body with Content-Range) and GCS
    (object names quoted in the path: the range GETs carry ``alt=media``)."""
    server, proxy = other_store
    proxy.clear()
    proxy.reset_counts()
    name, path = TARGETS[target]
    if server.kind == "gcs":  # GCS_TARGETS: names quoted
        path = GCS_TARGETS[target]
    url = _table(server, name)
    want = _rows(url, {**server.options, "skip_instance_cache": True})
    proxy.add(Fault("short_body", method="GET", path=path, count=2))
    assert _rows(url, _options(server, proxy)) == want
    assert proxy.counts["short_body"] == 2, proxy.requests
    proxy.clear()
    proxy.add(Fault("short_body", method="GET", path=path, count=-1))
    with pytest.raises(StoreFaultError):
        _rows(url, _options(server, proxy, max_retries="1"))
    proxy.clear()
