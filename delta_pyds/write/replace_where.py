"""Partial overwrites on data columns: ``replaceWhere`` with a predicate on columns that
are not partition columns (delta-spark's "arbitrary replaceWhere").

The commit that adds the written data also deletes every current row matching the
predicate. Files are pruned with partition values and statistics; each remaining file is
read on the driver and the predicate evaluated row by row with SQL semantics (a row for
which it is null is kept). Then, per file: no matching live row — untouched; every live
row matches — removed; otherwise, on a table with deletion vectors enabled, re-added
with a deletion vector that adds the matching rows (small vectors inline), and without
them its other rows are rewritten to a new file (copy-on-write).

Guarantees: nothing is written before :func:`replace_matching_rows` has decided every
file; the files it writes are listed in :attr:`Replacement.written` so a failed commit
can delete them. Refused with a clear error (before writing anything): copy-on-write
rewrites on tables with the change data feed or row tracking (delta-spark writes change
data files or materialized row ids there; enable deletion vectors instead).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, cast

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from delta_pyds.errors import UnsupportedFeatureError
from delta_pyds.expressions.evaluator import evaluate_predicate
from delta_pyds.expressions.to_predicates import skipping_predicates
from delta_pyds.protocol import features
from delta_pyds.protocol.deletion_vectors import with_deletion_vector
from delta_pyds.protocol.paths import relative_to
from delta_pyds.protocol.table_properties import ENABLE_CDF, ENABLE_DV, ROW_TRACKING_SUSPENDED, is_true
from delta_pyds.read.file_reader import ReadSpec
from delta_pyds.table.snapshot import Snapshot
from delta_pyds.transaction.file_actions import add_actions
from delta_pyds.write.parquet_writer import WriteSpec


@dataclass
class Replacement:
    removes: list = field(default_factory=list)  # remove actions
    adds: list = field(default_factory=list)  # re-added (new DV) and rewritten files
    written: list = field(default_factory=list)  # new files (rewrites, DV files): delete on failure
    deleted_rows: int = 0
    copied_rows: int = 0
    deletion_vectors: int = 0


@dataclass
class _Matches:
    """What happens to each file with matching rows: removed whole (every live row
    matches), marked in a new deletion vector, or rewritten without them."""

    removed: list[str] = field(default_factory=list)  # paths
    dv_rows: list[tuple[str, np.ndarray]] = field(default_factory=list)  # (path, rows deleted after)
    rewrites: list[tuple[str, pa.Table]] = field(default_factory=list)  # (path, rows kept)


def replace_matching_rows(snapshot: Snapshot, node: Any, text: str, rewrite_spec: WriteSpec) -> Replacement:
    """Removes the rows of ``snapshot`` matching ``node`` (the parsed ``text``);
    ``rewrite_spec`` (a WriteSpec for the table) writes copy-on-write rewrites."""
    from delta_pyds.protocol.schema_evolution import logical_arrow_schema
    from delta_pyds.read.scan_plan import plan_scan
    from delta_pyds.table.state import file_actions
    from delta_pyds.transaction.file_actions import remove_actions
    from delta_pyds.transaction.staged_files import delete_on_failure

    scan = plan_scan(snapshot, output=snapshot.schema, predicates=skipping_predicates(text, snapshot.schema))
    out = Replacement()
    if scan.files.num_rows == 0:
        return out
    spec = scan.read_spec(logical_arrow_schema(snapshot.schema))
    found = _find_matches(snapshot, scan.files, spec, node, out)
    if found.rewrites:
        _refuse_rewrites(snapshot)
    active = file_actions(snapshot).active
    by_path = {p: i for i, p in enumerate(active.column("path").to_pylist())}

    def rows(paths: list[str]) -> pa.Table:
        return active.take(pa.array([by_path[p] for p in paths], pa.int64()))

    touched = found.removed + [p for p, _ in found.dv_rows] + [p for p, _ in found.rewrites]
    out.removes = remove_actions(rows(touched)) if touched else []
    # out.written grows as files are written: all of them are deleted if a later one fails
    with delete_on_failure(snapshot.storage, out.written):
        if found.dv_rows:
            _add_deletion_vectors(snapshot, rows([p for p, _ in found.dv_rows]), found.dv_rows, out)
        if found.rewrites:
            names = tuple(spec.arrow_schema.names)
            _rewrite(replace(rewrite_spec, input_columns=names, checks=None, identity=(), _derived={}), found, out)
    return out


def _find_matches(snapshot: Snapshot, files: pa.Table, spec: ReadSpec, node: Any, out: Replacement) -> _Matches:
    """Reads every candidate file, counts its live rows matching ``node`` into
    ``out.deleted_rows`` and decides what happens to it (deletion vectors when the table
    has them enabled, else a rewrite)."""
    from delta_pyds.protocol.deletion_vectors import DeletionVectorDescriptor, load_deleted_rows
    from delta_pyds.read.file_reader import read_file
    from delta_pyds.read.scan import FileTask

    use_dv = features.is_enabled(snapshot.protocol, "deletionVectors") and is_true(snapshot.configuration, ENABLE_DV)
    pcols = list(snapshot.physical_partition_columns)
    found = _Matches()
    for f in files.to_pylist():
        pv = tuple((f["partition_values"] or {}).get(c) for c in pcols)
        table = pa.Table.from_batches(
            list(read_file(spec, FileTask(f["path"], f["size"], pv, None))), schema=spec.arrow_schema
        )
        hit = (
            pc.fill_null(evaluate_predicate(node, table), False).to_numpy(zero_copy_only=False)
            if table.num_rows
            else np.zeros(0, bool)
        )
        live = np.ones(table.num_rows, bool)
        old_dv = f["deletion_vector"]
        if old_dv:
            deleted = load_deleted_rows(
                snapshot.storage, DeletionVectorDescriptor.from_dict(old_dv), max_rows=table.num_rows
            )
            live[deleted[deleted < table.num_rows].astype(np.int64)] = False
        hit &= live
        n_hit = int(hit.sum())
        if not n_hit:
            continue
        out.deleted_rows += n_hit
        if n_hit == int(live.sum()):
            found.removed.append(f["path"])
        elif use_dv:
            found.dv_rows.append((f["path"], np.flatnonzero(hit | ~live).astype(np.uint64)))
        else:
            found.rewrites.append((f["path"], table.filter(pa.array(live & ~hit))))
    return found


def _add_deletion_vectors(
    snapshot: Snapshot, files: pa.Table, dv_rows: list[tuple[str, np.ndarray]], out: Replacement
) -> None:
    """Stores the new deletion vectors (one DV file, listed in ``out.written``) and re-adds
    ``files`` (their file actions, in ``dv_rows``' order) with them."""
    from delta_pyds.protocol.deletion_vectors import store_deletion_vectors

    descriptors = store_deletion_vectors(snapshot.storage, [r for _, r in dv_rows])
    out.written += [
        {"path": relative_to(cast(str, d.absolute_path(snapshot.storage)), snapshot.storage.root)}  # not inline
        for d in descriptors
        if d.storage_type != "i"
    ][:1]
    for a, d in zip(add_actions(files, data_change=True), descriptors):
        out.adds.append(with_deletion_vector(a, d))
    out.deletion_vectors = len(dv_rows)


def _rewrite(cow: WriteSpec, found: _Matches, out: Replacement) -> None:
    """Writes the kept rows of each rewritten file (copy-on-write), one task per file."""
    from delta_pyds.write.parquet_writer import write_task

    for _, kept in found.rewrites:
        result = write_task(cow, kept.to_batches())
        out.written += result.adds
        out.adds += result.adds
        out.copied_rows += kept.num_rows


def _refuse_rewrites(snapshot: Snapshot) -> None:
    conf = snapshot.configuration
    if is_true(conf, ENABLE_CDF):
        raise UnsupportedFeatureError(
            "option replaceWhere: rows matching the predicate share files with other rows, and "
            "rewriting them on a table with delta.enableChangeDataFeed=true needs change data "
            "files delta_pyds does not write for partial overwrites; enable deletion vectors "
            "(delta.enableDeletionVectors=true) or use DeltaTable.delete before an append"
        )
    if features.is_enabled(snapshot.protocol, "rowTracking") and not is_true(conf, ROW_TRACKING_SUSPENDED):
        raise UnsupportedFeatureError(
            "option replaceWhere: rows matching the predicate share files with other rows, and "
            "rewriting them on a table with row tracking would lose row ids; enable deletion "
            "vectors (delta.enableDeletionVectors=true) or use DeltaTable.delete before an append"
        )
