"""Alignment of original titles, and one record per real resource."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from conftest import TOPIC_LIST, TOPIC_PAGE, seed_text, write_files
from test_topic_page import FOOTER, S1, S2, S3, listing


def _titles(out: Any) -> dict[str, str | None]:
    return {i["summary_zh"]: i["title_original"] for i in out.items}


@pytest.mark.parametrize("missing", [0, 1, 9, 18])
def test_missing_title_line_shifts_nothing(ingest: Any, tmp_path: Path, missing: int) -> None:
    full = ingest(TOPIC_PAGE, TOPIC_LIST)
    lines = seed_text(TOPIC_LIST).split("\n")
    title_line = 2 + 2 * missing
    dropped = lines.pop(title_line)
    out = ingest(
        write_files(
            tmp_path / "in",
            {TOPIC_PAGE.name: TOPIC_PAGE.read_bytes(), TOPIC_LIST.name: "\n".join(lines)},
        )
    )
    expected = _titles(full)
    got = _titles(out)
    summary = lines[title_line]
    assert expected[summary] == dropped and got[summary] is None
    del expected[summary], got[summary]
    assert got == expected  # every other title on its own item
    assert len(out.items) == 44 and not out.rejects
    assert any("TITLE_MISSING" in w for w in out.report["files"][1]["warnings"])


def test_orphan_summary_that_joins_nothing_is_rejected(ingest: Any, tmp_path: Path) -> None:
    lines = seed_text(TOPIC_LIST).split("\n")
    del lines[2]  # first entry's title line; its topic page is not in the batch
    out = ingest(write_files(tmp_path / "in", {"list.txt": "\n".join(lines)}))
    assert len(out.items) == 18
    [rej] = out.rejects
    assert (rej["reason"], rej["locator"]) == ("PAIRING_ERROR", "line 3")
    t = out.report["totals"]
    assert t["listings"] == 19 and t["listings_rejected"] == 1 and t["listings_merged"] == 18


def _page(slug: str, *listings: str) -> str:
    return (
        f"# 主题{slug} 主题{slug}的描述。 - 所属：[分类]() - 网站：[https://oplearnx.com/topics/"
        f"{slug}]() ## 推荐学习顺序 " + " ".join(listings) + FOOTER
    )


def test_one_resource_on_two_topic_pages(ingest: Any, tmp_path: Path) -> None:
    a = _page("alpha", listing(1, "甲", S1, "博客 · 入门"), listing(2, "乙", S2))
    b = _page("beta", listing(1, "丙", S3), listing(2, "甲", S1, "博客 · 深入"))
    out = ingest(write_files(tmp_path / "in", {"a.txt": a, "b.txt": b}))
    assert len(out.items) == 3
    item = out.by_title("甲")
    assert item["topics"] == [
        {"slug": "alpha", "rank": 1, "level": "beginner", "level_label": "入门"},
        {"slug": "beta", "rank": 2, "level": "advanced", "level_label": "深入"},
    ]
    assert [s["file"] for s in item["sources"]] == ["a.txt", "b.txt"]
    assert {t["slug"]: len(t["items"]) for t in out.topics} == {"alpha": 2, "beta": 2}


def test_same_chinese_title_different_resources_stay_apart(ingest: Any, tmp_path: Path) -> None:
    a = _page("alpha", listing(1, "同名标题", S1), listing(2, "同名标题", S2))
    out = ingest(write_files(tmp_path / "in", {"a.txt": a}))
    assert len(out.items) == 2
    assert {i["summary_zh"] for i in out.items} == {S1, S2}


def test_near_duplicate_summary_is_the_same_resource(ingest: Any, tmp_path: Path) -> None:
    s1b = S1.replace("介绍一个用于测试的资源", "介绍了一个供测试使用的资源")
    a = _page("alpha", listing(1, "甲", S1), listing(2, "乙", S2))
    b = _page("beta", listing(1, "甲", s1b), listing(2, "丙", S3))
    out = ingest(write_files(tmp_path / "in", {"a.txt": a, "b.txt": b}))
    assert len(out.items) == 3
    item = out.by_title("甲")
    assert [t["slug"] for t in item["topics"]] == ["alpha", "beta"]
    assert out.report["totals"]["near_duplicate_merges"] == 1
    assert any(c["field"] == "summary_zh" for c in out.report["conflicts"])


def test_near_duplicates_on_one_page_are_two_resources(ingest: Any, tmp_path: Path) -> None:
    s1b = S1.replace("介绍一个用于测试的资源", "介绍了一个供测试使用的资源")
    a = _page("alpha", listing(1, "甲", S1), listing(2, "甲二", s1b))
    out = ingest(write_files(tmp_path / "in", {"a.txt": a}))
    assert len(out.items) == 2


def test_different_original_titles_block_a_near_duplicate_merge(
    ingest: Any, tmp_path: Path
) -> None:
    s1b = S1.replace("介绍一个用于测试的资源", "介绍了一个供测试使用的资源")
    desc = "主题alpha的描述。"
    lst = f"{desc}\n2 条精选 · 入门 2\nFirst Title\n{S1}\nA Different Title\n{s1b}\n"
    out = ingest(write_files(tmp_path / "in", {"l.txt": lst}))
    assert len(out.items) == 2


def test_order_aligns_a_reworded_summary(ingest: Any, tmp_path: Path) -> None:
    reworded = "第二篇文章讲述了另一个完全不同的话题，含有若干细节和结论，可供读者参考阅读。"
    a = _page("alpha", listing(1, "甲", S1), listing(2, "乙", S2), listing(3, "丙", S3))
    lst = f"主题alpha的描述。\n3 条精选 · 入门 3\nFirst\n{S1}\nSecond\n{reworded}\nThird\n{S3}\n"
    out = ingest(write_files(tmp_path / "in", {"a.txt": a, "l.txt": lst}))
    assert len(out.items) == 3
    assert out.by_title("乙")["title_original"] == "Second"
    assert out.report["totals"]["order_alignments"] == 1
