"""Time on adversarial inputs must grow linearly: t(2n)/t(n) ≤ 2.5 from 1 MB up.

Each shape targets a way a parser goes superlinear (BAD_INPUTS I1, B7): unclosed brackets
and parentheses, nested brackets, meta blocks that never close, long space runs, numbers
that look like listings, line-based pages with huge line counts, and stray lines wherever
a page has room for them (format drift); and a way language identification does:
thousands of distinct short Latin titles, each judged once; and the near-duplicate
shapes that give the most candidate pairs (band buckets just under the cap) or none (one
template: every bucket over it). Each input goes through
the real per-file map (decode, detect, parse), then the language of each distinct original
title is judged (cache emptied first); the median of 5 rounds, each of every size.

    python bench/adversarial.py                  # 1, 2, 4 MB
    python bench/adversarial.py --sizes 1,2,4,8  # MB
    python bench/adversarial.py --sizes 0.05,0.1 --only short  # shapes whose name has "short"
"""

from __future__ import annotations

import argparse
import functools
import itertools
import random
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cold import forget_texts
from ingest.extract.pages import parse_bytes
from ingest.normalize.language import language_of
from ingest.normalize.text import key_of
from ingest.resolve.align import order_point, topic_edges
from ingest.resolve.near import near_edges, signed

HEADER = (
    "# 测试主题 测试用的描述。 - 所属：[分类]() - 网站：[https://oplearnx.com/topics/t]() "
    "## 推荐学习顺序 "
)
SUMMARY = "这是一段足够长的中文摘要，用来把标题行和摘要行区分开来，内容本身没有意义。"


def _repeat(unit: str, n: int) -> str:
    return unit * max(1, n // len(unit.encode()))


SYLLABLES = "ka lo mi ve ra tu zen qu ix or an bel dor fis gra hul".split()
WORDS = "fast sparse kernel cache tuning serving notes guide live agent loader".split()


def _pseudo(i: int) -> str:
    """A made-up word, one per number (a syllable per hex digit)."""
    return "".join(SYLLABLES[int(d, 16)] for d in f"{i:x}")


def _short_title(i: int) -> str:
    """Distinct short Latin titles of every kind the detector tells apart: ``Title N``,
    a made-up name and a number, three made-up words, words and a version, a repository."""
    w = _pseudo(i)
    return (
        f"Title {i}",
        f"{w.title()} {i % 100}",
        f"{w} {_pseudo(i * 7 + 3)} {_pseudo(i * 13 + 5)}",
        f"{WORDS[i % len(WORDS)].title()} {WORDS[i * 3 % len(WORDS)]} {w} v{i % 10}.{i % 7}",
        f"{w}/{w.title()}-{i % 9}",
    )[i % 5]


def _short_titles(n: int) -> str:
    entries, size, i = [], 0, 0
    while size < n:
        entries.append(f"{_short_title(i)}\n{i}{SUMMARY}\n")
        size += len(entries[-1].encode())
        i += 1
    return "描述。\n9 条精选 · 入门 1\n" + "".join(entries)


SHAPES: dict[str, Callable[[int], str]] = {
    "unclosed '['": lambda n: HEADER + _repeat("1. [", n),
    "nested '[' then '](' ": lambda n: HEADER + _repeat("1. [" * 100 + "](", n),
    "unclosed '(' in target": lambda n: HEADER + _repeat("1. [a](" + "(" * 50, n),
    "unclosed meta '（'": lambda n: HEADER + _repeat("1. [a]()（" + "·" * 50, n),
    "space run": lambda n: HEADER + "1. [a]()" + " " * n,
    "listing-like numbers": lambda n: HEADER + _repeat("7. [x] 见 8. 和 ", n),
    "valid listings": lambda n: (
        HEADER
        + "".join(f"{i}. [标题 {i}]()（博客 · 入门）：{SUMMARY}{i} " for i in range(1, n // 150))
    ),
    "topic list, many lines": lambda n: (
        "描述。\n9 条精选 · 入门 1\n" + _repeat(f"Title\n{SUMMARY}\n", n)
    ),
    "topic list, titles only": lambda n: "描述。\n9 条精选 · 入门 1\n" + _repeat("Title\n", n),
    "item page, many related": lambda n: (
        f"某处··1 天前\n标题\nTitle\n{SUMMARY}\n- 分级\n- 值得看\n推荐阅读\n"
        + _repeat(f"相关\nRelated\n{SUMMARY}\n", n)
    ),
    "topic list, short titles": _short_titles,
    # format drift: stray lines everywhere a page has room for them
    "topic list, furniture between": lambda n: (
        "描述。\n9 条精选 · 入门 1\n" + _repeat(f"Title\n{SUMMARY}\n首页 · 全部主题 · 关于\n", n)
    ),
    "topic page, stray lines": lambda n: (
        HEADER.replace("## ", "\n" + _repeat("# 登录\n", n // 4) + "## ")
        + "".join(
            f"{i}. [t{i}]()（博客 · 入门）：{SUMMARY}\n返回顶部\n" for i in range(1, n // 300)
        )
        + "--- 注意。 来源：学径（https://oplearnx.com）\n"
        + _repeat("© 2026 学径\n", n // 4)
    ),
    "item page, stray key lines": lambda n: (
        f"某处··1 天前\n标题\n{SUMMARY}\n- 分级\n- 值得看\n" + _repeat("- 杂项\n", n)
    ),
    "saved HTML, chrome blocks": lambda n: (
        "<!DOCTYPE html><html><body><main><p>描述。</p><p>9 条精选</p>"
        + _repeat(f"<p>Title</p><p>{SUMMARY}</p><nav>首页</nav><div class='share'>分享</div>", n)
        + "</main><footer>© 2026</footer></body></html>"
    ),
}


def _han(rng: random.Random, n: int) -> str:
    return "".join(chr(rng.randrange(0x4E00, 0x9FFF)) for _ in range(n))


def _unmatched_pair(n: int) -> tuple[str, str]:
    """A topic page and a topic list of n/2 bytes each, no entry matching any listing."""
    rng = random.Random(n)
    page, size, i = [HEADER], 0, 1
    while size < n // 2:
        page.append(f"{i}. [t{i}]()（博客 · 入门）：{_han(rng, 40)}。\n")
        size, i = size + len(page[-1].encode()), i + 1
    entries, size, i = [], 0, 0
    while size < n // 2:
        entries.append(f"Title {i}\n{_han(rng, 40)}。\n")
        size, i = size + len(entries[-1].encode()), i + 1
    return "".join(page), "描述。\n9 条精选 · 入门 1\n" + "".join(entries)


def _near_groups(n: int, group: int) -> str:
    """A topic page whose summaries come in groups of ``group`` one-character variants of
    a base text: every pair in a group is a near-duplicate."""
    rng = random.Random(n + group)
    listings, size, i = [HEADER], 0, 1
    while size < n:
        base = _han(rng, 60)
        for _ in range(group):
            if size >= n:
                break
            at = rng.randrange(60)
            summary = base[:at] + _han(rng, 1) + base[at + 1 :]
            listings.append(f"{i}. [t{i}]()（博客 · 入门）：{summary}。\n")
            size, i = size + len(listings[-1].encode()), i + 1
    return "".join(listings)


#: Shapes whose cost is in near-duplicate detection: band buckets just under MAX_BUCKET
#: (the most candidate pairs the cap lets through), and one template (buckets over it).
NEAR: dict[str, Callable[[int], str]] = {
    "near-duplicates, buckets of 150": functools.partial(_near_groups, group=150),
    "near-duplicates, one template": functools.partial(_near_groups, group=1_000_000),
}

#: Shapes of a topic page and a topic list of one topic, aligned by order.
PAIRS: dict[str, Callable[[int], tuple[str, str]]] = {
    "topic list, unmatched entries": _unmatched_pair,
}


def parse_and_align(pair: tuple[bytes, bytes]) -> None:
    """The per-file map of both files, then order alignment of the list against the page."""
    page = parse_bytes("topic.md", pair[0])
    lst = parse_bytes("topic.txt", pair[1])
    topic_edges(order_point(x) for x in page.listings + lst.listings)


def parse_and_dedupe(data: bytes) -> None:
    """The per-file map, then the near-duplicate edges among the distinct summary keys."""
    page = parse_bytes("near.md", data)
    keys = sorted({key_of(x.summary_zh) for x in page.listings})
    near_edges([signed(keys)])


def parse_and_judge(data: bytes) -> None:
    """The per-file map, then the language of each distinct original title."""
    language_of.cache_clear()
    page = parse_bytes("adversarial.txt", data)
    for title in {x.title_original for x in page.listings}:
        language_of(title)


#: Rounds each shape is timed in: each round times every size once, smallest first.
ROUNDS = 5


def median_times(runs: list[Callable[[], None]], rounds: int = ROUNDS) -> list[float]:
    """Each run's median time over ``rounds`` rounds, a round timing every run once in turn
    (a machine whose speed drifts drifts for every size alike: five runs of one size, then
    five of the next, read this machine's swings as growth), each run as cold as a new
    process: the texts a run remembers
    (cleaned fields, match keys, links) would make a small input's second run cheaper than
    its first, and a larger one's not."""
    times: list[list[float]] = [[] for _ in runs]
    for _ in range(rounds):
        for run, took in zip(runs, times, strict=True):
            forget_texts()
            t = time.perf_counter()
            run()
            took.append(time.perf_counter() - t)
    return [statistics.median(took) for took in times]


def _runs(sizes: list[float], only: str) -> Iterator[tuple[str, list[Callable[[], None]]]]:
    """Each shape's name, and for each size the run to time."""
    for shapes, timed in ((SHAPES, parse_and_judge), (NEAR, parse_and_dedupe)):
        for name, make in shapes.items():
            if only in name:
                data = [make(int(s * 1_000_000)).encode() for s in sizes]
                yield name, [functools.partial(timed, d) for d in data]
    for name, make_pair in PAIRS.items():
        if only in name:
            pairs = [make_pair(int(s * 1_000_000)) for s in sizes]
            yield (
                name,
                [functools.partial(parse_and_align, (a.encode(), b.encode())) for a, b in pairs],
            )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--sizes", default="1,2,4", help="MB, each double the one before")
    p.add_argument("--only", default="", help="only the shapes whose name contains this")
    args = p.parse_args(argv)
    sizes = [float(s) for s in args.sizes.split(",")]
    worst = 0.0
    language_of("warm up the models")  # loaded once per process, as in a run
    print(f"{'shape':28s}" + "".join(f"{s:>8g}MB" for s in sizes) + "   t(2n)/t(n)")
    for name, runs in _runs(sizes, args.only):
        times = median_times(runs)
        ratios = [b / a for a, b in itertools.pairwise(times)]
        worst = max(worst, *ratios)
        print(
            f"{name:28s}"
            + "".join(f"{t:9.3f}s" for t in times)
            + "   "
            + ", ".join(f"{r:.2f}" for r in ratios)
        )
    print(f"worst t(2n)/t(n): {worst:.2f} (goal ≤ 2.5)")
    return 0 if worst <= 2.5 else 1


if __name__ == "__main__":
    sys.exit(main())
