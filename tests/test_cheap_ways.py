"""What every parser builds, done the cheap way, must be what the plain way gives:
parsed pages travel between processes (``--jobs``, Dask) as one MessagePack blob, and every
field of every listing must survive the trip; line numbers are counted before they are
looked up; GB18030 is tried before bad UTF-8 bytes are counted."""

from __future__ import annotations

import datetime as dt
import pickle
import re
from bisect import bisect_right
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from msgspec.structs import fields

from ingest.extract.decode import (
    ESCAPED_BYTE,
    Decoded,
    Locator,
    _decode_utf8,
    _try_gb18030,
    incomplete_utf8_tail,
)
from ingest.extract.pages import parse_bytes
from ingest.extract.parse.common import (
    LINE_BREAK,
    Page,
    line_at,
    line_pieces,
    next_break,
    split_lines,
)
from ingest.extract.parse.topic_page import heading_starts
from ingest.records import Listing, PageResult, Provenance

_PROV = Provenance("a.md", "0" * 64, "topic-page", "listing 3", 120, 7)


def _unlike_default(f: Any) -> Any:
    """A value for field ``f`` that no default gives."""
    return {
        "prov": _PROV,
        "ordinal": 4,
        "rank": 5,
        "index": 6,
        "original_is_chinese": True,
        "stored": True,
        "related_idx": (1, 2),
        "crawled_at": dt.date(2026, 11, 30),
    }.get(f.name, f"{f.name}-value")


def _page_of(listing: Listing) -> PageResult:
    return PageResult("a.md", "0" * 64, 10, "utf-8", "topic-page", listings=[listing])


def test_a_listing_with_every_field_set_survives_the_trip() -> None:
    listing = Listing(**{f.name: _unlike_default(f) for f in fields(Listing)})
    data = pickle.dumps(_page_of(listing), protocol=pickle.HIGHEST_PROTOCOL)
    assert b"_from_msgpack" in data and b"Listing" not in data  # one blob, no pickled records
    [back] = pickle.loads(data).listings
    for f in fields(Listing):
        assert getattr(back, f.name) == getattr(listing, f.name), f.name
    assert type(back.prov) is Provenance and back.prov.line == 7


def test_a_page_messagepack_cannot_hold_is_pickled_as_it_is() -> None:
    page = _page_of(Listing(_PROV, 0, "摘要"))
    page.warnings.append("a lone surrogate \udcff in a warning")
    data = pickle.dumps(page, protocol=pickle.HIGHEST_PROTOCOL)
    assert b"_from_msgpack" not in data
    assert pickle.loads(data) == page


@pytest.mark.parametrize("protocol", [2, pickle.HIGHEST_PROTOCOL])
def test_a_parsed_page_survives_pickling(protocol: int) -> None:
    text = "# T\n\n1. [标题](https://x.example/a)（论文 · 入门）：第一条摘要。\n\n---\n"
    page = parse_bytes("t.md", text.encode())
    assert page.listings, page.rejects
    back = pickle.loads(pickle.dumps(page, protocol=protocol))
    assert back == page and back.listings[0].prov == page.listings[0].prov


@given(
    st.one_of(
        st.text(alphabet=["\r", "\n", "a"], max_size=30),
        st.text(alphabet=["\n", "a", "学"], max_size=30),  # LF alone: the pages' usual way
    ),
    st.data(),
)
def test_line_numbers_counted_and_looked_up_agree(text: str, data: st.DataObject) -> None:
    """A page counts its first few line numbers and then builds a list of line starts:
    both ways give each offset the line ``split_lines`` puts it on."""
    line_of = {
        i: ln.number for ln in split_lines(text) for i in range(ln.start, ln.start + len(ln.text))
    }
    offsets = data.draw(st.lists(st.integers(-2, len(text) + 2), min_size=1, max_size=12))
    page = Page(PageResult("t", "", 0, None, None), text, Locator(text, "utf-8", 0))
    breaks = [m.end() for m in LINE_BREAK.finditer(text)]
    for offset in offsets:
        want = bisect_right(breaks, offset) + 1
        assert page.line_number(offset) == want == line_at(text, offset)
        if 0 <= offset < len(text) and text[offset] not in "\r\n":
            assert want == line_of[offset]


def test_the_memos_keep_no_long_text() -> None:
    """A text over MEMO_CHARS is never remembered, so a few hostile 100k-character lines
    cannot hold hundreds of megabytes."""
    from ingest.extract.parse import common as lines
    from ingest.normalize import text, urls
    from ingest.normalize import text as memo

    memos = [lines.is_summary_line, urls._checked_seen, text.cleaned_plain, text.key_of]
    before = [len(m.seen) for m in memos]
    for n in range(3):
        long = f"{n}摘要，" * (memo.MEMO_CHARS // 3 + 1)
        lines.is_summary_line(long)
        urls.checked_url("https://x.example/" + long)
        text.clean(long)
        text.key_of(long)
    assert [len(m.seen) for m in memos] == before


def test_a_memo_holds_no_more_than_its_budget_and_remembers_within_it() -> None:
    from ingest.normalize.text import MEMO_CHARS, text_memo

    calls: list[str] = []

    def upper(s: str) -> str:
        calls.append(s)
        return s.upper()

    once = text_memo(upper, budget=10 * MEMO_CHARS)
    texts = [f"{n:04d}" + "x" * (MEMO_CHARS - 4) for n in range(25)]
    for t in texts[:10]:
        assert once(t) == t.upper()
    assert [once(t) for t in texts[:10]] == [t.upper() for t in texts[:10]]
    assert len(calls) == 10  # within the budget: each text computed once
    for t in texts:
        once(t)
        assert sum(map(len, once.seen)) <= 10 * MEMO_CHARS
    assert once("short") == "SHORT" and once("short") == "SHORT" and calls[-1] == "short"
    assert calls.count("short") == 1


_BREAKY = st.text(alphabet=["\r", "\n", "a", "学", " "], max_size=40)


def _plain_split_lines(text: str) -> list[tuple[str, int, int]]:
    """split_lines the plain way: one regex over the text."""
    out, start, number = [], 0, 1
    for m in LINE_BREAK.finditer(text):
        out.append((text[start : m.start()], start, number))
        start, number = m.end(), number + 1
    if start < len(text):
        out.append((text[start:], start, number))
    return out


@given(_BREAKY)
def test_lines_split_with_str_split_are_the_regexs_lines(text: str) -> None:
    assert [tuple(ln) for ln in split_lines(text)] == _plain_split_lines(text)
    assert line_pieces(text) == LINE_BREAK.split(text)


@given(_BREAKY, st.data())
def test_the_next_line_break_found_with_find_is_the_regexs(text: str, data: st.DataObject) -> None:
    pos = data.draw(st.integers(0, len(text)))
    stop = data.draw(st.integers(pos, len(text)))
    m = LINE_BREAK.search(text, pos, stop)
    assert next_break(text, pos, stop) == (None if m is None else (m.start(), m.end()))


_HEADING = re.compile(r"[ \t\ufeff]*#[ \t]")
_HEADING_AFTER_BREAK = re.compile(r"[\r\n][ \t\ufeff]*#[ \t]")


def _plain_heading_starts(text: str, before: int) -> list[int]:
    """Where '# ' heading lines start, as the topic frame found them with two patterns."""
    starts = [0] if _HEADING.match(text, 0, before) else []
    starts += [m.start() + 1 for m in _HEADING_AFTER_BREAK.finditer(text, 0, before)]
    return starts


_HEADINGISH = st.lists(st.sampled_from(["#", " ", "\t", "\ufeff", "\r", "\n", "\r\n", "a", "# "]))


@given(_HEADINGISH, st.data())
@example(["# ", "a"], None)  # a heading at the very start
@example(["a", "#", "#", " "], None)  # '##': no heading
def test_heading_lines_found_with_rfind_are_the_patterns(parts: list[str], data: Any) -> None:
    text = "".join(parts)
    befores = range(len(text) + 1) if data is None else [data.draw(st.integers(0, len(text)))]
    for before in befores:
        found = list(heading_starts(text, before))
        assert found[::-1] == _plain_heading_starts(text, before), (text, before)


@given(st.lists(st.sampled_from(["\r", "\n", "\r\n", "a", "学", "\udcff", "𠀀"]), max_size=30))
def test_byte_offsets_and_lines_of_the_locator_agree_with_the_plain_way(parts: list[str]) -> None:
    text = "".join(parts)
    loc = Locator(text, "utf-8", 0)
    for offset in sorted({0, *range(0, len(text) + 1, 3), len(text)}):
        byte = len(text[:offset].encode("utf-8", errors="surrogateescape"))
        lines = len(LINE_BREAK.findall(text[:offset])) + 1  # a CR before the offset ends one
        assert loc.at(offset) == (byte, lines)


def test_a_page_told_its_bytes_are_clean_by_the_decoder_finds_the_same() -> None:
    """The decoder says whether invalid bytes were kept: a damaged file is still refused
    where its bad byte is, a clean one is not searched for them."""
    summary = "第一条摘要，" * 100 + "。"
    good = f"# T\n\n1. [标题](https://x.example/a)（论文 · 入门）：{summary}\n\n---\n".encode()
    bad = good.replace("第一条".encode(), b"\xff\xfe", 1)
    assert not parse_bytes("good.md", good).rejects
    assert [r.reason for r in parse_bytes("bad.md", bad).rejects] == ["INVALID_UTF8"]


def _plain_decode_utf8(data: bytes, bom_len: int, encoding: str) -> Decoded:
    """``_decode_utf8`` the plain way: every bad byte counted before GB18030 is tried."""
    body = data[bom_len:]
    try:
        return Decoded(body.decode("utf-8"), encoding, "utf-8", bom_len)
    except UnicodeDecodeError as e:
        first_bad = e.start + bom_len
    cut = incomplete_utf8_tail(body)
    text = body.decode("utf-8", errors="surrogateescape")
    invalid = len(ESCAPED_BYTE.findall(text))
    if invalid == cut:
        return Decoded(text, encoding, "utf-8", bom_len, invalid_bytes=invalid, cut_tail=cut)
    gb = _try_gb18030(body) if not bom_len else None
    if isinstance(gb, Decoded):
        return gb
    if (invalid - cut) * 200 <= len(body):
        return Decoded(text, encoding, "utf-8", bom_len, invalid_bytes=invalid, cut_tail=cut)
    reason = "ENCODING_UNDECODABLE" if bom_len or gb is None else gb[0]
    return Decoded(None, None, None, bom_len, reason, f"{first_bad}")


_PIECES = st.one_of(
    st.text(max_size=30).map(lambda s: s.encode("utf-8", "surrogatepass")),
    st.sampled_from(["模型服务与算力，", "推荐阅读：", "中文摘要。"]).map(
        lambda s: s.encode("gb18030")
    ),
    st.binary(max_size=4),
    st.sampled_from(["学", "😀", "é"]).map(lambda s: s.encode()[:-1]),  # a character cut short
)


@given(st.sampled_from([b"", b"\xef\xbb\xbf"]), st.lists(_PIECES, max_size=12))
def test_utf8_decoding_tries_gb18030_first_and_decides_as_the_plain_way(
    bom: bytes, pieces: list[bytes]
) -> None:
    data = bom + b"".join(pieces)
    if not data:
        return
    got, plain = _decode_utf8(data, len(bom), "utf-8"), _plain_decode_utf8(data, len(bom), "utf-8")
    assert (got.text, got.encoding, got.invalid_bytes, got.cut_tail, got.reason) == (
        plain.text,
        plain.encoding,
        plain.invalid_bytes,
        plain.cut_tail,
        plain.reason,
    )


def test_every_character_cleaning_removes_is_unprintable() -> None:
    """A printable text skips the search for removable characters: that holds only while
    no printable character is one of them (every code point checked)."""
    from ingest.normalize.text import _REMOVED_RE

    printable = "".join(c for c in map(chr, range(0x110000)) if c.isprintable())
    assert _REMOVED_RE.search(printable) is None
