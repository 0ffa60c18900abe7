"""MERGE's output expressions and rows: the action each joined row takes
(:func:`target_action`, :func:`insert_action`), the value each target column is written with
(:func:`new_values`, generated and identity columns included), and the rows the commit writes
(:class:`MergeRows`: data rows and change data rows), shared by the two-phase executor
(:mod:`~delta_pyds.spark.commands.merge.classic`) and the insert-only one
(:mod:`~delta_pyds.spark.commands.merge.insert_only`).

Guarantees:

* a target row's action is 1 + the index of the first target-side clause that holds
  (matched clauses, then not-matched-by-source clauses), an unmatched source row's
  1 + the number of target-side clauses + the index of the first insert clause that
  holds; 0 when no clause applies (the row is copied, or dropped). A clause condition that
  is null does not hold;
* written values are cast to the target column's type; ``updateAll`` keeps the values the
  table generates (identity columns, generated columns the source lacks: recomputed from
  the written row); inserts without an identity value get generated ones
  (:func:`identity_to_generate` refuses clauses that set an identity column in some insert
  clauses only, or one the table generates: :class:`~delta_pyds.errors.IdentityColumnError`);
* change data rows: update pre- and post-images, one delete per target row, inserts.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from delta_pyds.errors import IdentityColumnError
from delta_pyds.protocol.identity import IdentityColumn
from delta_pyds.spark.commands.merge.clauses import Expression, MergeClause
from delta_pyds.spark.commands.merge.plan import ACTION, MATCHED, SRC_ID, MergePlan, release_checkpoint, sql_expr
from delta_pyds.spark.commands.native_rows import SCAN_FILE, SCAN_ROW, SCAN_ROW_ID, SCAN_ROW_VERSION
from delta_pyds.spark.commands.resolution import set_columns
from delta_pyds.spark.commands.rewriter import generated_expressions, regenerate
from delta_pyds.spark.session import projection

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

NEW = "__pydelta_new_"  # + index of the target column: its value as written
OLD = "__pydelta_old_"  # + index of the target column: its value before the merge


def identity_to_generate(plan: MergePlan) -> list[IdentityColumn]:
    """The identity columns the merge generates values for (no insert clause sets them);
    refuses clauses that set an identity column in some insert clauses only, or set one
    the table generates."""
    generate = []
    for name, col in plan.identities.items():
        gives = [
            (name.lower() in plan.src_cols)
            if c.assignments is None
            else name in {plan.target_name(k) for k, _ in c.assignments}
            for c in plan.inserts
        ]
        if not any(gives):
            generate.append(col)
        elif not all(gives):
            raise IdentityColumnError(
                f"merge: some insert clauses set identity column {name} and others do "
                "not; set it in all of them or in none (then the table generates it)"
            )
        elif not col.allow_explicit_insert:
            raise IdentityColumnError(
                f"merge: cannot insert values into identity column {name}: the table "
                "generates them (delta.identity.allowExplicitInsert=false); leave it out "
                "of the insert clauses (insertAll with a source without the column)"
            )
    return generate if plan.inserts else []


def carried_columns(plan: MergePlan, *, keep_old: bool, only_updated: bool) -> list[Column | str]:
    """What phase 2 writes of a joined target row besides its file and row index: the
    written values (with ``only_updated``, for rows no update clause takes, null where every
    update clause sets the column: with deletion vectors they are never written, and Spark
    then does not read the column), with ``keep_old`` the old values, and the row tracking
    columns."""
    from pyspark.sql import functions as F

    tcol = plan.tcol()
    new = new_values(plan, tcol, [], inserted=False, only_updated=only_updated)
    cols: list[Column | str] = [named(v, f"{NEW}{i}") for i, v in enumerate(new)]
    if keep_old:
        cols += [named(projection.ident(plan.talias, n), f"{OLD}{i}") for i, n in enumerate(plan.names)]
    if plan.tracking:
        cols += [F.col(SCAN_ROW_ID), F.col(SCAN_ROW_VERSION)]
    return cols


def target_action(plan: MergePlan, has_target: Column, has_source: Column) -> tuple[Column, Column]:
    """(the action of a joined target row: 1 + the index of the first target-side clause
    that holds, else 0; whether it is matched)."""
    from pyspark.sql import functions as F

    matched = has_target & has_source
    action = F.lit(0)
    for i in reversed(range(len(plan.clauses))):
        clause = plan.clauses[i]
        base = matched if clause.when == "matched" else (has_target & ~has_source)
        c = clause.condition
        hit = base if c is None else base & F.coalesce(sql_expr(c), F.lit(False))
        action = F.when(hit, F.lit(i + 1)).otherwise(action)
    return action, matched


def insert_action(plan: MergePlan) -> Column:
    """The action of a source row no target row matches: 1 + the number of target-side
    clauses + the index of the first insert clause that holds, else 0."""
    from pyspark.sql import functions as F

    n = len(plan.clauses)
    action = F.lit(0)
    for j in reversed(range(len(plan.inserts))):
        c = plan.inserts[j].condition
        hit = F.lit(True) if c is None else F.coalesce(sql_expr(c), F.lit(False))
        action = F.when(hit, F.lit(n + 1 + j)).otherwise(action)
    return action


@dataclass
class MergeRows:
    """Phase 2's rows: ``target`` the touched files' rows joined with the source (None when
    no file is touched), ``inserts`` the inserted source rows (None without insert clauses),
    each with per target column ``__pydelta_new_<i>`` (the value written) and, when change
    data is kept, ``__pydelta_old_<i>``; the target file and row index (null on inserted
    rows), the row tracking columns, the action and whether the row is matched."""

    target: DataFrame | None
    inserts: DataFrame | None
    clauses: tuple[MergeClause, ...]  # the target-side clauses
    n_inserts: int
    names: list[str]  # the target's column names, in order
    generated: list[IdentityColumn] = field(default_factory=list)  # identity columns generated for inserts

    def release(self) -> None:
        """Frees the pinned rows' blocks (else freed when the DataFrame is collected)."""
        if self.target is not None:
            release_checkpoint(self.target)

    def actions(self, kind: str) -> list[int]:
        """The action numbers of the target-side clauses of ``kind`` (update | delete)."""
        return [i + 1 for i, c in enumerate(self.clauses) if c.action == kind]

    def data_rows(self, *, dv: bool, tracking: tuple[str, str] | None) -> DataFrame | None:
        """The rows to write: with deletion vectors the updated and inserted rows; else
        every row of the touched files but the deleted ones, and the inserted rows. Table
        columns, then the row tracking columns when ``tracking`` names them (row ids kept;
        updated rows take the commit's version, inserted rows get new ids)."""
        from pyspark.sql import functions as F

        action, updates, deletes = F.col(ACTION), self.actions("update"), self.actions("delete")
        cols: list[Column | str] = [projection.renamed(f"{NEW}{i}", n) for i, n in enumerate(self.names)]
        if tracking:
            version = F.when(action.isin(updates), F.lit(None).cast("long")).otherwise(F.col(SCAN_ROW_VERSION))
            cols += [F.col(SCAN_ROW_ID).alias(tracking[0]), version.alias(tracking[1])]
        out = None
        if self.target is not None:
            kept = self.target
            if dv:
                kept = kept.where(action.isin(updates))
            elif deletes:
                kept = kept.where(~action.isin(deletes))
            out = projection.select(kept, cols)
        if self.inserts is not None:
            ins = projection.select(self.inserts, cols)
            out = ins if out is None else out.unionByName(ins)
        return out

    def change_rows(self, *, dedupe_deletes: bool) -> DataFrame | None:
        """The change data rows (table columns and ``_change_type``): update pre- and
        post-images, deletes (one per target row), inserts; None when there are none."""
        from pyspark.sql import functions as F

        from delta_pyds.cdf.plan import CHANGE_TYPE

        action = F.col(ACTION)
        old = [projection.renamed(f"{OLD}{i}", n) for i, n in enumerate(self.names)]
        new = [projection.renamed(f"{NEW}{i}", n) for i, n in enumerate(self.names)]

        def kind(name: str) -> str:  # the change type (a plain word: the same literal in every SQL dialect)
            return projection.aliased(f"'{name}'", CHANGE_TYPE)

        parts = []
        updates, deletes = self.actions("update"), self.actions("delete")
        rows = self.target
        if rows is not None and updates:
            upd = rows.where(action.isin(updates))
            parts.append(projection.select(upd, [*old, kind("update_preimage")]))
            parts.append(projection.select(upd, [*new, kind("update_postimage")]))
        if rows is not None and deletes:
            gone = rows.where(action.isin(deletes))
            if dedupe_deletes:  # several source rows deleted the same target row
                gone = gone.dropDuplicates([SCAN_FILE, SCAN_ROW])
            parts.append(projection.select(gone, [*old, kind("delete")]))
        if self.inserts is not None:
            parts.append(projection.select(self.inserts, [*new, kind("insert")]))
        if not parts:
            return None
        out = parts[0]
        for p in parts[1:]:
            out = out.unionByName(p)
        return out


def merge_rows_of(
    plan: MergePlan, target: DataFrame | None, inserts: DataFrame | None, generated: list[IdentityColumn]
) -> MergeRows:
    """Phase 2's target rows and inserted rows (shaped by :func:`insert_rows`) as
    :class:`MergeRows`, with the generated columns the clauses do not set recomputed."""
    where = _regenerated(plan)
    target, inserts = (_with_generated(plan, df, where) if df is not None else None for df in (target, inserts))
    return MergeRows(target, inserts, plan.clauses, len(plan.inserts), plan.names, generated)


def insert_rows(
    plan: MergePlan, unmatched: DataFrame | None, generated: list[IdentityColumn], *, keep_old: bool
) -> DataFrame | None:
    """The ``unmatched`` source rows (with their insert action) with their written values,
    shaped as phase 2's target rows (None without them)."""
    from pyspark.sql import functions as F

    none = F.lit(None)
    if unmatched is None:
        return None
    tcol = dict.fromkeys(plan.names, none)
    values = new_values(plan, tcol, generated, inserted=True, nulls=none)
    cols: list[Column | str] = [named(v, f"{NEW}{i}") for i, v in enumerate(values)]
    if keep_old:
        cols += [none.alias(f"{OLD}{i}") for i in range(len(plan.names))]
    cols += [none.cast("string").alias(SCAN_FILE), none.cast("long").alias(SCAN_ROW)]
    if plan.tracking:
        cols += [none.cast("long").alias(SCAN_ROW_ID), none.cast("long").alias(SCAN_ROW_VERSION)]
    cols += [F.col(ACTION), F.lit(False).alias(MATCHED)]
    return projection.select(unmatched, cols)


def _regenerated(plan: MergePlan) -> dict[str, Column]:
    """The generated columns the merge recomputes, each on the rows of the update and insert
    clauses that do not set it (an ``updateAll`` / ``insertAll`` sets it when the source has
    the column)."""
    from pyspark.sql import functions as F

    n, out = len(plan.clauses), {}
    names = generated_expressions(plan.snap)
    tcol = plan.tcol() if names else {}
    for name in names:
        actions = []
        for i, clause in enumerate(plan.clauses):
            if clause.action != "update":
                continue
            sets = clause.mapping
            given = (
                name.lower() in plan.src_cols
                if sets is None
                else name in set_columns(plan.target_schema, sets, tcol.get, what="merge", alias=plan.talias)
            )
            if not given:
                actions.append(i + 1)
        for j, ins in enumerate(plan.inserts):
            given = (
                name.lower() in plan.src_cols
                if ins.assignments is None
                else name in {plan.target_name(k) for k, _ in ins.assignments}
            )
            if not given:
                actions.append(n + j + 1)
        if actions:
            out[name] = F.col(ACTION).isin(actions)
    return out


def _with_generated(plan: MergePlan, df: DataFrame, where: dict[str, Column]) -> DataFrame:
    """``df`` (written values as ``__pydelta_new_<i>``) with the generated columns of
    ``where`` recomputed from the written values (:func:`~delta_pyds.spark.commands.rewriter.regenerate`)."""
    if not where:
        return df
    rest = [projection.ident(c) for c in df.columns if not c.startswith(NEW)]
    by_name = projection.select(df, [*[projection.renamed(f"{NEW}{i}", n) for i, n in enumerate(plan.names)], *rest])
    by_name = regenerate(plan.snap, by_name, where)
    return projection.select(by_name, [*[projection.renamed(n, f"{NEW}{i}") for i, n in enumerate(plan.names)], *rest])


def new_values(
    plan: MergePlan,
    tcol: Mapping[str, Column],
    generated: list[IdentityColumn],
    *,
    inserted: bool,
    only_updated: bool = False,
    nulls: Column | None = None,
) -> list[Column | str]:
    """Per target column, its value after the row's action (casts to the column's type):
    of target rows (the target-side clauses), or with ``inserted`` of inserted source rows
    (the insert clauses). With ``only_updated`` the value is right only for rows an update
    clause takes: a column every update clause sets is null on other rows (so the target's
    column is not read for it). ``nulls``: the null literal ``tcol`` holds (inserted rows).
    A value whose branches are all plain column references of the column's type is SQL
    text (:func:`_case_text`; a Column call costs py4j round trips on a classic session),
    the others Columns: name them with :func:`named`."""
    from pyspark.sql import functions as F

    n = len(plan.clauses)
    generate = {c.name: c for c in generated}
    # each clause's set values built once (not once per column: every value is a parse)
    given_sets = [
        set_columns(plan.target_schema, sets, tcol.get, what="merge", alias=plan.talias)
        if c.action == "update" and (sets := c.mapping) is not None and not inserted
        else None
        for c in plan.clauses
    ]
    given_values = [
        {plan.target_name(k): v for k, v in c.assignments} if c.assignments is not None and inserted else None
        for c in plan.inserts
    ]
    takes = _ActionTests()
    null = F.lit(None)
    out: list[Column | str] = []
    for f in plan.target_schema.fields:
        if inserted:
            news = [
                (n + j, _insert_value(plan, f.name, plan.inserts[j].star, given_values[j], generate))
                for j in range(len(plan.inserts))
            ]
            value = tcol[f.name]
        else:
            news = [
                (i, _update_value(plan, f.name, c.star, given_sets[i]))
                for i, c in enumerate(plan.clauses)
                if c.action == "update"
            ]
            # only_updated: a column every update clause sets is not read from the target
            value = null if only_updated and all(v is not None for _, v in news) else tcol[f.name]
        branches = [(i + 1, new) for i, new in news if new is not None]
        out.append(_written_value(plan, f, value, branches, takes, null, nulls))
    return out


def _written_value(
    plan: MergePlan, f: Any, default: Column, branches: list[tuple[int, Column]], takes: _ActionTests, *nulls: Any
) -> Column | str:
    """Column ``f``'s written value: ``default`` unless the row's action is one of the
    branches' (action number, value), the first that applies; SQL text when it can be
    (:func:`_case_text`), else a Column cast to ``f``'s type unless every branch has it."""
    from pyspark.sql import functions as F

    text = _case_text(plan, f, default, branches, *nulls)
    if text is not None:  # one SQL text: no Column call per branch
        return text
    value = default
    for k, new in reversed(branches):
        value = F.when(takes(k), new).otherwise(value)
    # a cast costs py4j round trips per column: none when every branch has the type already
    typed = _all_typed(plan, [default, *(new for _, new in branches)], f.dataType, *nulls)
    return value if typed else value.cast(f.dataType)


def named(value: Column | str, name: str) -> Column | str:
    """``value`` (a Column or the SQL text of :func:`new_values`) named ``name``."""
    return projection.aliased(value, name) if isinstance(value, str) else value.alias(name)


def _case_text(
    plan: MergePlan, f: Any, default: Column, branches: list[tuple[int, Column]], *nulls: Column | None
) -> str | None:
    """The SQL text of a written value whose default (the target's column ``f`` or null)
    and branches (action number, value) are all the plan's own column references of ``f``'s
    type: ``CASE WHEN __pydelta_action = k THEN <source column> ... ELSE <default> END``
    (the first clause that applies wins, as the Column chain); None otherwise."""
    refs = []
    for k, new in branches:
        ref = plan.source_text(new) if plan.known_type(new) == f.dataType else None
        if ref is None:
            return None
        refs.append(f"WHEN {projection.ident(ACTION)} = {k} THEN {ref}")
    if any(default is x for x in nulls if x is not None):
        if not refs:
            return None  # a bare null needs a cast to the column's type
        fallback = "NULL"
    elif default is plan.target_column(f.name) and plan.known_type(default) == f.dataType:
        fallback = projection.ident(plan.talias, f.name)
    else:
        return None
    return f"CASE {' '.join(refs)} ELSE {fallback} END" if refs else fallback


class _ActionTests:
    """``__pydelta_action = k`` per action number, each Column built once for every column."""

    def __init__(self) -> None:
        self.tests: dict[int, Column] = {}

    def __call__(self, k: int) -> Column:
        from pyspark.sql import functions as F

        if k not in self.tests:
            self.tests[k] = F.col(ACTION) == F.lit(k)
        return self.tests[k]


def _all_typed(plan: MergePlan, branches: list[Column], dtype: Any, *nulls: Any) -> bool:
    """Whether every branch of a written value is a column of ``dtype`` (:meth:`MergePlan.known_type`)
    or one of the null literals ``nulls`` (a CASE over them has the type ``dtype``)."""
    typed = [b for b in branches if not any(b is x for x in nulls if x is not None)]
    return bool(typed) and all(plan.known_type(b) == dtype for b in typed)


def _update_value(plan: MergePlan, name: str, star: bool, given: Mapping[str, Column] | None) -> Column | None:
    """The value an update clause (``star``: ``updateAll``; ``given`` its resolved set
    values) writes to column ``name``; None when the row keeps the target's value."""
    if star:  # updateAll
        if name in plan.generated_always or (name in plan.identities and name.lower() not in plan.src_cols):
            return None  # updateAll keeps the values the table generated
        if name.lower() not in plan.src_cols and name in generated_expressions(plan.snap):
            return None  # recomputed (_regenerated)
        if plan.evolve and name.lower() not in plan.src_cols:
            return None  # schema evolution: a column the source lacks is kept
        return plan.source_col(name)
    return given.get(name) if given is not None else None


def _insert_value(
    plan: MergePlan,
    name: str,
    star: bool,
    given: Mapping[str, Expression] | None,
    generate: Mapping[str, IdentityColumn],
) -> Column | None:
    """The value an insert clause (``star``: ``insertAll``; ``given`` its values keyed by
    target column) writes to column ``name`` of an inserted row (generated identity values
    included)."""
    from pyspark.sql import functions as F

    if name in generate:
        col = generate[name]
        return (F.lit(col.first_k) + F.col(SRC_ID)) * F.lit(col.step) + F.lit(col.start)
    if star:
        if name in plan.identities and name.lower() not in plan.src_cols:
            return None  # pragma: no cover - generated above
        if name.lower() not in plan.src_cols and name in generated_expressions(plan.snap):
            return F.lit(None)  # recomputed (_regenerated)
        if plan.evolve and name.lower() not in plan.src_cols:
            return F.lit(None)  # schema evolution: a column the source lacks is null
        return plan.source_col(name)
    return sql_expr(given[name]) if given is not None and name in given else F.lit(None)
