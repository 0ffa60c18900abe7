"""What a MERGE reports: :class:`MergeOutcome` (what phase 1 found, or the insert-only
executor's stand-in), delta-spark's MERGE row metrics from it (:func:`row_metrics`) and
delta-spark's MERGE operation parameters (:func:`operation_parameters`).

Guarantees: the metric names are delta-spark's (``numTargetRowsMatchedUpdated``, ...;
``numTargetFilesBeforeSkipping`` / ``AfterSkipping`` from the plan); a clause's rows count
once per target row; the parameters' clause lists are delta-spark's ``MergePredicate`` JSON
(the predicate left out of a clause without a condition, compact as Jackson writes it)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from delta_pyds.spark.commands.merge.clauses import MergeClause
from delta_pyds.spark.commands.merge.plan import MergePlan


@dataclass(frozen=True)
class MergeOutcome:
    """What phase 1 found, from one Spark job (or, for an insert-only merge, what is known
    without one)."""

    touched: list[str]  # target files holding a row a target-side clause changes
    counts: dict[int, int]  # action number -> rows taking it (target rows counted once)
    several_matches: bool  # some target row is matched by several source rows
    top_k: int | None  # the largest source row number of an inserted row (identity values)
    matched_pairs: int  # (target row, source row) pairs the condition matches
    inserts_counted: bool  # counts holds the inserted rows (else the write counts them)
    source_rows: int = 0  # the source's rows (delta-spark's numSourceRows)
    changed: dict[str, bytes] | None = None  # with deletion vectors: file -> serialized bitmap of its changed rows
    matched_ids: list[int] | None = None  # the matched source rows' numbers, when at most probe.LITERAL_IDS
    matched_sources: int | None = None  # distinct matched source rows, when every task sent their numbers


def row_metrics(plan: MergePlan, counts: dict[int, int]) -> dict[str, int]:
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
        "numTargetFilesBeforeSkipping": plan.snap.files.num_rows,
        "numTargetFilesAfterSkipping": plan.files_after_skipping,
    }
    for i, clause in enumerate(plan.clauses):
        key = ("numTargetRowsMatched" if clause.when == "matched" else "numTargetRowsNotMatchedBySource") + (
            "Deleted" if clause.action == "delete" else "Updated"
        )
        metrics[key] += counts.get(i + 1, 0)
        metrics["numTargetRowsDeleted" if clause.action == "delete" else "numTargetRowsUpdated"] += counts.get(i + 1, 0)
    n = len(plan.clauses)
    metrics["numTargetRowsInserted"] = sum(counts.get(n + 1 + j, 0) for j in range(len(plan.inserts)))
    return metrics


def operation_parameters(plan: MergePlan) -> dict[str, str]:
    """delta-spark's MERGE operation parameters."""

    def of(when: str) -> list[MergeClause]:
        return [c for c in (*plan.clauses, *plan.inserts) if c.when == when]

    return {
        "predicate": json.dumps([str(plan.condition)]),
        "matchedPredicates": clauses_json(of("matched")),
        "notMatchedPredicates": clauses_json(of("not_matched")),
        "notMatchedBySourcePredicates": clauses_json(of("not_matched_by_source")),
    }


def clauses_json(clauses: Sequence[MergeClause]) -> str:
    """delta-spark's ``MergePredicate`` list: per clause ``{"predicate": ..., "actionType": ...}``,
    the predicate left out when the clause has no condition (as its JSON writer leaves out
    ``None``), compact as Jackson writes it; a condition as given (a ``Column`` as pyspark
    prints it)."""
    out = [
        ({"predicate": str(c.condition)} if c.condition is not None else {}) | {"actionType": c.action} for c in clauses
    ]
    return json.dumps(out, separators=(",", ":"))
