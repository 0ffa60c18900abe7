"""Concurrent appenders through the core Transaction API: commits per second and retries.

Each writer process writes small Parquet files and commits one blind append per file;
all race for the same next versions. Used by ``bench/run.py concurrent``."""

from __future__ import annotations

import io
import json
import multiprocessing as mp
import os
import shutil
import time
import uuid


def _writer(root: str, wid: int, commits: int, out) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from delta_pyds.storage.store import Storage
    from delta_pyds.transaction.commit import Transaction

    storage = Storage(root)
    attempts = 0
    for seq in range(commits):
        name = f"w{wid}-{seq}-{uuid.uuid4().hex[:8]}.parquet"
        buf = io.BytesIO()
        pq.write_table(pa.table({"writer": pa.array([wid], pa.int64()), "seq": pa.array([seq], pa.int64())}), buf)
        data = buf.getvalue()
        storage.fs.pipe_file(storage.join(name), data)
        txn = Transaction.start(storage)
        txn.add_files(
            [
                {
                    "path": name,
                    "partitionValues": {},
                    "size": len(data),
                    "modificationTime": int(time.time() * 1000),
                    "dataChange": True,
                    "stats": json.dumps({"numRecords": 1}),
                }
            ]
        )
        attempts += txn.commit("WRITE", {"mode": "Append"}, max_attempts=1000).attempts
    out.put(attempts)


def run_appenders(root: str, *, writers: int = 4, commits_each: int = 10) -> dict:
    from delta_pyds.protocol.actions import Metadata, Protocol
    from delta_pyds.storage.store import Storage
    from delta_pyds.table.snapshot import Snapshot
    from delta_pyds.transaction.commit import Transaction

    shutil.rmtree(root, ignore_errors=True)
    os.makedirs(root)
    schema = {
        "type": "struct",
        "fields": [
            {"name": "writer", "type": "long", "nullable": True, "metadata": {}},
            {"name": "seq", "type": "long", "nullable": True, "metadata": {}},
        ],
    }
    txn = Transaction(Storage(root))
    txn.update_metadata(
        Metadata(id=str(uuid.uuid4()), schema_string=json.dumps(schema), created_time=int(time.time() * 1000))
    )
    txn.update_protocol(Protocol(1, 2))
    txn.commit("CREATE TABLE")
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    procs = [ctx.Process(target=_writer, args=(root, w, commits_each, out)) for w in range(writers)]
    start = time.perf_counter()
    for p in procs:
        p.start()
    attempts = sum(out.get() for _ in procs)
    for p in procs:
        p.join()
    elapsed = time.perf_counter() - start
    snap = Snapshot.load(root)
    committed = writers * commits_each
    return {
        "writers": writers,
        "commits": committed,
        "seconds": round(elapsed, 2),
        "commits_per_second": round(committed / elapsed, 1),
        "retries": attempts - committed,
        "files_in_table": snap.files.num_rows,
        "lost": committed - snap.files.num_rows,
        "final_version": snap.version,
    }


if __name__ == "__main__":
    print(run_appenders("/tmp/pydelta-bench/concurrent-cli"))
