"""Soak test: concurrent writers and readers on one table, with injected failures.

    python bench/soak.py --writers 4 --seconds 60 [--readers 2] [--s3] [--seed N] [--json out.json]
    python bench/soak.py --network-faults 0.02 [--store s3|azure|gcs] ...

``--writers`` processes commit through the core :mod:`delta_pyds.transaction.commit` API
(Parquet data files written with pyarrow, then an ``add`` action committed): mostly
appends, some overwrites (remove every active file + add one). Injected faults:

* ``selfkill``: a writer SIGKILLs itself between writing its data file and committing;
* ``exception``: a random exception between writing the data file and committing;
* ``ambiguous``: the commit PUT succeeds but then raises (a lost response); the
  transaction must notice its own entry and report success;
* ``putfail``: the commit PUT fails before writing; the commit must raise;
* the supervisor SIGKILLs a random writer every ``--kill-every`` seconds (at any point,
  possibly mid-commit) and starts a replacement.

``--network-faults RATE`` puts the fault proxy of ``tests/faults.py`` between every
process and a local object store (``--store``, S3 by default) and injects, each at
``RATE`` per matching request: HTTP 503 SlowDown / 500 / 429, connection resets
in a request or a response, truncated bodies, bodies cut short behind a matching
``Content-Length`` (commit JSON reads), 0.2-1 s of latency, and commit PUTs applied
whose response is lost. The summary adds the faults injected by kind and the requests
retried after a fault. A write the store kept refusing (``StoreFaultError``) counts as
failed; a commit whose outcome the writer could not tell counts as ``unknown`` (never
as failed or lost).

``--readers`` processes load snapshots continuously and check each one against an
independent reference replay of the raw JSON commits: versions contiguous and never
going backwards, the active file set equal, the row count (stats) equal, and every few
reads the Parquet footers of the active files summing to that count.

At the end the supervisor checks the whole log against the writers' journals and
prints attempted / committed / conflicted / failed / lost commits. ``lost`` counts
commits a writer was told succeeded that are not in the log at that version;
``phantom`` counts commits a writer was told failed that are in the log anyway;
``unacknowledged`` are commits that landed while their writer was being killed (fine).
The exit status is 0 only if lost = phantom = inconsistent reads = read errors = 0
and the final table's row count equals the sum of committed appends since the last
committed overwrite.
"""

from __future__ import annotations

import argparse
import io
import json
import multiprocessing as mp
import os
import random
import signal
import sys
import tempfile
import time
import traceback
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

SCHEMA = json.dumps(
    {
        "type": "struct",
        "fields": [
            {"name": "writer", "type": "string", "nullable": True, "metadata": {}},
            {"name": "seq", "type": "long", "nullable": True, "metadata": {}},
            {"name": "value", "type": "long", "nullable": True, "metadata": {}},
        ],
    }
)


class InjectedFault(Exception):
    """A fault injected by the soak test (never a bug)."""


# ------------------------------------------------------------------ shared helpers
def _storage(root: str, options: dict):
    from delta_pyds.storage.store import Storage

    return Storage(root, options)


def _rows_of(path: str) -> int:
    """Rows of a soak data file, encoded in its name: ``...-r<rows>.parquet``."""
    return int(path.rsplit("-r", 1)[1].split(".", 1)[0])


def _commit_versions(storage) -> list[int]:
    from delta_pyds.log.segment import list_log

    return sorted(f.version for f in list_log(storage) if f.kind == "commit")


def _read_commit(storage, version: int) -> list[dict]:
    from delta_pyds.log.files import LOG_DIR, commit_name

    path = storage.join(LOG_DIR, commit_name(version))
    data = storage.read_bytes(path, size=storage.info(path).size)  # never a body cut short
    return [json.loads(line) for line in data.splitlines() if line.strip()]


class Reference:
    """Independent replay of the raw JSON commits (cached: commits are immutable)."""

    def __init__(self, storage):
        self.storage = storage
        self.commits: dict[int, list[dict]] = {}

    def state(self, version: int) -> dict[str, int]:
        files: dict[str, int] = {}
        for v in range(version + 1):
            if v not in self.commits:
                self.commits[v] = _read_commit(self.storage, v)
            for action in self.commits[v]:
                if "add" in action:
                    files[action["add"]["path"]] = json.loads(action["add"]["stats"])["numRecords"]
                elif "remove" in action:
                    files.pop(action["remove"]["path"], None)
        return files


def _journal(f, **record) -> None:
    f.write(json.dumps(record) + "\n")
    f.flush()  # the OS keeps it even if this process is SIGKILLed next


# ------------------------------------------------------------------------ writer
def writer_main(
    wid: str, root: str, options: dict, deadline: float, journal_path: str, seed: int, faults: dict
) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from delta_pyds.errors import CommitFailedError, ConcurrentModificationError, DeltaError, StoreFaultError
    from delta_pyds.transaction.commit import Transaction

    rng = random.Random(seed)
    storage = _storage(root, options)
    with open(journal_path, "a") as journal:
        seq = 0
        while time.time() < deadline:
            seq += 1
            op = "overwrite" if rng.random() < faults["overwrite"] else "append"
            rows = rng.randint(1, 20)
            name = f"{wid}-{seq}-{uuid.uuid4().hex[:8]}-r{rows}.parquet"
            buf = io.BytesIO()
            pq.write_table(
                pa.table(
                    {"writer": [wid] * rows, "seq": [seq] * rows, "value": list(range(rows))},
                    schema=pa.schema([("writer", pa.string()), ("seq", pa.int64()), ("value", pa.int64())]),
                ),
                buf,
            )
            data = buf.getvalue()
            try:
                storage.write_bytes(storage.join(name), data)
            except StoreFaultError as exc:
                _journal(journal, event="failed", writer=wid, seq=seq, txn=None, error=str(exc)[:200])
                continue
            add = {
                "path": name,
                "partitionValues": {},
                "size": len(data),
                "modificationTime": int(time.time() * 1000),
                "dataChange": True,
                "stats": json.dumps({"numRecords": rows}),
            }
            _journal(journal, event="attempt", writer=wid, seq=seq, op=op, rows=rows, file=name)
            if rng.random() < faults["selfkill"]:
                os.kill(os.getpid(), signal.SIGKILL)  # between writing data and committing
            txn = None
            try:
                if rng.random() < faults["exception"]:
                    raise InjectedFault("injected before commit")
                txn = Transaction.start(storage)
                if op == "overwrite":
                    txn.read_whole_table()
                    now = int(time.time() * 1000)
                    txn.remove_files(
                        [
                            {"path": p, "deletionTimestamp": now, "dataChange": True, "partitionValues": {}, "size": s}
                            for p, s in zip(
                                txn.snapshot.files.column("path").to_pylist(),
                                txn.snapshot.files.column("size").to_pylist(),
                            )
                        ]
                    )
                txn.add_files([add])
                roll = rng.random()
                if roll < faults["ambiguous"]:
                    _inject_put(txn, after_write=True)
                elif roll < faults["ambiguous"] + faults["putfail"]:
                    _inject_put(txn, after_write=False)
                result = txn.commit("WRITE", {"mode": "Overwrite" if op == "overwrite" else "Append"}, max_attempts=200)
                _journal(
                    journal,
                    event="committed",
                    writer=wid,
                    seq=seq,
                    op=op,
                    rows=rows,
                    file=name,
                    version=result.version,
                    txn=txn.txn_id,
                    attempts=result.attempts,
                )
            except ConcurrentModificationError as exc:
                _journal(journal, event="conflicted", writer=wid, seq=seq, txn=txn.txn_id, error=str(exc)[:200])
            except CommitFailedError as exc:
                # "cannot tell whether it was written": the outcome is unknown, not a failure
                event = "unknown" if "cannot tell" in str(exc) else "failed"
                _journal(
                    journal, event=event, writer=wid, seq=seq, txn=txn.txn_id if txn else None, error=str(exc)[:200]
                )
            except StoreFaultError as exc:  # the store kept failing before the commit PUT
                _journal(
                    journal, event="failed", writer=wid, seq=seq, txn=txn.txn_id if txn else None, error=str(exc)[:200]
                )
            except InjectedFault:
                _journal(journal, event="aborted", writer=wid, seq=seq)
            except DeltaError as exc:
                _journal(
                    journal,
                    event="error",
                    writer=wid,
                    seq=seq,
                    txn=txn.txn_id if txn else None,
                    error=f"{type(exc).__name__}: {exc}"[:400],
                )
            except Exception:  # a bug: recorded, and the supervisor fails the run
                _journal(
                    journal,
                    event="crash",
                    writer=wid,
                    seq=seq,
                    txn=txn.txn_id if txn else None,
                    error=traceback.format_exc()[-1500:],
                )


def _inject_put(txn, *, after_write: bool) -> None:
    """Makes the transaction's next commit PUT fail once: after writing (a lost
    response) or before writing (a refused request)."""
    storage = txn.storage
    real = storage.put_if_absent
    state = {"done": False}

    def flaky(path, data):
        if state["done"]:
            return real(path, data)
        state["done"] = True
        if after_write:
            real(path, data)
            raise OSError("injected: connection reset after the commit was written")
        raise OSError("injected: connection refused before the commit was written")

    storage.put_if_absent = flaky


# ------------------------------------------------------------------------ reader
def reader_main(rid: str, root: str, options: dict, deadline: float, out_path: str) -> None:
    import pyarrow.parquet as pq

    from delta_pyds.table.snapshot import Snapshot

    storage = _storage(root, options)
    ref = Reference(storage)
    reads = bad = errors = 0
    last_version = -1
    problems = []
    while time.time() < deadline:
        try:
            snap = Snapshot.load(storage)
            v = snap.version
            reads += 1
            issues = []
            if v < last_version:
                issues.append(f"version went backwards: {last_version} -> {v}")
            last_version = v
            versions = _commit_versions(storage)
            if versions[: v + 1] != list(range(v + 1)):
                issues.append(f"commits 0..{v} not contiguous: {versions[: v + 1]}")
            expected = ref.state(v)
            files = snap.files
            got_paths = files.column("path").to_pylist()
            got_rows = sum(json.loads(s)["numRecords"] for s in files.column("stats").to_pylist())
            if len(got_paths) != len(set(got_paths)):
                issues.append(f"v{v}: duplicate files in the snapshot")
            if set(got_paths) != set(expected):
                issues.append(
                    f"v{v}: files differ from the reference: +{sorted(set(got_paths) - set(expected))[:3]}"
                    f" -{sorted(set(expected) - set(got_paths))[:3]}"
                )
            if got_rows != sum(expected.values()):
                issues.append(f"v{v}: {got_rows} rows by stats, reference {sum(expected.values())}")
            if any(_rows_of(p) != expected.get(p, _rows_of(p)) for p in got_paths):
                issues.append(f"v{v}: stats disagree with the committed row counts")
            if reads % 5 == 0 and len(got_paths) <= 400:
                footer_rows = sum(
                    pq.ParquetFile(storage.open_input(storage.resolve(p))).metadata.num_rows for p in got_paths
                )
                if footer_rows != got_rows:
                    issues.append(f"v{v}: data files hold {footer_rows} rows, the log says {got_rows}")
            if issues:
                bad += 1
                problems.extend(issues)
        except Exception as exc:
            errors += 1
            problems.append(f"read error: {type(exc).__name__}: {exc}"[:500])
            time.sleep(0.05)
    with open(out_path, "w") as f:
        json.dump(
            {
                "reader": rid,
                "reads": reads,
                "inconsistent": bad,
                "errors": errors,
                "last_version": last_version,
                "problems": problems[:20],
            },
            f,
        )


# -------------------------------------------------------------------- supervisor
def create_table(root: str, options: dict) -> None:
    from delta_pyds.protocol.actions import Metadata
    from delta_pyds.transaction.commit import Transaction

    txn = Transaction.start(root, options=options)
    txn.update_metadata(
        Metadata(
            id=str(uuid.uuid4()),
            schema_string=SCHEMA,
            partition_columns=(),
            configuration={"delta.checkpointInterval": "10"},
            created_time=int(time.time() * 1000),
        )
    )
    txn.commit("CREATE TABLE")


def verify(root: str, options: dict, journals: list[str]) -> dict:
    import pyarrow.parquet as pq

    from delta_pyds.table.snapshot import Snapshot

    storage = _storage(root, options)
    records = []
    for path in journals:
        if not os.path.exists(path):  # killed before it started
            continue
        with open(path) as f:
            for line in f:
                try:
                    records.append(json.loads(line))
                except ValueError:  # a line cut by SIGKILL mid-write
                    pass
    versions = _commit_versions(storage)
    problems = []
    if versions != list(range(len(versions))):
        problems.append(f"log versions not contiguous: {versions[:5]}...")
    log_txns: dict[str, int] = {}
    # committed appends still live: every add, minus what overwrites removed (an
    # overwrite removes the files of the version it read; under WriteSerializable a
    # blind append committed concurrently survives it)
    live: dict[str, int] = {}
    ops = {"append": 0, "overwrite": 0}
    for v in versions:
        actions = _read_commit(storage, v)
        info = next((a["commitInfo"] for a in actions if "commitInfo" in a), {})
        if info.get("txnId"):
            log_txns[info["txnId"]] = v
        for a in actions:
            if "remove" in a:
                if a["remove"]["path"] not in live:
                    problems.append(f"v{v} removes {a['remove']['path']}, which is not live")
                live.pop(a["remove"]["path"], None)
        for a in actions:
            if "add" in a:
                live[a["add"]["path"]] = _rows_of(a["add"]["path"])
        mode = info.get("operationParameters", {}).get("mode")
        if mode in ("Overwrite", "Append"):
            ops[mode.lower()] += 1
    expected_rows = sum(live.values())
    count = {
        e: sum(1 for r in records if r["event"] == e)
        for e in ("attempt", "committed", "conflicted", "failed", "unknown", "aborted", "error", "crash")
    }
    committed = [r for r in records if r["event"] == "committed"]
    lost = [r for r in committed if log_txns.get(r["txn"]) != r["version"]]
    phantom = [r for r in records if r["event"] in ("conflicted", "failed") and r.get("txn") in log_txns]
    acknowledged = {r["txn"] for r in committed}
    unacknowledged = [t for t in log_txns if t not in acknowledged]
    snap = Snapshot.load(storage)
    files = snap.files.column("path").to_pylist()
    stats_rows = sum(json.loads(s)["numRecords"] for s in snap.files.column("stats").to_pylist())
    data_rows = sum(pq.ParquetFile(storage.open_input(storage.resolve(p))).metadata.num_rows for p in files)
    if set(files) != set(live):
        problems.append(f"final snapshot files differ from the replay of the log ({len(files)} vs {len(live)})")
    if not (stats_rows == data_rows == expected_rows):
        problems.append(f"final rows: stats {stats_rows}, data files {data_rows}, committed appends {expected_rows}")
    referenced = set()
    for v in versions:
        referenced.update(a["add"]["path"] for a in _read_commit(storage, v) if "add" in a)
    data_files = [e.name for e in storage.list_dir(storage.root) if e.name.endswith(".parquet")]
    orphans = [n for n in data_files if n not in referenced]
    for r in records:
        if r["event"] in ("error", "crash"):
            problems.append(f"writer {r['event']}: {r.get('error')}")
    return {
        "attempted": count["attempt"],
        "committed": count["committed"],
        "conflicted": count["conflicted"],
        "failed": count["failed"],
        "unknown_outcome": count["unknown"],
        "aborted": count["aborted"],
        "writer_errors": count["error"],
        "writer_crashes": count["crash"],
        "lost": len(lost),
        "phantom": len(phantom),
        "unacknowledged": len(unacknowledged),
        "versions": len(versions),
        "log_appends": ops["append"],
        "log_overwrites": ops["overwrite"],
        "final_version": snap.version,
        "final_files": len(files),
        "final_rows": stats_rows,
        "expected_rows": expected_rows,
        "orphan_data_files": len(orphans),
        "problems": problems[:20] + [f"lost: {r}" for r in lost[:5]] + [f"phantom: {r}" for r in phantom[:5]],
    }


def run(
    writers: int = 4,
    readers: int = 2,
    seconds: float = 60,
    s3: bool = False,
    seed: int = 0,
    kill_every: float = 3.0,
    faults: dict | None = None,
    root: str | None = None,
    quiet: bool = False,
    network_faults: float = 0.0,
    store: str = "s3",
) -> dict:
    faults = {
        "overwrite": 0.05,
        "selfkill": 0.01,
        "exception": 0.03,
        "ambiguous": 0.03,
        "putfail": 0.03,
        **(faults or {}),
    }
    rng = random.Random(seed)
    work = tempfile.mkdtemp(prefix="pydelta-soak-")
    server = proxy = None
    options: dict = {}
    if network_faults and not s3:
        s3 = True
    if s3:
        sys.path.insert(0, os.path.join(ROOT, "tests"))
        import servers

        server = servers.STARTERS[store]()
        options = dict(server.options)
        root = server.url(f"soak-{uuid.uuid4().hex[:8]}")
        if network_faults:
            proxy = start_fault_proxy(server, network_faults, seed or rng.randrange(1, 1 << 30))
            options = _proxied_options(server, proxy)
    elif root is None:
        root = os.path.join(work, "table")
    ctx = mp.get_context("spawn")
    try:
        create_table(root, options)
        start = time.time()
        deadline = start + seconds
        journals: list[str] = []
        procs: dict[str, mp.Process] = {}
        kills = 0

        def spawn_writer(n: int) -> None:
            wid = f"w{n}"
            journal = os.path.join(work, f"{wid}.jsonl")
            journals.append(journal)
            p = ctx.Process(
                target=writer_main,
                args=(wid, root, options, deadline, journal, rng.randrange(1 << 30), faults),
                daemon=True,
            )
            p.start()
            procs[wid] = p

        next_id = 0
        for _ in range(writers):
            spawn_writer(next_id)
            next_id += 1
        reader_outs = []
        reader_procs = []
        for i in range(readers):
            out = os.path.join(work, f"r{i}.json")
            reader_outs.append(out)
            p = ctx.Process(target=reader_main, args=(f"r{i}", root, options, deadline, out), daemon=True)
            p.start()
            reader_procs.append(p)
        next_kill = start + kill_every
        while time.time() < deadline:
            time.sleep(0.05)
            for wid, p in list(procs.items()):
                if not p.is_alive() and time.time() < deadline - 1:  # self-killed: replace it
                    del procs[wid]
                    spawn_writer(next_id)
                    next_id += 1
            if kill_every and time.time() >= next_kill and time.time() < deadline - 1:
                next_kill += kill_every
                alive = [w for w, p in procs.items() if p.is_alive()]
                if alive:
                    victim = rng.choice(alive)
                    time.sleep(rng.uniform(0, 0.3))  # land at a random point of its loop
                    os.kill(procs[victim].pid, signal.SIGKILL)
                    procs[victim].join()
                    kills += 1
        for p in list(procs.values()) + reader_procs:
            p.join(timeout=max(30.0, seconds))
            if p.is_alive():  # stuck: a bug, recorded below
                p.kill()
        if proxy is not None:  # verify against the store itself
            proxy.clear()
            summary_faults = fault_summary(proxy)
            options = dict(server.options) if server is not None else options
        summary = verify(root, options, journals)
        if proxy is not None:
            summary.update(summary_faults)
        summary["supervisor_kills"] = kills
        summary["writer_processes"] = next_id
        reads = []
        for out in reader_outs:
            if os.path.exists(out):
                with open(out) as f:
                    reads.append(json.load(f))
            else:
                reads.append({"reads": 0, "inconsistent": 0, "errors": 1, "problems": ["reader died"]})
        summary["reads"] = sum(r["reads"] for r in reads)
        summary["inconsistent_reads"] = sum(r["inconsistent"] for r in reads)
        summary["read_errors"] = sum(r["errors"] for r in reads)
        summary["problems"] += [p for r in reads for p in r["problems"]][:20]
        summary["seconds"] = round(time.time() - start, 1)
        names = {"s3": "s3 (SeaweedFS)", "azure": "azure (Azurite)", "gcs": "gcs (fake-gcs-server)"}
        summary["backend"] = names[store] if s3 else "local"
        if proxy is not None:
            summary["backend"] += f" behind the fault proxy (rate {network_faults}, seed {proxy.seed})"
        summary["ok"] = (
            summary["lost"] == 0
            and summary["phantom"] == 0
            and summary["inconsistent_reads"] == 0
            and summary["read_errors"] == 0
            and summary["writer_crashes"] == 0
            and summary["writer_errors"] == 0
            and not summary["problems"]
            and summary["committed"] > 0
        )
        if not quiet:
            print(json.dumps(summary, indent=2))
        return summary
    finally:
        if proxy is not None:
            proxy.stop()
        if server is not None:
            server.stop()
        import shutil

        shutil.rmtree(work, ignore_errors=True)


def start_fault_proxy(server, rate: float, seed: int):
    """The fault proxy of tests/faults.py in front of ``server``, every fault kind at
    ``rate``, errors in the store's own shape (Azure: 503 ServerBusy and 500 only, the
    statuses its client retries; a throttled Azure account answers 503)."""
    from faults import Fault, FaultProxy, upstream_of

    proxy = FaultProxy(upstream_of(server), seed=seed, name=f"soak-{server.kind}", flavor=server.kind).start()
    commit = r"_delta_log(/|%2F)\d{20}\.json"  # GCS object names are URL-quoted in the path
    # GCS uploads name the object in the body: every upload may lose its response
    commit_put = (r"POST|PUT", r"uploadType") if server.kind == "gcs" else ("PUT", commit)
    statuses = (503, 500) if server.kind == "azure" else (503, 500, 429)
    proxy.add(
        Fault("lost_response", method=commit_put[0], path=commit_put[1], count=-1, rate=rate * 5),
        Fault(
            "reset_request", method="PUT" if server.kind == "s3" else "PUT|POST", after_bytes=120, count=-1, rate=rate
        ),
        *(Fault("status", status=status, count=-1, rate=rate) for status in statuses),
        Fault("reset_response", method="GET", after_bytes=150, count=-1, rate=rate),
        Fault("truncate", method="GET", count=-1, rate=rate),
        Fault("short_body", method="GET", path=commit, count=-1, rate=rate * 2),
        Fault("latency", delay=0.5, count=-1, rate=rate),
    )
    return proxy


def _proxied_options(server, proxy) -> dict:
    from faults import proxied

    return proxied(server, proxy)


def fault_summary(proxy) -> dict:
    """Faults injected by kind, and how many of the faulted requests were sent again."""
    injected = dict(sorted(proxy.counts.items()))
    seen: dict = {}
    retried = 0
    faulted = {(m, t) for _, m, t in proxy.injected}
    for m, t in proxy.requests:
        seen[(m, t)] = seen.get((m, t), 0) + 1
    retried = sum(1 for key in faulted if seen.get(key, 0) > 1)
    return {
        "requests": len(proxy.requests),
        "faults_injected": injected,
        "faults_total": sum(injected.values()),
        "faulted_requests_retried": retried,
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--writers", type=int, default=4)
    ap.add_argument("--readers", type=int, default=2)
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--s3", action="store_true", help="run against a local SeaweedFS S3 server")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--kill-every", type=float, default=3.0, help="SIGKILL a random writer this often (0: never)")
    ap.add_argument("--json", help="also write the summary to this file")
    ap.add_argument(
        "--network-faults", type=float, default=0.0, help="inject network faults at this rate per kind (0: none)"
    )
    ap.add_argument(
        "--store", choices=("s3", "azure", "gcs"), default="s3", help="the object store (with --s3 or faults)"
    )
    args = ap.parse_args(argv)
    summary = run(
        args.writers,
        args.readers,
        args.seconds,
        args.s3 or args.store != "s3",
        args.seed,
        args.kill_every,
        network_faults=args.network_faults,
        store=args.store,
    )
    if args.json:
        with open(args.json, "w") as f:
            json.dump(summary, f, indent=2)
    return 0 if summary["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
