"""``bench/cluster.py`` starts a scheduler and worker processes of its own for each Dask run
and reads each worker's peak memory before they stop: here at two small sizes, through
its command line, its table whole and its cluster gone after it."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from conftest import ROOT

pytest.importorskip("distributed")

ROW = re.compile(
    r"\| (\S+) \([0-9]+ MB\) \| [0-9.]+ s, [0-9,]+ MB \| [0-9.]+ s \| ([0-9,]+) MB "
    r"\| ([0-9,]+) MB, ([0-9,]+) MB \| [0-9.]+x \|"
)


@pytest.mark.slow  # two clusters and four runs: make test-slow
def test_the_cluster_bench_prints_the_driver_and_each_worker() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "cluster.py"), "--sizes", "500KB,1MB"],
        cwd=ROOT, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    rows = [m.groups() for m in map(ROW.fullmatch, done.stdout.splitlines()) if m]
    assert [r[0] for r in rows] == ["500KB", "1MB"], done.stdout
    for _, driver, *workers in rows:  # every one a Python process that did the work
        assert all(int(p.replace(",", "")) > 60 for p in (driver, *workers)), done.stdout
    assert re.search(r"^driver peak, 1MB against 500KB: [0-9.]+x$", done.stdout, re.M)
    left = subprocess.run(["pgrep", "-f", "dask (scheduler|worker) --scheduler-file"],
                          capture_output=True, text=True, check=False)  # fmt: skip
    assert left.stdout == "", "the bench left its cluster running"
