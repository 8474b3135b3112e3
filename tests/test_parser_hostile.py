"""Hostile inputs for the three parsers, one test per BAD_INPUTS.md row (B, C, D, E, G2, I1).

Each test builds a small fixture from a seed (or the synthetic topic page of
test_topic_page.py), runs the real command line in-process and asserts the exact outcome
BAD_INPUTS asks for, with the reason codes the parsers emit (ITEM_MALFORMED, MISSING_FIELD,
TRUNCATED_ITEM, PAIRING_ERROR, UNKNOWN_FORMAT, EMPTY_INPUT, ...). The central promise: a
broken listing ends in exactly one place (an item or a reject) and its neighbours are
emitted unchanged.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import (
    ITEM_PAGE,
    ROOT,
    TOPIC_LIST,
    TOPIC_PAGE,
    Out,
    cli_examples,
    seed_text,
    write_files,
)
from ingest.cli import main
from test_topic_page import FOOTER, HEADER, S1, S2, S3, listing, page

S4 = "第四篇文章的摘要，介绍模型量化的基本方法，以及在消费级显卡上部署大模型的经验。"
T000, T001, T004 = seed_text(TOPIC_PAGE), seed_text(TOPIC_LIST), seed_text(ITEM_PAGE)
L001, L004 = T001.split("\n"), T004.split("\n")


def run_one(ingest: Any, tmp_path: Path, text: str | bytes, name: str = "p.txt") -> Out:
    folder = tmp_path / f"in{len(list(tmp_path.glob('in*')))}"
    out: Out = ingest(write_files(folder, {name: text}))
    assert out.code == 0
    return out


def warnings_of(out: Out) -> str:
    return " ".join(out.report["files"][0]["warnings"] + out.report["warnings"])


def by_rank(out: Out) -> dict[int, dict[str, Any]]:
    return {i["topics"][0]["rank"]: i for i in out.items}


def pairs(out: Out) -> set[tuple[str | None, str]]:
    return {(i["title_original"], i["summary_zh"]) for i in out.items}


def fields(item: dict[str, Any]) -> dict[str, Any]:
    """An item without its provenance (sha256 and offsets change with any edit)."""
    return {k: v for k, v in item.items() if k != "sources"}


def only_reject(out: Out) -> dict[str, Any]:
    assert len(out.rejects) == 1, out.rejects
    rej: dict[str, Any] = out.rejects[0]
    return rej


# --------------------------------------------------------------------------- B. file level


@settings(max_examples=cli_examples(60))
@given(
    st.text(alphabet=" \t\r\n\u3000\u00a0\ufeff", max_size=40),
    st.sampled_from(["utf-8", "utf-8-sig", "utf-16"]),
)
def test_b1_b2_empty_and_whitespace_only_files_are_empty_input(text: str, enc: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = write_files(Path(tmp, "in"), {"blank.txt": text.encode(enc)})
        code = main(["run", str(folder), "--out", str(Path(tmp, "out")), "--quiet"])
        out = Out(Path(tmp, "out"), code)
        assert code == 0
        [rej] = out.rejects
        assert (rej["file"], rej["locator"], rej["reason"]) == ("blank.txt", "file", "EMPTY_INPUT")
        assert out.report["files"][0]["status"] == "rejected" and not out.items


@pytest.mark.parametrize("seed", ["001", "004"])
@pytest.mark.parametrize("ending", ["\r", "\r\n", "mixed"])
def test_b4_cr_and_mixed_line_endings_give_the_same_records(
    ingest: Any, tmp_path: Path, seed: str, ending: str
) -> None:
    lines = L001 if seed == "001" else L004
    if ending == "mixed":
        ends = ["\n", "\r\n", "\r"]
        text = "".join(line + ends[i % 3] for i, line in enumerate(lines))
    else:
        text = ending.join(lines)
    lf = run_one(ingest, tmp_path, "\n".join(lines))
    other = run_one(ingest, tmp_path, text)
    assert other.report["files"][0]["format"] == lf.report["files"][0]["format"]
    assert [fields(i) for i in other.items] == [fields(i) for i in lf.items]
    assert other.rejects == lf.rejects == []
    assert all("\r" not in json.dumps(i) for i in other.items)


@pytest.mark.parametrize("ch", ["\u2028", "\u2029", "\x85", "\x0b", "\x0c", "\x1c", "\x1e"])
def test_b5_odd_line_separators_in_a_summary_do_not_shift_pairs(
    ingest: Any, tmp_path: Path, ch: str
) -> None:
    lines = L001[:]
    lines[11] = lines[11][:20] + ch + lines[11][20:]  # entry 5's summary
    clean, odd = run_one(ingest, tmp_path, T001), run_one(ingest, tmp_path, "\n".join(lines))
    assert not odd.rejects and len(odd.items) == 19
    squeeze = {(t, s.replace(" ", "")) for t, s in pairs(clean)}
    assert {(t, s.replace(" ", "")) for t, s in pairs(odd)} == squeeze
    assert all(ch not in i["summary_zh"] for i in odd.items)


@pytest.mark.parametrize("ch", ["\u2028", "\u2029", "\x85", "\x0c", "\x1c"])
def test_b5_odd_line_separators_in_the_description_line_are_not_line_breaks(
    ingest: Any, tmp_path: Path, ch: str
) -> None:
    """Only CR/LF split lines (B5): detection must not see line 2 inside line 1."""
    lines = L001[:]
    lines[0] = lines[0][:5] + ch + lines[0][5:]
    out = run_one(ingest, tmp_path, "\n".join(lines))
    assert out.report["files"][0]["format"] == "topic-list", out.rejects
    assert len(out.items) == 19 and not out.rejects


ADVERSARIAL = {
    "open_brackets.txt": HEADER + "1. [" + "[" * 200_000,
    "heads_glued.txt": HEADER + "1. [" * 100_000,
    "heads_spaced.txt": HEADER + "1. [ " * 100_000,
    "heads_fullwidth.txt": HEADER + "1. [（ " * 100_000,
    "fullwidth_parens.txt": HEADER + "1. [a]()" + "（" * 200_000,
    "space_run.txt": HEADER + "1. [a]()" + " " * 200_000 + "（博客 · 入门）：" + S1 + FOOTER,
    "open_links.txt": HEADER + "1. [a](" * 100_000,
    "open_meta.txt": HEADER + "1. [a]()（ " * 100_000,
    "backslashes.txt": HEADER + "1. [" + "\\" * 200_001 + "]()（博客 · 入门）：" + S1,
    "list_lines.txt": "描述\n44 条精选\n" + "[" * 200_000 + "\n" + "（" * 200_000 + "\n",
    "item_lines.txt": "出版方··刚刚\n"
    + "（" * 200_000
    + "\n- 分级\n- 值得看\n推荐阅读\n"
    + "[ " * 99_999,
}


@pytest.mark.slow
def test_b7_i1_adversarial_single_lines_finish(tmp_path: Path) -> None:
    """Huge crafted lines complete (a hang guard, not a benchmark: bench/ owns the timing)."""
    folder = write_files(tmp_path / "adv", dict(ADVERSARIAL))
    out = tmp_path / "out"
    proc = subprocess.run(
        [sys.executable, "-m", "ingest", "run", str(folder), "--out", str(out), "--quiet"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    report = json.loads((out / "report.json").read_text("utf-8"))
    assert sorted(f["file"] for f in report["files"]) == sorted(ADVERSARIAL)
    totals = report["totals"]
    assert totals["listings"] == totals["listings_merged"] + totals["listings_rejected"]


CROSSED = {
    # a topic page whose second line is a topic-list stats line
    "stats_line_2": "# 模型服务与算力\n44 条精选 · 入门 2 · 按推荐学习顺序\n" + T000,
    # random prose that starts with '# ' and happens to say 网站 (website)
    "prose_website": "# 随便写写\n今天我们聊聊怎么搭建一个个人网站，以及网站域名的选择。\n",
    "prose": "# 随便写写\n今天天气不错，我们去公园散步吧。然后回家吃饭。\n",
    # an item page whose first line is a topic-page header
    "item_with_h1": "# 模型服务与算力 - 网站：[https://oplearnx.com/topics/x]()\n" + T004,
}


@pytest.mark.parametrize("case", sorted(CROSSED))
def test_b8_crossed_or_absent_signals_are_unknown_format(
    ingest: Any, tmp_path: Path, case: str
) -> None:
    out = run_one(ingest, tmp_path, CROSSED[case])
    rej = only_reject(out)
    assert (rej["locator"], rej["reason"]) == ("file", "UNKNOWN_FORMAT")
    assert out.report["files"][0]["status"] == "rejected" and not out.items


FOOTER_AT = T000.index(" --- ")


def test_b10_footer_removed(ingest: Any, tmp_path: Path) -> None:
    clean = by_rank(run_one(ingest, tmp_path, T000))
    out = run_one(ingest, tmp_path, T000[:FOOTER_AT])
    rej = only_reject(out)
    assert (rej["locator"], rej["reason"]) == ("listing 44", "TRUNCATED_ITEM")
    assert {n: fields(i) for n, i in by_rank(out).items()} == {
        n: fields(i) for n, i in clean.items() if n != 44
    }
    assert "FOOTER_MISSING" in warnings_of(out)


def test_b10_footer_doubled_is_not_absorbed(ingest: Any, tmp_path: Path) -> None:
    clean = by_rank(run_one(ingest, tmp_path, T000))
    out = run_one(ingest, tmp_path, T000 + T000[FOOTER_AT:])
    assert not out.rejects
    assert by_rank(out)[44]["summary_zh"] == clean[44]["summary_zh"]
    assert {n: fields(i) for n, i in by_rank(out).items()} == {
        n: fields(i) for n, i in clean.items()
    }
    assert out.topics[0]["notice"] == "中文标题与摘要由模型根据原文生成，以原文为准。"


def test_b10_footer_edited(ingest: Any, tmp_path: Path) -> None:
    clean = by_rank(run_one(ingest, tmp_path, T000))
    out = run_one(ingest, tmp_path, T000[:FOOTER_AT] + " --- 本页内容由 AI 生成。")
    assert not out.rejects
    assert {n: fields(i) for n, i in by_rank(out).items()} == {
        n: fields(i) for n, i in clean.items()
    }
    assert out.topics[0]["notice"] == "本页内容由 AI 生成。"
    assert out.topics[0]["site"] is None


# --------------------------------------------------------------------------- C. topic page


def test_c2_escaped_brackets_stay_in_the_title(ingest: Any, tmp_path: Path) -> None:
    items = by_rank(run_one(ingest, tmp_path, T000))
    assert items[17]["title_zh"] == (
        "搭建 GPU kernel 开发环境的实践笔记：CUDA 13 的显卡截止、异步计时陷阱、profiler "
        "计数器权限 [P]"
    )
    assert items[30]["title_zh"] == (
        "我为一个面向大规模 GPU 工作负载的 PyTorch 优化器做了实现——希望获得反馈 [P]"
    )
    assert items[31]["title_zh"] == (
        "Deepity：一个手工调优的 C++/CUDA 预测编码库，在 MNIST 上超过 jpc（JAX）和 "
        "ngc-learn（含 CPU 基准与源码）[P]"
    )
    assert items[30]["summary_zh"].startswith("这是 r/MachineLearning 的一篇社区帖子（[P] 表示")


def assert_neighbours_intact(out: Out, expected: dict[int, tuple[str, str]]) -> None:
    """Listings ``rank -> (title, summary)`` emitted exactly, nothing glued onto them."""
    got = by_rank(out)
    for n, (title, summary) in expected.items():
        assert n in got, f"listing {n} lost"
        assert (got[n]["title_zh"], got[n]["summary_zh"]) == (title, summary)


@pytest.mark.parametrize("title", ["标题 [草稿", "标题 草稿]", "标题 ]草稿[", "[标题"])
def test_c3_unbalanced_bracket_in_a_title_is_item_malformed(
    ingest: Any, tmp_path: Path, title: str
) -> None:
    text = page(listing(1, "甲", S1), listing(2, title, S2), listing(3, "丙", S3))
    out = run_one(ingest, tmp_path, text)
    rej = only_reject(out)
    assert (rej["locator"], rej["reason"]) == ("listing 2", "ITEM_MALFORMED")
    assert rej["byte_offset"] == text.encode().index(f"2. [{title}".encode())
    assert_neighbours_intact(out, {1: ("甲", S1), 3: ("丙", S3)})
    assert len(out.items) == 2


@pytest.mark.parametrize(
    ("meta", "kind", "level", "warning"),
    [
        ("(博客 · 入门):", "blog", "beginner", None),
        ("（博客·入门）：", "blog", "beginner", None),
        ("（博客 ・ 入门）：", "blog", "beginner", None),
        ("（博客 • 入门）：", "blog", "beginner", None),
        ("（博客 · 入门 · 附加）：", "blog", "beginner", "BAD_META"),
        # '-' is not a documented separator: one unknown label, kind 'other' (SPEC), warned
        ("（博客 - 入门）：", "other", None, "BAD_META"),
    ],
)
def test_c6_meta_variants(
    ingest: Any, tmp_path: Path, meta: str, kind: str, level: str | None, warning: str | None
) -> None:
    text = HEADER + " ".join([listing(1, "甲", S1), f"2. [乙](){meta}{S2}", listing(3, "丙", S3)])
    out = run_one(ingest, tmp_path, text + FOOTER)
    assert not out.rejects
    assert_neighbours_intact(out, {1: ("甲", S1), 2: ("乙", S2), 3: ("丙", S3)})
    b = by_rank(out)[2]
    assert (b["kind"], b["topics"][0]["level"]) == (kind, level)
    w = [x for x in out.report["files"][0]["warnings"] if "BAD_META" in x]
    assert w[0].startswith("listing 2: BAD_META") if warning else not w, w


def test_c6_missing_meta_is_item_malformed_alone(ingest: Any, tmp_path: Path) -> None:
    text = page(listing(1, "甲", S1), f"2. [乙]()：{S2}", listing(3, "丙", S3))
    out = run_one(ingest, tmp_path, text)
    rej = only_reject(out)
    assert (rej["locator"], rej["reason"]) == ("listing 2", "ITEM_MALFORMED")
    assert_neighbours_intact(out, {1: ("甲", S1), 3: ("丙", S3)})


@pytest.mark.parametrize("where", ["middle", "before_footer"])
def test_c7_missing_summary_is_missing_field(ingest: Any, tmp_path: Path, where: str) -> None:
    if where == "middle":
        text = page(listing(1, "甲", S1), listing(2, "乙", ""), listing(3, "丙", S3))
        keep = {1: ("甲", S1), 3: ("丙", S3)}
    else:
        text = page(listing(1, "甲", S1), listing(2, "乙", ""))
        keep = {1: ("甲", S1)}
    out = run_one(ingest, tmp_path, text)
    rej = only_reject(out)
    assert (rej["locator"], rej["reason"]) == ("listing 2", "MISSING_FIELD")
    assert_neighbours_intact(out, keep)
    assert len(out.items) == len(keep)


def test_c8_listing_like_text_with_a_random_number_stays_in_the_summary(
    ingest: Any, tmp_path: Path
) -> None:
    tricky = "该文参见 17. [附录]()（博客 · 入门）：里的说明，摘要到此为止。"
    out = run_one(
        ingest, tmp_path, page(listing(1, "甲", S1), listing(2, "乙", tricky), listing(3, "丙", S3))
    )
    assert not out.rejects
    assert_neighbours_intact(out, {1: ("甲", S1), 2: ("乙", tricky), 3: ("丙", S3)})
    assert "AMBIGUOUS_BOUNDARY" in warnings_of(out)


def test_c8_listing_like_text_with_the_next_number_is_not_a_silent_split(
    ingest: Any, tmp_path: Path
) -> None:
    """'… 3. [附录]()（博客 · 入门）：…' inside listing 2, then the real listing 3: the
    boundary is ambiguous. Either it stays text, or both pieces are rejected
    AMBIGUOUS_BOUNDARY; never listing 2 cut short plus an invented listing '附录'."""
    tricky = "该文参见 3. [附录]()（博客 · 入门）：里的说明，摘要到此为止。"
    text = page(listing(1, "甲", S1), listing(2, "乙", tricky), listing(3, "丙", S3))
    out = run_one(ingest, tmp_path, text)
    assert_neighbours_intact(out, {1: ("甲", S1)})
    titles = {i["title_zh"]: i for i in out.items}
    assert "附录" not in titles, "a listing was invented from summary text"
    if "乙" in titles:
        assert titles["乙"]["summary_zh"] == tricky
    else:
        assert {(r["locator"], r["reason"]) for r in out.rejects} >= {
            ("listing 2", "AMBIGUOUS_BOUNDARY")
        }
    assert titles["丙"]["summary_zh"] == S3


def test_c9_duplicate_numbers_are_not_swallowed(ingest: Any, tmp_path: Path) -> None:
    """1, 2, 2, 3: C9 says emit both 2s (rank = printed number, a NUMBERING warning); where
    the boundary is judged ambiguous (C8), AMBIGUOUS_BOUNDARY rejects are acceptable too.
    Never the second 2 glued onto the first one's summary."""
    text = page(
        listing(1, "甲", S1), listing(2, "乙", S2), listing(2, "乙二", S4), listing(3, "丙", S3)
    )
    out = run_one(ingest, tmp_path, text)
    assert out.report["files"][0]["listings"] == 4, "a listing vanished into another's summary"
    titles = {i["title_zh"]: i for i in out.items}
    for title, summary in (("甲", S1), ("乙", S2), ("乙二", S4), ("丙", S3)):
        if title in titles:
            assert titles[title]["summary_zh"] == summary
    assert len(out.items) + len(out.rejects) == 4
    flagged = warnings_of(out) + " ".join(r["reason"] for r in out.rejects)
    assert "NUMBERING" in flagged or "AMBIGUOUS_BOUNDARY" in flagged


@pytest.mark.parametrize(
    ("numbers", "ranks"), [((1, 2, 1, 2), [1, 1, 2, 2]), ((3, 2, 1, 4), [1, 2, 3, 4])]
)
def test_c9_restart_and_descending_numbers_are_valid(
    ingest: Any, tmp_path: Path, numbers: tuple[int, ...], ranks: list[int]
) -> None:
    summaries = [S1, S2, S3, S4]
    text = page(
        *(listing(n, f"题{i}", s) for i, (n, s) in enumerate(zip(numbers, summaries, strict=True)))
    )
    out = run_one(ingest, tmp_path, text)
    assert not out.rejects
    got = {i["summary_zh"]: i["topics"][0]["rank"] for i in out.items}
    assert got == dict(zip(summaries, numbers, strict=True))
    assert sorted(got.values()) == ranks
    assert "NUMBERING" in warnings_of(out)


@pytest.mark.parametrize("head", ["２. [乙]", "１２. [乙]"])
@pytest.mark.parametrize("position", ["middle", "last"])
def test_c9_full_width_digits_are_item_malformed(
    ingest: Any, tmp_path: Path, head: str, position: str
) -> None:
    broken = f"{head}()（博客 · 入门）：{S2}"
    if position == "middle":
        text = page(listing(1, "甲", S1), broken, listing(3, "丙", S3))
        keep = {1: ("甲", S1), 3: ("丙", S3)}
    else:
        text = page(listing(1, "甲", S1), listing(2, "丁", S4), broken.replace(S2, S3))
        keep = {1: ("甲", S1), 2: ("丁", S4)}
    out = run_one(ingest, tmp_path, text)
    rej = only_reject(out)
    assert rej["reason"] == "ITEM_MALFORMED"
    assert rej["byte_offset"] == text.encode().index(head.encode())
    assert_neighbours_intact(out, keep)


@pytest.mark.parametrize(
    ("raw", "title", "markup"),
    [
        ("**粗体** 标题", "**粗体** 标题", False),  # markdown emphasis is kept verbatim
        ("`code` 标题", "`code` 标题", False),
        ("A &amp; B 标题", "A & B 标题", True),  # entities decoded once ...
        ("a &amp;amp; b 标题", "a &amp; b 标题", True),  # ... and only once
        ("<b>加粗</b>标题", "加粗标题", True),  # tags stripped
        ("&lt;script&gt;alert(1)&lt;/script&gt; 标题", "标题", True),  # never a live tag
    ],
)
def test_c12_inline_markup_and_entities_in_titles(
    ingest: Any, tmp_path: Path, raw: str, title: str, markup: bool
) -> None:
    out = run_one(ingest, tmp_path, page(listing(1, raw, S1), listing(2, "乙", S2)))
    assert not out.rejects
    assert by_rank(out)[1]["title_zh"] == title
    assert ("listing 1: MARKUP_REMOVED" in out.report["files"][0]["warnings"]) is markup


# --------------------------------------------------------------------------- D. topic list


def test_d1_missing_title_line_does_not_shift_titles(ingest: Any, tmp_path: Path) -> None:
    clean = pairs(run_one(ingest, tmp_path, T001))
    lost = (L001[10], L001[11])  # entry 5: "Same GPU, 50% More Output ..."
    out = run_one(ingest, tmp_path, "\n".join(L001[:10] + L001[11:]))
    rej = only_reject(out)
    assert (rej["locator"], rej["reason"]) == ("line 11", "PAIRING_ERROR")
    assert pairs(out) == clean - {lost}
    assert "line 11: TITLE_MISSING" in warnings_of(out)


def test_d1_missing_title_line_joins_the_topic_page_by_summary(ingest: Any, tmp_path: Path) -> None:
    folder = write_files(
        tmp_path / "batch",
        {"000.txt": T000, "001.txt": "\n".join(L001[:10] + L001[11:]), "004.txt": T004},
    )
    out = ingest(folder)
    assert not out.rejects and len(out.items) == 47
    five = by_rank_in_topic(out)[5]
    assert five["title_original"] is None and five["title_zh"].startswith("同样的 GPU")
    english = [i for i in out.items if i["original_language"] == "en"]
    assert len(english) == 23  # 24 on the seeds, minus the one whose title line is gone


def by_rank_in_topic(out: Out) -> dict[int, dict[str, Any]]:
    return {i["topics"][0]["rank"]: i for i in out.items if i["topics"] and i["topics"][0]["rank"]}


@pytest.mark.parametrize("pair", [0, 4, 18])
def test_d2_swapped_title_and_summary_are_rejected_alone(
    ingest: Any, tmp_path: Path, pair: int
) -> None:
    clean = pairs(run_one(ingest, tmp_path, T001))
    lines = L001[:]
    t, s = 2 + 2 * pair, 3 + 2 * pair
    lines[t], lines[s] = lines[s], lines[t]
    out = run_one(ingest, tmp_path, "\n".join(lines))
    assert pairs(out) == clean - {(L001[t], L001[s])}
    assert {r["locator"] for r in out.rejects} == {f"line {t + 1}", f"line {s + 1}"}
    assert {r["reason"] for r in out.rejects} <= {"PAIRING_ERROR", "TRUNCATED_ITEM"}


def test_d4_blank_lines_between_pairs_are_separators(ingest: Any, tmp_path: Path) -> None:
    clean = pairs(run_one(ingest, tmp_path, T001))
    spaced = "\n\n".join(L001) + "\n\n\n"
    out = run_one(ingest, tmp_path, spaced)
    assert pairs(out) == clean and not out.rejects


def test_d4_wrapped_summary_is_not_emitted_cut_short(ingest: Any, tmp_path: Path) -> None:
    """Entry 5's summary wrapped onto two lines: the entry is rejected (PAIRING_ERROR) or
    re-joined whole; never emitted with the first half as its summary."""
    clean = pairs(run_one(ingest, tmp_path, T001))
    title, summary = L001[10], L001[11]
    lines = [*L001[:11], summary[:40], summary[40:], *L001[12:]]
    out = run_one(ingest, tmp_path, "\n".join(lines))
    half = [i for i in out.items if i["summary_zh"] in (summary[:40], summary[40:])]
    assert not half, f"emitted with half a summary: {half[0]['summary_zh']!r}"
    assert pairs(out) - {(title, summary)} == clean - {(title, summary)}
    assert {r["reason"] for r in out.rejects} <= {"PAIRING_ERROR"}


def test_d5_odd_line_count_rejects_the_last_title(ingest: Any, tmp_path: Path) -> None:
    clean = pairs(run_one(ingest, tmp_path, T001))
    out = run_one(ingest, tmp_path, "\n".join(L001[:-1]))
    rej = only_reject(out)
    assert (rej["locator"], rej["reason"]) == ("line 39", "TRUNCATED_ITEM")
    assert pairs(out) == clean - {(L001[-2], L001[-1])}


# --------------------------------------------------------------------------- E. item page


def item_page_items(out: Out) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """(the page's own item, the other items by Chinese title)."""
    items = out.items
    [main_item] = [i for i in items if any(s["locator"] == "item" for s in i["sources"])]
    return main_item, {i["title_zh"]: i for i in items if i is not main_item}


@pytest.mark.parametrize(
    ("byline", "publisher", "age"),
    [
        ("Hugging Face··5 个月前", "Hugging Face", "5 个月前"),
        ("··刚刚", None, "刚刚"),
        ("··3 天前", None, "3 天前"),
        ("A·B 出版社··昨天", "A·B 出版社", "昨天"),
        ("某·社···3 天前", "某·社·", "3 天前"),  # split on the last '··'
    ],
)
def test_e1_publisher_line_variants(
    ingest: Any, tmp_path: Path, byline: str, publisher: str | None, age: str
) -> None:
    clean = run_one(ingest, tmp_path, T004)
    out = run_one(ingest, tmp_path, "\n".join([byline, *L004[1:]]))
    assert not out.rejects
    main_item, others = item_page_items(out)
    assert (main_item["publisher"], main_item["published_ago"]) == (publisher, age)
    clean_main, clean_others = item_page_items(clean)
    assert {**fields(main_item), "publisher": 0, "published_ago": 0} == {
        **fields(clean_main),
        "publisher": 0,
        "published_ago": 0,
    }
    assert {t: fields(i) for t, i in others.items()} == {
        t: fields(i) for t, i in clean_others.items()
    }


KV = ["- 分级", "- 值得看", "- 收录时间", "- 2026-10-28"]


@pytest.mark.parametrize(
    ("kv", "rating", "collected", "warning"),
    [
        (["- 分级", "- 值得看", "- 收录时间"], "值得看", None, "line 7: BAD_KV"),
        (["- 分级", "- 值得看", "- 分级", "- 必读", *KV[2:]], "值得看", "2026-10-28", "BAD_KV"),
        (["- 分级", "- 值得看", "- 收录时间", "- 2026-13-45"], "值得看", None, "BAD_DATE"),
        ([*KV, "- 作者", "- 某人"], "值得看", "2026-10-28", "UNKNOWN_KEY"),
    ],
)
def test_e2_broken_key_value_block(
    ingest: Any,
    tmp_path: Path,
    kv: list[str],
    rating: str,
    collected: str | None,
    warning: str,
) -> None:
    out = run_one(ingest, tmp_path, "\n".join(L004[:4] + kv + L004[8:]))
    assert not out.rejects and len(out.items) == 7
    main_item, _ = item_page_items(out)
    assert (main_item["rating"], main_item["collected_on"]) == (rating, collected)
    assert warning in warnings_of(out)
    assert len(main_item["related"]) == 6


@pytest.mark.parametrize("cut", [8, 9])
def test_e3_no_related_reading(ingest: Any, tmp_path: Path, cut: int) -> None:
    out = run_one(ingest, tmp_path, "\n".join(L004[:cut]))
    assert not out.rejects
    [item] = out.items
    assert item["related"] == [] and item["rating"] == "值得看"
    assert item["summary_zh"] == L004[3]


def test_e4_related_entry_identical_to_the_main_item(ingest: Any, tmp_path: Path) -> None:
    clean = run_one(ingest, tmp_path, T004)
    out = run_one(ingest, tmp_path, "\n".join(L004 + L004[1:4]))
    assert not out.rejects and len(out.items) == 7
    main_item, _ = item_page_items(out)
    assert main_item["id"] not in main_item["related"]
    assert main_item["related"] == item_page_items(clean)[0]["related"]
    assert "SELF_REFERENCE" in warnings_of(out) and "DUPLICATE_ITEM" in warnings_of(out)


@pytest.mark.parametrize(("drop", "entry"), [(14, 2), (11, 1), (26, 6)])
def test_e5_related_entry_missing_its_summary_is_rejected_alone(
    ingest: Any, tmp_path: Path, drop: int, entry: int
) -> None:
    clean_main, clean_others = item_page_items(run_one(ingest, tmp_path, T004))
    lost = L004[drop - 2]  # the entry's Chinese title
    out = run_one(ingest, tmp_path, "\n".join(L004[:drop] + L004[drop + 1 :]))
    rej = only_reject(out)
    assert rej["locator"] == f"related {entry}", rej
    main_item, others = item_page_items(out)
    assert {t: fields(i) for t, i in others.items()} == {
        t: fields(i) for t, i in clean_others.items() if t != lost
    }
    assert main_item["related"] == [
        r for r in clean_main["related"] if r != clean_others[lost]["id"]
    ]


def test_e6_related_heading_inside_the_main_summary(ingest: Any, tmp_path: Path) -> None:
    clean_main, clean_others = item_page_items(run_one(ingest, tmp_path, T004))
    summary = L004[3][:60] + "推荐阅读" + L004[3][60:]
    out = run_one(ingest, tmp_path, "\n".join([*L004[:3], summary, *L004[4:]]))
    assert not out.rejects
    main_item, others = item_page_items(out)
    assert main_item["summary_zh"] == summary
    assert {**fields(main_item), "summary_zh": 0, "id": 0} == {
        **fields(clean_main),
        "summary_zh": 0,
        "id": 0,
    }
    assert {t: fields(i) for t, i in others.items()} == {
        t: fields(i) for t, i in clean_others.items()
    }


def test_e6_related_heading_as_a_line_inside_the_main_summary(ingest: Any, tmp_path: Path) -> None:
    """'推荐阅读' on a line of its own in the wrapped main summary, before the k/v block:
    the section split must come after the k/v block (BAD_INPUTS E6). The main entry is then
    malformed (rejected) or whole; never emitted with its summary cut at the heading, and
    the k/v lines are never read as related entries."""
    _, clean_others = item_page_items(run_one(ingest, tmp_path, T004))
    head, tail = L004[3][:60], L004[3][60:]
    out = run_one(ingest, tmp_path, "\n".join([*L004[:3], head, "推荐阅读", tail, *L004[4:]]))
    assert all(r["locator"] == "item" for r in out.rejects), out.rejects
    mains = [i for i in out.items if any(s["locator"] == "item" for s in i["sources"])]
    for m in mains:
        assert m["summary_zh"] != head, "main item emitted with its summary cut short"
        assert (m["rating"], m["collected_on"]) == ("值得看", "2026-10-28")
    others = {i["title_zh"]: fields(i) for i in out.items if i not in mains}
    assert others == {t: fields(i) for t, i in clean_others.items()}


# --------------------------------------------------------------------------- G2


def test_g2_duplicate_listing_within_one_page(ingest: Any, tmp_path: Path) -> None:
    text = page(listing(1, "甲", S1), listing(2, "乙", S2), listing(3, "甲", S1))
    out = run_one(ingest, tmp_path, text)
    assert not out.rejects and len(out.items) == 2
    a = by_rank(out)[1]
    assert [s["locator"] for s in a["sources"]] == ["listing 1", "listing 3"]
    assert "p.txt: listing 3: DUPLICATE_ITEM" in warnings_of(out)
    assert out.report["totals"]["listings"] == 3
