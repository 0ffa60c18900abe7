"""Snapshot load on S3 with a long log: listing from ``_last_checkpoint`` against listing it all.

    python bench/log_listing.py [--commits 10000] [--checkpoint 9990] [--reps 7] [--baseline DIR ...]

Starts a local SeaweedFS (tests/servers.py), writes a synthetic log of ``--commits`` commits
(one add each) with a classic checkpoint at ``--checkpoint`` and its ``_last_checkpoint``,
uploads it, then times ``Snapshot.load(url)`` (fresh ``Storage`` each time: listing,
``_last_checkpoint``, commits after the checkpoint, protocol and metadata) and the live
files. Each code tree (this checkout, and every ``--baseline`` directory, e.g. ``git archive
main`` unpacked) is measured in its own subprocess with ``PYTHONPATH`` set to it, the trees
alternating ``--reps`` times (the first round is a warm-up and dropped); deltalake opens the
same table for reference. Prints medians and ratios as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def write_log(local: str, commits: int, checkpoint: int) -> None:
    """A table whose log has ``commits`` commits (versions 0..commits-1), one add each."""
    log_dir = os.path.join(local, "_delta_log")
    os.makedirs(log_dir)
    field = {"name": "id", "type": "long", "nullable": True, "metadata": {}}
    schema = json.dumps({"type": "struct", "fields": [field]})
    now = 1_700_000_000_000
    for v in range(commits):
        actions = [{"commitInfo": {"timestamp": now + v, "operation": "WRITE"}}]
        if v == 0:
            actions.append({"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}})
            actions.append(
                {
                    "metaData": {
                        "id": "bench-log-listing",
                        "format": {"provider": "parquet", "options": {}},
                        "schemaString": schema,
                        "partitionColumns": [],
                        "configuration": {},
                        "createdTime": now,
                    }
                }
            )
        actions.append(
            {
                "add": {
                    "path": f"part-{v:05d}.parquet",
                    "partitionValues": {},
                    "size": 500,
                    "modificationTime": now + v,
                    "dataChange": True,
                    "stats": json.dumps({"numRecords": 1, "minValues": {"id": v}, "maxValues": {"id": v}}),
                }
            }
        )
        with open(os.path.join(log_dir, f"{v:020d}.json"), "w") as f:
            f.write("\n".join(json.dumps(a) for a in actions) + "\n")
    sys.path.insert(0, ROOT)
    from delta_pyds.storage.store import Storage
    from delta_pyds.transaction.checkpoint_writer import write_checkpoint

    write_checkpoint(Storage(local), checkpoint)


def upload(server, local: str, name: str) -> str:
    fs = server.fs()
    url = server.url(name)
    blobs = {}
    for dirpath, _dirs, files in os.walk(local):
        for f in files:
            rel = os.path.relpath(os.path.join(dirpath, f), local)
            with open(os.path.join(dirpath, f), "rb") as fh:
                blobs[f"{url}/{rel}"] = fh.read()
    fs.pipe(blobs)
    return url


def measure_once(url: str, options: dict) -> dict:
    """One load in this process (run by a subprocess with the code tree on PYTHONPATH)."""
    from delta_pyds.storage.store import Storage
    from delta_pyds.table.snapshot import Snapshot

    t = time.perf_counter()
    snap = Snapshot.load(Storage(url, options))
    loaded = time.perf_counter() - t
    n = snap.files.num_rows
    return {"load_s": loaded, "files_s": time.perf_counter() - t, "version": snap.version, "num_files": n}


def deltalake_once(url: str, options: dict) -> float:
    from deltalake import DeltaTable

    opts = {
        "AWS_ACCESS_KEY_ID": options["key"],
        "AWS_SECRET_ACCESS_KEY": options["secret"],
        "AWS_ENDPOINT_URL": options["endpoint_url"],
        "AWS_REGION": "us-east-1",
        "AWS_ALLOW_HTTP": "true",
    }
    t = time.perf_counter()
    dt = DeltaTable(url, storage_options=opts)
    dt.version()
    return time.perf_counter() - t


def run_tree(tree: str, url: str, options: dict) -> dict:
    env = dict(os.environ, PYTHONPATH=tree)
    code = (
        "import json, sys; sys.path.insert(0, sys.argv[1]); import log_listing as b; "
        "print(json.dumps(b.measure_once(sys.argv[2], json.loads(sys.argv[3]))))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, HERE, url, json.dumps(options)],
        env=env,
        cwd=tempfile.gettempdir(),
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--commits", type=int, default=10_000)
    parser.add_argument("--checkpoint", type=int, default=9_990)
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--baseline", action="append", default=[], help="another code tree to time (repeatable)")
    args = parser.parse_args(argv)
    sys.path.insert(0, os.path.join(ROOT, "tests"))
    import servers

    trees = {"this": ROOT, **{f"baseline:{d}": os.path.abspath(d) for d in args.baseline}}
    work = tempfile.mkdtemp(prefix="pydelta-bench-log-")
    local = os.path.join(work, "table")
    t = time.perf_counter()
    write_log(local, args.commits, args.checkpoint)
    server = servers.start_seaweedfs()
    try:
        url = upload(server, local, "log-listing")
        setup_s = time.perf_counter() - t
        times: dict[str, list[float]] = {name: [] for name in trees}
        files_times: dict[str, list[float]] = {name: [] for name in trees}
        seen = {}
        dl: list[float] = []
        for rep in range(args.reps):
            for name, tree in trees.items():
                r = run_tree(tree, url, server.options)
                seen[name] = (r["version"], r["num_files"])
                if rep:
                    times[name].append(r["load_s"])
                    files_times[name].append(r["files_s"])
            try:
                d = deltalake_once(url, server.options)
                if rep:
                    dl.append(d)
            except Exception as exc:  # deltalake is a reference only
                print(f"deltalake: {type(exc).__name__}: {exc}", file=sys.stderr)
        result = {
            "commits": args.commits,
            "checkpoint": args.checkpoint,
            "reps": args.reps - 1,
            "setup_s": round(setup_s, 1),
            "version_files": seen,
            "load_median_s": {k: round(statistics.median(v), 4) for k, v in times.items()},
            "load_and_files_median_s": {k: round(statistics.median(v), 4) for k, v in files_times.items()},
            "deltalake_open_median_s": round(statistics.median(dl), 4) if dl else None,
        }
        base = result["load_median_s"]["this"]
        result["ratio_baseline_over_this"] = {
            k: round(v / base, 2) for k, v in result["load_median_s"].items() if k != "this"
        }
        print(json.dumps(result, indent=2))
    finally:
        server.stop()


if __name__ == "__main__":
    main()
