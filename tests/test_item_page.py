"""Item page: publisher line, key/value block, related reading, Chinese-only titles."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from conftest import write_files
from test_topic_page import S1, S2, S3

PAGE = f"""某出版方··3 天前
一个中文原创资源
{S1}
- 分级
- 值得看
- 收录时间
- 2026-10-28
推荐阅读
相关资源甲
Related Resource A
{S2}
相关资源乙
{S3}
"""


def test_chinese_original_and_related(ingest: Any, tmp_path: Path) -> None:
    out = ingest(write_files(tmp_path / "in", {"i.txt": PAGE}))
    assert len(out.items) == 3
    main = out.by_title("一个中文原创资源")
    assert main["title_original"] == "一个中文原创资源"
    assert main["original_language"] == "zh"
    assert (main["publisher"], main["published_ago"]) == ("某出版方", "3 天前")
    assert (main["rating"], main["collected_on"]) == ("值得看", "2026-10-28")
    a, b = out.by_title("相关资源甲"), out.by_title("相关资源乙")
    assert main["related"] == [a["id"], b["id"]]
    assert (a["title_original"], a["original_language"]) == ("Related Resource A", "en")
    assert (b["title_original"], b["original_language"]) == ("相关资源乙", "zh")
    assert a["related"] == [] and a["publisher"] is None


def test_self_reference_is_dropped(ingest: Any, tmp_path: Path) -> None:
    page = PAGE.replace(f"相关资源乙\n{S3}", f"一个中文原创资源\n{S1}")
    out = ingest(write_files(tmp_path / "in", {"i.txt": page}))
    main = out.by_title("一个中文原创资源")
    assert main["related"] == [out.by_title("相关资源甲")["id"]]
    assert any("SELF_REFERENCE" in w for w in out.report["warnings"])
    assert any("DUPLICATE_ITEM" in w for w in out.report["warnings"])


def test_bad_date_and_unknown_key_are_warnings(ingest: Any, tmp_path: Path) -> None:
    page = PAGE.replace("- 2026-10-28", "- 2026-13-45\n- 作者\n- 某人")
    out = ingest(write_files(tmp_path / "in", {"i.txt": page}))
    main = out.by_title("一个中文原创资源")
    assert main["collected_on"] is None and main["rating"] == "值得看"
    warnings = " ".join(out.report["files"][0]["warnings"])
    assert "BAD_DATE" in warnings and "UNKNOWN_KEY" in warnings


def test_no_related_reading(ingest: Any, tmp_path: Path) -> None:
    page = PAGE.split("推荐阅读")[0]
    out = ingest(write_files(tmp_path / "in", {"i.txt": page}))
    [item] = out.items
    assert item["related"] == [] and not out.rejects


def test_related_entry_cut_short_is_rejected_alone(ingest: Any, tmp_path: Path) -> None:
    page = PAGE.rstrip("\n").rsplit("\n", 1)[0] + "\n"  # drop the last summary line
    out = ingest(write_files(tmp_path / "in", {"i.txt": page}))
    assert len(out.items) == 2
    [rej] = out.rejects
    assert rej["reason"] == "TRUNCATED_ITEM" and rej["locator"] == "related 2"
