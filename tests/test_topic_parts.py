"""A topic saved in parts (issue 43), through the command line on the seed pages.

A crawler that follows a topic's pagination saves one topic page as several files, each
with the header and the footer, the ranks continuing from one to the next; its topic list
too, each part with the list's description and stats lines. Pages of one topic that do not
contradict each other are parts of one version: the seeds cut into parts at any ranks, in
any order, under any names, as text or saved HTML, give the seeds' records (all but their
``sources``) and reject nothing. Two pages contradict when one rank holds different
resources or one resource sits at two ranks: only then does the version rule (the newest
crawl day, then more listings, then the file name that sorts last) pick, and the listings
of the page set aside are rejected with a reason naming the file it contradicts. A topic
list in parts is one list: its entries that the topic page does not rank follow the ranked
ones, the parts in file-name order.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import (
    ITEM_PAGE,
    TOPIC_LIST,
    TOPIC_PAGE,
    Out,
    cli_examples,
    multiline_topic_page,
    seed_text,
)
from html_shapes import topic_list_part, topic_page_part
from ingest.cli import main

GOLDEN = Path(__file__).parent / "golden"
REASON = "TOPIC_VERSION_SUPERSEDED"
SLUG = "model-serving-compute"

# --------------------------------------------------------------------------- the seeds cut

PAGE = seed_text(TOPIC_PAGE)
SECTION = "## 推荐学习顺序"


def _listings(page: str) -> list[str]:
    """The page's listings (``N. [title]()（kind · level）：summary``), each found as the
    next number's head after the last, so that no summary is cut at a number it shows."""
    starts, pos = [], 0
    while (at := page.find(f" {len(starts) + 1}. [", pos)) >= 0:
        starts.append(at)
        pos = at + 1
    ends = [*starts[1:], page.index(" --- ", starts[-1])]
    return [page[a + 1 : b] for a, b in zip(starts, ends, strict=True)]


LISTINGS = _listings(PAGE)
TOP = PAGE[: PAGE.index(f" {SECTION} ")]  # '# NAME DESCRIPTION - 所属：… - 网站：…'
FOOT = PAGE[PAGE.index(" --- ", PAGE.index(" 44. [")) + 1 :]  # '--- NOTICE 来源：…'
N = len(LISTINGS)

LIST_LINES = seed_text(TOPIC_LIST).split("\n")
LIST_HEAD = LIST_LINES[:2]  # the description and the stats line
ENTRIES = list(zip(LIST_LINES[2::2], LIST_LINES[3::2], strict=True))  # (title, summary)

#: What a later page may show on its section line: the same, another text, or none.
SECTIONS: tuple[str | None, ...] = (
    SECTION,
    "## 推荐学习顺序（续）",
    "## 推荐学习顺序 · 第 2 页",
    None,
)


#: The topic's URL in the seed's header, and what a later part's may add: its page number.
URL = f"https://oplearnx.com/topics/{SLUG}"
PAGE_OF_URL = ("", "?page={n}", "/page/{n}/", "?utm_source=feed&page={n}")


def page_part(
    listings: list[str], section: str | None = SECTION, shape: str = "flat", url: str = URL
) -> str:
    """A topic page over ``listings`` (as :data:`LISTINGS` shows them), with the seed's
    header (its URL ``url``) and footer: flattened onto one line as the seed is, or with
    its line breaks."""
    assert TOP.count(f"[{URL}]") == 1
    flat = f"{TOP.replace(f'[{URL}]', f'[{url}]')} {SECTION} {' '.join(listings)} {FOOT}"
    if shape == "lines":
        text = multiline_topic_page(flat)
        return text.replace(f"\n{SECTION}\n", f"\n{section}\n" if section else "\n", 1)
    assert shape == "flat"
    return flat.replace(f" {SECTION} ", f" {section} " if section else " ", 1)


def list_part(entries: list[tuple[str, str]]) -> str:
    """A topic list over ``entries`` (title line, summary line) with the seed's head."""
    return "\n".join([*LIST_HEAD, *(line for e in entries for line in e)])


def swapped(listings: list[str], a: int, b: int) -> list[str]:
    """The listings with the resources at ranks ``a`` and ``b`` swapped (ranks kept)."""
    out = list(listings)
    out[a - 1] = renumbered(listings[b - 1], a)
    out[b - 1] = renumbered(listings[a - 1], b)
    return out


def renumbered(listing: str, rank: int) -> str:
    return re.sub(r"^[0-9]+\.", f"{rank}.", listing, count=1)


def ranks(first: int, last: int) -> list[str]:
    return LISTINGS[first - 1 : last]


def test_the_cut_pieces_make_the_seeds_again() -> None:
    """The helpers below cut the seeds where they mean to: whole, they are the seeds."""
    assert N == 44 and len(ENTRIES) == 19
    assert page_part(LISTINGS) == PAGE
    assert page_part(LISTINGS, shape="lines") == multiline_topic_page(PAGE)
    assert list_part(ENTRIES) == seed_text(TOPIC_LIST)
    assert [int(x.split(".")[0]) for x in LISTINGS] == list(range(1, 45))


# --------------------------------------------------------------------------- running


def run(folder: Path, out: Path, *args: str) -> Out:
    return Out(out, main(["run", str(folder), "--out", str(out), "--quiet", *args]))


def write(folder: Path, files: dict[str, str | bytes]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        raw = data.encode("utf-8") if isinstance(data, str) else data
        (folder / name).write_bytes(raw)
    return folder


def without_sources(raw: bytes) -> list[bytes]:
    """Each record of a JSON-lines file, its ``sources`` member taken out (the records are
    compact JSON with their members in schema order: re-encoded so, the rest is as read)."""
    out = []
    for line in raw.decode("utf-8").splitlines():
        record = json.loads(line)
        assert _compact(record) == line  # the re-encoding keeps every other byte
        record.pop("sources")
        out.append(_compact(record).encode("utf-8"))
    return out


def _compact(record: Any) -> str:
    return json.dumps(record, ensure_ascii=False, separators=(",", ":"))


def assert_accounted(out: Out) -> None:
    """Every listing read is merged into an item or rejected: none dropped in silence."""
    t = out.report["totals"]
    assert t["listings"] == t["listings_merged"] + t["listings_rejected"]
    assert t["listings_merged"] == sum(len(i["sources"]) for i in out.items)
    assert t["listings_rejected"] == len(out.rejects) == t["rejects"]
    assert sum(f["listings"] for f in out.report["files"]) == t["listings"]


def consistency(out: Out) -> tuple[int, int]:
    [c] = [c for c in out.report["consistency"] if c["slug"] == SLUG]
    return c["declared_count"], c["found_count"]


def topic_ranks(out: Out) -> dict[int, str]:
    """rank → the item's summary, of the topic's ranked items."""
    return {
        t["rank"]: i["summary_zh"]
        for i in out.items
        for t in i["topics"]
        if t["slug"] == SLUG and t["rank"] is not None
    }


def golden_ranks(swap: tuple[int, int] | None = None) -> dict[int, str]:
    """rank → the item's summary, of the golden topic (``swap``: two ranks swapped)."""
    items = [json.loads(x) for x in (GOLDEN / "items.jsonl").read_text("utf-8").splitlines()]
    out = {t["rank"]: i["summary_zh"] for i in items for t in i["topics"] if t["rank"]}
    if swap is not None:
        a, b = swap
        out[a], out[b] = out[b], out[a]
    return out


# --------------------------------------------------------------------------- the property


@dataclass(frozen=True)
class Cut:
    """One example: the files (name → content) and what was drawn, for a failure."""

    files: dict[str, str | bytes]
    order: list[str]  # the order the files are given on the command line
    shown: str


@st.composite
def cut_seeds(draw: st.DrawFn) -> Cut:
    """The seed topic page in 2–4 parts cut at any ranks (each with the header and the
    footer; a later one with its page number in its URL, its section line the same, another
    or none, and maybe
    repeating the last listing of the part before it), the topic list in 1–3 parts (each
    with the description and stats lines, maybe repeating an entry), the item page; each
    part flattened, with line breaks, or saved HTML of a drawn shape; any file names."""
    k = draw(st.integers(2, 4), label="topic page parts")
    cuts = sorted(draw(st.sets(st.integers(1, N - 1), min_size=k - 1, max_size=k - 1)))
    parts: list[tuple[str, str]] = []  # (what, content)
    for n, (lo, hi) in enumerate(zip([0, *cuts], [*cuts, N], strict=True)):
        overlap = n > 0 and draw(st.booleans(), label=f"part {n + 1} repeats a listing")
        first = lo + 1 - overlap  # the rank of its first listing
        section = SECTION if n == 0 else draw(st.sampled_from(SECTIONS))
        shape = draw(st.sampled_from(("flat", "lines", "html")))
        if shape == "html":
            number = draw(st.integers(0, 999))
            heading = section.removeprefix("## ") if section else None
            text = topic_page_part(number, first, hi, heading)
            shape = f"html #{number}"
        else:
            url = URL + draw(st.sampled_from(PAGE_OF_URL if n else ("",))).format(n=n + 1)
            text = page_part(ranks(first, hi), section, shape, url)
            shape += f" {url}"
        parts.append((f"page {first}-{hi} {shape} {section!r}", text))
    k = draw(st.integers(1, 3), label="topic list parts")
    cuts = sorted(draw(st.sets(st.integers(1, len(ENTRIES) - 1), min_size=k - 1, max_size=k - 1)))
    for n, (lo, hi) in enumerate(zip([0, *cuts], [*cuts, len(ENTRIES)], strict=True)):
        overlap = n > 0 and draw(st.booleans(), label=f"list part {n + 1} repeats an entry")
        first = lo - overlap  # the index of its first entry
        entries = ENTRIES[first:hi]
        if draw(st.booleans(), label="list part saved as HTML"):
            number = draw(st.integers(0, 999))
            text, shape = topic_list_part(number, list(entries)), f"html #{number}"
        else:
            text, shape = list_part(entries), "text"
        parts.append((f"list {first + 1}-{hi} {shape}", text))
    stems = st.text("abz09_- .模型", min_size=1, max_size=6).filter(lambda s: s not in (".", ".."))
    names = st.tuples(stems, st.sampled_from(("", ".txt", ".html", ".md"))).map("".join)
    chosen = draw(st.lists(names, min_size=len(parts) + 1, max_size=len(parts) + 1, unique=True))
    files: dict[str, str | bytes] = dict(zip(chosen, [t for _, t in parts], strict=False))
    files[chosen[-1]] = ITEM_PAGE.read_bytes()
    order = draw(st.permutations(chosen))
    shown = "; ".join(f"{name!r}: {what}" for name, (what, _) in zip(chosen, parts, strict=False))
    return Cut(files, list(order), shown)


GOLDEN_ITEMS = without_sources((GOLDEN / "items.jsonl").read_bytes())
GOLDEN_TOPICS = without_sources((GOLDEN / "topics.jsonl").read_bytes())


@settings(max_examples=cli_examples(400))
@given(cut_seeds())
def test_the_seeds_cut_into_parts_give_the_seeds_records(
    tmp_path_factory: pytest.TempPathFactory, cut: Cut
) -> None:
    tmp = tmp_path_factory.mktemp("cut")
    folder = write(tmp / "in", cut.files)
    out = tmp / "out"
    code = main(["run", *(str(folder / n) for n in cut.order), "--out", str(out), "--quiet"])
    done = Out(out, code)
    assert done.code == 0, cut.shown
    assert done.rejects == [], cut.shown
    assert without_sources(done.bytes_of("items.jsonl")) == GOLDEN_ITEMS, cut.shown
    assert without_sources(done.bytes_of("topics.jsonl")) == GOLDEN_TOPICS, cut.shown
    assert consistency(done) == (44, 44), cut.shown
    assert not any("TOPIC_VERSION" in w for w in done.report["warnings"]), cut.shown
    assert_accounted(done)


# --------------------------------------------------------------------------- contradictions

ITEM = ITEM_PAGE.read_bytes()
TRUE = ranks(23, 44)
LATER = swapped(LISTINGS, 30, 31)[22:]  # a later crawl of ranks 23–44, two resources swapped


def with_list(files: dict[str, str | bytes]) -> dict[str, str | bytes]:
    return {**files, "list.txt": list_part(ENTRIES), "item.txt": ITEM}


@pytest.mark.parametrize("later_last", [True, False])
def test_a_contradicting_part_of_the_same_day_falls_to_the_file_name(
    tmp_path: Path, later_last: bool
) -> None:
    """The true part of ranks 23–44 and a later save of it with two resources swapped, both
    22 listings on the day of the run: the one whose file name sorts last is used, the
    other's listings are rejected naming it; the first part (1–22) joins the winner."""
    true, later = ("p2_a.txt", "p2_b.txt") if later_last else ("p2_b.txt", "p2_a.txt")
    files = {"p1.txt": page_part(ranks(1, 22)), true: page_part(TRUE), later: page_part(LATER)}
    out = run(write(tmp_path / "in", with_list(files)), tmp_path / "out")
    assert out.code == 0
    winner, loser = (later, true) if later_last else (true, later)
    assert {r["file"] for r in out.rejects} == {loser} and len(out.rejects) == 22
    assert {r["reason"] for r in out.rejects} == {REASON}
    assert [r["locator"] for r in out.rejects] == [f"listing {n}" for n in range(23, 45)]
    assert all(winner in r["message"] for r in out.rejects)
    assert all("the file name that sorts last" in r["message"] for r in out.rejects)
    assert topic_ranks(out) == golden_ranks((30, 31) if later_last else None)
    assert consistency(out) == (44, 44)
    [warning] = [w for w in out.report["warnings"] if "TOPIC_VERSIONS" in w]
    assert "p1.txt" in warning and winner in warning and loser in warning
    assert_accounted(out)


def test_a_contradicting_part_with_more_listings_wins_whatever_its_name(tmp_path: Path) -> None:
    """A save of ranks 20–44 (25 listings, two resources swapped) against the true part
    23–44 (22): the one with more listings is used though its name sorts first."""
    files = {
        "p1.txt": page_part(ranks(1, 22)),
        "p2_z.txt": page_part(TRUE),
        "p2_a.txt": page_part(swapped(LISTINGS, 30, 31)[19:]),
    }
    out = run(write(tmp_path / "in", with_list(files)), tmp_path / "out")
    assert out.code == 0
    assert {r["file"] for r in out.rejects} == {"p2_z.txt"} and len(out.rejects) == 22
    assert all(
        "p2_a.txt" in r["message"] and "25 listings against 22" in r["message"] for r in out.rejects
    )
    assert topic_ranks(out) == golden_ranks((30, 31))
    assert consistency(out) == (44, 44)
    assert_accounted(out)


def test_a_contradicting_part_crawled_later_wins(tmp_path: Path) -> None:
    """Day one: the topic in two parts. Day two: a later crawl of ranks 23–44 with two
    resources swapped beside them, under a name that sorts first: the newest crawl is used,
    the part of day one it contradicts is rejected naming it, the first part still joins."""
    out = tmp_path / "out"
    day1 = {"p1.txt": page_part(ranks(1, 22)), "p2.txt": page_part(TRUE)}
    first = run(write(tmp_path / "d1", with_list(day1)), out, "--crawled-at", "2026-10-01")
    assert first.code == 0 and first.rejects == [] and consistency(first) == (44, 44)
    day2 = with_list({**day1, "a_later.txt": page_part(LATER)})
    second = run(write(tmp_path / "d2", day2), out, "--crawled-at", "2026-10-02")
    assert second.code == 0
    assert {r["file"] for r in second.rejects} == {"p2.txt"} and len(second.rejects) == 22
    assert all(
        "a_later.txt" in r["message"] and "crawled 2026-10-02, the newest" in r["message"]
        for r in second.rejects
    )
    assert topic_ranks(second) == golden_ranks((30, 31))
    assert consistency(second) == (44, 44)
    assert_accounted(second)


@pytest.mark.parametrize("twice_last", [True, False])
def test_one_resource_at_two_ranks_on_two_parts_is_a_contradiction(
    tmp_path: Path, twice_last: bool
) -> None:
    """Ranks 23–44 with rank 30 holding the resource of rank 5 (on the part 1–22): the two
    parts contradict. The version rule takes one (the same day and count: the file name
    that sorts last); the other's listings are rejected naming it, none dropped."""
    twice = list(TRUE)
    twice[30 - 23] = renumbered(LISTINGS[5 - 1], 30)
    one, two = ("p_a.txt", "p_b.txt") if twice_last else ("p_b.txt", "p_a.txt")
    files = {one: page_part(ranks(1, 22)), two: page_part(twice)}
    out = run(write(tmp_path / "in", with_list(files)), tmp_path / "out")
    assert out.code == 0
    winner, loser, rank, there = (two, one, 5, 30) if twice_last else (one, two, 30, 5)
    assert {r["file"] for r in out.rejects} == {loser} and len(out.rejects) == 22
    assert {r["reason"] for r in out.rejects} == {REASON}
    assert all(winner in r["message"] for r in out.rejects)
    assert all(
        f"the resource at its rank {rank} is at rank {there} there" in r["message"]
        for r in out.rejects
    )
    assert consistency(out) == (44, 22)  # the topic holds the part used, and says so
    assert_accounted(out)


# --------------------------------------------------------------------------- list parts

#: Entries a topic list shows that the topic page does not rank (original title, summary).
ONLY_LISTED = [
    (
        "Pipeline Schedules, Explained",
        "这是一篇讲解流水线并行调度的长文，逐一比较 GPipe、1F1B 与交错式调度在气泡比例、"
        "激活显存和实现难度上的差别，并给出按模型层数与微批数量选择调度方式的经验法则。",
    ),
    (
        "A Field Guide to NCCL Timeouts",
        "作者整理了多机训练中 NCCL 超时的常见成因：网卡绑定错误、容器共享内存过小、某个进程"
        "提前退出而其余进程仍在等待集合通信，并附上逐项排查用的环境变量和日志片段。",
    ),
    (
        "Serving LoRA Adapters at Scale",
        "文章介绍在同一基座模型上同时服务上千个 LoRA 适配器的做法：按请求动态加载适配器权重、"
        "把多个适配器的矩阵乘合并成一次分段计算，以及缓存淘汰策略对尾延迟的影响。",
    ),
    (
        "Checkpoint Formats Compared",
        "一篇对比 safetensors、PyTorch 原生格式与分片检查点的测评，记录了不同文件系统上保存"
        "与加载七十亿参数模型所需的时间，也讨论了断点续训时优化器状态如何拆分存放。",
    ),
]


def test_a_topic_list_in_parts_is_one_list_in_file_name_order(tmp_path: Path) -> None:
    """The list in two parts, each showing entries the topic page does not rank: those
    follow the ranked items in the order of the parts by file name (the part named first
    shows its own at its end, the other at its start), whatever order the parts were
    written in; nothing rejected, the topic's count checked on the whole."""
    a, b, c, d = ONLY_LISTED
    first = list_part([*ENTRIES[:10], a, b])  # named to sort first
    second = list_part([c, *ENTRIES[10:], d])
    files = {"z_page.txt": PAGE, "list_p2.txt": second, "list_p1.txt": first, "i.txt": ITEM}
    out = run(write(tmp_path / "in", files), tmp_path / "out")
    assert out.code == 0 and out.rejects == []
    [topic] = out.topics
    by_id = {i["id"]: i for i in out.items}
    shown = [(by_id[x]["title_original"], by_id[x]["summary_zh"]) for x in topic["items"]]
    [golden] = [json.loads(x) for x in (GOLDEN / "topics.jsonl").read_text("utf-8").splitlines()]
    assert topic["items"][:44] == golden["items"]
    assert shown[44:] == [a, b, c, d]
    assert consistency(out) == (44, 44)
    assert_accounted(out)


def test_a_later_part_added_with_merge_joins_the_part_kept(tmp_path: Path) -> None:
    """Day one publishes the first part of the topic (ranks 1–22); day two adds the second
    (23–44) with ``--merge``. The two do not contradict: they are parts of one version, so
    the topic holds all 44 — the part kept is not replaced as an older version would be."""
    out = tmp_path / "out"
    day1 = with_list({"p1.txt": page_part(ranks(1, 22))})
    assert run(write(tmp_path / "d1", day1), out).code == 0
    day2 = run(write(tmp_path / "d2", {"p2.txt": page_part(TRUE)}), out, "--merge")
    assert day2.code == 0 and day2.rejects == []
    [topic] = day2.topics
    pages = [s["file"] for s in topic["sources"] if s["format"] == "topic-page"]
    assert pages == ["p1.txt", "p2.txt"]
    assert consistency(day2) == (44, 44)
    assert without_sources(day2.bytes_of("items.jsonl")) == GOLDEN_ITEMS
    assert_accounted(day2)


def test_topics_of_other_names_at_numbered_urls_stay_apart(tmp_path: Path) -> None:
    """A site whose topics are told apart by a number in their URL (``topic.php?page=12``,
    ``?page=13``): pages of other names are other topics, never parts of one."""
    at = "https://oplearnx.com/topic.php?page={n}"
    first = page_part(LISTINGS, url=at.format(n=12))
    second = page_part(LISTINGS, url=at.format(n=13)).replace(TOP.split()[1], "另一个主题", 1)
    assert second != first.replace("page=12", "page=13")  # another name
    out = run(write(tmp_path / "in", {"a.txt": first, "b.txt": second}), tmp_path / "out")
    assert out.code == 0
    assert [t["url"] for t in out.topics] == [at.format(n=12), at.format(n=13)]
    assert [len(t["items"]) for t in out.topics] == [N, N]


def test_a_part_named_as_a_continuation_at_its_page_url_joins(tmp_path: Path) -> None:
    """Part 2 at ``?page=2`` under a name that says it goes on (``…（续）``), its ranks
    continuing part 1's: one topic of 44, not a second topic of 22."""
    name = TOP.split()[1]
    first = page_part(ranks(1, 22))
    second = page_part(ranks(23, N), url=f"{URL}?page=2").replace(name, f"{name}（续）", 1)
    files = {"p1.txt": first, "p2.txt": second, ITEM_PAGE.name: ITEM_PAGE.read_bytes()}
    out = run(write(tmp_path / "in", files), tmp_path / "out")
    assert out.code == 0 and out.rejects == []
    assert [(t["url"], len(t["items"])) for t in out.topics] == [(URL, N)]
