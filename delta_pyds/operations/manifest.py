"""GENERATE symlink_format_manifest: the manifest files Presto, Trino and Athena read a
Delta table through (``DeltaTable.generate("symlink_format_manifest")``).

Guarantees (as delta-spark's full manifest generation):

* ``_symlink_format_manifest/manifest`` for an unpartitioned table, one
  ``_symlink_format_manifest/<col=value/...>/manifest`` per partition otherwise (directory
  names escaped as Spark escapes partition directories, ``__HIVE_DEFAULT_PARTITION__`` for
  null); each lists the absolute paths of the partition's active data files, one per line
  (local files as ``file:/...``, as Hadoop qualifies them);
* manifests of partitions that no longer have files are deleted; nothing else under the
  table root is touched and nothing is committed to the log;
* nothing is written or deleted through a symbolic link leading out of the root: a
  ``_symlink_format_manifest`` directory (or a partition directory in it) that is such a
  link is refused with :class:`PathEscapeError` before anything is written (a manifest
  file that is itself a link is replaced or unlinked, its target never written);
* tables whose readers need more than the data files are refused with
  :class:`UnsupportedFeatureError`, as delta-spark refuses them: deletion vectors in any
  active file, and column mapping (the files' column names are not the table's).
  No Spark.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable

from delta_pyds.errors import OptionValueError, PathEscapeError, UnsupportedFeatureError
from delta_pyds.protocol import features
from delta_pyds.storage.tree import escapes_root, list_tree
from delta_pyds.table.snapshot import Snapshot
from delta_pyds.write.parquet_writer import partition_dir

MANIFEST_DIR = "_symlink_format_manifest"
MANIFEST_NAME = "manifest"
MODES = ("symlink_format_manifest",)


def _qualified(snapshot: Snapshot, path: str) -> str:
    full = snapshot.storage.resolve(path)
    return "file:" + full if snapshot.storage.protocol == "file" and full.startswith("/") else full


def generate_manifest(snapshot: Snapshot, mode: str = "symlink_format_manifest") -> list[str]:
    """Writes the manifests of ``snapshot`` (see the module docstring); returns their
    root-relative paths."""
    if not isinstance(mode, str) or mode.lower() not in MODES:
        raise OptionValueError(f"generate: mode must be one of {', '.join(MODES)} (case-insensitive), got {mode!r}")
    features.check_read(snapshot.protocol)
    if snapshot.column_mapping_mode != "none":
        raise UnsupportedFeatureError(
            "generate(symlink_format_manifest): manifests cannot describe a table with column mapping "
            "(delta-spark: DELTA_UNSUPPORTED_MANIFEST_GENERATION_WITH_COLUMN_MAPPING)",
            ("columnMapping",),
        )
    files = snapshot.files
    dvs = files.column("deletion_vector").to_pylist()
    if any(dvs):
        raise UnsupportedFeatureError(
            "generate(symlink_format_manifest): the table has files with deletion vectors, which "
            "manifest readers would ignore; run optimize().executeCompaction() (or purge them) first",
            ("deletionVectors",),
        )
    pcols = list(snapshot.partition_columns)
    groups: dict[str, list[str]] = {}
    paths = files.column("path").to_pylist()
    pvs = files.column("partition_values").to_pylist() if pcols else [None] * len(paths)
    physical = list(snapshot.physical_partition_columns)
    for p, v in zip(paths, pvs):
        rel_dir = partition_dir(pcols, [(v or {}).get(c) for c in physical]) if pcols else ""
        groups.setdefault(rel_dir, []).append(_qualified(snapshot, p))
    storage = snapshot.storage
    contents: dict[str, bytes] = {}
    for rel_dir, members in sorted(groups.items()):
        rel = posixpath.join(MANIFEST_DIR, rel_dir, MANIFEST_NAME) if rel_dir else f"{MANIFEST_DIR}/{MANIFEST_NAME}"
        contents[rel] = ("\n".join(sorted(members)) + "\n").encode("utf-8")
    if not groups and not pcols:  # an empty unpartitioned table: an empty manifest
        contents[f"{MANIFEST_DIR}/{MANIFEST_NAME}"] = b""
    # every target is checked before anything is written: no link may lead a write out
    escaping = [
        rel for rel in [f"{MANIFEST_DIR}/{MANIFEST_NAME}", *contents] if escapes_root(storage, storage.join(rel))
    ]
    if escaping:
        raise PathEscapeError(
            f"generate(symlink_format_manifest): {escaping[0]} is under a symbolic link leading out of "
            f"the table root {storage.root}; nothing was written or deleted. Replace the link with a "
            "directory (or remove it) and generate again"
        )
    for rel, data in contents.items():
        storage.write_bytes(storage.join(rel), data)
    _delete_stale(snapshot, set(contents))
    return list(contents)


def _existing(snapshot: Snapshot) -> Iterable[tuple[str, str]]:
    """(root-relative, listed path) of the files below the manifest directory, never listed
    through a link leading out of the root (:func:`~delta_pyds.storage.tree.list_tree`)."""
    return [(e.rel, e.path) for e in list_tree(snapshot.storage, MANIFEST_DIR)]


def _delete_stale(snapshot: Snapshot, keep: set[str]) -> None:
    for rel, listed in _existing(snapshot):
        if rel.endswith("/" + MANIFEST_NAME) and rel not in keep:
            snapshot.storage.delete(listed)
