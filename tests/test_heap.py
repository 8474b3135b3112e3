"""A run's heap keeps what it freed (``ingest.engines.heap``): the batches of a step that
allocate and free megabytes take pages from the system once, not once a batch."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from conftest import TOPIC_PAGE, run_python
from ingest import commands
from ingest.cli import main

#: Four megabytes in blocks of 200 KB, allocated and freed fifty times, after one block of
#: 300 KB (mapped apart and freed: glibc's thresholds adapt to it and no further).
BATCHES = """
import resource, sys
from ingest.engines.heap import steady_heap
steady = sys.argv[1] == "steady" and steady_heap()
big = bytearray(300_000)
del big
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(50):
    blocks = [bytearray(200_000) for _ in range(20)]
    del blocks
print(steady, resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def faults(mode: str) -> tuple[str, int]:
    done = run_python("-c", BATCHES, mode)
    assert done.returncode == 0, done.stderr
    out = done.stdout.split()
    return out[0], int(out[1])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_memory_freed_is_reused_not_faulted_in_again() -> None:
    assert faults("default") == ("False", pytest.approx(42_000, rel=0.5))  # 1,000 pages a batch
    steady, count = faults("steady")
    assert steady == "True" and count < 2_000  # the 4 MB once


def test_ingest_run_keeps_its_freed_memory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    called: list[bool] = []
    monkeypatch.setattr(commands, "steady_heap", lambda: called.append(True) or True)
    assert main(["run", str(TOPIC_PAGE), "--out", str(tmp_path / "out"), "--quiet"]) == 0
    assert called == [True]
