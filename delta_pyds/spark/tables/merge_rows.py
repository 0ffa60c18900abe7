"""MERGE's one pass over the data: the single join of the target's candidate rows with the
source, each joined row's clause action and written values computed once, and one
aggregation of that same result for the per-clause counts, the touched files, the
duplicate-match check and the identity high-water marks.

Guarantees:

* the target and the source are joined once, in the shape the clauses need (as
  delta-spark's ``ClassicMergeExecutor`` / ``InsertOnlyMergeExecutor`` choose theirs):
  ``left_anti`` (source rows no target row matches) for insert-only merges; with deletion
  vectors and no ``whenNotMatchedBySource`` clause ``inner`` (matched rows only), or
  ``right`` outer with inserts; else ``left`` outer (every candidate target row: files are
  rewritten whole), or ``full`` outer with inserts;
* the joined rows are pinned by a (lazy) local checkpoint filled by the first job that reads
  them, so the counts, the touched files, the written rows, the change data rows, the
  deletion-vector marks and generated identity values all come from one evaluation of the
  source and the target (a non-deterministic source cannot make them disagree);
* a joined row's action is 1 + the index of the first target-side clause that holds
  (matched clauses, then not-matched-by-source clauses), or, for a source row no target
  row matches, 1 + the number of target-side clauses + the index of the first insert
  clause that holds; 0 when no clause applies (the row is copied, or dropped);
* :func:`summarize` is one Spark job returning one row per target file holding a changed
  or matched row (plus one for the inserts).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from delta_pyds.spark.tables.merge_scope import ACTION, IDENTITY_K, MATCHED, SRC, MergeScope, sql_expr
from delta_pyds.spark.tables.native_rows import SCAN_FILE, SCAN_ROW, SCAN_ROW_ID, SCAN_ROW_VERSION
from delta_pyds.spark.tables.resolution import set_columns

NEW = "__pydelta_new_"  # + index of the target column: its value as written
OLD = "__pydelta_old_"  # + index of the target column: its value before the merge


def join_shape(scope: MergeScope, dv: bool) -> str:
    """How the target (left) and the source (right) are joined; ``left_anti`` means the
    source anti-joined with the target (insert-only merges)."""
    if not scope.clauses:
        return "left_anti"
    if dv and not scope.by_source:
        return "right" if scope.inserts else "inner"
    return "full" if scope.inserts else "left"


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
class MergeRows:
    """The joined rows, checkpointed: per target column ``__pydelta_new_<i>`` (the value
    written) and, when change data is kept, ``__pydelta_old_<i>``; the target file and row
    index (null on source-only rows), the row tracking columns, the action, whether the row
    pairs a target row with a source row, and a unique number for identity values."""

    rows: object  # DataFrame
    shape: str
    clauses: list  # the target-side clauses (kind, condition, set, on_match)
    n_inserts: int
    names: list  # the target's column names, in order
    generated: list = field(default_factory=list)  # identity columns generated for inserts

    def release(self) -> None:
        """Frees the pinned rows' blocks (else freed when the DataFrame is collected)."""
        if self.rows.is_cached:  # type: ignore[attr-defined]
            self.rows.unpersist()  # type: ignore[attr-defined]

    def actions(self, kind: str) -> list[int]:
        """The action numbers of the target-side clauses of ``kind`` (update | delete)."""
        return [i + 1 for i, c in enumerate(self.clauses) if c[0] == kind]

    def insert_actions(self) -> list[int]:
        n = len(self.clauses)
        return list(range(n + 1, n + 1 + self.n_inserts))

    def data_rows(self, touched: list, *, all_files: bool, dv: bool, tracking):
        """The rows to write: with deletion vectors the updated and inserted rows; else
        every row of the touched files (``all_files``: every candidate file is touched)
        but the deleted ones, and the inserted rows. Table columns, then the row tracking
        columns when ``tracking`` names them (row ids kept; updated rows take the commit's
        version, inserted rows get new ids)."""
        from pyspark.sql import functions as F

        action, updates, inserts = F.col(ACTION), self.actions("update"), self.insert_actions()
        if dv:
            keep = action.isin(updates + inserts)
        else:
            deletes = self.actions("delete")
            mine = F.col(SCAN_FILE).isNotNull() if all_files else F.col(SCAN_FILE).isin(touched)
            keep = (mine & ~action.isin(deletes)) if deletes else mine
            if inserts:
                keep = keep | action.isin(inserts)
        cols = [F.col(f"{NEW}{i}").alias(n) for i, n in enumerate(self.names)]
        if tracking:
            version = F.when(action.isin(updates), F.lit(None).cast("long")).otherwise(F.col(SCAN_ROW_VERSION))
            cols += [F.col(SCAN_ROW_ID).alias(tracking[0]), version.alias(tracking[1])]
        return self.rows.where(keep).select(*cols)  # type: ignore[attr-defined]

    def change_rows(self, *, dedupe_deletes: bool):
        """The change data rows (table columns and ``_change_type``): update pre- and
        post-images, deletes (one per target row), inserts; None when there are none."""
        from pyspark.sql import functions as F

        from delta_pyds.cdf.plan import CHANGE_TYPE

        action = F.col(ACTION)
        rows = self.rows
        old = [F.col(f"{OLD}{i}").alias(n) for i, n in enumerate(self.names)]
        new = [F.col(f"{NEW}{i}").alias(n) for i, n in enumerate(self.names)]
        parts = []
        updates, deletes, inserts = self.actions("update"), self.actions("delete"), self.insert_actions()
        if updates:
            upd = rows.where(action.isin(updates))  # type: ignore[attr-defined]
            parts.append(upd.select(*old, F.lit("update_preimage").alias(CHANGE_TYPE)))
            parts.append(upd.select(*new, F.lit("update_postimage").alias(CHANGE_TYPE)))
        if deletes:
            gone = rows.where(action.isin(deletes))  # type: ignore[attr-defined]
            if dedupe_deletes:  # several source rows deleted the same target row
                gone = gone.dropDuplicates([SCAN_FILE, SCAN_ROW])
            parts.append(gone.select(*old, F.lit("delete").alias(CHANGE_TYPE)))
        if inserts:
            ins = rows.where(action.isin(inserts))  # type: ignore[attr-defined]
            parts.append(ins.select(*new, F.lit("insert").alias(CHANGE_TYPE)))
        if not parts:
            return None
        out = parts[0]
        for p in parts[1:]:
            out = out.unionByName(p)
        return out


def joined_rows(scope: MergeScope, *, dv: bool, keep_old: bool) -> MergeRows:
    """The one join of the target's candidate rows and the source (see the module
    docstring), projected to what the write, the change data, the marks and the counts
    need, behind a lazy local checkpoint. ``keep_old``: keep the target's values before the
    merge (change data files)."""
    from pyspark.sql import functions as F

    shape = join_shape(scope, dv)
    generated = identity_to_generate(scope)
    none = F.lit(None)
    if shape == "left_anti":
        joined = scope.src.join(scope.target, scope.cond, "left_anti")
        has_target, has_source = F.lit(False), F.lit(True)
        tcol = dict.fromkeys(scope.names, none)
        extra = {SCAN_FILE: none.cast("string"), SCAN_ROW: none.cast("long")}
        if scope.tracking:
            extra |= {SCAN_ROW_ID: none.cast("long"), SCAN_ROW_VERSION: none.cast("long")}
    else:
        joined = scope.target.join(scope.src, scope.cond, shape)
        has_target, has_source = scope.tfile().isNotNull(), F.col(SRC).isNotNull()
        tcol = scope.tcol()
        extra = {SCAN_FILE: scope.tfile(), SCAN_ROW: F.col(f"`{scope.talias}`.{SCAN_ROW}")}
        if scope.tracking:
            extra |= {SCAN_ROW_ID: F.col(SCAN_ROW_ID), SCAN_ROW_VERSION: F.col(SCAN_ROW_VERSION)}
    matched = has_target & has_source
    hits = []  # (condition the row takes the action on), in action order
    for _, c, _, on_match in scope.clauses:
        base = matched if on_match else (has_target & ~has_source)
        hits.append(base if c is None else base & F.coalesce(sql_expr(c), F.lit(False)))
    for c, _ in scope.inserts:
        base = ~has_target & has_source
        hits.append(base if c is None else base & F.coalesce(sql_expr(c), F.lit(False)))
    action = F.lit(0)
    for i in reversed(range(len(hits))):
        action = F.when(hits[i], F.lit(i + 1)).otherwise(action)
    joined = joined.withColumn(ACTION, action).withColumn(MATCHED, matched)
    if generated:
        joined = joined.withColumn(IDENTITY_K, F.monotonically_increasing_id())
    new = _new_values(scope, tcol, generated)
    cols = [v.alias(f"{NEW}{i}") for i, v in enumerate(new)]
    if keep_old:
        cols += [tcol[n].alias(f"{OLD}{i}") for i, n in enumerate(scope.names)]
    cols += [v.alias(k) for k, v in extra.items()]
    cols += [F.col(ACTION), F.col(MATCHED)] + ([F.col(IDENTITY_K)] if generated else [])
    # rows no clause reads: source rows nothing inserts; with deletion vectors also the
    # target rows no clause changes (matched ones stay for the duplicate-match check)
    needed = (F.col(ACTION) > 0) | F.col(MATCHED) if dv else (F.col(ACTION) > 0) | has_target
    # pinned (measured at 400k rows, 2 cores: a lazy local checkpoint 2.51x the Spark floor,
    # a cache 3.20x): the checkpoint is filled by the first job that reads it
    rows = joined.where(needed).select(*cols).localCheckpoint(eager=False)
    return MergeRows(rows, shape, list(scope.clauses), len(scope.inserts), scope.names, generated)


def _new_values(scope: MergeScope, tcol: dict, generated: list) -> list:
    """Per target column, its value after the row's action (casts to the column's type)."""
    from pyspark.sql import functions as F

    n = len(scope.clauses)
    generate = {c.name: c for c in generated}
    out = []
    for f in scope.target_schema.fields:
        value = tcol[f.name]
        for i in reversed(range(n)):
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
                given = set_columns(scope.target_schema, sets, tcol.get, what="merge", alias=scope.talias)
                if f.name not in given:
                    continue
                new = given[f.name]
            value = F.when(F.col(ACTION) == i + 1, new).otherwise(value)
        for j in reversed(range(len(scope.inserts))):
            _, values = scope.inserts[j]
            if f.name in generate:
                col = generate[f.name]
                new = (F.lit(col.first_k) + F.col(IDENTITY_K)) * F.lit(col.step) + F.lit(col.start)
            elif values is None:
                if f.name in scope.identities and f.name.lower() not in scope.src_cols:
                    continue  # pragma: no cover - generated above
                if scope.evolve and f.name.lower() not in scope.src_cols:
                    new = F.lit(None)  # schema evolution: a column the source lacks is null
                else:
                    new = scope.source_col(f.name)
            else:
                given = {scope.target_name(k): v for k, v in values.items()}
                new = sql_expr(given[f.name]) if f.name in given else F.lit(None)
            value = F.when(F.col(ACTION) == n + j + 1, new).otherwise(value)
        out.append(value.cast(f.dataType))
    return out


@dataclass
class MergeOutcome:
    """What the joined rows hold, from one aggregation job."""

    touched: list  # target files holding a row a target-side clause changes
    counts: dict  # action number -> rows taking it (target rows counted once)
    several_matches: bool  # some target row is matched by several source rows
    top_k: int | None  # the largest identity number of an inserted row


def summarize(mr: MergeRows) -> MergeOutcome:
    """Counts, touched files, the duplicate-match check and the identity high-water number
    of the joined rows (one Spark job: per target row, then per file)."""
    from pyspark.sql import functions as F

    n = len(mr.clauses)
    action = F.col(ACTION)
    is_target = (action >= 1) & (action <= n)
    ins = mr.insert_actions()
    per_row = [
        F.count(F.when(F.col(MATCHED), F.lit(1))).alias("m"),
        F.max(F.when(is_target, action)).alias("t"),
        *[F.count(F.when(action == a, F.lit(1))).alias(f"i{a}") for a in ins],
    ]
    if mr.generated:
        per_row.append(F.max(F.when(action.isin(ins), F.col(IDENTITY_K))).alias("k"))
    rows = mr.rows.where((action > 0) | F.col(MATCHED))  # type: ignore[attr-defined]
    rows = rows.groupBy(SCAN_FILE, SCAN_ROW).agg(*per_row)
    per_file = [
        F.max("m").alias("m"),
        F.max("t").alias("t"),
        *[F.count(F.when(F.col("t") == a, F.lit(1))).alias(f"t{a}") for a in range(1, n + 1)],
        *[F.sum(f"i{a}").alias(f"i{a}") for a in ins],
    ]
    if mr.generated:
        per_file.append(F.max("k").alias("k"))
    got = rows.groupBy(SCAN_FILE).agg(*per_file).collect()
    counts = dict.fromkeys(range(1, n + 1 + len(ins)), 0)
    top_k = None
    for r in got:
        for a in range(1, n + 1):
            counts[a] += int(r[f"t{a}"] or 0)
        for a in ins:
            counts[a] += int(r[f"i{a}"] or 0)
        if mr.generated and r["k"] is not None:
            top_k = r["k"] if top_k is None else max(top_k, r["k"])
    return MergeOutcome(
        touched=[r[SCAN_FILE] for r in got if r[SCAN_FILE] is not None and (r["t"] or 0) > 0],
        counts=counts,
        several_matches=any((r["m"] or 0) > 1 for r in got),
        top_k=top_k,
    )
