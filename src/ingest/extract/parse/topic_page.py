"""Topic page (markdown, flattened onto one line or not): header, listings, footer.

A listing is ``N. [title](url)（kind · level）：summary``. The scanner is linear: candidate
starts come from one simple regex, each is checked by a bounded hand-written scanner that
honours backslash escapes and nested brackets, and a summary runs to the next accepted
start. A candidate inside a summary (``见 6. [x]``) is accepted only when the full grammar
matches and the numbering says it is the next listing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ...normalize.text import clean, md_unescape
from ...records.internal import Listing
from ...records.vocab import KINDS, LEVELS
from .base import MAX_LISTINGS, Page
from .topic_header import CANDIDATE, find_footer, header_end, parse_footer, parse_header

_META_SEP = re.compile(r"\s*[·・•]\s*")
#: Anything numbered like a listing, also with full-width digits (which are never valid).
_LOOSE = re.compile(r"(?<!\S)([0-9０-９]{1,6})[.．](?=\s|\[)")
_HEADISH_REACH = 1200  # past the longest title a head may have (1000), to its "]("
_HEADISH = re.compile(r"\]\(|[（(][^（()）\n]{0,30}[·・•][^（()）\n]{0,30}[）)]\s?[：:]")

# A listing head. Link text honours backslash escapes and up to two levels of nested
# brackets, the link target one level of parentheses; every repetition is possessive and
# bounded, and alternatives differ in their first character, so a match never backtracks.
_TEXT = r"(?:\\.|[^\[\]\\\n])"
_HEAD = re.compile(
    rf"\[((?:{_TEXT}|\[(?:{_TEXT}|\[{_TEXT}{{0,500}}+\]){{0,500}}+\]){{0,1000}}+)\]"
    r"\(((?:[^()\n]|\([^()\n]{0,500}+\)){0,2000}+)\)"
    r"[ \t]*[（(]([^（()）\n]{0,60}+)[）)][ \t]*[：:]"
)


@dataclass(frozen=True, slots=True)
class Head:
    """A parsed listing head: where it starts and ends, and its parts."""

    number: int
    start: int
    end: int
    title: str
    url: str
    meta: str


def parse_topic_page(page: Page) -> None:
    text = page.text
    body_start = header_end(text)
    page.result.header = parse_header(page, text[:body_start])
    heads = _accepted_heads(page, text, body_start)
    footer = find_footer(page, text, heads[-1].end if heads else body_start)
    if not heads:
        page.warn("NO_LISTINGS", "file", "a topic page without any listing")
    if footer is None:
        page.warn("FOOTER_MISSING", "file", "no '---' footer: the page may be truncated")
    else:
        parse_footer(page, text[footer:])
    end = footer if footer is not None else len(text)
    broken = _broken_heads(text, body_start, heads, end)
    ambiguous = _ambiguous(heads)
    starts = sorted([h.start for h in heads[:MAX_LISTINGS]] + list(broken))
    stop_of = dict(zip(starts, [*starts[1:], end], strict=False))
    for i, head in enumerate(heads[:MAX_LISTINGS]):
        stop = stop_of[head.start]
        if footer is None and stop == end:
            reason: str | None = "TRUNCATED_ITEM"
        else:
            reason = "AMBIGUOUS_BOUNDARY" if head.start in ambiguous else None
        _emit(page, head, text[head.end : stop], i, reason)
    for start, number in broken.items():
        cut = footer is None and stop_of[start] == end
        page.reject(
            start,
            f"listing {number}",
            "TRUNCATED_ITEM" if cut else "ITEM_MALFORMED",
            _REASONS["TRUNCATED_ITEM" if cut else "ITEM_MALFORMED"],
            text[start : stop_of[start]],
        )
    if len(heads) > MAX_LISTINGS:
        h = heads[MAX_LISTINGS]
        page.reject(
            h.start,
            f"listing {h.number}",
            "TOO_MANY_ITEMS",
            f"more than {MAX_LISTINGS} listings; the rest of the page is not read",
            text[h.start : h.start + 200],
        )


_REASONS = {
    "TRUNCATED_ITEM": "last listing of a page without its footer: it may be cut short",
    "ITEM_MALFORMED": "listing head is not '[title](url)（kind · level）：'",
    "AMBIGUOUS_BOUNDARY": "two listings numbered alike: one may be text inside this listing's "
    "summary, so where it ends is not known",
}


# --------------------------------------------------------------------------- listings


def _accepted_heads(page: Page, text: str, start: int) -> list[Head]:
    """Candidate heads that pass the grammar, filtered by the numbering (see module doc)."""
    valid = [h for m in CANDIDATE.finditer(text, start) if (h := _scan_head(text, m)) is not None]
    accepted: list[Head] = []
    last = 0
    for i, head in enumerate(valid):
        if head.number not in (last, last + 1) and accepted:
            nxt = valid[i + 1] if i + 1 < len(valid) else None
            if nxt is not None and nxt.number == last + 1:
                page.warn(
                    "AMBIGUOUS_BOUNDARY",
                    f"listing {last}",
                    f"'{head.number}. [' inside a summary kept as text",
                )
                continue
            page.warn("NUMBERING", f"listing {head.number}", f"follows listing {last}")
        accepted.append(head)
        last = head.number
    if accepted and accepted[0].number != 1:
        page.warn("NUMBERING", f"listing {accepted[0].number}", "numbering does not start at 1")
    return accepted


def _ambiguous(heads: list[Head]) -> set[int]:
    """Starts of listings whose extent is unknown: a number given twice in a row means the
    first may be text inside the listing before it (``见 3. [附录]()（博客 · 入门）：``) or a
    duplicate number. The listing before and the first of the pair are not trusted."""
    out: set[int] = set()
    for i in range(1, len(heads)):
        if heads[i].number == heads[i - 1].number:
            out.add(heads[i - 1].start)
            if i >= 2:
                out.add(heads[i - 2].start)
    return out


def _broken_heads(text: str, start: int, heads: list[Head], end: int) -> dict[int, int]:
    """start → number of listings whose head grammar is broken.

    A failed candidate counts only where it still looks like a head (a link or a meta block
    follows) and either has full-width digits (never valid) or sits where the numbering
    expects it (the next number, that number missing): ``见 6. [x]`` stays summary text.
    """
    taken = {h.start for h in heads}
    failed = [
        (m.start(1), int(m.group(1)), not m.group(1).isascii())
        for m in _LOOSE.finditer(text, start, end)
        if m.start(1) not in taken
    ]
    out: dict[int, int] = {}
    bounds = [(h.start, h.number) for h in heads] + [(end, None)]
    i, expect = 0, 1
    for b_start, b_num in bounds:  # one walk over both lists, both sorted by offset
        while i < len(failed) and failed[i][0] < b_start:
            f_start, f_num, full_width = failed[i]
            i += 1
            expected = f_num == expect and (b_num is None or b_num > expect)
            if not (full_width or expected):
                continue
            if _HEADISH.search(text, f_start, min(b_start, f_start + _HEADISH_REACH)):
                out[f_start] = f_num
                expect += int(expected)
        expect = (b_num or 0) + 1
    return out


def has_listing_head(text: str) -> bool:
    """Does a full listing head occur anywhere in ``text``?"""
    return any(_scan_head(text, m) is not None for m in CANDIDATE.finditer(text))


def _scan_head(text: str, m: re.Match[str]) -> Head | None:
    """Check the full head grammar at a candidate: one anchored match, no backtracking."""
    h = _HEAD.match(text, m.end() - 1)
    if h is None:
        return None
    return Head(int(m.group(1)), m.start(1), h.end(), h.group(1), h.group(2), h.group(3))


def _emit(page: Page, head: Head, raw_summary: str, ordinal: int, reason: str | None) -> None:
    where = f"listing {head.number}"
    raw_all = page.text[head.start : head.end] + raw_summary
    if reason is not None:
        page.reject(head.start, where, reason, _REASONS[reason], raw_all)
        return
    problem = page.bad_raw(raw_all)
    summary = page.field(raw_summary, where, markdown=True) if problem is None else ""
    if problem is None and not summary:
        problem = ("MISSING_FIELD", "the listing has no summary")
    if problem is not None:
        page.reject(head.start, where, problem[0], problem[1], raw_all)
        return
    title = page.field(head.title, where, markdown=True)
    if not title:
        page.warn("TITLE_EMPTY", where)
    kind, level = _meta(page, head.meta, where)
    page.add(
        Listing(
            prov=page.prov(head.start, where),
            ordinal=ordinal,
            summary_zh=summary,
            title_zh=title or None,
            url=page.url(md_unescape(head.url), where),
            kind_label=kind,
            level_label=level,
            rank=head.number,
            topic_key=page.result.header.slug if page.result.header else None,
        )
    )


def _meta(page: Page, raw: str, where: str) -> tuple[str | None, str | None]:
    parts = [p for p in _META_SEP.split(clean(raw)) if p]
    if len(parts) != 2:
        page.warn("BAD_META", where, f"expected '类型 · 级别', got {raw!r}")
    kind = parts[0] if parts else None
    level = parts[1] if len(parts) > 1 else None
    if kind is not None and kind not in KINDS:
        page.warn("UNKNOWN_KIND", where, f"{kind!r} is not a known kind; kind 'other'")
    if level is not None and level not in LEVELS:
        page.warn("UNKNOWN_LEVEL", where, f"{level!r} is not a known level")
    return kind, level
