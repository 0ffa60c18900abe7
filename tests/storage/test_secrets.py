"""Security hygiene (issue 9): credentials given as ``storage.*`` options never appear
in logs, error messages, reprs, or anything written to the table (commitInfo,
checkpoints, data files)."""

from __future__ import annotations

import logging
import os
import pickle

import fsspec
import pytest

from delta_pyds.errors import DeltaError
from delta_pyds.protocol.actions import Metadata
from delta_pyds.read.options import ReadOptions
from delta_pyds.storage.store import Storage, redact
from delta_pyds.table.snapshot import Snapshot
from delta_pyds.transaction.commit import Transaction

SECRET = "Sup3rS3cretValue-0123456789abcdef"
KEY_ID = "AKIAEXAMPLEKEYID4242"
TOKEN = "tok-9f8e7d6c5b4a3210-session"
# option names as users give them (Spark lowercases keys): local filesystems accept
# and ignore unknown keyword arguments, so a local table can carry them end to end
STORAGE_OPTIONS = {
    "secret": SECRET,
    "key": KEY_ID,
    "session_token": TOKEN,
    "connection_string": f"AccountName=x;AccountKey={SECRET}x;EndpointSuffix=y",
}
SECRETS = [SECRET, TOKEN]


def assert_clean(text: str, where: str) -> None:
    for s in SECRETS:
        assert s not in text, f"a credential leaked into {where}"


def table_bytes(root: str) -> bytes:
    out = b""
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            with open(os.path.join(dirpath, name), "rb") as f:
                out += f.read()
    return out


SCHEMA = '{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}}]}'


def test_reprs_and_pickles_hold_no_credentials_in_text(tmp_path):
    storage = Storage(str(tmp_path), STORAGE_OPTIONS)
    assert_clean(repr(storage), "repr(Storage)")
    assert_clean(str(storage), "str(Storage)")
    opts = ReadOptions.parse({"path": str(tmp_path), **{f"storage.{k}": v for k, v in STORAGE_OPTIONS.items()}})
    assert opts.storage_options["secret"] == SECRET  # passed through...
    assert_clean(repr(opts), "repr(ReadOptions)")  # ...but never shown
    # pickled into Spark tasks: fine (the executors need them), but no live filesystem
    assert pickle.loads(pickle.dumps(storage)).options["secret"] == SECRET


def test_write_options_repr_holds_no_credentials(tmp_path):
    from delta_pyds.write.options import WriteOptions

    opts = WriteOptions.parse(
        {"path": str(tmp_path), **{f"storage.{k}": v for k, v in STORAGE_OPTIONS.items()}}, overwrite=False
    )
    assert_clean(repr(opts), "repr(WriteOptions)")


def test_redact_covers_connection_string_parts():
    text = f"failed with {SECRET} and AccountKey={SECRET}x and {TOKEN}"
    out = redact(text, STORAGE_OPTIONS)
    assert_clean(out, "redacted text")
    assert "***" in out


def test_redact_keeps_the_endpoints_of_a_connection_string():
    """Errors name an Azure store by its endpoint: only the key and signature are secret."""
    conn = f"DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey={SECRET}x;BlobEndpoint=http://127.0.0.1:10000/devstoreaccount1;"
    out = redact(f"the store at http://127.0.0.1:10000/devstoreaccount1 said {SECRET}x", {"connection_string": conn})
    assert "http://127.0.0.1:10000/devstoreaccount1" in out and SECRET not in out


class _Exploding(fsspec.AbstractFileSystem):
    protocol = "explodingfs"

    def __init__(self, **kwargs):
        raise ValueError(f"bad configuration: {kwargs!r}")  # a backend echoing its arguments


def test_filesystem_errors_are_redacted():
    fsspec.register_implementation("explodingfs", _Exploding, clobber=True)
    storage = Storage("explodingfs://bucket/table", STORAGE_OPTIONS)
    with pytest.raises(ValueError) as exc:
        storage.fs
    assert_clean(str(exc.value), "the filesystem error")
    assert exc.value.__cause__ is None and exc.value.__context__ is None  # no link to the original
    assert "bucket/table" in str(exc.value)


def test_core_commit_and_read_never_record_credentials(tmp_path, caplog):
    root = str(tmp_path / "t")
    caplog.set_level(logging.DEBUG)
    storage = Storage(root, STORAGE_OPTIONS)
    txn = Transaction(storage)
    txn.update_metadata(Metadata(id="x", schema_string=SCHEMA, configuration={"delta.checkpointInterval": "2"}))
    txn.commit("CREATE TABLE", {"location": root})
    for i in range(3):  # past a checkpoint
        import io

        import pyarrow as pa
        import pyarrow.parquet as pq

        buf = io.BytesIO()
        pq.write_table(pa.table({"id": [i]}), buf)
        storage.fs.pipe_file(storage.join(f"f{i}.parquet"), buf.getvalue())
        t = Transaction.start(storage)
        t.add_files(
            [
                {
                    "path": f"f{i}.parquet",
                    "partitionValues": {},
                    "size": len(buf.getvalue()),
                    "modificationTime": 1,
                    "dataChange": True,
                }
            ]
        )
        t.commit("WRITE", {"mode": "Append"})
    snap = Snapshot.load(storage)
    assert snap.version == 3 and snap.files.num_rows == 3
    assert any(n.endswith(".checkpoint.parquet") for n in os.listdir(os.path.join(root, "_delta_log")))
    for s in SECRETS:
        assert s.encode() not in table_bytes(root)
    assert_clean("\n".join(r.getMessage() for r in caplog.records), "the logs")
    # a failing load on the same storage: the error names the problem, not the options
    with pytest.raises(DeltaError) as exc:
        Snapshot.load(storage, version=99)
    assert_clean(str(exc.value), "a DeltaError")


def test_spark_write_and_read_with_storage_options(tmp_path, spark, caplog):
    caplog.set_level(logging.DEBUG)
    root = str(tmp_path / "t")
    opts = {f"storage.{k}": v for k, v in STORAGE_OPTIONS.items()}
    spark.range(3).write.format("pydelta").mode("append").options(**opts).save(root)
    assert spark.read.format("pydelta").options(**opts).load(root).count() == 3
    with pytest.raises(Exception) as exc:
        spark.read.format("pydelta").options(**opts).option("versionAsOf", "7").load(root).collect()
    assert "version 7" in str(exc.value)
    assert_clean(str(exc.value), "the Spark error")
    for s in SECRETS:
        assert s.encode() not in table_bytes(root), "a credential was written into the table"
    commit = open(os.path.join(root, "_delta_log", f"{0:020d}.json")).read()
    assert '"operationParameters":{"mode":"Append"}' in commit
    # py4j's own DEBUG wire log echoes every JVM call, the user's .option(...) values
    # included: outside delta_pyds's control (documented); everything else must be clean
    assert_clean("\n".join(r.getMessage() for r in caplog.records if not r.name.startswith("py4j")), "the driver logs")


# ------------------------------------------------------------ issue 16: object store client errors
PASSWORD = "pa55-W0rd-in-the-url-77"


def test_redact_covers_user_and_password_in_urls():
    opts = {
        "endpoint_url": f"http://someone:{PASSWORD}@127.0.0.1:9",
        "client_kwargs": {"endpoint_url": f"https://other:{PASSWORD}x@host"},
    }
    text = f"failed: http://someone:{PASSWORD}@127.0.0.1:9/bucket and https://other:{PASSWORD}x@host"
    out = redact(text, opts)
    assert PASSWORD not in out and "someone:" not in out and "***" in out


@pytest.mark.objectstore  # s3fs and botocore raise the errors (no server: a closed port)
@pytest.mark.parametrize(
    "options",
    [
        # credentials in the endpoint URL: botocore raises HTTPClientError before any request
        {"endpoint_url": f"http://someone:{PASSWORD}@127.0.0.1:9", "key": KEY_ID, "secret": SECRET},
        # colliding client arguments: a TypeError from inside the client at the first request
        {"endpoint_url": "http://127.0.0.1:9", "key": KEY_ID, "secret": SECRET, "client_kwargs": '{"config": 1}'},
    ],
)
def test_object_store_client_errors_are_named_and_redacted(options):
    import s3fs  # noqa: F401  (a test dependency: fails, never skips, when missing)

    from delta_pyds.errors import StorageError

    with pytest.raises(StorageError) as exc:
        Snapshot.load(Storage("s3://bucket/table", options))
    text = str(exc.value)
    assert_clean(text, "a StorageError")
    assert PASSWORD not in text and KEY_ID not in text
    assert "bucket/table" in text
    assert exc.value.__cause__ is None and exc.value.__context__ is None
