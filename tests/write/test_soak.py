"""Short soak run (issue 9): 3 writer processes with injected faults (self-kill between
data files and commit, random exceptions, ambiguous and refused commit PUTs, supervisor
SIGKILLs) and 2 reader processes checking every snapshot against a reference replay,
for ~15 s on local disk. The full run is ``python bench/soak.py --writers 4 --seconds 60
[--s3]``."""

from __future__ import annotations

import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "bench"))


@pytest.mark.slow
def test_soak_local_disk():
    import soak

    summary = soak.run(writers=3, readers=2, seconds=15, seed=1, kill_every=3.0, faults={"overwrite": 0.1}, quiet=True)
    assert summary["lost"] == 0, summary
    assert summary["phantom"] == 0, summary
    assert summary["inconsistent_reads"] == 0, summary
    assert summary["read_errors"] == 0, summary
    assert summary["writer_crashes"] == 0 and summary["writer_errors"] == 0, summary
    assert not summary["problems"], summary
    assert summary["final_rows"] == summary["expected_rows"]
    assert summary["committed"] >= 20 and summary["reads"] >= 20, summary
    assert summary["supervisor_kills"] >= 2, summary
    assert summary["ok"], summary
