"""bench/instructions.py: which pages it counts, and how it reads callgrind's total."""

from __future__ import annotations

from types import ModuleType

import pytest

from conftest import ROOT, SEEDS, load_script
from ingest.extract.discover import collect_inputs, read_bytes
from ingest.extract.pages import parse_bytes


@pytest.fixture(scope="module")
def script() -> ModuleType:
    return load_script(ROOT / "bench" / "instructions.py", "bench_instructions")


def test_the_pages_of_each_kind_are_those_that_parse_as_it_and_hold_every_listing(
    script: ModuleType,
) -> None:
    parsed = [parse_bytes(f.name, read_bytes(f.path)[0] or b"") for f in collect_inputs([SEEDS])]
    total = sum(r.listings_read for r in parsed if r.format)
    counted = 0
    for kind in ("topic-page", "topic-list", "item-page"):
        paths, listings = script.pages_of_kind(str(SEEDS), kind)
        assert paths and all(parse_bytes(p.name, p.read_bytes()).format == kind for p in paths)
        counted += listings
    assert counted == total


def test_the_total_is_read_from_the_summary_line(script: ModuleType) -> None:
    out = "version: 1\ncmd: python\nevents: Ir\nsummary: 5330247132\nfl=x\n"
    assert script.summary(out) == 5330247132
    with pytest.raises(ValueError, match="not a callgrind output"):
        script.summary("events: Ir\n")


def test_without_valgrind_it_says_so(
    script: ModuleType, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(script.shutil, "which", lambda name: None)
    assert script.main([str(SEEDS)]) == 2
    assert "valgrind is not installed" in capsys.readouterr().err
