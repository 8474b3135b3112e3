"""``bench/publish.py`` derives its second publish (B) from a real one (A) with ingest's own
writer and change-set code: when those change, the benchmark must still run. Here on the
seeds: B is a publish ``ingest publish`` loads, with the change set the bench made."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from conftest import ROOT, load_script
from ingest.cli import main


def _bench() -> ModuleType:
    return load_script(ROOT / "bench" / "publish.py", "bench_publish")


def test_the_publish_bench_derives_a_next_publish_the_database_loads(
    ingest: Any, tmp_path: Path
) -> None:
    a = ingest(ROOT / "seeds")
    assert a.code == 0
    b = tmp_path / "b"
    changed = _bench().derive_b(a.folder, b, 0.2, 0)
    lines = (b / "changes.jsonl").read_text("utf-8").splitlines()
    ops = [c["op"] for c in map(json.loads, lines) if c["entity"] == "item"]
    assert changed == 10 and len(ops) == changed and {"added", "changed", "removed"} <= set(ops)
    db = tmp_path / "bench.sqlite"
    assert main(["publish", str(a.folder), "--db", f"sqlite:///{db}"]) == 0
    assert main(["publish", str(b), "--db", f"sqlite:///{db}"]) == 0


def test_the_bench_reads_the_publishs_own_peak_not_its_own() -> None:
    """The bench holds A (hundreds of MB at 100 MB); a child forked from it would count
    those pages in its own peak. Here the bench holds 300 MB and its child touches 50."""
    ballast = bytearray(300 << 20)
    for i in range(0, len(ballast), 4096):
        ballast[i] = 1
    child = "x = bytearray(50 << 20)\nfor i in range(0, len(x), 4096): x[i] = 1"
    _, rss, _ = _bench().run([sys.executable, "-c", child])
    assert rss is not None and 50 <= rss < 150, rss
    assert ballast[4096] == 1
