"""``python -m delta_pyds``: inspect a Delta table without Spark.

    python -m delta_pyds history PATH [--limit N]
    python -m delta_pyds files PATH [--version V]
    python -m delta_pyds protocol PATH
    python -m delta_pyds schema PATH [--version V]
    python -m delta_pyds vacuum PATH [--retention-hours H]     (always a dry run)

Output is JSON lines (one object per record) so it pipes into jq; errors print one
line to stderr and exit with status 1. Every subcommand first checks that PATH is a Delta
table (a ``_delta_log`` with a commit or checkpoint): a missing path, a file, a directory
without a log (plain Parquet) and an empty log are errors (delta-spark's
``DELTA_MISSING_DELTA_TABLE``: "PATH is not a Delta table"), never an empty answer.
"""

from __future__ import annotations

import argparse
import json
import sys

from delta_pyds.errors import DeltaError, TableNotFoundError
from delta_pyds.log.history import history
from delta_pyds.log.segment import list_log
from delta_pyds.operations.vacuum import vacuum
from delta_pyds.protocol import features
from delta_pyds.storage.store import Storage
from delta_pyds.table.snapshot import Snapshot


def _print(obj: object) -> None:
    print(json.dumps(obj, default=str, sort_keys=False))


def _require_table(path: str) -> None:
    """Raises TableNotFoundError unless ``path`` holds a Delta log with a commit or checkpoint."""
    storage = Storage(path)
    try:
        if any(f.kind in ("commit", "checkpoint") for f in list_log(storage)):
            return
    except (NotADirectoryError, FileNotFoundError):
        pass
    if not storage.exists(storage.root):
        reason = "the path does not exist"
    elif not storage.fs.isdir(storage.root):
        reason = "it is a file"
    elif not storage.exists(storage.join("_delta_log")):
        reason = "it has no _delta_log directory"
    else:
        reason = "_delta_log has no commits"
    raise TableNotFoundError(f"[DELTA_MISSING_DELTA_TABLE] {path} is not a Delta table: {reason}")


def _history(args: argparse.Namespace) -> None:
    for record in history(args.path, limit=args.limit):
        _print(record)


def _files(args: argparse.Namespace) -> None:
    snap = Snapshot.load(args.path, version=args.version)
    cols = [
        c
        for c in ("path", "size", "modification_time", "partition_values", "deletion_vector")
        if c in snap.files.column_names
    ]
    for row in snap.files.select(cols).to_pylist():
        if row.get("deletion_vector") is None:
            row.pop("deletion_vector", None)
        _print(row)


def _protocol(args: argparse.Namespace) -> None:
    snap = Snapshot.load(args.path)
    p = snap.protocol
    names = sorted(set(features.reader_features(p)) | set(features.writer_features(p)))
    _print(
        {
            "version": snap.version,
            "minReaderVersion": p.min_reader_version,
            "minWriterVersion": p.min_writer_version,
            "features": [
                {
                    "name": n,
                    "reader": n in features.reader_features(p),
                    "readSupported": bool(features.FEATURES.get(n) and features.FEATURES[n].read),
                    "writeSupported": bool(features.FEATURES.get(n) and features.FEATURES[n].write),
                }
                for n in names
            ],
            "configuration": dict(snap.configuration),
        }
    )


def _schema(args: argparse.Namespace) -> None:
    snap = Snapshot.load(args.path, version=args.version)
    _print({"version": snap.version, "partitionColumns": snap.partition_columns, "schema": snap.schema.to_json()})


def _vacuum(args: argparse.Namespace) -> None:
    snap = Snapshot.load(args.path)
    result = vacuum(
        snap, retention_hours=args.retention_hours, dry_run=True, enforce_retention=not args.allow_short_retention
    )
    for f in result.files:
        _print({"path": f})
    print(str(result), file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m delta_pyds", description="Inspect a Delta table.")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("history", help="commits, newest first")
    p.add_argument("path")
    p.add_argument("--limit", type=int)
    p.set_defaults(run=_history)
    p = sub.add_parser("files", help="active data files of a version")
    p.add_argument("path")
    p.add_argument("--version", type=int)
    p.set_defaults(run=_files)
    p = sub.add_parser("protocol", help="protocol versions, features and their support")
    p.add_argument("path")
    p.set_defaults(run=_protocol)
    p = sub.add_parser("schema", help="the table schema (Delta JSON)")
    p.add_argument("path")
    p.add_argument("--version", type=int)
    p.set_defaults(run=_schema)
    p = sub.add_parser("vacuum", help="files VACUUM would delete (dry run)")
    p.add_argument("path")
    p.add_argument("--retention-hours", type=float)
    p.add_argument(
        "--allow-short-retention",
        action="store_true",
        help="allow a retention below delta.deletedFileRetentionDuration",
    )
    p.set_defaults(run=_vacuum)
    args = parser.parse_args(argv)
    try:
        _require_table(args.path)
        args.run(args)
    except (DeltaError, ValueError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0
