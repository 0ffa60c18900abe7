"""Runs the statements :func:`delta_pyds.sql` recognises.

Guarantees: a statement is parsed whole before anything runs (a parse error changes nothing);
each Delta statement is one call of the public :class:`~delta_pyds.DeltaTable` API; results
have delta-spark's columns (``num_affected_rows`` ...; DESCRIBE HISTORY/DETAIL as
``history()``/``detail()``). Session names (``CREATE TABLE <name> USING delta LOCATION``) live
as long as the SparkSession object, in this process only."""

from __future__ import annotations

import weakref
from collections.abc import Callable, Mapping
from typing import Any

from delta_pyds.errors import SqlParseError, TableNotFoundError
from delta_pyds.log.history import history as commit_history
from delta_pyds.spark.sql.parser import Parser, TableRef, query_refs, unqualify

_NAMES: weakref.WeakKeyDictionary[Any, dict[str, str]] = weakref.WeakKeyDictionary()

FORMS = {
    "DESCRIBE HISTORY": "DESCRIBE HISTORY <table> [LIMIT n]",
    "DESCRIBE DETAIL": "DESCRIBE DETAIL <table>",
    "VACUUM": "VACUUM <table | 'path'> [RETAIN n HOURS] [DRY RUN]",
    "OPTIMIZE": "OPTIMIZE <table> [WHERE <partition predicate>] [ZORDER BY (col, ...)]",
    "RESTORE": "RESTORE [TABLE] <table> TO VERSION AS OF n | TIMESTAMP AS OF 'ts'",
    "DELETE": "DELETE FROM <table> [[AS] alias] [WHERE <condition>]",
    "UPDATE": "UPDATE <table> [[AS] alias] SET col = expr [, ...] [WHERE <condition>]",
    "SHOW TBLPROPERTIES": "SHOW TBLPROPERTIES <table> [('key')]",
    "SHOW COLUMNS": "SHOW COLUMNS (IN | FROM) <table>",
    "ALTER TABLE": (
        "ALTER TABLE <table> SET TBLPROPERTIES ('k' = 'v', ...) | UNSET TBLPROPERTIES [IF EXISTS] ('k', ...)"
        " | ADD CONSTRAINT name CHECK (expr) | DROP CONSTRAINT [IF EXISTS] name"
    ),
    "GENERATE": "GENERATE symlink_format_manifest FOR TABLE <table>",
    "CONVERT TO DELTA": "CONVERT TO DELTA parquet.`path` [PARTITIONED BY (col type, ...)]",
    "CREATE TABLE": "CREATE TABLE [IF NOT EXISTS] name USING delta LOCATION 'path'",
    "MERGE": (
        "MERGE [WITH SCHEMA EVOLUTION] INTO <table> [[AS] t] USING <table | view | (query)> [[AS] s] ON <cond>"
        " WHEN MATCHED [AND <cond>] THEN UPDATE SET * | UPDATE SET col = expr, ... | DELETE"
        " | WHEN NOT MATCHED [BY TARGET] [AND <cond>] THEN INSERT * | INSERT (col, ...) VALUES (expr, ...)"
        " | WHEN NOT MATCHED BY SOURCE [AND <cond>] THEN UPDATE SET col = expr, ... | DELETE"
    ),
    "INSERT": "INSERT INTO | OVERWRITE [TABLE] <table> [(col, ...)] [REPLACE WHERE <cond>] <query>",
}


def table_names(spark) -> dict[str, str]:
    """The session names of Delta tables made by ``CREATE TABLE ... LOCATION`` on ``spark``
    (name -> path); a copy."""
    return dict(_NAMES.get(spark, {}))


def sql(spark, statement: str, args: Any = None, **kwargs: Any):
    """Runs one statement (see :mod:`delta_pyds.spark.sql`)."""
    if not isinstance(statement, str):
        raise TypeError(f"'statement' must be a str (one SQL statement), got {type(statement).__name__}")
    names = _NAMES.get(spark, {})
    p = Parser(statement, names)
    head = _head(p)
    if head is not None:
        p.statement, p.form = head, FORMS[head]
        run = _HANDLERS[head](spark, p)
        return run()
    return _query(spark, p, statement, args, kwargs)


def _head(p: Parser) -> str | None:
    """Which Delta statement this is (None: any other statement)."""
    p.i = 0
    if p.at("DESCRIBE", "HISTORY") or p.at("DESC", "HISTORY"):
        p.i = 2
        return "DESCRIBE HISTORY"
    if p.at("DESCRIBE", "DETAIL") or p.at("DESC", "DETAIL"):
        p.i = 2
        return "DESCRIBE DETAIL"
    delta_only: tuple[tuple[tuple[str, ...], str], ...] = (
        (("VACUUM",), "VACUUM"),
        (("OPTIMIZE",), "OPTIMIZE"),
        (("RESTORE",), "RESTORE"),
        (("GENERATE",), "GENERATE"),
        (("CONVERT", "TO", "DELTA"), "CONVERT TO DELTA"),
    )
    for words, head in delta_only:
        if p.accept(*words):
            return head
    # statements Spark also has: Delta's only when they name a Delta table
    if p.accept("MERGE"):
        p.accept("WITH", "SCHEMA", "EVOLUTION")
        if p.accept("INTO") and p.table_ref() is not None:
            p.i = 1
            return "MERGE"
    p.i = 0
    if p.accept("INSERT") and (p.accept("INTO") or p.accept("OVERWRITE")):
        p.accept("TABLE")
        if p.table_ref() is not None:
            p.i = 1
            return "INSERT"
    p.i = 0
    spark_too: tuple[tuple[tuple[str, ...], str], ...] = (
        (("DELETE", "FROM"), "DELETE"),
        (("UPDATE",), "UPDATE"),
        (("SHOW", "TBLPROPERTIES"), "SHOW TBLPROPERTIES"),
        (("ALTER", "TABLE"), "ALTER TABLE"),
    )
    for words, head in spark_too:
        if p.accept(*words):
            if p.table_ref() is not None:
                p.i = len(words)
                return head
            p.i = 0
    if p.accept("SHOW", "COLUMNS") and (p.accept("IN") or p.accept("FROM")):
        save = p.i
        if p.table_ref() is not None:
            p.i = save
            return "SHOW COLUMNS"
    p.i = 0
    if p.accept("CREATE", "TABLE"):
        p.accept("IF", "NOT", "EXISTS")
        if p.peek() is not None and p.peek().kind in ("word", "ident"):  # type: ignore[union-attr]
            p.dotted()
            if p.accept("USING", "DELTA") and p.at("LOCATION"):
                p.i = 2
                return "CREATE TABLE"
    p.i = 0
    return None


def _query(spark, p: Parser, statement: str, args, kwargs):
    refs = query_refs(p)
    if not refs:
        return spark.sql(statement, args, **kwargs)
    from delta_pyds.spark.native.read import read_delta

    frames: dict[str, Any] = {}
    pieces = []
    pos = 0
    for n, ref in enumerate(refs):
        key = f"delta_pyds_table_{n}"
        frames[key] = read_delta(spark, ref.path, **ref.read_options())
        pieces.append(_escape(statement[pos : ref.start]))
        pieces.append("{" + key + "}")
        pos = ref.end
    pieces.append(_escape(statement[pos:]))
    clash = set(frames) & set(kwargs)
    if clash:
        raise ValueError(f"sql: keyword arguments {sorted(clash)} are reserved by delta_pyds.sql")
    return spark.sql("".join(pieces), args, **frames, **kwargs)


def _escape(text: str) -> str:
    # the query goes through pyspark's str.format-style formatter once DataFrames are passed
    return text.replace("{", "{{").replace("}", "}}")


def _table(spark, ref: TableRef):
    from delta_pyds.spark.tables import DeltaTable

    if ref.version is not None or ref.timestamp is not None:
        raise SqlParseError(f"time travel ({ref.path}@...) is only supported in queries and RESTORE")
    return DeltaTable.forPath(spark, ref.path)


def _affected(spark, path: str, before: int, metrics: tuple[str, ...], columns: tuple[str, ...]):
    """One row of the metrics of the commit made after version ``before`` (zeros: none made)."""
    last = commit_history(path, limit=1)
    values = [0] * len(columns)
    if last and last[0]["version"] > before:
        om = last[0].get("operationMetrics") or {}
        values = [int(om.get(m, 0) or 0) for m in metrics]
        if len(columns) > len(metrics):  # num_affected_rows first: the sum of the rest
            values = [sum(values)] + values
    return spark.createDataFrame([tuple(values)], ", ".join(f"{c} long" for c in columns))


def _version(path: str) -> int:
    last = commit_history(path, limit=1)
    if not last:
        raise TableNotFoundError(f"no Delta table at {path}")
    return int(last[0]["version"])


# ------------------------------------------------------------------ statements
def _describe_history(spark, p: Parser) -> Callable[[], Any]:
    ref = p.require_table()
    limit = p.integer() if p.accept("LIMIT") else None
    p.end()
    return lambda: _table(spark, ref).history(limit)


def _describe_detail(spark, p: Parser):
    ref = p.require_table(allow_string=True)
    p.end()
    return lambda: _table(spark, ref).detail()


def _vacuum(spark, p: Parser):
    ref = p.require_table(allow_string=True)
    hours = None
    if p.accept("RETAIN"):
        hours = p.number()
        p.expect("HOURS")
    dry = p.accept("DRY", "RUN")
    p.end()
    return lambda: _table(spark, ref).vacuum(hours, dry)


def _optimize(spark, p: Parser):
    ref = p.require_table(allow_string=True)
    where = p.until("ZORDER") if p.accept("WHERE") else None
    zorder = p.name_list() if p.accept("ZORDER", "BY") else None
    p.end()

    def run():
        builder = _table(spark, ref).optimize()
        if where is not None:
            builder = builder.where(where)
        return builder.executeZOrderBy(*zorder) if zorder else builder.executeCompaction()

    return run


def _restore(spark, p: Parser):
    p.accept("TABLE")
    ref = p.require_table()
    p.expect("TO")
    if ref.version is not None or ref.timestamp is not None:
        p.fail("time travel belongs after TO")
    p.accept("FOR")
    version = timestamp = None
    if p.accept("VERSION", "AS", "OF"):
        version = p.integer()
    elif p.accept("TIMESTAMP", "AS", "OF"):
        timestamp = p.string()
    else:
        p.fail("expected VERSION AS OF or TIMESTAMP AS OF")
    p.end()

    def run():
        dt = _table(spark, ref)
        return dt.restoreToVersion(version) if version is not None else dt.restoreToTimestamp(timestamp)

    return run


def _delete(spark, p: Parser):
    ref = p.require_table()
    alias = p.alias("WHERE")
    if p.accept("WHERE"):
        if p.done():
            p.fail("expected a condition")
        condition: str | None = unqualify(p.rest(), alias)
    else:
        condition = None
    p.end()

    def run():
        dt = _table(spark, ref)
        before = _version(ref.path)
        dt.delete(condition)
        return _affected(spark, ref.path, before, ("numDeletedRows",), ("num_affected_rows",))

    return run


def _update(spark, p: Parser):
    ref = p.require_table()
    alias = p.alias("SET")
    p.expect("SET")
    sets: dict[str, str] = {}
    for item in p.split_top(("WHERE",)):
        sub = Parser(item)
        sub.statement, sub.form = p.statement, p.form
        column = sub.dotted()
        if alias and column.lower().startswith(alias.lower() + "."):
            column = column[len(alias) + 1 :]
        sub.expect("=")
        if sub.done():
            p.fail(f"no value for {column}")
        sets[column] = unqualify(sub.rest(), alias)
    condition = unqualify(p.rest(), alias) if p.accept("WHERE") else None
    p.end()

    def run():
        dt = _table(spark, ref)
        before = _version(ref.path)
        dt.update(condition, sets)
        return _affected(spark, ref.path, before, ("numUpdatedRows",), ("num_affected_rows",))

    return run


def _show_tblproperties(spark, p: Parser):
    ref = p.require_table()
    key = None
    if p.accept("("):
        key = p.string() if p.peek() is not None and p.peek().kind == "string" else p.dotted()  # type: ignore[union-attr]
        p.expect(")")
    p.end()

    def run():
        from delta_pyds.table.snapshot import Snapshot

        _table(spark, ref)
        snap = Snapshot.load(ref.path)
        props = dict(snap.configuration)
        props.setdefault("delta.minReaderVersion", str(snap.protocol.min_reader_version))
        props.setdefault("delta.minWriterVersion", str(snap.protocol.min_writer_version))
        rows = sorted(props.items())
        if key is not None:
            rows = [(key, props.get(key, f"Table {ref.path} does not have property: {key}"))]
        return spark.createDataFrame(rows, "key string, value string")

    return run


def _show_columns(spark, p: Parser):
    ref = p.require_table()
    p.end()
    return lambda: spark.createDataFrame(
        [(f.name,) for f in _table(spark, ref).toDF().schema.fields], "col_name string"
    )


def _alter_table(spark, p: Parser):
    ref = p.require_table()
    if p.accept("SET", "TBLPROPERTIES"):
        props = _properties(p)
        p.end()
        return lambda: _empty(spark, _table(spark, ref).setProperties(props))
    if p.accept("UNSET", "TBLPROPERTIES"):
        if_exists = p.accept("IF", "EXISTS")
        p.expect("(")
        keys = [p.string() if p.peek() is not None and p.peek().kind == "string" else p.dotted()]  # type: ignore[union-attr]
        while p.accept(","):
            keys.append(p.string() if p.peek() is not None and p.peek().kind == "string" else p.dotted())  # type: ignore[union-attr]
        p.expect(")")
        p.end()
        return lambda: _empty(spark, _unset(ref, keys, if_exists))
    if p.accept("ADD", "CONSTRAINT"):
        name = p.word()
        p.expect("CHECK")
        expr = p.parenthesized()
        p.end()
        return lambda: _empty(spark, _add_constraint(spark, ref, name, expr))
    if p.accept("DROP", "CONSTRAINT"):
        if_exists = p.accept("IF", "EXISTS")
        name = p.word()
        p.end()
        return lambda: _empty(spark, _unset(ref, [f"delta.constraints.{name.lower()}"], if_exists))
    p.fail("expected SET TBLPROPERTIES, UNSET TBLPROPERTIES, ADD CONSTRAINT or DROP CONSTRAINT")
    raise AssertionError


def _add_constraint(spark, ref: TableRef, name: str, expr: str) -> int:
    from delta_pyds.errors import ConstraintViolationError

    dt = _table(spark, ref)
    bad = dt.toDF().where(f"NOT coalesce(({expr}), true)").count()
    if bad:
        raise ConstraintViolationError(
            f"ALTER TABLE ADD CONSTRAINT {name} CHECK ({expr}): {bad} existing rows violate it; nothing changed"
        )
    return dt.setProperties({f"delta.constraints.{name.lower()}": expr})


def _properties(p: Parser) -> dict[str, str]:
    p.expect("(")
    props: dict[str, str] = {}
    while True:
        t = p.peek()
        key = p.string() if t is not None and t.kind == "string" else p.dotted()
        p.accept("=")
        t = p.peek()
        if t is None or t.kind not in ("string", "number", "word"):
            p.fail("expected a property value")
        assert t is not None
        props[key] = t.value()
        p.i += 1
        if not p.accept(","):
            break
    p.expect(")")
    return props


def _unset(ref: TableRef, keys: list[str], if_exists: bool) -> int | None:
    from delta_pyds.operations.properties import unset_properties

    return unset_properties(ref.path, keys, if_exists=if_exists)


def _empty(spark, _result: Any):
    return spark.createDataFrame([], "result string").drop("result")


def _generate(spark, p: Parser):
    mode = p.word()
    p.expect("FOR", "TABLE")
    ref = p.require_table(allow_string=True)
    p.end()
    return lambda: _empty(spark, _table(spark, ref).generate(mode))


def _convert(spark, p: Parser):
    from delta_pyds.spark.tables import DeltaTable

    t = p.peek()
    if t is None or t.upper != "PARQUET" or not p.at("PARQUET", "."):
        p.fail("expected parquet.`path`")
    p.i += 2
    tok = p.peek()
    if tok is None or tok.kind != "ident":
        p.fail("expected parquet.`path`")
    assert tok is not None
    identifier = f"parquet.{tok.text}"
    p.i += 1
    schema = p.parenthesized() if p.accept("PARTITIONED", "BY") else None
    p.end()
    return lambda: _empty(spark, DeltaTable.convertToDelta(spark, identifier, schema))


def _create_table(spark, p: Parser):
    if_not_exists = p.accept("IF", "NOT", "EXISTS")
    name = p.dotted()
    p.expect("USING", "DELTA")
    p.expect("LOCATION")
    path = p.string()
    p.end()

    def run():
        names = _NAMES.setdefault(spark, {})
        if name.lower() in names and not if_not_exists and names[name.lower()] != path:
            raise SqlParseError(f"CREATE TABLE: the session name {name} already names {names[name.lower()]}")
        from delta_pyds.spark.tables import DeltaTable

        if not DeltaTable.isDeltaTable(spark, path):
            raise TableNotFoundError(
                f"CREATE TABLE {name} USING delta LOCATION '{path}': no Delta table there "
                "(a table with columns is created by DeltaTable.create(spark).location(path))"
            )
        names.setdefault(name.lower(), path)
        return _empty(spark, None)

    return run


def _merge(spark, p: Parser):
    evolve = p.accept("WITH", "SCHEMA", "EVOLUTION")
    p.expect("INTO")
    ref = p.require_table()
    target_alias = p.alias("USING")
    p.expect("USING")
    source: Callable[[], Any]
    if p.at("("):
        query = p.parenthesized()
        source = lambda: sql(spark, query)  # noqa: E731
    else:
        src = p.table_ref(time_travel=True)
        if src is not None:
            source = lambda: _read(spark, src)  # noqa: E731
        else:
            name = p.dotted()
            source = lambda: spark.table(name)  # noqa: E731
    source_alias = p.alias("ON")
    p.expect("ON")
    condition = p.until("WHEN")
    clauses: list[tuple[str, str | None, Any]] = []
    while p.accept("WHEN"):
        if p.accept("MATCHED"):
            kind = "matched"
        elif p.accept("NOT", "MATCHED"):
            kind = "source" if p.accept("BY", "SOURCE") else "target"
            if kind == "target":
                p.accept("BY", "TARGET")
        else:
            p.fail("expected MATCHED or NOT MATCHED")
        cond = p.until("THEN", allow_end=False) if p.accept("AND") else None
        p.expect("THEN")
        if kind != "target" and p.accept("DELETE"):
            clauses.append((kind + "_delete", cond, None))
        elif kind != "target" and p.accept("UPDATE", "SET"):
            if kind == "matched" and p.accept("*"):
                clauses.append(("matched_update_all", cond, None))
            else:
                clauses.append((kind + "_update", cond, _assignments(p, target_alias)))
        elif kind == "target" and p.accept("INSERT"):
            if p.accept("*"):
                clauses.append(("insert_all", cond, None))
            else:
                columns = [_strip(c, target_alias) for c in p.name_list()]
                p.expect("VALUES")
                p.expect("(")
                values = p.split_top(())
                p.expect(")")
                if len(values) != len(columns):
                    p.fail(f"{len(columns)} columns but {len(values)} values")
                clauses.append(("insert", cond, dict(zip(columns, values))))
        else:
            p.fail("expected UPDATE SET, DELETE or INSERT")
    if not clauses:
        p.fail("expected WHEN MATCHED / WHEN NOT MATCHED clauses")
    p.end()

    def run():
        dt = _table(spark, ref)
        if target_alias:
            dt = dt.alias(target_alias)
        df = source()
        if source_alias:
            df = df.alias(source_alias)
        b = dt.merge(df, condition)
        if evolve:
            b = b.withSchemaEvolution()
        for what, cond, arg in clauses:
            if what == "matched_delete":
                b = b.whenMatchedDelete(cond)
            elif what == "matched_update_all":
                b = b.whenMatchedUpdateAll(cond)
            elif what == "matched_update":
                b = b.whenMatchedUpdate(cond, arg)
            elif what == "source_delete":
                b = b.whenNotMatchedBySourceDelete(cond)
            elif what == "source_update":
                b = b.whenNotMatchedBySourceUpdate(cond, arg)
            elif what == "insert_all":
                b = b.whenNotMatchedInsertAll(cond)
            else:
                b = b.whenNotMatchedInsert(cond, arg)
        return b.execute()

    return run


def _strip(column: str, alias: str | None) -> str:
    if alias and column.lower().startswith(alias.lower() + "."):
        return column[len(alias) + 1 :]
    return column


def _assignments(p: Parser, alias: str | None) -> dict[str, str]:
    sets: dict[str, str] = {}
    for item in p.split_top(("WHEN", "WHERE")):
        sub = Parser(item)
        sub.statement, sub.form = p.statement, p.form
        column = _strip(sub.dotted(), alias)
        sub.expect("=")
        if sub.done():
            p.fail(f"no value for {column}")
        sets[column] = sub.rest()
    return sets


def _read(spark, ref: TableRef):
    from delta_pyds.spark.native.read import read_delta

    return read_delta(spark, ref.path, **ref.read_options())


def _insert(spark, p: Parser):
    overwrite = p.accept("OVERWRITE")
    if not overwrite:
        p.expect("INTO")
    p.accept("TABLE")
    ref = p.require_table()
    columns = None
    if p.at("(") and not (p.peek(1) is not None and p.peek(1).upper in ("SELECT", "WITH", "VALUES")):  # type: ignore[union-attr]
        columns = p.name_list()
    replace_where = p.until("SELECT", "WITH", "VALUES", "FROM", "TABLE") if p.accept("REPLACE", "WHERE") else None
    if p.done():
        p.fail("expected a query (SELECT ..., VALUES ...)")
    query = p.rest()

    def run():
        from delta_pyds.spark.native.write import write_delta

        _table(spark, ref)
        df = sql(spark, query)
        names = columns or _read(spark, ref).columns
        if len(df.columns) != len(names):
            raise SqlParseError(
                f"INSERT: the query gives {len(df.columns)} columns, the table {'list ' if columns else ''}"
                f"has {len(names)} ({', '.join(names)})"
            )
        df = df.toDF(*names)
        before = _version(ref.path)
        options = {"replaceWhere": replace_where} if replace_where else {}
        write_delta(df, ref.path, mode="overwrite" if overwrite or replace_where else "append", **options)
        return _affected(spark, ref.path, before, ("numOutputRows",), ("num_affected_rows", "num_inserted_rows"))

    return run


_HANDLERS: Mapping[str, Callable[[Any, Parser], Callable[[], Any]]] = {
    "DESCRIBE HISTORY": _describe_history,
    "DESCRIBE DETAIL": _describe_detail,
    "VACUUM": _vacuum,
    "OPTIMIZE": _optimize,
    "RESTORE": _restore,
    "DELETE": _delete,
    "UPDATE": _update,
    "SHOW TBLPROPERTIES": _show_tblproperties,
    "SHOW COLUMNS": _show_columns,
    "ALTER TABLE": _alter_table,
    "GENERATE": _generate,
    "CONVERT TO DELTA": _convert,
    "CREATE TABLE": _create_table,
    "MERGE": _merge,
    "INSERT": _insert,
}
