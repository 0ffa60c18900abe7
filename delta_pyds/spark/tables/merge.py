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
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from delta_pyds.cdf.plan import CHANGE_TYPE
from delta_pyds.errors import DeltaError
from delta_pyds.operations.dv_delete import stage_dv_marks
from delta_pyds.operations.read_set import record_read
from delta_pyds.operations.row_tracking import row_tracking_columns
from delta_pyds.protocol.identity import identity_columns, with_high_water_marks
from delta_pyds.protocol.schema import parse_schema
from delta_pyds.spark.tables.args import check_column_map, check_condition
from delta_pyds.spark.tables.dml import (
    SCAN_FILE,
    SCAN_ROW,
    SCAN_ROW_ID,
    SCAN_ROW_VERSION,
    TableRewriter,
    refuse_identity_updates,
)
from delta_pyds.spark.tables.dv_marks import dv_hits, writes_dvs
from delta_pyds.spark.tables.resolution import check_merge_resolves, set_column_names, set_columns
from delta_pyds.table.snapshot import Snapshot
from delta_pyds.transaction.file_actions import rows_for_paths

DEFAULT_TARGET_ALIAS = "__pydelta_target"
_ACTION = "__pydelta_action"
_SRC = "__pydelta_src"


@dataclass
class _MergeScope:
    """What the steps of one MERGE execution share: the snapshot read, the target's
    columns and scan, the source, the join condition and the target-side clauses."""

    snap: Snapshot
    tracking: tuple[str, str] | None
    identities: dict
    generated_always: set
    target_schema: Any  # Spark StructType of the target's columns
    src: Any  # the source DataFrame, with a non-null __pydelta_src column
    src_cols: dict  # lowercase -> source column name
    talias: str
    target: Any  # the target's scan, aliased
    cond: Any  # the join condition
    clauses: list  # (kind, condition, set, on_match): matched ones, then not-matched-by-source ones
    delete_all_matched: bool
    evolved: Any = None  # the table's Delta schema with the source's new columns (schema evolution)
    files_after_skipping: int = 0  # target files left by pruning (partitions, stats, source keys)
    marked: Any = None  # with deletion vectors: the target rows a clause changes (to mark deleted)

    @property
    def names(self) -> list[str]:
        return [f.name for f in self.target_schema.fields]

    def target_name(self, k: str) -> str:
        lowered = {n.lower(): n for n in self.names}
        k2 = k.split(".")[-1] if k.lower() not in lowered else k
        if k2.lower() not in lowered:
            raise ValueError(f"merge: {k} is not a column of the table; columns: {', '.join(self.names)}")
        return lowered[k2.lower()]

    def source_col(self, n: str):
        if n.lower() not in self.src_cols:
            raise ValueError(f"merge: updateAll/insertAll needs column {n} in the source")
        return self.src[self.src_cols[n.lower()]]

    def tcol(self) -> dict:
        from pyspark.sql import functions as F

        return {n: F.col(f"`{self.talias}`.`{n}`") for n in self.names}

    def tfile(self):
        from pyspark.sql import functions as F

        return F.col(f"`{self.talias}`.{SCAN_FILE}")


def _expr(e):
    from pyspark.sql import functions as F

    return F.expr(e) if isinstance(e, str) else e


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

    def __init__(self, rewriter: TableRewriter, source, condition, *, target_alias: str | None = None):
        self._rewriter, self._source, self._condition = rewriter, source, condition
        self._target_alias = target_alias
        self._matched: list = []  # (kind, condition, set) kind: update | delete
        self._not_matched: list = []  # (condition, values)
        self._not_matched_by_source: list = []  # (kind, condition, set)
        self._evolve = False

    # -------------------------------------------------------------------- clauses
    def withSchemaEvolution(self) -> DeltaMergeBuilder:
        """Adds the source's columns the table lacks to the table (see the module docstring)."""
        self._evolve = True
        return self

    def whenNotMatchedBySourceUpdate(self, condition=None, set: Mapping[str, Any] | None = None) -> DeltaMergeBuilder:
        """Updates target rows no source row matches (``set`` may use target columns only)."""
        if set is None and isinstance(condition, Mapping):  # delta-spark: the dict alone
            condition, set = None, condition
        check_condition(condition)
        sets = check_column_map(set, "set' in whenNotMatchedBySourceUpdate")
        if not sets:
            raise ValueError("whenNotMatchedBySourceUpdate: set must name at least one column")
        self._not_matched_by_source.append(("update", condition, sets))
        return self

    def whenNotMatchedBySourceDelete(self, condition=None) -> DeltaMergeBuilder:
        """Deletes target rows no source row matches."""
        check_condition(condition)
        self._not_matched_by_source.append(("delete", condition, None))
        return self

    def whenMatchedUpdate(self, condition=None, set: Mapping[str, Any] | None = None) -> DeltaMergeBuilder:
        if set is None and isinstance(condition, Mapping):  # delta-spark: the dict alone
            condition, set = None, condition
        check_condition(condition)
        sets = check_column_map(set, "set' in whenMatchedUpdate")
        if not sets:
            raise ValueError("whenMatchedUpdate: set must name at least one column")
        self._matched.append(("update", condition, sets))
        return self

    def whenMatchedUpdateAll(self, condition=None) -> DeltaMergeBuilder:
        check_condition(condition)
        self._matched.append(("update", condition, None))
        return self

    def whenMatchedDelete(self, condition=None) -> DeltaMergeBuilder:
        check_condition(condition)
        self._matched.append(("delete", condition, None))
        return self

    def whenNotMatchedInsert(self, condition=None, values: Mapping[str, Any] | None = None) -> DeltaMergeBuilder:
        if values is None and isinstance(condition, Mapping):  # delta-spark: the dict alone
            condition, values = None, condition
        check_condition(condition)
        vals = check_column_map(values, "values' in whenNotMatchedInsert")
        if not vals:
            raise ValueError("whenNotMatchedInsert: values must name at least one column")
        self._not_matched.append((condition, vals))
        return self

    def whenNotMatchedInsertAll(self, condition=None) -> DeltaMergeBuilder:
        check_condition(condition)
        self._not_matched.append((condition, None))
        return self

    # ------------------------------------------------------------------ execution
    def execute(self):
        """Runs the MERGE in one commit; returns delta-spark's one-row DataFrame
        (``num_affected_rows``, ``num_updated_rows``, ``num_deleted_rows``,
        ``num_inserted_rows``), zeros when no row changes."""
        if not self._matched and not self._not_matched and not self._not_matched_by_source:
            raise ValueError("merge: add at least one whenMatched*, whenNotMatched* or whenNotMatchedBySource* clause")
        scope = self._scope(self._rewriter.dml_snapshot())
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
        }
        metrics["numTargetFilesBeforeSkipping"] = scope.snap.files.num_rows
        metrics["numTargetFilesAfterSkipping"] = scope.files_after_skipping
        parts: list = []  # DataFrames of the rows to write
        changes: list = []  # DataFrames of change data rows
        touched: list = []
        marks: dict = {}
        action = None
        if scope.clauses:
            action = self._target_action(scope)
            touched = self._touched_files(scope, action)  # also refuses several matches per row
        if touched:
            self._apply_target_clauses(scope, action, touched, metrics, parts, changes)
        if self._not_matched:
            marks = self._insert_rows(scope, metrics, parts, changes)
        if touched or metrics["numTargetRowsInserted"]:
            self._write_and_commit(scope, parts, changes, touched, marks, metrics)
        updated, deleted = metrics["numTargetRowsUpdated"], metrics["numTargetRowsDeleted"]
        inserted = metrics["numTargetRowsInserted"]
        return self._rewriter.spark.createDataFrame(
            [(updated + deleted + inserted, updated, deleted, inserted)],
            "num_affected_rows long, num_updated_rows long, num_deleted_rows long, num_inserted_rows long",
        )

    def _scope(self, snap: Snapshot) -> _MergeScope:
        """Plans the clauses against the snapshot read; refuses updates of identity
        columns the table generates and unknown columns in update sets."""
        from pyspark.sql import functions as F

        from delta_pyds.spark.schema_convert import drop_void, to_spark_schema

        identities = {c.name: c for c in identity_columns(snap.schema)}
        talias = self._target_alias or DEFAULT_TARGET_ALIAS
        evolved = self._evolved(snap)
        # delta-spark allows several source rows to match one target row only when the one
        # matched clause is an unconditional delete (every such pair deletes the same row)
        scope = _MergeScope(
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
        )
        for _, _, sets in list(self._matched) + list(self._not_matched_by_source):
            if sets is not None:
                named = set_column_names(scope.target_schema, sets, what="merge", alias=talias)
                refuse_identity_updates(snap, named, "merge")
        scope.src = self._source.withColumn(_SRC, F.lit(True))
        if evolved is not None:  # source structs take the evolved shape (new fields null)
            from delta_pyds.spark.tables.merge_evolution import to_schema

            scope.src = to_schema(scope.src, evolved, add_missing=False, complex_only=True)
        scope.src_cols = {c.lower(): c for c in self._source.columns}
        files = snap.files
        if not self._not_matched_by_source:  # else every target row is needed
            from delta_pyds.spark.tables.merge_pruning import target_filter

            pruning = target_filter(self._condition, talias, scope.target_schema, self._source)
            if pruning == "FALSE":
                files = files.slice(0, 0)
            elif pruning is not None:
                files = self._rewriter.candidates(snap, pruning)
        scope.files_after_skipping = files.num_rows
        target = self._rewriter.scan(snap, files)
        if evolved is not None:  # rows already in the table: null in new columns and fields
            from delta_pyds.spark.tables.merge_evolution import to_schema

            target = to_schema(target, evolved, add_missing=True)
        scope.target = target.alias(talias)
        scope.cond = _expr(self._condition)

        def used(clauses):  # the conditions and set values of (kind, condition, set) clauses
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
        return scope

    def _evolved(self, snap: Snapshot):
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
            k.split(".")[-1].lower()
            for _, _, sets in list(self._matched) + list(self._not_matched_by_source)
            if sets
            for k in sets
        } | {k.split(".")[-1].lower() for _, values in self._not_matched if values for k in values}
        return evolved_schema(snap.schema, self._source, None if star else named)

    def _target_action(self, scope: _MergeScope):
        """A Spark column over the joined rows: 1 + the index of the first target-side
        clause that applies, 0 when none does."""
        from pyspark.sql import functions as F

        matched = F.col(_SRC).isNotNull()
        action = F.lit(0)
        for i in reversed(range(len(scope.clauses))):
            _, c, _, on_match = scope.clauses[i]
            base = matched if on_match else ~matched
            hit = base if c is None else (base & F.coalesce(_expr(c), F.lit(False)))
            action = F.when(hit, F.lit(i + 1)).otherwise(action)
        return action

    def _touched_files(self, scope: _MergeScope, action) -> list:
        """The target files holding a row some target-side clause changes (one Spark job,
        which also refuses a source where several rows match one target row, unless the
        only matched clause is an unconditional delete)."""
        from pyspark.sql import functions as F

        how = "left" if self._not_matched_by_source else "inner"
        acted = scope.target.join(scope.src, scope.cond, how).withColumn(_ACTION, action)
        per_row = acted.groupBy(scope.tfile().alias("__f"), F.col(f"`{scope.talias}`.{SCAN_ROW}")).agg(
            F.count(F.col(_SRC)).alias("__matches"), F.max(F.col(_ACTION)).alias("__act")
        )
        per_file = per_row.groupBy("__f").agg(F.max("__matches").alias("__matches"), F.max("__act").alias("__act"))
        rows = per_file.where("__matches > 1 OR __act > 0").collect()
        if not scope.delete_all_matched and any(r["__matches"] > 1 for r in rows):
            raise DeltaError(
                "merge: several source rows matched the same target row and could change it in "
                "conflicting ways (delta-spark: DELTA_MULTIPLE_SOURCE_ROW_MATCHING_TARGET_ROW_IN_"
                "MERGE); deduplicate the source, or make the only whenMatched clause an "
                "unconditional whenMatchedDelete()"
            )
        return [r["__f"] for r in rows if r["__act"] > 0]

    def _apply_target_clauses(
        self, scope: _MergeScope, action, touched: list, metrics: dict, parts: list, changes: list
    ) -> None:
        """The rows of the touched files after the target-side clauses (appended to
        ``parts``), their change data (to ``changes``) and counts (into ``metrics``)."""
        from pyspark.sql import functions as F

        clauses, tracking = scope.clauses, scope.tracking
        dv = writes_dvs(scope.snap)
        # with deletion vectors only the rows a clause changes matter: matched rows need an
        # inner join (a left join only for whenNotMatchedBySource clauses)
        how = "inner" if dv and not self._not_matched_by_source else "left"
        joined = (
            scope.target.where(scope.tfile().isin(touched)).join(scope.src, scope.cond, how).withColumn(_ACTION, action)
        )
        if scope.delete_all_matched:  # one row per target row, however many source rows matched it
            joined = joined.dropDuplicates([SCAN_FILE, SCAN_ROW])
        if dv:  # the changed rows, computed once: counted, marked and written from the same rows
            joined = joined.where(F.col(_ACTION) > 0).localCheckpoint()
        tcol = scope.tcol()
        cols = []
        for f in scope.target_schema.fields:
            value = tcol[f.name]
            for i in reversed(range(len(clauses))):
                kind, _, sets, on_match = clauses[i]
                if kind != "update":
                    continue
                if sets is None:
                    if f.name in scope.generated_always or (
                        f.name in scope.identities and f.name.lower() not in scope.src_cols
                    ):
                        continue  # updateAll keeps the values the table generated
                    if self._evolve and f.name.lower() not in scope.src_cols:
                        continue  # schema evolution: a column the source lacks is kept
                    new = scope.source_col(f.name)
                else:
                    given = set_columns(scope.target_schema, sets, tcol.get, what="merge", alias=scope.talias)
                    if f.name not in given:
                        continue
                    new = given[f.name]
                value = F.when(F.col(_ACTION) == i + 1, new).otherwise(value)
            cols.append(value.cast(f.dataType).alias(f.name))
        deletes = [i + 1 for i, c in enumerate(clauses) if c[0] == "delete"]
        updates = [i + 1 for i, c in enumerate(clauses) if c[0] == "update"]
        counts = {r[0]: r[1] for r in joined.groupBy(_ACTION).count().collect()}
        for i, (kind, _, _, on_match) in enumerate(clauses):
            key = ("numTargetRowsMatched" if on_match else "numTargetRowsNotMatchedBySource") + (
                "Deleted" if kind == "delete" else "Updated"
            )
            metrics[key] += counts.get(i + 1, 0)
            metrics["numTargetRowsDeleted" if kind == "delete" else "numTargetRowsUpdated"] += counts.get(i + 1, 0)
        if dv:  # changed rows are marked deleted; only updated rows are written
            scope.marked = joined
            kept = joined.where(F.col(_ACTION).isin(updates))
        else:
            kept = joined.where(~F.col(_ACTION).isin(deletes)) if deletes else joined
        if tracking:  # row ids kept; updated rows take the commit's version
            parts.append(
                kept.select(
                    *cols,
                    F.col(SCAN_ROW_ID).alias(tracking[0]),
                    F.when(F.col(_ACTION).isin(updates), F.lit(None).cast("long"))
                    .otherwise(F.col(SCAN_ROW_VERSION))
                    .alias(tracking[1]),
                )
            )
        else:
            parts.append(kept.select(*cols))
        if updates:
            upd = joined.where(F.col(_ACTION).isin(updates))
            changes.append(upd.select(*tcol.values(), F.lit("update_preimage").alias(CHANGE_TYPE)))
            changes.append(upd.select(*cols, F.lit("update_postimage").alias(CHANGE_TYPE)))
        if deletes:
            changes.append(
                joined.where(F.col(_ACTION).isin(deletes)).select(*tcol.values(), F.lit("delete").alias(CHANGE_TYPE))
            )

    def _insert_rows(self, scope: _MergeScope, metrics: dict, parts: list, changes: list) -> dict:
        """The source rows no target row matches, after the insert clauses (appended to
        ``parts`` and ``changes``, counted into ``metrics``); returns the identity
        high-water marks they need."""
        from pyspark.sql import functions as F

        anti = scope.src.join(scope.target, scope.cond, "left_anti")
        action = F.lit(0)
        for i in reversed(range(len(self._not_matched))):
            c, _ = self._not_matched[i]
            hit = F.lit(True) if c is None else F.coalesce(_expr(c), F.lit(False))
            action = F.when(hit, F.lit(i + 1)).otherwise(action)
        anti = anti.withColumn(_ACTION, action).where(f"{_ACTION} > 0")
        cols = []
        for f in scope.target_schema.fields:
            value = F.lit(None)
            for i in reversed(range(len(self._not_matched))):
                _, values = self._not_matched[i]
                if values is None:
                    if f.name in scope.identities and f.name.lower() not in scope.src_cols:
                        continue  # generated below
                    if self._evolve and f.name.lower() not in scope.src_cols:
                        continue  # schema evolution: a column the source lacks is null
                    new = scope.source_col(f.name)
                else:
                    given = {scope.target_name(k): v for k, v in values.items()}
                    if f.name not in given:
                        continue
                    new = _expr(given[f.name])
                value = F.when(F.col(_ACTION) == i + 1, new).otherwise(value)
            cols.append(value.cast(f.dataType).alias(f.name))
        inserts = anti.select(*cols)
        marks: dict = {}
        if scope.identities:
            inserts, marks = self._generate_identity(inserts, scope.identities, scope.src_cols, scope.target_name)
        metrics["numTargetRowsInserted"] = inserts.count()
        if metrics["numTargetRowsInserted"]:
            parts.append(inserts.select("*", *[F.lit(None).cast("long").alias(n) for n in scope.tracking or ()]))
            changes.append(inserts.withColumn(CHANGE_TYPE, F.lit("insert")))
        return marks

    def _write_and_commit(
        self, scope: _MergeScope, parts: list, changes: list, touched: list, marks: dict, metrics: dict
    ) -> None:
        """Writes the new files (and change data files) and commits them with the removal
        of the touched files; deletes what it wrote if the commit fails."""
        from delta_pyds.table.state import file_actions
        from delta_pyds.transaction.commit import (
            Transaction,
            delete_files,
            remove_actions,
        )

        rw, snap = self._rewriter, scope.snap
        out = parts[0]
        for p in parts[1:]:
            out = out.unionByName(p)
        txn = Transaction(rw.storage, snap)
        metadata = snap.metadata
        evolved = scope.evolved
        if evolved is not None:  # planned once: new columns keep one physical name everywhere
            new_metadata, new_protocol = rw.evolution(snap, evolved)
            metadata = new_metadata or metadata
            evolved = parse_schema(metadata.schema_string)
            if new_protocol is not None:
                txn.update_protocol(new_protocol)
            txn.update_metadata(metadata)
        adds = rw.rewrite(out, rw.write_spec(snap, row_tracking=True, evolved_schema=evolved), True)
        written = list(adds)
        marked = with_high_water_marks(parse_schema(metadata.schema_string), marks)
        if marked is not None:
            txn.update_metadata(replace(metadata, schema_string=marked.json()))
        try:
            if rw.writes_changes(snap) and changes:
                change_df = changes[0]
                for c in changes[1:]:
                    change_df = change_df.unionByName(c)
                cdcs = rw.write_changes(snap, change_df, evolved_schema=evolved)
                written += cdcs
                txn.add_cdc_files(cdcs)
            record_read(txn, snap, self._condition, snap.files, alias=scope.talias)
            active = file_actions(snap).active
            if scope.marked is not None:
                from pyspark.sql import functions as F

                old, bitmaps = dv_hits(scope.marked, F.lit(True), active)
                dv = stage_dv_marks(rw.storage, txn, old, bitmaps, inline_max_bytes=rw.inline_dv_limit())
                metrics.update(
                    numTargetFilesRemoved=dv.files_removed,
                    numTargetRowsCopied=0,
                    numTargetDeletionVectorsAdded=dv.vectors_added,
                    numTargetDeletionVectorsUpdated=dv.vectors_updated,
                    numTargetDeletionVectorsRemoved=dv.files_removed,
                )
            else:
                victims = rows_for_paths(active, touched)
                txn.remove_files(remove_actions(victims))
                metrics.update(numTargetFilesRemoved=victims.num_rows)
            txn.add_files(adds)
            metrics.update(numTargetFilesAdded=len(adds))
            txn.commit(
                "MERGE",
                {
                    "predicate": json.dumps([str(self._condition)]),
                    "matchedPredicates": json.dumps([{"actionType": k} for k, _, _ in self._matched]),
                    "notMatchedPredicates": json.dumps([{"actionType": "insert"} for _ in self._not_matched]),
                    "notMatchedBySourcePredicates": json.dumps(
                        [{"actionType": k} for k, _, _ in self._not_matched_by_source]
                    ),
                },
                metrics=metrics,
            )
        except BaseException:
            delete_files(rw.storage, written)
            raise

    def _generate_identity(self, inserts, identities: dict, src_cols: dict, target_name):
        """Inserted rows with values generated for the identity columns no insert clause
        sets (the same numbering as :mod:`delta_pyds.protocol.identity`: ``monotonically_increasing_id``
        spaces partitions by 2**33), pinned with a local checkpoint so the data and change
        files see the same values; returns them and the extreme value per column."""
        from pyspark.sql import functions as F

        generate = []
        for name, col in identities.items():
            gives = [
                (name.lower() in src_cols) if values is None else name in {target_name(k) for k in values}
                for _, values in self._not_matched
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
        if not generate:
            return inserts, {}
        k = "__pydelta_identity_k"
        out = inserts.withColumn(k, F.monotonically_increasing_id())
        for col in generate:
            dtype = dict(out.dtypes)[col.name]
            out = out.withColumn(
                col.name, ((F.lit(col.first_k) + F.col(k)) * F.lit(col.step) + F.lit(col.start)).cast(dtype)
            )
        out = out.localCheckpoint()
        top = out.agg(F.max(k)).collect()[0][0]
        if top is None:
            return out.drop(k), {}
        marks = {}
        for col in generate:  # the largest k holds the extreme value
            last = col.value(col.first_k + top)
            if not -(1 << 63) <= last < (1 << 63):
                raise ValueError(f"merge: identity column {col.name} would overflow a long ({last})")
            marks[col.name] = last
        return out.drop(k), marks
