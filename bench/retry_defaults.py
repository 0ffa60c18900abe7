"""How many requests and seconds a store client spends before ``StoreFaultError`` when
one fault never stops (default retry options unless ``--option k=v`` is given).

    python bench/retry_defaults.py --store azure [--option max_retries=1] [--json out.json]

For each case a fresh table root behind the fault proxy of ``tests/faults.py``: one
commit written without faults, then the fault scripted forever on the GETs of that
commit (503, a reset after 100 response bytes, a body cut short behind a matching
Content-Length) or on every commit upload (503), and the read or commit timed until it
fails. Prints one JSON object per case: requests the proxy saw, seconds, the error.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))

BODY = b'{"commitInfo":{"n":1}}\n' * 40


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--store", choices=("s3", "azure", "gcs"), default="s3")
    ap.add_argument("--option", action="append", default=[], help="a storage option k=v")
    ap.add_argument("--json", help="also write the results to this file")
    args = ap.parse_args(argv)
    import servers
    from faults import Fault, FaultProxy, proxied, upstream_of

    from delta_pyds.storage.store import Storage

    extra = dict(o.split("=", 1) for o in args.option)
    server = servers.STARTERS[args.store]()
    proxy = FaultProxy(upstream_of(server), name="defaults", flavor=args.store, seed=1).start()
    gcs = args.store == "gcs"
    name = r"_delta_log(/|%2F)0+\.json" + (r".*alt=media" if gcs else "")
    upload = ("POST", r"uploadType") if gcs else ("PUT", r"_delta_log/0+1\.json")
    cases = {
        "503 to every GET of a commit": (Fault("status", method="GET", path=name, status=503, count=-1), "read"),
        "reset after 100 response bytes, every GET": (
            Fault("reset_response", method="GET", path=name, after_bytes=100, count=-1),
            "read",
        ),
        "body cut short, every GET": (Fault("short_body", method="GET", path=name, count=-1), "read"),
        "503 to every commit upload": (Fault("status", method=upload[0], path=upload[1], status=503, count=-1), "put"),
    }
    results = []
    try:
        for label, (fault, op) in cases.items():
            root = server.url(f"defaults-{uuid.uuid4().hex[:8]}")
            storage = Storage(root, {**proxied(server, proxy), "skip_instance_cache": True, **extra})
            path = storage.join("_delta_log", f"{0:020d}.json")
            storage.put_if_absent(path, BODY)
            proxy.clear()
            proxy.reset_counts()
            proxy.add(fault)
            start = time.monotonic()
            error = ""
            try:
                if op == "read":
                    storage.read_bytes(path, size=len(BODY))
                else:
                    storage.put_if_absent(storage.join("_delta_log", f"{1:020d}.json"), BODY)
            except OSError as exc:  # StoreFaultError; a commit: OSError, outcome unknown
                error = str(exc)[:200]
            seconds = round(time.monotonic() - start, 1)
            proxy.clear()
            result = {"store": args.store, "case": label, "requests": proxy.counts[fault.kind], "seconds": seconds}
            result.update(options=extra, error=error)
            print(json.dumps(result))
            results.append(result)
    finally:
        proxy.stop()
        server.stop()
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
