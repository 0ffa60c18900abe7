"""The commands behind ``DeltaTable`` and Delta's SQL: DELETE (:mod:`~delta_pyds.spark.commands.delete`),
UPDATE (:mod:`~delta_pyds.spark.commands.update`), MERGE (:mod:`~delta_pyds.spark.commands.merge`),
OPTIMIZE (:mod:`~delta_pyds.spark.commands.optimize`), VACUUM / CONVERT / GENERATE / table features
(:mod:`~delta_pyds.spark.commands.maintenance`), ``CREATE TABLE ... AS SELECT``
(:mod:`~delta_pyds.spark.commands.create_as_select`), on the rewriting machinery of
:mod:`~delta_pyds.spark.commands.rewriter`; auto compaction is one post-commit hook
(:func:`~delta_pyds.spark.commands.auto_compaction.after_commit`).

Guarantees: each command returns the commit it made (or ``None`` when it committed nothing); no
command imports the ``DeltaTable`` facade (:mod:`delta_pyds.spark.tables`), which sits above this
room (an import contract)."""
