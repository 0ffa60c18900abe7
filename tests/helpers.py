"""Comparison helpers for tests: rows from Spark, deltalake and DuckDB (tests/interop.py) as
sorted lists."""

from __future__ import annotations

import datetime as dt
import math

# every character Spark escapes in partition directory names, and a few more
SPARK_ESCAPED = [chr(c) for c in range(0x01, 0x20)] + list("\"#%'*/:=?\\\x7f{[]^")


def normalize(value, source="arrow"):
    """A comparable, hashable form of a value from Spark Rows (source="spark") or Arrow
    ``to_pylist()`` (source="arrow"): structs become sorted (name, value) tuples, maps
    ("map", sorted pairs), timestamps naive UTC, NaN a string."""
    if type(value).__name__ == "VariantVal":  # compared by value (its JSON), not identity
        return ("variant", value.toJson())
    if hasattr(value, "asDict"):  # Spark struct
        return tuple(sorted((k, normalize(v, source)) for k, v in value.asDict(recursive=False).items()))
    if isinstance(value, dict):
        if source == "spark":  # Spark map
            if not value:
                return ()
            return ("map",) + tuple(
                sorted(((normalize(k, source), normalize(v, source)) for k, v in value.items()), key=repr)
            )
        return tuple(sorted((str(k), normalize(v, source)) for k, v in value.items()))
    if (
        isinstance(value, list)
        and source == "arrow"
        and value
        and all(isinstance(x, tuple) and len(x) == 2 for x in value)
    ):
        return ("map",) + tuple(sorted(((normalize(k, source), normalize(v, source)) for k, v in value), key=repr))
    if isinstance(value, (list, tuple)):
        return tuple(normalize(v, source) for v in value)
    if isinstance(value, float) and math.isnan(value):
        return "NaN"
    if isinstance(value, dt.datetime):
        if value.tzinfo is not None:
            value = value.astimezone(dt.timezone.utc).replace(tzinfo=None)
        return value
    if isinstance(value, bytearray):
        return bytes(value)
    return value


def sort_key(row):
    return repr(row)


def spark_rows(df) -> list:
    cols = df.columns
    return sorted((tuple(normalize(r[c], "spark") for c in cols) for r in df.collect()), key=sort_key)


def arrow_rows(table, columns) -> list:
    data = table.select(columns).to_pylist()
    return sorted((tuple(normalize(r[c]) for c in columns) for r in data), key=sort_key)


def deltalake_s3_options(server) -> dict:
    """deltalake's storage options for the local S3 test server (tests/servers.py)."""
    o = server.options
    return {
        "AWS_ENDPOINT_URL": o["endpoint_url"],
        "AWS_ACCESS_KEY_ID": o["key"],
        "AWS_SECRET_ACCESS_KEY": o["secret"],
        "AWS_REGION": "us-east-1",
        "AWS_ALLOW_HTTP": "true",
    }


def deltalake_table(path, version=None, storage_options=None, *, duckdb=True):
    """All rows of a table read by delta-rs's own query engine (it applies deletion
    vectors and column mapping, unlike its pyarrow dataset path), as a pyarrow Table.
    Every table read here is also read by DuckDB's delta extension (delta-kernel-rs,
    :mod:`interop`), which must give the same rows (``duckdb=False``: a caller that
    compares DuckDB itself)."""
    import pyarrow as pa
    from deltalake import DeltaTable, QueryBuilder
    from interop import check_duckdb_agrees

    dt = DeltaTable(path, version=version, storage_options=storage_options)
    result = QueryBuilder().register("t", dt).execute("SELECT * FROM t")
    table = pa.table(result.read_all())
    if duckdb:
        check_duckdb_agrees(str(path), table, version=version, storage_options=storage_options)
    return table


def deltalake_s3_rows(server, url, columns=("id", "p", "s")) -> list:
    """The ``columns`` of the table at ``url`` on the local S3 server ``server`` as deltalake
    reads them (deletion vectors applied by its engine), as sorted tuples."""
    table = deltalake_table(url, storage_options=deltalake_s3_options(server))
    return sorted(tuple(r[c] for c in columns) for r in table.select(list(columns)).to_pylist())


def pydelta_write(df, path, mode="append", **options):
    """``df.write.format("pydelta")`` with ``options`` (the data source writer)."""
    w = df.write.format("pydelta").mode(mode)
    for k, v in options.items():
        w = w.option(k, v)
    w.save(path)


def pydelta_read(spark, path):
    return spark.read.format("pydelta").load(path)


def table_version(path):
    from delta_pyds.table.snapshot import Snapshot

    return Snapshot.load(path).version


DML_COLS = ["id", "part", "name", "value"]


def dml_data(start: int, n: int):
    """Rows ``start .. start + n - 1`` of the DML tests' table (id, part = id % 3, name, value)."""
    import pyarrow as pa

    ids = list(range(start, start + n))
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "part": pa.array([i % 3 for i in ids], pa.int64()),
            "name": pa.array([f"n{i}" for i in ids]),
            "value": pa.array([i * 0.5 for i in ids]),
        }
    )


def parquet_files(path: str) -> list[str]:
    """The table's data files (root-relative, sorted), the log left out."""
    import glob
    import os

    return sorted(
        os.path.relpath(p, path)
        for p in glob.glob(os.path.join(path, "**", "*.parquet"), recursive=True)
        if "_delta_log" not in p
    )


# ------------------------------------------------------------- schema JSON of the log
def field(name, type_, physical=None, fid=None, nullable=True, **meta):
    """One field of a Delta schema as the log spells it (``physical`` / ``fid``: the
    column-mapping physical name and id; ``meta``: more field metadata)."""
    metadata = dict(meta)
    if physical:
        metadata["delta.columnMapping.physicalName"] = physical
    if fid is not None:
        metadata["delta.columnMapping.id"] = fid
    return {"name": name, "type": type_, "nullable": nullable, "metadata": metadata}


def struct(*fields):
    """A Delta struct type (the schema itself at the top level) of ``fields``."""
    return {"type": "struct", "fields": list(fields)}


def make_schema(*fields):
    """The parsed schema (``protocol.schema.StructType``) of ``fields`` (:func:`field` dicts)."""
    import json

    from delta_pyds.protocol.schema import parse_schema

    return parse_schema(json.dumps(struct(*fields)))


def ts(*args):
    """``datetime(*args)`` in UTC."""
    return dt.datetime(*args, tzinfo=dt.timezone.utc)


# ------------------------------------------------------------------ tables of ids
def write_ids(path, ids, mode="append", *, with_p=True, **kwargs):
    """Writes rows ``id`` (long), ``v`` (``"v<id>"``) and, with ``with_p``, ``p`` (``id % 4``,
    int) to a Delta table with deltalake (delta-rs, another writer than ours)."""
    import pyarrow as pa
    from deltalake import write_deltalake

    columns = {"id": pa.array(ids, pa.int64()), "v": pa.array([f"v{i}" for i in ids])}
    if with_p:
        columns["p"] = pa.array([i % 4 for i in ids], pa.int32())
    write_deltalake(path, pa.table(columns), mode=mode, **kwargs)


def forget_last_spark_commit(checkpoint):
    """Removes the last entry of a streaming query's commit log (and its checksum): as if the
    driver died after the sink's commit but before Spark recorded the batch. Returns its batch id."""
    import os

    commits = os.path.join(checkpoint, "commits")
    last = max(int(n) for n in os.listdir(commits) if n.isdigit())
    for name in (str(last), f".{last}.crc"):
        if os.path.exists(os.path.join(commits, name)):
            os.remove(os.path.join(commits, name))
    return last


# ------------------------------------------------------------------------ the log
def log_actions(path, version):
    """The actions of one JSON commit of the table at ``path``, as dicts."""
    import json
    import os

    with open(os.path.join(path, "_delta_log", f"{version:020d}.json")) as f:
        return [json.loads(line) for line in f if line.strip()]


def adds_of(path, version):
    """The ``add`` actions of one JSON commit."""
    return [a["add"] for a in log_actions(path, version) if "add" in a]


def delta_schema(**arrow_types):
    """A Delta schema (``StructType``) of columns given as Arrow types: ``delta_schema(a=pa.int64())``."""
    import pyarrow as pa

    from delta_pyds.protocol.schema_evolution import from_arrow_schema

    return from_arrow_schema(pa.schema(list(arrow_types.items())))


# tables that deltalake reads too: our rows must equal its rows
INTEROP_TABLES = [
    "delta-rs/simple_table",
    "delta-rs/simple_table_with_checkpoint",
    "delta-rs/delta-0.2.0",
    "delta-rs/delta-0.8.0",
    "delta-rs/delta-0.8.0-date",
    "delta-rs/delta-0.8.0-null-partition",
    "delta-rs/delta-0.8.0-numeric-partition",
    "delta-rs/delta-0.8.0-partitioned",
    "delta-rs/delta-0.8.0-special-partition",
    "delta-rs/delta-1.2.1-only-struct-stats",
    "delta-rs/delta-2.2.0-partitioned-types",
    "delta-rs/delta-checkpoint-stats-optional",
    "delta-rs/delta-stats-optional",
    "delta-rs/http_requests",
    "delta-rs/issue_1374",
    "delta-rs/partition-type-primitives",
    "delta-rs/python-0.25.5-checkpoint",
    "delta-rs/table-with-dv-small",
    "delta-rs/table-without-dv-small",
    "delta-rs/table_failed_last_checkpoint_update",
    "delta-rs/table_with_column_mapping",
    "delta-rs/table_with_deletion_logs",
    "delta-rs/table_with_liquid_clustering",
    "delta-rs/table_with_null_stats_in_notnull_struct",
    "delta-rs/table_with_partitioning_mapping",
    "delta-rs/cdf-table-with-cdc-and-dvs",
    "delta-rs/checkpoint-v2-table",
    "kernel-rs/app-txn-checkpoint",
    "kernel-rs/basic_partitioned",
    "kernel-rs/cdf-column-mapping-id-mode",
    "kernel-rs/cdf-column-mapping-name-mode",
    "kernel-rs/cdf-table-with-dv",
    "kernel-rs/compacted-log-files-table",
    "kernel-rs/external-table-different-nullability",
    "kernel-rs/mixed-nulls",
    "kernel-rs/parsed-stats",
    "kernel-rs/partitioned_with_materialize_feature",
    "kernel-rs/stats-writing-all-types/delta",
    "kernel-rs/timestamp-partitioned-table",
    "kernel-rs/timestamp-truncation-stats",
    "kernel-rs/v1-multi-part-partitioned-struct-stats-only",
    "kernel-rs/v1-multi-part-struct-stats-only",
    "kernel-rs/v2-checkpoints-json-with-sidecars",
    "kernel-rs/v2-checkpoints-parquet-with-sidecars",
    "kernel-rs/v2-checkpoints-json-without-sidecars",
    "kernel-rs/v2-classic-checkpoint-json",
    "kernel-rs/v2-classic-checkpoint-parquet",
    "kernel-rs/v2-parquet-sidecars-struct-stats-only",
    "kernel-rs/with-short-dv",
    "kernel-rs/void-column",
]


def row_ids(path):
    """data id -> (row id, row commit version), from the files themselves: the materialized
    columns where set, else baseRowId + position / defaultRowCommitVersion."""
    import os

    import pyarrow.parquet as pq

    from delta_pyds.protocol.deletion_vectors import DeletionVectorDescriptor, load_deleted_rows
    from delta_pyds.table.snapshot import Snapshot

    snap = Snapshot.load(path)
    conf = snap.configuration
    id_col = conf["delta.rowTracking.materializedRowIdColumnName"]
    ver_col = conf["delta.rowTracking.materializedRowCommitVersionColumnName"]
    out = {}
    for f in snap.files.to_pylist():
        table = pq.read_table(os.path.join(path, f["path"]))
        deleted = (
            set(load_deleted_rows(snap.storage, DeletionVectorDescriptor.from_dict(f["deletion_vector"])))
            if f["deletion_vector"]
            else set()
        )
        for pos, row in enumerate(table.to_pylist()):
            if pos in deleted:
                continue
            rid = row.get(id_col)
            ver = row.get(ver_col)
            out[row["id"]] = (
                rid if rid is not None else f["base_row_id"] + pos,
                ver if ver is not None else f["default_row_commit_version"],
            )
    return out


def spark_jobs(spark, fn) -> int:
    """The Spark jobs ``fn()`` runs (a job group of its own, read from the status tracker)."""
    import time

    sc = spark.sparkContext
    group = f"pydelta-test-jobs-{time.time_ns()}"
    sc.setJobGroup(group, "counted")
    try:
        fn()
    finally:
        sc.setJobGroup("", "")
    return len(sc.statusTracker().getJobIdsForGroup(group))
