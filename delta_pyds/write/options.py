"""Write options of the ``pydelta`` source: parsing and validation (no Spark needed).

Option names follow delta-spark where it has one (``partitionBy``, ``replaceWhere``,
``partitionOverwriteMode``, ``mergeSchema``, ``overwriteSchema``, ``txnAppId``,
``txnVersion``, ``userMetadata``, ``maxRecordsPerFile``). Spark lowercases option keys
and passes values as strings, so every lookup here is case-insensitive and table
properties given as ``delta.*`` options get their canonical spelling back from
:mod:`delta_pyds.protocol.table_properties`.

``partitionOverwriteMode`` follows delta-spark: the write option wins over the session
setting ``spark.sql.sources.partitionOverwriteMode``, which applies to overwrites of
partitioned tables without ``replaceWhere`` or ``overwriteSchema``. The caller says what
it knows of the session (``session_partition_overwrite_mode``); Spark gives Python data
sources no session conf, so the data source passes None (unknown) and
:attr:`WriteOptions.partition_overwrite_mode_unknown` tells the commit to refuse an
overwrite whose outcome would depend on it (see :func:`delta_pyds.write.plan.commit_write`).

Guarantees: :meth:`WriteOptions.parse` raises ``ValueError`` naming the option and the
accepted values for anything it cannot interpret, and never touches storage.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from delta_pyds.errors import OptionValueError
from delta_pyds.protocol.table_properties import canonical_property
from delta_pyds.read.options import get_option, int_option

STORAGE_PREFIX = "storage."
SESSION_PARTITION_OVERWRITE_MODE = "spark.sql.sources.partitionOverwriteMode"

# every write option: lowercased name -> (canonical name, description)
WRITE_OPTIONS = {
    "path": ("path", "table location (local path or fsspec URL)"),
    "partitionby": ("partitionBy", "comma-separated partition columns of a new table"),
    "clusterby": ("clusterBy", "clustering columns of a new table (liquid clustering; e.g. 'a, s.b')"),
    "replacewhere": ("replaceWhere", "with mode overwrite: replace only the rows matching this predicate"),
    "partitionoverwritemode": ("partitionOverwriteMode", "static (default) or dynamic"),
    "mergeschema": ("mergeSchema", "true: add new columns of the DataFrame to the table schema"),
    "overwriteschema": ("overwriteSchema", "true (with mode overwrite): replace schema and partitioning"),
    "savemode": ("saveMode", "errorifexists | ignore | append | overwrite (see README)"),
    "mode": ("mode", "alias of saveMode"),
    "txnappid": ("txnAppId", "application id of an idempotent write (with txnVersion)"),
    "txnversion": ("txnVersion", "version of an idempotent write (with txnAppId)"),
    "usermetadata": ("userMetadata", "free text recorded in the commitInfo"),
    "datachange": ("dataChange", "false: the write only rearranges data (adds and removes marked dataChange=false)"),
    "targetfilesize": ("targetFileSize", "bytes per data file before rolling to a new one (e.g. 128m)"),
    "maxrecordsperfile": ("maxRecordsPerFile", "rows per data file before rolling to a new one"),
    "compression": ("compression", "Parquet codec: snappy (default), zstd, gzip, lz4, none"),
    "maxcommitattempts": ("maxCommitAttempts", "commit attempts after lost races (default 50)"),
    "allowunsafecommits": ("allowUnsafeCommits", "true: commit on storage without atomic create"),
    "checkpointonwrite": ("checkpointOnWrite", "false: never write checkpoints from this write"),
}
# delta-spark's auto compaction session confs, taken as write options by the writers that
# see no session conf (the pydelta data source, the streaming sink, write_arrow)
AUTO_COMPACT_OPTIONS = tuple(
    "spark.databricks.delta.autoCompact." + k
    for k in ("enabled", "minNumFiles", "maxFileSize", "minFileSize", "modifiedPartitionsOnly.enabled", "target")
) + ("spark.databricks.delta.autoCompact.maxNumModifiedPartitions",)
WRITE_OPTIONS.update(
    {k.lower(): (k, "auto compaction after this write (delta-spark's session conf)") for k in AUTO_COMPACT_OPTIONS}
)

# delta-spark's schema evolution switch: the session conf (read by write_delta, MERGE and
# delta_pyds.sql), also taken as a write option by the writers that see no session conf; an
# explicit mergeSchema wins over it, as in delta-spark
AUTO_MERGE_OPTION = "spark.databricks.delta.schema.autoMerge.enabled"
WRITE_OPTIONS[AUTO_MERGE_OPTION.lower()] = (AUTO_MERGE_OPTION, "true: as mergeSchema=true unless mergeSchema is given")

_SAVE_MODES = ("errorifexists", "ignore", "append", "overwrite")
_SAVE_MODE_ALIASES = {"error": "errorifexists", "default": "errorifexists"}
_CODECS = {
    "snappy": "snappy",
    "zstd": "zstd",
    "gzip": "gzip",
    "lz4": "lz4",
    "lz4_raw": "lz4",
    "none": "none",
    "uncompressed": "none",
    "brotli": "brotli",
}
_SIZE_RE = re.compile(r"^\s*(\d+)\s*([kmgt]?)i?b?\s*$", re.IGNORECASE)
_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}

DEFAULT_MAX_COMMIT_ATTEMPTS = 50


def _bool(options: Mapping[str, str], name: str, default: bool) -> bool:
    raw = get_option(options, name)
    if raw is None or str(raw).strip() == "":
        return default
    value = str(raw).strip().lower()
    if value in ("true", "1", "yes"):
        return True
    if value in ("false", "0", "no"):
        return False
    raise OptionValueError(f"option {name}: expected true or false, got {raw!r}")


def _int(options: Mapping[str, str], name: str, *, minimum: int) -> int | None:
    return int_option(options, name, None, minimum=minimum)


def parse_size(raw: str, name: str) -> int:
    """``"134217728"``, ``"128m"``, ``"1g"``, ``"512kb"`` -> bytes."""
    m = _SIZE_RE.match(str(raw))
    if not m or int(m.group(1)) <= 0:
        raise OptionValueError(
            f"option {name}: expected a positive size in bytes such as 134217728, 128m or 1g, got {raw!r}"
        )
    return int(m.group(1)) * _UNITS[m.group(2).lower()]


def split_columns(raw: str) -> tuple[str, ...]:
    """``"a, b"`` or ``'["a","b"]'`` (what Spark's partitionBy serializes) -> names."""
    text = raw.strip()
    if text.startswith("[") and text.endswith("]"):
        import json

        try:
            values = json.loads(text)
            if isinstance(values, list) and all(isinstance(v, str) for v in values):
                return tuple(v.strip() for v in values)
        except ValueError:
            pass
        text = text[1:-1]
    return tuple(c.strip().strip("`").strip('"') for c in text.split(",") if c.strip())


@dataclass(frozen=True)
class WriteOptions:
    path: str
    overwrite: bool  # the Spark save mode: Overwrite (True) or Append (False)
    save_mode: str  # errorifexists | ignore | append | overwrite (the effective one)
    partition_by: tuple[str, ...] | None = None
    cluster_by: tuple[tuple[str, ...], ...] | None = None  # column paths
    replace_where: str | None = None
    dynamic_partition_overwrite: bool = False
    # an overwrite the session's partitionOverwriteMode would decide, and the session's value
    # is not known (the data source path): the commit refuses it when the modes would differ
    partition_overwrite_mode_unknown: bool = False
    merge_schema: bool = False
    overwrite_schema: bool = False
    txn_app_id: str | None = None
    txn_version: int | None = None
    user_metadata: str | None = None
    data_change: bool = True  # false: a rearrangement (delta-spark's rearrangeOnly): streams skip it
    target_file_size: int | None = None
    max_records_per_file: int | None = None
    compression: str | None = None  # None: the table's delta.parquet.compression.codec, else snappy
    max_commit_attempts: int = DEFAULT_MAX_COMMIT_ATTEMPTS
    allow_unsafe_commits: bool = False
    checkpoint_on_write: bool = True
    table_properties: Mapping[str, str] = field(default_factory=dict)  # canonical delta.* keys
    auto_compact: Mapping[str, str] = field(default_factory=dict)  # AUTO_COMPACT_OPTIONS given
    storage_options: Mapping[str, str] = field(default_factory=dict, repr=False)  # may hold credentials

    @classmethod
    def parse(
        cls, options: Mapping[str, str], *, overwrite: bool, session_partition_overwrite_mode: str | None = "static"
    ) -> WriteOptions:
        """``session_partition_overwrite_mode``: the session's
        ``spark.sql.sources.partitionOverwriteMode`` (static or dynamic), or None when the
        caller cannot know it; no Spark session (core API): static."""
        path = get_option(options, "path")
        if not path:
            raise OptionValueError(
                "option path: a table location is required, e.g. df.write.format('pydelta').save('/data/table')"
            )
        save_mode = _parse_save_mode(options, overwrite)
        partition_by, cluster_by = _layout(options)
        replace_where = get_option(options, "replaceWhere")
        if replace_where is not None and not replace_where.strip():
            replace_where = None
        raw_pom, dynamic = _partition_overwrite_mode(options)
        merge_schema = _bool(options, "mergeSchema", _bool(options, AUTO_MERGE_OPTION, False))
        overwrite_schema = _bool(options, "overwriteSchema", False)
        unknown = False
        if (raw_pom is None or not raw_pom.strip()) and overwrite and replace_where is None and not overwrite_schema:
            # the session setting decides (delta-spark: an explicit replaceWhere or
            # overwriteSchema means the query's own intent, which wins over the session)
            session_dynamic = _session_dynamic(session_partition_overwrite_mode)
            unknown = session_dynamic is None
            dynamic = dynamic if session_dynamic is None else session_dynamic
        _check_overwrite_options(overwrite, replace_where, dynamic, overwrite_schema)
        app_id, txn_version = _txn(options)
        target = get_option(options, "targetFileSize")
        codec = _codec(options)
        props = {}
        for k, v in options.items():
            if k.lower().startswith("delta."):
                props[canonical_property(k)] = str(v)
        storage = {k[len(STORAGE_PREFIX) :]: v for k, v in options.items() if k.lower().startswith(STORAGE_PREFIX)}
        return cls(
            path=path,
            overwrite=overwrite,
            save_mode=save_mode,
            partition_by=partition_by,
            cluster_by=cluster_by,
            replace_where=replace_where,
            dynamic_partition_overwrite=dynamic,
            partition_overwrite_mode_unknown=unknown,
            merge_schema=merge_schema,
            overwrite_schema=overwrite_schema,
            txn_app_id=app_id,
            txn_version=txn_version,
            user_metadata=get_option(options, "userMetadata"),
            data_change=_bool(options, "dataChange", True),
            target_file_size=parse_size(target, "targetFileSize") if target else None,
            max_records_per_file=_int(options, "maxRecordsPerFile", minimum=1),
            compression=codec,
            max_commit_attempts=_int(options, "maxCommitAttempts", minimum=1) or DEFAULT_MAX_COMMIT_ATTEMPTS,
            allow_unsafe_commits=_bool(options, "allowUnsafeCommits", False),
            checkpoint_on_write=_bool(options, "checkpointOnWrite", True),
            table_properties=props,
            auto_compact=_auto_compact(options),
            storage_options=storage,
        )


def _auto_compact(options: Mapping[str, str]) -> dict[str, str]:
    """The auto compaction options given (canonical names; validated where they are used)."""
    found = {k: get_option(options, k) for k in AUTO_COMPACT_OPTIONS}
    return {k: str(v) for k, v in found.items() if v is not None}


def _layout(
    options: Mapping[str, str],
) -> tuple[tuple[str, ...] | None, tuple[tuple[str, ...], ...] | None]:
    """The ``partitionBy`` and ``clusterBy`` columns of a new table (at most one of them)."""
    raw_parts = get_option(options, "partitionBy")
    partition_by = None
    if raw_parts is not None:
        partition_by = split_columns(raw_parts)
        lowered = [c.lower() for c in partition_by]
        if len(set(lowered)) != len(lowered):
            raise OptionValueError(f"option partitionBy: a column is listed twice in {raw_parts!r}")
    raw_cluster = get_option(options, "clusterBy")
    cluster_by = None
    if raw_cluster is not None:
        from delta_pyds.protocol.clustering import parse_columns

        cluster_by = tuple(parse_columns(raw_cluster))
        if partition_by and cluster_by:
            raise OptionValueError(
                "options partitionBy and clusterBy: a table is either partitioned or clustered; give one of them"
            )
    return partition_by, cluster_by


def _partition_overwrite_mode(options: Mapping[str, str]) -> tuple[str | None, bool]:
    """The ``partitionOverwriteMode`` option as given, and whether it is dynamic."""
    raw_pom = get_option(options, "partitionOverwriteMode")
    pom = (raw_pom or "static").strip().lower() or "static"
    if pom not in ("static", "dynamic"):
        raise OptionValueError(f"option partitionOverwriteMode: expected static or dynamic, got {pom!r}")
    return raw_pom, pom == "dynamic"


def _session_dynamic(session_partition_overwrite_mode: str | None) -> bool | None:
    """Whether the session's partition overwrite mode is dynamic; None when it is unknown."""
    if session_partition_overwrite_mode is None:
        return None
    session = session_partition_overwrite_mode.strip().lower()
    if session not in ("static", "dynamic"):
        raise OptionValueError(
            f"{SESSION_PARTITION_OVERWRITE_MODE}: expected static or dynamic, got {session_partition_overwrite_mode!r}"
        )
    return session == "dynamic"


def check_data_change(opts: WriteOptions, new_table: bool, changes_metadata: bool, on_data: bool) -> None:
    """delta-spark's rules for ``dataChange=false`` (a rearrangement): no new table, no schema or
    metadata change, no ``replaceWhere`` on data columns (``on_data``)."""
    if opts.data_change:
        return
    attempted = None
    if new_table:
        attempted = "Create a Delta table"
    elif opts.overwrite and opts.overwrite_schema:
        attempted = "Overwrite the Delta table schema or change the partition schema"
    elif changes_metadata:
        attempted = "Change the Delta table schema"
    if attempted is not None:
        raise OptionValueError(
            "[DELTA_DATA_CHANGE_FALSE] Cannot change table metadata because the 'dataChange' option is set to"
            f" false. Attempted operation: '{attempted}'."
        )
    if opts.overwrite and on_data:
        raise OptionValueError(
            "[DELTA_REPLACE_WHERE_WITH_FILTER_DATA_CHANGE_UNSET] 'replaceWhere' cannot be used with data filters"
            f" when 'dataChange' is set to false. Filters: {opts.replace_where}"
        )


def _check_overwrite_options(overwrite: bool, replace_where: str | None, dynamic: bool, overwrite_schema: bool) -> None:
    """Raises ValueError for overwrite options given without overwrite mode or together."""
    if replace_where is not None and not overwrite:
        raise OptionValueError("option replaceWhere: only valid with mode('overwrite')")
    if dynamic and not overwrite:
        raise OptionValueError("option partitionOverwriteMode=dynamic: only valid with mode('overwrite')")
    if dynamic and replace_where is not None:
        raise OptionValueError("options replaceWhere and partitionOverwriteMode=dynamic: give at most one")
    if overwrite_schema and not overwrite:
        raise OptionValueError(
            "option overwriteSchema: only valid with mode('overwrite'); use mergeSchema=true to add columns on append"
        )
    if overwrite_schema and (replace_where is not None or dynamic):
        raise OptionValueError(
            "option overwriteSchema: cannot be combined with replaceWhere or partitionOverwriteMode=dynamic"
        )


def _txn(options: Mapping[str, str]) -> tuple[str | None, int | None]:
    """The ``txnAppId`` and ``txnVersion`` options (both or neither)."""
    app_id = get_option(options, "txnAppId")
    txn_version = _int(options, "txnVersion", minimum=0)
    if (app_id is None) != (txn_version is None):
        raise OptionValueError("options txnAppId and txnVersion: give both or neither")
    return app_id, txn_version


def _codec(options: Mapping[str, str]) -> str | None:
    """The Parquet codec of the ``compression`` option; None when not given."""
    codec_raw = (get_option(options, "compression") or "").strip().lower()
    if codec_raw and codec_raw not in _CODECS:
        raise OptionValueError(f"option compression: expected one of {', '.join(sorted(_CODECS))}, got {codec_raw!r}")
    return _CODECS[codec_raw] if codec_raw else None


def _parse_save_mode(options: Mapping[str, str], overwrite: bool) -> str:
    raw = get_option(options, "saveMode")
    name = "saveMode"
    if raw is None:
        raw, name = get_option(options, "mode"), "mode"
    spark_mode = "overwrite" if overwrite else "append"
    if raw is None or not str(raw).strip():
        return spark_mode
    mode = str(raw).strip().lower().replace("_", "")
    mode = _SAVE_MODE_ALIASES.get(mode, mode)
    if mode not in _SAVE_MODES:
        raise OptionValueError(f"option {name}: expected errorifexists, ignore, append or overwrite, got {raw!r}")
    if mode in ("errorifexists", "ignore") and overwrite:
        raise OptionValueError(
            f"option {name}={mode}: use it with mode('append') (Spark only lets Python "
            "data sources run in append or overwrite mode; the option supplies the "
            f"{mode} semantics), not with mode('overwrite')"
        )
    if mode in ("append", "overwrite") and mode != spark_mode:
        raise OptionValueError(f"option {name}={mode} contradicts the DataFrameWriter mode {spark_mode!r}")
    return mode
