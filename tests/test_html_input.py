"""Saved HTML pages of each kind give the same records as their text dumps."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from conftest import SEEDS

HTML = Path(__file__).parent / "fixtures" / "html"


def _without_sources(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in r.items() if k != "sources"} for r in records]


@pytest.mark.parametrize("suffix", ["", "_hostile"])
def test_html_pages_give_the_text_dump_records(ingest: Any, suffix: str) -> None:
    text = ingest(SEEDS)
    pages = [HTML / f"{kind}{suffix}.html" for kind in ("topic_page", "topic_list", "item_page")]
    html = ingest(*pages)
    assert html.code == 0 and html.rejects == []
    assert _without_sources(html.items) == _without_sources(text.items)
    assert _without_sources(html.topics) == _without_sources(text.topics)
    parsers = {f["parser"] for f in html.report["files"]}
    assert parsers == {"selectolax"}
    formats = sorted(f["format"] for f in html.report["files"])
    assert formats == ["item-page", "topic-list", "topic-page"]


def test_no_markup_or_script_reaches_a_record(ingest: Any) -> None:
    out = ingest(*sorted(HTML.glob("*_hostile.html")))
    for item in out.items:
        for value in (item["title_zh"], item["title_original"], item["summary_zh"]):
            assert value is None or ("<" not in value and "fake" not in value)
