"""Catalog names that cannot be redirected (the in-memory catalog of the shared session): an
entry's type, provider and location come from the JVM catalog's ``CatalogTable`` on classic
sessions, never from text users write into (generated hostile comments, TBLPROPERTIES values,
column comments, view comments, temporary view names; Spark refuses such table names); the
text reading a Spark Connect client must use (``text_lookup``, the same SQL on a classic
session) takes a field only when it reads one way and refuses otherwise; names compare as
Spark's catalog compares them under ``spark.sql.caseSensitive``; ``spark.newSession()``;
``CREATE TABLE v`` beside a temporary view ``v``. Each test works in its own database located
in tmp_path."""

from __future__ import annotations

import random
import uuid

import pytest

import delta_pyds
from delta_pyds import DeltaTable
from delta_pyds.errors import AmbiguousCatalogEntryError, NotADeltaTableError
from delta_pyds.spark.catalog.lookup import information_fields, lookup, sql_string, text_lookup
from delta_pyds.spark.front_doors.sql_door import original_sql as spark_sql

# pieces of hostile text: line ends of every kind, the keys Spark prints, unicode, ": "
FRAGMENTS = (
    "\n",
    "\r\n",
    "\r",
    "\u2028",
    "\x85",
    "\x0b",
    "Location: file:{other}",
    "Provider: parquet",
    "Type: VIEW",
    "Type: MANAGED",
    "  Location: {other}",
    "location: {other}",
    "Provider: delta",
    "Comment: x",
    "Table Properties: [",
    "]",
    "é ü 漢字",
    ": ",
    "plain words",
)


def hostile(rng: random.Random, other: str) -> str:
    return "".join(rng.choice(FRAGMENTS) for _ in range(rng.randint(2, 7))).format(other=other)


@pytest.fixture
def db(spark, tmp_path):
    name = f"trust_{uuid.uuid4().hex[:8]}"
    spark.sql(f"CREATE DATABASE {name} LOCATION '{tmp_path}/{name}.db'")
    yield name
    spark.sql(f"DROP DATABASE {name} CASCADE")


def ids(df):
    return sorted(r.id for r in df.collect())


def test_information_fields_take_a_field_only_when_it_reads_one_way():
    base = "Catalog: spark_catalog\nDatabase: d\nTable: t\nType: EXTERNAL\nProvider: delta\n"
    base += "{comment}Location: file:/a\n"
    got = information_fields(base.format(comment="Comment: fine words\n"), "t")
    assert got == {"Type": "EXTERNAL", "Provider": "delta", "Location": "file:/a"}
    assert information_fields(base.format(comment="Partition Provider: Catalog\n"), "t")["Provider"] == "delta"
    for comment in (
        "Comment: x\nLocation: file:/b\n",
        "Comment: x\rLocation: file:/b\n",
        "Comment: x\u2028Provider: parquet\n",
        "Comment: x\x85Type: VIEW\n",
        "Comment: x\n  location: /b\n",
        "Comment: x\nTYPE: MANAGED\n",
    ):
        with pytest.raises(AmbiguousCatalogEntryError, match="refused rather than guessed"):
            information_fields(base.format(comment=comment), "t")
    view = "Table: v\nType: VIEW\nComment: x\nProvider: delta\nLocation: file:/b\n"
    with pytest.raises(AmbiguousCatalogEntryError, match="provider or location"):
        information_fields(view, "v")
    moved = "Table: t\nType: EXTERNAL\nComment: x\nProvider: delta\nLocation: file:/b\n"
    with pytest.raises(AmbiguousCatalogEntryError, match="not where Spark prints it"):
        information_fields(moved, "t")
    with pytest.raises(AmbiguousCatalogEntryError, match="no 'Type: ' line"):
        information_fields("Table: t\nComment: x", "t")


def test_generated_hostile_metadata_never_redirects_a_name(spark, db, tmp_path):
    a, other = str(tmp_path / "a"), str(tmp_path / "other")
    delta_pyds.write_delta(spark.range(4), a)
    delta_pyds.write_delta(spark.range(100, 103), other)
    rng = random.Random(44)
    refused = 0
    names = []
    for i in range(8):
        comment, value = hostile(rng, other), hostile(rng, other)
        name = f"h{i}"
        spark_sql(spark)(  # Spark's own statement: delta-spark would refuse properties the log lacks
            f"CREATE TABLE {db}.{name} USING delta LOCATION '{a}' COMMENT {sql_string(comment)}"
            f" TBLPROPERTIES ('p' = {sql_string(value)}, {sql_string(hostile(rng, other))} = 'v')"
        )
        names.append(name)
    # Spark refuses such table names; a temporary view's name, a view's comment and a parquet
    # table's column comment may hold them
    odd = f"n\nLocation: file:{other}\nProvider: delta"
    with pytest.raises(Exception, match="INVALID_SCHEMA_OR_RELATION_NAME"):
        spark.sql(f"CREATE TABLE {db}.`{odd}` USING delta LOCATION '{a}'")
    spark.sql(
        f"CREATE TABLE {db}.pq (Location INT COMMENT 'Type: EXTERNAL\nProvider: delta\nLocation: file:{other}')"
        " USING parquet"
    )
    spark.sql(f"CREATE VIEW {db}.pv COMMENT 'x\nProvider: delta\nLocation: file:{other}' AS SELECT 1 AS id")
    view_name = f"`v\nType: EXTERNAL\nProvider: delta\nLocation: file:{other}`"
    spark.range(1).createOrReplaceTempView(view_name)
    for name in names:
        entry = lookup(spark, (db, name))  # the JVM catalog: the stored fields, whatever the text says
        assert entry is not None and entry.is_delta and entry.location == a, name
        try:  # the text a Spark Connect client reads: the right location or a refusal, never another
            read = text_lookup(spark, (db, name), db, name)
        except AmbiguousCatalogEntryError:
            refused += 1
        else:
            assert read is not None and read.location == a and read.is_delta, name
    assert refused >= 4  # the generated texts do hold key lines: the text reading refused them
    pq = lookup(spark, (db, "pq"))
    assert pq is not None and (pq.provider, pq.kind) == ("parquet", "MANAGED") and not pq.is_delta
    pv = lookup(spark, (db, "pv"))
    assert pv is not None and pv.kind == "VIEW" and not pv.is_delta
    view = lookup(spark, view_name)
    assert view is not None and view.temporary and not view.is_delta
    spark.catalog.dropTempView(view_name)
    read_pq = text_lookup(spark, (db, "pq"), db, "pq")  # Spark prints no column comment in that text
    assert read_pq is not None and read_pq.provider == "parquet" and not read_pq.is_delta
    with pytest.raises(AmbiguousCatalogEntryError):  # the view's comment is printed, with its lines
        text_lookup(spark, (db, "pv"), db, "pv")
    with pytest.raises(NotADeltaTableError, match="DELTA_MISSING_DELTA_TABLE") as e:
        DeltaTable.forName(spark, f"{db}.pq")
    assert "provider parquet" in str(e.value.__cause__)
    with pytest.raises(NotADeltaTableError):
        DeltaTable.forName(spark, f"{db}.pv")
    # every by-name operation reaches the table the entry names
    assert delta_pyds.sql(spark, f"DELETE FROM {db}.h0 WHERE id < 2").first().num_affected_rows == 2
    delta_pyds.sql(spark, f"UPDATE {db}.h7 SET id = id + 10 WHERE id = 3")
    assert ids(delta_pyds.read_delta(spark, other)) == [100, 101, 102]
    assert ids(delta_pyds.read_delta(spark, name=f"{db}.h5")) == [2, 13]


def test_names_compare_as_spark_under_case_sensitivity(spark, db, tmp_path):
    upper, lower = str(tmp_path / "upper"), str(tmp_path / "lower")
    delta_pyds.write_delta(spark.range(3), upper)
    delta_pyds.write_delta(spark.range(10, 12), lower)
    spark.conf.set("spark.sql.caseSensitive", "true")
    try:
        spark.sql(f"CREATE TABLE {db}.CS USING delta LOCATION '{upper}'")
        spark.sql(f"CREATE TABLE {db}.cs USING delta LOCATION '{lower}'")
        for asked, where in (("CS", upper), ("cs", lower)):
            assert lookup(spark, (db, asked)).location == where  # type: ignore[union-attr]
            assert text_lookup(spark, (db, asked), db, asked).location == where  # type: ignore[union-attr]
        assert lookup(spark, (db, "Cs")) is None and text_lookup(spark, (db, "Cs"), db, "Cs") is None
        assert delta_pyds.sql(spark, f"DELETE FROM {db}.cs WHERE id = 10").first().num_affected_rows == 1
        assert ids(delta_pyds.read_delta(spark, upper)) == [0, 1, 2]
        assert ids(DeltaTable.forName(spark, f"{db}.cs").toDF()) == [11]
    finally:
        spark.conf.set("spark.sql.caseSensitive", "false")
    # case-insensitive: Spark lower-cases the name and finds `cs` for any spelling
    for asked in ("CS", "cs", "Cs"):
        assert lookup(spark, (db, asked)).location == lower  # type: ignore[union-attr]
        assert text_lookup(spark, (db, asked), db, asked).location == lower  # type: ignore[union-attr]
    assert ids(delta_pyds.read_delta(spark, name=f"{db}.CS")) == [11]


def test_a_new_session_registers_and_resolves_with_its_own_settings(spark, db, tmp_path):
    session = spark.newSession()
    delta_pyds.register(session)  # was DATA_SOURCE_ALREADY_EXISTS (the parent's sources were checked)
    delta_pyds.register(session)
    session.conf.set("spark.sql.caseSensitive", "true")
    delta_pyds.sql(session, f"CREATE TABLE {db}.T USING delta AS SELECT id FROM range(3)")
    delta_pyds.sql(session, f"CREATE TABLE {db}.t USING delta AS SELECT id FROM range(10, 12)")
    assert delta_pyds.sql(session, f"DELETE FROM {db}.t WHERE id = 10").first().num_affected_rows == 1
    assert ids(delta_pyds.read_delta(session, name=f"{db}.T")) == [0, 1, 2]
    assert ids(delta_pyds.read_delta(session, name=f"{db}.t")) == [11]
    assert lookup(spark, (db, "T")).table == "t"  # type: ignore[union-attr]  # the parent: insensitive
    path = str(tmp_path / "by_format")
    session.range(2).write.format("delta").mode("append").save(path)
    assert session.read.format("delta").load(path).count() == 2


def test_create_table_beside_a_temporary_view_of_the_name(spark, db, tmp_path):
    path = str(tmp_path / "t")
    delta_pyds.write_delta(spark.range(3), path)
    view = f"v_{db}"
    spark.range(1).createOrReplaceTempView(view)
    previous = spark.catalog.currentDatabase()
    spark.catalog.setCurrentDatabase(db)
    try:
        delta_pyds.sql(spark, f"CREATE TABLE {view} USING delta LOCATION '{path}'")  # Spark allows it
        assert lookup(spark, view).temporary  # type: ignore[union-attr]  # the view wins in lookups
        table = lookup(spark, view, views=False)
        assert table is not None and table.is_delta and table.location == path and table.database == db
        assert ids(delta_pyds.read_delta(spark, name=f"{db}.{view}")) == [0, 1, 2]
        with pytest.raises(NotADeltaTableError, match="DELTA_MISSING_DELTA_TABLE") as e:
            DeltaTable.forName(spark, view)
        assert "temporary view" in str(e.value.__cause__)
        DeltaTable.createIfNotExists(spark).tableName(view).addColumn("x", "int").execute()  # the table exists
        assert DeltaTable.forName(spark, f"{db}.{view}").toDF().columns == ["id"]
    finally:
        spark.catalog.setCurrentDatabase(previous)
        spark.catalog.dropTempView(view)
