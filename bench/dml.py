"""The ``dml`` benchmark: DELETE, UPDATE, MERGE and OPTIMIZE by pydelta against the Spark
floor of the same rewrite (a plain DataFrame job over the same files) and deltalake.

Every timed run starts from a fresh copy of the same table (the copy is not timed). Tables
(written once by deltalake under $PYDELTA_BENCH_DIR):

* ``dml-<rows>``: ``rows`` = 4M x scale rows in 40 files (id, grp = id % 1000, val, s);
  delete/update touch ``grp < 10`` (1% of the rows, in every file); merge is a 5% upsert
  (half the source ids match, half are new);
* the same with ``delta.enableDeletionVectors=true`` (pydelta only: deltalake has no DVs);
* ``dml-small-<n>``: 400 files of 1,000 x scale rows for OPTIMIZE;
* ``dml-40k``: 40,000 rows in 4 files for the latency rows;
* ``dml-zorder-<rows>``: 336,000 x scale rows in 8 files for OPTIMIZE ZORDER BY (s, grp): a
  string and a number column (the size of the new-user trial's flights table);
* ``cdc``: a 10,000-row CDC upsert whose keys all fall in 2 of the 40 files of ``dml-<rows>``
  (the Spark jobs of one untimed pydelta run are counted and printed).

``PYDELTA_BENCH_DML`` (comma-separated, default all: delete, update, merge, cdc, optimize,
latency) runs only those parts, e.g. merge alone:
``PYDELTA_BENCH_DML=merge python bench/run.py dml --scale 0.1 --reps 4``.
"""

from __future__ import annotations

import os
import shutil
import statistics
import time

import numpy as np
import pyarrow as pa
from tables import DATA, dml_table, merge_source

FILES = 40
PARTS = ("delete", "update", "merge", "cdc", "optimize", "zorder", "latency")


def timed(base: str, work: str, fn, reps: int) -> tuple[float, object]:
    """Median seconds of ``fn(copy)`` over ``reps`` runs (the first dropped), each on a
    fresh copy of ``base``; returns it and the last run's result."""
    times, result = [], None
    for _ in range(reps):
        shutil.rmtree(work, ignore_errors=True)
        shutil.copytree(base, work)
        t = time.perf_counter()
        result = fn(work)
        times.append(time.perf_counter() - t)
    shutil.rmtree(work, ignore_errors=True)
    return statistics.median(times[1:] if len(times) > 1 else times), result


def digest(path: str):
    """(rows, rounded sum of val, sum of id) of the table as deltalake reads it."""
    from deltalake import DeltaTable as DL
    from deltalake import QueryBuilder

    # QueryBuilder (DataFusion) applies deletion vectors; to_pyarrow_table refuses them
    t = pa.table(QueryBuilder().register("t", DL(path)).execute("SELECT count(*), sum(val), sum(id) FROM t").read_all())
    n, v, i = (t.column(k)[0].as_py() for k in range(3))
    return n, round(v or 0.0, 3), i


def digest_native(spark, path: str):
    from pyspark.sql import functions as F

    from delta_pyds import read_delta

    r = read_delta(spark, path).agg(F.count("*"), F.sum("val"), F.sum("id")).collect()[0]
    return r[0], round(r[1] or 0.0, 3), r[2]


def run(suite) -> None:
    from deltalake import DeltaTable as DL
    from pyspark.sql import functions as F

    from delta_pyds import DeltaTable

    spark, reps = suite.spark, suite.reps
    parts = [p.strip() for p in os.environ.get("PYDELTA_BENCH_DML", ",".join(PARTS)).split(",") if p.strip()]
    if unknown := [p for p in parts if p not in PARTS]:
        raise SystemExit(f"PYDELTA_BENCH_DML: unknown part(s) {', '.join(unknown)}; expected any of {', '.join(PARTS)}")
    rows = int(4_000_000 * suite.scale)
    base = dml_table(os.path.join(DATA, f"dml-{rows}"), rows, FILES)
    dv_base = dml_table(os.path.join(DATA, f"dml-dv-{rows}"), rows, FILES, {"delta.enableDeletionVectors": "true"})
    small = dml_table(os.path.join(DATA, f"dml-small-{int(1000 * suite.scale)}"), 400 * int(1000 * suite.scale), 400)
    tiny = dml_table(os.path.join(DATA, "dml-40k"), 40_000, 4)
    work = os.path.join(DATA, "dml-work")
    out = os.path.join(DATA, "dml-floor-out")
    cond = "grp < 10"

    def live_files(p: str) -> list[str]:
        return DL(p).file_uris()

    def floor(fn):
        def go(p):
            shutil.rmtree(out, ignore_errors=True)
            return fn(spark.read.parquet(*live_files(p)))

        return go

    def pd_table(p):
        return DeltaTable.forPath(spark, p)

    def check(label, *results):
        if any(r != results[0] for r in results):
            raise SystemExit(f"dml {label}: results differ: {results}")

    def measure(label, contenders, target=None, floor_name="floor"):
        r = {k: timed(b, work, f, reps) for k, (b, f) in contenders.items()}
        print(f"[dml] {label}: " + ", ".join(f"{k} {v[0]:.3f}s" for k, v in r.items()), flush=True)
        ref = floor_name if floor_name in r else "deltalake"
        suite.record(
            "dml",
            label,
            "pydelta",
            ref,
            r["pydelta"][0],
            r[ref][0],
            target,
            **{f"{k}_seconds": v[0] for k, v in r.items()},
        )
        return r

    # results: the table after the operation, as deltalake reads it and as read_delta does
    def after(fn):
        def go(p):
            fn(p)
            return p

        return go

    def compare(label, base_path, fns):
        got = []
        for name, fn in fns.items():
            shutil.rmtree(work, ignore_errors=True)
            shutil.copytree(base_path, work)
            fn(work)
            got.append(digest(work))
            if name == "pydelta":
                got.append(digest_native(spark, work))
        shutil.rmtree(work, ignore_errors=True)
        check(label, *got)

    # ---------------------------------------------------------------- delete
    pd_delete = lambda p: pd_table(p).delete(cond)  # noqa: E731
    dl_delete = lambda p: DL(p).delete(cond)  # noqa: E731
    if "delete" in parts:
        compare("delete", base, {"pydelta": pd_delete, "deltalake": dl_delete})
        measure(
            "delete 1% of rows in every file (copy-on-write)",
            {
                "pydelta": (base, pd_delete),
                "floor": (base, floor(lambda df: df.where(f"NOT ({cond})").write.parquet(out))),
                "deltalake": (base, dl_delete),
            },
            1.3,
        )
        compare("delete (DVs)", dv_base, {"pydelta": pd_delete})
        measure(
            "delete 1% of rows with deletion vectors (floor: scan of the matching rows' file, row index)",
            {
                "pydelta": (dv_base, pd_delete),
                "floor": (
                    dv_base,
                    floor(lambda df: df.where(cond).select("_metadata.file_path", "_metadata.row_index").collect()),
                ),
                "deltalake": (base, dl_delete),
            },
        )
    # ---------------------------------------------------------------- update
    pd_update = lambda p: pd_table(p).update(cond, {"val": "val + 1"})  # noqa: E731
    dl_update = lambda p: DL(p).update(predicate=cond, updates={"val": "val + 1"})  # noqa: E731
    if "update" in parts:
        compare("update", base, {"pydelta": pd_update, "deltalake": dl_update})
        measure(
            "update 1% of rows in every file (copy-on-write)",
            {
                "pydelta": (base, pd_update),
                "floor": (
                    base,
                    floor(
                        lambda df: df.withColumn(
                            "val", F.when(F.expr(cond), F.col("val") + 1).otherwise(F.col("val"))
                        ).write.parquet(out)
                    ),
                ),
                "deltalake": (base, dl_update),
            },
            1.3,
        )
        compare("update (DVs)", dv_base, {"pydelta": pd_update})
        measure(
            "update 1% of rows with deletion vectors on",
            {"pydelta": (dv_base, pd_update), "deltalake": (base, dl_update)},
            3.0,
        )
    # ---------------------------------------------------------------- merge
    if "merge" in parts:
        src = merge_source(rows, 0.05)
        src_df = spark.createDataFrame(src.to_pandas()).cache()
        src_df.count()

        def pd_merge(p):
            (
                pd_table(p)
                .alias("t")
                .merge(src_df.alias("s"), "t.id = s.id")
                .whenMatchedUpdateAll()
                .whenNotMatchedInsertAll()
                .execute()
            )

        def dl_merge(p):
            (
                DL(p)
                .merge(src, "t.id = s.id", source_alias="s", target_alias="t")
                .when_matched_update_all()
                .when_not_matched_insert_all()
                .execute()
            )

        def two_phase(df):
            meta = df.select("id", "_metadata.file_path", "_metadata.row_index")
            meta.join(F.broadcast(src_df.select("id")), "id").groupBy("file_path").count().collect()
            df.join(src_df, "id", "left_anti").unionByName(src_df).write.parquet(out)

        compare("merge", base, {"pydelta": pd_merge, "deltalake": dl_merge})
        measure(
            f"merge a {len(src):,}-row upsert (half matched) (floor: anti-join + union + write)",
            {
                "pydelta": (base, pd_merge),
                "floor": (
                    base,
                    floor(lambda df: df.join(src_df, "id", "left_anti").unionByName(src_df).write.parquet(out)),
                ),
                # delta-spark's two phases as plain Spark: the files holding a matched row
                # (key, file, row index joined with the source), then the floor's rewrite
                "two_phase_floor": (base, floor(two_phase)),
                "deltalake": (base, dl_merge),
            },
            1.3,
        )
        compare("merge (DVs)", dv_base, {"pydelta": pd_merge})
        measure(
            "merge with deletion vectors on",
            {"pydelta": (dv_base, pd_merge), "deltalake": (base, dl_merge)},
            3.0,
        )
    if "cdc" in parts:
        cdc_merge(suite, base, rows, compare, measure, pd_table, out)
    # ---------------------------------------------------------------- optimize
    pd_opt = lambda p: pd_table(p).optimize().executeCompaction()  # noqa: E731
    dl_opt = lambda p: DL(p).optimize.compact()  # noqa: E731
    if "optimize" in parts:
        compare("optimize", small, {"pydelta": pd_opt, "deltalake": dl_opt})
        measure(
            "optimize: compact 400 small files",
            {
                "pydelta": (small, pd_opt),
                "floor": (small, floor(lambda df: df.write.parquet(out))),
                "deltalake": (small, dl_opt),
            },
            1.3,
        )
    # ---------------------------------------------------------------- zorder
    if "zorder" in parts:
        zrows = int(336_000 * suite.scale)
        zbase = dml_table(os.path.join(DATA, f"dml-zorder-{zrows}"), zrows, 8)
        pd_z = lambda p: pd_table(p).optimize().executeZOrderBy("s", "grp")  # noqa: E731
        dl_z = lambda p: DL(p).optimize.z_order(["s", "grp"])  # noqa: E731
        compare("zorder", zbase, {"pydelta": pd_z, "deltalake": dl_z})
        measure(
            f"optimize: ZORDER BY a string and a number, {zrows:,} rows in 8 files (floor: one sorted file)",
            {
                "pydelta": (zbase, pd_z),
                "floor": (zbase, floor(lambda df: df.coalesce(1).sortWithinPartitions("s", "grp").write.parquet(out))),
                "deltalake": (zbase, dl_z),
            },
            floor_name="deltalake",
        )
    # ---------------------------------------------------------------- latency
    if "latency" not in parts:
        shutil.rmtree(out, ignore_errors=True)
        return
    tsrc = merge_source(40_000, 0.05)
    tsrc_df = spark.createDataFrame(tsrc.to_pandas()).cache()
    tsrc_df.count()

    def pd_tiny_merge(p):
        (
            pd_table(p)
            .alias("t")
            .merge(tsrc_df.alias("s"), "t.id = s.id")
            .whenMatchedUpdateAll()
            .whenNotMatchedInsertAll()
            .execute()
        )

    def dl_tiny_merge(p):
        (
            DL(p)
            .merge(tsrc, "t.id = s.id", source_alias="s", target_alias="t")
            .when_matched_update_all()
            .when_not_matched_insert_all()
            .execute()
        )

    lat_reps = max(reps, 4)
    for label, pd_fn, dl_fn, target in (
        ("40k-row table: delete latency", pd_delete, dl_delete, 0.5),
        ("40k-row table: update latency", pd_update, dl_update, 0.5),
        ("40k-row table: merge latency", pd_tiny_merge, dl_tiny_merge, 1.0),
    ):
        r = {
            "pydelta": timed(tiny, work, pd_fn, lat_reps),
            "deltalake": timed(tiny, work, dl_fn, lat_reps),
        }
        ok = "OK" if r["pydelta"][0] <= target else f"MISSES target {target}s"
        print(f"[dml] {label}: pydelta {r['pydelta'][0]:.3f}s ({ok}), deltalake {r['deltalake'][0]:.3f}s", flush=True)
        suite.rows.append(
            {
                "mode": "dml",
                "label": label,
                "a": "pydelta",
                "b": "deltalake",
                "a_seconds": r["pydelta"][0],
                "b_seconds": r["deltalake"][0],
                "ratio": r["pydelta"][0] / r["deltalake"][0],
                "target_seconds": target,
            }
        )
    # where the latency goes: Spark jobs and stages, driver Python time (bench/dml_latency.py)
    import dml_latency

    for r in dml_latency.run(spark, reps=max(reps - 1, 1)):
        suite.rows.append({"mode": "dml", "label": f"40k-row table: {r['operation']} (jobs, stages)", **r})
    shutil.rmtree(out, ignore_errors=True)


def cdc_source(rows: int, n: int = 10_000) -> pa.Table:
    """``n`` CDC rows whose ids straddle the boundary of files 20 and 21 of ``dml-<rows>``
    (all matched: the keys fall in 2 target files)."""
    per = rows // FILES
    lo = max(0, 21 * per - n // 2)
    ids = np.arange(lo, lo + n, dtype=np.int64)
    return pa.table(
        {
            "id": pa.array(ids),
            "grp": pa.array(ids % 1000),
            "val": pa.array(np.full(n, -2.0)),
            "s": pa.array(["cdc"] * n),
        }
    )


def cdc_merge(suite, base: str, rows: int, compare, measure, pd_table, out: str) -> None:
    """The CDC MERGE row (pydelta vs deltalake), with pydelta's Spark jobs counted, and the
    Spark floor of the same rewrite: a plain DataFrame job handed the 2 target files that hold
    the source's keys (no log, no pruning, no commit) that anti-joins them with the broadcast
    source, adds the source and writes Parquet: what any Spark job doing this MERGE pays."""
    from deltalake import DeltaTable as DL
    from pyspark.sql import functions as F

    spark = suite.spark
    src = cdc_source(rows)
    src_df = spark.createDataFrame(src.to_pandas()).cache()
    src_df.count()

    def pd_cdc(p):
        t = pd_table(p).alias("t")
        t.merge(src_df.alias("s"), "t.id = s.id").whenMatchedUpdateAll().whenNotMatchedInsertAll().execute()

    def dl_cdc(p):
        m = DL(p).merge(src, "t.id = s.id", source_alias="s", target_alias="t")
        m.when_matched_update_all().when_not_matched_insert_all().execute()

    lo, hi = int(src["id"][0].as_py()), int(src["id"][-1].as_py())

    def spark_floor(p):
        adds = pa.table(DL(p).get_add_actions(flatten=True)).to_pydict()
        files = [
            os.path.join(p, path)
            for path, mn, mx in zip(adds["path"], adds["min.id"], adds["max.id"])
            if mn <= hi and mx >= lo
        ]
        shutil.rmtree(out, ignore_errors=True)
        df = spark.read.parquet(*files)
        df.join(F.broadcast(src_df.select("id")), "id", "left_anti").unionByName(src_df).write.parquet(out)

    compare("cdc merge", base, {"pydelta": pd_cdc, "deltalake": dl_cdc})
    work = os.path.join(DATA, "dml-work")
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(base, work)
    sc = spark.sparkContext
    sc.setJobGroup("pydelta-cdc", "cdc merge")
    pd_cdc(work)
    jobs = sc.statusTracker().getJobIdsForGroup("pydelta-cdc")
    sc.setJobGroup("", "")
    shutil.rmtree(work, ignore_errors=True)
    print(f"[dml] cdc merge: {len(jobs)} Spark jobs", flush=True)
    r = measure(
        f"CDC merge: {len(src):,} source rows, keys in 2 target files ({len(jobs)} Spark jobs)",
        {"pydelta": (base, pd_cdc), "spark_floor": (base, spark_floor), "deltalake": (base, dl_cdc)},
        2.0,
    )
    suite.rows[-1]["spark_jobs"] = len(jobs)
    return r
