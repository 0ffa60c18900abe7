"""Storage against real local servers: SeaweedFS (S3), Azurite (Azure Blob),
fake-gcs-server (GCS). Commits must be atomic create-if-absent: in every race exactly
one writer wins each version, and concurrent committers lose no commit."""

from __future__ import annotations

import errno
import multiprocessing
import uuid

import pytest
from test_storage import assert_one_winner, commit_path, process_race, race

from delta_pyds.errors import CommitFailedError
from delta_pyds.storage.store import Storage

WRITERS = 8
# SeaweedFS serialises contended conditional PUTs to one key with ~1 s waits
VERSIONS = {"s3": 12, "azure": 25, "gcs": 25}


def fresh_root(server) -> str:
    return server.url(f"race-{uuid.uuid4().hex[:8]}")


def test_storage_operations(object_store):
    root = fresh_root(object_store)
    storage = Storage(root, object_store.options)
    assert storage.atomic_create == object_store.kind
    storage.check_commits_supported()
    log = storage.join("_delta_log")
    assert storage.list_dir(log) == []
    storage.put_if_absent(commit_path(storage, 1), b'{"b": 1}\n')
    storage.put_if_absent(commit_path(storage, 0), b'{"a": 0}\n')
    with pytest.raises(FileExistsError):
        storage.put_if_absent(commit_path(storage, 0), b'{"other": 0}\n')
    assert storage.read_bytes(commit_path(storage, 0)) == b'{"a": 0}\n'
    storage.write_bytes(storage.join("part-0.parquet"), b"0123456789")
    entries = storage.list_dir(log)
    assert [e.name for e in entries] == [f"{0:020d}.json", f"{1:020d}.json"]
    assert [e.size for e in entries] == [9, 9]
    assert all(e.modification_time > 1_600_000_000_000 for e in entries)
    assert storage.read_range(storage.join("part-0.parquet"), 2, 3) == b"234"
    assert storage.read_many([commit_path(storage, 1), commit_path(storage, 0)]) == [b'{"b": 1}\n', b'{"a": 0}\n']
    with storage.open_input(storage.join("part-0.parquet")) as f:
        f.seek(8)
        assert f.read() == b"89"
    storage.delete(commit_path(storage, 1))
    storage.delete(commit_path(storage, 1))  # missing: no error
    assert [e.name for e in storage.list_dir(log)] == [f"{0:020d}.json"]


def test_listing_sees_other_writers_commits(object_store):
    """list_dir never answers from fsspec's listing cache."""
    root = fresh_root(object_store)
    reader = Storage(root, object_store.options)
    writer = Storage(root, {**object_store.options, "skip_instance_cache": True})
    log = reader.join("_delta_log")
    writer.put_if_absent(commit_path(writer, 0), b"0")
    assert len(reader.list_dir(log)) == 1
    writer.put_if_absent(commit_path(writer, 1), b"1")
    assert len(reader.list_dir(log)) == 2


def test_race_threads_one_winner_per_version(object_store):
    """WRITERS clients (separate filesystem instances) create each version at once."""
    root = fresh_root(object_store)
    storages = [Storage(root, {**object_store.options, "skip_instance_cache": True}) for _ in range(WRITERS)]
    wins = race(storages, VERSIONS[object_store.kind], commit_path)
    assert_one_winner(Storage(root, object_store.options), wins)


def test_race_processes_one_winner_per_version(object_store):
    root = fresh_root(object_store)
    wins = process_race(root, object_store.options, writers=4, versions=8)
    assert_one_winner(Storage(root, object_store.options), wins)


def _committer(root, options, wid, commits, queue):
    """Commits ``commits`` times: list the log, try the next version, retry on a
    lost race (what a transaction does, minus conflict checks)."""
    storage = Storage(root, options)
    log = storage.join("_delta_log")
    mine, lost = [], 0
    while len(mine) < commits:
        versions = [int(e.name[:20]) for e in storage.list_dir(log) if e.name.endswith(".json")]
        v = max(versions) + 1 if versions else 0
        try:
            storage.put_if_absent(commit_path(storage, v), f"{wid}:{len(mine)}".encode())
            mine.append(v)
        except FileExistsError:
            lost += 1
    queue.put((wid, mine, lost))


def test_concurrent_committers_lose_no_commit(object_store):
    writers, commits = 4, 6
    root = fresh_root(object_store)
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    procs = [
        ctx.Process(target=_committer, args=(root, object_store.options, w, commits, queue)) for w in range(writers)
    ]
    for p in procs:
        p.start()
    results = [queue.get(timeout=240) for _ in procs]
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    storage = Storage(root, object_store.options)
    names = [e.name for e in storage.list_dir(storage.join("_delta_log"))]
    assert names == [f"{v:020d}.json" for v in range(writers * commits)]
    contents = {storage.read_bytes(commit_path(storage, v)).decode() for v in range(writers * commits)}
    assert contents == {f"{w}:{k}" for w in range(writers) for k in range(commits)}
    claimed = sorted(v for _, mine, _ in results for v in mine)
    assert claimed == list(range(writers * commits))


# ----------------------------------------------------------------------- S3 only


def test_s3_lost_race_412_is_einval_in_s3fs_and_file_exists_here(s3_server):
    """SeaweedFS answers a lost conditional PUT with 412 PreconditionFailed without the
    Condition field, which s3fs raises as OSError(EINVAL); Storage maps it."""
    root = fresh_root(s3_server)
    storage = Storage(root, s3_server.options)
    path = commit_path(storage, 0)
    storage.put_if_absent(path, b"mine")
    with pytest.raises(OSError) as raw:
        storage.fs.pipe_file(path, b"theirs", mode="create")
    assert not isinstance(raw.value, FileExistsError) and raw.value.errno == errno.EINVAL
    with pytest.raises(FileExistsError):
        storage.put_if_absent(path, b"theirs")
    assert storage.read_bytes(path) == b"mine"


def test_s3_retried_put_of_our_own_commit_is_success(s3_server, monkeypatch):
    """A client retry of a conditional PUT whose first attempt succeeded gets 412:
    the commit is ours when the object holds exactly our bytes."""
    storage = Storage(fresh_root(s3_server), s3_server.options)
    storage._check_conditional_put()  # the once-per-bucket probe, before the patch
    path = commit_path(storage, 0)
    real = storage._conditional_create

    def lost_response(kind, p, data):
        real(kind, p, data)  # the PUT succeeds, its response is lost,
        real(kind, p, data)  # the retry fails with 412

    monkeypatch.setattr(storage, "_conditional_create", lost_response)
    storage.put_if_absent(path, b"ours")
    assert storage.read_bytes(path) == b"ours"


def test_s3_server_ignoring_if_none_match_is_refused(s3_server, monkeypatch):
    from delta_pyds.storage import put_if_absent

    monkeypatch.setattr(put_if_absent, "CONDITIONAL_PUT_CHECKED", {})
    storage = Storage(fresh_root(s3_server), s3_server.options)

    def unconditional(kind, path, data):  # a server that ignores If-None-Match
        storage.fs.pipe_file(path, data)

    monkeypatch.setattr(storage, "_conditional_create", unconditional)
    with pytest.raises(CommitFailedError, match="ignores conditional writes"):
        storage.put_if_absent(commit_path(storage, 0), b"x")
    assert storage.list_dir(storage.join("_delta_log")) == []
    assert not [e for e in storage.list_dir(storage.root) if "probe" in e.name]  # probe removed


def test_s3_conditional_put_probe_outcomes(s3_server, monkeypatch, caplog):
    """The probe's three outcomes: the server honours If-None-Match (checked once per
    bucket), ignores it with allowUnsafeCommits (a warning, then checked), or the probe
    itself fails (refused, its error named)."""
    from delta_pyds.storage import put_if_absent

    checked: dict = {}
    monkeypatch.setattr(put_if_absent, "CONDITIONAL_PUT_CHECKED", checked)
    storage = Storage(fresh_root(s3_server), s3_server.options)
    root = storage.root
    check = put_if_absent.check_conditional_put
    check(storage.fs, root, s3_server.options, allow_unsafe_commits=False, create=storage._conditional_create)
    assert list(checked.values()) == [True]
    checked.clear()

    def unconditional(kind, path, data):
        storage.fs.pipe_file(path, data)

    check(storage.fs, root, s3_server.options, allow_unsafe_commits=True, create=unconditional)
    assert list(checked.values()) == [True] and "ignores If-None-Match" in caplog.text
    checked.clear()

    def broken(kind, path, data):
        raise PermissionError("no write access")

    with pytest.raises(CommitFailedError, match="failed: PermissionError: no write access"):
        check(storage.fs, root, s3_server.options, allow_unsafe_commits=True, create=broken)
    assert checked == {}
    assert not [e for e in storage.list_dir(root) if "probe" in e.name]  # probes removed


def test_s3_wrong_secret_error_does_not_show_it(s3_server, caplog):
    secret = "wrong-secret-" + uuid.uuid4().hex
    options = {**s3_server.options, "secret": secret, "skip_instance_cache": True}
    storage = Storage(fresh_root(s3_server), options)
    with pytest.raises(Exception) as info:
        storage.put_if_absent(commit_path(storage, 0), b"x")
    chain, e = [], info.value
    while e is not None:
        chain.append(f"{type(e).__name__}: {e}")
        e = e.__cause__ or e.__context__
    text = "\n".join(chain) + repr(storage) + caplog.text
    assert secret not in text and s3_server.options["secret"] not in text


def test_listing_after_a_name_is_the_listing_filtered(object_store):
    """Storage.list_dir_after: on S3 a StartAfter listing, elsewhere the whole directory
    filtered; either way the entries list_dir gives, named after the given name."""
    root = fresh_root(object_store)
    storage = Storage(root, object_store.options)
    log = storage.join("_delta_log")
    for v in range(4):
        storage.put_if_absent(commit_path(storage, v), b"x")
    storage.write_bytes(storage.join("_delta_log", f"{2:020d}.checkpoint.parquet"), b"cp")
    storage.write_bytes(storage.join("_delta_log", "_sidecars", "a.parquet"), b"s")  # a subdirectory: not listed
    whole = storage.list_dir(log)
    assert len(whole) == 5
    for after in ("", f"{0:020d}", f"{2:020d}", f"{2:020d}.json", f"{3:020d}.json", "z"):
        assert storage.list_dir_after(log, after) == [e for e in whole if e.name > after]
    assert storage.list_dir_after(storage.join("missing"), "") == []
