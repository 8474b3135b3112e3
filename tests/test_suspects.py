"""A removed and an added item that may be one resource are named in a run warning.

Day 1 is the seeds. On day 2 the topic's #2 (on the topic page and the topic list) has its
English title edited and its summary reworded: the identity rules give it a new id (a
removed and an added item), and the run says they may be one resource. A resource really
replaced at its rank is not suspected.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import ITEM_PAGE, SEEDS, TOPIC_LIST, TOPIC_PAGE, Out
from ingest.cli import main

PAGE = TOPIC_PAGE.read_text(encoding="utf-8")
LIST = TOPIC_LIST.read_text(encoding="utf-8")
TITLE, SUMMARY = LIST.splitlines()[4:6]  # the list's second entry: the topic's #2
CLAUSE = "讨论在 AWS 上训练和推理基础模型的构建模块"
LIGHT = SUMMARY.replace(CLAUSE, "探讨在 AWS 上进行基础模型训练与推理所需的基本构件")
HEAVY = (
    "亚马逊的三位作者在 Hugging Face 发表企业文章，介绍在 AWS 上完成基础模型训练与推理需要的"
    "各个构件。" + SUMMARY[SUMMARY.index("文章从") :]
)
OTHER = "一篇关于数据库索引设计的入门文章，介绍 B 树与哈希索引的取舍，以及高并发写入时的索引选择。"
CODE = "SAME_RESOURCE_SUSPECTED"


def day2(tmp_path: Path, summary: str, title: str, kind: str = "博客") -> Out:
    out = tmp_path / "out"
    assert main(["run", str(SEEDS), "--out", str(out), "--quiet"]) == 0
    assert SUMMARY in PAGE and SUMMARY in LIST and f"（博客 · 入门）：{SUMMARY}" in PAGE
    page = PAGE.replace(f"（博客 · 入门）：{SUMMARY}", f"（{kind} · 入门）：{summary}")
    dumps = tmp_path / "d2"
    dumps.mkdir()
    (dumps / TOPIC_PAGE.name).write_text(page, encoding="utf-8")
    (dumps / TOPIC_LIST.name).write_text(
        LIST.replace(f"{TITLE}\n{SUMMARY}", f"{title}\n{summary}"), encoding="utf-8"
    )
    (dumps / ITEM_PAGE.name).write_bytes(ITEM_PAGE.read_bytes())
    assert main(["run", str(dumps), "--out", str(out), "--quiet"]) == 0
    return Out(out, 0)


def added_and_removed(out: Out) -> tuple[str, str]:
    ops = {c["op"]: c["id"] for c in out.lines("changes.jsonl") if c["entity"] == "item"}
    assert set(ops) == {"added", "removed"}  # the identity rules are what they were
    return ops["added"], ops["removed"]


def suspects(out: Out) -> list[str]:
    return [w for w in out.report["warnings"] if CODE in w]


@pytest.mark.parametrize(
    ("summary", "kind", "evidence"),
    [
        (HEAVY, "博客", "the same place (topic model-serving-compute, rank 2, 博客, 入门)"),
        (LIGHT, "教程", "a near-duplicate summary"),  # another kind: not the same place
    ],
    ids=["place", "summary"],
)
def test_an_edited_title_and_a_reworded_summary_are_suspected(
    tmp_path: Path, summary: str, kind: str, evidence: str
) -> None:
    out = day2(tmp_path, summary, "Foundation Model Training on AWS: Building Blocks", kind)
    added, removed = added_and_removed(out)
    [warning] = suspects(out)
    assert warning.startswith(f"item {added}: {CODE}: added, and removed item {removed} had ")
    assert evidence in warning and "their original titles differ" in warning
    assert TITLE in warning
    html = (out.folder / "report.html").read_text("utf-8")
    assert CODE in html and removed in html


def test_a_resource_replaced_at_its_rank_is_not_suspected(tmp_path: Path) -> None:
    out = day2(tmp_path, OTHER, "Database Index Design for Beginners")
    added_and_removed(out)
    assert suspects(out) == []
