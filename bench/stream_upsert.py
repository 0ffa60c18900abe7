"""The streaming upsert benchmark (issue 47, item 5): a stream's ``foreachBatch`` MERGEs each
1,000-row micro-batch into the DML benchmarks' 4M-row, 40-file table (``dml-<rows>`` of
bench/tables.py, written by deltalake), against deltalake merging the same batches one by one.

Each batch is a CDC-shaped upsert: half its keys update rows of one window of the table's
ids (so one or two of the 40 files are rewritten, as the CDC MERGE of bench/dml.py), half
are new keys beyond the table's end (inserts). The batches are Parquet files in an input
folder; pydelta's side is a real stream over them (``spark.readStream.parquet`` with
``maxFilesPerTrigger=1``, trigger ``availableNow``) whose ``foreachBatch`` runs
``DeltaTable.forPath(...).merge(...).whenMatchedUpdateAll().whenNotMatchedInsertAll()``;
a batch's latency is the wall time of that function (the read of its file included).
deltalake's side reads each file with pyarrow and runs the same merge on one
``deltalake.DeltaTable`` kept across batches (as a long-running consumer would).

Both sides start from their own copy of the table (not timed); the first ``--warmup``
batches of each are dropped; p50 / p95 are over the rest. The two tables are checked equal
at the end (rows, sum of ``val``, sum of ``id``, read by deltalake's QueryBuilder). Run::

    python bench/stream_upsert.py [--scale 1.0] [--batches 30] [--warmup 3]

from the repository root (``PYDELTA_BENCH_DIR`` holds the tables, as for bench/run.py); it
prints the two rows and writes bench/results/stream-upsert.json (partial-stream-upsert.json
at another scale).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

BATCH_ROWS = 1_000


def batch_tables(rows: int, files: int, batches: int, seed: int = 11):
    """``batches`` upserts of BATCH_ROWS rows: half updates of a window of ids inside one file
    (chosen at random per batch), half inserts of ids after every earlier batch's."""
    import numpy as np
    import pyarrow as pa

    rng = np.random.default_rng(seed)
    per = rows // files
    half = BATCH_ROWS // 2
    out = []
    for b in range(batches):
        start = int(rng.integers(0, rows - half))
        old = np.arange(start, start + half, dtype=np.int64)
        new = np.arange(rows + b * half, rows + (b + 1) * half, dtype=np.int64)
        ids = np.concatenate([old, new])
        out.append(
            pa.table(
                {
                    "id": pa.array(ids),
                    "grp": pa.array(ids % 1000),
                    "val": pa.array(np.full(len(ids), float(b))),
                    "s": pa.array([f"b{b}"] * len(ids)),
                }
            )
        )
    assert per > half, "the table's files must be larger than a batch's update window"
    return out


def percentile(values: list[float], q: float) -> float:
    s = sorted(values)
    k = (len(s) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def run_pydelta(spark, table: str, inputs: str, schema) -> list[float]:
    """Stream the batch files into ``table`` by foreachBatch MERGE; each batch's seconds, in order."""
    from delta_pyds import DeltaTable

    latencies: dict[int, float] = {}

    def upsert(batch_df, batch_id: int) -> None:
        t = time.perf_counter()
        target = DeltaTable.forPath(spark, table).alias("t")
        target.merge(batch_df.alias("s"), "t.id = s.id").whenMatchedUpdateAll().whenNotMatchedInsertAll().execute()
        latencies[batch_id] = time.perf_counter() - t

    checkpoint = table + "-stream-checkpoint"
    shutil.rmtree(checkpoint, ignore_errors=True)
    query = (
        spark.readStream.schema(schema)
        .option("maxFilesPerTrigger", 1)
        .parquet(inputs)
        .writeStream.foreachBatch(upsert)
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    shutil.rmtree(checkpoint, ignore_errors=True)
    return [latencies[k] for k in sorted(latencies)]


def run_deltalake(table: str, files: list[str]) -> list[float]:
    import pyarrow.parquet as pq
    from deltalake import DeltaTable as DL

    dt = DL(table)
    out = []
    for f in files:
        t = time.perf_counter()
        src = pq.read_table(f)
        m = dt.merge(src, "t.id = s.id", source_alias="s", target_alias="t")
        m.when_matched_update_all().when_not_matched_insert_all().execute()
        out.append(time.perf_counter() - t)
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scale", type=float, default=1.0, help="table size factor (default 1.0: 4M rows)")
    parser.add_argument("--batches", type=int, default=30, help="micro-batches of 1,000 rows (default 30)")
    parser.add_argument("--warmup", type=int, default=3, help="first batches dropped from p50/p95 (default 3)")
    args = parser.parse_args(argv)
    if args.batches <= args.warmup:
        parser.error("--batches must be larger than --warmup")
    import pyarrow.parquet as pq
    from dml import FILES, digest
    from run import RESULTS, bench_session, machine
    from tables import DATA, dml_table

    rows = int(4_000_000 * args.scale)
    base = dml_table(os.path.join(DATA, f"dml-{rows}"), rows, FILES)
    inputs = os.path.join(DATA, "stream-upsert-in")
    shutil.rmtree(inputs, ignore_errors=True)
    os.makedirs(inputs)
    files = []
    for i, tbl in enumerate(batch_tables(rows, FILES, args.batches)):
        files.append(os.path.join(inputs, f"batch-{i:05d}.parquet"))
        pq.write_table(tbl, files[-1])
        os.utime(files[-1], (1_700_000_000 + i, 1_700_000_000 + i))  # the stream takes them in this order

    spark = bench_session()
    pd_table, dl_table = os.path.join(DATA, "stream-upsert-pydelta"), os.path.join(DATA, "stream-upsert-deltalake")
    for p in (pd_table, dl_table):
        shutil.rmtree(p, ignore_errors=True)
        shutil.copytree(base, p)
    schema = spark.read.parquet(files[0]).schema
    started = time.strftime("%Y-%m-%d %H:%M:%S")
    pd_lat = run_pydelta(spark, pd_table, inputs, schema)
    dl_lat = run_deltalake(dl_table, files)
    if len(pd_lat) != args.batches:
        raise SystemExit(f"the stream ran {len(pd_lat)} batches, expected {args.batches}")
    if (a := digest(pd_table)) != (b := digest(dl_table)):
        raise SystemExit(f"the two tables differ after the stream: pydelta {a}, deltalake {b}")
    rows_out = []
    for name, lat in (("pydelta", pd_lat), ("deltalake", dl_lat)):
        kept = lat[args.warmup :]
        rows_out.append(
            {
                "contender": name,
                "p50": statistics.median(kept),
                "p95": percentile(kept, 0.95),
                "mean": statistics.fmean(kept),
                "batches": len(kept),
                "seconds": lat,
            }
        )
    pd_row, dl_row = rows_out
    print(f"streaming upsert: {args.batches} batches of {BATCH_ROWS} rows into {rows:,} rows (table {a})")
    for r in rows_out:
        print(f"  {r['contender']:10s} p50 {r['p50']:.3f} s  p95 {r['p95']:.3f} s  mean {r['mean']:.3f} s")
    print(
        f"  ratio p50 {pd_row['p50'] / dl_row['p50']:.2f}  p95 {pd_row['p95'] / dl_row['p95']:.2f}  (target p50 <= 3)"
    )
    os.makedirs(RESULTS, exist_ok=True)
    name = "stream-upsert.json" if args.scale == 1.0 else "partial-stream-upsert.json"
    with open(os.path.join(RESULTS, name), "w") as f:
        json.dump(
            {
                "command": "python bench/stream_upsert.py " + " ".join(sys.argv[1:]),
                "scale": args.scale,
                "machine": machine(),
                "when": started,
                "rows": rows_out,
                "ratio_p50": pd_row["p50"] / dl_row["p50"],
                "ratio_p95": pd_row["p95"] / dl_row["p95"],
            },
            f,
            indent=2,
        )
    spark.stop()


if __name__ == "__main__":
    main()
