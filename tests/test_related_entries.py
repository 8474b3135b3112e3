"""Related entries on an item page are read by what their lines are, not by counting them.

An entry is a Chinese title, an original-title line and a summary. When the resource was
written in Chinese its original title is its Chinese title: the site then repeats that
title on the original-title line, or leaves the line out. Either way the entry is that
resource, with ``title_original`` its Chinese title and ``original_language`` ``zh``, and
it merges with the same resource listed on a topic page or a topic list. A summary is never
read as a title, nor a title as a summary; a line that fits no entry is rejected with a reason.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from conftest import ITEM_PAGE, TOPIC_LIST, TOPIC_PAGE, Out, seed_text, write_files
from ingest.extract.parse.common import is_summary_line
from test_topic_page import FOOTER, HEADER, listing

L004 = seed_text(ITEM_PAGE).split("\n")
T000, T001 = seed_text(TOPIC_PAGE), seed_text(TOPIC_LIST)
RELATED = 9  # the first related entry's first line (after '推荐阅读')
ENTRIES = [L004[i : i + 3] for i in range(RELATED, len(L004), 3)]  # (zh, original, summary)
SHAPES = ("repeated", "missing")


def as_chinese_original(entry: list[str], shape: str) -> list[str]:
    """The entry as the site shows a resource written in Chinese."""
    zh, _original, summary = entry
    return [zh, zh, summary] if shape == "repeated" else [zh, summary]


def item_page(shapes: dict[int, str], main: str | None = None) -> str:
    """Seed 004 with the related entries ``shapes`` names (1-based) and, with ``main``, its
    own entry shown as Chinese originals."""
    head = L004[:RELATED]
    if main is not None:
        head = [head[0], *as_chinese_original(head[1:4], main), *head[4:]]
    body = []
    for n, entry in enumerate(ENTRIES, 1):
        body += as_chinese_original(entry, shapes[n]) if n in shapes else entry
    return "\n".join(head + body) + "\n"


def run(ingest: Any, tmp_path: Path, files: dict[str, str]) -> Out:
    folder = tmp_path / f"in{len(list(tmp_path.glob('in*')))}"
    out: Out = ingest(write_files(folder, files))
    assert out.code == 0
    return out


def by_summary(out: Out) -> dict[str, dict[str, Any]]:
    return {i["summary_zh"]: i for i in out.items}


@pytest.mark.parametrize("shape", SHAPES)
def test_a_chinese_original_entry_merges_with_its_topic_page_and_topic_list(
    ingest: Any, tmp_path: Path, shape: str
) -> None:
    """Seed 004's second related entry, a Chinese original, listed on a topic page and a
    topic list too (the list shows the Chinese title, the original's, on its title line)."""
    zh, _, summary = ENTRIES[1]
    other_zh, other_en, other_summary = ENTRIES[0]
    topic_page = HEADER + listing(1, other_zh, other_summary) + " " + listing(2, zh, summary)
    topic_list = "\n".join(
        ["测试用的主题描述。", "2 条精选 · 入门 2", other_en, other_summary, zh, summary]
    )
    out = run(
        ingest,
        tmp_path,
        {"i.txt": item_page({2: shape}), "t.txt": topic_page + FOOTER, "l.txt": topic_list},
    )
    assert out.rejects == []
    assert len(out.items) == 7  # the item page's own and its six related resources
    item = by_summary(out)[summary]
    assert (item["title_zh"], item["title_original"], item["original_language"]) == (zh, zh, "zh")
    assert sorted(s["format"] for s in item["sources"]) == ["item-page", "topic-list", "topic-page"]
    main = next(i for i in out.items if i["related"])
    assert item["id"] in main["related"] and len(main["related"]) == 6


def test_every_entry_and_the_page_own_in_either_shape_read_right(
    ingest: Any, tmp_path: Path
) -> None:
    clean = by_summary(run(ingest, tmp_path, {"i.txt": "\n".join(L004) + "\n"}))
    for first, second in (SHAPES, SHAPES[::-1]):
        shapes = {n: (first if n % 2 else second) for n in range(1, len(ENTRIES) + 1)}
        out = run(ingest, tmp_path, {"i.txt": item_page(shapes, main=second)})
        assert out.rejects == []
        got = by_summary(out)
        assert got.keys() == clean.keys()
        for summary, item in got.items():
            want = clean[summary]
            assert item["title_zh"] == want["title_zh"]
            assert (item["title_original"], item["original_language"]) == (item["title_zh"], "zh")
            assert [by_id(out, r) for r in item["related"]] == [
                by_id_clean(clean, r) for r in want["related"]
            ]


def by_id(out: Out, item_id: str) -> str:
    return next(i["summary_zh"] for i in out.items if i["id"] == item_id)


def by_id_clean(clean: dict[str, dict[str, Any]], item_id: str) -> str:
    return next(s for s, i in clean.items() if i["id"] == item_id)


def test_an_original_title_in_han_script_that_differs_is_an_original_title(
    ingest: Any, tmp_path: Path
) -> None:
    """A Japanese original is Han script, reads like a summary by its length, and ends with
    a question mark: it is the entry's original title, and the summary after it its summary."""
    japanese = "大規模言語モデルの推論を本当に速くするには何をどう測ればよいのか、全記録とは？"
    zh, _, summary = ENTRIES[2]
    lines = [*L004[: RELATED + 6], zh, japanese, summary, *L004[RELATED + 9 :]]
    out = run(ingest, tmp_path, {"i.txt": "\n".join(lines)})
    assert out.rejects == [] and len(out.items) == 7
    item = by_summary(out)[summary]
    assert (item["title_zh"], item["title_original"]) == (zh, japanese)


@pytest.mark.parametrize("at", range(len(ENTRIES)))
def test_a_summary_without_its_title_is_rejected_never_read_as_a_title(
    ingest: Any, tmp_path: Path, at: int
) -> None:
    """The entry's title lines gone: its summary alone is rejected, the rest read right."""
    lines = list(L004)
    del lines[RELATED + 3 * at : RELATED + 3 * at + 2]
    out = run(ingest, tmp_path, {"i.txt": "\n".join(lines) + "\n"})
    [rej] = out.rejects
    assert (rej["reason"], rej["locator"]) == ("MISSING_FIELD", f"related {at + 1}")
    assert rej["excerpt"] == ENTRIES[at][2][:200]
    assert len(out.items) == 6
    summaries = {s for _, _, s in ENTRIES} | {L004[3]}
    titles = {i["title_zh"] for i in out.items} | {i["title_original"] for i in out.items}
    assert not titles & summaries
    assert {i["summary_zh"] for i in out.items} == summaries - {ENTRIES[at][2]}


def test_a_repeated_title_is_the_original_title_whatever_the_summary_holds(
    ingest: Any, tmp_path: Path
) -> None:
    """The copy is told by being a copy: a summary without a full stop after it (one long
    sentence ending with an exclamation mark) is still that entry's summary."""
    zh, _, summary = ENTRIES[1]
    bare = summary.replace("。", "；")[:-1] + "！"
    lines = [*L004[: RELATED + 3], zh, zh, bare, *L004[RELATED + 6 :]]
    out = run(ingest, tmp_path, {"i.txt": "\n".join(lines)})
    assert out.rejects == [] and len(out.items) == 7
    item = by_summary(out)[bare]
    assert (item["title_zh"], item["title_original"], item["original_language"]) == (zh, zh, "zh")


def test_two_summaries_in_a_row_the_second_is_rejected(ingest: Any, tmp_path: Path) -> None:
    """A summary line repeated (a page saved twice over): the entry keeps the first, the
    second is rejected with a reason, and the next entry is read right."""
    lines = [*L004[: RELATED + 3], ENTRIES[0][2], *L004[RELATED + 3 :]]
    out = run(ingest, tmp_path, {"i.txt": "\n".join(lines)})
    [rej] = out.rejects
    assert rej["reason"] == "MISSING_FIELD" and rej["locator"] == "related 2"
    assert len(out.items) == 7


def test_a_byline_less_page_of_a_chinese_original_starts_at_its_title(
    ingest: Any, tmp_path: Path
) -> None:
    """No byline: the page starts at its own entry, read backwards from the key/value block;
    the repeated title is that entry's original-title line, not a stray line before it."""
    text = item_page({}, main="repeated").split("\n", 1)[1]
    out = run(ingest, tmp_path, {"i.txt": text})
    assert out.rejects == []
    warnings = " ".join(out.report["files"][0]["warnings"])
    assert "LINES_SKIPPED" not in warnings
    main = by_summary(out)[L004[3]]
    assert (main["title_zh"], main["title_original"], main["original_language"]) == (
        L004[1],
        L004[1],
        "zh",
    )


def test_a_topic_list_of_chinese_originals_pairs_every_title_line(
    ingest: Any, tmp_path: Path
) -> None:
    """Seed 001 with every title line the resource's Chinese title (as the topic list shows
    a Chinese original), beside seed 000: each line pairs with its summary, none is an
    orphan, and every listing merges with its topic-page listing."""
    zh_of = {i["summary_zh"]: i["title_zh"] for i in run(ingest, tmp_path, {"t.txt": T000}).items}
    lines = T001.split("\n")
    for k in range(2, len(lines) - 1, 2):
        lines[k] = zh_of[lines[k + 1]]
    shown = lines[2::2]
    assert sum(is_summary_line(t) for t in shown) >= 3  # titles that read like summaries
    out = run(ingest, tmp_path, {"t.txt": T000, "l.txt": "\n".join(lines)})
    assert out.rejects == [] and len(out.items) == 44
    assert "TITLE_MISSING" not in " ".join(f for w in out.report["files"] for f in w["warnings"])
    listed = [i for i in out.items if any(s["format"] == "topic-list" for s in i["sources"])]
    assert len(listed) == len(shown)
    assert all(i["title_original"] == i["title_zh"] for i in listed)
