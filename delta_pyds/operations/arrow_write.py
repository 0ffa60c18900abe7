"""Writing Arrow data into a Delta table without Spark, followed by auto compaction.

Guarantees:

* :func:`write_arrow` writes and commits exactly as :func:`delta_pyds.write.plan.commit_arrow`
  does (one task, one commit, the ``pydelta`` write options) and returns that commit;
* then, when the write's options (``spark.databricks.delta.autoCompact.*``, the names of
  delta-spark's session confs: there is no session here) or else the table's properties
  (``delta.autoOptimize.autoCompact``) turn auto compaction on, it runs
  :func:`delta_pyds.operations.auto_compact.auto_compact` after that commit: the partitions
  the write added files to are compacted with pyarrow in this process, as an ``OPTIMIZE``
  commit of its own with ``auto: true``; it never fails nor undoes the write (a lost race
  is logged and loses no row); tables that need Spark for a rewrite (row tracking,
  clustering) are left as they are;
* an auto compaction option with a bad value raises :class:`~delta_pyds.errors.SettingValueError`
  before anything is written. No Spark.
"""

from __future__ import annotations

import pyarrow as pa

from delta_pyds.operations.auto_compact import compact_after_commit, option_settings
from delta_pyds.storage.store import Storage
from delta_pyds.transaction.commit import CommitResult
from delta_pyds.write import plan as write_plan
from delta_pyds.write.options import WriteOptions


def write_arrow(
    path: str,
    data: pa.Table | pa.RecordBatch | pa.RecordBatchReader,
    *,
    mode: str = "append",
    options: dict | None = None,
) -> CommitResult | None:
    """Writes an Arrow table (a record batch, or a reader streaming batches) into a Delta
    table without Spark (see :func:`delta_pyds.write.plan.commit_arrow`), then auto compacts
    as the module docstring says. Returns the write's commit (None when the plan says to skip)."""
    opts = WriteOptions.parse({**(options or {}), "path": path}, overwrite=mode == "overwrite")
    settings = option_settings(opts.auto_compact)
    result = write_plan.commit_arrow(path, data, mode=mode, options=options)
    if result is not None and not result.skipped:
        storage = Storage(opts.path, opts.storage_options, allow_unsafe_commits=opts.allow_unsafe_commits)
        compact_after_commit(storage, result, settings)
    return result
