"""MERGE: ``DeltaMergeBuilder``, the clauses of ``DeltaTable.merge`` (:class:`MergeClause`) and
their execution (copy-on-write, or deletion vectors when the table enables them), cut as
delta-spark cuts ``MergeIntoCommand``: :mod:`.clauses` (one typed clause), :mod:`.builder`
(the ``when*`` methods, ``execute``), :mod:`.plan` (:class:`~.plan.MergePlan`, built once from
the clauses and the one snapshot read), :mod:`.evolution` (schema evolution), :mod:`.pruning`
(target file pruning, the pin policy), :mod:`.classic` (the two-phase executor; phase 1's
join in :mod:`.probe` and its one job in :mod:`.summary`), :mod:`.single_pass` (a small
copy-on-write merge's rewrite observing what phase 1 finds), :mod:`.insert_only` (the
insert-only executor), :mod:`.output` (actions, written values, the rows written),
:mod:`.commit` (write and commit) and :mod:`.metrics` (the outcome, metrics, parameters).

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
  values (:mod:`delta_pyds.spark.commands.merge.pruning`; ``numTargetFilesAfterSkipping``);
* the source is pinned once; the target's candidate rows are joined with it on the
  columns the conditions need to find the changed files, the counts and duplicate matches
  (phase 1), then only the changed files' rows are written with the inserted rows (phase 2,
  from phase 1's pinned rows with deletion vectors and for small targets, else the changed
  files read whole and joined again), as delta-spark's ``ClassicMergeExecutor``
  (:mod:`delta_pyds.spark.commands.merge.classic`; written and committed by
  :mod:`delta_pyds.spark.commands.merge.commit`); a merge with only insert clauses (and no
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
* ``withSchemaEvolution()`` (or the session conf
  ``spark.databricks.delta.schema.autoMerge.enabled=true``, as in delta-spark): source
  columns the table lacks are added to it (at the end,
  nullable, in the same commit) when ``updateAll`` / ``insertAll`` or a ``set`` / ``values``
  key names them, as delta-spark's schema evolution does for top-level columns; without
  it they are ignored by ``*All`` clauses and refused in ``set`` / ``values``;
* clause arguments are checked as delta-spark checks them (:mod:`delta_pyds.spark.commands.args`);
* one commit from the version read, reading every target file (a concurrent remove of
  one conflicts) and the partitions the condition's target-side partition conjuncts
  select; written files are deleted if the commit fails; ``execute()`` returns
  delta-spark's one-row DataFrame ``num_affected_rows, num_updated_rows,
  num_deleted_rows, num_inserted_rows`` (zeros, and no commit, when nothing changes).
"""

from delta_pyds.spark.commands.merge.builder import DeltaMergeBuilder
from delta_pyds.spark.commands.merge.clauses import MergeClause
from delta_pyds.spark.commands.merge.plan import DEFAULT_TARGET_ALIAS

__all__ = ["DEFAULT_TARGET_ALIAS", "DeltaMergeBuilder", "MergeClause"]
