"""What a DML operation read, recorded on its transaction for conflict detection as
delta-spark does.

Guarantees: the files read are recorded (a concurrent remove of one conflicts) and so
are the partitions the condition selects (a concurrent add there, other than a blind
append, conflicts). Only top-level conjuncts of a SQL condition over partition columns
narrow the partitions; anything else (a Column condition, a conjunct that cannot be
parsed or evaluated, a partition value the predicate cannot evaluate) counts as reading
every partition — never fewer than were read. No Spark."""

from __future__ import annotations

import pyarrow as pa

from delta_pyds.errors import ExpressionError
from delta_pyds.expressions.ast import Call, Col, Node, columns_of, resolve_alias
from delta_pyds.expressions.lexer import DEFAULT_DIALECT, Dialect
from delta_pyds.expressions.parser import parse_expression
from delta_pyds.table.snapshot import Snapshot
from delta_pyds.transaction.commit import Transaction
from delta_pyds.write.partition_match import partition_predicate


def record_read(
    txn: Transaction,
    snap: Snapshot,
    condition: object,
    files: pa.Table,
    *,
    alias: str | None = None,
    bare_columns: bool = False,
    dialect: Dialect | None = DEFAULT_DIALECT,
) -> None:
    """Records what a DML operation read, for conflict detection as delta-spark does:
    the files it read (a concurrent remove of one conflicts) and the partitions its
    condition selects (a concurrent add there, other than a blind append, conflicts);
    without a partition conjunct in ``condition`` that is every partition. ``alias``,
    ``bare_columns`` and ``dialect``: see :func:`partition_conjuncts`."""
    node = partition_conjuncts(condition, snap, alias, bare_columns=bare_columns, dialect=dialect)
    if node is None:
        txn.read_files(files.column("path").to_pylist())
        txn.read_partitions(
            lambda values: [True] * len(values),
            "the whole table" if condition is None else f"the rows matching {condition}",
        )
        return
    pred = partition_predicate(node, snap.schema, snap.partition_columns, snap.column_mapping_mode)

    def conservative(values: list[dict]) -> list[bool]:
        try:
            return pred(values)
        except Exception:  # a value the predicate cannot evaluate: assume it was read
            return [True] * len(values)

    read = conservative(files.column("partition_values").to_pylist()) if files.num_rows else []
    txn.read_files(p for p, r in zip(files.column("path").to_pylist(), read) if r)
    txn.read_partitions(conservative, f"the partitions matching {condition}")


def partition_conjuncts(
    condition: object,
    snap: Snapshot,
    alias: str | None = None,
    *,
    bare_columns: bool = False,
    dialect: Dialect | None = DEFAULT_DIALECT,
) -> Node | None:
    """The AND of the top-level conjuncts of a SQL ``condition`` that reference only
    partition columns, as an expression over the bare column names; None when there is none.
    ``alias`` given: the table's columns are qualified by it (``alias.col``, MERGE's target,
    where a bare name may be the source's), or, with ``bare_columns`` (DELETE / UPDATE on an
    aliased table: every column is the table's), may be, resolved as Spark resolves them
    (:func:`~delta_pyds.expressions.ast.resolve_alias`: an uncertain reading gives None). The
    text is read as Spark reads it under ``dialect`` (the session's); None (unknown) gives None."""
    if not isinstance(condition, str) or not snap.partition_columns or dialect is None:
        return None
    try:
        node = parse_expression(condition, dialect)
    except (ExpressionError, ValueError):
        return None
    if alias is not None and bare_columns:
        resolved = resolve_alias(node, alias, (f.name for f in snap.schema.fields))
        if resolved is None:
            return None
        node, alias = resolved, None
    pcols = {c.lower(): c for c in snap.partition_columns}
    kept = []
    for c in _conjuncts(node):
        try:
            kept.append(_over_partition_columns(c, pcols, alias))
        except LookupError:
            continue
    if not kept:
        return None
    out = kept[0]
    for c in kept[1:]:
        out = Call("and", (out, c))
    return out


def _over_partition_columns(n: Node, pcols: dict[str, str], alias: str | None) -> Node:
    """``n`` over the bare partition column names (``alias.col`` when ``alias``); LookupError
    when it references anything else."""
    if isinstance(n, Col):
        path = n.path
        if alias is not None:
            if len(path) != 2 or path[0].lower() != alias.lower():
                raise LookupError(path)
            path = path[1:]
        if len(path) != 1 or path[0].lower() not in pcols:
            raise LookupError(path)
        return Col((pcols[path[0].lower()],))
    if isinstance(n, Call):
        return Call(n.name, tuple(_over_partition_columns(a, pcols, alias) for a in n.args))
    if columns_of(n):  # casts, CASE: kept only without column references
        raise LookupError(n)
    return n


def _conjuncts(n: Node) -> list[Node]:
    if isinstance(n, Call) and n.name == "and":
        return [c for a in n.args for c in _conjuncts(a)]
    return [n]
