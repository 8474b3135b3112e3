"""``bench/bench.py --tree`` reads the memory of ingest's whole process tree: a run's forked
children hold pages of their own, which the largest process's peak RSS leaves out."""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType

from conftest import ROOT

#: A parent holding 60 MB that forks a child; the child writes to every page of them (its own
#: copies, as reference counts make them in ingest's children), then both wait.
_TWO_PROCESSES = """
import os, time
held = bytearray(60 << 20)
for i in range(0, len(held), 4096): held[i] = 1
if os.fork() == 0:
    for i in range(0, len(held), 4096): held[i] = 2
    time.sleep(1.0)
    os._exit(0)
time.sleep(1.0)
os.wait()
"""


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_main", ROOT / "bench" / "bench.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_tree_figure_counts_a_forked_child_once_and_its_own_pages() -> None:
    wall, largest, _, tree = _bench().timed([sys.executable, "-c", _TWO_PROCESSES], tree=True)
    assert 60 <= largest < 100  # one process: the 60 MB, in the parent or as the child's copy
    assert tree is not None and 120 <= tree < 170  # both, the interpreter's shared pages once
    assert wall >= 1.0
