"""MERGE: ``DeltaMergeBuilder``, the clauses of ``DeltaTable.merge`` and their execution
(copy-on-write, or deletion vectors when the table enables them).

Guarantees (as delta-spark's MERGE):

* clauses apply in order within each kind, the first whose condition holds winning:
  ``whenMatched*`` for target rows with a source match, ``whenNotMatched*`` (by target)
  for source rows without one, ``whenNotMatchedBySource*`` for target rows without one;
* a target row matched by several source rows is an error
  (``DELTA_MULTIPLE_SOURCE_ROW_MATCHING_TARGET_ROW_IN_MERGE``) unless the only matched
  clause is an unconditional ``whenMatchedDelete()``;
* only target files that can hold a matching row are read: without a
  ``whenNotMatchedBySource`` clause the target is pruned by the condition's target-side
  conjuncts and by the source's join-key ranges against file statistics and partition
  values (:mod:`delta_pyds.spark.tables.merge_pruning`; ``numTargetFilesAfterSkipping``);
* the source is pinned once; the target's candidate rows are joined with it on the
  columns the conditions need to find the changed files, the counts and duplicate matches
  (phase 1), then only the changed files' rows are written with the inserted rows (phase 2,
  from phase 1's pinned rows with deletion vectors and for small targets, else the changed
  files read whole and joined again), as delta-spark's ``ClassicMergeExecutor``
  (:mod:`delta_pyds.spark.tables.merge_rows`; written and committed by
  :mod:`delta_pyds.spark.tables.merge_commit`); a merge with only insert clauses (and no
  identity values to generate) runs no phase 1: the source anti-joined with the candidate
  target rows is appended (delta-spark's ``InsertOnlyMergeExecutor``);
* ``operationMetrics`` has delta-spark's names, ``numSourceRows`` included;
* only files holding a row some clause changes are rewritten (row ids kept on tracked
  tables; changed rows take the commit's version); inserted rows go to new files; with
  ``delta.enableDeletionVectors=true`` (as delta-spark) no file is rewritten: the changed
  rows are marked deleted in the files' merged vectors and only updated rows are written;
* identity columns the table generates cannot be updated; inserts without a value for
  an identity column get generated values (unique, beyond the high-water mark, which the
  commit moves); explicit values only with ``delta.identity.allowExplicitInsert``;
* on tables with the change data feed the commit carries change data files (inserts,
  deletes, update pre/post images);
* ``withSchemaEvolution()``: source columns the table lacks are added to it (at the end,
  nullable, in the same commit) when ``updateAll`` / ``insertAll`` or a ``set`` / ``values``
  key names them, as delta-spark's schema evolution does for top-level columns; without
  it they are ignored by ``*All`` clauses and refused in ``set`` / ``values``;
* clause arguments are checked as delta-spark checks them (:mod:`delta_pyds.spark.tables.args`);
* one commit from the version read, reading every target file (a concurrent remove of
  one conflicts) and the partitions the condition's target-side partition conjuncts
  select; written files are deleted if the commit fails; ``execute()`` returns
  delta-spark's one-row DataFrame ``num_affected_rows, num_updated_rows,
  num_deleted_rows, num_inserted_rows`` (zeros, and no commit, when nothing changes).
"""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING, Any

from delta_pyds.errors import DeltaError
from delta_pyds.operations.row_tracking import row_tracking_columns
from delta_pyds.protocol.identity import identity_columns
from delta_pyds.spark.tables.args import (
    ColumnMapping,
    ExpressionOrColumn,
    OptionalExpressionOrColumn,
    check_column_map,
    check_condition,
)
from delta_pyds.spark.tables.dml import TableRewriter, only_files, refuse_identity_updates
from delta_pyds.spark.tables.dv_marks import writes_dvs
from delta_pyds.spark.tables.merge_clause import MergeClause
from delta_pyds.spark.tables.merge_rows import identity_to_generate
from delta_pyds.spark.tables.merge_scope import DEFAULT_TARGET_ALIAS, SRC, SRC_ID, MergeScope, sql_expr
from delta_pyds.spark.tables.resolution import check_merge_resolves, parse_column_path, set_column_names
from delta_pyds.table.snapshot import Snapshot
from delta_pyds.transaction.staged_files import cleanup_on_failure

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = ["DEFAULT_TARGET_ALIAS", "DeltaMergeBuilder"]

log = logging.getLogger(__name__)

_SEVERAL_MATCHES = (
    "merge: several source rows matched the same target row and could change it in "
    "conflicting ways (delta-spark: DELTA_MULTIPLE_SOURCE_ROW_MATCHING_TARGET_ROW_IN_"
    "MERGE); deduplicate the source, or make the only whenMatched clause an "
    "unconditional whenMatchedDelete()"
)


class DeltaMergeBuilder:
    """Clauses of a MERGE, applied in order within each kind (the first whose condition
    holds wins), as in delta-spark: ``whenMatched*`` for target rows with a source match,
    ``whenNotMatched*`` (by target) for source rows without one, ``whenNotMatchedBySource*``
    for target rows without one. A target row matched by several source rows is an error
    (``DELTA_MULTIPLE_SOURCE_ROW_MATCHING_TARGET_ROW_IN_MERGE``) unless the only matched
    clause is an unconditional ``whenMatchedDelete()``, as in delta-spark.
    Only files holding a row some clause changes are rewritten; on tables with the change
    data feed the commit carries change data files (inserts, deletes, update pre/post
    images). Made by ``DeltaTable.merge``."""

    def __init__(
        self,
        rewriter: TableRewriter,
        source: DataFrame,
        condition: ExpressionOrColumn,
        *,
        target_alias: str | None = None,
    ) -> None:
        self._rewriter, self._source, self._condition = rewriter, source, condition
        self._target_alias = target_alias
        # (kind, condition, set) kind: update | delete
        self._matched: list[tuple[str, OptionalExpressionOrColumn, dict[str, Any] | None]] = []
        self._not_matched: list[tuple[OptionalExpressionOrColumn, dict[str, Any] | None]] = []  # (condition, values)
        self._not_matched_by_source: list[tuple[str, OptionalExpressionOrColumn, dict[str, Any] | None]] = []
        self._evolve = False

    # -------------------------------------------------------------------- clauses
    def withSchemaEvolution(self) -> DeltaMergeBuilder:
        """Adds the source's columns the table lacks to the table (see the module docstring)."""
        self._evolve = True
        return self

    def whenNotMatchedBySourceUpdate(
        self, condition: OptionalExpressionOrColumn = None, set: ColumnMapping | None = None
    ) -> DeltaMergeBuilder:
        """Updates target rows no source row matches (``set`` may use target columns only).
        ``set`` is required: the dict alone (as ``condition``) is refused, as in delta-spark."""
        sets = check_column_map(set, "'set' in whenNotMatchedBySourceUpdate")
        check_condition(condition)
        if not sets:
            raise ValueError("whenNotMatchedBySourceUpdate: set must name at least one column")
        self._not_matched_by_source.append(("update", condition, sets))
        return self

    def whenNotMatchedBySourceDelete(self, condition: OptionalExpressionOrColumn = None) -> DeltaMergeBuilder:
        """Deletes target rows no source row matches."""
        check_condition(condition)
        self._not_matched_by_source.append(("delete", condition, None))
        return self

    def whenMatchedUpdate(
        self, condition: OptionalExpressionOrColumn = None, set: ColumnMapping | None = None
    ) -> DeltaMergeBuilder:
        """Updates matched target rows by ``set`` (required: the dict alone, as ``condition``,
        is refused with delta-spark's ``ValueError``)."""
        sets = check_column_map(set, "'set' in whenMatchedUpdate")
        check_condition(condition)
        if not sets:
            raise ValueError("whenMatchedUpdate: set must name at least one column")
        self._matched.append(("update", condition, sets))
        return self

    def whenMatchedUpdateAll(self, condition: OptionalExpressionOrColumn = None) -> DeltaMergeBuilder:
        check_condition(condition)
        self._matched.append(("update", condition, None))
        return self

    def whenMatchedDelete(self, condition: OptionalExpressionOrColumn = None) -> DeltaMergeBuilder:
        check_condition(condition)
        self._matched.append(("delete", condition, None))
        return self

    def whenNotMatchedInsert(
        self, condition: OptionalExpressionOrColumn = None, values: ColumnMapping | None = None
    ) -> DeltaMergeBuilder:
        """Inserts unmatched source rows with ``values`` (required: the dict alone, as
        ``condition``, is refused with delta-spark's ``ValueError``)."""
        vals = check_column_map(values, "'values' in whenNotMatchedInsert")
        check_condition(condition)
        if not vals:
            raise ValueError("whenNotMatchedInsert: values must name at least one column")
        self._not_matched.append((condition, vals))
        return self

    def whenNotMatchedInsertAll(self, condition: OptionalExpressionOrColumn = None) -> DeltaMergeBuilder:
        check_condition(condition)
        self._not_matched.append((condition, None))
        return self

    def add_clause(self, clause: MergeClause) -> DeltaMergeBuilder:
        """Adds one typed clause (what the SQL front door builds), checked as the
        ``when*`` method of the same kind checks its arguments."""
        cond, sets = clause.condition, clause.mapping
        if clause.when == "not_matched":
            if sets is None:
                return self.whenNotMatchedInsertAll(cond)
            return self.whenNotMatchedInsert(cond, sets)
        if clause.when == "matched":
            if clause.action == "delete":
                return self.whenMatchedDelete(cond)
            return self.whenMatchedUpdateAll(cond) if sets is None else self.whenMatchedUpdate(cond, sets)
        if clause.action == "delete":
            return self.whenNotMatchedBySourceDelete(cond)
        return self.whenNotMatchedBySourceUpdate(cond, sets)

    # ------------------------------------------------------------------ execution
    def execute(self) -> DataFrame:
        """Runs the MERGE in one commit; returns delta-spark's one-row DataFrame
        (``num_affected_rows``, ``num_updated_rows``, ``num_deleted_rows``,
        ``num_inserted_rows``), zeros when no row changes; auto compaction after it
        (:mod:`delta_pyds.spark.tables.auto_compaction`)."""
        from delta_pyds.spark.tables.auto_compaction import compact_after

        rw = self._rewriter
        rw.take_commits()
        result = self._run()
        compact_after(rw.spark, rw.storage, rw.take_commits())
        return result

    def _run(self) -> DataFrame:
        """The MERGE of :meth:`execute`."""
        if not self._matched and not self._not_matched and not self._not_matched_by_source:
            raise ValueError("merge: add at least one whenMatched*, whenNotMatched* or whenNotMatchedBySource* clause")
        from delta_pyds.spark.tables.merge_commit import now_ms, write_and_commit
        from delta_pyds.spark.tables.merge_rows import merge_rows

        rw = self._rewriter
        started = now_ms()
        scope = self._scope(rw.dml_snapshot())
        materialized = now_ms()
        dv = writes_dvs(scope.snap)
        pr, rows = None, None
        try:
            pr, outcome = self._phase_1(scope, dv=dv)
            if scope.clauses and outcome.several_matches and not scope.delete_all_matched:
                raise DeltaError(_SEVERAL_MATCHES)
            metrics = self._metrics(scope, outcome.counts)
            metrics.update(
                numSourceRows=outcome.source_rows,
                materializeSourceTimeMs=materialized - started,
                scanTimeMs=now_ms() - materialized,  # phase 1 (delta-spark: finding the touched files)
            )
            inserts = metrics["numTargetRowsInserted"] if outcome.inserts_counted else len(scope.inserts)
            if outcome.touched or inserts:
                rows = merge_rows(scope, pr, outcome, dv=dv, keep_old=rw.writes_changes(scope.snap))
                write_and_commit(
                    rw,
                    scope,
                    rows,
                    outcome,
                    metrics,
                    dv=dv,
                    condition=self._condition,
                    parameters=self._parameters(),
                    started_ms=started,
                )
        finally:
            if rows is not None:
                rows.release()
            if pr is not None:
                pr.release()
            scope.src.unpersist()
        updated, deleted = metrics["numTargetRowsUpdated"], metrics["numTargetRowsDeleted"]
        inserted = metrics["numTargetRowsInserted"]
        return rw.spark.createDataFrame(
            [(updated + deleted + inserted, updated, deleted, inserted)],
            "num_affected_rows long, num_updated_rows long, num_deleted_rows long, num_inserted_rows long",
        )

    def _phase_1(self, scope: MergeScope, *, dv: bool) -> tuple[Any, Any]:
        """(the probe, or None for an insert-only merge, and the merge's outcome)."""
        from delta_pyds.spark.tables.merge_outcome import insert_only, summarize
        from delta_pyds.spark.tables.merge_pruning import pin_target_max_bytes
        from delta_pyds.spark.tables.merge_rows import pins_whole_target, probe

        rw = self._rewriter
        generated = identity_to_generate(scope)  # refuses bad identity inserts before any job
        if scope.insert_only and not generated:  # no phase 1: an anti-join and an append
            return None, insert_only(scope)
        # phase 1 pins the changed rows' written values with deletion vectors, every
        # candidate row's in a small copy-on-write merge: no target file is read twice
        whole = pins_whole_target(scope, dv=dv, max_bytes=pin_target_max_bytes(rw))
        carry = self._carries(scope, dv=dv)
        if whole:
            log.info("pydelta MERGE on %s: phase 1 pins every candidate row (small target)", rw.path)
        pr = probe(scope, carry=carry, keep_old=rw.writes_changes(scope.snap), whole=whole)
        # one job: it also fills the probe's checkpoint; inserts are counted there only for
        # identity values (their high-water mark), else by the write
        with cleanup_on_failure(pr.release, what="the merge's phase 1 rows"):
            outcome = summarize(scope, pr, count_inserts=bool(generated), marks=dv)
        return pr, outcome

    def _carries(self, scope: MergeScope, *, dv: bool) -> bool:
        """Whether phase 1 of a deletion-vector merge pins the changed rows' written values
        (candidate files within ``spark.pydelta.merge.pinChangedRows.maxBytes``), logged."""
        from delta_pyds.spark.conf import PIN_CHANGED_CONF, byte_count
        from delta_pyds.spark.tables.merge_rows import DEFAULT_PIN_CHANGED_MAX_BYTES, carries_changed_rows

        if not dv:
            return False
        cap = byte_count(self._rewriter.spark, PIN_CHANGED_CONF, DEFAULT_PIN_CHANGED_MAX_BYTES)
        carry = carries_changed_rows(scope, dv=dv, max_bytes=cap)
        what = (
            "phase 1 pins the changed rows' written values"
            if carry
            else f"phase 2 reads the changed files again (candidate files over {cap} bytes)"
        )
        log.info("pydelta MERGE on %s: %s", self._rewriter.path, what)
        return carry

    def _parameters(self) -> dict[str, str]:
        """delta-spark's MERGE operation parameters."""
        return {
            "predicate": json.dumps([str(self._condition)]),
            "matchedPredicates": _clauses_json([(c, k) for k, c, _ in self._matched]),
            "notMatchedPredicates": _clauses_json([(c, "insert") for c, _ in self._not_matched]),
            "notMatchedBySourcePredicates": _clauses_json([(c, k) for k, c, _ in self._not_matched_by_source]),
        }

    def _metrics(self, scope: MergeScope, counts: dict[int, int]) -> dict[str, int]:
        """delta-spark's MERGE row metrics from the rows per action."""
        metrics: dict[str, int] = {
            "numTargetRowsUpdated": 0,
            "numTargetRowsDeleted": 0,
            "numTargetRowsInserted": 0,
            "numTargetRowsMatchedUpdated": 0,
            "numTargetRowsMatchedDeleted": 0,
            "numTargetRowsNotMatchedBySourceUpdated": 0,
            "numTargetRowsNotMatchedBySourceDeleted": 0,
            "numTargetFilesRemoved": 0,
            "numTargetFilesAdded": 0,
            "numTargetFilesBeforeSkipping": scope.snap.files.num_rows,
            "numTargetFilesAfterSkipping": scope.files_after_skipping,
        }
        for i, (kind, _, _, on_match) in enumerate(scope.clauses):
            key = ("numTargetRowsMatched" if on_match else "numTargetRowsNotMatchedBySource") + (
                "Deleted" if kind == "delete" else "Updated"
            )
            metrics[key] += counts.get(i + 1, 0)
            metrics["numTargetRowsDeleted" if kind == "delete" else "numTargetRowsUpdated"] += counts.get(i + 1, 0)
        n = len(scope.clauses)
        metrics["numTargetRowsInserted"] = sum(counts.get(n + 1 + j, 0) for j in range(len(self._not_matched)))
        return metrics

    def _scope(self, snap: Snapshot) -> MergeScope:
        """Plans the clauses against the snapshot read (checked by :meth:`_check_clauses`),
        pins the source and plans the target's candidate files (:meth:`_target`)."""
        from pyspark.sql import functions as F

        from delta_pyds.spark.schema_convert import drop_void, to_spark_schema

        identities = {c.name: c for c in identity_columns(snap.schema)}
        talias = self._target_alias or DEFAULT_TARGET_ALIAS
        evolved = self._evolved(snap)
        # delta-spark allows several source rows to match one target row only when the one
        # matched clause is an unconditional delete (every such pair deletes the same row)
        scope = MergeScope(
            snap=snap,
            tracking=row_tracking_columns(snap),
            identities=identities,
            generated_always={n for n, c in identities.items() if not c.allow_explicit_insert},
            target_schema=to_spark_schema(drop_void(evolved if evolved is not None else snap.schema)),
            src=None,
            src_cols={},
            talias=talias,
            target=None,
            cond=None,
            clauses=[(k, c, st, True) for k, c, st in self._matched]
            + [(k, c, st, False) for k, c, st in self._not_matched_by_source],
            delete_all_matched=len(self._matched) == 1 and self._matched[0][:2] == ("delete", None),
            evolved=evolved,
            inserts=tuple(self._not_matched),
            evolve=self._evolve,
            by_source=bool(self._not_matched_by_source),
        )
        self._check_clauses(scope)
        src = self._source.withColumn(SRC, F.lit(True)).withColumn(SRC_ID, F.monotonically_increasing_id())
        if evolved is not None:  # source structs take the evolved shape (new fields null)
            from delta_pyds.spark.tables.merge_evolution import to_schema

            src = to_schema(src, evolved, add_missing=False, complex_only=True)
        scope.src_cols = {c.lower(): c for c in self._source.columns}
        scope.cond = sql_expr(self._condition)
        # the source is pinned (delta-spark's materializeSource) before anything reads it: the
        # pruning by its keys, both phases and the row numbers inserts and identity values
        # come from see the same source rows; a cache, not a checkpoint, so that the
        # condition's references to the source's alias resolve (released by execute())
        scope.src = src.persist()
        with cleanup_on_failure(src.unpersist, what="the pinned merge source"):
            self._target(scope, snap)
        return scope

    def _check_clauses(self, scope: MergeScope) -> None:
        """Refuses updates of identity columns the table generates, unknown columns in
        update sets and clauses that do not resolve against the target and the source."""
        snap, talias = scope.snap, scope.talias
        for _, _, sets in list(self._matched) + list(self._not_matched_by_source):
            if sets is not None:
                named = set_column_names(scope.target_schema, sets, what="merge", alias=talias)
                refuse_identity_updates(snap, named, "merge")

        def used(clauses: list[Any]) -> list[Any]:  # the conditions and set values of (kind, condition, set) clauses
            return [e for _, c, st in clauses for e in [c, *(st.values() if st else ())]]

        check_merge_resolves(
            self._rewriter.spark,
            scope.target_schema,
            talias,
            self._source,
            self._condition,
            matched=used(self._matched),
            not_matched=[e for c, vals in self._not_matched for e in [c, *(vals.values() if vals else ())]],
            by_source=used(self._not_matched_by_source),
        )

    def _target(self, scope: MergeScope, snap: Snapshot) -> None:
        """The candidate target files (pruned unless a ``whenNotMatchedBySource`` clause
        needs every row) and their scan."""
        files, talias, evolved = snap.files, scope.talias, scope.evolved
        if not self._not_matched_by_source:  # else every target row is needed
            from delta_pyds.spark.dialect import session_dialect
            from delta_pyds.spark.tables.merge_pruning import key_pruning_min_bytes, keys_can_prune, target_filter

            counted: dict[str, int] = {}
            literal_files: dict[str | None, Any] = {}

            def read_keys(literal: str | None, columns: list[str]) -> bool:
                found = self._rewriter.candidates(snap, literal, rendered=True) if literal else files
                literal_files[literal] = found
                if scope.insert_only:  # without phase 1 a job counts the source anyway: this one
                    return True
                return keys_can_prune(found, columns, snap.partition_columns, key_pruning_min_bytes(self._rewriter))

            pruning = target_filter(
                self._condition,
                talias,
                scope.target_schema,
                scope.src,
                counted,
                read_keys=read_keys,
                dialect=session_dialect(self._rewriter.spark),
            )
            scope.source_rows = counted.get("rows")
            if pruning == "FALSE":
                files = files.slice(0, 0)
            elif pruning in literal_files:  # the keys were not read: the literal conjuncts' files
                files = literal_files[pruning]
            elif pruning is not None:
                files = self._rewriter.candidates(snap, pruning, rendered=True)
        scope.files_after_skipping = files.num_rows
        scope.files = files

        def scan_target(paths: list[str] | None = None) -> DataFrame:
            if paths is not None and len(set(paths)) == files.num_rows:
                return scope.target  # every candidate file: the same scan (no second planning)
            target = self._rewriter.scan(snap, files if paths is None else only_files(files, paths))
            if evolved is not None:  # rows already in the table: null in new columns and fields
                from delta_pyds.spark.tables.merge_evolution import to_schema

                target = to_schema(target, evolved, add_missing=True)
            return target.alias(talias)

        scope.scan_target = scan_target
        scope.target = scan_target()

    def _evolved(self, snap: Snapshot) -> Any:
        """The table schema with the source's columns and nested fields the clauses write
        (schema evolution, delta-spark's rules; None without ``withSchemaEvolution()`` or
        when nothing is new)."""
        if not self._evolve:
            return None
        from delta_pyds.spark.tables.merge_evolution import evolved_schema

        star = any(sets is None for kind, _, sets in self._matched if kind == "update") or any(
            values is None for _, values in self._not_matched
        )
        named = {
            parse_column_path(k)[-1].lower()
            for _, _, sets in list(self._matched) + list(self._not_matched_by_source)
            if sets
            for k in sets
        } | {parse_column_path(k, "values")[-1].lower() for _, values in self._not_matched if values for k in values}
        return evolved_schema(snap.schema, self._source, None if star else named)


def _clauses_json(clauses: list[tuple[OptionalExpressionOrColumn, str]]) -> str:
    """delta-spark's ``MergePredicate`` list: per clause ``{"predicate": ..., "actionType": ...}``,
    the predicate left out when the clause has no condition (as its JSON writer leaves out
    ``None``), compact as Jackson writes it; a condition as given (a ``Column`` as pyspark
    prints it)."""
    out = [({"predicate": str(c)} if c is not None else {}) | {"actionType": kind} for c, kind in clauses]
    return json.dumps(out, separators=(",", ":"))
