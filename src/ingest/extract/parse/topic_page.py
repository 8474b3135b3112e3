"""Topic page (markdown, flattened onto one line or not): header, listings, footer.

A listing is ``N. [title](url)（kind · level）：summary`` (heads: :mod:`.listing_heads`);
its summary runs to the next listing or the footer, but never over a line that follows a
finished sentence or reads like site furniture. Where the page starts and ends, and what
lies outside its structure, is :mod:`.topic_frame`'s to say; such lines are skipped with a
warning (LINES_SKIPPED), never read into a header, a title or a summary.
"""

from __future__ import annotations

import re
from functools import lru_cache

from ...normalize.text import clean, md_unescape
from ...records.internal import Listing
from ...records.vocab import KINDS, LEVELS
from .base import MAX_LISTINGS, Page, ends_sentence, next_break
from .lines import is_furniture, split_furniture
from .listing_heads import Head, accepted_heads, ambiguous, broken_heads, valid_heads
from .topic_frame import Frame, footer_end, locate
from .topic_header import find_footer, parse_footer, parse_header

_META_SEP = re.compile(r"\s*[·・•]\s*")


def parse_topic_page(page: Page) -> None:
    text = page.text
    valid = valid_heads(text)
    frame = locate(text, valid[0].start if valid else None)
    page.result.header = parse_header(page, text[slice(*frame.header)]) if frame.header else None
    if frame.header is None:
        page.warn("HEADER_MISSING", "file", "no '# ' heading or header fields: topic unknown")
    heads = accepted_heads(page, [h for h in valid if h.start >= frame.body])
    footer = find_footer(page, text, heads[-1].end if heads else frame.body)
    if not heads:
        page.warn("NO_LISTINGS", "file", "a topic page without any listing")
    end = footer if footer is not None else len(text)
    broken = broken_heads(text, frame.body, heads, end)
    starts = sorted([h.start for h in heads[:MAX_LISTINGS]] + list(broken))
    _skip_before_listings(page, frame, starts[0] if starts else end)
    _mark(page, frame, heads, footer)
    if footer is None:
        page.warn("FOOTER_MISSING", "file", "no '---' footer: the page may be truncated")
    else:
        _footer(page, footer)
    unsure = ambiguous(heads)
    stop_of = dict(zip(starts, [*starts[1:], end], strict=False))
    for i, head in enumerate(heads[:MAX_LISTINGS]):
        stop = stop_of[head.start]
        if footer is None and stop == end:
            reason: str | None = "TRUNCATED_ITEM"
        elif head.start in unsure:
            reason = "AMBIGUOUS_BOUNDARY"
        else:
            reason, stop = None, _summary_end(page, head, stop)
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


def _mark(page: Page, frame: Frame, heads: list[Head], footer: int | None) -> None:
    for name in frame.marks:
        page.mark(name)
    if heads:
        page.mark("listings")
    if footer is not None:
        page.mark("footer")


def _footer(page: Page, footer: int) -> None:
    """Read the footer up to its source line (site furniture inside it skipped); what
    follows it belongs to no structure."""
    end, has_source = footer_end(page.text, footer)
    raw = page.text[footer + 3 : end]  # after the '---'
    lines = page.lines_in(footer + 3, end)
    kept, furniture = split_furniture(lines)
    if furniture:
        page.skip(furniture, "of site furniture in the footer")
        raw = " ".join(ln.text for ln in kept)
    parse_footer(page, raw)
    if has_source:
        page.mark("source")
    page.skip(page.lines_in(end, len(page.text)), "after the page's footer")


def _skip_before_listings(page: Page, frame: Frame, first: int) -> None:
    """Skip what precedes the page's first mark, and what lies between its header and its
    first listing other than the section line."""
    page.skip(page.lines_in(0, frame.start), "before the page's first structural mark")
    gap = page.lines_in(frame.header[1] if frame.header else frame.start, first)
    sec = frame.section
    rest = [ln for ln in gap if sec is None or not ln.start <= sec < ln.start + len(ln.text)]
    page.skip(rest, "between the header and the first listing")


def _summary_end(page: Page, head: Head, stop: int) -> int:
    """Where a listing's summary ends: with its line, or on later lines while the text so
    far leaves a sentence open and the line is no site furniture. A line after a finished
    sentence is not the summary's: it is skipped, up to the next listing or the footer."""
    text, pos, prev = page.text, head.end, ""
    first = next_break(text, pos, stop)
    if first is None or text[first[1] : stop].isspace() or first[1] == stop:
        return stop  # the usual case: nothing but white space after the head's line
    while True:
        nl = next_break(text, pos, stop)
        piece = text[pos : nl[0] if nl is not None else stop]
        if piece.strip():
            if prev and (ends_sentence(prev.rstrip()) or is_furniture(piece)):
                page.skip(page.lines_in(pos, stop), f"after listing {head.number}")
                return pos
            prev = piece
        if nl is None:
            return stop
        pos = nl[1]


_REASONS = {
    "TRUNCATED_ITEM": "last listing of a page without its footer: it may be cut short",
    "ITEM_MALFORMED": "listing head is not '[title](url)（kind · level）：'",
    "AMBIGUOUS_BOUNDARY": "two listings numbered alike: one may be text inside this listing's "
    "summary, so where it ends is not known",
}


# --------------------------------------------------------------------------- listings


def _emit(page: Page, head: Head, raw_summary: str, ordinal: int, reason: str | None) -> None:
    where = f"listing {head.number}"
    if reason is not None:
        page.reject(head.start, where, reason, _REASONS[reason], _raw(page, head, raw_summary))
        return
    size = head.end - head.start + len(raw_summary)
    problem = page.bad_raw(_raw(page, head, raw_summary)) if page.may_be_bad(size) else None
    summary = page.field(raw_summary, where, markdown=True) if problem is None else ""
    if problem is None and not summary:
        problem = ("MISSING_FIELD", "the listing has no summary")
    if problem is not None:
        page.reject(head.start, where, problem[0], problem[1], _raw(page, head, raw_summary))
        return
    title = page.field(head.title, where, markdown=True)
    if not title:
        page.warn("TITLE_EMPTY", where)
    kind, level, problems = _read_meta(head.meta)
    for code, detail in problems:
        page.warn(code, where, detail)
    url = page.url(md_unescape(head.url), where) if head.url else None
    topic = page.result.header.slug if page.result.header else None
    page.add(  # in field order: a Struct built from positions skips matching keywords
        Listing(
            page.prov(head.start, where),
            ordinal,
            summary,
            title or None,
            None,  # title_original
            False,  # original_is_chinese
            url,
            kind,
            level,
            head.number,
            topic,
        )
    )


def _raw(page: Page, head: Head, raw_summary: str) -> str:
    """The listing's raw text, head included (for a reject's excerpt and checks)."""
    return page.text[head.start : head.end] + raw_summary


@lru_cache(maxsize=1024)  # pure; a page has a handful of distinct '类型 · 级别' blocks
def _read_meta(raw: str) -> tuple[str | None, str | None, tuple[tuple[str, str], ...]]:
    """Kind, level and the warnings ``（kind · level）`` gives: (code, detail) each."""
    parts = [p for p in _META_SEP.split(clean(raw)) if p]
    problems = []
    if len(parts) != 2:
        problems.append(("BAD_META", f"expected '类型 · 级别', got {raw!r}"))
    kind = parts[0] if parts else None
    level = parts[1] if len(parts) > 1 else None
    if kind is not None and kind not in KINDS:
        problems.append(("UNKNOWN_KIND", f"{kind!r} is not a known kind; kind 'other'"))
    if level is not None and level not in LEVELS:
        problems.append(("UNKNOWN_LEVEL", f"{level!r} is not a known level"))
    return kind, level, tuple(problems)
