"""Tables whose prefix an attacker (or a corrupt producer) can write to (issue 16, items 1
and 2): cleanup never deletes outside the table root, reads never leave it through
relative paths, and ``allowExternalPaths=false`` refuses absolute ones too.

Every cleanup path runs next to canary files outside the table root; decoy objects
inside the table are named like URIs and absolute paths that point at the canaries.
"""

from __future__ import annotations

import json
import os
import time
import uuid

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from table_files import edit_actions, log_file, read_rows

from delta_pyds.errors import CorruptLogError, DataFileError, DeletionVectorError, ExternalPathError
from delta_pyds.log.cleanup import cleanup_expired_logs
from delta_pyds.operations.vacuum import vacuum
from delta_pyds.storage.store import Storage
from delta_pyds.table.snapshot import Snapshot
from delta_pyds.transaction.staged_files import delete_files
from delta_pyds.write.plan import commit_arrow

LATER = int(time.time() * 1000) + 2 * 86_400_000  # "now" two days ahead: every file is old enough


def _canaries(tmp_path) -> list[str]:
    out = []
    for rel in ("outside/canary.txt", "outside/canary.parquet", "cwd/outside/canary.txt"):
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(b"keep me")
        out.append(str(p))
    return out


def _decoys(table: str, tmp_path) -> list[str]:
    """Objects inside the table whose names look like paths to the canaries."""
    outside = str(tmp_path / "outside")
    names = [
        f"file:{outside}/canary.txt",  # table/file:/tmp/.../canary.txt
        f"file://{outside}/canary.parquet",
        "file:../outside/canary.txt",  # relative to the working dir
        "file:" + f"{outside}/canary.txt".replace("/", "%2F"),  # one percent-encoded name
        f"k=1/file:{outside}/canary.txt",
    ]
    made = []
    for name in names:
        p = os.path.join(table, name)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "wb") as f:
            f.write(b"decoy")
        made.append(p)
    return made


def _table(tmp_path) -> str:
    t = str(tmp_path / "t")
    commit_arrow(t, pa.table({"id": pa.array([1, 2], pa.int64())}))
    commit_arrow(t, pa.table({"id": pa.array([3], pa.int64())}), mode="overwrite")
    return t


def _add_outside_file(t: str, outside: str) -> None:
    """A data file (one row, id 7) outside the root, added to version 1 by absolute path."""
    pq.write_table(pa.table({"id": pa.array([7], pa.int64())}), outside)
    edit_actions(
        log_file(t, 1),
        lambda acts: (
            acts
            + [
                {
                    "add": {
                        "path": f"file://{outside}",
                        "partitionValues": {},
                        "size": os.path.getsize(outside),
                        "modificationTime": 1,
                        "dataChange": True,
                    }
                }
            ]
        ),
    )


def test_vacuum_deletes_only_the_listed_objects_inside_the_root(tmp_path, monkeypatch):
    canaries = _canaries(tmp_path)
    monkeypatch.chdir(tmp_path / "cwd")
    t = _table(tmp_path)
    decoys = _decoys(t, tmp_path)
    dry = vacuum(Snapshot.load(t), retention_hours=0, enforce_retention=False, now_ms=LATER)
    listed = {os.path.join(t, rel) for rel in dry.files}
    assert {os.path.normpath(d) for d in decoys} <= listed  # shown as what they are: objects below the root
    result = vacuum(Snapshot.load(t), retention_hours=0, enforce_retention=False, dry_run=False, now_ms=LATER)
    assert all(os.path.exists(c) for c in canaries)
    assert not any(os.path.exists(os.path.normpath(d)) for d in decoys)
    assert len(result.files) == len(decoys) + 1  # + the overwritten data file
    assert read_rows(t).column("id").to_pylist() == [3]


def test_vacuum_keeps_files_named_by_absolute_paths_outside_the_root(tmp_path):
    # a shallow-clone style add pointing outside the root, then removed: vacuum never
    # touches it (it is not below the root), whatever its tombstone says
    canaries = _canaries(tmp_path)
    t = _table(tmp_path)
    _add_outside_file(t, str(tmp_path / "outside" / "canary.parquet"))
    assert sorted(read_rows(t).column("id").to_pylist()) == [3, 7]
    commit_arrow(t, pa.table({"id": pa.array([4], pa.int64())}), mode="overwrite")
    assert Snapshot.load(t).tombstones.num_rows == 3
    vacuum(Snapshot.load(t), retention_hours=0, enforce_retention=False, dry_run=False, now_ms=LATER)
    assert all(os.path.exists(c) for c in canaries)


def test_failed_write_cleanup_never_leaves_the_root(tmp_path, monkeypatch):
    canaries = _canaries(tmp_path)
    monkeypatch.chdir(tmp_path / "cwd")
    t = _table(tmp_path)
    inside = os.path.join(t, "uncommitted.parquet")
    open(inside, "wb").close()
    outside = str(tmp_path / "outside")
    delete_files(
        Storage(t),
        [
            {"path": p}
            for p in (
                f"file://{outside}/canary.txt",
                f"{outside}/canary.parquet",
                "../outside/canary.txt",
                "a/%2E%2E/%2E%2E/outside/canary.txt",
                "file:../outside/canary.txt",
                "uncommitted.parquet",
            )
        ],
    )
    assert all(os.path.exists(c) for c in canaries)
    assert not os.path.exists(inside)


def test_log_cleanup_deletes_only_log_files(tmp_path):
    canaries = _canaries(tmp_path)
    t = _table(tmp_path)
    from delta_pyds.transaction.checkpoint_writer import write_checkpoint

    snap = Snapshot.load(t)
    write_checkpoint(snap.storage, snap.version)
    log_dir = os.path.join(t, "_delta_log")
    decoy = os.path.join(log_dir, f"file:{tmp_path}", "outside", "canary.txt")
    os.makedirs(os.path.dirname(decoy))
    open(decoy, "wb").close()
    res = cleanup_expired_logs(
        Storage(t), {"delta.logRetentionDuration": "interval 0 hours"}, up_to=snap.version, now_ms=LATER
    )
    assert res.deleted == ["00000000000000000000.json"]
    assert all(os.path.exists(c) for c in canaries) and os.path.exists(decoy)


def test_vacuum_on_an_object_store_never_reaches_another_bucket(s3_server):
    fs = s3_server.fs(skip_instance_cache=True)
    other = f"other-{uuid.uuid4().hex[:8]}"
    fs.mkdir(other)
    fs.pipe_file(f"{other}/k", b"keep me")
    fs.pipe_file(f"{s3_server.bucket}/canary-{other}", b"keep me")
    root = s3_server.url(f"hostile-{uuid.uuid4().hex[:8]}")
    commit_arrow(
        root,
        pa.table({"id": pa.array([1], pa.int64())}),
        options={f"storage.{k}": v for k, v in s3_server.options.items()},
    )
    prefix = root[len("s3://") :]
    for name in (f"s3://{other}/k", f"s3:/{other}/k", f"/{s3_server.bucket}/canary-{other}", f"file:/{other}/k"):
        fs.pipe_file(f"{prefix}/{name}", b"decoy")
    snap = Snapshot.load(Storage(root, s3_server.options))
    res = vacuum(snap, retention_hours=0, enforce_retention=False, dry_run=False, now_ms=LATER)
    assert res.files, "the decoys are objects below the root and are vacuumed"
    assert fs.cat_file(f"{other}/k") == b"keep me"
    assert fs.cat_file(f"{s3_server.bucket}/canary-{other}") == b"keep me"
    assert Snapshot.load(Storage(root, s3_server.options)).files.num_rows == 1


def test_failed_write_and_log_cleanup_on_an_object_store_stay_below_the_root(s3_server):
    from delta_pyds.transaction.checkpoint_writer import write_checkpoint

    fs = s3_server.fs(skip_instance_cache=True)
    other = f"other-{uuid.uuid4().hex[:8]}"
    fs.mkdir(other)
    fs.pipe_file(f"{other}/k", b"keep me")
    root = s3_server.url(f"hostile-{uuid.uuid4().hex[:8]}")
    opts = {f"storage.{k}": v for k, v in s3_server.options.items()}
    commit_arrow(root, pa.table({"id": pa.array([1], pa.int64())}), options=opts)
    commit_arrow(root, pa.table({"id": pa.array([2], pa.int64())}), options=opts)
    storage = Storage(root, s3_server.options)
    prefix = root[len("s3://") :]
    fs.pipe_file(f"{prefix}/_delta_log/s3:/{other}/k", b"decoy")
    fs.pipe_file(f"{prefix}/uncommitted.parquet", b"x")
    delete_files(
        storage,
        [{"path": p} for p in (f"s3://{other}/k", f"/{other}/k", "../../" + other + "/k", "uncommitted.parquet")],
    )
    assert not fs.exists(f"{prefix}/uncommitted.parquet")
    snap = Snapshot.load(storage)
    write_checkpoint(storage, snap.version)
    res = cleanup_expired_logs(
        storage, {"delta.logRetentionDuration": "interval 0 hours"}, up_to=snap.version, now_ms=LATER
    )
    assert res.deleted == ["00000000000000000000.json"]
    assert fs.cat_file(f"{other}/k") == b"keep me"
    assert sorted(read_rows(storage).column("id").to_pylist()) == [1, 2]


def test_vacuum_on_memory_filesystem_stays_below_the_root():
    import fsspec

    fs = fsspec.filesystem("memory")
    root = f"memory://hostile-{uuid.uuid4().hex[:8]}/t"
    fs.pipe_file("/elsewhere/k", b"keep me")
    commit_arrow(root, pa.table({"id": pa.array([1], pa.int64())}))
    for name in ("memory:/elsewhere/k", "file:/elsewhere/k", "s3:/elsewhere/k"):
        fs.pipe_file(f"{root}/{name}", b"decoy")
    res = vacuum(Snapshot.load(root), retention_hours=0, enforce_retention=False, dry_run=False, now_ms=LATER)
    assert len(res.files) == 3
    assert fs.cat_file("/elsewhere/k") == b"keep me"


# ------------------------------------------------------------------ reads
def _dv_table(tmp_path) -> str:
    t = str(tmp_path / "t")
    commit_arrow(t, pa.table({"id": pa.array(range(10), pa.int64())}), options={"delta.enableDeletionVectors": "true"})
    return t


@pytest.mark.parametrize("dv_path", ["../outside/{name}", "..%2Foutside%2F{name}", "file:../outside/{name}"])
def test_relative_p_deletion_vector_paths_cannot_leave_the_root(tmp_path, dv_path):
    from pyroaring import BitMap64

    from delta_pyds.protocol.deletion_vectors import store_deletion_vectors

    t = _dv_table(tmp_path)
    # a valid deletion vector file outside the root, deleting rows 0-4
    (d,) = store_deletion_vectors(Storage(str(tmp_path / "outside")), [BitMap64(range(5))], inline_max_bytes=0)
    name = os.path.basename(d.absolute_path(Storage(str(tmp_path / "outside"))))

    def add_dv(acts):
        for a in acts:
            if "add" in a:
                a["add"]["deletionVector"] = {
                    **d.to_dict(),
                    "storageType": "p",
                    "pathOrInlineDv": dv_path.format(name=name),
                }
        return acts

    edit_actions(log_file(t, 0), add_dv)
    with pytest.raises(DeletionVectorError, match="'..'|file: URI"):
        read_rows(t)


def test_sidecar_outside_the_sidecar_directory_is_refused(tmp_path):
    from delta_pyds.errors import CorruptCheckpointError
    from delta_pyds.log.checkpoint_reader import CheckpointReader
    from delta_pyds.log.files import parse_log_file_name

    t = _table(tmp_path)
    (tmp_path / "outside").mkdir()
    log_dir = os.path.join(t, "_delta_log")
    for bad in (
        "../../../outside/sc.parquet",
        "..%2F..%2F..%2Foutside%2Fsc.parquet",
        f"file://{tmp_path}/outside/sc.parquet",
        f"{tmp_path}/outside/sc.parquet",
    ):
        name = f"{1:020}.checkpoint.{uuid.uuid4()}.json"
        with open(os.path.join(log_dir, name), "w") as f:
            f.write(json.dumps({"checkpointMetadata": {"version": 1}}) + "\n")
            f.write(json.dumps({"sidecar": {"path": bad, "sizeInBytes": 1, "modificationTime": 1}}) + "\n")
        lf = next(x for x in Storage(t).list_dir(log_dir) if x.name == name)
        reader = CheckpointReader(Storage(t), [parse_log_file_name(lf.name, lf.path, lf.size)])
        with pytest.raises(CorruptCheckpointError, match="sidecar"):
            reader.sidecar_paths()
        os.remove(os.path.join(log_dir, name))
    ok = CheckpointReader.__new__(CheckpointReader)
    ok.storage, ok.parts = Storage(t), []
    inside = os.path.join(log_dir, "_sidecars", "a b.parquet")
    assert ok._sidecar_path("a%20b.parquet", os.path.join(log_dir, "_sidecars")) == inside
    assert ok._sidecar_path(f"file://{log_dir}/_sidecars/a%20b.parquet", os.path.join(log_dir, "_sidecars")) == inside


def test_file_uri_that_is_not_absolute_is_refused(tmp_path, monkeypatch):
    t = _table(tmp_path)
    (tmp_path / "cwd").mkdir()
    monkeypatch.chdir(tmp_path / "cwd")
    edit_actions(
        log_file(t, 1),
        lambda acts: (
            acts
            + [
                {
                    "add": {
                        "path": "file:../outside/x.parquet",
                        "partitionValues": {},
                        "size": 1,
                        "modificationTime": 1,
                        "dataChange": True,
                    }
                }
            ]
        ),
    )
    with pytest.raises(CorruptLogError, match="file: URI"):
        Snapshot.load(t).files


def test_allow_external_paths_false_refuses_absolute_paths(tmp_path):
    t = _table(tmp_path)
    outside = tmp_path / "elsewhere" / "abs.parquet"
    outside.parent.mkdir()
    pq.write_table(pa.table({"id": pa.array([100], pa.int64())}), outside)
    edit_actions(
        log_file(t, 1),
        lambda acts: (
            acts
            + [
                {
                    "add": {
                        "path": f"file://{outside}",
                        "partitionValues": {},
                        "size": os.path.getsize(outside),
                        "modificationTime": 1,
                        "dataChange": True,
                    }
                }
            ]
        ),
    )
    assert sorted(read_rows(t).column("id").to_pylist()) == [3, 100]  # the protocol allows it
    strict = Storage(t, {"allowExternalPaths": "false"})
    with pytest.raises(ExternalPathError, match="outside the table root"):
        Snapshot.load(strict).files
    with pytest.raises(ExternalPathError):
        strict.resolve(str(outside))
    with pytest.raises(ValueError, match="allowExternalPaths"):
        Storage(t, {"allowExternalPaths": "maybe"})
    from delta_pyds.read.options import ReadOptions

    assert ReadOptions.parse({"path": t, "allowexternalpaths": "false"}).storage_options == {
        "allowExternalPaths": "false"
    }


def test_allow_external_paths_false_refuses_absolute_deletion_vectors(tmp_path):
    from delta_pyds.protocol.deletion_vectors import DeletionVectorDescriptor

    d = DeletionVectorDescriptor("p", f"file://{tmp_path}/elsewhere/dv.bin", 1, 30, 1)
    assert d.absolute_path(Storage(str(tmp_path / "t"))) == f"{tmp_path}/elsewhere/dv.bin"
    with pytest.raises(ExternalPathError):
        d.absolute_path(Storage(str(tmp_path / "t"), allow_external_paths=False))
    inside = DeletionVectorDescriptor("p", f"file://{tmp_path}/t/dv%20x.bin", 1, 30, 1)
    assert inside.absolute_path(Storage(str(tmp_path / "t"), allow_external_paths=False)) == f"{tmp_path}/t/dv x.bin"


def test_read_file_refuses_external_paths_when_confined(tmp_path):
    from delta_pyds.protocol.schema import to_arrow_schema
    from delta_pyds.read.file_reader import ReadSpec, read_file
    from delta_pyds.read.scan import FileTask

    t = _table(tmp_path)
    snap = Snapshot.load(Storage(t, allow_external_paths=False))
    spec = ReadSpec(
        storage=snap.storage, output=snap.schema, arrow_schema=to_arrow_schema(snap.schema), partition_columns=()
    )
    with pytest.raises((ExternalPathError, DataFileError)):
        list(read_file(spec, FileTask(f"{tmp_path}/elsewhere.parquet", 1, (), None)))


def test_optimize_restore_overwrite_then_vacuum_keep_outside_files(spark, tmp_path):
    """Spark-side cleanup paths on a table whose log names a file outside the root."""
    from delta_pyds import DeltaTable

    canaries = _canaries(tmp_path)
    t = _table(tmp_path)
    _add_outside_file(t, str(tmp_path / "outside" / "canary.parquet"))
    _decoys(t, tmp_path)
    dt_ = DeltaTable.forPath(spark, t)
    dt_.optimize().executeCompaction()  # rewrites the outside file into the table, removes it
    assert sorted(r.id for r in dt_.toDF().collect()) == [3, 7]
    dt_.restoreToVersion(1)
    commit_arrow(t, pa.table({"id": pa.array([4], pa.int64())}), mode="overwrite")
    dt_.delete("id = 4")
    # reading with the option refuses the external path at the restored version
    assert sorted(r.id for r in spark.read.format("pydelta").option("versionAsOf", 1).load(t).collect()) == [3, 7]
    with pytest.raises(Exception, match="ExternalPathError|outside the table root"):
        spark.read.format("pydelta").option("allowExternalPaths", "false").option("versionAsOf", 1).load(t).collect()
    vacuum(Snapshot.load(t), retention_hours=0, enforce_retention=False, dry_run=False, now_ms=LATER)
    assert all(os.path.exists(c) for c in canaries)
