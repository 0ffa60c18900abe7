"""A Delta table as an exactly-once streaming sink (no Spark), on the batch write path.

Each micro-batch is one commit carrying a ``txn`` action ``(appId, version=batchId)``.
``appId`` is the streaming query's id (read from ``<checkpointLocation>/metadata``, which
Spark writes before the first batch and keeps across restarts), or the ``txnAppId``
option. Before committing, the sink reads the table's latest ``txn`` version for its
``appId``; a batch at or below it was already committed by an earlier run (a crash
between the Delta commit and Spark's own commit log), so the replay commits nothing and
deletes the files it just wrote. A crash before the commit leaves only unreferenced
files (VACUUM's job). Concurrent commits are rebased by :class:`Transaction`, which also
notices our own ``txn`` landing in a lost race.

Output modes: ``append`` adds the batch's files; ``complete`` replaces the whole table
with each batch (an overwrite commit). ``update`` is refused by Spark's planner for this
sink's capabilities.

Guarantees: :func:`commit_batch` commits the batch's files at most once per
``(appId, batchId)``; files written under a plan whose table schema no longer matches
the table are refused (restart the query) rather than committed with wrong column names.
"""

from __future__ import annotations

import hashlib
import json
import logging
import posixpath
from collections.abc import Mapping
from dataclasses import replace

from delta_pyds.errors import OptionValueError, StreamSinkError
from delta_pyds.protocol.action_types import AddFile
from delta_pyds.protocol.schema import StructType
from delta_pyds.storage.store import Storage
from delta_pyds.transaction.commit import CommitResult
from delta_pyds.transaction.staged_files import delete_files, delete_on_failure
from delta_pyds.write.options import WriteOptions, get_option
from delta_pyds.write.plan import WritePlan, commit_write, plan_write

log = logging.getLogger(__name__)

_TXN_OPTIONS = ("txnappid", "txnversion")


def sink_options(options: Mapping[str, str], *, complete: bool) -> WriteOptions:
    """The write options of a sink (``txnAppId`` is the sink's own, ``txnVersion`` is the
    batch id and cannot be given)."""
    if get_option(options, "txnVersion") is not None:
        raise OptionValueError(
            "option txnVersion: a streaming sink uses the micro-batch id as the "
            "transaction version; give only txnAppId (or nothing)"
        )
    rest = {k: v for k, v in options.items() if k.lower() not in _TXN_OPTIONS}
    return WriteOptions.parse(rest, overwrite=complete)


def sink_app_id(options: Mapping[str, str]) -> str:
    """The transaction app id of a streaming query writing with ``options``."""
    explicit = get_option(options, "txnAppId")
    if explicit is not None and str(explicit).strip():
        return str(explicit).strip()
    location = get_option(options, "checkpointLocation")
    if not location:
        raise StreamSinkError(
            "the pydelta streaming sink needs the query's checkpointLocation (or the option "
            "txnAppId) to commit each micro-batch exactly once; set "
            ".option('checkpointLocation', ...)"
        )
    storage = Storage(location)
    try:
        _ = storage.fs  # raises for a scheme fsspec does not know
    except (ValueError, ImportError):  # no fsspec filesystem for this scheme: a stable stand-in
        return "pydelta-sink-" + hashlib.sha256(location.encode("utf-8")).hexdigest()[:32]
    path = posixpath.join(storage.root, "metadata")
    try:
        meta = json.loads(storage.read_bytes(path))  # bounded, regular files only
        return str(meta["id"])
    except (FileNotFoundError, KeyError, ValueError, TypeError) as exc:
        raise StreamSinkError(
            f"cannot read the streaming query id from {path} ({exc}); set the option txnAppId to identify the query"
        ) from None


def _schema_key(plan: WritePlan) -> tuple:
    schema = plan.table_schema.json() if plan.table_schema is not None else None
    return schema, tuple(c.lower() for c in plan.partition_columns), plan.column_mapping_mode


def commit_batch(
    written: WritePlan,
    data_schema: StructType,
    adds: list[AddFile],
    *,
    batch_id: int,
    app_id: str,
    num_rows: int | None = None,
) -> CommitResult | None:
    """Commits one micro-batch written under plan ``written``; None when the batch was
    already committed (its files are then deleted)."""
    opts = replace(
        written.opts,
        txn_app_id=app_id,
        txn_version=int(batch_id),
        save_mode="overwrite" if written.opts.overwrite else "append",
    )
    with delete_on_failure(written.storage, adds):
        current = plan_write(opts, data_schema, storage=written.storage)
    if current.skip:
        log.info(
            "pydelta sink: batch %s of %s is already in %s (%s); skipping it",
            batch_id,
            app_id,
            written.storage.root,
            current.skip,
        )
        delete_files(written.storage, adds)
        return None
    if current.read_version < 0 and written.metadata is not None:
        # the table is still to be created: with the metadata the files were written for
        current = replace(
            current,
            metadata=written.metadata,
            protocol=written.protocol,
            table_schema=written.table_schema,
            partition_columns=written.partition_columns,
            column_mapping_mode=written.column_mapping_mode,
        )
    elif _schema_key(current) != _schema_key(written):
        delete_files(written.storage, adds)
        raise StreamSinkError(
            f"the schema or partitioning of {written.storage.root} changed while the streaming query "
            "was running; restart the query so its files are written for the table's current schema"
        )
    with delete_on_failure(written.storage, adds):
        result = commit_write(current, adds, num_rows=num_rows, operation="STREAMING UPDATE")
    if result.skipped:  # our txn landed in a race we lost: this replay is a duplicate
        delete_files(written.storage, adds)
        return None
    return result
