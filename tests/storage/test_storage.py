"""Storage without servers: atomic local commits under races, refusal of backends with
no atomic create, option mapping, lost-race detection, credential redaction."""

from __future__ import annotations

import errno
import multiprocessing
import os
import pickle
import threading

import fsspec
import pytest
from fsspec.spec import AbstractFileSystem

from delta_pyds.errors import CommitFailedError
from delta_pyds.storage.put_if_absent import is_precondition_failure
from delta_pyds.storage.store import Storage, filesystem_kwargs, is_secret_key, redact

# ------------------------------------------------------------------ helpers


def race(storages, versions: int, path_of) -> dict[int, list[int]]:
    """Every writer (one Storage each, one thread each) tries to create every version
    at the same moment; returns version -> ids of the writers that succeeded."""
    barrier = threading.Barrier(len(storages))
    wins: dict[int, list[int]] = {v: [] for v in range(versions)}
    errors = []
    lock = threading.Lock()

    def writer(wid, storage):
        for v in range(versions):
            barrier.wait()
            try:
                storage.put_if_absent(path_of(storage, v), f"writer {wid} version {v}\n".encode())
                with lock:
                    wins[v].append(wid)
            except FileExistsError:
                pass
            except BaseException as exc:  # noqa: BLE001
                errors.append(exc)
                barrier.abort()
                raise

    threads = [threading.Thread(target=writer, args=(i, s)) for i, s in enumerate(storages)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors
    return wins


def commit_path(storage, v):
    return storage.join("_delta_log", f"{v:020d}.json")


def _process_writer(root, options, wid, versions, barrier, queue):
    storage = Storage(root, options)
    won = []
    for v in range(versions):
        barrier.wait(60)
        try:
            storage.put_if_absent(commit_path(storage, v), f"writer {wid} version {v}\n".encode())
            won.append(v)
        except FileExistsError:
            pass
    queue.put((wid, won))


def process_race(root, options, writers: int, versions: int) -> dict[int, list[int]]:
    """Like :func:`race`, with one process per writer (spawned: no state shared)."""
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(writers)
    queue = ctx.Queue()
    procs = [
        ctx.Process(target=_process_writer, args=(root, options, w, versions, barrier, queue)) for w in range(writers)
    ]
    for p in procs:
        p.start()
    results = [queue.get(timeout=180) for _ in procs]
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    wins = {v: [] for v in range(versions)}
    for wid, won in results:
        for v in won:
            wins[v].append(wid)
    return wins


def assert_one_winner(storage, wins):
    for v, winners in wins.items():
        assert len(winners) == 1, f"version {v}: winners {winners}"
        assert storage.read_bytes(commit_path(storage, v)) == f"writer {winners[0]} version {v}\n".encode()


# ------------------------------------------------------------------ local disk


def test_local_put_if_absent_creates_once(tmp_path):
    storage = Storage(str(tmp_path / "t"))
    path = commit_path(storage, 0)
    storage.put_if_absent(path, b"first")
    with pytest.raises(FileExistsError):
        storage.put_if_absent(path, b"second")
    with pytest.raises(FileExistsError):
        storage.put_if_absent(path, b"first")  # even identical bytes: never rewritten
    assert storage.read_bytes(path) == b"first"
    # no temporary files left behind
    assert [e.name for e in storage.list_dir(storage.join("_delta_log"))] == [os.path.basename(path)]
    assert storage.atomic_create == "local"
    storage.check_commits_supported()


def test_local_race_threads_one_winner_per_version(tmp_path):
    root = str(tmp_path / "t")
    storages = [Storage(root) for _ in range(8)]
    wins = race(storages, 40, commit_path)
    assert_one_winner(storages[0], wins)


def test_local_race_processes_one_winner_per_version(tmp_path):
    root = str(tmp_path / "t")
    wins = process_race(root, {}, writers=4, versions=15)
    assert_one_winner(Storage(root), wins)


def test_local_without_hard_links_uses_o_excl(tmp_path, monkeypatch):
    def no_link(src, dst):
        raise OSError(errno.EPERM, "hard links not supported")

    monkeypatch.setattr(os, "link", no_link)
    storage = Storage(str(tmp_path / "t"))
    wins = race([Storage(storage.root) for _ in range(6)], 20, commit_path)
    assert_one_winner(storage, wins)


def test_memory_race_one_winner_per_version():
    root = "memory://pydelta-race-test"
    storages = [Storage(root) for _ in range(8)]
    wins = race(storages, 30, commit_path)
    assert_one_winner(storages[0], wins)
    fsspec.filesystem("memory").rm("/pydelta-race-test", recursive=True)


# ------------------------------------------------- backends with no atomic create


class DictFileSystem(AbstractFileSystem):
    """A filesystem with no atomic create: fsspec's generic pipe_file(mode="create")
    is exists-then-write."""

    protocol = "pydeltadict"
    store: dict = {}

    def _strip_protocol(cls, path):  # noqa: N805 - fsspec calls it on the class
        return path.split("://", 1)[-1]

    _strip_protocol = classmethod(_strip_protocol)

    def cat_file(self, path, start=None, end=None, **kw):
        return self.store[self._strip_protocol(path)][start:end]

    def pipe_file(self, path, value, mode="overwrite", **kw):
        path = self._strip_protocol(path)
        if mode == "create" and path in self.store:
            raise FileExistsError(path)
        self.store[path] = bytes(value)

    def info(self, path, **kw):
        path = self._strip_protocol(path)
        if path not in self.store:
            raise FileNotFoundError(path)
        return {"name": path, "size": len(self.store[path]), "type": "file"}

    def ls(self, path, detail=True, **kw):
        path = self._strip_protocol(path).rstrip("/") + "/"
        return [self.info(p) for p in sorted(self.store) if p.startswith(path)]


fsspec.register_implementation("pydeltadict", DictFileSystem, clobber=True)


def test_non_atomic_backend_refused_for_commits():
    storage = Storage("pydeltadict://bucket/t")
    assert storage.atomic_create is None
    with pytest.raises(CommitFailedError) as info:
        storage.put_if_absent(commit_path(storage, 0), b"x")
    message = str(info.value)
    assert "no atomic create-if-absent" in message and "allowUnsafeCommits" in message
    with pytest.raises(CommitFailedError):
        storage.check_commits_supported()
    assert DictFileSystem.store == {}  # nothing written


@pytest.mark.parametrize("how", ["keyword", "option", "spark-lowercased-option"])
def test_non_atomic_backend_unsafe_opt_in(how):
    DictFileSystem.store.clear()
    if how == "keyword":
        storage = Storage("pydeltadict://bucket/t", allow_unsafe_commits=True)
    elif how == "option":
        storage = Storage("pydeltadict://bucket/t", {"allowUnsafeCommits": "true"})
    else:
        storage = Storage("pydeltadict://bucket/t", {"allowunsafecommits": "TRUE"})
    assert "allowunsafecommits" not in {k.lower() for k in storage.options}  # not sent to fsspec
    storage.check_commits_supported()
    storage.put_if_absent(commit_path(storage, 0), b"x")
    with pytest.raises(FileExistsError):
        storage.put_if_absent(commit_path(storage, 0), b"y")
    assert storage.read_bytes(commit_path(storage, 0)) == b"x"
    DictFileSystem.store.clear()


def test_bad_unsafe_opt_in_value():
    with pytest.raises(ValueError, match="allowUnsafeCommits"):
        Storage("pydeltadict://bucket/t", {"allowUnsafeCommits": "maybe"})


# ------------------------------------------------------------------ option mapping


@pytest.mark.objectstore  # the client libraries (s3fs, adlfs, gcsfs, botocore), no server
def test_options_map_to_filesystem_parameters():
    import s3fs

    kwargs = filesystem_kwargs(
        s3fs.S3FileSystem,
        {
            "endpointurl": "http://127.0.0.1:9000",  # Spark lowercased endpointUrl
            "anon": "false",
            "client_kwargs": '{"region_name": "eu-west-1"}',
            "requester_pays": "TRUE",
            "key": "AKIA",
            "secret": "s",
            "max_concurrency": "4",
        },
    )
    assert kwargs == {
        "endpoint_url": "http://127.0.0.1:9000",
        "anon": False,
        "client_kwargs": {"region_name": "eu-west-1"},
        "requester_pays": True,
        "key": "AKIA",
        "secret": "s",
        "max_concurrency": 4,
    }
    with pytest.raises(ValueError, match="client_kwargs"):
        filesystem_kwargs(s3fs.S3FileSystem, {"client_kwargs": "{not json"})


@pytest.mark.objectstore  # the client libraries (s3fs, adlfs, gcsfs, botocore), no server
def test_options_for_azure_and_gcs_parameters():
    import adlfs
    import gcsfs

    assert filesystem_kwargs(
        adlfs.AzureBlobFileSystem, {"accountname": "acct", "account_key": "k", "sastoken": "sv=x"}
    ) == {"account_name": "acct", "account_key": "k", "sas_token": "sv=x"}
    assert filesystem_kwargs(
        gcsfs.GCSFileSystem, {"endpointurl": "http://h", "token": "anon", "requester_pays": "false"}
    ) == {"endpoint_url": "http://h", "token": "anon", "requester_pays": False}


# ------------------------------------------------------------- lost-race detection


def _client_error(code, status, message="At least one of the pre-conditions you specified did not hold"):
    import botocore.exceptions as botocore

    return botocore.ClientError(
        {"Error": {"Code": code, "Message": message}, "ResponseMetadata": {"HTTPStatusCode": status}}, "PutObject"
    )


@pytest.mark.objectstore  # the client libraries (s3fs, adlfs, gcsfs, botocore), no server
def test_precondition_failure_detection():
    # s3fs raises a 412 without a Condition field as OSError(EINVAL) caused by the ClientError
    lost = OSError(errno.EINVAL, "At least one of the pre-conditions you specified did not hold")
    lost.__cause__ = _client_error("PreconditionFailed", 412)
    assert is_precondition_failure(lost)
    assert is_precondition_failure(FileExistsError("x"))
    other = OSError(errno.EINVAL, "Invalid argument: s3://b/t/_delta_log/00000000000000000412.json")
    assert not is_precondition_failure(other)
    denied = PermissionError("Access Denied")
    denied.__cause__ = _client_error("AccessDenied", 403, "Access Denied")
    assert not is_precondition_failure(denied)


# ------------------------------------------------------------------ credentials


def test_secrets_never_in_repr_or_pickled_state_repr():
    opts = {"key": "AKIAEXAMPLEKEYID", "secret": "wJalrXUtnFEMI/K7MDENG", "endpoint_url": "http://h"}
    storage = Storage("s3://bucket/table", opts)
    assert "wJalrX" not in repr(storage) and "AKIAEX" not in repr(storage)
    restored = pickle.loads(pickle.dumps(storage))
    assert restored.options == opts and restored._fs is None
    from delta_pyds.read.options import ReadOptions

    ro = ReadOptions.parse({"path": "s3://bucket/table", "storage.secret": "wJalrXUtnFEMI/K7MDENG"})
    assert ro.storage_options == {"secret": "wJalrXUtnFEMI/K7MDENG"}
    assert "wJalrX" not in repr(ro)


def test_redaction_of_secret_values():
    conn = "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=c2VjcmV0a2V5dmFsdWU=;"
    opts = {"connection_string": conn, "sas_token": "sv=2024&sig=abcdef123456", "account_name": "acct"}
    text = f"account acct failed: {conn} and AccountKey=c2VjcmV0a2V5dmFsdWU= and ?sv=2024&sig=abcdef123456"
    out = redact(text, opts)
    assert "c2VjcmV0a2V5dmFsdWU" not in out and "abcdef123456" not in out
    assert "acct" in out  # not a secret
    assert is_secret_key("secret") and is_secret_key("account_key") and is_secret_key("sasToken")
    assert not is_secret_key("endpoint_url") and not is_secret_key("account_name")


class _LeakyFileSystem(AbstractFileSystem):
    protocol = "pydeltaleaky"

    def __init__(self, password=None, **kw):
        raise ValueError(f"cannot log in with password {password}")


fsspec.register_implementation("pydeltaleaky", _LeakyFileSystem, clobber=True)


def test_filesystem_errors_are_redacted():
    storage = Storage("pydeltaleaky://h/t", {"password": "hunter2-very-secret"})
    with pytest.raises(ValueError) as info:
        storage.list_dir(storage.root)
    assert "hunter2" not in str(info.value) and "***" in str(info.value)
    assert info.value.__cause__ is None and info.value.__context__ is None


def test_missing_backend_names_the_package(monkeypatch):
    def missing(protocol):
        raise ImportError("Install s3fs to access S3")

    monkeypatch.setattr(fsspec, "get_filesystem_class", missing)
    with pytest.raises(ImportError, match=r"pip install s3fs"):
        Storage("s3://b/t").list_dir("s3://b/t/_delta_log")


def test_local_uri_forms_name_the_same_root(tmp_path):
    """Spark passes catalog locations as Hadoop URIs (``file:/p``); every local form must
    name the same directory."""
    root = str(tmp_path / "a b")
    forms = [
        root,
        f"file://{root}",
        f"file:{root}",
        "file://" + root.replace(" ", "%20"),
        "file:" + root.replace(" ", "%20"),
    ]
    assert {Storage(f).root for f in forms} == {root}


@pytest.mark.parametrize("where", ["local", "memory"])
def test_listing_after_a_name_is_the_listing_filtered(tmp_path, where):
    root = str(tmp_path / "t") if where == "local" else f"memory://after-{os.getpid()}-{id(tmp_path)}"
    storage = Storage(root)
    log = storage.join("_delta_log")
    for v in range(3):
        storage.put_if_absent(commit_path(storage, v), b"x")
    storage.write_bytes(storage.join("_delta_log", "_sidecars", "a.parquet"), b"s")
    whole = storage.list_dir(log)
    assert [e.name for e in whole] == [f"{v:020d}.json" for v in range(3)]
    for after in ("", f"{0:020d}", f"{1:020d}.json", "z"):
        assert storage.list_dir_after(log, after) == [e for e in whole if e.name > after]
    assert storage.list_dir_after(storage.join("missing"), "") == []
