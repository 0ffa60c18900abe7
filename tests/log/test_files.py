"""Log file names and the ``_last_checkpoint`` checksum (delta_pyds.log.files)."""

from __future__ import annotations

import json
import os

import pytest
from conftest import table_path

from delta_pyds.log.files import canonicalize, last_checkpoint_checksum, parse_log_file_name


def test_last_checkpoint_checksum_matches_protocol_example():
    sample = {
        "k0": "'v 0'",
        "checksum": "adsaskfljadfkjadfkj",
        "k1": {"k2": 2, "k3": ["v3", [1, 2], {"k4": "v4", "k5": ["v5", "v6", "v7"]}]},
    }
    assert canonicalize(sample) == (
        '"k0"="%27v%200%27","k1"+"k2"=2,"k1"+"k3"+0="v3","k1"+"k3"+1+0=1,"k1"+"k3"+1+1=2,'
        '"k1"+"k3"+2+"k4"="v4","k1"+"k3"+2+"k5"+0="v5","k1"+"k3"+2+"k5"+1="v6","k1"+"k3"+2+"k5"+2="v7"'
    )
    assert last_checkpoint_checksum(sample) == "6a92d155a59bf2eecbd4b4ec7fd1f875"
    real = json.load(
        open(os.path.join(table_path("kernel-rs/v2-checkpoints-json-with-sidecars"), "_delta_log", "_last_checkpoint"))
    )
    assert last_checkpoint_checksum(real) == real["checksum"]


@pytest.mark.parametrize(
    "name,kind,version",
    [
        ("00000000000000000010.json", "commit", 10),
        ("00000000000000000010.checkpoint.parquet", "checkpoint", 10),
        ("00000000000000000010.checkpoint.0000000002.0000000003.parquet", "checkpoint", 10),
        ("00000000000000000010.checkpoint.80a083e8-7026-4e79-81be-64bd76c43a11.json", "checkpoint", 10),
        ("00000000000000000004.00000000000000000006.compacted.json", "compaction", 6),
        ("00000000000000000010.crc", "crc", 10),
    ],
)
def test_log_file_names(name, kind, version):
    parsed = parse_log_file_name(name)
    assert (parsed.kind, parsed.version) == (kind, version)


@pytest.mark.parametrize(
    "name",
    [
        "_last_checkpoint",
        ".00000000000000000010.json.crc",
        "10.json",
        "00000000000000000010.json.tmp",
        "00000000000000000010.checkpoint.1.2.parquet",
    ],
)
def test_non_log_file_names(name):
    assert parse_log_file_name(name) is None
