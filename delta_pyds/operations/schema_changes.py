"""Schema changes of an existing table: add, rename and drop columns, comments, NOT NULL
and type widening (the ``ALTER TABLE`` column statements, and ``DeltaTable.addColumns`` ...).

Guarantees (delta-spark's rules):

* each change is one metadata commit through the :class:`Transaction`; no data file is
  written or removed; a refused change commits nothing (:class:`SchemaChangeError`,
  :class:`ColumnNotFoundError`, :class:`ConstraintViolationError`);
* a column is named by a dotted path (``"a.b"``, a nested struct field) or a sequence of
  names; names match case-insensitively as in Spark;
* ADD COLUMNS adds nullable columns only (at the end of the table or of the struct
  named by the path's prefix, or at a position: ``FIRST`` / ``AFTER <sibling>``); a name
  already present is refused; ALTER COLUMN ... FIRST / AFTER moves a column (or a nested
  field) within its struct; under column mapping
  the new fields get fresh ids and physical names and ``delta.columnMapping.maxColumnId``
  moves up;
* RENAME COLUMN and DROP COLUMN need column mapping (``delta.columnMapping.mode`` name or
  id) and are refused otherwise, so data written before reads back under the new names;
  dropping a partition column, the last column, or a column a CHECK constraint or a
  generated column uses is refused; a rename of a partition column renames it in
  ``partitionColumns``;
* SET NOT NULL first asks ``null_count`` for the number of nulls at the version the change
  is based on and refuses if there is one; the commit reads the whole table, serializably,
  so a concurrent write (even a blind append) makes it fail, never commit over a null;
  ADD CONSTRAINT likewise (``violations(version)`` counts the rows that fail it);
* a TYPE change is only a widening the ``typeWidening`` feature allows (byte -> short ->
  integer -> long, float -> double, byte/short/integer -> double, decimal precision/scale
  increases that keep the integer digits) and needs ``delta.enableTypeWidening = true``;
  it records ``delta.typeChanges`` in the field's metadata as delta-spark does;
* a comment is the field metadata ``comment``;
* an error's message starts with delta-spark's error class where one exists
  (``[DELTA_UNSUPPORTED_DROP_PARTITION_COLUMN]``, ``[DELTA_NEW_NOT_NULL_VIOLATION]`` ...);
* CLUSTER BY sets the clustering columns of an unpartitioned table (``delta.clustering``
  domain, physical names under column mapping; the ``clustering`` and ``domainMetadata``
  features are added), CLUSTER BY NONE keeps the domain with no columns, as delta-spark;
  existing files are not rewritten (OPTIMIZE clusters them); a clustering column cannot be
  dropped. No Spark."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from delta_pyds.errors import ColumnNotFoundError, ConstraintViolationError, SchemaChangeError, SqlParseError
from delta_pyds.expressions.lexer import tokenize
from delta_pyds.protocol import features
from delta_pyds.protocol.clustering import CLUSTERING_DOMAIN, domain_config, resolve, table_clustering
from delta_pyds.protocol.schema import (
    DataType,
    StructField,
    StructType,
    parse_type,
)
from delta_pyds.protocol.schema_evolution import assign_column_mapping, is_widening
from delta_pyds.protocol.table_properties import (
    COLUMN_MAPPING_MAX_ID,
    COLUMN_MAPPING_MODE,
    ENABLE_TYPE_WIDENING,
    is_true,
    required_protocol,
)
from delta_pyds.storage.store import Storage
from delta_pyds.table.snapshot import Snapshot
from delta_pyds.transaction.commit import Transaction

ColumnPath = str | Sequence[str]
Position = str | None  # None (at the end), "FIRST" or "AFTER <sibling name>", case-insensitive
_GENERATION = "delta.generationExpression"
_SQL_NAMES = {
    "int": "integer",
    "bigint": "long",
    "smallint": "short",
    "tinyint": "byte",
    "real": "float",
    "bool": "boolean",
    "dec": "decimal",
    "numeric": "decimal",
    "varchar": "string",
    "char": "string",
}


def parse_type_name(text: str, arg: str) -> DataType:
    """A Delta type from its JSON or Spark SQL spelling (``bigint``, ``decimal(10, 2)``,
    ``struct<a:int>`` is not taken: nested types are given as Delta JSON)."""
    t = text.strip()
    try:
        if t.startswith("{"):
            return parse_type(json.loads(t))
        low = re.sub(r"\s+", "", t.lower())
        m = re.match(r"^(\w+)(\(.*\))?$", low)
        if m:
            base = _SQL_NAMES.get(m.group(1), m.group(1))
            if base == "string":
                return parse_type("string")
            return parse_type(base + (m.group(2) or ("(10,0)" if base == "decimal" else "")))
    except Exception as e:  # noqa: BLE001 - a bad type name is the caller's argument
        raise SchemaChangeError(f"'{arg}': unsupported type {text!r}: {e}") from e
    raise SchemaChangeError(f"'{arg}': unsupported type {text!r} (a Delta type name such as long, or its JSON)")


def _path(column: ColumnPath, arg: str = "column") -> list[str]:
    if isinstance(column, str):
        parts = column.split(".")
    elif isinstance(column, Sequence) and all(isinstance(p, str) for p in column):
        parts = list(column)
    else:
        raise SchemaChangeError(f"'{arg}' must be a column name (str, 'a.b' for a nested field) or a list of names")
    if not parts or any(not p for p in parts):
        raise SchemaChangeError(f"'{arg}' must name a column, got {column!r}")
    return parts


def parse_position(position: Position, arg: str = "position") -> tuple[str, str | None] | None:
    """``None``, ``("FIRST", None)`` or ``("AFTER", name)`` from a position argument."""
    if position is None:
        return None
    if isinstance(position, str):
        words = position.strip().split(None, 1)
        if len(words) == 1 and words[0].upper() == "FIRST":
            return ("FIRST", None)
        if len(words) == 2 and words[0].upper() == "AFTER" and words[1].strip().strip("`"):
            return ("AFTER", words[1].strip().strip("`"))
    raise SchemaChangeError(f"'{arg}' must be None, 'FIRST' or 'AFTER <column>', got {position!r}")


def _position_text(position: Position) -> str:
    pos = parse_position(position)
    assert pos is not None
    return pos[0] if pos[1] is None else f"{pos[0]} {pos[1]}"


def _place(fields: tuple[StructField, ...], new: StructField, position: Position, what: str) -> StructType:
    """``fields`` with ``new`` put at ``position`` (see :data:`Position`)."""
    pos = parse_position(position)
    if pos is None:
        return StructType(fields + (new,))
    if pos[0] == "FIRST":
        return StructType((new,) + fields)
    after = str(pos[1])
    index = next((i for i, f in enumerate(fields) if f.name.lower() == after.lower()), None)
    if index is None:
        if after.lower() == new.name.lower():
            raise SchemaChangeError(f"{what}: a column cannot be placed AFTER itself")
        raise ColumnNotFoundError(
            f"[DELTA_COLUMN_NOT_FOUND_IN_SCHEMA] {what}: AFTER {after}: no such column among "
            f"{', '.join(f.name for f in fields)}"
        )
    return StructType(fields[: index + 1] + (new,) + fields[index + 1 :])


def _storage(table: Storage | str) -> Storage:
    return table if isinstance(table, Storage) else Storage(table)


def _mode(snap: Snapshot) -> str:
    return str(snap.configuration.get(COLUMN_MAPPING_MODE, "none")).lower()


def _find(schema: StructType, parts: list[str]) -> list[StructField]:
    """The fields along ``parts`` (struct fields only); ColumnNotFoundError otherwise."""
    out: list[StructField] = []
    current: DataType = schema
    for k, name in enumerate(parts):
        f = current.get(name) if isinstance(current, StructType) else None
        if f is None:
            raise ColumnNotFoundError(
                f"[DELTA_COLUMN_NOT_FOUND_IN_SCHEMA] column {'.'.join(parts[: k + 1])!r} not found; the table has "
                f"{', '.join(current.names) if isinstance(current, StructType) else 'no struct there'}"
            )
        out.append(f)
        current = f.type
    return out


def _rewrite(schema: StructType, parts: list[str], fn: Callable[[StructType, StructField], StructType]) -> StructType:
    """``schema`` with the struct that holds ``parts[-1]`` replaced by ``fn(struct, field)``."""
    f = _find(schema, parts[:1])[0]
    if len(parts) == 1:
        return fn(schema, f)
    assert isinstance(f.type, StructType)
    inner = _rewrite(f.type, parts[1:], fn)
    return StructType(tuple(replace(g, type=inner) if g is f else g for g in schema.fields))


def expression_mentions(expression: str, name: str) -> bool:
    """Whether SQL ``expression`` names top-level column ``name`` (a word or backquoted
    identifier not after a ``.``, read with Spark's lexical rules; text that cannot be read
    counts as naming it, so the change is refused rather than guessed)."""
    try:
        tokens = [t for t in tokenize(expression) if not t.blank]
    except SqlParseError:
        return True
    return any(
        t.kind in ("word", "ident") and t.value().lower() == name.lower() and (k == 0 or tokens[k - 1].text != ".")
        for k, t in enumerate(tokens)
    )


def _users(snap: Snapshot, parts: list[str]) -> list[str]:
    """CHECK constraints and generated columns whose expression mentions the column."""
    found = [
        k
        for k, v in snap.configuration.items()
        if k.startswith("delta.constraints.") and expression_mentions(str(v), parts[0])
    ]
    found += [
        f"generated column {f.name}"
        for f in snap.schema.fields
        if _GENERATION in f.metadata and expression_mentions(str(f.metadata[_GENERATION]), parts[0])
    ]
    return found


def _dependent(users: list[str]) -> str:
    """delta-spark's error class for a column change blocked by ``users`` (see :func:`_users`)."""
    if any(u.startswith("delta.constraints.") for u in users):
        return "[DELTA_CONSTRAINT_DEPENDENT_COLUMN_CHANGE]"
    return "[DELTA_GENERATED_COLUMNS_DEPENDENT_COLUMN_CHANGE]"


def _commit(
    storage: Storage,
    snap: Snapshot,
    schema: StructType,
    operation: str,
    params: dict[str, Any],
    *,
    partition_columns: tuple[str, ...] | None = None,
    conf: dict[str, str] | None = None,
    read_all: bool = False,
) -> int:
    txn = Transaction(storage, snap)
    if read_all:  # validated against the rows at snap.version: any file added since conflicts
        txn.read_whole_table()
        txn.serializable = True
    md = replace(
        snap.metadata,
        schema_string=schema.json(),
        partition_columns=snap.metadata.partition_columns if partition_columns is None else partition_columns,
        configuration=dict(snap.configuration) if conf is None else conf,
    )
    new_protocol = required_protocol(schema, md.configuration, snap.protocol)
    if new_protocol != snap.protocol:
        txn.update_protocol(new_protocol)
    txn.update_metadata(md)
    return txn.commit(operation, {k: json.dumps(v) if not isinstance(v, str) else v for k, v in params.items()}).version


def _load(table: Storage | str) -> tuple[Storage, Snapshot]:
    storage = _storage(table)
    snap = Snapshot.load(storage)
    features.check_write(snap.protocol)
    return storage, snap


# ------------------------------------------------------------------ operations
def add_columns(table: Storage | str, columns: Sequence[tuple[Any, ...]]) -> int:
    """Adds nullable columns: ``(path, type, comment[, position])`` each, the type a Delta type
    or its JSON/simple name (``"long"``, ``"decimal(10,2)"``), the position ``"FIRST"`` or
    ``"AFTER <sibling>"`` (None: at the end); returns the version committed."""
    storage, snap = _load(table)
    if not columns:
        raise SchemaChangeError("addColumns: 'columns' must name at least one column")
    schema = snap.schema
    added = []
    for column, dtype, comment, *rest in columns:
        position = rest[0] if rest else None
        parse_position(position, "columns")
        parts = _path(column, "columns")
        if isinstance(dtype, str):
            dtype = parse_type_name(dtype, "columns")
        meta = {"comment": comment} if comment is not None else {}
        new = StructField(parts[-1], dtype, True, meta)

        def add(
            struct: StructType, new: StructField = new, parts: list[str] = parts, position: Position = position
        ) -> StructType:
            if struct.get(new.name) is not None:
                raise SchemaChangeError(
                    f"[DELTA_DUPLICATE_COLUMNS_FOUND] addColumns: column {'.'.join(parts)!r} already exists"
                )
            return _place(struct.fields, new, position, f"ADD COLUMNS {'.'.join(parts)}")

        if len(parts) == 1:
            schema = add(schema)
        else:
            parent = _find(schema, parts[:-1])[-1]
            if not isinstance(parent.type, StructType):
                raise SchemaChangeError(
                    f"[DELTA_ADD_COLUMN_PARENT_NOT_STRUCT] addColumns: {'.'.join(parts[:-1])!r} is a "
                    f"{parent.type.simple_string()}, not a struct"
                )
            schema = _rewrite(
                schema,
                parts[:-1],
                lambda s, f: StructType(
                    tuple(replace(g, type=add(g.type)) if g is f else g for g in s.fields)  # type: ignore[arg-type]
                ),
            )
        entry: dict[str, Any] = {"column": {"name": ".".join(parts), "type": dtype.to_json(), "nullable": True}}
        if position is not None:
            entry["position"] = _position_text(position)
        added.append(entry)
    conf = dict(snap.configuration)
    if _mode(snap) in ("name", "id"):
        schema, max_id = assign_column_mapping(schema, int(conf.get(COLUMN_MAPPING_MAX_ID) or 0))
        conf[COLUMN_MAPPING_MAX_ID] = str(max_id)
    return _commit(storage, snap, schema, "ADD COLUMNS", {"columns": added}, conf=conf)


def _need_mapping(snap: Snapshot, what: str) -> None:
    if _mode(snap) not in ("name", "id"):
        raise SchemaChangeError(
            f"[DELTA_UNSUPPORTED_{what.split()[0]}_COLUMN] {what} is not supported for your Delta table: "
            "it needs column mapping "
            f"('{COLUMN_MAPPING_MODE}' = 'name', set when the table is created, with "
            "'delta.minReaderVersion' = '2' and 'delta.minWriterVersion' = '5'); the table's "
            f"'{COLUMN_MAPPING_MODE}' is {_mode(snap)!r}"
        )


def rename_column(table: Storage | str, column: ColumnPath, new_name: str) -> int:
    """Renames a column (or a nested struct field) under column mapping."""
    storage, snap = _load(table)
    parts = _path(column)
    if not isinstance(new_name, str) or not new_name or "." in new_name:
        raise SchemaChangeError(f"renameColumn: 'newName' must be a non-empty name without '.', got {new_name!r}")
    _need_mapping(snap, "RENAME COLUMN")
    old = _find(snap.schema, parts)[-1]
    if users := _users(snap, parts):
        raise SchemaChangeError(
            f"{_dependent(users)} RENAME COLUMN {'.'.join(parts)}: used by {', '.join(users)}; drop them first"
        )

    def ren(struct: StructType, f: StructField) -> StructType:
        clash = struct.get(new_name)
        if clash is not None and clash is not f:
            raise SchemaChangeError(
                f"[DELTA_DUPLICATE_COLUMNS_FOUND] RENAME COLUMN: a column named {new_name!r} already exists"
            )
        return StructType(tuple(replace(g, name=new_name) if g is f else g for g in struct.fields))

    schema = _rewrite(snap.schema, parts, ren)
    pcols = snap.metadata.partition_columns
    if len(parts) == 1:
        pcols = tuple(new_name if c.lower() == old.name.lower() else c for c in pcols)
    new_path = ".".join(parts[:-1] + [new_name])
    return _commit(
        storage,
        snap,
        schema,
        "RENAME COLUMN",
        {"oldColumnPath": ".".join(parts), "newColumnPath": new_path},
        partition_columns=pcols,
    )


def drop_columns(table: Storage | str, columns: Sequence[ColumnPath], *, if_exists: bool = False) -> int | None:
    """Drops columns (or nested struct fields) under column mapping; returns the version
    committed (None: ``if_exists`` and none of them exists)."""
    storage, snap = _load(table)
    if isinstance(columns, str) or not columns:
        raise SchemaChangeError("dropColumns: 'columns' must be a non-empty list of column names")
    _need_mapping(snap, "DROP COLUMN")
    schema = snap.schema
    dropped = []
    for column in columns:
        parts = _path(column, "columns")
        try:
            _find(schema, parts)
        except ColumnNotFoundError:
            if if_exists:
                continue
            raise
        if len(parts) == 1 and parts[0].lower() in (c.lower() for c in snap.metadata.partition_columns):
            raise SchemaChangeError(
                f"[DELTA_UNSUPPORTED_DROP_PARTITION_COLUMN] DROP COLUMN: {parts[0]!r} is a partition column; "
                "partition columns cannot be dropped"
            )
        if users := _users(snap, parts):
            raise SchemaChangeError(
                f"{_dependent(users)} DROP COLUMN {'.'.join(parts)}: used by {', '.join(users)}; drop them first"
            )
        clustering = table_clustering(snap.schema, snap.domain_metadata, _mode(snap)) or []
        if any([p.lower() for p in c[: len(parts)]] == [p.lower() for p in parts] for c in clustering):
            raise SchemaChangeError(
                f"[DELTA_UNSUPPORTED_DROP_CLUSTERING_COLUMN] DROP COLUMN {'.'.join(parts)}: it is a clustering "
                "column; change them first (CLUSTER BY)"
            )

        def drop(struct: StructType, f: StructField, parts: list[str] = parts) -> StructType:
            rest = tuple(g for g in struct.fields if g is not f)
            if not rest:
                raise SchemaChangeError(
                    f"[DELTA_DROP_COLUMN_ON_SINGLE_FIELD_SCHEMA] DROP COLUMN {'.'.join(parts)}: cannot drop all "
                    "columns of a table or struct"
                )
            return StructType(rest)

        schema = _rewrite(schema, parts, drop)
        dropped.append(".".join(parts))
    if not dropped:
        return None
    return _commit(storage, snap, schema, "DROP COLUMNS", {"columns": dropped})


def alter_column(
    table: Storage | str,
    column: ColumnPath,
    *,
    comment: str | None = None,
    nullable: bool | None = None,
    data_type: DataType | str | None = None,
    null_count: Callable[[int], int] | None = None,
    position: Position = None,
) -> int:
    """Changes a column's comment, nullability, type and/or position in its struct
    (``"FIRST"``, ``"AFTER <sibling>"``) in one commit. ``nullable=False`` (SET NOT NULL)
    needs ``null_count(version)``: the number of nulls the column has at that version (the
    caller scans; no scan here)."""
    storage, snap = _load(table)
    parts = _path(column)
    field = _find(snap.schema, parts)[-1]
    name = ".".join(parts)
    if comment is None and nullable is None and data_type is None and position is None:
        raise SchemaChangeError("alterColumn: give at least one of 'comment', 'nullable', 'dataType', 'position'")
    if nullable is not None and not isinstance(nullable, bool):
        raise SchemaChangeError(f"alterColumn: 'nullable' must be True or False, got {nullable!r}")
    if comment is not None and not isinstance(comment, str):
        raise SchemaChangeError(f"alterColumn: 'comment' must be a str, got {type(comment).__name__}")
    meta = dict(field.metadata)
    new_type = field.type
    params: dict[str, Any] = {"column": name}
    if parse_position(position) is not None:
        params["position"] = _position_text(position)
    if comment is not None:
        meta["comment"] = comment
        params["comment"] = comment
    if data_type is not None:
        new_type = _widened_type(snap, field, data_type, parts, meta)
        if new_type != field.type:
            params["newType"] = new_type.simple_string()
    new_nullable = field.nullable if nullable is None else nullable
    read_all = False
    if nullable is False and field.nullable:
        _check_no_nulls(snap, name, null_count)
        read_all = True
    if nullable is not None:
        params["nullable"] = nullable
    new_field = StructField(field.name, new_type, new_nullable, meta)

    def change(s: StructType, f: StructField) -> StructType:
        if position is None:
            return StructType(tuple(new_field if g is f else g for g in s.fields))
        return _place(tuple(g for g in s.fields if g is not f), new_field, position, f"ALTER COLUMN {name}")

    schema = _rewrite(snap.schema, parts, change)
    return _commit(storage, snap, schema, "CHANGE COLUMN", params, read_all=read_all)


def _widened_type(
    snap: Snapshot, field: StructField, data_type: DataType | str, parts: list[str], meta: dict[str, Any]
) -> DataType:
    """The type ALTER COLUMN ... TYPE gives ``field`` (at ``parts``): ``data_type`` when it is
    a widening Delta supports on a table with type widening enabled and the column is not a
    partition column (SchemaChangeError otherwise), recorded in ``meta``'s
    ``delta.typeChanges``; the field's own type when it is the same."""
    name = ".".join(parts)
    if isinstance(data_type, str):
        data_type = parse_type_name(data_type, "dataType")
    if data_type != field.type:
        if not is_widening(field.type, data_type):
            raise SchemaChangeError(
                f"[DELTA_UNSUPPORTED_ALTER_TABLE_CHANGE_COL_OP] ALTER COLUMN {name} TYPE: changing "
                f"{field.type.simple_string()} to "
                f"{data_type.simple_string()} is not a type widening Delta supports (byte -> short -> "
                "integer -> long, float -> double, byte/short/integer -> double, wider decimals)"
            )
        if not is_true(snap.configuration, ENABLE_TYPE_WIDENING):
            raise SchemaChangeError(
                f"[DELTA_UNSUPPORTED_ALTER_TABLE_CHANGE_COL_OP] ALTER COLUMN {name} TYPE "
                f"{data_type.simple_string()}: type widening is not enabled; "
                f"set '{ENABLE_TYPE_WIDENING}' = 'true' first"
            )
        if len(parts) == 1 and parts[0].lower() in (c.lower() for c in snap.metadata.partition_columns):
            raise SchemaChangeError(f"ALTER COLUMN {name} TYPE: {name!r} is a partition column")
        changes = list(meta.get("delta.typeChanges") or [])
        changes.append({"fromType": field.type.to_json(), "toType": data_type.to_json()})
        meta["delta.typeChanges"] = changes
        return data_type
    return field.type


def _check_no_nulls(snap: Snapshot, name: str, null_count: Callable[[int], int] | None) -> None:
    """SET NOT NULL on column ``name``: refuses when it has nulls at the snapshot's version
    (``null_count``, the caller's scan; SchemaChangeError without one)."""
    if null_count is None:
        raise SchemaChangeError(f"ALTER COLUMN {name} SET NOT NULL: needs a scan of the column (null_count)")
    found = null_count(snap.version)
    if found:
        raise ConstraintViolationError(
            f"[DELTA_NEW_NOT_NULL_VIOLATION] ALTER COLUMN {name} SET NOT NULL: {found} existing rows have a "
            f"null in {name}; nothing changed"
        )


def cluster_by(table: Storage | str, columns: Sequence[ColumnPath] | None) -> int:
    """Sets the clustering columns (None or []: CLUSTER BY NONE); returns the version committed."""
    storage, snap = _load(table)
    if columns is None:
        columns = []
    if isinstance(columns, str):
        raise SchemaChangeError("clusterBy: 'columns' must be a list of column names (or None for NONE)")
    paths = resolve(snap.schema, [tuple(_path(c, "columns")) for c in columns], snap.metadata.partition_columns)
    mode = _mode(snap)
    old = table_clustering(snap.schema, snap.domain_metadata, mode)
    if old is None and snap.metadata.partition_columns:
        raise SchemaChangeError(
            "[DELTA_ALTER_TABLE_CLUSTER_BY_ON_PARTITIONED_TABLE_NOT_ALLOWED] CLUSTER BY: the table is "
            "partitioned; a partitioned table cannot be clustered"
        )
    txn = Transaction(storage, snap)
    new_protocol = required_protocol(
        snap.schema, snap.configuration, snap.protocol, extra_features=("clustering", "domainMetadata")
    )
    if new_protocol != snap.protocol:
        txn.update_protocol(new_protocol)
    txn.set_domain_metadata(CLUSTERING_DOMAIN, domain_config(snap.schema, paths, mode))
    params = {
        "oldClusteringColumns": ",".join(".".join(p) for p in old or []),
        "newClusteringColumns": ",".join(".".join(p) for p in paths),
    }
    return txn.commit("CLUSTER BY", params).version


def add_constraint(table: Storage | str, name: str, expression: str, violations: Callable[[int], int]) -> int:
    """Adds the CHECK constraint ``delta.constraints.<name>`` after ``violations(version)``
    (the caller's scan) found no existing row failing it; returns the version committed."""
    storage, snap = _load(table)
    key = f"delta.constraints.{name.lower()}"
    if key in snap.configuration:
        raise ConstraintViolationError(
            f"[DELTA_CONSTRAINT_ALREADY_EXISTS] ADD CONSTRAINT: constraint {name!r} already exists: "
            f"{snap.configuration[key]}"
        )
    bad = violations(snap.version)
    if bad:
        raise ConstraintViolationError(
            f"[DELTA_NEW_CHECK_CONSTRAINT_VIOLATION] ADD CONSTRAINT {name} CHECK ({expression}): {bad} existing "
            "rows violate it; nothing changed"
        )
    conf = {**snap.configuration, key: expression}
    return _commit(
        storage, snap, snap.schema, "ADD CONSTRAINT", {"name": name, "expr": expression}, conf=conf, read_all=True
    )
