"""The commands behind ``DeltaTable`` and Delta's SQL: DELETE (:mod:`~delta_pyds.spark.commands.delete`),
UPDATE (:mod:`~delta_pyds.spark.commands.update`), MERGE (:mod:`~delta_pyds.spark.commands.merge`),
OPTIMIZE (:mod:`~delta_pyds.spark.commands.optimize`), VACUUM / CONVERT / GENERATE / table features
(:mod:`~delta_pyds.spark.commands.maintenance`), ``CREATE TABLE ... AS SELECT``
(:mod:`~delta_pyds.spark.commands.create_as_select`), on the rewriting machinery of
:mod:`~delta_pyds.spark.commands.rewriter`; auto compaction is one post-commit hook
(:func:`~delta_pyds.spark.commands.auto_compaction.after_commit`).

Guarantees: DELETE (:func:`~delta_pyds.spark.commands.delete.delete_rows`), UPDATE
(:func:`~delta_pyds.spark.commands.update.update_rows`) and MERGE
(:func:`~delta_pyds.spark.commands.merge.commit.commit_merge`, through
``DeltaMergeBuilder.execute``) hand back the commit they made, or ``None`` when they committed
nothing, and keep no commit of their own; OPTIMIZE and the maintenance calls return what
delta-spark's API returns (a metrics DataFrame, the table, None). No command imports the
``DeltaTable`` facade (:mod:`delta_pyds.spark.tables`), which sits above this room (an import
contract)."""
