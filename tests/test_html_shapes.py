"""Saved HTML of any shape gives the records of its text dump: a property over shapes.

Each example (``html_shapes.draw``) is the three seed pages, some of the item page's entries
shown as Chinese originals, written as text dumps and as saved HTML in a shape drawn from
its number (heading levels, list and card markup, layout wrappers, attributes, white space).
``ingest run`` on the HTML gives the records ``ingest run`` gives on the dumps, sources
aside, and neither rejects anything.

The default run draws a few examples; ``HTML_SHAPES=N`` draws N (the slow run).
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from conftest import Out, run_subprocess, write_files
from html_shapes import CARDS, LISTINGS, TITLES, WRAPPERS, Pages, draw

EXAMPLES = int(os.environ.get("HTML_SHAPES", "12"))


def _without_sources(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in r.items() if k != "sources"} for r in records]


def _warning_codes(out: Out) -> Counter[str]:
    report = out.report
    warnings = [w for f in report["files"] for w in f["warnings"]] + report["warnings"]
    return Counter(re.findall(r": ([A-Z][A-Z_]{3,})\b", " ".join(warnings)))


def _check(pages: Pages, dumps: Out, saved: Out) -> None:
    why = f"example {pages.seed}: {pages.shape}"
    assert dumps.code == 0 and saved.code == 0, why
    assert dumps.rejects == [] and saved.rejects == [], why
    assert len(dumps.items) == 47, why
    assert _without_sources(saved.items) == _without_sources(dumps.items), why
    assert _without_sources(saved.topics) == _without_sources(dumps.topics), why
    # the saved pages read like their dumps: no warning of their own but for the chrome
    # removed, the HTML itself, and the lines of a card's buttons skipped
    allowed = {"CHROME_REMOVED", "HTML_INPUT"} | (
        {"LINES_SKIPPED"} if "buttons=True" in why else set()
    )
    assert set(_warning_codes(saved) - _warning_codes(dumps)) <= allowed, why
    kinds = {f["file"]: f["format"] for f in saved.report["files"]}
    assert kinds == {
        "topic_page.html": "topic-page",
        "topic_list.html": "topic-list",
        "item_page.html": "item-page",
    }, why


@pytest.mark.parametrize("seed", range(EXAMPLES))
def test_saved_html_in_any_shape_gives_the_text_dump_records(
    ingest: Any, tmp_path: Path, seed: int
) -> None:
    pages = draw(seed)
    dumps = ingest(write_files(tmp_path / "dumps", dict(pages.dumps)))
    saved = ingest(write_files(tmp_path / "saved", dict(pages.saved)))
    _check(pages, dumps, saved)


@pytest.mark.parametrize("card", ["li", "div"])
@pytest.mark.parametrize("shift", [0, 1, 2])
def test_an_item_page_carried_by_headings_in_a_site_layout(
    ingest: Any, tmp_path: Path, card: str, shift: int
) -> None:
    """The related reading under an h2..h4, each card's title an h3..h5 with its original
    title and summary in blocks beside it, in ``li`` or ``div`` cards, inside a site header
    with a search form, a table of contents and a footer: the page's seven items."""
    wrappers = frozenset({"main", "header", "toc", "footer"})
    pages = draw(0, card=card, title="h", shift=shift, wrappers=wrappers)
    out = ingest(write_files(tmp_path / "in", {"i.html": pages.saved["item_page.html"]}))
    assert out.rejects == [] and len(out.items) == 7
    main = next(i for i in out.items if i["related"])
    assert len(main["related"]) == 6 and main["rating"] == "值得看"


def test_the_shapes_vary_what_they_say_they_vary() -> None:
    """The examples of a default run cover every card, title and listing markup, heading
    levels shifted and not, each wrapper present and absent, and Chinese-original entries
    in both shapes."""
    said = [draw(seed).shape for seed in range(EXAMPLES)]
    for dimension, values in (
        ("card", CARDS),
        ("title", TITLES),
        ("listing", LISTINGS),
        ("shift", ("0", "1", "2")),
        ("indent", ("True", "False")),
    ):
        for value in values:
            assert any(f"{dimension}={value} " in s for s in said), (dimension, value)
    wrappers = [set(s.split("wrappers=")[1].split()[0].split(",")) for s in said]
    for w in WRAPPERS:
        assert any(w in ws for ws in wrappers) and any(w not in ws for ws in wrappers), w
    assert any("repeated=" in s for s in said) and any("missing=" in s for s in said)
    pages = draw(0)
    for name in pages.saved:  # the saved page and its dump are the same page
        assert name.removesuffix(".html") + ".txt" in pages.dumps


def test_one_shape_through_the_installed_command(tmp_path: Path) -> None:
    """The same property through ``python -m ingest`` in a fresh process."""
    pages = draw(EXAMPLES)
    outs = []
    for name, files in (("dumps", pages.dumps), ("saved", pages.saved)):
        folder = write_files(tmp_path / name, dict(files))
        done = run_subprocess("run", str(folder), "--out", str(tmp_path / f"out-{name}"))
        assert done.returncode == 0, done.stderr
        outs.append(Out(tmp_path / f"out-{name}", done.returncode))
    _check(pages, *outs)
    assert json.loads((tmp_path / "out-saved" / "report.json").read_text("utf-8"))
