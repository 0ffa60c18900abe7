"""What a scan of a table would read, without Spark: the observable side of skipping.

``explain_scan(path, predicates)`` loads the table, applies the same partition and
statistics pruning the ``pydelta`` reader applies (the read core,
:func:`delta_pyds.read.scan_plan.plan_scan`) to Spark's filters, and returns a
:class:`ScanExplanation` with the files kept, the skipping report (how many files were
pruned by partition values and by statistics) and the number of Spark tasks the reader
would plan.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from delta_pyds.read.scan import DEFAULT_MAX_PARTITION_BYTES, DEFAULT_OPEN_COST_BYTES, plan_partitions
from delta_pyds.read.scan_plan import plan_scan
from delta_pyds.skipping.files import SkippingReport
from delta_pyds.table.snapshot import Snapshot


@dataclass
class ScanExplanation:
    version: int
    files: pa.Table  # the files the scan reads (snapshot file table rows)
    report: SkippingReport
    tasks: int  # Spark input partitions

    @property
    def paths(self) -> list[str]:
        return self.files.column("path").to_pylist()

    def __str__(self) -> str:
        return f"version {self.version}: {self.report}; {self.tasks} task(s)"


def explain_scan(
    path: str,
    predicates: Sequence[Any] = (),
    *,
    version: int | None = None,
    timestamp: Any = None,
    storage_options: Mapping[str, str] | None = None,
    max_partition_bytes: int = DEFAULT_MAX_PARTITION_BYTES,
    open_cost: int = DEFAULT_OPEN_COST_BYTES,
    parallelism: int | None = None,
) -> ScanExplanation:
    """Explains the scan of ``path`` with ``predicates`` (see :mod:`delta_pyds.expressions.predicates`),
    e.g. ``explain_scan(path, [EqualTo("id", 5)])``."""
    snapshot = Snapshot.load(path, version=version, timestamp=timestamp, options=storage_options)
    scan = plan_scan(snapshot, predicates=predicates)
    files = scan.files
    report = scan.report or SkippingReport(files.num_rows, files.num_rows, 0, 0)
    tasks = plan_partitions(
        files,
        snapshot.physical_partition_columns,
        max_partition_bytes=max_partition_bytes,
        open_cost=open_cost,
        parallelism=parallelism,
    )
    return ScanExplanation(snapshot.version, files, report, max(1, len(tasks)))
