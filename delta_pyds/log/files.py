"""Names of the files in ``_delta_log`` and the ``_last_checkpoint`` hint.

Guarantees: ``parse_log_file_name`` recognises exactly the protocol's file names
(commits ``<v>.json``, classic ``<v>.checkpoint.parquet``, multi-part
``<v>.checkpoint.<i>.<n>.parquet``, v2 ``<v>.checkpoint.<uuid>.(json|parquet)``, log
compactions ``<a>.<b>.compacted.json``, checksums ``<v>.crc``) and returns ``None``
for anything else (hidden files, temporary files, ``_last_checkpoint``).
``last_checkpoint_checksum`` implements the protocol's canonical-JSON MD5.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any

LOG_DIR = "_delta_log"
LAST_CHECKPOINT = "_last_checkpoint"
SIDECAR_DIR = "_sidecars"

_COMMIT = re.compile(r"^(\d{20})\.json$")
_CHECKPOINT_CLASSIC = re.compile(r"^(\d{20})\.checkpoint\.parquet$")
_CHECKPOINT_MULTI = re.compile(r"^(\d{20})\.checkpoint\.(\d{10})\.(\d{10})\.parquet$")
_CHECKPOINT_V2 = re.compile(r"^(\d{20})\.checkpoint\.([0-9a-fA-F-]{36})\.(json|parquet)$")
_COMPACTION = re.compile(r"^(\d{20})\.(\d{20})\.compacted\.json$")
_CRC = re.compile(r"^(\d{20})\.crc$")


@dataclass(frozen=True)
class LogFile:
    kind: str  # commit | checkpoint | compaction | crc
    version: int  # for compactions: the end version
    name: str
    path: str = ""
    size: int = 0
    modification_time: int = 0
    # checkpoints
    checkpoint_kind: str = ""  # classic | multi | v2
    part: int = 1
    num_parts: int = 1
    file_format: str = "parquet"
    # compactions
    start_version: int = -1


def parse_log_file_name(name: str, path: str = "", size: int = 0, modification_time: int = 0) -> LogFile | None:
    m = _COMMIT.match(name)
    if m:
        return LogFile("commit", int(m.group(1)), name, path, size, modification_time, file_format="json")
    m = _CHECKPOINT_CLASSIC.match(name)
    if m:
        return LogFile("checkpoint", int(m.group(1)), name, path, size, modification_time, "classic")
    m = _CHECKPOINT_MULTI.match(name)
    if m:
        return LogFile(
            "checkpoint",
            int(m.group(1)),
            name,
            path,
            size,
            modification_time,
            "multi",
            part=int(m.group(2)),
            num_parts=int(m.group(3)),
        )
    m = _CHECKPOINT_V2.match(name)
    if m:
        return LogFile("checkpoint", int(m.group(1)), name, path, size, modification_time, "v2", file_format=m.group(3))
    m = _COMPACTION.match(name)
    if m:
        return LogFile(
            "compaction",
            int(m.group(2)),
            name,
            path,
            size,
            modification_time,
            file_format="json",
            start_version=int(m.group(1)),
        )
    m = _CRC.match(name)
    if m:
        return LogFile("crc", int(m.group(1)), name, path, size, modification_time, file_format="json")
    return None


def commit_name(version: int) -> str:
    return f"{version:020d}.json"


def classic_checkpoint_name(version: int) -> str:
    return f"{version:020d}.checkpoint.parquet"


# --------------------------------------------------------------- _last_checkpoint checksum
_UNRESERVED = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~")


def _encode(text: str) -> str:
    return "".join(chr(b) if b in _UNRESERVED else f"%{b:02X}" for b in text.encode("utf-8"))


def _scalar(value: Any) -> str:
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, str):
        return f'"{_encode(value)}"'
    return json.dumps(value)


def _pairs(value: Any, path: list[str], out: list[tuple[bytes, str]]) -> None:
    if isinstance(value, dict):
        for key, child in value.items():
            _pairs(child, path + [f'"{_encode(key)}"'], out)
    elif isinstance(value, list):
        for index, child in enumerate(value):
            _pairs(child, path + [str(index)], out)
    else:
        joined = "+".join(path)
        out.append((joined.encode("utf-8"), f"{joined}={_scalar(value)}"))


def canonicalize(obj: dict[str, Any]) -> str:
    pairs: list[tuple[bytes, str]] = []
    _pairs({k: v for k, v in obj.items() if k != "checksum"}, [], pairs)
    pairs.sort(key=lambda p: p[0])
    return ",".join(p[1] for p in pairs)


def last_checkpoint_checksum(obj: dict[str, Any]) -> str:
    return hashlib.md5(canonicalize(obj).encode("utf-8")).hexdigest()
