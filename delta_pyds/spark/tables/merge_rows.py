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
  number), pinned by a lazy local checkpoint;
  :func:`~delta_pyds.spark.tables.merge_outcome.summarize` is one Spark job over it giving
  the per-clause counts, the files a clause changes, the duplicate-match check, the matched
  source rows' numbers (up to :data:`LITERAL_IDS`) and, with deletion vectors, per file
  the bitmap of the rows a target-side clause changes (the rows the commit marks deleted);
* with deletion vectors the pinned rows also carry the changed rows' written values (old
  values for the change data, row tracking columns) while the candidate files hold at most
  ``spark.pydelta.merge.pinChangedRows.maxBytes`` (1 GiB; beyond, phase 2 reads the changed
  files again, so what is pinned stays bounded: :func:`carries_changed_rows`); a small copy-on-write target
  (:func:`pins_whole_target`) pins every candidate row with its written values (``left``
  outer join): phase 2 then reads no target file again;
* an insert-only merge skips phase 1
  (:func:`~delta_pyds.spark.tables.merge_outcome.insert_only`, delta-spark's
  ``InsertOnlyMergeExecutor``): its inserted rows are the source anti-joined with the
  candidate target rows;
* phase 2, :func:`merge_rows`: the rows to write from phase 1's pinned rows (the changed
  rows with deletion vectors, the touched files' rows of a pinned small target), else the
  changed files read again with every column and joined with the source (``left`` outer:
  the files are rewritten whole), plus the inserted source rows (the source rows outside
  the matched numbers, or the source anti-joined with phase 1's matched rows: the source
  rows no candidate target row matches, :func:`unmatched_source`), written directly
  (pinned only when change data files are written from the same rows);
* a target row's action is 1 + the index of the first target-side clause that holds
  (matched clauses, then not-matched-by-source clauses), an unmatched source row's
  1 + the number of target-side clauses + the index of the first insert clause that
  holds; 0 when no clause applies (the row is copied, or dropped). Conditions are
  evaluated once per phase on the same rows: they must be deterministic (as delta-spark
  requires of merge conditions).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from delta_pyds.spark.tables.dml import generated_expressions, regenerate
from delta_pyds.spark.tables.merge_scope import ACTION, MATCHED, SRC, SRC_ID, MergeOutcome, MergeScope, sql_expr
from delta_pyds.spark.tables.native_rows import SCAN_FILE, SCAN_ROW, SCAN_ROW_ID, SCAN_ROW_VERSION
from delta_pyds.spark.tables.resolution import set_columns

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

# up to this many matched pairs, the inserted rows' anti-join broadcasts the matched source
# row numbers (8 bytes each) instead of shuffling the source
BROADCAST_IDS = 2_000_000
# up to this many matched source rows (counted by phase 1's job), the inserted rows are the
# source rows whose numbers are not in a literal set (no job to broadcast the numbers)
LITERAL_IDS = 4096
# a copy-on-write merge of at most this many candidate files (and at most
# spark.pydelta.merge.pinTarget.maxBytes of them) pins every candidate row in phase 1 with
# its written values: phase 2 reads no file again and joins nothing (for a small merge the
# second scan and broadcast cost more than pinning the rows)
PIN_TARGET_MAX_FILES = 256
PIN_TARGET_MAX_ROWS = 2_000_000  # ... and rows, by the files' statistics (none: no pin)
# a deletion-vector merge whose candidate files hold at most this many bytes (the session conf
# spark.pydelta.merge.pinChangedRows.maxBytes) carries the changed rows' written values in phase
# 1's pinned rows (a local checkpoint, MEMORY_AND_DISK); beyond, phase 1 pins only (file, row
# index, action) and phase 2 reads the changed files again: the pinned data stays bounded
DEFAULT_PIN_CHANGED_MAX_BYTES = 1 << 30
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
    carried: bool = False  # the rows carry their written values (see probe)
    whole: bool = False  # every candidate target row is pinned, not only matched or changed ones

    def release(self) -> None:
        if self.rows.is_cached:  # type: ignore[attr-defined]
            self.rows.unpersist()  # type: ignore[attr-defined]


def pins_whole_target(scope: MergeScope, *, dv: bool, max_bytes: int) -> bool:
    """Whether phase 1 pins every candidate target row with its written values: a
    copy-on-write merge of at most ``max_bytes`` in at most :data:`PIN_TARGET_MAX_FILES`
    candidate files holding at most :data:`PIN_TARGET_MAX_ROWS` rows (by their statistics:
    a file without ``numRecords`` pins nothing)."""
    import pyarrow.compute as pc

    from delta_pyds.transaction.file_actions import stat_rows

    files = scope.files
    if dv or not scope.clauses or files is None or not 0 < files.num_rows <= PIN_TARGET_MAX_FILES:
        return False
    if (pc.sum(files.column("size")).as_py() or 0) > max_bytes or "stats" not in files.column_names:
        return False
    rows = [stat_rows({"stats": s}, None) for s in files.column("stats").to_pylist()]
    return None not in rows and sum(r for r in rows if r is not None) <= PIN_TARGET_MAX_ROWS


def carries_changed_rows(scope: MergeScope, *, dv: bool, max_bytes: int) -> bool:
    """Whether phase 1 of a deletion-vector merge carries the changed rows' written values:
    its candidate files hold at most ``max_bytes`` (:data:`~delta_pyds.spark.conf.PIN_CHANGED_CONF`; ``0``: never)."""
    import pyarrow.compute as pc

    files = scope.files
    if not dv or files is None:
        return False
    return files.num_rows == 0 or (pc.sum(files.column("size")).as_py() or 0) <= max_bytes


def probe(scope: MergeScope, *, carry: bool = False, keep_old: bool = False, whole: bool = False) -> Probe:
    """Phase 1 (delta-spark's ``findTouchedFiles``): the candidate target rows joined with
    the pinned source, ``inner`` (or ``left`` outer with a ``whenNotMatchedBySource`` clause:
    every target row is needed), reduced to the columns the conditions read (Spark prunes the
    target scan to them) and to the rows some clause changes or a source row matches, behind
    a lazy local checkpoint filled by :func:`~delta_pyds.spark.tables.merge_outcome.summarize`.

    With ``carry`` (deletion vectors: only changed rows are written) the pinned rows also
    carry what phase 2 writes of a changed row: its written values (``__pydelta_new_<i>``;
    Spark reads the target columns an update keeps, and no other), its old values with
    ``keep_old`` (change data), its row tracking columns; phase 2 then reads no target file
    again (:func:`merge_rows`). With ``whole`` (a small copy-on-write merge,
    :func:`pins_whole_target`) every candidate target row is pinned (``left`` outer join)
    with its written values: phase 2 keeps the touched files' rows of them."""
    from pyspark.sql import functions as F

    joined = scope.target.join(scope.src, scope.cond, "left" if scope.by_source or whole else "inner")
    has_target, has_source = scope.tfile().isNotNull(), F.col(SRC).isNotNull()
    action, matched = _target_action(scope, has_target, has_source)
    cols = [
        scope.tfile().alias(SCAN_FILE),
        F.col(f"`{scope.talias}`.{SCAN_ROW}").alias(SCAN_ROW),
        F.col(ACTION),
        F.col(MATCHED),
        F.col(SRC_ID),
    ]
    if carry or whole:
        cols += _carried_columns(scope, keep_old=keep_old, only_updated=not whole)
    rows = joined.select("*", action.alias(ACTION), matched.alias(MATCHED))  # one analysis of the CASE trees
    if not whole:
        rows = rows.where((F.col(ACTION) > 0) | F.col(MATCHED))
    rows = rows.select(*cols)
    return Probe(rows.localCheckpoint(eager=False), carried=carry or whole, whole=whole)


def _carried_columns(scope: MergeScope, *, keep_old: bool, only_updated: bool) -> list[Column]:
    """What phase 2 writes of a joined target row besides its file and row index: the
    written values (with ``only_updated``, for rows no update clause takes, null where every
    update clause sets the column: with deletion vectors they are never written, and Spark
    then does not read the column), with ``keep_old`` the old values, and the row tracking
    columns."""
    from pyspark.sql import functions as F

    tcol = scope.tcol()
    new = _new_values(scope, tcol, [], inserted=False, only_updated=only_updated)
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


def unmatched_source(
    scope: MergeScope, pr: Probe | None, matched_pairs: int | None = None, matched_ids: list[int] | None = None
) -> DataFrame | None:
    """The source rows no candidate target row matches, with their insert action (rows no
    insert clause takes dropped); None without insert clauses. They are the pinned source
    rows whose numbers are not in ``matched_ids`` (the matched source rows' numbers, when
    phase 1 collected them), else the source anti-joined with the probe's matched source
    row numbers (broadcast when ``matched_pairs``, the number of matched (target, source)
    pairs, is known and at most :data:`BROADCAST_IDS`), and without a probe the source
    anti-joined with the candidate target rows on the merge condition."""
    from pyspark.sql import functions as F

    if not scope.inserts:
        return None
    if pr is None:  # no phase 1 (an insert-only merge): anti-join with the candidate target rows
        rows = scope.src.join(scope.target, scope.cond, "left_anti")
    elif matched_ids is not None:  # a literal set: no job
        rows = scope.src.where(f"NOT ({SRC_ID} IN ({','.join(map(str, matched_ids))}))") if matched_ids else scope.src
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
    target = None
    touched = outcome.touched
    if touched and scope.clauses and pr is not None and pr.carried:  # phase 1 pinned the rows to write
        cols = [F.col(f"{NEW}{i}") for i in range(len(scope.names))]
        if keep_old:
            cols += [F.col(f"{OLD}{i}") for i in range(len(scope.names))]
        cols += [F.col(SCAN_FILE), F.col(SCAN_ROW)]
        if scope.tracking:
            cols += [F.col(SCAN_ROW_ID), F.col(SCAN_ROW_VERSION)]
        if not pr.whole:  # the changed rows (deletion vectors)
            kept = pr.rows.where(F.col(ACTION) > 0)  # type: ignore[attr-defined]
        elif len(touched) < scope.files.num_rows:  # every candidate row: the touched files' ones
            kept = pr.rows.where(F.col(SCAN_FILE).isin(touched))  # type: ignore[attr-defined]
        else:
            kept = pr.rows
        target = kept.select(*cols, F.col(ACTION), F.col(MATCHED))
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
    inserts = _insert_rows(scope, pr, outcome, generated, keep_old=keep_old)
    where = _regenerated(scope)
    target, inserts = (_with_generated(scope, df, where) if df is not None else None for df in (target, inserts))
    return MergeRows(target, inserts, list(scope.clauses), len(scope.inserts), scope.names, generated)


def _insert_rows(
    scope: MergeScope, pr: Probe | None, outcome: MergeOutcome, generated: list, *, keep_old: bool
) -> DataFrame | None:
    """The inserted source rows (:func:`unmatched_source`) with their written values, shaped
    as the target rows of :func:`merge_rows` (None without insert clauses)."""
    from pyspark.sql import functions as F

    none = F.lit(None)
    inserts = unmatched_source(scope, pr, outcome.matched_pairs, outcome.matched_ids)
    if inserts is None:
        return None
    tcol = dict.fromkeys(scope.names, none)
    cols = [v.alias(f"{NEW}{i}") for i, v in enumerate(_new_values(scope, tcol, generated, inserted=True))]
    if keep_old:
        cols += [none.alias(f"{OLD}{i}") for i in range(len(scope.names))]
    cols += [none.cast("string").alias(SCAN_FILE), none.cast("long").alias(SCAN_ROW)]
    if scope.tracking:
        cols += [none.cast("long").alias(SCAN_ROW_ID), none.cast("long").alias(SCAN_ROW_VERSION)]
    cols += [F.col(ACTION), F.lit(False).alias(MATCHED)]
    return inserts.select(*cols)


def _regenerated(scope: MergeScope) -> dict[str, Column]:
    """The generated columns the merge recomputes, each on the rows of the update and insert
    clauses that do not set it (an ``updateAll`` / ``insertAll`` sets it when the source has
    the column)."""
    from pyspark.sql import functions as F

    n, out = len(scope.clauses), {}
    tcol = scope.tcol()
    for name in generated_expressions(scope.snap):
        actions = []
        for i, (kind, _, sets, _) in enumerate(scope.clauses):
            if kind != "update":
                continue
            given = (
                name.lower() in scope.src_cols
                if sets is None
                else name in set_columns(scope.target_schema, sets, tcol.get, what="merge", alias=scope.talias)
            )
            if not given:
                actions.append(i + 1)
        for j, (_, values) in enumerate(scope.inserts):
            given = name.lower() in scope.src_cols if values is None else name in {scope.target_name(k) for k in values}
            if not given:
                actions.append(n + j + 1)
        if actions:
            out[name] = F.col(ACTION).isin(actions)
    return out


def _with_generated(scope: MergeScope, df: DataFrame, where: dict[str, Column]) -> DataFrame:
    """``df`` (written values as ``__pydelta_new_<i>``) with the generated columns of
    ``where`` recomputed from the written values (:func:`~delta_pyds.spark.tables.dml.regenerate`)."""
    from pyspark.sql import functions as F

    if not where:
        return df
    rest = [F.col(c) for c in df.columns if not c.startswith(NEW)]
    named = df.select(*[F.col(f"{NEW}{i}").alias(n) for i, n in enumerate(scope.names)], *rest)
    named = regenerate(scope.snap, named, where)
    return named.select(*[F.col(f"`{n}`").alias(f"{NEW}{i}") for i, n in enumerate(scope.names)], *rest)


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
        if inserted:
            value = tcol[f.name]
            for j in reversed(range(len(scope.inserts))):
                new = _insert_value(scope, f.name, scope.inserts[j][1], given_values[j], generate)
                if new is not None:
                    value = F.when(F.col(ACTION) == n + j + 1, new).otherwise(value)
        else:
            news = [
                (i, _update_value(scope, f.name, sets, given_sets[i]))
                for i, (kind, _, sets, _) in enumerate(scope.clauses)
                if kind == "update"
            ]
            # only_updated: a column every update clause sets is not read from the target
            value = F.lit(None) if only_updated and all(v is not None for _, v in news) else tcol[f.name]
            for i, new in reversed(news):
                if new is not None:
                    value = F.when(F.col(ACTION) == i + 1, new).otherwise(value)
        out.append(value.cast(f.dataType))
    return out


def _update_value(scope: MergeScope, name: str, sets: dict | None, given: dict | None) -> Column | None:
    """The value an update clause (``sets`` as given, ``given`` its resolved set values)
    writes to column ``name``; None when the row keeps the target's value."""
    if sets is None:  # updateAll
        if name in scope.generated_always or (name in scope.identities and name.lower() not in scope.src_cols):
            return None  # updateAll keeps the values the table generated
        if name.lower() not in scope.src_cols and name in generated_expressions(scope.snap):
            return None  # recomputed (_regenerated)
        if scope.evolve and name.lower() not in scope.src_cols:
            return None  # schema evolution: a column the source lacks is kept
        return scope.source_col(name)
    return given.get(name) if given is not None else None


def _insert_value(
    scope: MergeScope, name: str, values: dict | None, given: dict | None, generate: dict
) -> Column | None:
    """The value an insert clause (``values`` as given, ``given`` keyed by target column)
    writes to column ``name`` of an inserted row (generated identity values included)."""
    from pyspark.sql import functions as F

    if name in generate:
        col = generate[name]
        return (F.lit(col.first_k) + F.col(SRC_ID)) * F.lit(col.step) + F.lit(col.start)
    if values is None:
        if name in scope.identities and name.lower() not in scope.src_cols:
            return None  # pragma: no cover - generated above
        if name.lower() not in scope.src_cols and name in generated_expressions(scope.snap):
            return F.lit(None)  # recomputed (_regenerated)
        if scope.evolve and name.lower() not in scope.src_cols:
            return F.lit(None)  # schema evolution: a column the source lacks is null
        return scope.source_col(name)
    return sql_expr(given[name]) if given is not None and name in given else F.lit(None)
