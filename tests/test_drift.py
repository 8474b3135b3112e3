"""Format drift: stray lines around or between a page's parts cost no record.

Mutation tests through the real command line: each seed (and the topic page with its line
breaks) gets site chrome inserted at its start, at its end and between its sections, from
a list of chrome lines (some look like structure: ``1. 首页``, ``# 登录``) and the places
each page kind has. Every variant must give the clean page's records exactly, with a
LINES_SKIPPED warning, no reject, the same structural marks, and no chrome in any record.
Damaged pages keep what is intact, and say which marks they lack.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from conftest import (
    ITEM_PAGE,
    TOPIC_LIST,
    TOPIC_PAGE,
    Out,
    every_string,
    multiline_topic_page,
    seed_text,
    write_files,
)
from ingest.cli import main
from ingest.extract.parse.common import is_furniture

#: Site chrome as scrapers leave it: navigation, breadcrumbs, share, cookie, legal lines.
CHROME = [
    "首页 · 全部主题 · 关于",
    "1. 首页",
    "# 登录",
    "首页 › 主题 › 模型服务与算力",
    "- 全部主题",
    "登录 / 注册",
    "分享到：微博 · 微信 · 复制链接",
    "本站使用 Cookie 改善浏览体验 · 接受",
    "© 2026 LearnMap · 学径 保留所有权利",
    "Copyright © 2026 oplearnx.com. All rights reserved.",
    "京ICP备12345678号-1",
    "返回顶部",
    "———",
]
#: A stray line with no furniture words: only the page's structure can tell it apart.
PLAIN = "欢迎来到学径，今天为你推荐三个新主题"

T000, T001, T004 = seed_text(TOPIC_PAGE), seed_text(TOPIC_LIST), seed_text(ITEM_PAGE)
MULTI = multiline_topic_page(T000)
Mutate = Callable[[str, list[str]], str]


def at_line(index: int) -> Mutate:
    """Insert the chrome lines before line ``index`` (negative: from the end)."""

    def put(text: str, chrome: list[str]) -> str:
        lines = text.rstrip("\n").split("\n")
        at = index if index >= 0 else len(lines) + 1 + index
        return "\n".join(lines[:at] + chrome + lines[at:]) + "\n"

    return put


def before(marker: str, count: int = 1) -> Mutate:
    """Break the line before the ``count``-th ``marker`` and put the chrome lines there."""

    def put(text: str, chrome: list[str]) -> str:
        at = -1
        for _ in range(count):
            at = text.index(marker, at + 1)
        return text[:at].rstrip(" ") + "\n" + "\n".join(chrome) + "\n" + text[at:].lstrip(" ")

    return put


def before_line(prefix: str) -> Mutate:
    def put(text: str, chrome: list[str]) -> str:
        lines = text.split("\n")
        at = next(i for i, ln in enumerate(lines) if ln.startswith(prefix))
        return "\n".join(lines[:at] + chrome + lines[at:])

    return put


START, END = at_line(0), at_line(-1)
#: page -> (its text, {place: how to put chrome there}); "between sections" in page order.
PAGES: dict[str, tuple[str, dict[str, Mutate]]] = {
    "topic-page": (
        T000,
        {
            "start": START,
            "after the header": before(" ## "),
            "before listing 1": before(" 1. ["),
            "between listings 19 and 20": before(" 20. ["),
            "before the footer": before(" --- "),
            "end": END,
        },
    ),
    "topic-page with line breaks": (
        MULTI,
        {
            "start": START,
            "after the header": before_line("## "),
            "before listing 1": before_line("1. ["),
            "between listings 19 and 20": before_line("20. ["),
            "before the footer": before_line("---"),
            "end": END,
        },
    ),
    "topic-list": (
        T001,
        {
            "start": START,
            "between description and stats": at_line(1),
            "after the stats line": at_line(2),
            "between entries 5 and 6": at_line(12),
            "end": END,
        },
    ),
    "item-page": (
        T004,
        {
            "start": START,
            "between byline and title": at_line(1),
            "between summary and key/values": at_line(4),
            "between key/values and 推荐阅读": at_line(8),
            "after 推荐阅读": at_line(9),
            "between related entries 2 and 3": at_line(15),
            "end": END,
        },
    ),
}
#: Where only the page's structure (no furniture words) tells a stray line apart.
STRUCTURAL_PLACES = [
    (page, place)
    for page, (_, places) in PAGES.items()
    for place in places
    if place == "start" or page.startswith("topic-page")
]


@cache
def run(text: str) -> dict[str, Any]:
    """One file through ``ingest run`` in-process: its records and its file report."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = write_files(Path(tmp, "in"), {"page.txt": text})
        out = Out(Path(tmp, "out"), main(["run", str(folder), "--out", f"{tmp}/out", "--quiet"]))
        assert out.code == 0
        return {
            "items": [_without_sources(i) for i in out.items],
            "topics": [_without_sources(t) for t in out.topics],
            "rejects": out.rejects,
            "file": out.report["files"][0],
        }


def _without_sources(record: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in record.items() if k != "sources"}


def assert_same_records(page: str, mutated: str, chrome: list[str]) -> None:
    clean, got = run(PAGES[page][0]), run(mutated)
    what = f"{page} with {chrome!r}"
    assert got["rejects"] == [], f"{what}: {got['rejects']}"
    assert got["file"]["status"] == "ok" and got["file"]["format"] == clean["file"]["format"]
    assert got["items"] == clean["items"], what
    assert got["topics"] == clean["topics"], what
    assert got["file"]["marks"] == clean["file"]["marks"], what
    skipped = [w for w in got["file"]["warnings"] if "LINES_SKIPPED" in w]
    assert skipped, f"{what}: no LINES_SKIPPED warning"
    assert sum(int(w.split(": ")[2].split()[0]) for w in skipped) == len(chrome), skipped
    texts = every_string(got["items"]) + every_string(got["topics"])
    assert not [c for c in chrome for s in texts if c in s], what


PLACED = [(p, q) for p in PAGES for q in PAGES[p][1]]


@pytest.mark.parametrize("every", [False, pytest.param(True, marks=pytest.mark.slow)])
@pytest.mark.parametrize(("page", "place"), PLACED)
def test_chrome_lines_anywhere_cost_nothing(page: str, place: str, every: bool) -> None:
    """Each chrome line at each place, alone (``make test``: three lines a place, in turn,
    so that every line is tried at several places; ``make test-slow``: every line)."""
    text, places = PAGES[page]
    k = PLACED.index((page, place))
    lines = CHROME if every else [CHROME[(3 * k + j) % len(CHROME)] for j in range(3)]
    for line in lines:
        assert_same_records(page, places[place](text, [line]), [line])


@pytest.mark.parametrize("page", sorted(PAGES))
def test_a_saved_page_with_chrome_around_it(page: str) -> None:
    """Breadcrumbs and a menu above the page, share and legal lines below it, at once."""
    text, places = PAGES[page]
    above, below = CHROME[:6], CHROME[6:]
    assert_same_records(page, places["end"](places["start"](text, above), below), CHROME)


@pytest.mark.parametrize(("page", "place"), STRUCTURAL_PLACES)
def test_a_plain_stray_line_is_placed_by_structure(page: str, place: str) -> None:
    text, places = PAGES[page]
    assert_same_records(page, places[place](text, [PLAIN]), [PLAIN])


def test_the_warning_says_how_many_lines_and_where() -> None:
    got = run(START(T001, CHROME[:3]))
    assert "lines 1-3: LINES_SKIPPED: 3 line(s) before the page's first structural mark, " in (
        " ".join(got["file"]["warnings"])
    )
    assert "first '首页 · 全部主题 · 关于'" in " ".join(got["file"]["warnings"])


def test_no_line_of_a_real_page_reads_as_furniture() -> None:
    """Furniture is told by words and shape: no line of the seeds is taken for it."""
    lines = [*T001.split("\n"), *T004.split("\n"), *MULTI.split("\n")]
    assert [ln for ln in lines if is_furniture(ln)] == []


# --------------------------------------------------------------------------- damaged pages


def _fields(items: list[dict[str, Any]], *drop: str) -> list[dict[str, Any]]:
    return [{k: v for k, v in i.items() if k not in drop} for i in items]


@pytest.mark.parametrize("text", [T000[T000.index("## ") :], MULTI[MULTI.index("## ") :]])
@pytest.mark.parametrize("chrome", [[], CHROME[:3]])
def test_topic_page_without_header_keeps_its_listings(text: str, chrome: list[str]) -> None:
    clean, got = run(T000), run(START(text, chrome))
    assert got["rejects"] == [] and len(got["items"]) == 44
    assert _fields(got["items"], "topics", "id") == _fields(clean["items"], "topics", "id")
    assert all(i["topics"] == [] for i in got["items"]) and got["topics"] == []
    assert (
        "file: HEADER_MISSING: no '# ' heading or header fields: topic unknown"
        in (got["file"]["warnings"])
    )
    assert got["file"]["marks"] == ["section", "listings", "footer", "source"]


@pytest.mark.parametrize("chrome", [[], CHROME[:3], [PLAIN]])
def test_item_page_without_byline_keeps_item_and_related(chrome: list[str]) -> None:
    clean, got = run(T004), run(START("\n".join(T004.split("\n")[1:]), chrome))
    assert got["rejects"] == [] and len(got["items"]) == 7
    no_byline = [{**i, "publisher": None, "published_ago": None} for i in clean["items"]]
    assert got["items"] == no_byline
    main_item = next(i for i in got["items"] if i["related"])
    assert main_item["rating"] == "值得看" and len(main_item["related"]) == 6
    assert "file: BYLINE_MISSING" in " ".join(got["file"]["warnings"])
    assert got["file"]["marks"] == ["entry", "key_values", "related_heading", "related"]


def test_topic_list_without_description_keeps_its_entries() -> None:
    clean, got = run(T001), run(START("\n".join(T001.split("\n")[1:]), CHROME[:2]))
    assert got["rejects"] == [] and len(got["items"]) == 19
    assert _fields(got["items"], "topics", "id") == _fields(clean["items"], "topics", "id")
    assert (
        "file: DESCRIPTION_MISSING: no description line: topic unknown" in (got["file"]["warnings"])
    )
    assert got["file"]["marks"] == ["stats", "entries"]


def test_topic_page_without_footer_says_so_in_its_marks() -> None:
    got = run(T000[: T000.index(" --- ")])
    assert got["file"]["marks"] == ["heading", "category", "website", "section", "listings"]


def test_an_unknown_page_lists_the_marks_it_has() -> None:
    """A page no kind claims still says what was seen (here: an item page's markers, but
    neither byline nor summary before them)."""
    got = run("首页 · 全部主题\n- 分级\n- 值得看\n推荐阅读\n")
    assert got["rejects"][0]["reason"] == "UNKNOWN_FORMAT"
    assert got["file"]["marks"] == ["item_markers"]


def test_prose_with_a_related_heading_is_no_byline_less_item_page() -> None:
    """Without its byline an item page must show its entry before '- 分级' / '- 收录时间';
    prose that happens to have a '推荐阅读' line is still no page kind (B8)."""
    prose = (
        "一篇博客\n今天我们聊聊怎么搭建一个个人网站，以及网站域名的选择，这是一段很长的正文。\n"
        "推荐阅读\n另一篇\n"
    )
    got = run(prose)
    assert [r["reason"] for r in got["rejects"]] == ["UNKNOWN_FORMAT"] and got["items"] == []


# --------------------------------------------------------------------------- summaries


def test_a_summary_wrapped_mid_sentence_stays_whole() -> None:
    """A line break inside a sentence continues the summary; no line is skipped."""
    lines = MULTI.split("\n")
    at = next(i for i, ln in enumerate(lines) if ln.startswith("7. ["))
    cut = lines[at].index(" ", lines[at].index("）："))  # a space inside the summary
    assert not lines[at][:cut].endswith("。")
    wrapped = [*lines[:at], lines[at][:cut], lines[at][cut + 1 :], *lines[at + 1 :]]
    got = run("\n".join(wrapped))
    assert got["items"] == run(T000)["items"] and got["rejects"] == []
    assert not any("LINES_SKIPPED" in w for w in got["file"]["warnings"])


def test_a_last_title_without_summary_before_furniture_is_not_a_cut_file() -> None:
    """The file goes on after the title (site furniture follows), so it was not cut there:
    PAIRING_ERROR, where the same title at the very end is TRUNCATED_ITEM."""
    lines = T001.rstrip("\n").split("\n")
    title = lines[-2]
    for tail, reason in (([], "TRUNCATED_ITEM"), (["© 2026 LearnMap · 学径"], "PAIRING_ERROR")):
        got = run("\n".join([*lines[:-1], *tail]))
        assert [(r["reason"], r["excerpt"]) for r in got["rejects"]] == [(reason, title)]
        assert len(got["items"]) == 18


def test_chrome_never_becomes_a_title_or_summary() -> None:
    """A pair of chrome lines at the end of a topic list would pair as title and summary."""
    got = run(END(T001, ["分享到：微博 · 微信", "© 2026 LearnMap · 学径"]))
    assert got["items"] == run(T001)["items"] and got["rejects"] == []
    assert json.dumps(got["items"], ensure_ascii=False).count("LearnMap") == 0
