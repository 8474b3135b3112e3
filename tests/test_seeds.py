"""SPEC §5: the facts of the three real seed pages, through the real command line."""

from __future__ import annotations

import itertools
import random
import shutil
from pathlib import Path
from typing import Any

import pytest

from conftest import ITEM_PAGE, SEEDS, TOPIC_LIST, TOPIC_PAGE, Out, run_subprocess
from ingest import job
from ingest.extract.discover import collect_inputs
from regen_golden import COPIED, PAGES, normalized_report, pages_of

GOLDEN = Path(__file__).parent / "golden"


@pytest.fixture(scope="module")
def full(tmp_path_factory: pytest.TempPathFactory) -> Out:
    out = tmp_path_factory.mktemp("seeds") / "out"
    proc = run_subprocess("run", str(SEEDS), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "items" in proc.stdout and "47" in proc.stdout  # the summary table
    return Out(out, proc.returncode)


def test_counts(full: Out) -> None:
    totals = full.report["totals"]
    assert (totals["files"], totals["listings"], totals["items"], totals["topics"]) == (
        3,
        70,
        47,
        1,
    )
    assert totals["listings_merged"] + totals["listings_rejected"] == totals["listings"]
    assert totals["rejects"] == 0 and full.rejects == []
    assert len(full.items) == 47


def test_topic(full: Out) -> None:
    [topic] = full.topics
    assert topic["slug"] == "model-serving-compute"
    assert topic["name"] == "模型服务与算力"
    assert (
        topic["description"]
        == "学习模型服务框架、并行计算与底层优化，适合维护训练和推理基础设施的人员。"
    )
    assert topic["category"] == "部署与推理优化"
    assert topic["url"] == "https://oplearnx.com/topics/model-serving-compute"
    assert topic["site"] == {"name": "LearnMap · 学径", "url": "https://oplearnx.com"}
    assert topic["notice"] == "中文标题与摘要由模型根据原文生成，以原文为准。"
    assert topic["order_note"] == "按推荐学习顺序：越基础、直观越靠前，越系统、深入越靠后"
    assert topic["declared"] == {"count": 44, "levels": {"beginner": 2}}
    assert len(topic["items"]) == 44
    [check] = full.report["consistency"]
    assert check["ok"] and check["found_count"] == 44 and check["found_levels"]["beginner"] == 2


def test_ranks_follow_topic_order(full: Out) -> None:
    by_id = {i["id"]: i for i in full.items}
    [topic] = full.topics
    ranks = [by_id[i]["topics"][0]["rank"] for i in topic["items"]]
    assert ranks == list(range(1, 45))
    first = by_id[topic["items"][0]]
    assert first["title_zh"] == "GTC 柏林 2026：NVIDIA CEO 黄仁勋主题演讲实时更新"
    assert first["title_original"] == (
        "GTC Berlin 2026: Live Updates From NVIDIA CEO Jensen Huang’s Keynote"
    )
    assert first["topics"] == [
        {"slug": "model-serving-compute", "rank": 1, "level": "beginner", "level_label": "入门"}
    ]
    assert (first["kind"], first["kind_label"]) == ("blog", "博客")


def test_english_titles(full: Out) -> None:
    english = [i for i in full.items if i["title_original"] and i["original_language"] == "en"]
    assert len(english) == 24
    assert all(i["title_zh"] for i in english)
    assert {i["original_language"] for i in full.items} == {"en", None}


def test_item_page_item(full: Out) -> None:
    item = full.by_title("解锁连续批处理中的异步性")
    assert item["title_original"] == "Unlocking asynchronicity in continuous batching"
    assert item["topics"][0]["rank"] == 38
    assert (item["kind"], item["topics"][0]["level"]) == ("tutorial", "advanced")
    assert (item["publisher"], item["published_ago"]) == ("Hugging Face", "5 个月前")
    assert (item["rating"], item["collected_on"]) == ("值得看", "2026-10-28")
    assert len(item["related"]) == 6
    by_id = {i["id"]: i for i in full.items}
    ranks = [by_id[r]["topics"][0]["rank"] if by_id[r]["topics"] else None for r in item["related"]]
    assert ranks == [39, None, 37, None, 40, None]  # page order
    only_related = [by_id[r] for r in item["related"] if not by_id[r]["topics"]]
    assert [i["title_original"] for i in only_related] == [
        "How to Actually Tokenmaxx and Save Millions — Alvin Pane, OutRival",
        "Is a Faster Model Actually Faster? Test the Whole Job — Morgan Suo, MiniMax",
        "Are we solving LLM memory by remembering more, when the real problem is knowing what "
        "to forget?[D]",
    ]
    assert all(i["kind"] is None for i in only_related)
    formats = sorted(s["format"] for s in item["sources"])
    assert formats == ["item-page", "topic-page"]


def test_escapes_and_brackets(full: Out) -> None:
    tpu = full.by_title("Hugging Face ❤️ TorchTPU：原生支持 TPU")
    assert "torch_xla" in tpu["summary_zh"] and "\\" not in tpu["summary_zh"]
    assert len([s for s in tpu["sources"]]) == 2  # topic page + topic list joined
    p17 = next(i for i in full.items if i["topics"] and i["topics"][0]["rank"] == 17)
    assert p17["title_zh"].endswith("profiler 计数器权限 [P]")
    p31 = next(i for i in full.items if i["topics"] and i["topics"][0]["rank"] == 31)
    assert p31["title_zh"].startswith("Deepity：一个手工调优的 C++/CUDA 预测编码库")
    assert all("\\" not in i["summary_zh"] for i in full.items)


def test_footer_not_in_last_summary(full: Out) -> None:
    last = next(i for i in full.items if i["topics"] and i["topics"][0]["rank"] == 44)
    assert last["summary_zh"].endswith("数据并行示例以及程序优化等主题。")
    assert "来源" not in last["summary_zh"] and "---" not in last["summary_zh"]


def _normalized(out: Out) -> dict[str, bytes]:
    files = {n: out.bytes_of(n) for n in COPIED} | pages_of(out.folder)
    files["report.json"] = normalized_report(out.bytes_of("report.json"))
    return files


def test_golden(full: Out) -> None:
    """The whole output, byte for byte. After a deliberate change: `make golden`, review."""
    found = _normalized(full)
    for name, data in found.items():
        assert data == (GOLDEN / name).read_bytes(), f"{name} differs from tests/golden/{name}"
    assert pages_of(GOLDEN).keys() == {n for n in found if n.startswith(f"{PAGES}/")}


def test_validate_passes(full: Out) -> None:
    proc = run_subprocess("validate", str(full.folder))
    assert proc.returncode == 0, proc.stdout
    assert "valid" in proc.stdout


@pytest.mark.parametrize(
    "subset",
    [s for n in (1, 2) for s in itertools.combinations((TOPIC_PAGE, TOPIC_LIST, ITEM_PAGE), n)],
)
def test_ids_stable_on_every_subset(
    full: Out, ingest: Any, tmp_path: Path, subset: tuple[Path, ...]
) -> None:
    full_ids = {_identity(i): i["id"] for i in full.items}
    folder = tmp_path / "in"
    folder.mkdir()
    for p in subset:
        shutil.copy(p, folder / p.name)
    part = ingest(folder)
    assert part.code == 0
    assert part.items
    for item in part.items:
        assert item["id"] == full_ids[_identity(item)]


def _identity(item: dict[str, Any]) -> str:
    return item["summary_zh"]


def _batch(folder: Path) -> Path:
    """The seeds, and pages that give an input order every chance to show: an identical copy
    of the topic list, a URL variant of the topic page whose first title differs (a field
    conflict that precedence decides), and a second topic that lists some of the same
    resources at other levels, one of them with a reworded summary."""
    folder.mkdir()
    for p in (TOPIC_PAGE, TOPIC_LIST, ITEM_PAGE):
        shutil.copy(p, folder / p.name)
    shutil.copy(TOPIC_LIST, folder / "copy-of-list.txt")
    page = TOPIC_PAGE.read_text(encoding="utf-8")
    variant = page.replace("topics/model-serving-compute]", "topics/model-serving-compute/]")
    variant = variant.replace("1. [GTC 柏林 2026：", "1. [GTC 柏林大会 2026：")
    (folder / "variant.txt").write_text(variant, encoding="utf-8")
    other = page.replace("model-serving-compute", "serving-two").replace(
        "# 模型服务与算力", "# 另一"
    )
    other = other.replace("（博客 · 进阶）", "（博客 · 入门）").replace("为期三天", "一连三天")
    (folder / "other.txt").write_text(other, encoding="utf-8")
    return folder


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_deterministic_across_order_jobs_and_reruns(
    full: Out, ingest: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    """Shuffled inputs reach the pipeline (``collect_inputs`` sorts them, so the shuffle is
    applied after it); output is byte-identical to the sorted run, with any ``--jobs``."""
    folder = _batch(tmp_path / "in")
    expected = {"seeds": _normalized(full), "batch": _normalized(ingest(folder))}
    seen: list[list[str]] = []

    def shuffled(paths: list[str]) -> list[Any]:
        found = collect_inputs(paths)
        random.Random(seed * 100 + len(seen)).shuffle(found)
        seen.append([f.name for f in found])
        return found

    monkeypatch.setattr(job, "collect_inputs", shuffled)
    runs = [("seeds", SEEDS, "1"), ("batch", folder, "1"), ("batch", folder, "2")]
    for name, path, jobs in runs:
        got = _normalized(ingest(path, args=("--jobs", jobs)))
        for part in got:
            assert got[part] == expected[name][part], (name, part, seen[-1])
    assert all(names != sorted(names) for names in seen[1:]), seen  # the batch really shuffled
