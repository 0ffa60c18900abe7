"""Parquet checkpoints are decoded batch by batch: the same file table whatever the batch
size, and a peak memory while replaying that stays within a small multiple of the file
table (read whole, the decoded file sat beside its filtered and normalized copies)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid

import pytest
from conftest import DATA

import delta_pyds.log.checkpoint_reader as checkpoint_reader
from delta_pyds.table.snapshot import Snapshot

CHECKPOINTED = sorted(
    os.path.relpath(os.path.dirname(d), DATA)
    for d, _, names in os.walk(DATA)
    if os.path.basename(d) == "_delta_log" and any(n.endswith(".checkpoint.parquet") for n in names)
)


@pytest.mark.parametrize("name", CHECKPOINTED[:40])
def test_small_batches_give_the_same_files(monkeypatch, name):
    path = os.path.join(DATA, name)
    try:
        whole = Snapshot.load(path)
        expected = (whole.files, whole.tombstones)
    except Exception as exc:  # a table the reader refuses is refused the same way
        monkeypatch.setattr(checkpoint_reader, "CHECKPOINT_BATCH_ROWS", 2)
        with pytest.raises(type(exc)):
            Snapshot.load(path).files
        return
    monkeypatch.setattr(checkpoint_reader, "CHECKPOINT_BATCH_ROWS", 2)
    batched = Snapshot.load(path)
    assert batched.files.to_pylist() == expected[0].to_pylist()
    assert batched.tombstones.to_pylist() == expected[1].to_pylist()


def _checkpointed_log(path: str, n: int) -> None:
    from deltalake import DeltaTable

    os.makedirs(os.path.join(path, "_delta_log"))
    fields = [{"name": "part", "type": "integer", "nullable": True, "metadata": {}}] + [
        {"name": f"c{i}", "type": "long", "nullable": True, "metadata": {}} for i in range(4)
    ]
    meta = {
        "id": str(uuid.uuid4()),
        "format": {"provider": "parquet", "options": {}},
        "schemaString": json.dumps({"type": "struct", "fields": fields}),
        "partitionColumns": ["part"],
        "configuration": {},
        "createdTime": 0,
    }
    lines = [
        json.dumps({"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}}),
        json.dumps({"metaData": meta}),
        json.dumps({"commitInfo": {"timestamp": 1_700_000_000_000, "operation": "WRITE"}}),
    ]
    for k in range(n):
        stats = {
            "numRecords": 1000,
            "minValues": {f"c{i}": k * 1000 + i for i in range(4)},
            "maxValues": {f"c{i}": k * 1000 + 999 + i for i in range(4)},
            "nullCount": {f"c{i}": 0 for i in range(4)},
        }
        add = {
            "path": f"part={k % 10}/f{k}.parquet",
            "partitionValues": {"part": str(k % 10)},
            "size": 10_000 + k,
            "modificationTime": 1_700_000_000_000,
            "dataChange": True,
            "stats": json.dumps(stats),
        }
        lines.append(json.dumps({"add": add}))
    with open(os.path.join(path, "_delta_log", f"{0:020d}.json"), "w") as f:
        f.write("\n".join(lines) + "\n")
    DeltaTable(path).create_checkpoint()


PEAK = """
import sys
def status(key):
    return [int(l.split()[1]) for l in open('/proc/self/status') if l.startswith(key)][0] * 1024
from delta_pyds.table.snapshot import Snapshot
s = Snapshot.load(sys.argv[1])
before = status('VmRSS')
files = s.files
print(status('VmHWM') - before, files.nbytes)
"""


@pytest.mark.slow
def test_checkpoint_replay_peak_memory_is_a_small_multiple_of_the_file_table(tmp_path):
    path = str(tmp_path / "t")
    _checkpointed_log(path, 150_000)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    out = subprocess.run([sys.executable, "-c", PEAK, path], capture_output=True, text=True, check=True, env=env)
    growth, table_bytes = (int(v) for v in out.stdout.split())
    assert table_bytes > 40 << 20  # stats text dominates: about 300 bytes per file
    # 150k adds: 174 MiB for a 46 MiB table batched (1M: 1.9x), 262 MiB read whole (1M: 4.5x)
    assert growth < 4.5 * table_bytes, (growth >> 20, table_bytes >> 20)
