"""Helpers shared by tests that edit a copied table's files by hand: copy a test table,
read and rewrite commit files, list live paths, read rows without Spark (DVs applied), and cap
the process's memory around a read."""

from __future__ import annotations

import contextlib
import json
import os
import resource
import shutil

import pyarrow as pa
from conftest import table_path

from delta_pyds.protocol.schema import to_arrow_schema
from delta_pyds.read.file_reader import ReadSpec, read_file
from delta_pyds.read.scan import FileTask
from delta_pyds.table.snapshot import Snapshot


def copy(tmp_path, name: str) -> str:
    dest = tmp_path / name.replace("/", "__")
    shutil.copytree(table_path(name), dest)
    return str(dest)


def log_file(table: str, version: int, suffix: str = "json") -> str:
    return os.path.join(table, "_delta_log", f"{version:020d}.{suffix}")


def read_lines(path: str) -> list[str]:
    with open(path) as f:
        return f.read().splitlines()


def write_lines(path: str, lines: list[str], *, final_newline: bool = True) -> None:
    with open(path, "w") as f:
        f.write("\n".join(lines) + ("\n" if final_newline else ""))


def edit_actions(path: str, fn) -> None:
    """Rewrites a commit: ``fn(list of action dicts) -> list of action dicts``."""
    actions = [json.loads(line) for line in read_lines(path) if line.strip()]
    write_lines(path, [json.dumps(a) for a in fn(actions)])


def latest_commit(table: str) -> str:
    names = sorted(
        n
        for n in os.listdir(os.path.join(table, "_delta_log"))
        if n.endswith(".json") and n[:20].isdigit() and len(n) == 25
    )
    return os.path.join(table, "_delta_log", names[-1])


def file_paths(table: str, **kw) -> set[str]:
    return set(Snapshot.load(table, **kw).files.column("path").to_pylist())


def read_rows(table: str, **kw) -> pa.Table:
    """All rows of the table, read file by file without Spark (DVs applied)."""
    snap = Snapshot.load(table, **kw)
    spec = ReadSpec(
        storage=snap.storage,
        output=snap.schema,
        arrow_schema=to_arrow_schema(snap.schema),
        partition_columns=tuple(snap.partition_columns),
        physical_partition_columns=tuple(snap.physical_partition_columns),
        column_mapping_mode=snap.column_mapping_mode,
        table_schema=snap.schema,
    )
    batches = []
    for row in snap.files.to_pylist():
        pv = row.get("partition_values") or {}
        task = FileTask(
            row["path"], row["size"], tuple(pv.get(c) for c in snap.physical_partition_columns), row["deletion_vector"]
        )
        batches.extend(read_file(spec, task))
    return pa.Table.from_batches(batches, schema=spec.arrow_schema)


@contextlib.contextmanager
def memory_cap(extra: int = 1 << 30):
    """Caps this process's address space at its current size + ``extra`` bytes, so that
    an unbounded allocation fails fast with MemoryError (which no test here accepts)
    instead of exhausting a shared machine. No timing involved."""
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    with open("/proc/self/status") as f:
        size = next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmSize:"))
    limit = size + extra if hard == resource.RLIM_INFINITY else min(size + extra, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
