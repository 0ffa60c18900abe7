"""MERGE's phase 1 outcome: the one Spark job over the probe's pinned rows that gives the
per-clause counts, the touched files, the duplicate-match check, with deletion vectors the
rows to mark, and the matched source rows (:func:`summarize`); and the executor side of a
source row count (:func:`count_task`, also the insert-only merge's one job).

Guarantees: one job without a shuffle whatever the join's partitioning: each task reduces
its rows per file on the executor, the driver merges the parts of a file, so a target row
matched by source rows in different tasks is still caught (the union of per-task bitmaps of
matched row indexes); counts count each target row once per action.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from delta_pyds.spark.commands.merge.metrics import MergeOutcome
from delta_pyds.spark.commands.merge.plan import ACTION, MATCHED, SRC_ID, MergePlan
from delta_pyds.spark.commands.merge.probe import LITERAL_IDS, TASK_IDS, Probe, unmatched_source
from delta_pyds.spark.commands.native_rows import SCAN_FILE, SCAN_ROW

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame


def count_task(batches: Iterator[Any]) -> Iterator[Any]:
    """One task's rows counted (one row; the executor side of a source row count)."""
    import pyarrow as pa

    rows = sum(b.num_rows for b in batches)
    yield pa.RecordBatch.from_arrays([pa.array([rows], pa.int64())], names=["rows"])


def summarize(plan: MergePlan, pr: Probe, *, count_inserts: bool, marks: bool = False) -> MergeOutcome:
    """Counts, touched files and the duplicate-match check over the probe's rows, as ONE Spark
    job without a shuffle: each task reduces its rows per file on the executor
    (:func:`_per_task`: rows per action, matched pairs and the serialized bitmap of the
    matched rows' indexes), the driver merges the parts of a file. The duplicate-match check
    is exact whatever the join's partitioning (a broadcast of the target side, a nested-loop
    join or AQE's skew split can put one target row's matches in different tasks): a file's
    matched pairs exceed the size of the union of its matched-row bitmaps exactly when some
    target row is matched twice. With ``count_inserts`` also the inserted rows per insert
    clause and their largest source row number (over
    :func:`~delta_pyds.spark.commands.merge.probe.unmatched_source`; needed for generated
    identity values, else the write's row counts give the inserted rows; AQE then runs the
    anti-join's shuffle as jobs of their own), and, when no pruning job counted them, the
    source's rows (its pinned rows counted per task in the same job). With ``marks``
    (deletion vectors) also per file the bitmap of the rows a target-side clause changes
    (the rows the commit marks deleted: no job of their own). With insert clauses also the
    matched source rows' numbers (each task's as a bitmap, or a marker past
    :data:`~delta_pyds.spark.commands.merge.probe.TASK_IDS`): their number, and the numbers
    themselves when there are at most :data:`~delta_pyds.spark.commands.merge.probe.LITERAL_IDS`,
    so phase 2 excludes them from the inserts as literals, or inserts nothing when every
    source row matched. The job fills the probe's checkpoint."""
    from pyspark.sql import functions as F

    n = len(plan.clauses)
    ins = list(range(n + 1, n + 1 + len(plan.inserts))) if count_inserts else []
    action = F.col(ACTION)
    schema = "file string, pairs long, t long, matched binary, ids binary, " + ", ".join(
        f"t{a} long" for a in range(n + 1)
    )
    per_file = pr.rows.select(SCAN_FILE, SCAN_ROW, ACTION, MATCHED, SRC_ID).mapInArrow(
        _per_task(n, marks, TASK_IDS if plan.inserts else 0), schema + (", changed binary" if marks else "")
    )
    null = F.lit(None).cast("long")
    per_file = per_file.select("*", *[null.alias(f"i{a}") for a in ins], null.alias("k"), null.alias("src"))
    if plan.source_rows is None:  # no pruning job counted the source: its tasks join this job
        counted = plan.src.select(SRC_ID).mapInArrow(count_task, "rows long")
        per_file = per_file.unionByName(_summary_row(n, ins, counted, marks=marks, src=F.col("rows")))
    inserts = unmatched_source(plan, pr) if ins else None
    if inserts is not None:
        agg = inserts.agg(
            *[F.count(F.when(action == a, F.lit(1))).alias(f"i{a}") for a in ins],
            F.max(F.col(SRC_ID)).alias("k"),
        )
        per_file = per_file.unionByName(_summary_row(n, ins, agg, marks=marks, inserted=True))
    return _outcome(plan, per_file.collect(), n=n, ins=ins, marks=marks)


def _summary_row(
    n: int, ins: list[int], df: DataFrame, *, marks: bool, inserted: bool = False, src: Column | None = None
) -> DataFrame:
    """``df``'s rows in the shape of :func:`summarize`'s per-file rows, with no file: its
    insert counts (``i<a>``, ``k``) when ``inserted``, ``src`` as the source rows."""
    from pyspark.sql import functions as F

    null = F.lit(None).cast("long")
    return df.select(
        F.lit(None).cast("string").alias("file"),
        F.lit(0).cast("long").alias("pairs"),
        null.alias("t"),
        F.lit(None).cast("binary").alias("matched"),
        F.lit(None).cast("binary").alias("ids"),
        *[F.lit(0).cast("long").alias(f"t{a}") for a in range(n + 1)],
        *[(F.col(f"i{a}").cast("long") if inserted else null).alias(f"i{a}") for a in ins],
        (F.col("k") if inserted else null).alias("k"),
        (src if src is not None else null).alias("src"),
        *([F.lit(None).cast("binary").alias("changed")] if marks else []),
    )


def _outcome(plan: MergePlan, got: list[Any], *, n: int, ins: list[int], marks: bool) -> MergeOutcome:
    """The driver side of :func:`summarize`: the collected per-task, per-file rows (and the
    insert counts' row) merged into counts, touched files and the duplicate-match check."""
    counts = dict.fromkeys(range(1, n + 1 + len(plan.inserts)), 0)
    top_k = None
    pairs: dict[str, int] = {}
    bitmaps: dict[str, list[bytes]] = {}
    touched: dict[str, None] = {}
    changed: dict[str, list[bytes]] = {}
    source_rows = plan.source_rows or 0
    ids: list[bytes] | None = []
    for r in got:
        source_rows += int(r["src"] or 0)
        if r["file"] is None and r["ids"] is not None and ids is not None:  # a task's matched source rows
            ids = None if r["ids"] == _TOO_MANY else [*ids, bytes(r["ids"])]
        for a in range(1, n + 1):
            counts[a] += int(r[f"t{a}"] or 0)
        for a in ins:
            counts[a] += int(r[f"i{a}"] or 0)
        if r["k"] is not None and any(r[f"i{a}"] for a in ins):
            top_k = r["k"] if top_k is None else max(top_k, r["k"])
        name = r["file"]
        if name is None:
            continue
        if (r["t"] or 0) > 0:
            touched[name] = None
            if marks:
                changed.setdefault(name, []).append(bytes(r["changed"]))
        if r["pairs"]:
            pairs[name] = pairs.get(name, 0) + int(r["pairs"])
            bitmaps.setdefault(name, []).append(bytes(r["matched"]))
    distinct = {name: _union_size(parts) for name, parts in bitmaps.items()}
    matched = _matched_ids(ids, plan)
    several = any(pairs[name] > distinct[name] for name in pairs)
    if several and plan.delete_all_matched:
        # every matched row takes action 1 (the one unconditional delete): count target rows once
        counts[1] = sum(distinct.values())
    return MergeOutcome(
        touched=list(touched),
        counts=counts,
        several_matches=several,
        top_k=top_k,
        matched_pairs=sum(pairs.values()),
        inserts_counted=bool(ins) or not plan.inserts,
        source_rows=source_rows,
        changed={name: _union(parts) for name, parts in changed.items()} if marks else None,
        matched_ids=matched[0] if matched is not None else None,
        matched_sources=matched[1] if matched is not None else None,
    )


def _matched_ids(parts: list[bytes] | None, plan: MergePlan) -> tuple[list[int] | None, int] | None:
    """(the matched source rows' numbers from the tasks' bitmaps, None when more than
    :data:`~delta_pyds.spark.commands.merge.probe.LITERAL_IDS`; how many there are), None when
    a task had more than :data:`~delta_pyds.spark.commands.merge.probe.TASK_IDS`."""
    if parts is None or not plan.inserts:
        return None
    found = _bitmap_union(parts)
    return (None if len(found) > LITERAL_IDS else list(found)), len(found)


# a task's ids column when it matched more than TASK_IDS source rows
_TOO_MANY = b"many"


def _per_task(n: int, marks: bool = False, max_ids: int = 0) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """The executor side of :func:`summarize`: one task's probe rows (file, row index,
    action, matched, source row number) reduced to one row per file: matched pairs, the
    largest target-side action, the serialized bitmap of the matched rows' indexes and the
    rows per action; with ``marks`` the serialized bitmap of the changed rows' indexes
    (action > 0); with ``max_ids`` one more row (no file) holding the serialized bitmap of
    the matched source rows' numbers, or a marker when there are more than ``max_ids``."""

    def reduce(batches: Iterator[Any]) -> Iterator[Any]:
        import numpy as np
        import pyarrow as pa

        from delta_pyds.protocol.deletion_vectors import serialize_deleted_rows

        parts: dict[str, list[Any]] = {}
        hit_ids: list[Any] | None = [] if max_ids else None
        for b in batches:
            if not b.num_rows:
                continue
            matched = b.column(3).fill_null(False).to_numpy(zero_copy_only=False).astype(bool)
            if hit_ids is not None:
                hit_ids.append(b.column(4).fill_null(0).to_numpy(zero_copy_only=False)[matched])
                if sum(len(a) for a in hit_ids) > max_ids:
                    hit_ids = None
            _reduce_batch(b, matched, parts, n, marks)
        names = list(parts)
        cols = [
            pa.array(names, pa.string()),
            pa.array([p[0] for p in parts.values()], pa.int64()),
            pa.array([p[1] for p in parts.values()], pa.int64()),
            pa.array([serialize_deleted_rows(np.concatenate(p[2])) for p in parts.values()], pa.binary()),
            pa.array([None] * len(names), pa.binary()),
        ]
        cols += [pa.array([int(p[3][a]) for p in parts.values()], pa.int64()) for a in range(n + 1)]
        if marks:
            cols.append(pa.array([serialize_deleted_rows(np.concatenate(p[4])) for p in parts.values()], pa.binary()))
        fields = ["file", "pairs", "t", "matched", "ids", *[f"t{a}" for a in range(n + 1)]]
        fields += ["changed"] if marks else []
        if names:
            yield pa.RecordBatch.from_arrays(cols, names=fields)
        if max_ids:  # the task's matched source rows: one row of its own
            yield _ids_row(hit_ids, fields)

    return reduce


def _reduce_batch(b: Any, matched: Any, parts: dict[str, list[Any]], n: int, marks: bool) -> None:
    """Adds one batch of probe rows to ``parts``: per file [matched pairs, largest
    target-side action, matched row indexes, rows per action, changed row indexes]."""
    import numpy as np

    files = b.column(0).dictionary_encode()
    codes = files.indices.to_numpy(zero_copy_only=False)
    names = files.dictionary.to_pylist()
    index = b.column(1).to_numpy(zero_copy_only=False)
    action = b.column(2).fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
    order = np.argsort(codes, kind="stable")
    for group in np.split(order, np.flatnonzero(np.diff(codes[order])) + 1):
        name = names[int(codes[group[0]])]
        acts, hit = action[group], matched[group]
        per = np.bincount(np.clip(acts, 0, n), minlength=n + 1)
        p = parts.setdefault(name, [0, 0, [], np.zeros(n + 1, np.int64), []])
        p[0] += int(hit.sum())
        p[1] = max(p[1], int(acts[acts <= n].max(initial=0)))
        p[2].append(index[group][hit])
        p[3] += per
        if marks:
            p[4].append(index[group][(acts > 0) & (acts <= n)])


def _ids_row(hit_ids: list[Any] | None, fields: list[str]) -> Any:
    """A task's row (no file) of :func:`summarize`'s per-file rows holding the serialized
    bitmap of its matched source rows' numbers, or :data:`_TOO_MANY`."""
    import numpy as np
    import pyarrow as pa

    from delta_pyds.protocol.deletion_vectors import serialize_deleted_rows

    found = np.concatenate(hit_ids) if hit_ids else np.zeros(0, np.int64)
    ids = _TOO_MANY if hit_ids is None else serialize_deleted_rows(np.unique(found))
    values: dict[str, Any] = {"file": pa.array([None], pa.string()), "ids": pa.array([ids], pa.binary())}
    binary = ("matched", "changed")
    row = [values.get(f, pa.array([None], pa.binary()) if f in binary else pa.array([0], pa.int64())) for f in fields]
    return pa.RecordBatch.from_arrays(row, names=fields)


def _union_size(parts: list[bytes]) -> int:
    """The number of distinct row indexes in the union of serialized bitmaps."""
    return len(_bitmap_union(parts))


def _union(parts: list[bytes]) -> bytes:
    """The union of serialized bitmaps, serialized."""
    from delta_pyds.protocol.deletion_vectors import serialize_deleted_rows

    return serialize_deleted_rows(_bitmap_union(parts))


def _bitmap_union(parts: list[bytes]) -> Any:
    from pyroaring import BitMap64

    from delta_pyds.protocol.deletion_vectors import deserialize_deleted_rows

    bm = BitMap64()
    for data in parts:
        bm |= BitMap64(deserialize_deleted_rows(data))
    return bm
