"""The delta_pyds benchmark suite: side-by-side ratios in one run.

    python bench/run.py [MODE ...] [--scale S] [--reps N]

Modes (default: all): full, narrow, selective, plan, write, commit, dv, dml, smallfiles, concurrent.
Each measurement alternates the contenders ``--reps`` times (the first pair warms up and
is dropped) and reports the ratio of medians. Results (with the machine description
and the command line) are written to bench/results/<mode>.json; bench/report.py turns
them into docs/benchmarks.md and PNG plots. Tables are written once per machine under
$PYDELTA_BENCH_DIR (default /tmp/pydelta-bench) by deltalake, an independent writer.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
RESULTS = os.path.join(HERE, "results")


def machine() -> dict:
    import pyarrow
    import pyspark

    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") if hasattr(os, "sysconf") else 0
    try:
        import deltalake

        dl = deltalake.__version__
    except Exception:  # pragma: no cover
        dl = None
    return {
        "cpus": os.cpu_count(),
        "memory_gb": round(mem / 2**30, 1),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "pyspark": pyspark.__version__,
        "pyarrow": pyarrow.__version__,
        "deltalake": dl,
        # 1/5/15-minute load averages when the run started: ratios measured on a shared
        # machine (load well above its cores) compare only within one run
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }


def jvm_cpu(spark):
    """A function giving the CPU seconds the driver JVM has used (in local mode Spark's
    tasks run there): a measure a shared machine's load disturbs less than wall time."""
    pid = spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid()
    tick = os.sysconf("SC_CLK_TCK")

    def read() -> float:
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / tick

    return read


def alternate(fns: dict, reps: int) -> dict:
    """Runs each contender in turn ``reps`` times; returns name -> (median s, last result)."""
    times = {k: [] for k in fns}
    results = {}
    for _ in range(reps):
        for name, fn in fns.items():
            t = time.perf_counter()
            results[name] = fn()
            times[name].append(time.perf_counter() - t)
    return {k: (statistics.median(v[1:] if len(v) > 1 else v), results[k]) for k, v in times.items()}


class Suite:
    def __init__(self, spark, scale: float, reps: int):
        self.spark, self.scale, self.reps = spark, scale, reps
        self.rows: list[dict] = []

    def record(self, mode: str, label: str, a: str, b: str, ma: float, mb: float, target: float | None = None, **extra):
        ratio = ma / mb if mb else float("nan")
        ok = "" if target is None else (" OK" if ratio <= target else f" MISSES target {target}")
        print(f"[{mode}] {label}: {a}/{b} = {ratio:.2f} ({a} {ma:.3f}s, {b} {mb:.3f}s){ok}", flush=True)
        self.rows.append(
            {
                "mode": mode,
                "label": label,
                "a": a,
                "b": b,
                "a_seconds": ma,
                "b_seconds": mb,
                "ratio": ratio,
                "target": target,
                **extra,
            }
        )

    def check_same(self, label, results):
        values = list(results.values())
        if any(v[1] != values[0][1] for v in values):
            raise SystemExit(f"{label}: results differ: { {k: v[1] for k, v in results.items()} }")

    # ------------------------------------------------------------------------ read
    def full(self):
        from pyspark.sql import functions as F
        from tables import scan_table

        from delta_pyds import read_delta

        p = scan_table(self.scale)
        q = lambda df: df.agg(F.sum(F.xxhash64(*df.columns) % 1000)).collect()[0][0]  # noqa: E731
        ddl = "id long, i int, x double, s string, d date, ts timestamp"
        r = alternate(
            {
                "pydelta": lambda: q(self.spark.read.format("pydelta").load(p)),
                "native": lambda: q(read_delta(self.spark, p)),
                "parquet": lambda: q(self.spark.read.parquet(p)),
                "python-floor": lambda: q(self.spark.read.format("plainpq").schema(ddl).load(p)),
            },
            self.reps,
        )
        self.check_same("full", r)
        self.record(
            "full", "native: full scan, every column", "native", "parquet", r["native"][0], r["parquet"][0], 1.05
        )
        self.record("full", "full scan, every column", "pydelta", "parquet", r["pydelta"][0], r["parquet"][0], 1.25)
        self.record(
            "full",
            "API floor: plain Python source yielding the files' batches",
            "python-floor",
            "parquet",
            r["python-floor"][0],
            r["parquet"][0],
        )
        self.record(
            "full", "full scan vs the API floor", "pydelta", "python-floor", r["pydelta"][0], r["python-floor"][0]
        )

    def narrow(self):
        from pyspark.sql import functions as F
        from tables import wide_table

        from delta_pyds import read_delta

        p = wide_table(self.scale)
        q = lambda df: df.agg(F.sum("c1"), F.max("id")).collect()[0]  # noqa: E731
        r = alternate(
            {
                "columns": lambda: q(self.spark.read.format("pydelta").option("columns", "id,c1").load(p)),
                "all": lambda: q(self.spark.read.format("pydelta").load(p)),
                "native": lambda: q(read_delta(self.spark, p)),
                "parquet": lambda: q(self.spark.read.parquet(p).select("id", "c1")),
            },
            self.reps,
        )
        self.check_same("narrow", r)
        self.record("narrow", "2 of 61 columns, columns option vs none", "columns", "all", r["columns"][0], r["all"][0])
        self.record("narrow", "2 of 61 columns vs parquet", "columns", "parquet", r["columns"][0], r["parquet"][0])
        self.record(
            "narrow", "native: 2 of 61 columns, no option", "native", "parquet", r["native"][0], r["parquet"][0], 1.15
        )

    def selective(self):
        from tables import skip_table

        from delta_pyds import read_delta

        p = skip_table(self.scale)
        rows = max(1000, int(50_000 * self.scale))
        point = f"id = {100 * rows + 123}"
        rng = f"id BETWEEN {10 * rows} AND {12 * rows - 1}"
        part = "p = 3 AND x < 0.5"
        for label, cond in (("point lookup", point), ("range", rng), ("partition + stats", part)):
            r = alternate(
                {
                    "pydelta": lambda cond=cond: (
                        self.spark.read.format("pydelta").option("filterPushdown", "true").load(p).where(cond).count()
                    ),
                    "pydelta-auto": lambda cond=cond: self.spark.read.format("pydelta").load(p).where(cond).count(),
                    "native-where": lambda cond=cond: read_delta(self.spark, p, where=cond).count(),
                    "native": lambda cond=cond: read_delta(self.spark, p).where(cond).count(),
                    "parquet": lambda cond=cond: self.spark.read.parquet(p).where(cond).count(),
                },
                self.reps,
            )
            self.check_same(label, r)
            target = 0.5 if label == "point lookup" else None
            self.record(
                "selective", f"{label} (skipping on)", "pydelta", "parquet", r["pydelta"][0], r["parquet"][0], target
            )
            self.record(
                "selective", f"{label} (default auto)", "pydelta-auto", "parquet", r["pydelta-auto"][0], r["parquet"][0]
            )
            self.record(
                "selective",
                f"native: {label}, predicate given up front",
                "native-where",
                "parquet",
                r["native-where"][0],
                r["parquet"][0],
                target,
            )
            self.record(
                "selective",
                f"native: {label}, filter on the DataFrame",
                "native",
                "parquet",
                r["native"][0],
                r["parquet"][0],
                1.15 if label == "point lookup" else None,
            )

    def plan(self):
        from deltalake import DeltaTable
        from tables import generated_log, log_300k

        logs = []
        shared = log_300k()
        if shared:
            logs.append(("300k adds, 5 commits, no stats (shared)", shared))
        n = int(100_000 * self.scale)
        logs.append((f"{n} adds with stats on 32 columns, JSON only", generated_log(n, 20, 32, checkpoint=False)))
        logs.append((f"{n} adds with stats on 32 columns, checkpoint", generated_log(n, 20, 32, checkpoint=True)))
        logs.append(
            (f"{n // 10} adds over 3000 commits (long JSON tail)", generated_log(n // 10, 3000, 4, checkpoint=False))
        )

        def native_plan(p):
            # the native path's planning: log replay, the Spark-spelled file list and the
            # file condition as read_delta builds it (IN the live files; the bench logs have
            # no data files for Spark to list)
            from delta_pyds.read.native_plan import plan_native_scan
            from delta_pyds.spark.native.read import file_filter
            from delta_pyds.table.snapshot import Snapshot

            plan = plan_native_scan(Snapshot.load(p))
            paths = plan.files.column("file_path")
            file_filter(paths)
            return plan.files.num_rows

        for label, p in logs:
            r = alternate(
                {
                    "native": lambda p=p: native_plan(p),
                    "pydelta": lambda p=p: self.spark.read.format("pydelta").load(p).rdd.getNumPartitions(),
                    "deltalake": lambda p=p: len(DeltaTable(p).file_uris()),
                },
                self.reps,
            )
            target = 1.0 if "shared" in label else None
            self.record(
                "plan", f"native load + plan: {label}", "native", "deltalake", r["native"][0], r["deltalake"][0], target
            )
            self.record(
                "plan", f"load + plan: {label}", "pydelta", "deltalake", r["pydelta"][0], r["deltalake"][0], target
            )
        # peak memory of planning the largest log in a fresh process (core only)
        # VmHWM, not ru_maxrss: Linux carries ru_maxrss across fork+exec, so a child of this
        # (large) process would report the parent's peak
        peak = "print([int(l.split()[1]) for l in open('/proc/self/status') if l.startswith('VmHWM')][0])"
        planners = {
            # what the data source's reader does: plan_scan (no statistics without predicates),
            # then the packed input partitions
            "data source": "from delta_pyds.read.scan import plan_partitions;"
            "from delta_pyds.read.scan_plan import plan_scan;"
            "s=Snapshot.load(sys.argv[1]);"
            "plan_partitions(plan_scan(s, with_stats=False).files, s.physical_partition_columns);",
            "native": "from delta_pyds.read.native_plan import plan_native_scan;"
            "plan_native_scan(Snapshot.load(sys.argv[1]));",
        }
        code_dl = "import sys;from deltalake import DeltaTable;len(DeltaTable(sys.argv[1]).file_uris());" + peak
        # the shared 300k log, and the checkpointed 1M-file log (1M x scale) of docs/architecture.md
        peak_logs = [(logs[0][0], logs[0][1])]
        m = int(1_000_000 * self.scale)
        peak_logs.append((f"{m} adds with stats on 4 columns, checkpoint", generated_log(m, 20, 4, checkpoint=True)))
        for label, p in peak_logs:
            theirs = int(
                subprocess.run([sys.executable, "-c", code_dl, p], capture_output=True, text=True, check=True).stdout
            )
            for name, body in planners.items():
                code = "import sys;from delta_pyds.table.snapshot import Snapshot;" + body + peak
                ours = int(
                    subprocess.run([sys.executable, "-c", code, p], capture_output=True, text=True, check=True).stdout
                )
                print(
                    f"[plan] peak RSS planning {label} ({name}): "
                    f"delta_pyds {ours / 1024:.0f} MiB, deltalake {theirs / 1024:.0f} MiB"
                )
                self.rows.append(
                    {
                        "mode": "plan",
                        "label": f"peak RSS (MiB), {name} planning: {label}",
                        "a": "delta_pyds",
                        "b": "deltalake",
                        "a_seconds": None,
                        "b_seconds": None,
                        "ratio": ours / theirs,
                        "a_mib": ours / 1024,
                        "b_mib": theirs / 1024,
                        "target": 1.0 if name == "native" else None,
                    }
                )

    # ----------------------------------------------------------------------- write
    def write(self):
        from tables import DATA

        n = int(10_000_000 * self.scale)
        df = self.spark.range(n, numPartitions=4).selectExpr(
            "id",
            "cast(id % 1000 as int) as i",
            "rand(7) as x",
            "concat('s', id % 100000) as s",
            "date_add(date'2020-01-01', cast(id % 3000 as int)) as d",
            "timestamp_seconds(id) as ts",
        )
        a_path, b_path = os.path.join(DATA, "wr-pydelta"), os.path.join(DATA, "wr-parquet")
        c_path = os.path.join(DATA, "wr-native")

        def a():
            shutil.rmtree(a_path, ignore_errors=True)
            df.write.format("pydelta").mode("overwrite").save(a_path)

        def native():
            from delta_pyds import write_delta

            shutil.rmtree(c_path, ignore_errors=True)
            write_delta(df, c_path, mode="overwrite")

        def b():
            shutil.rmtree(b_path, ignore_errors=True)
            df.write.mode("overwrite").parquet(b_path)

        def floor():
            df.write.format("noop_arrow").mode("append").save()

        r = alternate({"pydelta": a, "native": native, "parquet": b, "python-floor": floor}, self.reps)
        for name, path in (("pydelta", a_path), ("native", c_path)):
            got = self.spark.read.format("pydelta").load(path).count()
            if got != n:
                raise SystemExit(f"{name} wrote {got} rows, expected {n}")
        # the Spark-native writer (delta_pyds.write_delta): Spark's Parquet writer + a Delta commit
        self.record("write", f"native write {n} rows", "native", "parquet", r["native"][0], r["parquet"][0], 1.10)
        self.record("write", f"write {n} rows", "pydelta", "parquet", r["pydelta"][0], r["parquet"][0], 1.5)
        self.record(
            "write",
            "API floor: Arrow writer that writes nothing",
            "python-floor",
            "parquet",
            r["python-floor"][0],
            r["parquet"][0],
        )
        self.record("write", "write vs the API floor", "pydelta", "python-floor", r["pydelta"][0], r["python-floor"][0])

    def commit(self):
        """Latency of small appends (one row) through Spark and through the core."""
        from tables import DATA

        p = os.path.join(DATA, "commit-latency")
        shutil.rmtree(p, ignore_errors=True)
        small = self.spark.range(1)
        small.write.format("pydelta").mode("append").save(p)
        q = os.path.join(DATA, "commit-latency-parquet")
        r = alternate(
            {
                "pydelta": lambda: small.write.format("pydelta").mode("append").save(p),
                "parquet": lambda: small.write.mode("append").parquet(q),
            },
            max(self.reps, 6),
        )
        self.record("commit", "append one row", "pydelta", "parquet", r["pydelta"][0], r["parquet"][0])

    def dv(self):
        """Scan with 10% of rows deleted through deletion vectors vs the same table without."""
        from dv_table import make_dv_pair
        from pyspark.sql import functions as F
        from tables import DATA

        with_dv, without = make_dv_pair(self.spark, os.path.join(DATA, "dv"), self.scale)
        q = lambda df: df.agg(F.sum(F.xxhash64(*df.columns) % 1000), F.count("*")).collect()[0]  # noqa: E731
        from delta_pyds import read_delta

        cpu = jvm_cpu(self.spark)
        spent: dict[str, list[float]] = {"native-dv": [], "native-plain": []}

        def on_cpu(name, fn):  # the driver JVM's CPU seconds (Spark runs its tasks there)
            def run():
                before = cpu()
                out = fn()
                spent[name].append(cpu() - before)
                return out

            return run

        r = alternate(
            {
                "dv": lambda: q(self.spark.read.format("pydelta").load(with_dv)),
                "plain": lambda: q(self.spark.read.format("pydelta").load(without)),
                "native-dv": on_cpu("native-dv", lambda: q(read_delta(self.spark, with_dv))),
                "native-plain": on_cpu("native-plain", lambda: q(read_delta(self.spark, without))),
            },
            self.reps,
        )
        if r["native-dv"][1] != r["dv"][1]:
            raise SystemExit(f"dv: native and data source results differ: {r['native-dv'][1]} != {r['dv'][1]}")
        cpu_dv, cpu_plain = (statistics.median(spent[k][1:] or spent[k]) for k in ("native-dv", "native-plain"))
        print(f"[dv] native JVM CPU: native-dv {cpu_dv:.2f}s, native-plain {cpu_plain:.2f}s = {cpu_dv / cpu_plain:.2f}")
        self.record(
            "dv",
            "native: scan with 10% rows deleted by DVs vs without",
            "native-dv",
            "native-plain",
            r["native-dv"][0],
            r["native-plain"][0],
            1.3,
            jvm_cpu_seconds=[cpu_dv, cpu_plain],
            jvm_cpu_ratio=cpu_dv / cpu_plain if cpu_plain else None,
        )
        self.record(
            "dv", "scan with 10% rows deleted by DVs vs without", "dv", "plain", r["dv"][0], r["plain"][0], 1.10
        )

    def dml(self):
        """DELETE / UPDATE / MERGE / OPTIMIZE vs the Spark floor and deltalake (bench/dml.py)."""
        import dml

        dml.run(self)

    def smallfiles(self):
        """Auto compaction of a streaming sink and optimized writes (bench/small_files.py)."""
        import small_files

        small_files.run(self)

    def concurrent(self):
        from concurrent_writers import run_appenders
        from tables import DATA

        stats = run_appenders(os.path.join(DATA, "concurrent"), writers=4, commits_each=int(10 * max(1, self.scale)))
        print(f"[concurrent] {stats}")
        self.rows.append({"mode": "concurrent", "label": "4 appenders", **stats})


def bench_session():
    """The benchmarks' Spark session (local[2], UTC, no UI, 4 GB driver), registered for pydelta."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("TZ", "UTC")
    from pyspark.sql import SparkSession

    import delta_pyds

    spark = (
        SparkSession.builder.master("local[2]")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.memory", "4g")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    delta_pyds.register(spark)
    return spark


MODES = ["full", "narrow", "selective", "plan", "write", "commit", "dv", "dml", "smallfiles", "concurrent"]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("modes", nargs="*", metavar="MODE", help=f"any of {', '.join(MODES)} (default: all)")
    parser.add_argument("--scale", type=float, default=1.0, help="table size factor (default 1.0)")
    parser.add_argument("--reps", type=int, default=4, help="alternated repetitions (first is warm-up)")
    args = parser.parse_args(argv)
    unknown = [m for m in args.modes if m not in MODES]
    if unknown:
        parser.error(f"unknown mode(s) {', '.join(unknown)}: expected any of {', '.join(MODES)}")
    spark = bench_session()
    import floor_sources

    floor_sources.register(spark)
    suite = Suite(spark, args.scale, args.reps)
    os.makedirs(RESULTS, exist_ok=True)
    for mode in args.modes or MODES:
        start = len(suite.rows)
        getattr(suite, mode)()
        # a partial dml run (PYDELTA_BENCH_DML) or another scale must not replace the
        # committed results of a whole run: it gets a file of its own, which report.py skips
        partial = (mode == "dml" and os.environ.get("PYDELTA_BENCH_DML")) or args.scale != 1.0
        name = f"{mode}.json" if not partial else f"partial-{mode}.json"
        with open(os.path.join(RESULTS, name), "w") as f:
            json.dump(
                {
                    "command": (
                        "PYDELTA_BENCH_DML=" + os.environ["PYDELTA_BENCH_DML"] + " "
                        if mode == "dml" and os.environ.get("PYDELTA_BENCH_DML")
                        else ""
                    )
                    + "python bench/run.py "
                    + " ".join(sys.argv[1:]),
                    "scale": args.scale,
                    "reps": args.reps,
                    "machine": machine(),
                    "when": time.strftime("%Y-%m-%d %H:%M:%S"),
                    "rows": suite.rows[start:],
                },
                f,
                indent=2,
                default=str,
            )
    spark.stop()


if __name__ == "__main__":
    main()
