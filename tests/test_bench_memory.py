"""``bench/bench.py --tree`` reads the memory of ingest's whole process tree: a run's forked
children hold pages of their own, which the largest process's peak RSS leaves out."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from conftest import ROOT, load_script

#: A parent holding two blocks of 60 MB forks a child, which writes to every page of the first
#: (its own copies, as reference counts make them in ingest's children) and only reads the
#: second (shared with its parent); then both wait.
_TWO_PROCESSES = """
import os, time
copied, shared = bytearray(60 << 20), bytearray(60 << 20)
for block in (copied, shared):
    for i in range(0, len(block), 4096): block[i] = 1
if os.fork() == 0:
    for i in range(0, len(copied), 4096): copied[i] = 2
    assert sum(shared[::4096]) == len(shared) // 4096
    time.sleep(1.0)
    os._exit(0)
time.sleep(1.0)
os.wait()
"""


def _bench() -> ModuleType:
    return load_script(ROOT / "bench" / "bench.py", "bench_main")


def test_the_tree_figure_counts_a_forked_childs_copies_and_shared_pages_once() -> None:
    wall, largest, _, tree, *_ = _bench().timed([sys.executable, "-c", _TWO_PROCESSES], tree=True)
    assert largest >= 120  # (the kernel's figure: at least the parent's two blocks)
    assert tree is not None and 170 <= tree < 230  # three blocks of 60: the copy, each once
    assert wall >= 1.0


def test_the_cpu_figures_count_the_forked_childs_page_faults_too() -> None:
    """A forked child's copies on write are part of a run's cost: the parent touches 2 × 60 MB
    (30,720 pages, each a fault), the child copies 60 MB of it (15,360 more)."""
    t = _bench().timed([sys.executable, "-c", _TWO_PROCESSES])
    assert t.faults >= 30_720 + 15_360
    assert t.user > 0 and t.sys > 0
    assert "page faults" in _bench()._cpu_text(t) and "cores busy" in _bench()._cpu_text(t)


def test_the_median_run_of_several_rounds_is_the_middle_one_by_wall_time() -> None:
    """``--repeat``: one slow or fast round (a machine whose speed swings) moves no figure."""
    bench = _bench()
    runs = [bench.Timed(w, 0, "", None, 0.0, 0.0, 0) for w in (9.0, 5.0, 6.0, 30.0, 5.5)]
    assert bench.median_run(runs).wall == 6.0
    assert bench.median_run(runs[:4]).wall == 6.0  # of the middle two, the faster
    assert bench.median_run(runs[:1]).wall == 9.0


#: In a fresh process with its own bytecode prefix: the bench compiles ingest's modules, and
#: the sources left without bytecode are counted.
_COMPILED = """
import importlib.util, sys
from pathlib import Path
sys.pycache_prefix = sys.argv[1]
from conftest import ROOT, load_script
load_script(ROOT / "bench" / "bench.py", "bench_main").compiled()
sources = list((ROOT / "src" / "ingest").rglob("*.py"))
missing = [p for p in sources if not Path(importlib.util.cache_from_source(str(p))).exists()]
print(len(sources), len(missing))
"""


def test_the_bench_times_ingest_with_its_modules_compiled(tmp_path: Path) -> None:
    """Where PYTHONDONTWRITEBYTECODE is set, an editable install compiles every module on
    every start: the bench compiles them first, as installing a wheel does."""
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    run = subprocess.run(
        [sys.executable, "-c", _COMPILED, str(tmp_path)],
        cwd=ROOT / "tests",
        env=env,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr
    sources, missing = map(int, run.stdout.split())
    assert sources > 50 and missing == 0


def test_cold_rounds_drop_the_page_cache_before_each_timed_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--cold``: the floor and ingest each read a corpus the kernel holds none of (without
    it, the floor reads the files in and ingest finds them cached)."""
    bench = _bench()
    drop = tmp_path / "drop_caches"
    monkeypatch.setattr(bench, "DROP_CACHES", drop)
    seen: list[str | None] = []

    def timed(cmd: list[str], tree: bool = False) -> object:
        seen.append(drop.read_text() if drop.exists() else None)
        drop.unlink(missing_ok=True)
        return bench.Timed(1.0, 0, "", None, 0.0, 0.0, 0)

    monkeypatch.setattr(bench, "timed", timed)
    c = bench.Corpus("1MB", 0, tmp_path / "dumps", {}, tmp_path / "work")
    bench.one_round(c, 2, [], False, cold=True)
    bench.one_round(c, 2, [], False)
    assert seen == ["3\n", "3\n", None, None]


def test_cold_rounds_where_the_cache_cannot_be_dropped_say_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    bench = _bench()
    monkeypatch.setattr(bench, "DROP_CACHES", tmp_path / "no such folder" / "drop_caches")
    assert bench.main(["--size", "1MB", "--cold"]) == 2
    assert "--cold cannot drop the page cache" in capsys.readouterr().err


def test_the_cpu_bound_spreads_ingests_cpu_over_every_core_against_the_floors_wall() -> None:
    """The least ratio ingest's CPU allows: 10 s of its code and 2 s of the kernel on two
    cores take at least 6 s; against a floor of 1.5 s that is 4× (a 3× goal then needs
    less CPU, whatever the cores do)."""
    bench = _bench()
    floor = bench.Timed(1.5, 0, "", None, 1.2, 0.1, 0)
    ingest = bench.Timed(9.0, 0, "", None, 10.0, 2.0, 0)
    assert bench.least_ratio(floor, ingest, 2) == pytest.approx(4.0)
    assert bench.least_ratio(floor, ingest, 4) == pytest.approx(2.0)
    assert "6.00 s, b/a at least 4.00" in bench._bound_text(floor, ingest, 2)


def test_the_cpu_goal_says_how_much_less_work_3x_asks_at_the_runs_own_use_of_the_cores() -> None:
    """12 s of CPU in a 9 s run keep 1.33 cores busy; 3× a 1.5 s floor is 4.5 s, in which
    1.33 cores do 6 s of work (half of ingest's) and two cores 9 s (a quarter less)."""
    bench = _bench()
    floor = bench.Timed(1.5, 0, "", None, 1.2, 0.1, 0)
    ingest = bench.Timed(9.0, 0, "", None, 10.0, 2.0, 0)
    assert bench.cpu_budget(floor, ingest, 2) == pytest.approx((9.0, 0.25))
    assert bench.cpu_budget(floor, ingest, 4) == pytest.approx((18.0, 0.0))  # under: no cut
    text = bench._budget_text(floor, ingest, 2)
    assert "leaves 6.00 s of CPU at this run's 1.33 cores busy" in text
    assert "(50% less than ingest's 12.00 s)" in text
    assert "9.00 s with all 2 busy (25% less)" in text
