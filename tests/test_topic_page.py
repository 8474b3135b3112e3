"""Topic page: flattened, with line breaks, CRLF, BOM; escapes, brackets, numbering."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st

from conftest import TOPIC_PAGE, multiline_topic_page, seed_text, write_files
from ingest.extract.parse.common import (
    _HEAD,
    _PLAIN_HEAD,
    _scan_head,
    candidates,
    loose_numbers,
    valid_heads,
)

HEADER = (
    "# 测试主题 测试用的主题描述。 - 所属：[测试分类]() - 网站：[https://oplearnx.com/topics/"
    "test-topic]() ## 推荐学习顺序 "
)
FOOTER = " --- 中文标题与摘要由模型根据原文生成，以原文为准。 来源：LearnMap · 学径（https://oplearnx.com）"


def page(*listings: str) -> str:
    return HEADER + " ".join(listings) + FOOTER


def listing(n: int, title: str, summary: str, meta: str = "博客 · 入门", url: str = "") -> str:
    return f"{n}. [{title}]({url})（{meta}）：{summary}"


S1 = "第一篇文章的摘要，介绍一个用于测试的资源，内容足够长以便被识别为摘要文本。"
S2 = "第二篇文章的摘要，讲述另一个完全不同的主题，包括若干细节与结论，供读者参考。"
S3 = "第三篇文章的摘要，说明分布式训练中的通信开销以及如何用流水线并行来降低它。"


def _records(out: Any) -> list[tuple[Any, ...]]:
    return [(i["id"], i["title_zh"], i["summary_zh"], i["kind"], i["topics"]) for i in out.items]


def test_line_breaks_crlf_and_bom_give_the_same_records(ingest: Any, tmp_path: Path) -> None:
    flat = seed_text(TOPIC_PAGE)
    multi = multiline_topic_page(flat)
    assert multi.count("\n") > 44
    variants = {
        "flat.txt": flat,
        "multi.txt": multi,
        "crlf.txt": multi.replace("\n", "\r\n").encode(),
        "bom.txt": b"\xef\xbb\xbf" + flat.encode(),
        "utf16.txt": multi.encode("utf-16"),
        "gb.txt": multi.replace("❤️", "").encode("gb18030"),
    }
    outs = {}
    for name, data in variants.items():
        outs[name] = ingest(write_files(tmp_path / name.split(".")[0], {name: data}))
    base = _records(outs["flat.txt"])
    assert len(base) == 44
    for name in ("multi.txt", "crlf.txt", "bom.txt", "utf16.txt"):
        assert _records(outs[name]) == base, name
        assert outs[name].topics == [
            {**outs["flat.txt"].topics[0], "sources": outs[name].topics[0]["sources"]}
        ]
    gb = outs["gb.txt"]
    assert gb.report["files"][0]["encoding"] == "gb18030"
    assert len(gb.items) == 44 and not gb.rejects
    encodings = {n: o.report["files"][0]["encoding"] for n, o in outs.items()}
    assert encodings == {
        "flat.txt": "utf-8",
        "multi.txt": "utf-8",
        "crlf.txt": "utf-8",
        "bom.txt": "utf-8-sig",
        "utf16.txt": "utf-16-le",
        "gb.txt": "gb18030",
    }
    for o in outs.values():
        assert all("\r" not in i["summary_zh"] and "\ufeff" not in i["summary_zh"] for i in o.items)


def test_summary_containing_a_listing_like_text_is_not_cut(ingest: Any, tmp_path: Path) -> None:
    tricky = (
        "该文参见 6. [x] 一节，以及 7. [附录](http://e.x)（博客 · 入门）：里的说明，摘要到此为止。"
    )
    text = page(listing(1, "甲", S1), listing(2, "乙", tricky), listing(3, "丙", S3))
    out = ingest(write_files(tmp_path / "in", {"p.txt": text}))
    assert [
        i["topics"][0]["rank"] for i in sorted(out.items, key=lambda i: i["topics"][0]["rank"])
    ] == [1, 2, 3]
    assert out.by_title("乙")["summary_zh"] == tricky
    warnings = out.report["files"][0]["warnings"]
    assert any("AMBIGUOUS_BOUNDARY" in w for w in warnings)


def test_numbering_gaps_are_warnings(ingest: Any, tmp_path: Path) -> None:
    text = page(listing(1, "甲", S1), listing(2, "乙", S2), listing(5, "丙", S3))
    out = ingest(write_files(tmp_path / "in", {"p.txt": text}), args=("--strict",))
    assert out.code == 0 and not out.rejects
    assert out.by_title("丙")["topics"][0]["rank"] == 5
    assert any("NUMBERING" in w and "listing 5" in w for w in out.report["files"][0]["warnings"])


def test_escapes_urls_and_meta(ingest: Any, tmp_path: Path) -> None:
    text = page(
        listing(1, r"C\+\+ 与 torch\_xla \[P\]", S1, url="https://example.com/a_(b)"),
        listing(2, "[[嵌套]] 标题", S2, meta="播客 · 进阶", url="javascript:alert(1)"),
        listing(3, "丙", S3, meta="奇怪 · 专家", url="/relative"),
    )
    out = ingest(write_files(tmp_path / "in", {"p.txt": text}))
    a = out.by_title("C++ 与 torch_xla [P]")
    assert (a["url"], a["kind"], a["topics"][0]["level"]) == (
        "https://example.com/a_(b)",
        "blog",
        "beginner",
    )
    b = out.by_title("[[嵌套]] 标题")
    assert (b["url"], b["kind"], b["kind_label"]) == (None, "podcast", "播客")
    c = out.by_title("丙")
    assert (c["kind"], c["kind_label"], c["url"]) == ("other", "奇怪", None)
    assert c["topics"][0] == {"slug": "test-topic", "rank": 3, "level": None, "level_label": "专家"}
    warnings = " ".join(out.report["files"][0]["warnings"])
    for code in ("URL_UNSAFE", "URL_RELATIVE", "UNKNOWN_KIND", "UNKNOWN_LEVEL"):
        assert code in warnings
    item_warnings = [w for w in out.report["warnings"] if w.startswith("item ")]
    assert item_warnings == [f"item {c['id']}: UNKNOWN_KIND: label '奇怪'"]


def test_missing_footer_rejects_only_the_last_listing(ingest: Any, tmp_path: Path) -> None:
    text = HEADER + " ".join([listing(1, "甲", S1), listing(2, "乙", S2)])
    out = ingest(write_files(tmp_path / "in", {"p.txt": text}))
    assert [i["title_zh"] for i in out.items] == ["甲"]
    [rej] = out.rejects
    assert (rej["reason"], rej["locator"]) == ("TRUNCATED_ITEM", "listing 2")
    assert rej["byte_offset"] == text.encode().index("2. [乙]".encode())
    assert out.report["files"][0]["status"] == "partial"


def test_title_over_the_length_cap_is_rejected_alone(ingest: Any, tmp_path: Path) -> None:
    text = page(listing(1, "甲", S1), listing(2, "长" * 1001, S2), listing(3, "丙", S3))
    out = ingest(write_files(tmp_path / "in", {"p.txt": text}))
    assert [(i["title_zh"], i["summary_zh"]) for i in out.items if i["title_zh"] != "丙"] == [
        ("甲", S1)
    ]
    [rej] = out.rejects
    assert (rej["locator"], rej["reason"]) == ("listing 2", "ITEM_MALFORMED")


def test_topics_whose_urls_differ_but_share_a_slug_stay_apart(ingest: Any, tmp_path: Path) -> None:
    urls = [
        "https://oplearnx.com/topics/Model",
        "https://oplearnx.com/topics/model",
        "https://other.example/x/model/",
    ]
    files = {
        f"{n}.txt": page(listing(1, f"标题{n}", S1[:-1] + f"第{n}。")).replace(
            "https://oplearnx.com/topics/test-topic", u
        )
        for n, u in enumerate(urls)
    }
    out = ingest(write_files(tmp_path / "in", files))
    slugs = {t["url"]: t["slug"] for t in out.topics}
    urls[2] = urls[2].rstrip("/")  # a topic's url is its canonical topic URL
    assert slugs[urls[0]] == "model"
    assert slugs[urls[1]].startswith("model-") and slugs[urls[2]].startswith("model-")
    assert len(set(slugs.values())) == 3 and all(len(t["items"]) == 1 for t in out.topics)
    assert sum("TOPIC_SLUG_COLLISION" in w for w in out.report["warnings"]) == 2
    again = ingest(write_files(tmp_path / "rev", dict(reversed(list(files.items())))))
    assert again.bytes_of("topics.jsonl") == out.bytes_of("topics.jsonl")


_CANDIDATE = re.compile(r"(?<!\S)([0-9]{1,6})\. \[", re.ASCII)


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=[" ", "\u3000", "\xa0", "\x1c", "\n", "1", "2", "１", ".", "[", "a"]))
def test_listing_head_candidates_are_what_the_ascii_pattern_finds(text: str) -> None:
    """Candidate heads come from str.find, not a regex: the same starts and numbers, so an
    ideographic or no-break space before ``1. [`` does not start a listing."""
    want = [(m.start(1), int(m.group(1))) for m in _CANDIDATE.finditer(text)]
    assert list(candidates(text)) == want
    assert list(candidates("a\u30001. [x]")) == [] and list(candidates("a 1. [x]")) == [(2, 1)]


@settings(max_examples=400, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [
                " ",
                "\u3000",
                "\n",
                "1",
                "23",
                "１",
                ".",
                ". [",
                "[",
                "]",
                "(",
                ")",
                "](http://x.io)",
                "（博客 · 入门）",
                "：",
                "a",
                "标题",
                "\\]",
                "1. [t](http://x.io)（博客 · 入门）：",  # a whole head, after whatever came
                "456789",  # with a head's rest after it: a number of six digits, or more
                ". [t](http://x.io)（博客 · 入门）：",
                "7. [a [b]](https://y.org/p)（项目 · 进阶）：",
            ]
        ),
        max_size=40,
    ).map("".join)
)
@example("456789. [t](http://x.io)（博客 · 入门）：")  # the most digits a number may have
@example("a 1456789. [t](http://x.io)（博客 · 入门）：")  # one more: no head
def test_valid_heads_are_the_candidates_that_scan(text: str) -> None:
    """valid_heads is one loop for speed: the heads the candidates and _scan_head give."""
    assert valid_heads(text) == _scanned(text)


def test_valid_heads_of_a_seed_page_are_the_candidates_that_scan() -> None:
    page = seed_text(TOPIC_PAGE)
    assert valid_heads(page) == _scanned(page) and len(valid_heads(page)) > 10


def _scanned(text: str) -> list[Any]:
    return [h for at, n in candidates(text) if (h := _scan_head(text, at, n)) is not None]


_LOOSE = re.compile(r"(?<!\S)([0-9０-９]{1,6})[.．](?=[\[\s])")


@settings(max_examples=400, deadline=None)
@given(
    st.text(alphabet=[" ", "\u3000", "\n", "1", "２", ".", "．", "[", "a", "。"]),
    st.integers(0, 12),
    st.integers(0, 12),
)
def test_loose_numbers_are_what_their_pattern_finds(text: str, cut: int, tail: int) -> None:
    """Numbers that may start a broken listing come from one scan for a digit and a dot;
    the pattern in the docstring is the definition, inside any ``[start, end)`` window
    (white space before ``start`` counts, nothing after ``end`` is looked at)."""
    start, end = min(cut, len(text)), max(min(cut, len(text)), len(text) - tail)
    want = [(m.start(1), m.group(1)) for m in _LOOSE.finditer(text, start, end)]
    assert list(loose_numbers(text, start, end)) == want


_PART = st.text(
    alphabet=["[", "]", "(", ")", "\\", "\n", " ", "a", "（", "）", "·", "："], max_size=8
)


@settings(max_examples=1000, deadline=None)
@given(_PART, _PART, _PART, st.sampled_from(["", " ", "\t"]))
def test_the_plain_head_pattern_matches_only_as_the_full_one_does(
    title: str, url: str, meta: str, space: str
) -> None:
    """The fast pattern for heads without escapes or nesting is tried first: wherever it
    matches, the full grammar must match the same text with the same parts."""
    text = f"[{title}]({url}){space}（{meta}）：rest"
    plain = _PLAIN_HEAD.match(text)
    if plain is not None:
        full = _HEAD.match(text)
        assert full is not None and (full.end(), full.groups()) == (plain.end(), plain.groups())
