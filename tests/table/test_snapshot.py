"""Snapshots without Spark (delta_pyds.table.snapshot over log/ segment and replay): real
tables against deltalake, checkpoint fallbacks, time travel, feature gating."""

from __future__ import annotations

import json
import os
import shutil
from urllib.parse import unquote

import pytest
from conftest import DATA, table_path

from delta_pyds.errors import CorruptLogError, TableNotFoundError, UnsupportedFeatureError, VersionNotFoundError
from delta_pyds.log.segment import list_log
from delta_pyds.table.snapshot import Snapshot

ALL_TABLES = sorted(
    f"{src}/{name}"
    for src in ("delta-rs", "kernel-rs")
    for name in os.listdir(os.path.join(DATA, src))
    if os.path.isdir(os.path.join(DATA, src, name, "_delta_log"))
)

# deltalake cannot open these (features it lacks); their expectations are checked elsewhere
DELTALAKE_CANNOT = {"delta-rs/simple_table_features", "kernel-rs/table-with-geo", "kernel-rs/crc-malformed"}


def deltalake_files(path, version=None):
    from deltalake import DeltaTable

    dt = DeltaTable(path, version=version) if version is not None else DeltaTable(path)
    return dt.version(), sorted(unquote(p) for p in dt.get_add_actions(flatten=True).column("path").to_pylist())


@pytest.mark.parametrize("name", [t for t in ALL_TABLES if t not in DELTALAKE_CANNOT])
def test_active_files_match_deltalake_at_every_version(name):
    path = table_path(name)
    latest = Snapshot.load(path)
    commits = [f.version for f in list_log(latest.storage) if f.kind == "commit"]  # the whole log
    first = min(commits) if commits else latest.version
    versions = sorted({first, (first + latest.version) // 2, latest.version})
    for v in versions:
        try:
            expected_version, expected = deltalake_files(path, v)
        except Exception:  # deltalake cannot reconstruct this version either
            continue
        snap = Snapshot.load(path, version=v)
        assert snap.version == expected_version == v
        assert sorted(snap.files.column("path").to_pylist()) == expected, f"version {v}"


def test_checkpoint_plus_commits_replay():
    snap = Snapshot.load(table_path("delta-rs/simple_table_with_checkpoint"))
    assert snap.segment.checkpoint_version == 10 and snap.version == 10
    assert snap.files.num_rows == 1 + 10 - 0  # every version appended one file


def test_v2_checkpoint_with_sidecars_reads_sidecar_files():
    snap = Snapshot.load(table_path("kernel-rs/v2-checkpoints-parquet-with-sidecars"))
    assert snap.segment.checkpoint[0].checkpoint_kind == "v2"
    assert snap.files.num_rows == 101


def test_multi_part_checkpoint_missing_part_falls_back(copy_table):
    path = copy_table("kernel-rs/v1-multi-part-struct-stats-only")
    log_dir = os.path.join(path, "_delta_log")
    expected = sorted(Snapshot.load(path).files.column("path").to_pylist())
    os.remove(os.path.join(log_dir, "00000000000000000005.checkpoint.0000000002.0000000003.parquet"))
    snap = Snapshot.load(path)
    assert snap.segment.checkpoint_version is None  # incomplete: not used
    assert sorted(snap.files.column("path").to_pylist()) == expected


def test_corrupt_checkpoint_falls_back_to_commits(copy_table):
    path = copy_table("delta-rs/simple_table_with_checkpoint")
    expected = sorted(Snapshot.load(path).files.column("path").to_pylist())
    with open(os.path.join(path, "_delta_log", "00000000000000000010.checkpoint.parquet"), "wb") as f:
        f.write(b"not parquet at all")
    snap = Snapshot.load(path)
    assert sorted(snap.files.column("path").to_pylist()) == expected


def test_corrupt_or_stale_last_checkpoint_is_ignored(copy_table):
    path = copy_table("kernel-rs/v2-checkpoints-json-with-sidecars")
    expected = sorted(Snapshot.load(path).files.column("path").to_pylist())
    hint = os.path.join(path, "_delta_log", "_last_checkpoint")
    with open(hint, "w") as f:
        f.write('{"version": 999, "size": 1}')  # stale: points past the log
    assert sorted(Snapshot.load(path).files.column("path").to_pylist()) == expected
    with open(hint, "w") as f:
        f.write("{garbage")
    assert Snapshot.load(path).version == 6


def test_gap_in_commits_is_a_clear_error(copy_table):
    path = copy_table("delta-rs/simple_table")
    os.remove(os.path.join(path, "_delta_log", "00000000000000000002.json"))
    with pytest.raises(CorruptLogError, match="00000000000000000002.json"):
        Snapshot.load(path)
    # versions before the gap are still readable
    assert Snapshot.load(path, version=1).version == 1


def test_version_not_found():
    path = table_path("delta-rs/simple_table")
    with pytest.raises(VersionNotFoundError, match="latest version of the table is 4"):
        Snapshot.load(path, version=5)
    with pytest.raises(VersionNotFoundError):
        Snapshot.load(path, version=-1)


def test_vacuumed_commits_cannot_be_time_travelled():
    path = table_path("delta-rs/checkpoints_vacuumed")
    snap = Snapshot.load(path)
    assert snap.version == 12
    first = min(f.version for f in list_log(snap.storage) if f.kind == "commit")
    assert first > 0
    with pytest.raises(VersionNotFoundError):
        Snapshot.load(path, version=first - 1)


def test_not_a_table(tmp_path):
    with pytest.raises(TableNotFoundError):
        Snapshot.load(str(tmp_path))
    with pytest.raises(TableNotFoundError):
        Snapshot.load(str(tmp_path / "missing"))


def test_timestamp_as_of_uses_file_times(copy_table):
    path = copy_table("delta-rs/simple_table")
    log_dir = os.path.join(path, "_delta_log")
    base = 1_700_000_000
    for v in range(5):
        # versions 2 and 3 share a modification time: delta-spark makes them increasing
        t = base + 100 * (v if v != 3 else 2)
        os.utime(os.path.join(log_dir, f"{v:020d}.json"), (t, t))
    assert Snapshot.load(path, timestamp=base * 1000).version == 0
    assert Snapshot.load(path, timestamp=(base + 150) * 1000).version == 1
    assert Snapshot.load(path, timestamp=(base + 200) * 1000).version == 2
    assert Snapshot.load(path, timestamp=(base + 200) * 1000 + 1).version == 3  # adjusted +1 ms
    assert Snapshot.load(path, timestamp=(base + 400) * 1000).version == 4
    assert Snapshot.load(path, timestamp="2023-11-14T22:16:40Z").version == 2  # base+200 s
    assert Snapshot.load(path, timestamp="2023-11-14 22:16:40.001").version == 3
    with pytest.raises(VersionNotFoundError, match="before the earliest"):
        Snapshot.load(path, timestamp=(base - 1) * 1000)
    with pytest.raises(VersionNotFoundError, match="after the latest"):
        Snapshot.load(path, timestamp=(base + 401) * 1000)
    with pytest.raises(ValueError, match="timestampAsOf"):
        Snapshot.load(path, timestamp="yesterday")


def test_timestamp_as_of_uses_in_commit_timestamps(copy_table):
    path = copy_table("delta-rs/cdc_ict_table")
    for name in os.listdir(os.path.join(path, "_delta_log")):  # file times must not matter
        os.utime(os.path.join(path, "_delta_log", name), (1, 1))
    assert Snapshot.load(path, timestamp=1783874212175).version == 2
    assert Snapshot.load(path, timestamp=1783874213000).version == 2
    assert Snapshot.load(path, timestamp=1783874213881).version == 3


def test_app_transactions_and_domain_metadata():
    snap = Snapshot.load(table_path("kernel-rs/app-txn-checkpoint"))
    assert snap.app_transactions == {"my-app": 3, "my-app2": 2}
    dm = Snapshot.load(table_path("delta-rs/table-with-domain-metadata")).domain_metadata
    assert dm  # kept from the checkpoint
    for domain, conf in dm.items():
        assert isinstance(domain, str) and isinstance(conf, str)


def _write_table(path, protocol, schema=None):
    os.makedirs(os.path.join(path, "_delta_log"))
    schema = schema or {"type": "struct", "fields": [{"name": "a", "type": "long", "nullable": True, "metadata": {}}]}
    lines = [
        {"protocol": protocol},
        {
            "metaData": {
                "id": "x",
                "format": {"provider": "parquet", "options": {}},
                "schemaString": json.dumps(schema),
                "partitionColumns": [],
                "configuration": {},
            }
        },
    ]
    with open(os.path.join(path, "_delta_log", f"{0:020d}.json"), "w") as f:
        f.write("\n".join(json.dumps(x) for x in lines) + "\n")


def test_unsupported_reader_features_are_named(tmp_path):
    p = str(tmp_path / "t")
    _write_table(
        p,
        {
            "minReaderVersion": 3,
            "minWriterVersion": 7,
            "readerFeatures": ["deletionVectors", "fancyNewThing"],
            "writerFeatures": ["deletionVectors"],
        },
    )
    with pytest.raises(UnsupportedFeatureError, match="fancyNewThing") as info:
        Snapshot.load(p)
    assert info.value.features == ("fancyNewThing",)
    p2 = str(tmp_path / "t2")
    _write_table(p2, {"minReaderVersion": 4, "minWriterVersion": 7})
    with pytest.raises(UnsupportedFeatureError, match="reader version 4"):
        Snapshot.load(p2)
    p3 = str(tmp_path / "t3")  # unknown writer-only features do not block reads
    _write_table(p3, {"minReaderVersion": 1, "minWriterVersion": 7, "writerFeatures": ["someWriterThing"]})
    assert Snapshot.load(p3).version == 0


def test_reader_feature_tables_refused_by_name():
    with pytest.raises(UnsupportedFeatureError, match="geospatial"):
        Snapshot.load(table_path("kernel-rs/table-with-geo"))


@pytest.mark.parametrize("feature", ["catalogManaged", "catalogOwned-preview"])
def test_catalog_managed_tables_are_refused_with_the_reason(tmp_path, feature):
    p = str(tmp_path / "t")
    _write_table(
        p,
        {
            "minReaderVersion": 3,
            "minWriterVersion": 7,
            "readerFeatures": [feature],
            "writerFeatures": [feature, "inCommitTimestamp"],
        },
    )
    with pytest.raises(UnsupportedFeatureError, match=f"{feature} .catalog-managed tables need the catalog"):
        Snapshot.load(p)


def test_unknown_actions_and_fields_are_ignored(tmp_path):
    p = str(tmp_path / "t")
    _write_table(p, {"minReaderVersion": 1, "minWriterVersion": 2})
    with open(os.path.join(p, "_delta_log", f"{1:020d}.json"), "w") as f:
        f.write(json.dumps({"futureAction": {"x": 1}}) + "\n")
        f.write(
            json.dumps(
                {
                    "add": {
                        "path": "a%20b.parquet",
                        "partitionValues": {},
                        "size": 3,
                        "modificationTime": 1,
                        "dataChange": True,
                        "newField": [1, 2],
                    }
                }
            )
            + "\n"
        )
    snap = Snapshot.load(p)
    assert snap.files.column("path").to_pylist() == ["a b.parquet"]  # URI-decoded


def test_add_remove_reconciliation_with_deletion_vector_keys(tmp_path):
    p = str(tmp_path / "t")
    _write_table(p, {"minReaderVersion": 1, "minWriterVersion": 2})
    dv = {
        "storageType": "i",
        "pathOrInlineDv": "wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L",
        "sizeInBytes": 40,
        "cardinality": 6,
    }

    def add(path, dv=None):
        a = {"path": path, "partitionValues": {}, "size": 1, "modificationTime": 1, "dataChange": True}
        if dv:
            a["deletionVector"] = dv
        return {"add": a}

    def remove(path, dv=None):
        r = {"path": path, "deletionTimestamp": 1, "dataChange": True}
        if dv:
            r["deletionVector"] = dv
        return {"remove": r}

    commits = [
        [add("f1"), add("f2")],
        [remove("f1"), add("f1", dv)],  # same path, new DV: a different logical file
        [remove("f2"), add("f3")],
        [add("f2")],
    ]  # re-added after removal
    for i, actions in enumerate(commits, start=1):
        with open(os.path.join(p, "_delta_log", f"{i:020d}.json"), "w") as f:
            f.write("\n".join(json.dumps(a) for a in actions) + "\n")
    files = Snapshot.load(p).files.to_pylist()
    got = sorted((f["path"], (f["deletion_vector"] or {}).get("pathOrInlineDv")) for f in files)
    assert got == [("f1", dv["pathOrInlineDv"]), ("f2", None), ("f3", None)]
    at2 = sorted(f["path"] for f in Snapshot.load(p, version=2).files.to_pylist())
    assert at2 == ["f1", "f2"]


def test_malformed_json_line_is_a_clear_error(tmp_path):
    p = str(tmp_path / "t")
    _write_table(p, {"minReaderVersion": 1, "minWriterVersion": 2})
    with open(os.path.join(p, "_delta_log", f"{1:020d}.json"), "w") as f:
        f.write('{"add": {"path": "x", "size": "not a number"}}\n{"add": \n')
    with pytest.raises(CorruptLogError, match="not valid JSON|malformed|integer"):
        Snapshot.load(p).files


def test_missing_metadata_is_a_clear_error(tmp_path):
    p = str(tmp_path / "t")
    os.makedirs(os.path.join(p, "_delta_log"))
    with open(os.path.join(p, "_delta_log", f"{0:020d}.json"), "w") as f:
        f.write(json.dumps({"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}}) + "\n")
    with pytest.raises(CorruptLogError, match="metaData"):
        Snapshot.load(p)


def test_log_compaction_files_give_the_same_state(tmp_path):
    path = str(tmp_path / "compacted")
    plain = str(tmp_path / "plain")
    shutil.copytree(table_path("kernel-rs/compacted-log-files-table"), path)
    shutil.copytree(table_path("kernel-rs/compacted-log-files-table"), plain)
    for name in os.listdir(os.path.join(plain, "_delta_log")):
        if name.endswith(".compacted.json"):
            os.remove(os.path.join(plain, "_delta_log", name))

    def state(p, v):
        snap = Snapshot.load(p, version=v)
        files = sorted((f["path"], (f["deletion_vector"] or {}).get("pathOrInlineDv")) for f in snap.files.to_pylist())
        return files, snap.metadata, snap.protocol

    used = Snapshot.load(path).segment
    assert any(f.kind == "compaction" for f in used.replay_files)
    for v in range(used.version + 1):
        assert state(path, v) == state(plain, v), v
