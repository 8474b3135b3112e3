"""Size caps (each with its own reason code), link-target forms, header split, counts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import ingest.extract.parse.topic_page as topic_page
from conftest import TOPIC_LIST, TOPIC_PAGE, seed_text, write_files
from test_topic_page import FOOTER, S1, S2, S3, listing, page


def test_file_over_the_size_cap_is_refused_before_reading(ingest: Any, tmp_path: Path) -> None:
    folder = write_files(tmp_path / "in", {"page.txt": TOPIC_PAGE.read_bytes()})
    with open(folder / "huge.txt", "wb") as fh:  # sparse: 65 MiB on paper, nothing on disk
        fh.truncate(65 * 1024 * 1024)
    out = ingest(folder)
    [rej] = out.rejects
    assert (rej["file"], rej["reason"], rej["locator"]) == ("huge.txt", "TOO_LARGE", "file")
    assert len(out.items) == 44


def test_line_over_the_line_cap(ingest: Any, tmp_path: Path) -> None:
    lines = seed_text(TOPIC_LIST).split("\n")
    lines[4] = "很长的一行。" * 20_000  # 120 000 characters
    out = ingest(write_files(tmp_path / "in", {"l.txt": "\n".join(lines)}))
    reasons = {(r["locator"], r["reason"]) for r in out.rejects}
    assert ("line 5", "LINE_TOO_LONG") in reasons
    assert len(out.items) == 18  # the entry whose summary was the long line is gone, only it


def test_field_over_the_field_cap(ingest: Any, tmp_path: Path) -> None:
    long = "很长的摘要。" * 4000  # 24 000 characters
    text = page(listing(1, "甲", S1), listing(2, "乙", long), listing(3, "丙", S3))
    out = ingest(write_files(tmp_path / "in", {"p.txt": text}))
    [rej] = out.rejects
    assert (rej["locator"], rej["reason"]) == ("listing 2", "FIELD_TOO_LONG")
    assert "20000" in rej["message"]
    assert sorted(i["title_zh"] for i in out.items) == ["丙", "甲"]


def test_listings_over_the_count_cap(
    ingest: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(topic_page, "MAX_LISTINGS", 2)
    text = page(listing(1, "甲", S1), listing(2, "乙", S2), listing(3, "丙", S3))
    out = ingest(write_files(tmp_path / "in", {"p.txt": text}))
    [rej] = out.rejects
    assert (rej["locator"], rej["reason"]) == ("listing 3", "TOO_MANY_ITEMS")
    assert len(out.items) == 2


def test_link_target_forms(ingest: Any, tmp_path: Path) -> None:
    text = page(
        listing(1, "甲", S1, url="<https://example.com/a b>"),
        listing(2, "乙", S2, url='https://example.com/b "标题"'),
        listing(3, "丙", S3, url="https://example.com/c_(d)"),
    )
    out = ingest(write_files(tmp_path / "in", {"p.txt": text}))
    urls = {i["title_zh"]: i["url"] for i in out.items}
    assert urls == {"甲": None, "乙": "https://example.com/b", "丙": "https://example.com/c_(d)"}
    assert any("URL_UNSAFE" in w for w in out.report["files"][0]["warnings"])


HEADER = (
    "# Model Serving 与算力 学习模型服务框架的人员。 - 所属：[部署]() - 网站："
    "[https://oplearnx.com/topics/msc]() ## 推荐学习顺序 "
)


def test_flattened_header_split_by_the_topic_list(ingest: Any, tmp_path: Path) -> None:
    text = HEADER + listing(1, "甲", S1) + FOOTER
    alone = ingest(write_files(tmp_path / "a", {"p.txt": text}))
    [topic] = alone.topics
    assert (topic["name"], topic["description"]) == (
        "Model",
        "Serving 与算力 学习模型服务框架的人员。",
    )
    assert any("HEADER_AMBIGUOUS" in w for w in alone.report["warnings"])
    lst = "学习模型服务框架的人员。\n1 条精选 · 入门 1\nFirst\n" + S1 + "\n"
    joined = ingest(write_files(tmp_path / "b", {"p.txt": text, "l.txt": lst}))
    [topic] = joined.topics
    assert (topic["name"], topic["description"]) == (
        "Model Serving 与算力",
        "学习模型服务框架的人员。",
    )
    assert not any("HEADER_AMBIGUOUS" in w for w in joined.report["warnings"])
    assert joined.items[0]["title_original"] == "First"


def test_declared_count_that_the_page_does_not_have(ingest: Any, tmp_path: Path) -> None:
    text = page(listing(1, "甲", S1), listing(2, "乙", S2, meta="博客 · 进阶"))
    lst = "测试用的主题描述。\n5 条精选 · 入门 3\nFirst\n" + S1 + "\n"
    out = ingest(write_files(tmp_path / "in", {"p.txt": text, "l.txt": lst}))
    [check] = out.report["consistency"]
    assert (check["declared_count"], check["found_count"], check["ok"]) == (5, 2, False)
    assert check["found_levels"] == {"beginner": 1, "intermediate": 1}
    assert any("COUNT_MISMATCH" in w for w in out.report["warnings"])
