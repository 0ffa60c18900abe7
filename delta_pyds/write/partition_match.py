"""Which files an overwrite by partition replaces: the partitions a predicate on
partition columns matches, or those in a set of partition values.

Guarantees: partition values are compared typed (:func:`partition_keys`: different
spellings of one value, as other engines write them — ``1.0E10`` and ``10000000000.0``, a
timestamp with or without ``T``/``Z``, ``""`` and null — give the same key); a predicate
on partition columns treats null as false. Pure functions over partition value dicts.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from delta_pyds.expressions.evaluator import evaluate_predicate
from delta_pyds.protocol.partition_values import parse_partition_values
from delta_pyds.protocol.schema import StructField, StructType


def partition_predicate(
    node: Any, schema: StructType, partition_columns: Sequence[str], mode: str
) -> Callable[[list[dict]], list[bool]]:
    """``predicate(list of partitionValues dicts) -> list of bool`` for a predicate on
    partition columns (null counts as false)."""
    fields = [schema.field(c) for c in partition_columns]

    def run(values: list[dict]) -> list[bool]:
        if not values:
            return []
        arrays = []
        for f in fields:
            phys = f.physical_name(mode)
            raw = pa.array([(v or {}).get(phys) for v in values], pa.string())
            arrays.append(parse_partition_values(raw, f.type, column=f.name))
        table = pa.table(arrays, names=[f.name for f in fields])
        return pc.fill_null(evaluate_predicate(node, table), False).to_pylist()

    return run


def partition_keys(values: list[dict], fields: list[StructField], physical: list[str]) -> list[tuple]:
    """The typed partition tuple of each ``partitionValues`` dict: different spellings of one
    value (``1.0E10`` and ``10000000000.0``, a timestamp with or without ``T``/``Z``, ``""`` and
    null) give the same key, so partitions written by other engines compare equal to ours."""
    if not values:
        return []
    columns = []
    for f, phys in zip(fields, physical):
        raw = pa.array([(v or {}).get(phys) for v in values], pa.string())
        typed = parse_partition_values(raw, f.type, column=f.name).to_pylist()
        columns.append(["NaN" if isinstance(x, float) and x != x else x for x in typed])
    return list(zip(*columns))


def partition_set_predicate(
    keys: set, fields: list[StructField], physical: list[str]
) -> Callable[[list[dict]], list[bool]]:
    def run(values: list[dict]) -> list[bool]:
        return [k in keys for k in partition_keys(values, fields, physical)]

    return run
