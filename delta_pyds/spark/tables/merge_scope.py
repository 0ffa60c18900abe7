"""What one MERGE execution shares between its steps (:class:`MergeScope`: the snapshot
read, the target's columns and scan, the source, the join condition, the clauses) and the
names of the internal columns the merge adds to its joined rows.

Guarantees: the internal column names start with ``__pydelta_`` (they never collide with a
user's column in practice and never reach a written file); :meth:`MergeScope.target_name`
resolves a user's column name case-insensitively or raises ``ValueError`` naming the
table's columns."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from delta_pyds.spark.tables.native_rows import SCAN_FILE
from delta_pyds.spark.tables.resolution import parse_column_path
from delta_pyds.table.snapshot import Snapshot

if TYPE_CHECKING:
    from pyspark.sql import Column

DEFAULT_TARGET_ALIAS = "__pydelta_target"
SRC = "__pydelta_src"  # a non-null column of the source: null on target rows no source row matches
ACTION = "__pydelta_action"  # which clause a joined row takes (see merge_rows.joined_rows)
MATCHED = "__pydelta_matched"  # the row pairs a target row with a source row
SRC_ID = "__pydelta_src_id"  # a unique number per source row (pinned with the source): inserts, identity values


@dataclass
class MergeScope:
    """What the steps of one MERGE execution share: the snapshot read, the target's
    columns and scan, the source, the join condition and the clauses."""

    snap: Snapshot
    tracking: tuple[str, str] | None
    identities: dict
    generated_always: set
    target_schema: Any  # Spark StructType of the target's columns
    src: Any  # the source DataFrame, with a non-null __pydelta_src column
    src_cols: dict  # lowercase -> source column name
    talias: str
    target: Any  # the target's scan of every candidate file, aliased
    cond: Any  # the join condition
    clauses: list  # (kind, condition, set, on_match): matched ones, then not-matched-by-source ones
    delete_all_matched: bool
    evolved: Any = None  # the table's Delta schema with the source's new columns (schema evolution)
    files_after_skipping: int = 0  # target files left by pruning (partitions, stats, source keys)
    inserts: tuple = ()  # (condition, values) of the whenNotMatched* clauses, in order
    evolve: bool = False  # withSchemaEvolution()
    by_source: bool = False  # a whenNotMatchedBySource* clause exists
    files: Any = None  # the candidate target files (pyarrow table of snapshot file rows) after pruning
    scan_target: Any = None  # files -> the target's rows of those files, aliased (phase 2's scan)
    source_rows: int | None = None  # the source's rows (numSourceRows), when a job counted them

    @property
    def insert_only(self) -> bool:
        """Only ``whenNotMatched*`` (insert) clauses: no target row changes (delta-spark's
        ``InsertOnlyMergeExecutor``: an anti-join and an append)."""
        return not self.clauses and bool(self.inserts)

    @property
    def names(self) -> list[str]:
        return [f.name for f in self.target_schema.fields]

    def target_name(self, k: str) -> str:
        lowered = {n.lower(): n for n in self.names}
        k2 = k if k.lower() in lowered else parse_column_path(k, "values")[-1]  # `a.b`, or t.a qualified
        if k2.lower() not in lowered:
            raise ValueError(f"merge: {k} is not a column of the table; columns: {', '.join(self.names)}")
        return lowered[k2.lower()]

    def source_col(self, n: str) -> Column:
        if n.lower() not in self.src_cols:
            raise ValueError(f"merge: updateAll/insertAll needs column {n} in the source")
        return self.src[self.src_cols[n.lower()]]

    def tcol(self) -> dict[str, Column]:
        from pyspark.sql import functions as F

        return {n: F.col(f"`{self.talias}`.`{n}`") for n in self.names}

    def tfile(self) -> Column:
        from pyspark.sql import functions as F

        return F.col(f"`{self.talias}`.{SCAN_FILE}")


@dataclass
class MergeOutcome:
    """What phase 1 found, from one Spark job."""

    touched: list  # target files holding a row a target-side clause changes
    counts: dict  # action number -> rows taking it (target rows counted once)
    several_matches: bool  # some target row is matched by several source rows
    top_k: int | None  # the largest source row number of an inserted row (identity values)
    matched_pairs: int  # (target row, source row) pairs the condition matches
    inserts_counted: bool  # counts holds the inserted rows (else the write counts them)
    source_rows: int = 0  # the source's rows (delta-spark's numSourceRows)
    changed: dict | None = None  # with deletion vectors: file -> serialized bitmap of its changed rows
    matched_ids: list | None = None  # the matched source rows' numbers, when at most merge_rows.LITERAL_IDS


def sql_expr(e: Any) -> Column:
    """A Spark Column for a condition or value given as SQL text or as a Column."""
    from pyspark.sql import functions as F

    return F.expr(e) if isinstance(e, str) else e
