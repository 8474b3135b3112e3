"""Record quality on the labelled cases (tests/eval/), held at the floors of floors.json.

``bench/eval.py`` runs the real command line on every case and scores each decision kind;
this test fails when a figure drops under its pinned floor. ``bench/eval.py --pin`` can only
raise a floor.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from conftest import ROOT, load_script

FLOORS = ROOT / "tests" / "eval" / "floors.json"
#: Every labelled case through the command line: a sweep of its own (make test-slow).
pytestmark = pytest.mark.slow


def _module(name: str) -> ModuleType:
    if name not in sys.modules:
        load_script(ROOT / "bench" / f"{name}.py", name)
    return sys.modules[name]


@pytest.fixture(scope="module")
def ev() -> ModuleType:
    return _module("eval")


@pytest.fixture(scope="module")
def measured(ev: Any) -> dict[str, dict[str, float]]:
    figures: dict[str, dict[str, float]] = ev.figures(ev.evaluate())
    return figures


def test_quality_meets_the_pinned_floors(ev: Any, measured: dict[str, dict[str, float]]) -> None:
    floors = json.loads(FLOORS.read_text("utf-8"))
    assert set(floors) == set(ev.KINDS) == set(measured)
    assert all(set(f) == {"precision", "recall", "decisions"} for f in floors.values())
    assert ev.below(measured, floors) == []


def test_the_set_is_large_enough(measured: dict[str, dict[str, float]]) -> None:
    assert sum(m["decisions"] for m in measured.values()) >= 300
    assert all(m["decisions"] >= 50 for m in measured.values())


def test_a_figure_under_its_floor_is_caught(ev: Any, measured: dict[str, dict[str, float]]) -> None:
    floors = {k: {"precision": 1.0, "recall": 1.0} for k in measured}
    failed = ev.below(measured, floors)
    worse = [k for k, m in measured.items() if min(m["precision"], m["recall"]) < 1.0]
    assert worse and sorted({line.split()[0] for line in failed}) == sorted(worse)
    assert ev.below({"title": {"recall": 0.5}}, {"title": {"recall": 0.9}}) == [
        "title recall: 0.500 < floor 0.900"
    ]


def test_pinning_can_only_raise_a_floor(ev: Any) -> None:
    old = {"title": {"precision": 0.9, "recall": 0.8, "decisions": 100.0}}
    today = {
        "title": {"precision": 0.85, "recall": 0.95678, "decisions": 90.0},
        "slug": {"precision": 1.0, "recall": 0.5, "decisions": 12.0},
    }
    assert ev.pinned(old, today) == {
        "title": {"precision": 0.9, "recall": 0.956, "decisions": 100.0},
        "slug": {"precision": 1.0, "recall": 0.5, "decisions": 12.0},
    }


def test_pin_command_keeps_higher_floors(ev: Any, tmp_path: Path, monkeypatch: Any) -> None:
    """``--pin`` over floors higher than today's figures leaves them as they are, and
    ``--check`` then fails: the way down is an edit by hand, seen in review."""
    high = {k: {"precision": 1.0, "recall": 1.0, "decisions": 10_000.0} for k in ev.KINDS}
    path = tmp_path / "floors.json"
    path.write_text(json.dumps(high), "utf-8")
    monkeypatch.setattr(ev, "evaluate", lambda: {k: ev.Score(tp=3, fp=1, fn=1) for k in ev.KINDS})
    assert ev.main(["--pin", "--floors", str(path)]) == 0
    assert json.loads(path.read_text("utf-8")) == high
    assert ev.main(["--check", "--floors", str(path)]) == 1
