"""The write path without Spark: options, protocol choice, stats, partition files,
transactions (commit, conflicts, retries), checkpoints — checked against deltalake."""

from __future__ import annotations

import datetime as dt
import decimal
import json
import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from helpers import adds_of, arrow_rows, delta_schema, deltalake_table, log_actions
from hypothesis import given, settings
from hypothesis import strategies as st

from delta_pyds.errors import DeltaError, SchemaError, UnsupportedFeatureError
from delta_pyds.log.files import last_checkpoint_checksum
from delta_pyds.protocol.actions import Protocol
from delta_pyds.protocol.stats import truncate_max, truncate_min
from delta_pyds.protocol.table_properties import canonical_property, required_protocol
from delta_pyds.table.snapshot import Snapshot
from delta_pyds.transaction.commit import AppendOnlyError
from delta_pyds.write.options import WriteOptions
from delta_pyds.write.plan import commit_arrow


def our_rows(path, columns):
    """Rows of the latest version read with our own reader (core, no Spark)."""
    from delta_pyds.protocol.schema import to_arrow_schema
    from delta_pyds.read.file_reader import ReadSpec, read_file
    from delta_pyds.read.scan import iter_tasks, plan_partitions

    snap = Snapshot.load(path)
    schema = snap.schema
    spec = ReadSpec(
        storage=snap.storage,
        output=schema,
        arrow_schema=to_arrow_schema(schema),
        partition_columns=tuple(snap.partition_columns),
        physical_partition_columns=tuple(snap.physical_partition_columns),
        column_mapping_mode=snap.column_mapping_mode,
        table_schema=schema,
    )
    batches = []
    for group in plan_partitions(
        snap.files, snap.physical_partition_columns, max_partition_bytes=1 << 30, open_cost=0, parallelism=1
    ):
        for task in iter_tasks(group):
            batches.extend(read_file(spec, task))
    table = pa.Table.from_batches(batches, schema=spec.arrow_schema) if batches else spec.arrow_schema.empty_table()
    return arrow_rows(table, columns)


# ------------------------------------------------------------------------- options
@pytest.mark.parametrize(
    "options, overwrite, message",
    [
        ({}, False, "option path"),
        ({"path": "/x", "partitionOverwriteMode": "sometimes"}, True, "partitionOverwriteMode"),
        ({"path": "/x", "replaceWhere": "a = 1"}, False, "replaceWhere"),
        ({"path": "/x", "mergeschema": "maybe"}, False, "mergeSchema"),
        ({"path": "/x", "overwriteSchema": "true"}, False, "overwriteSchema"),
        ({"path": "/x", "txnAppId": "a"}, False, "txnAppId and txnVersion"),
        ({"path": "/x", "txnAppId": "a", "txnVersion": "-1"}, False, "txnVersion"),
        ({"path": "/x", "targetFileSize": "big"}, False, "targetFileSize"),
        ({"path": "/x", "compression": "lzma"}, False, "compression"),
        ({"path": "/x", "saveMode": "sometimes"}, False, "saveMode"),
        ({"path": "/x", "saveMode": "ignore"}, True, "saveMode=ignore"),
        ({"path": "/x", "delta.noSuchProperty": "1"}, False, "delta.noSuchProperty"),
        ({"path": "/x", "partitionBy": "a,A"}, False, "partitionBy"),
    ],
)
def test_bad_write_options_name_the_option(options, overwrite, message):
    with pytest.raises(ValueError, match=message):
        WriteOptions.parse(options, overwrite=overwrite)


@pytest.mark.parametrize(
    "options, session, dynamic, unknown",
    [
        ({}, "static", False, False),
        ({}, " Dynamic ", True, False),
        ({}, None, False, True),  # the caller cannot know the session: never guessed
        ({"partitionOverwriteMode": "static"}, "dynamic", False, False),  # the option wins
        ({"replaceWhere": "a = 1"}, "dynamic", False, False),  # the query's own intent wins
        ({"overwriteSchema": "true"}, None, False, False),
    ],
)
def test_session_partition_overwrite_mode_applies_only_without_an_explicit_intent(options, session, dynamic, unknown):
    opts = WriteOptions.parse({"path": "/x", **options}, overwrite=True, session_partition_overwrite_mode=session)
    assert (opts.dynamic_partition_overwrite, opts.partition_overwrite_mode_unknown) == (dynamic, unknown)


def test_bad_session_partition_overwrite_mode_names_the_conf():
    with pytest.raises(ValueError, match="partitionOverwriteMode: expected static or dynamic, got 'sometimes'"):
        WriteOptions.parse({"path": "/x"}, overwrite=True, session_partition_overwrite_mode="sometimes")
    # an append never consults the session
    assert not WriteOptions.parse(
        {"path": "/x"}, overwrite=False, session_partition_overwrite_mode="x"
    ).dynamic_partition_overwrite


def test_options_are_case_insensitive_and_properties_canonical():
    opts = WriteOptions.parse(
        {
            "path": "/x",
            "partitionby": "a, b",
            "delta.appendonly": "true",
            "delta.constraints.Positive": "x > 0",
            "targetfilesize": "128m",
            "savemode": "ErrorIfExists",
        },
        overwrite=False,
    )
    assert opts.partition_by == ("a", "b")
    assert opts.table_properties == {"delta.appendOnly": "true", "delta.constraints.positive": "x > 0"}
    assert opts.target_file_size == 128 << 20
    assert opts.save_mode == "errorifexists"
    assert canonical_property("delta.checkpoint.writestatsasstruct") == "delta.checkpoint.writeStatsAsStruct"


# ------------------------------------------------------------------------ protocol


@pytest.mark.parametrize(
    "conf, arrow_types, expected",
    [
        ({}, {"a": pa.int64()}, Protocol(1, 2)),
        ({"delta.appendOnly": "true"}, {"a": pa.int64()}, Protocol(1, 2)),
        ({"delta.constraints.c": "a > 0"}, {"a": pa.int64()}, Protocol(1, 3)),
        ({"delta.enableChangeDataFeed": "true"}, {"a": pa.int64()}, Protocol(1, 4)),
        ({"delta.columnMapping.mode": "name"}, {"a": pa.int64()}, Protocol(2, 5)),
        (
            {},
            {"t": pa.timestamp("us")},
            Protocol(3, 7, ("timestampNtz",), ("appendOnly", "invariants", "timestampNtz")),
        ),
        (
            {"delta.enableDeletionVectors": "true"},
            {"a": pa.int64()},
            Protocol(3, 7, ("deletionVectors",), ("appendOnly", "invariants", "deletionVectors")),
        ),
        (
            {"delta.enableRowTracking": "true"},
            {"a": pa.int64()},
            Protocol(1, 7, None, ("appendOnly", "invariants", "rowTracking", "domainMetadata")),
        ),
        (
            {"delta.enableInCommitTimestamps": "true"},
            {"a": pa.int64()},
            Protocol(1, 7, None, ("appendOnly", "invariants", "inCommitTimestamp")),
        ),
    ],
)
def test_new_tables_get_the_smallest_protocol(conf, arrow_types, expected):
    assert required_protocol(delta_schema(**arrow_types), conf) == expected


def test_protocol_upgrades_never_drop_features():
    current = Protocol(2, 5)
    p = required_protocol(delta_schema(t=pa.timestamp("us")), {}, current)
    assert p.min_reader_version == 3 and p.min_writer_version == 7
    assert "columnMapping" in p.reader_features and "columnMapping" in p.writer_features
    assert {
        "appendOnly",
        "invariants",
        "checkConstraints",
        "changeDataFeed",
        "generatedColumns",
        "timestampNtz",
    } <= set(p.writer_features)


# --------------------------------------------------------------------------- stats
@settings(max_examples=300, deadline=None)
@given(st.text(max_size=80, alphabet=st.characters(blacklist_categories=("Cs",))))
def test_truncated_string_stats_are_true_bounds(text):
    lo, hi = truncate_min(text), truncate_max(text)
    assert lo <= text <= hi
    assert lo.encode("utf-8") <= text.encode("utf-8") <= hi.encode("utf-8")
    assert len(lo) <= 32


def test_stats_of_every_type(tmp_path):
    path = str(tmp_path / "t")
    long_a, long_b = "a" * 40, "b" * 31 + "\U0001f600" + "z" * 10
    data = pa.table(
        {
            "i": pa.array([1, None, -7], pa.int32()),
            "x": pa.array([1.5, float("nan"), -2.0]),
            "y": pa.array([float("inf"), 1.0, None]),
            "s": pa.array([long_a, long_b, None]),
            "d": pa.array(
                [decimal.Decimal("1.25"), decimal.Decimal("-99999999999999999999.99"), None], pa.decimal128(22, 2)
            ),
            "day": pa.array([dt.date(2020, 1, 1), dt.date(1969, 12, 31), None]),
            "ts": pa.array(
                [dt.datetime(2021, 1, 1, 0, 0, 0, 999999), dt.datetime(2021, 1, 1), None], pa.timestamp("us", tz="UTC")
            ),
            "ntz": pa.array([dt.datetime(2021, 1, 1, 0, 0, 1, 1500), None, None], pa.timestamp("us")),
            "b": pa.array([True, None, False]),
            "st": pa.array([{"u": 1, "v": "q"}, None, {"u": None, "v": "r"}]),
            "arr": pa.array([[1], None, []]),
            "allnull": pa.array([None, None, None], pa.int64()),
        }
    )
    commit_arrow(path, data)
    stats = json.loads(adds_of(path, 0)[0]["stats"])
    assert stats["numRecords"] == 3
    mins, maxs, nulls = stats["minValues"], stats["maxValues"], stats["nullCount"]
    assert (mins["i"], maxs["i"]) == (-7, 1)
    assert mins["x"] == -2.0 and "x" not in maxs  # NaN sorts above every number in Spark
    assert "y" not in maxs and mins["y"] == 1.0  # infinities cannot be JSON
    assert mins["s"] == "a" * 32 and maxs["s"] == "b" * 31 + "\U0001f600" + "\ufffd"
    assert maxs["s"] >= long_b
    assert (mins["d"], maxs["d"]) == (-99999999999999999999.99, 1.25)
    assert '"d":-99999999999999999999.99' in adds_of(path, 0)[0]["stats"]  # exact, not a float
    assert (mins["day"], maxs["day"]) == ("1969-12-31", "2020-01-01")
    assert (mins["ts"], maxs["ts"]) == ("2021-01-01T00:00:00.000Z", "2021-01-01T00:00:00.999Z")
    assert mins["ntz"] == "2021-01-01T00:00:01.001"
    assert "b" not in mins and "arr" not in mins and "allnull" not in mins
    assert nulls == {
        "i": 1,
        "x": 0,
        "y": 1,
        "s": 1,
        "d": 1,
        "day": 1,
        "ts": 1,
        "ntz": 2,
        "b": 1,
        "st": {"u": 2, "v": 1},
        "arr": 1,
        "allnull": 3,
    }
    assert mins["st"] == {"u": 1, "v": "q"} and maxs["st"] == {"u": 1, "v": "r"}


def test_stats_columns_follow_table_properties(tmp_path):
    data = pa.table({f"c{i}": pa.array([i]) for i in range(40)})
    a = str(tmp_path / "a")
    commit_arrow(a, data)
    assert list(json.loads(adds_of(a, 0)[0]["stats"])["minValues"]) == [f"c{i}" for i in range(32)]
    b = str(tmp_path / "b")
    commit_arrow(b, data, options={"delta.dataSkippingNumIndexedCols": "3"})
    assert list(json.loads(adds_of(b, 0)[0]["stats"])["nullCount"]) == ["c0", "c1", "c2"]
    c = str(tmp_path / "c")
    commit_arrow(c, data, options={"delta.dataSkippingStatsColumns": "c39, `c5`"})
    assert list(json.loads(adds_of(c, 0)[0]["stats"])["maxValues"]) == ["c5", "c39"]


# ------------------------------------------------------------- files and partitions
def test_partitioned_write_round_trips_with_deltalake(tmp_path):
    path = str(tmp_path / "t")
    data = pa.table(
        {
            "id": pa.array(range(8), pa.int64()),
            "s": pa.array(["a/b", "x y", "%", None, "é=1", "", "a/b", "q:r"]),
            "d": pa.array([dt.date(2020, 1, i % 3 + 1) for i in range(8)]),
            "ts": pa.array([dt.datetime(2021, 1, 1, 12, 0, i % 2) for i in range(8)], pa.timestamp("us", tz="UTC")),
            "b": pa.array([True, False] * 4),
            "v": pa.array([1.5] * 8),
        }
    )
    commit_arrow(path, data, options={"partitionBy": "s,d,ts,b"})
    cols = ["id", "s", "d", "ts", "b", "v"]
    expected = arrow_rows(data, cols)
    # the empty string is a null partition value (protocol)
    expected = sorted(
        [tuple(None if (c == "s" and v == "") else v for c, v in zip(cols, r)) for r in expected], key=repr
    )
    assert sorted(arrow_rows(deltalake_table(path), cols), key=repr) == expected
    assert sorted(our_rows(path, cols), key=repr) == expected
    paths = [a["path"] for a in adds_of(path, 0)]
    assert any(p.startswith("s=a%252Fb/") for p in paths)  # '/' escaped in the directory, then URI-encoded
    assert any("s=__HIVE_DEFAULT_PARTITION__" in p for p in paths)
    ts_values = {a["partitionValues"]["ts"] for a in adds_of(path, 0)}
    assert ts_values == {"2021-01-01T12:00:00.000000Z", "2021-01-01T12:00:01.000000Z"}
    for p in paths:  # files are where the log says
        from urllib.parse import unquote

        assert os.path.isfile(os.path.join(path, unquote(p)))


def test_files_roll_over_at_max_records_and_are_snappy(tmp_path):
    path = str(tmp_path / "t")
    commit_arrow(path, pa.table({"a": pa.array(range(1000))}), options={"maxRecordsPerFile": "300"})
    adds = adds_of(path, 0)
    assert sorted(json.loads(a["stats"])["numRecords"] for a in adds) == [100, 300, 300, 300]
    assert all(a["path"].endswith(".snappy.parquet") for a in adds)
    meta = pq.ParquetFile(os.path.join(path, adds[0]["path"])).metadata
    assert meta.row_group(0).column(0).compression == "SNAPPY"
    assert sum(a["size"] for a in adds) == sum(os.path.getsize(os.path.join(path, a["path"])) for a in adds)


def test_column_mapping_writes_physical_names_and_field_ids(tmp_path):
    path = str(tmp_path / "t")
    data = pa.table({"my id": [1, 2], "part": ["a", "b"], "st": [{"in ner": 1}, None]})
    commit_arrow(path, data, options={"partitionBy": "part", "delta.columnMapping.mode": "id"})
    snap = Snapshot.load(path)
    assert snap.protocol == Protocol(2, 5)
    fields = {f.name: f for f in snap.schema.fields}
    phys = fields["my id"].physical_name("id")
    assert phys.startswith("col-")
    add = adds_of(path, 0)[0]
    assert list(add["partitionValues"]) == [fields["part"].physical_name("id")]
    assert add["path"].startswith(fields["part"].physical_name("id") + "=")
    pf = pq.ParquetFile(os.path.join(path, add["path"]))
    assert pf.schema_arrow.names == [phys, fields["st"].physical_name("id")]
    assert int(pf.schema_arrow.field(phys).metadata[b"PARQUET:field_id"]) == fields["my id"].field_id
    assert snap.configuration["delta.columnMapping.maxColumnId"] == "4"
    assert sorted(arrow_rows(deltalake_table(path), ["my id", "part"])) == [(1, "a"), (2, "b")]
    commit_arrow(path, pa.table({"my id": [3], "part": ["a"], "st": [{"in ner": 5}]}))
    assert sorted(our_rows(path, ["my id", "part", "st"]), key=repr) == sorted(
        [(1, "a", (("in ner", 1),)), (2, "b", None), (3, "a", (("in ner", 5),))], key=repr
    )


# --------------------------------------------------------------------- transactions
def test_append_overwrite_and_versions(tmp_path):
    path = str(tmp_path / "t")
    commit_arrow(path, pa.table({"a": [1, 2]}))
    commit_arrow(path, pa.table({"a": [3]}))
    commit_arrow(path, pa.table({"a": [9]}), mode="overwrite")
    assert [r[0] for r in arrow_rows(deltalake_table(path), ["a"])] == [9]
    assert sorted(r[0] for r in arrow_rows(deltalake_table(path, version=1), ["a"])) == [1, 2, 3]
    removes = [a["remove"] for a in log_actions(path, 2) if "remove" in a]
    assert len(removes) == 2 and all(r["dataChange"] and r["size"] > 0 for r in removes)
    info = log_actions(path, 2)[0]["commitInfo"]
    assert info["operation"] == "WRITE" and info["operationParameters"]["mode"] == "Overwrite"
    assert info["readVersion"] == 1 and info["engineInfo"].startswith("delta_pyds/")


def test_overwrite_repeats_the_raw_paths_of_other_writers(copy_table):
    path = copy_table("delta-rs/delta-0.8.0-special-partition")
    before = {
        a["add"]["path"]
        for v in range(len(os.listdir(os.path.join(path, "_delta_log"))))
        if os.path.exists(os.path.join(path, "_delta_log", f"{v:020d}.json"))
        for a in log_actions(path, v)
        if "add" in a
    }
    live = set(Snapshot.load(path).files.column("path").to_pylist())
    version = commit_arrow(path, pa.table({"x": ["A/A"], "y": [1]}), mode="overwrite").version
    removed = {a["remove"]["path"] for a in log_actions(path, version) if "remove" in a}
    assert len(removed) == len(live) and removed <= before  # the stored strings, not re-encoded ones
    assert arrow_rows(deltalake_table(path), ["x", "y"]) == [("A/A", 1)]


def test_in_commit_timestamps_increase(tmp_path):
    path = str(tmp_path / "t")
    commit_arrow(path, pa.table({"a": [1]}), options={"delta.enableInCommitTimestamps": "true"})
    for _ in range(3):
        commit_arrow(path, pa.table({"a": [1]}))
    stamps = []
    for v in range(4):
        first = log_actions(path, v)[0]
        assert "commitInfo" in first
        stamps.append(first["commitInfo"]["inCommitTimestamp"])
    assert stamps == sorted(stamps) and len(set(stamps)) == 4


def test_append_only_tables_refuse_overwrites(tmp_path):
    path = str(tmp_path / "t")
    commit_arrow(path, pa.table({"a": [1]}), options={"delta.appendOnly": "true"})
    commit_arrow(path, pa.table({"a": [2]}))
    with pytest.raises(AppendOnlyError, match="append-only"):
        commit_arrow(path, pa.table({"a": [3]}), mode="overwrite")
    assert Snapshot.load(path).version == 1


@pytest.mark.parametrize("name, feature", [("delta-rs/table_with_liquid_clustering", "liquid")])
def test_unsupported_writer_features_are_refused_by_name(copy_table, name, feature):
    path = copy_table(name)
    before = sorted(os.listdir(os.path.join(path, "_delta_log")))
    with pytest.raises(UnsupportedFeatureError, match=feature):
        commit_arrow(path, pa.table({"x": [1]}))
    assert sorted(os.listdir(os.path.join(path, "_delta_log"))) == before


def test_schema_mismatch_names_the_columns(tmp_path):
    path = str(tmp_path / "t")
    commit_arrow(path, pa.table({"a": [1], "b": ["x"]}))
    with pytest.raises(SchemaError, match=r"columns not in the table: c.*mergeSchema"):
        commit_arrow(path, pa.table({"a": [1], "c": [1.5]}))
    with pytest.raises(SchemaError, match="column b is string in the table but long in the DataFrame"):
        commit_arrow(path, pa.table({"a": [1], "b": [2]}))
    # a narrower integer is cast; a missing column is null
    commit_arrow(path, pa.table({"A": pa.array([5], pa.int8())}))
    assert sorted(arrow_rows(deltalake_table(path), ["a", "b"]), key=repr) == [(1, "x"), (5, None)]


def test_writing_to_deletion_vector_tables(copy_table):
    path = copy_table("kernel-rs/table-with-dv-small")
    before = arrow_rows(deltalake_table(path), ["value"])
    commit_arrow(path, pa.table({"value": pa.array([100, 101], pa.int32())}))
    assert sorted(arrow_rows(deltalake_table(path), ["value"])) == sorted(before + [(100,), (101,)])
    stats = json.loads(adds_of(path, Snapshot.load(path).version)[0]["stats"])
    assert stats["tightBounds"] is True
    # an overwrite removes the file together with its deletion vector
    version = commit_arrow(path, pa.table({"value": pa.array([7], pa.int32())}), mode="overwrite").version
    removes = [a["remove"] for a in log_actions(path, version) if "remove" in a]
    assert any("deletionVector" in r for r in removes)
    assert arrow_rows(deltalake_table(path), ["value"]) == [(7,)]


def test_appending_to_a_renamed_partition_column(copy_table):
    path = copy_table("delta-rs/table_with_partitioning_mapping")
    before = arrow_rows(deltalake_table(path), ["newid", "description"])
    commit_arrow(path, pa.table({"newid": pa.array([9], pa.int32()), "description": ["nine"]}))
    add = adds_of(path, Snapshot.load(path).version)[0]
    assert add["partitionValues"] == {"id": "9"}  # the physical name of the renamed column
    assert sorted(arrow_rows(deltalake_table(path), ["newid", "description"]), key=repr) == sorted(
        before + [(9, "nine")], key=repr
    )


def test_appending_to_a_table_deltalake_wrote(tmp_path):
    from deltalake import write_deltalake

    path = str(tmp_path / "t")
    write_deltalake(path, pa.table({"a": [1, 2], "p": ["x", "y"]}), partition_by=["p"])
    commit_arrow(path, pa.table({"a": [3], "p": ["x"]}))
    write_deltalake(path, pa.table({"a": [4], "p": ["z"]}), mode="append")
    expected = [(1, "x"), (2, "y"), (3, "x"), (4, "z")]
    assert sorted(arrow_rows(deltalake_table(path), ["a", "p"])) == expected
    assert sorted(our_rows(path, ["a", "p"])) == expected


# --------------------------------------------------------------------- checkpoints
def test_checkpoint_every_interval_reads_back_everywhere(tmp_path):
    path = str(tmp_path / "t")
    for i in range(12):
        mode = "overwrite" if i == 5 else "append"
        commit_arrow(
            path,
            pa.table({"a": [i], "p": [i % 2]}),
            mode=mode,
            options={"partitionBy": "p", "delta.checkpoint.writeStatsAsStruct": "true"} if i == 0 else None,
        )
    log_dir = os.path.join(path, "_delta_log")
    assert os.path.exists(os.path.join(log_dir, "00000000000000000010.checkpoint.parquet"))
    hint = json.load(open(os.path.join(log_dir, "_last_checkpoint")))
    assert hint["version"] == 10 and hint["checksum"] == last_checkpoint_checksum(hint)
    assert hint["numOfAddFiles"] == 6
    table = pq.read_table(os.path.join(log_dir, "00000000000000000010.checkpoint.parquet"))
    add_type = table.schema.field("add").type
    assert {"stats", "stats_parsed", "partitionValues_parsed"} <= {f.name for f in add_type}
    removes = [r for r in table.column("remove").to_pylist() if r]
    assert len(removes) == 5  # the overwritten files stay as tombstones
    parsed = [a for a in table.column("add").to_pylist() if a]
    assert all(a["stats_parsed"]["numRecords"] == 1 for a in parsed)
    expected = sorted([(i, i % 2) for i in range(5, 12)])
    assert sorted(arrow_rows(deltalake_table(path), ["a", "p"])) == expected
    assert sorted(our_rows(path, ["a", "p"])) == expected
    # delete the commits the checkpoint covers: readers must use it
    for v in range(10):
        os.remove(os.path.join(log_dir, f"{v:020d}.json"))
    assert sorted(arrow_rows(deltalake_table(path), ["a", "p"])) == expected
    assert sorted(our_rows(path, ["a", "p"])) == expected


def test_a_failing_checkpoint_never_fails_the_commit(tmp_path, monkeypatch):
    import delta_pyds.transaction.checkpoint_writer as cw

    path = str(tmp_path / "t")
    for i in range(10):
        commit_arrow(path, pa.table({"a": [i]}))

    def boom(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(cw, "write_checkpoint", boom)
    result = commit_arrow(path, pa.table({"a": [10]}))
    assert result.version == 10 and not result.checkpoint
    assert len(arrow_rows(deltalake_table(path), ["a"])) == 11


@pytest.mark.parametrize(
    "name", ["kernel-rs/v2-checkpoints-parquet-with-sidecars", "kernel-rs/v2-checkpoints-json-with-sidecars"]
)
def test_v2_checkpoint_tables_get_v2_spec_checkpoints(copy_table, name):
    path = copy_table(name)
    snap = Snapshot.load(path)
    columns = [f.name for f in snap.schema.fields]
    before = arrow_rows(deltalake_table(path), columns)
    tombstones_before = file_actions_count(snap)
    arrow_schema = pa.schema(
        [pa.field(f.name, deltalake_table(path).schema.field(f.name).type) for f in snap.schema.fields]
    )
    row = pa.table({f.name: pa.array([None], f.type) for f in arrow_schema})
    while Snapshot.load(path).version < 10:
        commit_arrow(path, row)
    log_dir = os.path.join(path, "_delta_log")
    table = pq.read_table(os.path.join(log_dir, "00000000000000000010.checkpoint.parquet"))
    assert [m for m in table.column("checkpointMetadata").to_pylist() if m] == [{"version": 10, "tags": None}]
    assert file_actions_count(Snapshot.load(path))[1] >= tombstones_before[1]
    added = 10 - snap.version
    expected = sorted(before + [tuple([None] * len(columns))] * added, key=repr)
    for v in range(11):
        os.remove(os.path.join(log_dir, f"{v:020d}.json"))
    assert sorted(arrow_rows(deltalake_table(path), columns), key=repr) == expected
    assert sorted(our_rows(path, columns), key=repr) == expected


def file_actions_count(snapshot):
    from delta_pyds.table.state import file_actions

    fa = file_actions(snapshot)
    return fa.active.num_rows, fa.tombstones.num_rows


def test_replace_where_on_data_columns_refuses_rewrites_that_need_change_data(tmp_path):
    path = str(tmp_path / "t")
    commit_arrow(path, pa.table({"id": [1, 2, 3]}), options={"delta.enableChangeDataFeed": "true"})
    before = sorted(os.listdir(path))
    with pytest.raises(DeltaError, match="enable deletion vectors"):
        commit_arrow(path, pa.table({"id": [2]}), mode="overwrite", options={"replaceWhere": "id = 2"})
    assert sorted(os.listdir(path)) == before and Snapshot.load(path).version == 0
    # a predicate matching whole files needs no rewrite: allowed
    commit_arrow(path, pa.table({"id": [9]}), mode="overwrite", options={"replaceWhere": "id >= 1"})
    assert arrow_rows(deltalake_table(path), ["id"]) == [(9,)]


def _log_tags(path, version, kind):
    with open(os.path.join(path, "_delta_log", f"{version:020d}.json")) as f:
        return {a[kind]["path"]: a[kind].get("tags") for a in map(json.loads, f) if kind in a}


def test_file_tags_of_other_writers_survive_checkpoints_and_removes(copy_table):
    """Databricks tags its files (INSERTION_TIME, OPTIMIZE_TARGET_SIZE...): our checkpoints
    and remove actions repeat them, for adds read from JSON commits and from checkpoints."""
    from delta_pyds.storage.store import Storage
    from delta_pyds.transaction.checkpoint_writer import write_checkpoint

    path = copy_table("kernel-rs/table-with-dv-small")
    tags = _log_tags(path, 1, "add")
    assert all(tags.values())
    commit_arrow(path, pa.table({"value": pa.array([100], pa.int32())}))
    write_checkpoint(Storage(path), 2)
    ck = pq.read_table(os.path.join(path, "_delta_log", f"{2:020d}.checkpoint.parquet")).column("add").to_pylist()
    in_checkpoint = {a["path"]: dict(a["tags"]) if a["tags"] else None for a in ck if a}
    assert {p: in_checkpoint[p] for p in tags} == tags
    assert sum(1 for t in in_checkpoint.values() if t is None) == 1  # our file has none
    commit_arrow(path, pa.table({"value": pa.array([1], pa.int32())}), mode="overwrite")  # adds from the checkpoint
    removes = _log_tags(path, 3, "remove")
    assert {p: removes[p] for p in tags} == tags
    assert arrow_rows(deltalake_table(path), ["value"]) == [(1,)]


def test_checkpoint_keeps_typed_stats_of_rows_whose_bounds_fit_the_type(tmp_path):
    """A stats row with a bound its column's type cannot hold (an older writer's 1E+38 in a
    decimal(38,0)) loses its typed stats in the checkpoint; the other rows keep theirs."""
    from delta_pyds.transaction.checkpoint_writer import write_checkpoint

    path = str(tmp_path / "t")
    schema = pa.schema([("d", pa.decimal128(38, 0))])
    for v in (1, 2, 3):
        commit_arrow(
            path,
            pa.table({"d": pa.array([decimal.Decimal(v)], pa.decimal128(38, 0))}, schema=schema),
            options={"delta.checkpoint.writeStatsAsStruct": "true"} if v == 1 else None,
        )
    commit = os.path.join(path, "_delta_log", f"{1:020d}.json")
    lines = [json.loads(line) for line in open(commit)]
    for a in lines:
        if "add" in a:
            stats = json.loads(a["add"]["stats"])
            stats["maxValues"]["d"] = 1e38  # out of decimal(38,0)'s range
            a["add"]["stats"] = json.dumps(stats)
    with open(commit, "w") as f:
        f.write("\n".join(json.dumps(a) for a in lines) + "\n")
    snap = Snapshot.load(path)
    write_checkpoint(snap.storage, snap.version)
    table = pq.read_table(os.path.join(path, "_delta_log", f"{snap.version:020d}.checkpoint.parquet"))
    parsed = [a["stats_parsed"] for a in table.column("add").to_pylist() if a]
    assert sum(p is None for p in parsed) == 1  # not a row of zeros (numRecords 0 = skippable)
    assert sorted(p["maxValues"]["d"] for p in parsed if p) == [decimal.Decimal(1), decimal.Decimal(3)]
    # a reader using the checkpoint alone still finds the row
    for v in range(snap.version):
        os.remove(os.path.join(path, "_delta_log", f"{v:020d}.json"))
    os.remove(os.path.join(path, "_delta_log", f"{snap.version:020d}.json"))
    import delta_pyds
    from delta_pyds.expressions.predicates import EqualTo

    report = delta_pyds.explain_scan(path, [EqualTo("d", decimal.Decimal(2))])
    assert "kept 1 of 3" in str(report)


def test_dynamic_partition_overwrite_matches_partitions_spelled_by_other_engines(tmp_path):
    # delta-spark spells a double partition 1.0E10 and a timestamp "2021-01-01 00:00:00"
    # (UTC); ours differ. Dynamic overwrite must replace the partition whatever the spelling.
    path = str(tmp_path / "t")
    ts = dt.datetime(2021, 1, 1, tzinfo=dt.timezone.utc)
    old = pa.table({"d": pa.array([1e10], pa.float64()), "t": pa.array([ts], pa.timestamp("us", "UTC")), "v": [1]})
    commit_arrow(path, old, options={"partitionBy": "d,t"})
    log = os.path.join(path, "_delta_log", f"{0:020d}.json")
    actions = [json.loads(line) for line in open(log)]
    for a in actions:
        if "add" in a:
            a["add"]["partitionValues"] = {"d": "1.0E10", "t": "2021-01-01 00:00:00"}
    with open(log, "w") as f:
        f.write("\n".join(json.dumps(a) for a in actions) + "\n")
    new = pa.table({"d": pa.array([1e10], pa.float64()), "t": pa.array([ts], pa.timestamp("us", "UTC")), "v": [2]})
    commit_arrow(path, new, mode="overwrite", options={"partitionOverwriteMode": "dynamic"})
    assert Snapshot.load(path).num_files == 1
    assert deltalake_table(path).column("v").to_pylist() == [2]


# ------------------------------------------------------------------------- write checks
def test_write_checks_collect_nested_not_null_paths_and_invariants():
    from delta_pyds.errors import ConstraintViolationError
    from delta_pyds.protocol.schema import PrimitiveType, StructField, StructType
    from delta_pyds.write.constraints import build_checks

    long = PrimitiveType("long")
    inner = StructType((StructField("b", long, False), StructField("c", long, True)))
    invariant = {"delta.invariants": json.dumps({"expression": {"expression": "x > 0"}})}
    schema = StructType(
        (StructField("a", long, False), StructField("s", inner, False), StructField("x", long, True, invariant))
    )
    checks = build_checks(schema, {}, ["a", "s", "x"])
    assert checks.not_null == (("a",), ("s",), ("s", "b"))
    assert [(r.kind, r.name, r.text) for r in checks.rules] == [("invariant", "x", "x > 0")]
    arrow = pa.schema([("a", pa.int64()), ("s", pa.struct([("b", pa.int64()), ("c", pa.int64())])), ("x", pa.int64())])
    rows = lambda b, x: pa.RecordBatch.from_pylist([{"a": 1, "s": {"b": b, "c": None}, "x": x}], schema=arrow)  # noqa: E731
    assert checks.apply(rows(1, 2)).num_rows == 1
    with pytest.raises(ConstraintViolationError, match="s.b"):
        checks.apply(rows(None, 2))
    with pytest.raises(ConstraintViolationError, match="x > 0"):
        checks.apply(rows(1, -1))
    # an empty batch violates nothing (pc.all of no values is null, not true: issue #44 item 10)
    assert checks.apply(pa.RecordBatch.from_pylist([], schema=arrow)).num_rows == 0
    generated = {"delta.generationExpression": "x + 1"}
    gschema = StructType((StructField("x", long, True), StructField("g", long, True, generated)))
    both = pa.schema([("x", pa.int64()), ("g", pa.int64())])
    assert build_checks(gschema, {}, ["x", "g"]).apply(pa.RecordBatch.from_pylist([], schema=both)).num_rows == 0


def test_unreadable_invariant_refuses_the_write_naming_the_column():
    from delta_pyds.protocol.schema import PrimitiveType, StructField, StructType
    from delta_pyds.write.constraints import build_checks

    schema = StructType((StructField("x", PrimitiveType("long"), True, {"delta.invariants": "{not json"}),))
    with pytest.raises(UnsupportedFeatureError, match="column x has an invariant"):
        build_checks(schema, {}, ["x"])
