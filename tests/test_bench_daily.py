"""bench/daily.py: the day 2 it derives holds the day's pages and nothing else."""

from __future__ import annotations

import shutil
from pathlib import Path

from conftest import ROOT, SEEDS, load_script


def test_a_day_two_holds_only_pages_and_the_share_it_says_changed(tmp_path: Path) -> None:
    script = load_script(ROOT / "bench" / "daily.py", "bench_daily")
    dumps = Path(shutil.copytree(SEEDS, tmp_path / "dumps"))
    pages = sorted(p.name for p in dumps.iterdir())
    day = script.day_two(dumps, 0.5, tmp_path / "day")
    assert sorted(p.name for p in day.iterdir()) == pages  # a run reads every file there
    changed = [n for n in pages if (day / n).read_bytes() != (dumps / n).read_bytes()]
    assert len(changed) == round(0.5 * len(pages))
    assert script.day_two(dumps, 0.5, tmp_path / "day") == day  # made once
