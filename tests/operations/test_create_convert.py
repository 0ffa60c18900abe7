"""CREATE/REPLACE TABLE, CONVERT TO DELTA and symlink manifests without Spark, checked
against the log bytes and against deltalake (delta-rs)."""

from __future__ import annotations

import datetime
import json
import os

import deltalake
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from helpers import deltalake_table, log_actions

from delta_pyds.errors import (
    DeltaError,
    PathEscapeError,
    SchemaError,
    TableExistsError,
    TableNotFoundError,
    UnsupportedFeatureError,
)
from delta_pyds.operations.convert import convert_to_delta
from delta_pyds.operations.create import ColumnSpec, Identity, TableDefinition, create_table
from delta_pyds.operations.manifest import generate_manifest
from delta_pyds.protocol.schema import PrimitiveType, StructType
from delta_pyds.storage.store import Storage
from delta_pyds.table.snapshot import Snapshot
from delta_pyds.write.plan import commit_arrow


def _cols(*specs):
    return [ColumnSpec(*s).to_field() for s in specs]


LONG, INT, STRING = PrimitiveType("long"), PrimitiveType("integer"), PrimitiveType("string")


def test_create_writes_metadata_and_protocol_only(tmp_path):
    path = str(tmp_path / "t")
    cols = [
        ColumnSpec("id", LONG, False, identity=Identity(1, 1, always=True)).to_field(),
        ColumnSpec("v", INT, comment="a value").to_field(),
        ColumnSpec("v2", INT, generated_always_as="v * 2").to_field(),
        ColumnSpec("p", STRING).to_field(),
    ]
    create_table(
        Storage(path),
        TableDefinition(cols, ("p",), properties={"delta.appendOnly": "true", "foo": "bar"}, description="d"),
    )
    actions = log_actions(path, 0)
    kinds = [next(iter(a)) for a in actions]
    assert sorted(kinds) == ["commitInfo", "metaData", "protocol"]  # no data file
    md = next(a["metaData"] for a in actions if "metaData" in a)
    fields = {f["name"]: f for f in json.loads(md["schemaString"])["fields"]}
    assert fields["id"]["metadata"] == {
        "delta.identity.start": 1,
        "delta.identity.step": 1,
        "delta.identity.allowExplicitInsert": False,
    }
    assert fields["id"]["nullable"] is False
    assert fields["v"]["metadata"] == {"comment": "a value"}
    assert fields["v2"]["metadata"] == {"delta.generationExpression": "v * 2"}
    assert md["partitionColumns"] == ["p"] and md["description"] == "d"
    assert md["configuration"] == {"delta.appendOnly": "true", "foo": "bar"}
    proto = next(a["protocol"] for a in actions if "protocol" in a)
    assert proto == {"minReaderVersion": 1, "minWriterVersion": 6}  # identity columns: legacy writer 6
    assert next(a["commitInfo"] for a in actions if "commitInfo" in a)["operation"] == "CREATE TABLE"
    # deltalake reads the empty table with the same schema
    dl = deltalake.DeltaTable(path)
    assert dl.to_pyarrow_table().num_rows == 0
    assert [f.name for f in dl.schema().fields] == ["id", "v", "v2", "p"]
    # a write generates the identity and the generated column
    commit_arrow(path, pa.table({"v": pa.array([1, 2], pa.int32()), "p": ["a", "b"]}))
    rows = sorted(deltalake_table(path).to_pylist(), key=lambda r: r["v"])
    assert [(r["id"], r["v"], r["v2"]) for r in rows] == [(1, 1, 2), (2, 2, 4)]


def test_create_modes(tmp_path):
    path = str(tmp_path / "t")
    storage = Storage(path)
    definition = TableDefinition(_cols(("a", LONG), ("b", STRING)))
    with pytest.raises(TableNotFoundError):
        create_table(storage, definition, mode="replace")
    create_table(storage, definition, mode="createIfNotExists")
    assert create_table(storage, definition, mode="createIfNotExists") is None  # exists: nothing committed
    with pytest.raises(TableExistsError):
        create_table(storage, definition, mode="create")
    commit_arrow(path, pa.table({"a": pa.array([1, 2], pa.int64()), "b": ["x", "y"]}))
    table_id = Snapshot.load(path).metadata.id
    create_table(storage, TableDefinition(_cols(("c", INT))), mode="replace")
    snap = Snapshot.load(path)
    assert snap.files.num_rows == 0 and snap.schema.names == ["c"] and snap.metadata.id == table_id
    assert log_actions(path, snap.version)[0]["commitInfo"]["operation"] == "REPLACE TABLE"
    create_table(storage, TableDefinition(_cols(("d", INT))), mode="createOrReplace")
    assert Snapshot.load(path).schema.names == ["d"]
    assert deltalake_table(path).num_rows == 0
    with pytest.raises(ValueError):
        create_table(storage, definition, mode="upsert")


def test_create_validates_before_committing(tmp_path):
    path = str(tmp_path / "t")
    storage = Storage(path)
    with pytest.raises(SchemaError):  # identity columns are bigint
        ColumnSpec("id", INT, identity=Identity()).to_field()
    with pytest.raises(SchemaError):
        ColumnSpec("id", LONG, identity=Identity(1, 0)).to_field()
    with pytest.raises(SchemaError):
        create_table(storage, TableDefinition(_cols(("a", LONG)), ("nope",)))
    with pytest.raises(SchemaError):  # cannot partition by every column
        create_table(storage, TableDefinition(_cols(("a", LONG)), ("a",)))
    with pytest.raises(SchemaError):
        create_table(storage, TableDefinition(_cols(("a", LONG), ("b", LONG)), ("a",), cluster_by=("b",)))
    with pytest.raises(ValueError):
        create_table(storage, TableDefinition(_cols(("a", LONG)), properties={"delta.appendOnly": "maybe"}))
    with pytest.raises(DeltaError):  # a generation expression outside the SQL subset
        create_table(storage, TableDefinition([ColumnSpec("a", LONG, generated_always_as="no_such_fn(a)").to_field()]))
    assert not os.path.exists(os.path.join(path, "_delta_log"))
    # a location with files but no table: refused (its files would be vacuumed later)
    os.makedirs(path)
    pq.write_table(pa.table({"a": [1]}), os.path.join(path, "part-0.parquet"))
    with pytest.raises(TableExistsError, match="convertToDelta"):
        create_table(storage, TableDefinition(_cols(("a", LONG))), mode="createOrReplace")
    assert not os.path.exists(os.path.join(path, "_delta_log"))


def test_create_clustered_with_features(tmp_path):
    path = str(tmp_path / "t")
    create_table(
        Storage(path),
        TableDefinition(
            _cols(("a", LONG), ("b", STRING)),
            cluster_by=("a",),
            properties={"delta.enableDeletionVectors": "true", "delta.feature.v2Checkpoint": "supported"},
        ),
    )
    snap = Snapshot.load(path)
    assert json.loads(snap.domain_metadata["delta.clustering"]) == {"clusteringColumns": [["a"]]}
    p = snap.protocol
    assert (p.min_reader_version, p.min_writer_version) == (3, 7)
    assert {"deletionVectors", "v2Checkpoint"} <= set(p.reader_features)
    assert {"clustering", "domainMetadata", "deletionVectors"} <= set(p.writer_features)
    assert "delta.feature.v2Checkpoint" not in snap.configuration


# ------------------------------------------------------------------------- convert
def _parquet_dir(root, partitioned=True):
    os.makedirs(root, exist_ok=True)
    for part, day in (("a", "2024-01-01"), ("b", "2024-01-02"), (None, "2024-01-03")):
        t = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "name": ["x", None, "z"], "f": [0.5, 1.5, None]})
        if partitioned:
            d = os.path.join(root, f"p={part if part else '__HIVE_DEFAULT_PARTITION__'}", f"day={day}")
            os.makedirs(d, exist_ok=True)
            pq.write_table(t, os.path.join(d, "part-0.parquet"))
        else:
            pq.write_table(t, os.path.join(root, f"part-{day}.parquet"))
    return root


def test_convert_partitioned_parquet_directory(tmp_path):
    root = _parquet_dir(str(tmp_path / "pq"))
    os.makedirs(os.path.join(root, "_SUCCESS_dir"))  # hidden: skipped
    from delta_pyds.protocol.schema import StructField

    schema = StructType((StructField("p", STRING), StructField("day", PrimitiveType("date"))))
    convert_to_delta(Storage(root), partition_schema=schema)
    snap = Snapshot.load(root)
    assert snap.version == 0 and snap.files.num_rows == 3
    assert list(snap.partition_columns) == ["p", "day"]
    assert snap.schema.names == ["id", "name", "f", "p", "day"]
    actions = log_actions(root, 0)
    assert actions[0]["commitInfo"]["operation"] == "CONVERT"
    adds = [a["add"] for a in actions if "add" in a]
    by_day = {a["partitionValues"]["day"]: a for a in adds}
    assert by_day["2024-01-03"]["partitionValues"]["p"] is None
    stats = json.loads(by_day["2024-01-01"]["stats"])
    assert stats["numRecords"] == 3
    assert stats["minValues"] == {"id": 1, "name": "x", "f": 0.5} and stats["maxValues"] == {"id": 3, "name": "z"}
    assert stats["nullCount"] == {"id": 0, "name": 1, "f": 1}
    # deltalake reads the converted table the same way
    dl = deltalake_table(root)
    assert dl.num_rows == 9
    got = sorted((r["p"] or "", r["day"], r["id"], r["name"] or "") for r in dl.to_pylist())
    assert got[0] == ("", datetime.date(2024, 1, 3), 1, "x")
    assert got[3:6] == [("a", datetime.date(2024, 1, 1), i, n) for i, n in ((1, "x"), (2, ""), (3, "z"))]
    assert sum(1 for r in dl.to_pylist() if r["p"] is None) == 3
    # converting again returns the table as is
    assert convert_to_delta(Storage(root), partition_schema=schema) is None
    assert Snapshot.load(root).version == 0


def test_convert_refuses_what_it_cannot_convert(tmp_path):
    root = _parquet_dir(str(tmp_path / "pq"))
    with pytest.raises(SchemaError, match="partition schema"):
        convert_to_delta(Storage(root))
    from delta_pyds.protocol.schema import StructField

    with pytest.raises(SchemaError, match="do not match"):
        convert_to_delta(Storage(root), partition_schema=StructType((StructField("p", STRING),)))
    bad_type = StructType((StructField("p", INT), StructField("day", PrimitiveType("date"))))
    with pytest.raises(SchemaError, match="is not a"):
        convert_to_delta(Storage(root), partition_schema=bad_type)
    flat = _parquet_dir(str(tmp_path / "flat"), partitioned=False)
    with open(os.path.join(flat, "notes.csv"), "w") as f:
        f.write("a,b\n")
    with pytest.raises(DeltaError, match="notes.csv is not a Parquet file"):
        convert_to_delta(Storage(flat))
    os.remove(os.path.join(flat, "notes.csv"))
    pq.write_table(pa.table({"other": [1]}), os.path.join(flat, "z.parquet"))
    with pytest.raises(SchemaError, match="same schema"):
        convert_to_delta(Storage(flat))
    with pytest.raises(DeltaError, match="no Parquet files"):
        convert_to_delta(Storage(str(tmp_path / "empty")))
    for p in (root, flat):
        assert not os.path.exists(os.path.join(p, "_delta_log"))


# ------------------------------------------------------------------------ manifest
def test_symlink_manifest_per_partition(tmp_path):
    path = str(tmp_path / "t")
    commit_arrow(path, pa.table({"id": [1, 2, 3], "p": ["a", "b", None]}), options={"partitionBy": "p"})
    commit_arrow(path, pa.table({"id": [4], "p": ["a"]}))
    written = generate_manifest(Snapshot.load(path), "SYMLINK_FORMAT_MANIFEST")
    assert sorted(written) == [
        "_symlink_format_manifest/p=__HIVE_DEFAULT_PARTITION__/manifest",
        "_symlink_format_manifest/p=a/manifest",
        "_symlink_format_manifest/p=b/manifest",
    ]
    with open(os.path.join(path, "_symlink_format_manifest/p=a/manifest")) as f:
        lines = f.read().split()
    files = deltalake.DeltaTable(path).file_uris()
    expected = sorted("file:" + p.removeprefix("file://") for p in files if "/p=a/" in p)
    assert sorted(lines) == expected and len(lines) == 2
    # a partition that lost its files loses its manifest
    commit_arrow(path, pa.table({"id": [9], "p": ["a"]}), mode="overwrite")
    written = generate_manifest(Snapshot.load(path))
    assert written == ["_symlink_format_manifest/p=a/manifest"]
    assert not os.path.exists(os.path.join(path, "_symlink_format_manifest/p=b/manifest"))
    with pytest.raises(ValueError):
        generate_manifest(Snapshot.load(path), "hive")


def test_symlink_manifest_refuses_deletion_vectors_and_column_mapping(copy_table, tmp_path):
    with pytest.raises(UnsupportedFeatureError, match="deletion vectors"):
        generate_manifest(Snapshot.load(copy_table("delta-rs/table-with-dv-small")))
    path = str(tmp_path / "cm")
    commit_arrow(path, pa.table({"id": [1]}), options={"delta.columnMapping.mode": "name"})
    with pytest.raises(UnsupportedFeatureError, match="column mapping"):
        generate_manifest(Snapshot.load(path))


def test_symlink_manifest_never_writes_or_deletes_through_a_link_out_of_the_root(tmp_path):
    # issue 24 item 7: a linked _symlink_format_manifest wrote outside and deleted a file there
    path = str(tmp_path / "t")
    commit_arrow(path, pa.table({"id": [1, 2], "p": ["a", "b"]}), options={"partitionBy": "p"})
    outside = tmp_path / "outside"
    (outside / "p=zzz").mkdir(parents=True)
    canary = outside / "p=zzz" / "manifest"  # what the stale-manifest cleanup used to delete
    canary.write_bytes(b"canary")
    os.symlink(outside, os.path.join(path, "_symlink_format_manifest"))
    with pytest.raises(PathEscapeError, match="outside|out of"):
        generate_manifest(Snapshot.load(path))
    assert sorted(os.listdir(outside)) == ["p=zzz"] and canary.read_bytes() == b"canary"
    # a partition directory of the manifests that is a link out of the root, likewise
    os.remove(os.path.join(path, "_symlink_format_manifest"))
    os.makedirs(os.path.join(path, "_symlink_format_manifest"))
    os.symlink(outside / "p=zzz", os.path.join(path, "_symlink_format_manifest", "p=b"))
    with pytest.raises(PathEscapeError, match="p=b"):
        generate_manifest(Snapshot.load(path))
    assert canary.read_bytes() == b"canary" and os.listdir(outside / "p=zzz") == ["manifest"]
    assert not os.path.exists(os.path.join(path, "_symlink_format_manifest", "p=a"))  # nothing written
    # a stale partition link out of the root: never listed through, never deleted through
    os.remove(os.path.join(path, "_symlink_format_manifest", "p=b"))
    os.symlink(outside / "p=zzz", os.path.join(path, "_symlink_format_manifest", "p=old"))
    written = generate_manifest(Snapshot.load(path))
    assert sorted(written) == ["_symlink_format_manifest/p=a/manifest", "_symlink_format_manifest/p=b/manifest"]
    assert canary.read_bytes() == b"canary"
    # a manifest file that is a link to a file outside is replaced, its target never written
    target = outside / "victim"
    target.write_bytes(b"victim")
    os.remove(os.path.join(path, "_symlink_format_manifest", "p=a", "manifest"))
    os.symlink(target, os.path.join(path, "_symlink_format_manifest", "p=a", "manifest"))
    generate_manifest(Snapshot.load(path))
    assert target.read_bytes() == b"victim"
    assert not os.path.islink(os.path.join(path, "_symlink_format_manifest", "p=a", "manifest"))


def test_convert_refuses_links_out_of_the_directory_and_second_names(tmp_path):
    # issue 24 item 7: a linked file outside the directory had its rows added to the table
    root = _parquet_dir(str(tmp_path / "pq"), partitioned=False)
    outside = tmp_path / "outside"
    outside.mkdir()
    pq.write_table(pa.table({"id": pa.array([99], pa.int64()), "name": ["o"], "f": [9.0]}), outside / "x.parquet")
    link = os.path.join(root, "linked.parquet")
    cases = [
        (lambda: os.symlink(outside / "x.parquet", link), "outside"),
        (lambda: os.symlink(tmp_path / "nowhere.parquet", link), "dangling"),
        (lambda: os.symlink("part-2024-01-01.parquet", link), "same file"),
        (lambda: os.symlink(outside, link), "outside"),  # a directory link out
    ]
    for make, why in cases:
        make()
        with pytest.raises(PathEscapeError, match=f"linked.parquet.*{why}"):
            convert_to_delta(Storage(root))
        assert not os.path.exists(os.path.join(root, "_delta_log"))
        os.remove(link)
    # a link inside the directory to a file inside it (listed nowhere else) is followed
    os.makedirs(os.path.join(root, "_store"))
    pq.write_table(
        pa.table({"id": pa.array([7], pa.int64()), "name": ["s"], "f": [7.0]}),
        os.path.join(root, "_store", "s.parquet"),
    )
    os.symlink("_store/s.parquet", os.path.join(root, "more.parquet"))
    convert_to_delta(Storage(root))
    assert "more.parquet" in Snapshot.load(root).files.column("path").to_pylist()
    ids = sorted(deltalake_table(root).column("id").to_pylist())
    assert ids == [1, 1, 1, 2, 2, 2, 3, 3, 3, 7]


def test_convert_without_stats_and_linked_file_sizes(tmp_path):
    """collectStats=false writes adds without stats; a link inside the directory is added
    with its target's size (not the link's)."""
    root = _parquet_dir(str(tmp_path / "pq"), partitioned=False)
    os.makedirs(os.path.join(root, "_store"))
    target = os.path.join(root, "_store", "s.parquet")
    pq.write_table(pa.table({"id": pa.array([7], pa.int64()), "name": ["s"], "f": [7.0]}), target)
    os.symlink("_store/s.parquet", os.path.join(root, "more.parquet"))
    convert_to_delta(Storage(root), collect_stats=False)
    adds = {a["add"]["path"]: a["add"] for a in log_actions(root, 0) if "add" in a}
    assert all("stats" not in a for a in adds.values()) and len(adds) == 4
    assert adds["more.parquet"]["size"] == os.path.getsize(target)
    assert adds["more.parquet"]["size"] != os.lstat(os.path.join(root, "more.parquet")).st_size
    assert deltalake_table(root).num_rows == 10


@pytest.mark.parametrize("backend", ["local", "memory"])
def test_first_write_beside_plain_files_is_refused_but_a_crashed_first_write_retries(tmp_path, backend):
    # issue 24 item 11, without Spark: commit_arrow's plan refuses a folder of plain Parquet
    # files; a first write that died before its commit leaves its own files, and the retry
    # (or a concurrent first writer) must not take them for a foreign folder
    import uuid

    import fsspec

    from delta_pyds.protocol.schema_evolution import from_arrow_schema
    from delta_pyds.write.options import WriteOptions
    from delta_pyds.write.parquet_writer import write_task
    from delta_pyds.write.plan import plan_write

    base = str(tmp_path) if backend == "local" else f"memory://first-{uuid.uuid4().hex}"
    plain, fresh = f"{base}/plain", f"{base}/fresh"
    fs = fsspec.filesystem("file" if backend == "local" else "memory")
    fs.makedirs(plain, exist_ok=True)
    with fs.open(f"{plain}/part-0.parquet", "wb") as f:
        pq.write_table(pa.table({"v": [1]}), f)
    with pytest.raises(TableExistsError, match="convertToDelta"):
        commit_arrow(plain, pa.table({"v": [2]}))
    assert fs.ls(plain, detail=False) == [fs._strip_protocol(f"{plain}/part-0.parquet")]  # nothing written
    data = pa.table({"v": [5, 6]})
    plan = plan_write(WriteOptions.parse({"path": fresh}, overwrite=False), from_arrow_schema(data.schema))
    crashed = write_task(plan.spec, data.to_batches())  # files written, the commit never happened
    assert crashed.adds
    commit_arrow(fresh, pa.table({"v": [7]}))  # the retry
    assert commit_arrow(fresh, pa.table({"v": [8]})).version == 1
    snapshot = Snapshot.load(fresh)
    assert snapshot.files.num_rows == 2 and not set(snapshot.files.column("path").to_pylist()) & {
        a["path"] for a in crashed.adds
    }
