"""Adding and dropping table features without Spark (delta_pyds.operations.feature_support),
checked on the log and with deltalake (delta-rs)."""

from __future__ import annotations

import json
import os

import deltalake
import pyarrow as pa
import pytest
from helpers import deltalake_table

from delta_pyds.errors import FeatureDropError, UnsupportedFeatureError
from delta_pyds.operations.feature_support import add_feature_support, drop_feature_support
from delta_pyds.operations.properties import set_properties
from delta_pyds.protocol import features
from delta_pyds.storage.store import Storage
from delta_pyds.table.snapshot import Snapshot
from delta_pyds.write.plan import commit_arrow


def _table(path, **options):
    commit_arrow(path, pa.table({"id": pa.array([1, 2, 3], pa.int64())}), options=options or None)
    return path


def _age_log(path, days):
    """Makes every log entry ``days`` old, as if that much time had passed."""
    import time

    old = time.time() - days * 86400
    log = os.path.join(path, "_delta_log")
    for root, _, names in os.walk(log):
        for n in names:
            os.utime(os.path.join(root, n), (old, old))


def min_log_version(path):
    names = os.listdir(os.path.join(path, "_delta_log"))
    return min(int(n[:20]) for n in names if n.endswith(".json") and n[:20].isdigit())


def _protocol(path):
    p = Snapshot.load(path).protocol
    return p.min_reader_version, p.min_writer_version, set(p.reader_features or ()), set(p.writer_features or ())


def test_add_feature_support_upgrades_legacy_protocol(tmp_path):
    path = _table(str(tmp_path / "t"))
    assert _protocol(path)[:2] == (1, 2)
    v = add_feature_support(Storage(path), "DELETIONVECTORS")  # case-insensitive, as delta-spark
    r, w, rf, wf = _protocol(path)
    assert (r, w) == (3, 7) and rf == {"deletionVectors"}
    assert {"appendOnly", "invariants", "deletionVectors"} <= wf  # legacy (1, 2) features kept
    assert add_feature_support(Storage(path), "deletionVectors") == v  # already there: no commit
    add_feature_support(Storage(path), "changeDataFeed")  # a writer feature
    assert "changeDataFeed" in _protocol(path)[3]
    with pytest.raises(UnsupportedFeatureError, match="noSuchFeature"):
        add_feature_support(Storage(path), "noSuchFeature")
    with pytest.raises(UnsupportedFeatureError, match="icebergCompatV1"):
        add_feature_support(Storage(path), "icebergCompatV1")  # delta_pyds cannot write it
    assert Snapshot.load(path).files.num_rows == 1


def test_add_then_drop_a_writer_feature_leaves_the_protocol_delta_spark_leaves(tmp_path):
    # delta-spark (python/delta/tests/test_deltatable.py): addFeatureSupport of a feature the
    # legacy protocol does not support upgrades to writer version 7 listing the implied features
    # plus that one; a feature it already supports commits nothing; a drop normalizes back to the
    # legacy protocol holding the rest (a legacy (1, 4) implied generatedColumns, kept by the drop)
    path = _table(str(tmp_path / "t"))
    v = Snapshot.load(path).version
    assert add_feature_support(Storage(path), "appendOnly") == v and _protocol(path) == (1, 2, set(), set())
    add_feature_support(Storage(path), "changeDataFeed")
    assert _protocol(path) == (1, 7, set(), {"appendOnly", "invariants", "changeDataFeed"})
    set_properties(Storage(path), {"delta.constraints.pos": "id > 0"})
    assert _protocol(path) == (1, 7, set(), {"appendOnly", "invariants", "changeDataFeed", "checkConstraints"})
    drop_feature_support(Storage(path), "changeDataFeed")
    assert _protocol(path) == (1, 3, set(), set())
    assert deltalake.DeltaTable(path).protocol().min_writer_version == 3
    assert deltalake_table(path).num_rows == 3


def test_drop_writer_features(tmp_path):
    props = {"delta.enableChangeDataFeed": "true", "delta.enableInCommitTimestamps": "true"}
    path = _table(str(tmp_path / "t"), **props)
    set_properties(Storage(path), {"delta.constraints.pos": "id > 0"})
    assert {"changeDataFeed", "inCommitTimestamp", "checkConstraints"} <= _protocol(path)[3]
    with pytest.raises(FeatureDropError, match="pos"):
        drop_feature_support(Storage(path), "checkConstraints")
    drop_feature_support(Storage(path), "changeDataFeed")
    snap = Snapshot.load(path)
    assert not features.is_enabled(snap.protocol, "changeDataFeed")
    assert "delta.enableChangeDataFeed" not in snap.configuration
    drop_feature_support(Storage(path), "inCommitTimestamp")
    snap = Snapshot.load(path)
    assert not features.is_enabled(snap.protocol, "inCommitTimestamp")
    ict_keys = ("delta.inCommitTimestamp", "delta.enableInCommitTimestamps")
    assert not any(k.startswith(ict_keys) for k in snap.configuration)
    with open(os.path.join(path, "_delta_log", f"{snap.version:020d}.json")) as f:
        info = json.loads(f.readline())["commitInfo"]
    assert info["operation"] == "DROP FEATURE" and info["operationParameters"]["featureName"] == "inCommitTimestamp"
    with pytest.raises(FeatureDropError, match="does not have"):
        drop_feature_support(Storage(path), "changeDataFeed")
    with pytest.raises(UnsupportedFeatureError, match="rowTracking"):
        add_feature_support(Storage(path), "rowTracking")
        drop_feature_support(Storage(path), "rowTracking")
    assert deltalake_table(path).num_rows == 3


def test_drop_deletion_vectors_never_used_is_immediate(tmp_path):
    path = _table(str(tmp_path / "t"), **{"delta.enableDeletionVectors": "true"})
    drop_feature_support(Storage(path), "deletionVectors")
    snap = Snapshot.load(path)
    assert not features.is_enabled(snap.protocol, "deletionVectors")
    assert snap.configuration.get("delta.enableDeletionVectors") == "false"
    assert (snap.protocol.min_reader_version, snap.protocol.min_writer_version) == (1, 2)  # legacy again
    assert deltalake_table(path).num_rows == 3


def test_drop_deletion_vectors_with_history_waits(copy_table):
    path = copy_table("delta-rs/table-with-dv-small")
    with pytest.raises(FeatureDropError, match="files with deletion vectors remain"):
        drop_feature_support(Storage(path), "deletionVectors")  # no purge given: nothing can rewrite
    purged = []

    def purge(snap):  # what the Spark layer does: rewrite the files with DVs (here: drop them)
        from delta_pyds.table.state import file_actions
        from delta_pyds.transaction.commit import Transaction
        from delta_pyds.transaction.file_actions import remove_actions

        purged.append(snap.version)
        txn = Transaction(Storage(path), snap)
        txn.remove_files(remove_actions(file_actions(snap).active, data_change=False))
        txn.commit("OPTIMIZE", {})

    with pytest.raises(FeatureDropError, match="truncateHistory=True"):
        drop_feature_support(Storage(path), "deletionVectors", purge=purge)
    snap = Snapshot.load(path)
    assert purged and features.is_enabled(snap.protocol, "deletionVectors")  # still listed: history uses it
    assert snap.configuration.get("delta.enableDeletionVectors") == "false"
    # truncateHistory=True right away: the entries are younger than 24 hours, nothing goes
    with pytest.raises(FeatureDropError, match="Wait 24 hours"):
        drop_feature_support(Storage(path), "deletionVectors", truncate_history=True)
    assert features.is_enabled(Snapshot.load(path).protocol, "deletionVectors")
    # 24 hours later (log entries aged): the history is truncated and the feature dropped
    _age_log(path, days=3)
    drop_feature_support(Storage(path), "deletionVectors", truncate_history=True)
    snap = Snapshot.load(path)
    assert not features.is_enabled(snap.protocol, "deletionVectors")
    assert not os.path.exists(os.path.join(path, "_delta_log", "00000000000000000000.json"))  # truncated
    assert snap.files.num_rows == 0 and min_log_version(path) > 0  # the log starts at a checkpoint now
    with open(os.path.join(path, "_delta_log", f"{snap.version:020d}.json")) as f:
        assert json.loads(f.readline())["commitInfo"]["operationParameters"]["truncateHistory"] == "true"


def test_drop_v2_checkpoint_writes_a_classic_checkpoint_first(copy_table):
    path = copy_table("delta-rs/checkpoint-v2-table")
    with pytest.raises(FeatureDropError, match="V2 checkpoints remain"):
        drop_feature_support(Storage(path), "v2Checkpoint")
    snap = Snapshot.load(path)
    assert os.path.exists(os.path.join(path, "_delta_log", f"{snap.version:020d}.checkpoint.parquet"))
    assert snap.configuration.get("delta.checkpointPolicy") is None
    rows = Snapshot.load(path).files.num_rows
    # 24 hours later, truncateHistory=True deletes the old entries (the V2 checkpoints too)
    _age_log(path, days=3)
    drop_feature_support(Storage(path), "v2Checkpoint", truncate_history=True)
    snap = Snapshot.load(path)
    assert not features.is_enabled(snap.protocol, "v2Checkpoint")
    assert not [n for n in os.listdir(os.path.join(path, "_delta_log")) if ".checkpoint." in n and n.endswith(".json")]
    assert snap.files.num_rows == rows
    assert deltalake_table(path).num_rows == sum(
        json.loads(s)["numRecords"] for s in snap.files.column("stats").to_pylist()
    )


def test_drop_refuses_unsafe_and_unknown(tmp_path):
    path = _table(str(tmp_path / "cm"), **{"delta.columnMapping.mode": "name"})
    with pytest.raises(UnsupportedFeatureError, match="columnMapping"):
        drop_feature_support(Storage(path), "columnMapping")
    with pytest.raises(UnsupportedFeatureError, match="noSuch"):
        drop_feature_support(Storage(path), "noSuch")
    with pytest.raises(TypeError):
        drop_feature_support(Storage(path), None)  # type: ignore[arg-type]


@pytest.mark.parametrize("tear", ["truncated", "garbage", "empty"])
def test_drop_with_a_torn_older_checkpoint_raises_only_named_errors(copy_table, tear):
    """#24 item 13: a torn older checkpoint made truncateHistory=True fail with a raw
    pyarrow ArrowInvalid. It now counts as an entry that may use the feature: a named
    FeatureDropError while it is younger than 24 hours, then truncation deletes it."""
    from delta_pyds.transaction.checkpoint_writer import write_checkpoint

    path = copy_table("delta-rs/table-with-dv-small")
    storage = Storage(path)
    old = Snapshot.load(path).version
    write_checkpoint(storage, old)  # the older checkpoint, torn below
    set_properties(storage, {"delta.appendOnly": "false"})  # a newer version, checkpointed
    write_checkpoint(storage, Snapshot.load(path).version)
    torn = os.path.join(path, "_delta_log", f"{old:020d}.checkpoint.parquet")
    data = open(torn, "rb").read()
    with open(torn, "wb") as f:
        f.write({"truncated": data[: len(data) // 2], "garbage": b"PAR1 not parquet", "empty": b""}[tear])

    def purge(snap):
        from delta_pyds.table.state import file_actions
        from delta_pyds.transaction.commit import Transaction
        from delta_pyds.transaction.file_actions import remove_actions

        txn = Transaction(storage, snap)
        txn.remove_files(remove_actions(file_actions(snap).active, data_change=False))
        txn.commit("OPTIMIZE", {})

    with pytest.raises(FeatureDropError, match="Wait 24 hours"):
        drop_feature_support(storage, "deletionVectors", purge=purge, truncate_history=True)
    _age_log(path, days=3)
    drop_feature_support(storage, "deletionVectors", purge=purge, truncate_history=True)
    snap = Snapshot.load(path)
    assert not features.is_enabled(snap.protocol, "deletionVectors")
    assert not os.path.exists(torn)  # truncated away with the rest of the old history
    assert deltalake_table(path).num_rows == 0
