"""Runs that build on the last publish: day-1 / day-2 crawls through the CLI.

Day 1 is the seeds. Each day-2 crawl is the seeds with one thing a re-crawl does: the
model regenerates a summary (on one page, on two), a resource is replaced at its rank or
moves to another, a page is not downloaded, a second topic appears, two items of day 1
turn out to be one. Each test asserts the ids and the exact lines of changes.jsonl.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from conftest import ITEM_PAGE, SEEDS, TOPIC_LIST, TOPIC_PAGE, Out, run_subprocess, without_steps
from ingest.cli import main
from test_ownership import legacy_publish

PAGE = TOPIC_PAGE.read_text(encoding="utf-8")
LIST = TOPIC_LIST.read_text(encoding="utf-8")
ITEM = ITEM_PAGE.read_text(encoding="utf-8")
#: #38's summary: on the topic page and the item page (not in the list: it is a tutorial).
CLAUSE = "是高效 LLM 推理系列的第二篇"
REWORDED = "属于高效 LLM 推理系列的第二篇文章"


def crawl(folder: Path, page: str = PAGE, lst: str = LIST, item: str | None = ITEM) -> Path:
    folder.mkdir(parents=True)
    (folder / TOPIC_PAGE.name).write_text(page, encoding="utf-8")
    (folder / TOPIC_LIST.name).write_text(lst, encoding="utf-8")
    if item is not None:
        (folder / ITEM_PAGE.name).write_text(item, encoding="utf-8")
    return folder


def listing(page: str, n: int) -> str:
    """Listing ``n`` of the flattened topic page, as written (up to the next one)."""
    m = re.search(rf" {n}\. \[.*?(?= {n + 1}\. \[| --- )", page)
    assert m is not None
    return m.group()


def entry(lst: str, n: int) -> tuple[str, str]:
    """The title and summary lines of the topic list's ``n``-th entry (1-based)."""
    lines = lst.splitlines()
    return lines[2 * n], lines[2 * n + 1]


def changes(out: Path) -> list[dict[str, Any]]:
    """The lines of changes.jsonl without the values a changed field had and has (which
    :func:`test_a_changed_line_carries_each_fields_value_before_and_after` checks)."""
    return [
        {k: v for k, v in json.loads(x).items() if k != "values"}
        for x in (out / "changes.jsonl").read_text("utf-8").splitlines()
    ]


def ids_by_title(out: Path) -> dict[str, str]:
    return {i["title_zh"]: i["id"] for i in Out(out, 0).items}


def line(entity: str, op: str, id_: str, fields: list[str] = [], into: str | None = None) -> Any:  # noqa: B006
    return {"entity": entity, "op": op, "id": id_, "fields": fields, "into": into}


@pytest.fixture
def day1(tmp_path: Path) -> Path:
    out = tmp_path / "out"
    assert main(["run", str(SEEDS), "--out", str(out), "--quiet"]) == 0
    return out


def day2(out: Path, dumps: Path, *args: str) -> int:
    return main(["run", str(dumps), "--out", str(out), "--quiet", *args])


# --------------------------------------------------------------------------- first runs


def test_a_first_run_lists_everything_as_added_and_a_rerun_nothing(
    day1: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first = changes(day1)
    assert len(first) == 48 and {(c["entity"], c["op"]) for c in first} == {
        ("item", "added"),
        ("topic", "added"),
    }
    assert [c["id"] for c in first if c["entity"] == "topic"] == ["model-serving-compute"]
    report = Out(day1, 0).report
    assert report["run"]["sequence"] == 1 and report["changes"]["items"]["added"] == 47
    before = snapshot(day1)
    capsys.readouterr()
    assert main(["run", str(SEEDS), "--out", str(day1)]) == 0  # the same pages: nothing new
    assert capsys.readouterr().out == (
        f"ingest: nothing new: the 3 page(s) are byte for byte those of the publish in "
        f"{str(day1)!r} (sequence 1), which is left as it is\n"
    )
    assert snapshot(day1) == before
    assert day2(day1, SEEDS, "--full") == 0  # computed again: no change
    assert (day1 / "changes.jsonl").read_bytes() == b""
    report = Out(day1, 0).report
    assert report["run"]["sequence"] == 2 and report["run"]["previous_items"] == 47
    assert report["changes"]["items"] == {"added": 0, "changed": 0, "removed": 0, "merged": 0}


# --------------------------------------------------------------------------- regenerated text


def test_a_summary_regenerated_on_both_its_pages_keeps_its_id(day1: Path, tmp_path: Path) -> None:
    before = ids_by_title(day1)
    the38 = before["解锁连续批处理中的异步性"]
    related = related_of(day1, the38)
    dumps = crawl(
        tmp_path / "d2", PAGE.replace(CLAUSE, REWORDED), item=ITEM.replace(CLAUSE, REWORDED)
    )
    assert day2(day1, dumps) == 0
    assert the38 == "9ee857fd86d38602"  # the id SPEC's example names
    assert ids_by_title(day1) == before
    assert changes(day1) == [line("item", "changed", the38, ["summary_zh"])]
    [decision] = [d for d in Out(day1, 0).report["decisions"] if d["kind"] == "previous"]
    assert decision["item"] == the38 and REWORDED in decision["b"]["summary_zh"]
    assert related_of(day1, the38) == related and len(related) == 6


def test_a_changed_line_carries_each_fields_value_before_and_after(
    day1: Path, tmp_path: Path
) -> None:
    before = {i["id"]: i for i in Out(day1, 0).items}
    dumps = crawl(
        tmp_path / "d2", PAGE.replace(CLAUSE, REWORDED), item=ITEM.replace(CLAUSE, REWORDED)
    )
    assert day2(day1, dumps) == 0
    [change] = [json.loads(x) for x in (day1 / "changes.jsonl").read_text("utf-8").splitlines()]
    after = {i["id"]: i for i in Out(day1, 0).items}[change["id"]]
    assert change["values"] == {
        "summary_zh": {
            "before": before[change["id"]]["summary_zh"],
            "after": after["summary_zh"],
        }
    }
    assert CLAUSE in change["values"]["summary_zh"]["before"]
    assert REWORDED in change["values"]["summary_zh"]["after"]


def related_of(out: Path, item_id: str) -> list[str]:
    [item] = [i for i in Out(out, 0).items if i["id"] == item_id]
    related: list[str] = item["related"]
    return related


def test_a_summary_regenerated_on_one_page_changes_nothing(day1: Path, tmp_path: Path) -> None:
    before = ids_by_title(day1)
    dumps = crawl(tmp_path / "d2", PAGE.replace(CLAUSE, REWORDED))
    assert day2(day1, dumps) == 0
    assert ids_by_title(day1) == before
    assert changes(day1) == []  # the item page's summary still wins; its id is unchanged


def test_a_regenerated_title_and_summary_in_place_keep_the_id(day1: Path, tmp_path: Path) -> None:
    """Topic-page-only #6 (a post, no original title): title and summary rewritten, same
    topic, rank, kind and level, and the summary still clearly similar."""
    old = listing(PAGE, 6)
    new = old.replace(
        "为一万到一万二千美元预算的本地 agentic coding 装机", "一万美元预算的本地编码装机"
    )
    new = new.replace("r/LocalLLaMA 社区帖子。发帖者准备", "这是 r/LocalLLaMA 的帖子，作者打算")
    new = new.replace(
        "适合正在规划本地多卡推理/编码 agent 装机的人阅读。", "面向规划本地装机的读者。"
    )
    before = ids_by_title(day1)
    assert day2(day1, crawl(tmp_path / "d2", PAGE.replace(old, new))) == 0
    tail = "：1× 5090 对比 4× 3090、混合方案、PRO 6000、Mac Studio？"
    the6 = before["为一万到一万二千美元预算的本地 agentic coding 装机" + tail]
    assert (
        ids_by_title(day1)[
            "一万美元预算的本地编码装机：1× 5090 对比 4× 3090、混合方案、PRO 6000、Mac Studio？"
        ]
        == the6
    )
    assert changes(day1) == [line("item", "changed", the6, ["summary_zh", "title_zh"])]


# --------------------------------------------------------------------------- resources move


def test_a_resource_replaced_at_the_same_rank_gets_a_new_id(day1: Path, tmp_path: Path) -> None:
    before = ids_by_title(day1)
    title5, summary5 = entry(LIST, 5)
    old = listing(PAGE, 5)
    new_title, new_summary = (
        "A New Keynote on Inference Clusters",
        (
            "这是一篇关于推理集群调度的新博客，作者介绍多租户环境下如何按显存切分 GPU，"
            "并比较三种调度策略在排队延迟与利用率上的差异。适合运维推理平台的工程师阅读。"
        ),
    )
    page = PAGE.replace(old, f" 5. [推理集群的新主题演讲]()（博客 · 进阶）：{new_summary}")
    lst = LIST.replace(f"{title5}\n{summary5}", f"{new_title}\n{new_summary}")
    assert day2(day1, crawl(tmp_path / "d2", page, lst)) == 0
    old5 = before["同样的 GPU，产出多出 50%：为什么运营方是关键——SemiAnalysis 的 Oliver Kennon"]
    new5 = ids_by_title(day1)["推理集群的新主题演讲"]
    assert new5 not in before.values()
    assert changes(day1) == [
        line("item", "added", new5),
        line("item", "removed", old5),
        line("topic", "changed", "model-serving-compute", ["items"]),
    ]


def test_a_resource_moved_to_another_rank_keeps_its_id(day1: Path, tmp_path: Path) -> None:
    before = ids_by_title(day1)
    three, four = listing(PAGE, 3), listing(PAGE, 4)
    page = PAGE.replace(three, "\0").replace(four, three.replace(" 3. [", " 4. [", 1))
    page = page.replace("\0", four.replace(" 4. [", " 3. [", 1))
    (t3, s3), (t4, s4) = entry(LIST, 3), entry(LIST, 4)
    lst = LIST.replace(f"{t3}\n{s3}\n{t4}\n{s4}", f"{t4}\n{s4}\n{t3}\n{s3}")
    assert day2(day1, crawl(tmp_path / "d2", page, lst)) == 0
    assert ids_by_title(day1) == before
    id3 = before["为什么 AI 算力是按矩形购买的 —— Erik Bernhardsson，Modal CEO"]
    id4 = before["可编程数据中心——Evan Conrad，SF Compute"]
    assert changes(day1) == sorted(
        [
            line("item", "changed", id3, ["topics"]),
            line("item", "changed", id4, ["topics"]),
            line("topic", "changed", "model-serving-compute", ["items"]),
        ],
        key=lambda c: (c["entity"], c["op"], c["id"]),
    )


def test_a_page_not_downloaded_removes_only_what_it_alone_held(day1: Path, tmp_path: Path) -> None:
    before = ids_by_title(day1)
    assert day2(day1, crawl(tmp_path / "d2", item=None)) == 0
    gone = {i for t, i in before.items() if t not in ids_by_title(day1)}
    assert len(gone) == 3  # the related reading no topic page lists
    the38, the39 = before["解锁连续批处理中的异步性"], before["PyTorch 中的 Channels Last 内存格式"]
    page_facts = ["collected_on", "published_ago", "publisher", "rating", "related"]
    title = ["original_language", "title_original"]  # only the item page gave these two
    assert changes(day1) == sorted(
        [line("item", "removed", i) for i in gone]
        + [line("item", "changed", the38, sorted(page_facts + title))]
        + [line("item", "changed", the39, title)],
        key=lambda c: (c["entity"], c["op"], c["id"]),
    )


def test_a_second_topic_appears(day1: Path, tmp_path: Path) -> None:
    second = PAGE.replace("topics/model-serving-compute", "topics/serving-basics")
    second = second.replace("# 模型服务与算力 学习模型服务框架", "# 服务入门 入门级的模型服务框架")
    dumps = crawl(tmp_path / "d2")
    (dumps / "002_second.txt").write_text(second, encoding="utf-8")
    before = ids_by_title(day1)
    assert day2(day1, dumps) == 0
    assert ids_by_title(day1) == before  # the same 44 resources, now on two topics
    out = changes(day1)
    assert line("topic", "added", "serving-basics") in out
    assert {c["op"] for c in out if c["entity"] == "item"} == {"changed"}
    assert all(c["fields"] == ["topics"] for c in out if c["entity"] == "item")
    assert len(out) == 45


def test_two_items_of_day_1_merge_under_the_older_id(tmp_path: Path) -> None:
    """Day 1: the list's entry for #2 carries a rewritten summary (it matched nothing, so
    it was an item of its own, with the original title). Day 2: the summary is back;
    both day-1 items are one resource: the older id survives (same day: the smaller),
    the other is merged into it."""
    title2, summary2 = entry(LIST, 2)
    rewritten = (
        "一篇关于在亚马逊云上训练与部署基础模型的企业博客，"
        "讲解缩放定律框架与后训练阶段，适合规划训练基础设施的人。"
    )
    out = tmp_path / "out"
    d1 = crawl(tmp_path / "d1", lst=LIST.replace(summary2, rewritten))
    assert main(["run", str(d1), "--out", str(out), "--quiet"]) == 0
    day1_items = Out(out, 0).items
    page_item = next(
        i["id"] for i in day1_items if i["title_zh"] == "在 AWS 上进行基础模型训练与推理的构建模块"
    )
    list_item = next(i["id"] for i in day1_items if i["summary_zh"] == rewritten)
    assert page_item != list_item
    assert day2(out, crawl(tmp_path / "d2")) == 0
    survivor, merged = sorted([page_item, list_item])
    assert [i["id"] for i in Out(out, 0).items if i["title_original"] == title2] == [survivor]
    assert changes(out) == [
        line("item", "changed", survivor, _changed_fields(day1_items, survivor, out)),
        line("item", "merged", merged, into=survivor),
        line("topic", "changed", "model-serving-compute", ["items"]),
    ]


def _changed_fields(before: list[dict[str, Any]], item_id: str, out: Path) -> list[str]:
    [old] = [i for i in before if i["id"] == item_id]
    [new] = [i for i in Out(out, 0).items if i["id"] == item_id]
    return sorted(k for k in new if k not in ("id", "sources") and old[k] != new[k])


def test_a_shared_chinese_title_never_carries_an_id_across_runs(day1: Path, tmp_path: Path) -> None:
    before = ids_by_title(day1)
    other = ITEM.replace(
        "Unlocking asynchronicity in continuous batching", "Asynchronous Batching in Rust"
    )
    other = other.replace(
        ITEM.splitlines()[3],
        "一篇全然不同的 Rust 异步批处理文章，讨论 tokio 运行时中的任务调度、"
        "背压与批量写入策略，并给出基准数据。适合写 Rust 服务的人。",
    )
    dumps = crawl(tmp_path / "d2")
    (dumps / "005_other.txt").write_text(other, encoding="utf-8")
    assert day2(day1, dumps) == 0
    same_title = [i for i in Out(day1, 0).items if i["title_zh"] == "解锁连续批处理中的异步性"]
    assert sorted(i["id"] for i in same_title) != [before["解锁连续批处理中的异步性"]]
    assert before["解锁连续批处理中的异步性"] in {i["id"] for i in same_title}
    assert len(same_title) == 2


# --------------------------------------------------------------------------- shrink guard


def test_only_the_topic_list_is_refused_and_the_publish_kept(day1: Path, tmp_path: Path) -> None:
    before = snapshot(day1)
    proc = run_subprocess("run", str(TOPIC_LIST), "--out", str(day1))
    assert proc.returncode == 3, proc.stderr
    refused_dir = day1.parent / "out.refused"
    assert without_steps(proc.stderr).count("\n") == 1
    for word in ("would remove 28 of the 47 items", "--allow-shrink", str(refused_dir)):
        assert word in proc.stderr, word
    assert "of its 1 topic" not in proc.stderr  # the list keeps its topic's slug
    assert snapshot(day1) == before
    assert len(Out(refused_dir, 0).items) == 19
    proc = run_subprocess("run", str(TOPIC_LIST), "--out", str(day1), "--allow-shrink", "--quiet")
    assert proc.returncode == 0, proc.stderr
    assert len(Out(day1, 0).items) == 19 and len(changes(day1)) == 28 + 19 + 1


def test_a_breadcrumb_on_every_page_keeps_the_site(day1: Path, tmp_path: Path) -> None:
    """A crawl with one breadcrumb line above each page. The pages are read
    through (format drift) and nothing changes; were they not, the guard would refuse."""
    dumps = tmp_path / "crumbs"
    dumps.mkdir()
    for seed in SEEDS.iterdir():
        (dumps / seed.name).write_text(
            "首页 · 全部主题 · 关于\n" + seed.read_text("utf-8"), "utf-8"
        )
    before = records_without_sources(day1)
    assert day2(day1, dumps) == 0
    assert changes(day1) == [] and (day1 / "rejects.jsonl").read_bytes() == b""
    assert records_without_sources(day1) == before  # the sources moved one line down


def records_without_sources(out: Path) -> list[dict[str, Any]]:
    records = Out(out, 0).items + Out(out, 0).topics
    return [{k: v for k, v in r.items() if k != "sources"} for r in records]


def snapshot(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()
    }


# --------------------------------------------------------------------------- merge, ages


def new_item_page(folder: Path) -> Path:
    """A folder with one item page of a resource no seed has."""
    folder.mkdir()
    (folder / "005_new.txt").write_text(
        "PyTorch··3 周前\n一个全新的 GPU 调度器项目\nA Brand New GPU Scheduler\n"
        "这是一个开源 GPU 调度器项目的介绍，作者说明它如何在多租户集群上按显存与算力切分 GPU，"
        "并给出与现有方案在利用率和排队延迟上的对比数据。适合维护训练集群的工程师阅读。\n"
        "- 分级\n- 值得看\n- 收录时间\n- 2026-11-20\n",
        encoding="utf-8",
    )
    return folder


MERGED_FILES = {
    TOPIC_PAGE.name: "state",
    TOPIC_LIST.name: "state",
    ITEM_PAGE.name: "state",
    "005_new.txt": "input",
}


def test_merge_adds_a_new_item_page_and_keeps_everything_else(day1: Path, tmp_path: Path) -> None:
    before = ids_by_title(day1)
    new = new_item_page(tmp_path / "new")
    assert day2(day1, new, "--merge") == 0
    after = ids_by_title(day1)
    assert {t: after[t] for t in before} == before and len(after) == 48
    assert changes(day1) == [line("item", "added", after["一个全新的 GPU 调度器项目"])]
    files = {f["file"]: f["origin"] for f in Out(day1, 0).report["files"]}
    assert files == MERGED_FILES
    before = snapshot(day1)
    assert day2(day1, new, "--merge") == 0 and snapshot(day1) == before  # again: nothing new


def test_merge_full_parses_the_kept_pages_again(day1: Path, tmp_path: Path) -> None:
    """``--merge --full``: the pages the publish keeps are parsed again from their bytes
    (not taken from the cache); merging the same page again is then no change."""
    new = new_item_page(tmp_path / "new")
    assert day2(day1, new, "--merge") == 0
    merged = Out(day1, 0).items
    assert day2(day1, new, "--merge", "--full") == 0
    assert changes(day1) == [] and Out(day1, 0).items == merged
    report = Out(day1, 0).report
    assert {f["file"]: f["origin"] for f in report["files"]} == MERGED_FILES
    assert report["run"]["sequence"] == 3 and report["reuse"]["pages_parsed"] == 4


def test_merge_replaces_a_newer_version_of_a_page(day1: Path, tmp_path: Path) -> None:
    new = crawl(tmp_path / "new", item=ITEM.replace(CLAUSE, REWORDED))
    (new / TOPIC_PAGE.name).unlink()
    (new / TOPIC_LIST.name).unlink()
    (new / ITEM_PAGE.name).rename(new / "004_renamed.txt")  # the same page under a new name
    assert day2(day1, new, "--merge") == 0
    files = [f["file"] for f in Out(day1, 0).report["files"]]
    assert files == [TOPIC_PAGE.name, TOPIC_LIST.name, "004_renamed.txt"]
    [c] = changes(day1)
    assert (c["op"], c["fields"]) == ("changed", ["summary_zh"])


def test_merge_needs_a_publish_with_pages(tmp_path: Path) -> None:
    proc = run_subprocess("run", str(SEEDS), "--out", str(tmp_path / "out"), "--merge")
    assert proc.returncode == 2 and "run once without --merge" in proc.stderr


def test_crawled_at_fills_published_estimate(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert (
        main(["run", str(SEEDS), "--out", str(out), "--quiet", "--crawled-at", "2026-11-30"]) == 0
    )
    [item] = [i for i in Out(out, 0).items if i["published_ago"]]
    assert item["published_estimate"] == {"earliest": "2026-05-30", "latest": "2026-07-15"}
    assert main(["run", str(SEEDS), "--out", str(tmp_path / "o2"), "--quiet"]) == 0
    assert all(i["published_estimate"] is None for i in Out(tmp_path / "o2", 0).items)
    bad = run_subprocess("run", str(SEEDS), "--out", str(tmp_path / "o3"), "--crawled-at", "30/11")
    assert bad.returncode == 2 and "YYYY-MM-DD" in bad.stderr


# --------------------------------------------------------------------------- determinism


def test_state_runs_are_byte_identical_across_jobs_and_reruns(day1: Path, tmp_path: Path) -> None:
    dumps = crawl(
        tmp_path / "d2", PAGE.replace(CLAUSE, REWORDED), item=ITEM.replace(CLAUSE, REWORDED)
    )
    results = []
    for n, args in enumerate((("--jobs", "1"), ("--jobs", "2"), ("--jobs", "1"))):
        out = shutil.copytree(day1, tmp_path / f"copy{n}")
        assert day2(out, dumps, *args) == 0
        snap = snapshot(out)
        snap["report.json"] = json.dumps({**json.loads(snap["report.json"]), "timing": {}}).encode()
        marker = json.loads(snap[".ingest"])  # lists report.json, timing and all
        marker["files"].pop("report.json")
        snap[".ingest"] = json.dumps(marker).encode()
        results.append(snap)
    assert results[0] == results[1] == results[2]


def test_a_state_of_another_version_is_refused(
    day1: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """As a later ingest would leave it: its marker says so (what the state files of a
    later version hold is not this ingest's to read, nor to replace), whether the run would
    find nothing new or compute everything again."""
    marker = json.loads((day1 / ".ingest").read_text())
    (day1 / ".ingest").write_text(json.dumps({**marker, "state_version": 99}, indent=1))
    before = snapshot(day1)
    for args in ([], ["--full"]):
        capsys.readouterr()
        code = main(["run", str(SEEDS), "--out", str(day1), *args])
        said = capsys.readouterr()
        assert code == 2 and "state version 99" in said.err, said
        assert without_steps(said.err).count("\n") == 1 and snapshot(day1) == before


# --------------------------------------------------------------------------- evidence rules


def swap(page: str, a: int, b: int, edit: tuple[str, str] = ("", "")) -> str:
    """The page with listings ``a`` and ``b`` in each other's rank (``a``'s text edited)."""
    la, lb = listing(page, a), listing(page, b)
    la_new = la.replace(*edit) if edit[0] else la
    page = page.replace(la, "\0").replace(lb, la_new.replace(f" {a}. [", f" {b}. [", 1))
    return page.replace("\0", lb.replace(f" {b}. [", f" {a}. [", 1))


def test_a_reworded_summary_at_a_new_rank_keeps_its_id(day1: Path, tmp_path: Path) -> None:
    """#6 has no original title: only the near-duplicate summary can find it (it moved,
    so its place cannot)."""
    before = ids_by_title(day1)
    clause = ("r/LocalLLaMA 社区帖子。发帖者准备", "r/LocalLLaMA 上的社区帖子。发帖者打算")
    assert day2(day1, crawl(tmp_path / "d2", swap(PAGE, 6, 7, clause))) == 0
    assert ids_by_title(day1) == before
    the6 = next(i for t, i in before.items() if t.startswith("为一万到一万二千美元"))
    [decision] = [d for d in Out(day1, 0).report["decisions"] if d["kind"] == "previous"]
    assert decision["item"] == the6 and decision["score"] >= 88


def test_different_original_titles_are_never_one_resource_across_runs(
    day1: Path, tmp_path: Path
) -> None:
    """#1's summary reworded by a clause (a near-duplicate, at the same place) but its
    original title is another: a different resource, so a new id."""
    before = ids_by_title(day1)
    title1, summary1 = entry(LIST, 1)
    clause = ("为期三天", "为期三日")
    page = PAGE.replace(listing(PAGE, 1), listing(PAGE, 1).replace(*clause))
    lst = LIST.replace(
        f"{title1}\n{summary1}", f"GTC Paris 2027 Keynote\n{summary1.replace(*clause)}"
    )
    assert day2(day1, crawl(tmp_path / "d2", page, lst)) == 0
    old1 = before["GTC 柏林 2026：NVIDIA CEO 黄仁勋主题演讲实时更新"]
    new1 = ids_by_title(day1)["GTC 柏林 2026：NVIDIA CEO 黄仁勋主题演讲实时更新"]
    assert new1 != old1
    assert line("item", "removed", old1) in changes(day1)


def test_the_older_id_survives_a_merge_whatever_the_ids(tmp_path: Path) -> None:
    """Day 1 has #2 from the topic page only; day 2 adds the list, whose #2 entry is
    rewritten (a new item, younger); day 3 restores it: the two are one, and the day-1
    id survives even though the younger id sorts first."""
    out = tmp_path / "out"
    page_only = tmp_path / "d1"
    page_only.mkdir()
    (page_only / TOPIC_PAGE.name).write_text(PAGE, encoding="utf-8")
    assert main(["run", str(page_only), "--out", str(out), "--quiet"]) == 0
    older = ids_by_title(out)["在 AWS 上进行基础模型训练与推理的构建模块"]
    summary2 = entry(LIST, 2)[1]
    for variant in range(50):  # pick a rewrite whose new id sorts before the older one
        rewritten = (
            f"一篇在亚马逊云上训练与部署基础模型的企业博客（第 {variant} 版改写），"
            "适合规划训练基础设施的人。"
        )
        d2 = crawl(tmp_path / f"d2-{variant}", lst=LIST.replace(summary2, rewritten), item=None)
        trial = shutil.copytree(out, tmp_path / f"o-{variant}")
        assert day2(trial, d2) == 0
        younger = next(i["id"] for i in Out(trial, 0).items if i["summary_zh"] == rewritten)
        if younger < older:
            break
    assert younger < older  # the smaller-id rule and the older-id rule disagree here
    assert day2(trial, crawl(tmp_path / "d3", item=None)) == 0
    assert line("item", "merged", younger, into=older) in changes(trial)
    assert older in ids_by_title(trial).values() and younger not in ids_by_title(trial).values()


def test_languages_decided_by_the_previous_publish_are_not_detected_again(
    day1: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    known = {i["title_original"] for i in Out(day1, 0).items if i["title_original"]}
    asked: list[str] = []

    def spy(title: str | None) -> str | None:
        asked.append(title or "")
        return "en"

    monkeypatch.setattr("ingest.pipeline.steps.language_of", spy)
    monkeypatch.setattr("ingest.resolve.finish.language_of", spy)
    assert day2(day1, SEEDS, "--full") == 0  # every page parsed and resolved again
    assert asked == [] and len(known) == 24
    assert main(["run", str(SEEDS), "--out", str(tmp_path / "fresh"), "--quiet"]) == 0
    assert known <= set(asked)  # with no publish to build on, each is detected


def test_the_guard_allows_ten_percent_and_refuses_more(day1: Path, tmp_path: Path) -> None:
    """47 items: removing 4 (8.5 %) publishes, removing 5 (10.6 %) is refused."""

    def without(n: int) -> str:
        page = PAGE
        for rank in [42, 43, 44, 36, 35][:n]:  # courses and tutorials: on no other page
            page = page.replace(listing(PAGE, rank), "")
        return page

    before = snapshot(day1)
    assert day2(day1, crawl(tmp_path / "five", without(5), item=ITEM)) == 3
    assert snapshot(day1) == before
    assert day2(day1, crawl(tmp_path / "four", without(4), item=ITEM)) == 0
    assert [c["op"] for c in changes(day1) if c["entity"] == "item"] == ["removed"] * 4


@pytest.mark.parametrize(
    ("name", "damage"),
    [
        ("items.jsonl", b'{"id": "0123456789abcdef"}\n{"id": \n'),
        ("topics.jsonl", b'{"slug": "Not A Slug"}\n'),
        ("report.json", b'{"schema_version": "1.1.0", "run": '),
        ("state/records.zst", b"\x28\xb5\x2f\xfd"),
        ("items.jsonl", None),  # one byte flipped: the size is the one written
    ],
)
def test_a_damaged_file_of_the_previous_publish_is_one_line_and_nothing_changes(
    day1: Path, name: str, damage: bytes | None, capsys: pytest.CaptureFixture[str]
) -> None:
    """Any file of the publish not as its marker lists it: the door refuses the publish
    in one line naming ``ingest repair``, whether the run would find nothing new or
    compute everything again."""
    out = day1
    if damage is None:
        data = bytearray((out / name).read_bytes())
        data[len(data) // 2] ^= 0x01
        damage = bytes(data)
    (out / name).write_bytes(damage)
    before = snapshot(out)
    for args in ([], ["--full"]):
        capsys.readouterr()
        assert main(["run", str(SEEDS), "--out", str(out), *args]) == 2
        [said] = capsys.readouterr().err.splitlines()
        assert said.startswith(f"ingest: error: the publish in {str(out)!r} is damaged: {name} ")
        assert said.endswith(
            f"Nothing was changed; mend it from what remains with: ingest repair {out}"
        )
        assert snapshot(out) == before


@pytest.mark.parametrize(
    ("name", "damage", "words"),
    [
        ("items.jsonl", b'{"id": "0123456789abcdef"}\n{"id": \n', "items.jsonl: line 2"),
        ("items.jsonl", b'["not", "an", "object"]\n', "items.jsonl: line 1:"),
        (  # the contract's pattern ends in "$", which a trailing line break passes
            "items.jsonl",
            b'{"id": "0123456789abcdef\\n"}\n',
            "items.jsonl: line 1: id '0123456789abcdef\\n' is not one ingest writes",
        ),
        ("topics.jsonl", b'{"slug": "Not A Slug"}\n', "line 1: slug 'Not A Slug' is not"),
    ],
)
def test_a_publish_of_ingest_0_1_that_cannot_be_read_is_one_line_and_nothing_changes(
    tmp_path: Path, name: str, damage: bytes, words: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A publish of schema 1.0 has no checksums: its records are read as JSON, and one that
    is no record of ingest's is refused in one line."""
    out = legacy_publish(tmp_path / "out")
    (out / name).write_bytes(damage)
    before = snapshot(out)
    capsys.readouterr()
    assert main(["run", str(SEEDS), "--out", str(out), "--allow-shrink"]) == 2
    [said] = capsys.readouterr().err.splitlines()
    assert said.startswith("ingest: error: cannot read the previous publish") and words in said
    assert snapshot(out) == before


def test_an_earlier_record_is_compared_as_its_line_without_its_sources(tmp_path: Path) -> None:
    """The change set compares what an earlier record's line holds but its sources (here
    all of other files); a field the older publish did not write is compared as null,
    never skipped (#38's publisher, on its item page)."""
    out = legacy_publish(tmp_path / "out")
    the38 = "9ee857fd86d38602"
    for name in ("items.jsonl", "topics.jsonl"):
        docs = [json.loads(x) for x in (out / name).read_text("utf-8").splitlines()]
        for doc in docs:
            doc["sources"] = [{**s, "file": f"old-{s['file']}"} for s in doc["sources"]]
            if doc.get("id") == the38:
                assert doc.pop("publisher") == "Hugging Face"
        lines = "".join(json.dumps(d, ensure_ascii=False) + "\n" for d in docs)
        (out / name).write_text(lines, encoding="utf-8")
    assert main(["run", str(SEEDS), "--out", str(out), "--quiet"]) == 0
    assert changes(out) == [line("item", "changed", the38, ["publisher"])]
