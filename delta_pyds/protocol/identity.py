"""Identity columns (the ``identityColumns`` writer feature): which columns a write
fills, the values each task generates, and the high-water marks its commit records.

Guarantees, per the protocol:

* a generated value is ``start + k * step`` with ``k >= 0`` and lies beyond the column's
  ``delta.identity.highWaterMark`` in the step's direction;
* values are unique within a write: task ``t`` numbers its rows from
  ``k0 + t * 2**33`` (the spacing of Spark's ``monotonically_increasing_id``), so tasks
  never collide, and a task's values are consecutive on the step grid;
* a value that does not fit the column's type (a long) fails the write before it
  reaches a file;
* the commit records the highest generated value (lowest for a negative step) as the
  new high-water mark; the metadata change makes concurrent identity writers conflict,
  as in delta-spark (a write that loses the race fails instead of duplicating values);
* explicit values are refused unless ``delta.identity.allowExplicitInsert`` is true, and
  then written as given without moving the high-water mark. Rewrites of existing rows
  (DML, optimize) keep the values they have.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

import numpy as np
import pyarrow as pa

from delta_pyds.errors import ConstraintViolationError, IdentityColumnError, UnsupportedFeatureError
from delta_pyds.protocol.schema import StructField, StructType

START = "delta.identity.start"
STEP = "delta.identity.step"
HIGH_WATER_MARK = "delta.identity.highWaterMark"
ALLOW_EXPLICIT_INSERT = "delta.identity.allowExplicitInsert"
TASK_SPACING = 1 << 33
_LONG_MIN, _LONG_MAX = -(1 << 63), (1 << 63) - 1


@dataclass(frozen=True)
class IdentityColumn:
    """One identity column as the table's schema declares it."""

    name: str
    start: int
    step: int
    high_water_mark: int | None
    allow_explicit_insert: bool

    @property
    def first_k(self) -> int:
        """The smallest grid index whose value lies beyond the high-water mark."""
        if self.high_water_mark is None:
            return 0
        return max(0, (self.high_water_mark - self.start) // self.step + 1)

    def value(self, k: int) -> int:
        return self.start + self.step * k

    def beyond(self, a: int, b: int) -> int:
        """The one of ``a`` and ``b`` further in the step's direction."""
        return max(a, b) if self.step > 0 else min(a, b)


def identity_of(f: StructField) -> IdentityColumn | None:
    """The identity declaration of a top-level field (None if it is not one)."""
    meta = f.metadata or {}
    if not any(k.startswith("delta.identity.") for k in meta):
        return None
    try:
        start = int(meta.get(START, 1))
        step = int(meta.get(STEP, 1))
        hwm = meta.get(HIGH_WATER_MARK)
        hwm = int(hwm) if hwm is not None else None
    except (TypeError, ValueError):
        raise UnsupportedFeatureError(
            f"cannot write to this table: identity column {f.name} has unreadable properties "
            f"{ {k: v for k, v in meta.items() if k.startswith('delta.identity.')} }",
            ("identityColumns",),
        ) from None
    if step == 0:
        raise UnsupportedFeatureError(
            f"cannot write to this table: identity column {f.name} has {STEP} = 0", ("identityColumns",)
        )
    explicit = str(meta.get(ALLOW_EXPLICIT_INSERT, "false")).lower() == "true"
    return IdentityColumn(f.name, start, step, hwm, explicit)


def identity_columns(schema: StructType) -> tuple[IdentityColumn, ...]:
    return tuple(c for c in (identity_of(f) for f in schema.fields) if c is not None)


def columns_to_generate(
    schema: StructType, provided: Iterable[str], *, keep_values: bool = False
) -> tuple[IdentityColumn, ...]:
    """The identity columns a write must fill: those the data does not provide.

    Provided values of a column that does not allow explicit inserts are refused, unless
    ``keep_values`` (a rewrite of the table's own rows)."""
    given = {p.lower() for p in provided}
    out = []
    for col in identity_columns(schema):
        if col.name.lower() not in given:
            out.append(col)
        elif not keep_values and not col.allow_explicit_insert:
            raise IdentityColumnError(
                f"cannot write values into identity column {col.name}: the table generates them "
                f"({ALLOW_EXPLICIT_INSERT}=false); leave the column out of the DataFrame"
            )
    return tuple(out)


@dataclass
class IdentityGenerator:
    """Fills identity columns of one task's batches, and remembers the extreme values."""

    columns: tuple[IdentityColumn, ...]
    task_id: int = 0
    rows: int = 0
    marks: dict[str, int] = field(default_factory=dict)

    def fill(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        n = batch.num_rows
        if not n or not self.columns:
            return batch
        if self.rows + n > TASK_SPACING:
            raise ConstraintViolationError(
                f"identity column {self.columns[0].name}: one task cannot write more than "
                f"{TASK_SPACING} rows; repartition the data"
            )
        for col in self.columns:
            k = col.first_k + self.task_id * TASK_SPACING + self.rows
            first, last = col.value(k), col.value(k + n - 1)
            if not (_LONG_MIN <= first <= _LONG_MAX and _LONG_MIN <= last <= _LONG_MAX):
                raise ConstraintViolationError(
                    f"identity column {col.name} overflows a long: the next value would be "
                    f"{last} (start {col.start}, step {col.step}, high-water mark {col.high_water_mark})"
                )
            idx = batch.schema.get_field_index(col.name)
            target = batch.schema.field(idx)
            values = pa.array(np.arange(n, dtype=np.int64) * np.int64(col.step) + np.int64(first), pa.int64())
            if target.type != pa.int64():
                try:
                    values = values.cast(target.type)  # safe: raises on overflow
                except pa.ArrowInvalid:
                    raise ConstraintViolationError(
                        f"identity column {col.name} overflows its type {target.type}: the next value would be {last}"
                    ) from None
            batch = batch.set_column(idx, target, values)
            mark = self.marks.get(col.name)
            self.marks[col.name] = last if mark is None else col.beyond(mark, last)
        self.rows += n
        return batch


def merge_marks(columns: Iterable[IdentityColumn], marks: Iterable[Mapping[str, int]]) -> dict[str, int]:
    """The extreme value per column over the tasks' marks."""
    by_name = {c.name: c for c in columns}
    out: dict[str, int] = {}
    for m in marks:
        for name, value in (m or {}).items():
            col = by_name[name]
            out[name] = value if name not in out else col.beyond(out[name], value)
    return out


def with_high_water_marks(schema: StructType, marks: Mapping[str, int]) -> StructType | None:
    """``schema`` with the columns' high-water marks moved to ``marks`` (never backwards);
    None when nothing changes."""
    if not marks:
        return None
    fields = []
    changed = False
    for f in schema.fields:
        col = identity_of(f) if f.name in marks else None
        if col is not None:
            mark = marks[f.name] if col.high_water_mark is None else col.beyond(col.high_water_mark, marks[f.name])
            if mark != col.high_water_mark:
                f = replace(f, metadata={**f.metadata, HIGH_WATER_MARK: mark})
                changed = True
        fields.append(f)
    return StructType(tuple(fields)) if changed else None
