"""A table pair for the deletion-vector overhead benchmark: the same files, once plain and
once with 10% of rows deleted through deletion vectors (pydelta's DELETE)."""

from __future__ import annotations

import os
import shutil

import numpy as np
import pyarrow as pa


def make_dv_pair(spark, base: str, scale: float) -> tuple[str, str]:
    from deltalake import write_deltalake

    from delta_pyds import DeltaTable

    rows = int(2_000_000 * scale)
    plain = f"{base}-plain-{rows}"
    with_dv = f"{base}-dv-{rows}"
    if os.path.isdir(os.path.join(with_dv, "_delta_log")) and os.path.isdir(os.path.join(plain, "_delta_log")):
        return with_dv, plain
    shutil.rmtree(plain, ignore_errors=True)
    shutil.rmtree(with_dv, ignore_errors=True)
    rng = np.random.default_rng(3)
    for f in range(4):
        n = rows // 4
        write_deltalake(
            plain,
            pa.table(
                {
                    "id": pa.array(np.arange(f * n, (f + 1) * n, dtype=np.int64)),
                    "x": pa.array(rng.random(n)),
                    "s": pa.array([f"v{v}" for v in rng.integers(0, 1000, n)]),
                }
            ),
            mode="append",
            configuration={"delta.enableDeletionVectors": "true"},
        )
    shutil.copytree(plain, with_dv)
    DeltaTable.forPath(spark, with_dv).delete("id % 10 = 0")
    return with_dv, plain
