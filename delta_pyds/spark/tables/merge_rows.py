"""MERGE's rows, in delta-spark's two phases (``ClassicMergeExecutor``: ``findTouchedFiles``,
then ``writeAllChanges``) over a pinned source.

Guarantees:

* the source is pinned once (a cache filled by the first job, with a row number per source
  row; delta-spark's ``materializeSource``), so both phases, the inserted rows, the change
  data, the deletion-vector marks and generated identity values see the same source rows
  (a non-deterministic source cannot make them disagree);
* phase 1, :func:`probe`: the candidate target rows joined with the source (``inner``, or
  ``left`` outer with a ``whenNotMatchedBySource`` clause), reading only the target
  columns the condition and the clauses' conditions need (Spark prunes the scan) and
  keeping only matched or changed rows (file, row index, action, matched, source row
  number), pinned by a lazy local checkpoint; :func:`summarize` is one Spark job over it
  giving the per-clause counts, the files a clause changes, the duplicate-match check and
  the inserted rows per insert clause (the source rows no candidate target row matches:
  :func:`unmatched_source`);
* an insert-only merge skips phase 1 (:func:`insert_only`, delta-spark's
  ``InsertOnlyMergeExecutor``): its inserted rows are the source anti-joined with the
  candidate target rows;
* with deletion vectors, phase 1's job also gives per file the bitmap of the rows a
  target-side clause changes (the rows the commit marks deleted);
* phase 2, :func:`merge_rows`: only the changed files are read again with every column and
  joined with the source (``left`` outer for copy-on-write: the files are rewritten whole;
  ``inner`` with deletion vectors and no ``whenNotMatchedBySource`` clause: only changed
  rows are written), plus the inserted source rows, written directly (pinned only when
  change data files are written from the same rows);
* a target row's action is 1 + the index of the first target-side clause that holds
  (matched clauses, then not-matched-by-source clauses), an unmatched source row's
  1 + the number of target-side clauses + the index of the first insert clause that
  holds; 0 when no clause applies (the row is copied, or dropped). Conditions are
  evaluated once per phase on the same rows: they must be deterministic (as delta-spark
  requires of merge conditions).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from delta_pyds.spark.tables.merge_scope import ACTION, MATCHED, SRC, SRC_ID, MergeScope, sql_expr
from delta_pyds.spark.tables.native_rows import SCAN_FILE, SCAN_ROW, SCAN_ROW_ID, SCAN_ROW_VERSION
from delta_pyds.spark.tables.resolution import set_columns

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

# up to this many matched pairs, the inserted rows' anti-join broadcasts the matched source
# row numbers (8 bytes each) instead of shuffling the source
BROADCAST_IDS = 2_000_000
NEW = "__pydelta_new_"  # + index of the target column: its value as written
OLD = "__pydelta_old_"  # + index of the target column: its value before the merge


def identity_to_generate(scope: MergeScope) -> list:
    """The identity columns the merge generates values for (no insert clause sets them);
    refuses clauses that set an identity column in some insert clauses only, or set one
    the table generates."""
    generate = []
    for name, col in scope.identities.items():
        gives = [
            (name.lower() in scope.src_cols) if values is None else name in {scope.target_name(k) for k in values}
            for _, values in scope.inserts
        ]
        if not any(gives):
            generate.append(col)
        elif not all(gives):
            raise ValueError(
                f"merge: some insert clauses set identity column {name} and others do "
                "not; set it in all of them or in none (then the table generates it)"
            )
        elif not col.allow_explicit_insert:
            raise ValueError(
                f"merge: cannot insert values into identity column {name}: the table "
                "generates them (delta.identity.allowExplicitInsert=false); leave it out "
                "of the insert clauses (insertAll with a source without the column)"
            )
    return generate if scope.inserts else []


@dataclass
class Probe:
    """Phase 1's pinned rows: per target row a clause changes or a source row matches,
    its file (log path) and row index, its action, whether it is matched and the matched
    source row's number (``__pydelta_src_id``)."""

    rows: object  # DataFrame, behind a lazy local checkpoint
    carried: bool = False  # the rows carry the changed rows' written values (see probe)

    def release(self) -> None:
        if self.rows.is_cached:  # type: ignore[attr-defined]
            self.rows.unpersist()  # type: ignore[attr-defined]


def probe(scope: MergeScope, *, carry: bool = False, keep_old: bool = False) -> Probe:
    """Phase 1 (delta-spark's ``findTouchedFiles``): the candidate target rows joined with
    the pinned source, ``inner`` (or ``left`` outer with a ``whenNotMatchedBySource`` clause:
    every target row is needed), reduced to the columns the conditions read (Spark prunes the
    target scan to them) and to the rows some clause changes or a source row matches, behind
    a lazy local checkpoint filled by :func:`summarize`.

    With ``carry`` (deletion vectors: only changed rows are written) the pinned rows also
    carry what phase 2 writes of a changed row: its written values (``__pydelta_new_<i>``;
    Spark reads the target columns an update keeps, and no other), its old values with
    ``keep_old`` (change data), its row tracking columns; phase 2 then reads no target file
    again (:func:`merge_rows`)."""
    from pyspark.sql import functions as F

    joined = scope.target.join(scope.src, scope.cond, "left" if scope.by_source else "inner")
    has_target, has_source = scope.tfile().isNotNull(), F.col(SRC).isNotNull()
    action, matched = _target_action(scope, has_target, has_source)
    cols = [
        scope.tfile().alias(SCAN_FILE),
        F.col(f"`{scope.talias}`.{SCAN_ROW}").alias(SCAN_ROW),
        F.col(ACTION),
        F.col(MATCHED),
        F.col(SRC_ID),
    ]
    if carry:
        cols += _changed_row_columns(scope, keep_old=keep_old)
    rows = (
        joined.select("*", action.alias(ACTION), matched.alias(MATCHED))  # one analysis of the CASE trees
        .where((F.col(ACTION) > 0) | F.col(MATCHED))
        .select(*cols)
    )
    return Probe(rows.localCheckpoint(eager=False), carried=carry)


def _changed_row_columns(scope: MergeScope, *, keep_old: bool) -> list[Column]:
    """What phase 2 writes of a joined target row besides its file and row index: the
    written values (for rows no update clause takes, null where every update clause sets
    the column: they are never written with deletion vectors, and Spark then does not read
    the column), with ``keep_old`` the old values, and the row tracking columns."""
    from pyspark.sql import functions as F

    tcol = scope.tcol()
    new = _new_values(scope, tcol, [], inserted=False, only_updated=True)
    cols = [v.alias(f"{NEW}{i}") for i, v in enumerate(new)]
    if keep_old:
        cols += [tcol[n].alias(f"{OLD}{i}") for i, n in enumerate(scope.names)]
    if scope.tracking:
        cols += [F.col(SCAN_ROW_ID), F.col(SCAN_ROW_VERSION)]
    return cols


def _target_action(scope: MergeScope, has_target: Column, has_source: Column) -> tuple[Column, Column]:
    """(the action of a joined target row: 1 + the index of the first target-side clause
    that holds, else 0; whether it is matched)."""
    from pyspark.sql import functions as F

    matched = has_target & has_source
    action = F.lit(0)
    for i in reversed(range(len(scope.clauses))):
        _, c, _, on_match = scope.clauses[i]
        base = matched if on_match else (has_target & ~has_source)
        hit = base if c is None else base & F.coalesce(sql_expr(c), F.lit(False))
        action = F.when(hit, F.lit(i + 1)).otherwise(action)
    return action, matched


def _insert_action(scope: MergeScope) -> Column:
    """The action of a source row no target row matches: 1 + the number of target-side
    clauses + the index of the first insert clause that holds, else 0."""
    from pyspark.sql import functions as F

    n = len(scope.clauses)
    action = F.lit(0)
    for j in reversed(range(len(scope.inserts))):
        c, _ = scope.inserts[j]
        hit = F.lit(True) if c is None else F.coalesce(sql_expr(c), F.lit(False))
        action = F.when(hit, F.lit(n + 1 + j)).otherwise(action)
    return action


def unmatched_source(scope: MergeScope, pr: Probe | None, matched_pairs: int | None = None) -> DataFrame | None:
    """The source rows no candidate target row matches (the pinned source anti-joined with
    the probe's matched source row numbers: broadcast when ``matched_pairs``, the number
    of matched (target, source) pairs, is known and at most :data:`BROADCAST_IDS`; without
    a probe, anti-joined with the candidate target rows on the merge condition), with
    their insert action (rows no insert clause takes dropped); None without insert
    clauses."""
    from pyspark.sql import functions as F

    if not scope.inserts:
        return None
    if pr is None:  # no phase 1 (an insert-only merge): anti-join with the candidate target rows
        rows = scope.src.join(scope.target, scope.cond, "left_anti")
    else:
        hit_ids = pr.rows.where(F.col(MATCHED)).select(SRC_ID)  # type: ignore[attr-defined]
        if matched_pairs is not None and matched_pairs <= BROADCAST_IDS:
            hit_ids = F.broadcast(hit_ids)  # a checkpoint has no size estimate: Spark would shuffle
        rows = scope.src.join(hit_ids, SRC_ID, "left_anti")
    return rows.withColumn(ACTION, _insert_action(scope)).where(F.col(ACTION) > 0)


@dataclass
class MergeRows:
    """Phase 2's rows: ``target`` the touched files' rows joined with the source (None when
    no file is touched), ``inserts`` the inserted source rows (None without insert clauses),
    each with per target column ``__pydelta_new_<i>`` (the value written) and, when change
    data is kept, ``__pydelta_old_<i>``; the target file and row index (null on inserted
    rows), the row tracking columns, the action and whether the row is matched."""

    target: object | None  # DataFrame
    inserts: object | None  # DataFrame
    clauses: list  # the target-side clauses (kind, condition, set, on_match)
    n_inserts: int
    names: list  # the target's column names, in order
    generated: list = field(default_factory=list)  # identity columns generated for inserts

    def release(self) -> None:
        """Frees the pinned rows' blocks (else freed when the DataFrame is collected)."""
        if self.target is not None and self.target.is_cached:  # type: ignore[attr-defined]
            self.target.unpersist()  # type: ignore[attr-defined]

    def actions(self, kind: str) -> list[int]:
        """The action numbers of the target-side clauses of ``kind`` (update | delete)."""
        return [i + 1 for i, c in enumerate(self.clauses) if c[0] == kind]

    def insert_actions(self) -> list[int]:
        n = len(self.clauses)
        return list(range(n + 1, n + 1 + self.n_inserts))

    def _parts(self) -> list:
        return [p for p in (self.target, self.inserts) if p is not None]

    def data_rows(self, *, dv: bool, tracking: tuple[str, str] | None) -> DataFrame | None:
        """The rows to write: with deletion vectors the updated and inserted rows; else
        every row of the touched files but the deleted ones, and the inserted rows. Table
        columns, then the row tracking columns when ``tracking`` names them (row ids kept;
        updated rows take the commit's version, inserted rows get new ids)."""
        from pyspark.sql import functions as F

        action, updates, deletes = F.col(ACTION), self.actions("update"), self.actions("delete")
        cols = [F.col(f"{NEW}{i}").alias(n) for i, n in enumerate(self.names)]
        if tracking:
            version = F.when(action.isin(updates), F.lit(None).cast("long")).otherwise(F.col(SCAN_ROW_VERSION))
            cols += [F.col(SCAN_ROW_ID).alias(tracking[0]), version.alias(tracking[1])]
        out = None
        if self.target is not None:
            keep = action.isin(updates) if dv else (~action.isin(deletes) if deletes else F.lit(True))
            out = self.target.where(keep).select(*cols)  # type: ignore[attr-defined]
        if self.inserts is not None:
            ins = self.inserts.select(*cols)  # type: ignore[attr-defined]
            out = ins if out is None else out.unionByName(ins)
        return out

    def change_rows(self, *, dedupe_deletes: bool) -> DataFrame | None:
        """The change data rows (table columns and ``_change_type``): update pre- and
        post-images, deletes (one per target row), inserts; None when there are none."""
        from pyspark.sql import functions as F

        from delta_pyds.cdf.plan import CHANGE_TYPE

        action = F.col(ACTION)
        old = [F.col(f"{OLD}{i}").alias(n) for i, n in enumerate(self.names)]
        new = [F.col(f"{NEW}{i}").alias(n) for i, n in enumerate(self.names)]
        parts = []
        updates, deletes = self.actions("update"), self.actions("delete")
        rows = self.target
        if rows is not None and updates:
            upd = rows.where(action.isin(updates))  # type: ignore[attr-defined]
            parts.append(upd.select(*old, F.lit("update_preimage").alias(CHANGE_TYPE)))
            parts.append(upd.select(*new, F.lit("update_postimage").alias(CHANGE_TYPE)))
        if rows is not None and deletes:
            gone = rows.where(action.isin(deletes))  # type: ignore[attr-defined]
            if dedupe_deletes:  # several source rows deleted the same target row
                gone = gone.dropDuplicates([SCAN_FILE, SCAN_ROW])
            parts.append(gone.select(*old, F.lit("delete").alias(CHANGE_TYPE)))
        if self.inserts is not None:
            parts.append(self.inserts.select(*new, F.lit("insert").alias(CHANGE_TYPE)))  # type: ignore[attr-defined]
        if not parts:
            return None
        out = parts[0]
        for p in parts[1:]:
            out = out.unionByName(p)
        return out


def merge_rows(scope: MergeScope, pr: Probe | None, outcome: MergeOutcome, *, dv: bool, keep_old: bool) -> MergeRows:
    """Phase 2 (delta-spark's ``writeAllChanges``): the ``touched`` files' rows joined with
    the pinned source (``left`` outer for copy-on-write or with a ``whenNotMatchedBySource``
    clause, else ``inner``: with deletion vectors only changed rows are written) with
    their actions and written values, and the inserted source rows
    (:func:`unmatched_source`). ``keep_old``: keep the target's values before the merge
    (change data files; the target rows are then pinned, as the data and the change data
    files both read them)."""
    from pyspark.sql import functions as F

    generated = identity_to_generate(scope)
    none = F.lit(None)
    target = None
    touched = outcome.touched
    if touched and scope.clauses and pr is not None and pr.carried:  # phase 1 pinned the changed rows
        cols = [F.col(f"{NEW}{i}") for i in range(len(scope.names))]
        if keep_old:
            cols += [F.col(f"{OLD}{i}") for i in range(len(scope.names))]
        cols += [F.col(SCAN_FILE), F.col(SCAN_ROW)]
        if scope.tracking:
            cols += [F.col(SCAN_ROW_ID), F.col(SCAN_ROW_VERSION)]
        target = pr.rows.where(F.col(ACTION) > 0).select(*cols, F.col(ACTION), F.col(MATCHED))  # type: ignore[attr-defined]
    elif touched and scope.clauses:
        shape = "inner" if dv and not scope.by_source else "left"
        tdf = scope.scan_target(touched)
        joined = tdf.join(scope.src, scope.cond, shape)
        has_target, has_source = scope.tfile().isNotNull(), F.col(SRC).isNotNull()
        action, matched = _target_action(scope, has_target, has_source)
        joined = joined.select("*", action.alias(ACTION), matched.alias(MATCHED))  # one analysis, not two
        tcol = scope.tcol()
        cols = [v.alias(f"{NEW}{i}") for i, v in enumerate(_new_values(scope, tcol, generated, inserted=False))]
        if keep_old:
            cols += [tcol[n].alias(f"{OLD}{i}") for i, n in enumerate(scope.names)]
        cols += [scope.tfile().alias(SCAN_FILE), F.col(f"`{scope.talias}`.{SCAN_ROW}").alias(SCAN_ROW)]
        if scope.tracking:
            cols += [F.col(SCAN_ROW_ID), F.col(SCAN_ROW_VERSION)]
        cols += [F.col(ACTION), F.col(MATCHED)]
        target = joined.where(F.col(ACTION) > 0) if dv else joined
        target = target.select(*cols)
        if keep_old:
            target = target.localCheckpoint(eager=False)
    inserts = unmatched_source(scope, pr, outcome.matched_pairs)
    if inserts is not None:
        tcol = dict.fromkeys(scope.names, none)
        cols = [v.alias(f"{NEW}{i}") for i, v in enumerate(_new_values(scope, tcol, generated, inserted=True))]
        if keep_old:
            cols += [none.alias(f"{OLD}{i}") for i in range(len(scope.names))]
        cols += [none.cast("string").alias(SCAN_FILE), none.cast("long").alias(SCAN_ROW)]
        if scope.tracking:
            cols += [none.cast("long").alias(SCAN_ROW_ID), none.cast("long").alias(SCAN_ROW_VERSION)]
        cols += [F.col(ACTION), F.lit(False).alias(MATCHED)]
        inserts = inserts.select(*cols)
    return MergeRows(target, inserts, list(scope.clauses), len(scope.inserts), scope.names, generated)


def _new_values(scope: MergeScope, tcol: dict, generated: list, *, inserted: bool, only_updated: bool = False) -> list:
    """Per target column, its value after the row's action (casts to the column's type):
    of target rows (the target-side clauses), or with ``inserted`` of inserted source rows
    (the insert clauses). With ``only_updated`` the value is right only for rows an update
    clause takes: a column every update clause sets is null on other rows (so the target's
    column is not read for it)."""
    from pyspark.sql import functions as F

    n = len(scope.clauses)
    generate = {c.name: c for c in generated}
    # each clause's set values built once (not once per column: every value is a parse)
    given_sets = [
        set_columns(scope.target_schema, sets, tcol.get, what="merge", alias=scope.talias)
        if kind == "update" and sets is not None and not inserted
        else None
        for kind, _, sets, _ in scope.clauses
    ]
    given_values = [
        {scope.target_name(k): v for k, v in values.items()} if values is not None and inserted else None
        for _, values in scope.inserts
    ]
    out = []
    for f in scope.target_schema.fields:
        value = tcol[f.name]
        if (
            only_updated
            and not inserted
            and all(
                _sets_column(scope, f.name, sets, given_sets[i])
                for i, (kind, _, sets, _) in enumerate(scope.clauses)
                if kind == "update"
            )
        ):
            value = F.lit(None)
        for i in reversed(range(0 if inserted else n)):
            kind, _, sets, _ = scope.clauses[i]
            if kind != "update":
                continue
            if sets is None:
                if f.name in scope.generated_always or (
                    f.name in scope.identities and f.name.lower() not in scope.src_cols
                ):
                    continue  # updateAll keeps the values the table generated
                if scope.evolve and f.name.lower() not in scope.src_cols:
                    continue  # schema evolution: a column the source lacks is kept
                new = scope.source_col(f.name)
            else:
                given = given_sets[i]
                if f.name not in given:  # type: ignore[operator]
                    continue
                new = given[f.name]  # type: ignore[index]
            value = F.when(F.col(ACTION) == i + 1, new).otherwise(value)
        for j in reversed(range(len(scope.inserts) if inserted else 0)):
            _, values = scope.inserts[j]
            if f.name in generate:
                col = generate[f.name]
                new = (F.lit(col.first_k) + F.col(SRC_ID)) * F.lit(col.step) + F.lit(col.start)
            elif values is None:
                if f.name in scope.identities and f.name.lower() not in scope.src_cols:
                    continue  # pragma: no cover - generated above
                if scope.evolve and f.name.lower() not in scope.src_cols:
                    new = F.lit(None)  # schema evolution: a column the source lacks is null
                else:
                    new = scope.source_col(f.name)
            else:
                given = given_values[j]
                new = sql_expr(given[f.name]) if f.name in given else F.lit(None)  # type: ignore[index,operator]
            value = F.when(F.col(ACTION) == n + j + 1, new).otherwise(value)
        out.append(value.cast(f.dataType))
    return out


def _sets_column(scope: MergeScope, name: str, sets: dict | None, given: dict | None) -> bool:
    """Whether an update clause (``sets`` as given, ``given`` its resolved set values) writes
    column ``name`` (else the row keeps the target's value), as :func:`_new_values` decides."""
    if sets is None:  # updateAll
        if name in scope.generated_always or (name in scope.identities and name.lower() not in scope.src_cols):
            return False
        return not (scope.evolve and name.lower() not in scope.src_cols)
    return given is not None and name in given


@dataclass
class MergeOutcome:
    """What phase 1 found, from one Spark job."""

    touched: list  # target files holding a row a target-side clause changes
    counts: dict  # action number -> rows taking it (target rows counted once)
    several_matches: bool  # some target row is matched by several source rows
    top_k: int | None  # the largest source row number of an inserted row (identity values)
    matched_pairs: int  # (target row, source row) pairs the condition matches
    inserts_counted: bool  # counts holds the inserted rows (else the write counts them)
    source_rows: int = 0  # the source's rows (delta-spark's numSourceRows)
    changed: dict | None = None  # with deletion vectors: file -> serialized bitmap of its changed rows


def insert_only(scope: MergeScope) -> MergeOutcome:
    """The outcome of an insert-only merge without phase 1 (delta-spark's
    ``InsertOnlyMergeExecutor``): no target row changes, the write counts the inserted rows
    (phase 2 anti-joins the source with the candidate target rows). The source's rows come
    from the pruning job, else from one job over the pinned source."""
    rows = scope.source_rows
    if rows is None:
        got = scope.src.select(SRC_ID).mapInArrow(_count_task, "rows long").collect()
        rows = sum(r["rows"] for r in got)
    return MergeOutcome(
        touched=[],
        counts=dict.fromkeys(range(1, 1 + len(scope.inserts)), 0),
        several_matches=False,
        top_k=None,
        matched_pairs=0,
        inserts_counted=False,
        source_rows=rows,
    )


def _count_task(batches: Iterator[Any]) -> Iterator[Any]:
    """One task's rows counted (one row; the executor side of a source row count)."""
    import pyarrow as pa

    rows = sum(b.num_rows for b in batches)
    yield pa.RecordBatch.from_arrays([pa.array([rows], pa.int64())], names=["rows"])


def summarize(scope: MergeScope, pr: Probe, *, count_inserts: bool, marks: bool = False) -> MergeOutcome:
    """Counts, touched files and the duplicate-match check over the probe's rows, as ONE
    Spark job without a shuffle: each task reduces its rows per file on the executor
    (:func:`_per_task`: rows per action, matched pairs and the serialized bitmap of the
    matched rows' indexes), the driver merges the parts of a file. The duplicate-match
    check is exact whatever the join's partitioning (a broadcast of the target side, a
    nested-loop join or AQE's skew split can put one target row's matches in different
    tasks): a file's matched pairs exceed the size of the union of its matched-row bitmaps
    exactly when some target row is matched twice. With ``count_inserts`` also the
    inserted rows per insert clause and their largest source row number (over
    :func:`unmatched_source`; needed for generated identity values, else the write's row
    counts give the inserted rows; AQE then runs the anti-join's shuffle as jobs of their
    own), and, when no pruning job counted them, the source's rows (its pinned rows counted
    per task in the same job). With ``marks`` (deletion vectors) also per file the bitmap
    of the rows a target-side clause changes (the rows the commit marks deleted: no job of
    their own). The job fills the probe's checkpoint."""
    from pyspark.sql import functions as F

    n = len(scope.clauses)
    ins = list(range(n + 1, n + 1 + len(scope.inserts))) if count_inserts else []
    action = F.col(ACTION)
    schema = "file string, pairs long, t long, matched binary, " + ", ".join(f"t{a} long" for a in range(n + 1))
    per_file = pr.rows.select(SCAN_FILE, SCAN_ROW, ACTION, MATCHED).mapInArrow(  # type: ignore[attr-defined]
        _per_task(n, marks), schema + (", changed binary" if marks else "")
    )
    null = F.lit(None).cast("long")
    per_file = per_file.select("*", *[null.alias(f"i{a}") for a in ins], null.alias("k"), null.alias("src"))
    if scope.source_rows is None:  # no pruning job counted the source: its tasks join this job
        counted = scope.src.select(SRC_ID).mapInArrow(_count_task, "rows long")
        per_file = per_file.unionByName(_summary_row(n, ins, counted, marks=marks, src=F.col("rows")))
    inserts = unmatched_source(scope, pr) if ins else None
    if inserts is not None:
        agg = inserts.agg(
            *[F.count(F.when(action == a, F.lit(1))).alias(f"i{a}") for a in ins],
            F.max(F.col(SRC_ID)).alias("k"),
        )
        per_file = per_file.unionByName(_summary_row(n, ins, agg, marks=marks, inserted=True))
    return _outcome(scope, per_file.collect(), n=n, ins=ins, marks=marks)


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
        *[F.lit(0).cast("long").alias(f"t{a}") for a in range(n + 1)],
        *[(F.col(f"i{a}").cast("long") if inserted else null).alias(f"i{a}") for a in ins],
        (F.col("k") if inserted else null).alias("k"),
        (src if src is not None else null).alias("src"),
        *([F.lit(None).cast("binary").alias("changed")] if marks else []),
    )


def _outcome(scope: MergeScope, got: list, *, n: int, ins: list[int], marks: bool) -> MergeOutcome:
    """The driver side of :func:`summarize`: the collected per-task, per-file rows (and the
    insert counts' row) merged into counts, touched files and the duplicate-match check."""
    counts = dict.fromkeys(range(1, n + 1 + len(scope.inserts)), 0)
    top_k = None
    pairs: dict[str, int] = {}
    bitmaps: dict[str, list[bytes]] = {}
    touched: dict[str, None] = {}
    changed: dict[str, list[bytes]] = {}
    source_rows = scope.source_rows or 0
    for r in got:
        source_rows += int(r["src"] or 0)
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
    several = any(pairs[name] > distinct[name] for name in pairs)
    if several and scope.delete_all_matched:
        # every matched row takes action 1 (the one unconditional delete): count target rows once
        counts[1] = sum(distinct.values())
    return MergeOutcome(
        touched=list(touched),
        counts=counts,
        several_matches=several,
        top_k=top_k,
        matched_pairs=sum(pairs.values()),
        inserts_counted=bool(ins) or not scope.inserts,
        source_rows=source_rows,
        changed={name: _union(parts) for name, parts in changed.items()} if marks else None,
    )


def _per_task(n: int, marks: bool = False) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """The executor side of :func:`summarize`: one task's probe rows (file, row index,
    action, matched) reduced to one row per file: matched pairs, the largest target-side
    action, the serialized bitmap of the matched rows' indexes and the rows per action;
    with ``marks`` the serialized bitmap of the changed rows' indexes (action > 0)."""

    def reduce(batches: Iterator[Any]) -> Iterator[Any]:
        import numpy as np
        import pyarrow as pa

        from delta_pyds.protocol.deletion_vectors import serialize_deleted_rows

        parts: dict[str, list] = {}
        for b in batches:
            if not b.num_rows:
                continue
            files = b.column(0).dictionary_encode()
            codes = files.indices.to_numpy(zero_copy_only=False)
            names = files.dictionary.to_pylist()
            index = b.column(1).to_numpy(zero_copy_only=False)
            action = b.column(2).fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
            matched = b.column(3).fill_null(False).to_numpy(zero_copy_only=False).astype(bool)
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
        if not parts:
            return
        names = list(parts)
        cols = [
            pa.array(names, pa.string()),
            pa.array([p[0] for p in parts.values()], pa.int64()),
            pa.array([p[1] for p in parts.values()], pa.int64()),
            pa.array([serialize_deleted_rows(np.concatenate(p[2])) for p in parts.values()], pa.binary()),
        ]
        cols += [pa.array([int(p[3][a]) for p in parts.values()], pa.int64()) for a in range(n + 1)]
        if marks:
            cols.append(pa.array([serialize_deleted_rows(np.concatenate(p[4])) for p in parts.values()], pa.binary()))
        yield pa.RecordBatch.from_arrays(
            cols,
            names=["file", "pairs", "t", "matched", *[f"t{a}" for a in range(n + 1)], *(["changed"] if marks else [])],
        )

    return reduce


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
