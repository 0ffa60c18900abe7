"""Benchmark tables, written once per machine by an independent writer (deltalake), and
generated Delta logs for planning benchmarks. Sizes scale with ``--scale``."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import uuid

import numpy as np
import pyarrow as pa

DATA = os.environ.get("PYDELTA_BENCH_DIR", "/tmp/pydelta-bench")
HERE = os.path.dirname(os.path.abspath(__file__))
# ../shared beside the repository (a worktree under wt/ sits one level deeper)
_TAR = "300k-add-files-100-col-partitioned.tar.zst"
_SHARED = [os.path.join(HERE, *[".."] * up, "shared", "bench", _TAR) for up in (2, 3)]
SHARED_300K = next((p for p in _SHARED if os.path.exists(p)), _SHARED[0])


def _exists(path: str) -> bool:
    return os.path.isdir(os.path.join(path, "_delta_log"))


def scan_table(scale: float) -> str:
    """8 files of 2M x scale rows, 6 common types; disjoint id ranges per file."""
    from deltalake import write_deltalake

    rows = int(2_000_000 * scale)
    path = os.path.join(DATA, f"scan-{rows}")
    if _exists(path):
        return path
    rng = np.random.default_rng(0)
    for f in range(8):
        t = pa.table(
            {
                "id": pa.array(np.arange(f * rows, (f + 1) * rows, dtype=np.int64)),
                "i": pa.array(rng.integers(0, 1000, rows, dtype=np.int32)),
                "x": pa.array(rng.random(rows)),
                "s": pa.array([f"str{v}" for v in rng.integers(0, 100000, rows)]),
                "d": pa.array(rng.integers(0, 20000, rows, dtype=np.int32)).cast(pa.date32()),
                "ts": pa.array(rng.integers(0, 10**15, rows, dtype=np.int64)).cast(pa.timestamp("us", tz="UTC")),
            }
        )
        write_deltalake(path, t, mode="append")
    return path


def wide_table(scale: float, columns: int = 60) -> str:
    """A wide table (60 double columns + id) for narrow-query benchmarks."""
    from deltalake import write_deltalake

    rows = int(1_000_000 * scale)
    path = os.path.join(DATA, f"wide-{rows}x{columns}")
    if _exists(path):
        return path
    rng = np.random.default_rng(2)
    for f in range(4):
        cols = {"id": pa.array(np.arange(f * rows, (f + 1) * rows, dtype=np.int64))}
        for c in range(columns):
            cols[f"c{c}"] = pa.array(rng.random(rows))
        write_deltalake(path, pa.table(cols), mode="append")
    return path


def skip_table(scale: float, files: int = 200) -> str:
    """200 small files with disjoint id ranges (point lookups prune to one file), and a
    partition column ``p`` (10 values) for partition pruning."""
    from deltalake import write_deltalake

    rows = max(1000, int(50_000 * scale))
    path = os.path.join(DATA, f"skip-{files}x{rows}")
    if _exists(path):
        return path
    rng = np.random.default_rng(1)
    for f in range(files):
        t = pa.table(
            {
                "id": pa.array(np.arange(f * rows, (f + 1) * rows, dtype=np.int64)),
                "x": pa.array(rng.random(rows)),
                "s": pa.array([f"v{v}" for v in rng.integers(0, 1000, rows)]),
                "p": pa.array(np.full(rows, f % 10, dtype=np.int32)),
            }
        )
        write_deltalake(path, t, mode="append", partition_by=["p"])
    return path


def log_300k() -> str | None:
    """The shared 300,000-add log (no data files), extracted once."""
    dest = os.path.join(DATA, "300k")
    path = os.path.join(dest, "300k-add-files-100-col-partitioned")
    if _exists(path):
        return path
    if not os.path.exists(SHARED_300K):
        return None
    os.makedirs(dest, exist_ok=True)
    subprocess.run(["tar", "-I", "zstd", "-xf", SHARED_300K, "-C", dest], check=True)
    return path


def generated_log(n_files: int, commits: int, stats_columns: int, *, checkpoint: bool) -> str:
    """A log of ``n_files`` adds spread over ``commits`` JSON commits, with stats on
    ``stats_columns`` long columns; with ``checkpoint`` a classic checkpoint is written
    by deltalake at the last version (the log then replays from it)."""
    name = f"log-{n_files}f-{commits}c-{stats_columns}s-{'cp' if checkpoint else 'json'}"
    path = os.path.join(DATA, name)
    if _exists(path):
        return path
    shutil.rmtree(path, ignore_errors=True)
    log = os.path.join(path, "_delta_log")
    os.makedirs(log)
    fields = [{"name": "part", "type": "integer", "nullable": True, "metadata": {}}] + [
        {"name": f"c{i}", "type": "long", "nullable": True, "metadata": {}} for i in range(stats_columns)
    ]
    meta = {
        "id": str(uuid.uuid4()),
        "format": {"provider": "parquet", "options": {}},
        "schemaString": json.dumps({"type": "struct", "fields": fields}),
        "partitionColumns": ["part"],
        "configuration": {},
        "createdTime": 0,
    }
    per_commit = max(1, n_files // commits)
    k = 0
    for v in range(commits):
        lines = []
        if v == 0:
            lines += [
                json.dumps({"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}}),
                json.dumps({"metaData": meta}),
            ]
        lines.append(json.dumps({"commitInfo": {"timestamp": 1_700_000_000_000 + v, "operation": "WRITE"}}))
        count = per_commit if v < commits - 1 else n_files - k
        for _ in range(count):
            stats = {
                "numRecords": 1000,
                "minValues": {f"c{i}": k * 1000 + i for i in range(stats_columns)},
                "maxValues": {f"c{i}": k * 1000 + 999 + i for i in range(stats_columns)},
                "nullCount": {f"c{i}": 0 for i in range(stats_columns)},
            }
            lines.append(
                json.dumps(
                    {
                        "add": {
                            "path": f"part={k % 10}/f{k}.parquet",
                            "partitionValues": {"part": str(k % 10)},
                            "size": 10_000 + k,
                            "modificationTime": 1_700_000_000_000,
                            "dataChange": True,
                            "stats": json.dumps(stats),
                        }
                    }
                )
            )
            k += 1
        with open(os.path.join(log, f"{v:020d}.json"), "w") as f:
            f.write("\n".join(lines) + "\n")
    if checkpoint:
        from deltalake import DeltaTable

        DeltaTable(path).create_checkpoint()
    return path


def dml_table(path: str, rows: int, files: int, config: dict | None = None) -> str:
    """The DML benchmarks' table: ``rows`` rows (id, grp, val, s) in ``files`` files written by
    deltalake, one commit each (kept when it exists)."""
    from deltalake import write_deltalake

    if os.path.isdir(os.path.join(path, "_delta_log")):
        return path
    shutil.rmtree(path, ignore_errors=True)
    rng = np.random.default_rng(5)
    per = rows // files
    for f in range(files):
        ids = np.arange(f * per, (f + 1) * per, dtype=np.int64)
        write_deltalake(
            path,
            pa.table(
                {
                    "id": pa.array(ids),
                    "grp": pa.array(ids % 1000),
                    "val": pa.array(rng.random(per)),
                    "s": pa.array([f"s{v}" for v in rng.integers(0, 100_000, per)]),
                }
            ),
            mode="append",
            configuration=config,
        )
    return path


def merge_source(rows: int, fraction: float) -> pa.Table:
    """The merge source: ``fraction`` x rows ids, half existing (spread over every file),
    half new (beyond the table's ids)."""
    n = int(rows * fraction)
    half = n // 2
    old = np.linspace(0, rows - 1, half).astype(np.int64)
    new = np.arange(rows, rows + (n - half), dtype=np.int64)
    ids = np.concatenate([old, new])
    return pa.table(
        {
            "id": pa.array(ids),
            "grp": pa.array(ids % 1000),
            "val": pa.array(np.full(len(ids), -1.0)),
            "s": pa.array(["merged"] * len(ids)),
        }
    )
