"""What every written row must satisfy: CHAR/VARCHAR lengths, NOT NULL columns, column
invariants, CHECK constraints, generated columns, and a ``replaceWhere`` predicate — enforced on the
executors, batch by batch, before a row reaches a data file.

Where and how: ``df.write.format("pydelta")`` never hands the source a DataFrame, only
Arrow batches on the executors, so expressions are evaluated there with
:mod:`delta_pyds.expressions.evaluator` (a Spark SQL subset over Arrow, in UTC). A write fails —
and the table stays unchanged, since nothing is committed — as soon as one row
violates a rule; the error names the rule, its expression and the offending values.

Guarantees: :func:`build_checks` runs on the driver before any data is written and
refuses (``UnsupportedFeatureError``) a table whose constraint or generation
expression the evaluator cannot handle, naming it (identity columns are filled before
these rules run: :mod:`delta_pyds.protocol.identity`).
Generated columns missing from the DataFrame are computed; provided ones must equal
the expression (``<=>``), as the protocol requires. Columns with a default value
(``CURRENT_DEFAULT``, the allowColumnDefaults feature) that the DataFrame lacks get
the default, evaluated per batch (a default the evaluator cannot handle refuses only
writes that omit the column). CHAR(n) / VARCHAR(n) columns get Spark's write-side check first
(:func:`delta_pyds.protocol.char_varchar.enforce`: CHAR padded, a longer value refused with
``EXCEED_LIMIT_LENGTH``), so the other rules see the values as stored.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from delta_pyds.errors import ConstraintViolationError, ExpressionError, OptionValueError, UnsupportedFeatureError
from delta_pyds.expressions.ast import Node, columns_of
from delta_pyds.expressions.evaluator import evaluate_predicate, evaluate_value, resolve_column
from delta_pyds.expressions.parser import parse_expression
from delta_pyds.protocol.char_varchar import Declared, declared_limits, enforce
from delta_pyds.protocol.schema import DataType, StructField, StructType
from delta_pyds.protocol.table_properties import constraints_of

GENERATION_EXPRESSION = "delta.generationExpression"
INVARIANTS = "delta.invariants"
CURRENT_DEFAULT = "CURRENT_DEFAULT"


@dataclass(frozen=True)
class _Rule:
    kind: str  # check | invariant | generated | replaceWhere
    name: str
    text: str
    node: Node | None  # None: checked by Spark SQL, outside the core's subset
    columns: tuple  # referenced column paths, for error messages


@dataclass
class WriteChecks:
    """Rules for the rows of one write (pickled into each task)."""

    not_null: tuple = ()  # (path,...) of non-nullable fields (nested: checked where the parent is set)
    rules: tuple = ()  # _Rule
    generated: tuple = ()  # (column name, _Rule, provided by the DataFrame?): defaults, then generated
    declared: tuple[Declared, ...] = ()  # top-level CHAR(n) / VARCHAR(n) columns

    def __bool__(self) -> bool:
        return bool(self.not_null or self.rules or self.generated or self.declared)

    def spark_only(self) -> list[str]:
        """The rules only Spark SQL evaluates (outside the core's subset), described:
        :meth:`apply` cannot check them."""
        rules = list(self.rules) + [rule for _, rule, _ in self.generated]
        return [_WHAT[r.kind].format(r.name) + f" ({r.text})" for r in rules if r.node is None and r.kind in _WHAT]

    def apply(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        """Pads and checks CHAR/VARCHAR values, fills defaults of missing columns and generated
        columns, then raises ConstraintViolationError on the first bad row."""
        for d in self.declared:
            idx = batch.schema.get_field_index(d.column)
            batch = batch.set_column(idx, batch.schema.field(idx), enforce(batch.column(idx), d))
        for name, rule, provided in self.generated:
            idx = batch.schema.get_field_index(name)
            target = batch.schema.field(idx).type
            try:
                value = evaluate_value(rule.node, batch, target)
            except ExpressionError as exc:
                raise ConstraintViolationError(f"cannot compute generated column {name} = {rule.text}: {exc}") from None
            if provided:
                current = batch.column(idx)
                same = pc.or_(
                    pc.fill_null(pc.equal(current, value), False), pc.and_(pc.is_null(current), pc.is_null(value))
                )
                if not pc.all(same, min_count=0).as_py():
                    row = pc.index(same, False).as_py()
                    raise ConstraintViolationError(
                        f"generated column {name} must equal {rule.text}, but a row has {name} = "
                        f"{current[row].as_py()!r} where the expression gives {value[row].as_py()!r}"
                        + _row_text(batch, rule.columns, row)
                    )
            else:
                batch = batch.set_column(idx, batch.schema.field(idx), value)
        for path in self.not_null:
            arr, parent_valid = _leaf(batch, path)
            if arr.null_count:
                bad = pc.is_null(arr)
                if parent_valid is not None:
                    bad = pc.and_(bad, parent_valid)
                if pc.any(bad).as_py():
                    raise ConstraintViolationError(f"NOT NULL constraint violated for column: {'.'.join(path)}")
        for rule in self.rules:
            try:
                ok = evaluate_predicate(rule.node, batch)
            except ExpressionError as exc:
                raise ConstraintViolationError(f"cannot evaluate {describe_rule(rule)}: {exc}") from None
            good = pc.fill_null(ok, False)
            if not pc.all(good, min_count=0).as_py():
                row = pc.index(good, False).as_py()
                raise ConstraintViolationError(
                    f"{describe_rule(rule)} violated by row with values:"
                    + _row_text(batch, rule.columns, row, bullet=True)
                )
        return batch


def describe_rule(rule: _Rule) -> str:
    """How an error names a row rule (CHECK constraint, invariant, replaceWhere)."""
    if rule.kind == "check":
        return f"CHECK constraint {rule.name} ({rule.text})"
    if rule.kind == "invariant":
        return f"invariant on column {rule.name} ({rule.text})"
    return (
        f"replaceWhere predicate ({rule.text}): the written data does not match it "
        "(every written row must satisfy the predicate of a partial overwrite);"
    )


def _leaf(batch: pa.RecordBatch, path: tuple[str, ...]) -> tuple[pa.Array, pa.Array | None]:
    arr = batch.column(batch.schema.get_field_index(path[0]))
    parent_valid = None
    for name in path[1:]:
        valid = pc.is_valid(arr)
        parent_valid = valid if parent_valid is None else pc.and_(parent_valid, valid)
        arr = pc.struct_field(arr, [arr.type.get_field_index(name)])
    return arr, parent_valid


def _row_text(batch: pa.RecordBatch, columns: Sequence[tuple[str, ...]], row: int, bullet: bool = False) -> str:
    parts = []
    for path in columns:
        try:
            value = resolve_column(batch, path)[row].as_py()
        except Exception:  # pragma: no cover - best effort
            continue
        parts.append(f"{'.'.join(path)} : {value!r}")
    if not parts:
        return ""
    if bullet:
        return "".join(f"\n - {p}" for p in parts)
    return " (" + ", ".join(parts) + ")"


# ------------------------------------------------------------------------ planning
def _compile(
    kind: str, name: str, text: str, empty: pa.Table, table_feature: str, spark_sql: bool = False, hint: str = ""
) -> _Rule:
    try:
        node = parse_expression(text)
        evaluate_predicate(node, empty) if kind not in ("generated", "default") else None
    except ExpressionError as exc:
        if kind == "replaceWhere":
            raise OptionValueError(f"option replaceWhere: {exc}") from None
        if spark_sql:  # Spark evaluates it: only the referenced columns (for messages) are wanted
            return _Rule(kind, name, text, None, _columns_if_parsed(text))
        raise UnsupportedFeatureError(
            f"cannot write to this table: {_WHAT[kind].format(name)} ({text}) cannot be evaluated by delta_pyds: "
            f"{exc}{hint}",
            (table_feature,),
        ) from None
    return _Rule(kind, name, text, node, tuple(sorted(columns_of(node))))


def _columns_if_parsed(text: str) -> tuple:
    try:
        return tuple(sorted(columns_of(parse_expression(text))))
    except ExpressionError:
        return ()


_WHAT = {
    "check": "CHECK constraint {}",
    "invariant": "the invariant of column {}",
    "generated": "the generation expression of column {}",
    "default": "the default value of column {}",
}


def _value_rule(
    kind: str,
    name: str,
    text: str,
    arrow_schema: pa.Schema,
    table_feature: str,
    hint: str = "",
    spark_sql: bool = False,
) -> _Rule:
    """A rule whose value fills column ``name``: parsed, and tried on an empty batch."""
    empty = arrow_schema.empty_table()
    rule = _compile(kind, name, text, empty, table_feature, spark_sql, hint)
    if rule.node is None:
        return rule
    try:
        evaluate_value(rule.node, empty, arrow_schema.field(name).type)
    except ExpressionError as exc:
        if spark_sql:
            return _Rule(kind, name, text, None, rule.columns)
        raise UnsupportedFeatureError(
            f"cannot write to this table: {_WHAT[kind].format(name)} ({rule.text}) cannot be evaluated "
            f"by delta_pyds: {exc}{hint}",
            (table_feature,),
        ) from None
    return rule


def build_checks(
    schema: StructType,
    configuration: Mapping[str, str],
    input_columns: Sequence[str],
    *,
    replace_where: str | None = None,
    logical_schema: pa.Schema | None = None,
    spark_sql: bool = False,
) -> WriteChecks:
    """The rules for a write of a DataFrame with ``input_columns`` into ``schema``.

    ``spark_sql``: Spark SQL will evaluate the rules (the native writer), so an expression
    outside this package's evaluator is kept as text (``node`` None) instead of refusing the
    write; such checks cannot be :meth:`WriteChecks.apply`-ed."""
    from delta_pyds.protocol.schema_evolution import logical_arrow_schema

    arrow_schema = logical_schema or logical_arrow_schema(schema)
    empty = arrow_schema.empty_table()
    provided = {c.lower() for c in input_columns}
    not_null = _not_null_paths(schema, ())
    rules = []
    generated = []
    defaults = []
    for f in schema.fields:
        meta = f.metadata or {}
        if CURRENT_DEFAULT in meta and f.name.lower() not in provided:
            # allowColumnDefaults: a column the DataFrame lacks gets its default, not null
            rule = _value_rule(
                "default",
                f.name,
                meta[CURRENT_DEFAULT],
                arrow_schema,
                "allowColumnDefaults",
                "; provide the column in the DataFrame",
                spark_sql,
            )
            defaults.append((f.name, rule, False))
        if INVARIANTS in meta:
            rules.append(_compile("invariant", f.name, _invariant_text(f), empty, "invariants", spark_sql))
        if GENERATION_EXPRESSION in meta:
            rule = _value_rule(
                "generated",
                f.name,
                meta[GENERATION_EXPRESSION],
                arrow_schema,
                "generatedColumns",
                "; write with delta_pyds.write_delta, which evaluates it with Spark SQL",
                spark_sql=spark_sql,
            )
            generated.append((f.name, rule, f.name.lower() in provided))
    for name, text in sorted(constraints_of(configuration).items()):
        rules.append(_compile("check", name, text, empty, "checkConstraints", spark_sql))
    if replace_where:
        rules.append(_compile("replaceWhere", "replaceWhere", replace_where, empty, ""))
    return WriteChecks(tuple(not_null), tuple(rules), tuple(defaults + generated), declared_limits(schema))


def _not_null_paths(dtype: DataType, prefix: tuple[str, ...]) -> list[tuple[str, ...]]:
    """The paths of the non-nullable fields of ``dtype`` and of its nested structs (parents
    first), each under ``prefix``."""
    out: list[tuple[str, ...]] = []
    if isinstance(dtype, StructType):
        for f in dtype.fields:
            path = prefix + (f.name,)
            if not f.nullable:
                out.append(path)
            out.extend(_not_null_paths(f.type, path))
    return out


def _invariant_text(f: StructField) -> str:
    """The SQL of column ``f``'s ``delta.invariants`` metadata (UnsupportedFeatureError when
    it is not the ``{"expression": {"expression": ...}}`` JSON delta-spark writes)."""
    meta = f.metadata or {}
    try:
        return json.loads(meta[INVARIANTS])["expression"]["expression"]
    except (ValueError, KeyError, TypeError):
        raise UnsupportedFeatureError(
            f"cannot write to this table: column {f.name} has an invariant delta_pyds cannot "
            f"read: {meta[INVARIANTS]!r}",
            ("invariants",),
        ) from None


def replace_where_rule(text: str, logical_schema: pa.Schema) -> _Rule:
    """The parsed replaceWhere predicate (ValueError for a bad one)."""
    return _compile("replaceWhere", "replaceWhere", text, logical_schema.empty_table(), "")
