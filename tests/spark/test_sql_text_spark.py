"""One reading of SQL text, checked against Spark itself (the oracle).

Spark evaluates every condition; whatever this package reads from the same text (literal
values, files to skip, MERGE target filters) must be what Spark reads, or nothing. Each test
generates text (``sql_text_gen``: escapes, raw and adjacent literals, comments, quotes,
Unicode, numeric suffixes, random keyword case) and compares with Spark's own parse and
evaluation of the same text:

* literal values: one ``SELECT`` of hundreds of generated literals, Spark's values against
  the lexer's and the expression parser's (also under ``spark.sql.parser.escapedStringLiterals``);
* file pruning: for hundreds of generated conditions over a table of typed columns, every
  file holding a row Spark's filter matches is kept by the skipping the read paths and DML
  use, and by MERGE's target filter (and pruning does happen, so the check is not vacuous);
* both read paths and DELETE / UPDATE / MERGE on generated conditions: the rows are Spark's.
"""

from __future__ import annotations

import datetime as dt
import decimal
import os
import random

import pyarrow as pa
import pytest
import sql_text_gen as gen
from pyspark.sql import functions as F

from delta_pyds import DeltaTable, read_delta
from delta_pyds.errors import ExpressionError
from delta_pyds.expressions.ast import Lit
from delta_pyds.expressions.lexer import DEFAULT_DIALECT, Dialect, tokenize
from delta_pyds.expressions.parser import parse_expression
from delta_pyds.expressions.to_predicates import skipping_predicates
from delta_pyds.read.scan_plan import plan_scan
from delta_pyds.table.snapshot import Snapshot
from delta_pyds.write.plan import commit_arrow

FILES = 12
BASE_DAY = dt.date(2024, 1, 1)
PARTS = ["a/b", "x=y", "50%", "é", "sp ace", "it's"]


def _file_rows(k: int) -> dict:
    ids = list(range(k * 5, k * 5 + 5))
    return {
        "id": pa.array(ids, pa.int64()),
        "i": pa.array(ids, pa.int32()),
        "s": pa.array([gen.TRICKY[(k + j) % len(gen.TRICKY)] if j < 4 else None for j in range(5)], pa.string()),
        "d": pa.array([BASE_DAY + dt.timedelta(days=k * 3 + j) for j in range(5)], pa.date32()),
        "dec": pa.array([decimal.Decimal(k * 125 + j) / 100 for j in range(5)], pa.decimal128(10, 2)),
        "x": pa.array([k * 0.5 + j / 10 for j in range(5)], pa.float64()),
        "p": pa.array([PARTS[k % len(PARTS)]] * 5, pa.string()),
    }


@pytest.fixture(scope="module")
def typed_table(tmp_path_factory):
    """``FILES`` files of 5 rows, each file a narrow range of every column (selective stats),
    partitioned by ``p`` (values Spark escapes in paths)."""
    path = str(tmp_path_factory.mktemp("sqltext") / "t")
    for k in range(FILES):
        commit_arrow(path, pa.table(_file_rows(k)), options={"partitionBy": "p"} if k == 0 else None)
    return path


# ---------------------------------------------------------------- literal values


def _spark_values(spark, literals: list[str]) -> list:
    row = spark.sql("SELECT " + ", ".join(f"{lit} AS c{n}" for n, lit in enumerate(literals))).collect()[0]
    return [row[f"c{n}"] for n in range(len(literals))]


def _our_value(text: str, dialect: Dialect = DEFAULT_DIALECT):
    node = parse_expression(text, dialect)
    assert isinstance(node, Lit), text
    return node.value


def test_string_literals_read_as_spark_reads_them(spark):
    rng = random.Random(35)
    values = gen.TRICKY + [
        "".join(rng.choice("aé😀'\"\\\n\t%_-/*` Z0") for _ in range(rng.randrange(1, 9))) for _ in range(80)
    ]
    literals = [gen.string_literal(rng, rng.choice(values)) for _ in range(400)]
    literals += ["'\\u00e9'", "'\\101'", "'\\Z'", "'\\%'", "'\\_'", "r'C:\\'", "'a''b'", '"a""b"', "'\\u00'", "'\\400'"]
    theirs = _spark_values(spark, literals)
    for text, value in zip(literals, theirs):
        assert _our_value(text) == value, text
    # the same text under escapedStringLiterals: taken as written
    spark.conf.set("spark.sql.parser.escapedStringLiterals", "true")
    try:
        plain = [lit for lit in literals[:150] if "\n" not in lit]
        theirs = _spark_values(spark, plain)
    finally:
        spark.conf.unset("spark.sql.parser.escapedStringLiterals")
    escaped = Dialect(escaped_string_literals=True)
    for text, value in zip(plain, theirs):
        assert _our_value(text, escaped) == value, text


def test_numeric_literals_read_as_spark_reads_them(spark):
    rng = random.Random(36)
    literals = [gen.number_literal(rng, rng.randrange(-200, 200)) for _ in range(150)]
    literals += ["1e2", ".5", "1.", "1.e3", "1E-2BD", "99999999999999999999", "9223372036854775807", "2147483648"]
    literals += ["0.000001", "123.4500", "-0.5", "1.5D", "7Y", "-7S"]
    theirs = _spark_values(spark, literals)
    for text, value in zip(literals, theirs):
        ours = _our_value(text)
        if isinstance(value, float) or isinstance(ours, float):
            assert float(ours) == pytest.approx(value, rel=1e-6), text
        else:
            assert ours == value, text


def test_tokens_join_back_and_blanks_are_what_spark_skips(spark):
    # a comment or whitespace between two literals: Spark concatenates them; anything else is not blank
    rng = random.Random(37)
    for _ in range(40):
        sep = gen.blank(rng)
        text = f"'a'{sep}'b'"
        assert "".join(t.text for t in tokenize(text)) == text
        assert _our_value(text) == _spark_values(spark, [text])[0] == "ab"


# ---------------------------------------------------------------- conditions and pruning


def _atom(rng: random.Random) -> str:
    k = rng.randrange(FILES)
    rows = _file_rows(k)
    j = rng.randrange(5)
    col = gen.column
    kind = rng.randrange(9)
    op = rng.choice(["=", "==", "<", "<=", ">", ">=", "<=>", "!=", "<>"])
    if kind == 0:
        value = rows["i"][j].as_py()
        lit = gen.number_literal(rng, value)
        return (
            f"{col(rng, 'i')}{gen.blank(rng)}{op}{gen.blank(rng)}{lit}"
            if rng.random() < 0.7
            else f"{lit} {op} {col(rng, 'i')}"
        )
    if kind == 1:
        value = rng.choice(gen.TRICKY)
        return f"{col(rng, 's')}{gen.blank(rng)}{op}{gen.blank(rng)}{gen.string_literal(rng, value)}"
    if kind == 2:
        return f"{col(rng, 'p')} {op} {gen.string_literal(rng, rng.choice(PARTS))}"
    if kind == 3:
        return f"{col(rng, 'd')} {op} {gen.date_literal(rng, rows['d'][j].as_py())}"
    if kind == 4:
        return f"{col(rng, 'dec')} {op} {gen.decimal_literal(rng, rows['dec'][j].as_py())}"
    if kind == 5:
        values = ", ".join(gen.string_literal(rng, rng.choice(gen.TRICKY)) for _ in range(rng.randrange(1, 4)))
        return f"{col(rng, 's')} {gen.keyword(rng, 'in')}{gen.blank(rng)}({values})"
    if kind == 6:
        lo = rows["id"][j].as_py()
        between, and_ = gen.keyword(rng, "between"), gen.keyword(rng, "and")
        return f"{col(rng, 'id')} {between} {gen.number_literal(rng, lo)} {and_} {gen.number_literal(rng, lo + 3)}"
    if kind == 7:
        return f"{col(rng, 's')} {gen.keyword(rng, 'is')} {rng.choice(['', gen.keyword(rng, 'not') + ' '])}NULL"
    prefix = rng.choice(gen.TRICKY)[:2]
    return f"{col(rng, 's')} {gen.keyword(rng, 'like')} {gen.string_literal(rng, prefix + '%')}"


def condition(rng: random.Random, depth: int = 0) -> str:
    if depth >= 2 or rng.random() < 0.4:
        atom = _atom(rng)
        return f"{gen.keyword(rng, 'not')} {atom}" if rng.random() < 0.1 else atom
    left, right = condition(rng, depth + 1), condition(rng, depth + 1)
    joined = f"{left}{gen.blank(rng)}{gen.keyword(rng, rng.choice(['and', 'and', 'or']))}{gen.blank(rng)}{right}"
    return f"({joined})" if rng.random() < 0.5 else joined


def _conditions(spark, path: str, seed: int, count: int) -> list[str]:
    """``count`` generated conditions Spark accepts (the few it rejects are not checked)."""
    rng = random.Random(seed)
    base = read_delta(spark, path)
    out = []
    while len(out) < count:
        text = condition(rng)
        try:
            base.select(F.expr(f"({text}) IS NULL"))  # analysed now: Spark's parse and types
        except Exception:  # e.g. a comparison Spark's types refuse
            continue
        out.append(text)
    return out


def _spark_files(spark, path: str, conditions: list[str]) -> list[set[str]]:
    """Per condition, the files holding a row Spark's filter matches (one query for all)."""
    base = read_delta(spark, path).withColumn("__file", F.input_file_name())
    flags = [F.expr(f"coalesce(({c}), false)").alias(f"c{n}") for n, c in enumerate(conditions)]
    rows = base.select("__file", *flags).collect()
    out: list[set[str]] = [set() for _ in conditions]
    for r in rows:
        name = os.path.basename(r["__file"])
        for n in range(len(conditions)):
            if r[f"c{n}"]:
                out[n].add(name)
    return out


def _kept(snap: Snapshot, text: str) -> set[str] | None:
    preds = skipping_predicates(text, snap.schema, DEFAULT_DIALECT)
    if not preds:
        return None
    return {os.path.basename(p) for p in plan_scan(snap, predicates=preds).files.column("path").to_pylist()}


def test_pruning_keeps_every_file_spark_matches(spark, typed_table):
    conditions = _conditions(spark, typed_table, 38, 300)
    snap = Snapshot.load(typed_table)
    everything = {os.path.basename(p) for p in snap.files.column("path").to_pylist()}
    matched = _spark_files(spark, typed_table, conditions)
    pruned = parsed = 0
    for text, spark_files in zip(conditions, matched):
        try:
            parse_expression(text)
            parsed += 1
        except ExpressionError:
            pass
        kept = _kept(snap, text)
        if kept is None:
            continue
        assert spark_files <= kept, text
        pruned += kept != everything
    # not vacuous: most generated text is read, and much of it prunes
    assert parsed >= 0.9 * len(conditions) and pruned >= 0.3 * len(conditions), (parsed, pruned)


def _qualified(text: str, alias: str) -> str:
    """``text`` with every column reference qualified by ``alias`` (token-wise)."""
    from delta_pyds.expressions.lexer import tokenize as lex

    columns = {"i", "s", "p", "d", "dec", "x", "id"}
    out = []
    for t in lex(text):
        name = t.value() if t.kind in ("word", "ident") else None
        out.append(f"{alias}.{t.text}" if name is not None and name.lower() in columns else t.text)
    return "".join(out)


def test_merge_target_filter_keeps_every_file_spark_matches(spark, typed_table):
    from delta_pyds.spark.commands.merge.pruning import target_filter

    conditions = _conditions(spark, typed_table, 39, 60)
    snap = Snapshot.load(typed_table)
    target = read_delta(spark, typed_table).withColumn("__file", F.input_file_name()).alias("t")
    source = spark.createDataFrame([(k * 5 + 1,) for k in range(0, FILES, 2)], "id long").alias("src")
    schema = read_delta(spark, typed_table).schema
    pruned = 0
    for text in conditions:
        merge_on = f"t.id = src.id {gen.keyword(random.Random(len(text)), 'and')} ({_qualified(text, 't')})"
        files = {os.path.basename(r[0]) for r in target.join(source, on=F.expr(merge_on)).select("t.__file").collect()}
        found = target_filter(merge_on, "t", schema, source, dialect=DEFAULT_DIALECT)
        if found is None:
            continue
        kept = _kept(snap, found) if found != "FALSE" else set()
        assert kept is None or files <= kept, (merge_on, found)
        pruned += kept is not None
    assert pruned >= len(conditions) // 2


def test_read_paths_and_dml_agree_with_spark(spark, typed_table, tmp_path):
    """A few generated conditions end to end: both read paths give Spark's rows, DELETE
    leaves exactly the rows Spark's filter does not match, UPDATE changes exactly the rows it
    matches."""
    import shutil

    conditions = _conditions(spark, typed_table, 40, 6)
    base = read_delta(spark, typed_table).select("id")
    every = {r[0] for r in base.collect()}
    for n, text in enumerate(conditions):
        expected = {r[0] for r in read_delta(spark, typed_table).where(text).select("id").collect()}
        assert {r[0] for r in read_delta(spark, typed_table, where=text).select("id").collect()} == expected, text
        source = spark.read.format("pydelta").load(typed_table).where(text).select("id")
        assert {r[0] for r in source.collect()} == expected, text
        copy = str(tmp_path / f"c{n}")
        shutil.copytree(typed_table, copy)
        if n % 2:
            DeltaTable.forPath(spark, copy).delete(text)
            assert {r[0] for r in read_delta(spark, copy).select("id").collect()} == every - expected, text
        else:
            DeltaTable.forPath(spark, copy).update(text, {"i": "i + 1000"})
            changed = {r[0] for r in read_delta(spark, copy).where("i >= 1000").select("id").collect()}
            assert changed == expected, text


def test_the_evaluator_reads_conditions_as_spark(spark, typed_table):
    """CHECK constraints and replaceWhere evaluate SQL conditions in Python: where the parser
    reads a generated condition, its value on every row (NULL included) is Spark's."""
    from delta_pyds.expressions.evaluator import evaluate_predicate

    conditions = _conditions(spark, typed_table, 41, 150)
    data = pa.concat_tables(pa.table(_file_rows(k)) for k in range(FILES)).sort_by("id").combine_chunks()
    flags = [F.expr(f"({c})").alias(f"c{n}") for n, c in enumerate(conditions)]
    theirs = read_delta(spark, typed_table).select("id", *flags).orderBy("id").collect()
    assert [r["id"] for r in theirs] == data.column("id").to_pylist()
    checked = 0
    for n, text in enumerate(conditions):
        try:
            node = parse_expression(text)
        except ExpressionError:
            continue
        ours = evaluate_predicate(node, data.to_batches()[0]).to_pylist()
        assert ours == [r[f"c{n}"] for r in theirs], text
        checked += 1
    assert checked >= 0.9 * len(conditions)


def test_merge_agrees_with_spark(spark, typed_table, tmp_path):
    """MERGE on generated conditions: exactly the target rows Spark's join matches are updated."""
    import shutil

    conditions = _conditions(spark, typed_table, 42, 4)
    source = spark.createDataFrame([(k * 5 + j,) for k in range(FILES) for j in (0, 3)], "id long").alias("src")
    for n, text in enumerate(conditions):
        merge_on = f"t.id = src.id AND ({_qualified(text, 't')})"
        target = read_delta(spark, typed_table).alias("t")
        expected = {r[0] for r in target.join(source, on=F.expr(merge_on)).select("t.id").collect()}
        copy = str(tmp_path / f"m{n}")
        shutil.copytree(typed_table, copy)
        DeltaTable.forPath(spark, copy).alias("t").merge(source, merge_on).whenMatchedUpdate(
            set={"i": "t.i + 1000"}
        ).execute()
        changed = {r[0] for r in read_delta(spark, copy).where("i >= 1000").select("id").collect()}
        assert changed == expected, merge_on
