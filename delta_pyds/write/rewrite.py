"""The write plan of a rewrite of a table's own rows (DELETE, UPDATE, MERGE, OPTIMIZE).

:func:`plan_rewrite` is the typed entry into :func:`~delta_pyds.write.plan.plan_write` for
operations that write rows they read from the table: no option strings, only what a
rewrite can vary (the target file size, schema evolution).

Guarantees:

* the plan is an append to the table ``storage`` holds, planned with the same rules as
  every write (protocol check, constraints, generated columns, column mapping,
  partitioning, statistics columns, compression from the table's properties);
* the written schema is the table's (or ``schema`` with ``evolve_schema``: the table's
  plus new columns, reconciled as ``mergeSchema`` reconciles them) without ``void``
  columns, which files never hold;
* the rows' own identity column values are kept (they were generated before);
* the table's storage options never reach the write's options: a storage option cannot
  change how the rewrite writes files.
"""

from __future__ import annotations

from delta_pyds.protocol.schema import StructType, without_void_columns
from delta_pyds.storage.store import Storage
from delta_pyds.table.snapshot import Snapshot
from delta_pyds.write.options import WriteOptions
from delta_pyds.write.plan import WritePlan, plan_write


def plan_rewrite(
    storage: Storage,
    schema: StructType,
    *,
    target_file_size: int | None = None,
    evolve_schema: bool = False,
    snapshot: Snapshot | None = None,
    spark_sql_rules: bool = False,
) -> WritePlan:
    """The plan of writing rows of the table at ``storage`` (with ``schema``: the table's,
    or with ``evolve_schema`` the table's plus new columns) as new files of about
    ``target_file_size`` bytes (None or 0: the write path's default); ``snapshot``: the
    table's state the rows were read from (None: the latest). ``spark_sql_rules``: Spark's
    writer checks the rules (see :func:`~delta_pyds.write.plan.plan_write`)."""
    opts = WriteOptions(
        path=storage.root,
        overwrite=False,
        save_mode="append",
        merge_schema=evolve_schema,
        target_file_size=target_file_size or None,
    )
    return plan_write(
        opts,
        without_void_columns(schema),
        storage=storage,
        keep_identity_values=True,
        snapshot=snapshot,
        spark_sql_rules=spark_sql_rules,
    )
