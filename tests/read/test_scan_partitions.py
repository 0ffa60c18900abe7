"""The data source's input partitions (read/scan.py): every file once, exactly as the log
gives it, and no Python object per file while planning (issue 25 item 8)."""

from __future__ import annotations

import pickle
import tracemalloc

import pyarrow as pa

from delta_pyds.protocol.actions import DV_TYPE
from delta_pyds.read.scan import iter_tasks, plan_partitions


def _file_table(n: int, *, dv_every: int = 0, tracked: bool = False) -> pa.Table:
    paths = [f"p=ü {i % 7}/part-{i:06d}-ä#%.parquet" for i in range(n)]
    pv = pa.StructArray.from_arrays(
        [
            pa.array([None if i % 5 == 0 else f"ü {i % 7}" for i in range(n)], pa.string()),
            pa.array(["" if i % 3 == 0 else str(i) for i in range(n)], pa.string()),
        ],
        names=["p", "q"],
    )
    dvs = [
        {"storageType": "u", "pathOrInlineDv": f"dv{i}", "offset": i, "sizeInBytes": 40, "cardinality": i % 4}
        if dv_every and i % dv_every == 0
        else None
        for i in range(n)
    ]
    cols = {
        "path": pa.array(paths, pa.string()),
        "size": pa.array([1000 + (i * 7919) % 5000 for i in range(n)], pa.int64()),
        "partition_values": pv,
        "stats": pa.array(['{"numRecords": 1}'] * n, pa.string()),
        "deletion_vector": pa.array(dvs, DV_TYPE),
        "base_row_id": pa.array([i * 10 if tracked and i % 4 else None for i in range(n)], pa.int64()),
        "default_row_commit_version": pa.array([3 if tracked else None] * n, pa.int64()),
    }
    return pa.table(cols)


def _tasks(groups) -> list[tuple]:
    return [
        (t.path, t.size, t.partition_values, t.deletion_vector, t.base_row_id, t.default_row_commit_version)
        for g in groups
        for t in iter_tasks(pickle.loads(pickle.dumps(g)))
    ]


def _expected(files: pa.Table) -> list[tuple]:
    rows = files.to_pylist()
    return [
        (
            r["path"],
            r["size"],
            (r["partition_values"]["p"], r["partition_values"]["q"]),
            r["deletion_vector"],
            r["base_row_id"],
            r["default_row_commit_version"],
        )
        for r in rows
    ]


def test_every_file_comes_back_once_with_its_values_nulls_dvs_and_row_ids():
    files = _file_table(997, dv_every=3, tracked=True)
    groups = plan_partitions(files, ["p", "q"], max_partition_bytes=20_000, open_cost=100, parallelism=2)
    assert len(groups) > 100
    assert sum(len(g) for g in groups) == files.num_rows
    got = _tasks(groups)
    assert sorted(got, key=lambda t: t[0]) == sorted(_expected(files), key=lambda t: t[0])
    # largest files first
    assert [t[1] for t in got] == sorted((t[1] for t in got), reverse=True)


def test_files_without_dvs_or_row_ids_and_unpartitioned():
    files = _file_table(50)
    groups = plan_partitions(files, [], max_partition_bytes=1 << 30, open_cost=0, parallelism=1)
    assert len(groups) == 1
    assert groups[0].deletion_vector is None and groups[0].base_row_id is None
    got = _tasks(groups)
    assert {t[0] for t in got} == set(files.column("path").to_pylist())
    assert all(t[2] == () and t[3] is None and t[4] is None for t in got)


def test_planning_holds_no_python_object_per_file():
    """100k files (35-byte paths) in 3k+ partitions: planning's peak of Python allocations
    is about 130 bytes per file (packed columns); per-file lists of str took 320."""
    n = 100_000
    files = _file_table(n)
    tracemalloc.start()
    try:
        groups = plan_partitions(files, ["p", "q"], max_partition_bytes=100_000, open_cost=0, parallelism=2)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(groups) > 3000, len(groups)
    assert peak < 200 * n, f"planning peak {peak / n:.0f} bytes per file"
