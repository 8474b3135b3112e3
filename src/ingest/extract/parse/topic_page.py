"""Where a topic page's parts are: header, section line, listings, footer.

A topic page starts at its first structural mark: the ``# `` heading that its header fields
(``- 所属：``, ``- 网站：``) follow (never one that reads like site furniture, ``# 登录``),
else its first header field, its ``##`` section line or its first listing. It ends with the
footer's source line (``来源：NAME（URL）``). What lies before the start, between the header
and the first listing (but the section line) and after the footer is skipped with a warning.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache

from ingest.extract.parse.common import (
    MAX_LISTINGS,
    Head,
    Page,
    accepted_heads,
    ambiguous,
    broken_heads,
    candidates,
    ends_sentence,
    is_furniture,
    next_break,
    split_furniture,
    valid_heads,
)
from ingest.normalize.text import clean, match_key, md_unescape
from ingest.normalize.urls import check_url, topic_url, url_slug
from ingest.records import KINDS, LEVELS, Listing, TopicHeader

SECTION = re.compile(r"(?<!\S)##(?!\S)")
FOOTER = re.compile(r"(?<!\S)---(?!\S)")
HEADER_FIELD = re.compile(r"(?<!\S)-\s*(所属|网站)\s*[：:]\s*")
_SOURCE = re.compile(r"来源\s*[：:]")
_FIELD_MARKS = {"所属": "category", "网站": "website"}
_INDENT = " \t\ufeff"
_LINK = re.compile(r"\[((?:\\.|[^\]\\]){0,2000})\]\(([^()\s]{0,2000})\)")
_SITE = re.compile(r"来源\s*[：:]\s*(.+?)\s*[（(]\s*(\S+?)\s*[）)]\s*$")
_META_SEP = re.compile(r"\s*[·・•]\s*")
_REASONS = {
    "TRUNCATED_ITEM": "last listing of a page without its footer: it may be cut short",
    "ITEM_MALFORMED": "listing head is not '[title](url)（kind · level）：'",
    "AMBIGUOUS_BOUNDARY": "two listings numbered alike: one may be text inside this listing's "
    "summary, so where it ends is not known",
}


@dataclass(frozen=True, slots=True)
class Frame:
    """The parts of a topic page before its listings (character offsets)."""

    start: int  # the page's first structural mark
    header: tuple[int, int] | None  # heading and header fields; None: the page has no header
    section: int | None  # where the '##' section line starts
    body: int  # where listings are looked for
    marks: tuple[str, ...]  # the structural marks found, in page order


def locate(text: str, first_listing: int | None) -> Frame:
    """Find the header and section of a topic page whose first valid listing head starts at
    ``first_listing`` (None: it has none)."""
    bound = len(text) if first_listing is None else first_listing
    has_fields = "所属" in text or "网站" in text  # cheap checks before the scans
    fields = list(HEADER_FIELD.finditer(text, 0, bound)) if has_fields else []
    heading = _heading(text, fields[0].start() if fields else bound)
    if heading is None and not fields:
        return _headless(text, bound)
    start = heading if heading is not None else line_start(text, fields[0].start())
    fields = [f for f in fields if f.start() >= start]
    section = _last(SECTION.finditer(text, start, bound)) if "##" in text else None
    after_fields = fields[-1].end() if fields else start + 1
    candidate = next(candidates(text, after_fields, bound), None)
    limit = min(section.start() if section else bound, candidate[0] if candidate else bound, bound)
    stop = min(limit, line_end(text, fields[-1].end())) if fields else limit
    marks = ["heading"] if heading is not None else []
    marks += [_FIELD_MARKS[f.group(1)] for f in fields] + (["section"] if section else [])
    body = _after_section(text, section.end()) if section else stop
    marks_seen = tuple(dict.fromkeys(marks))
    return Frame(start, (start, stop), section.start() if section else None, body, marks_seen)


def _headless(text: str, bound: int) -> Frame:
    """A page with neither heading nor header fields: it starts at its section or listing."""
    section = _last(SECTION.finditer(text, 0, bound)) if "##" in text else None
    start = line_start(text, section.start() if section else bound)
    if section is None:
        return Frame(start, None, None, start, ())
    return Frame(start, None, section.start(), _after_section(text, section.end()), ("section",))


def _heading(text: str, before: int) -> int | None:
    """Start of the last '# ' heading line before ``before`` that is not site furniture."""
    for start in heading_starts(text, before):
        if not is_furniture(text[start : min(line_end(text, start), start + 200)]):
            return start
    return None


def heading_starts(text: str, before: int) -> Iterator[int]:
    """Where each line that starts a '# ' heading (``[ \\t\\ufeff]*#[ \\t]`` at a line start,
    ending by ``before``) starts, last first. Each ``#`` is found with ``str.rfind``: a
    pattern that starts with a character class is tried at every position (2 % of a parse)."""
    i = text.rfind("#", 0, max(before - 1, 0))  # a negative end counts from the end
    while i != -1:
        j = i
        while j > 0 and text[j - 1] in _INDENT:
            j -= 1
        if (j == 0 or text[j - 1] in "\r\n") and text[i + 1] in " \t":
            yield j
        i = text.rfind("#", 0, i)


def _after_section(text: str, end: int) -> int:
    """Where the listings start after a '##': the first 'N. [' on its line, else the line end."""
    stop = line_end(text, end)
    first = next(candidates(text, end, stop), None)
    if first is not None:
        return first[0]
    return stop if stop < len(text) else end


def line_start(text: str, offset: int) -> int:
    return max(text.rfind("\n", 0, offset), text.rfind("\r", 0, offset)) + 1


def line_end(text: str, offset: int) -> int:
    """Where the line holding ``offset`` ends (before its CR, LF or CRLF)."""
    lf, cr = text.find("\n", offset), text.find("\r", offset)
    return min(x for x in (lf, cr, len(text)) if x >= 0)


def _last(matches: Iterator[re.Match[str]]) -> re.Match[str] | None:
    return max(matches, key=lambda m: m.start(), default=None)


def parse_header(page: Page, raw: str) -> TopicHeader:
    sec = SECTION.search(raw)
    raw = raw[: sec.start()] if sec is not None else raw
    raw = raw.lstrip("\ufeff \t\r\n")
    raw = raw[1:] if raw.startswith("#") else raw
    parts = HEADER_FIELD.split(raw)
    fields = {parts[i]: parts[i + 1] for i in range(1, len(parts) - 1, 2)}
    category = _link_text(page, fields.get("所属"))
    url, slug_text = _header_url(page, fields.get("网站"))
    name, desc, keys = _split_name(page, parts[0])
    # the site and the notice come from the footer
    return TopicHeader(_slug(page, slug_text), name, desc, keys, category, url, None, None, None)


def _link_text(page: Page, raw: str | None) -> str | None:
    if raw is None:
        return None
    m = _LINK.search(raw)
    text = m.group(1) if m is not None else raw
    return page.field(text, "header", markdown=True) or None


def _header_url(page: Page, raw: str | None) -> tuple[str | None, str | None]:
    """The topic's URL and the text the slug comes from: the canonical topic URL (the same
    for every variant of the page's URL) when the header gives a usable link, else the raw
    text."""
    if raw is None:
        return None, None
    m = _LINK.search(raw)
    candidates = [md_unescape(m.group(2)), md_unescape(m.group(1))] if m else [raw.strip()]
    for c in candidates:
        url, _ = check_url(c)
        if url is not None:
            canonical = topic_url(url)
            return canonical, canonical
    text = clean(candidates[-1])
    return page.url(text, "header"), text


def _split_name(page: Page, raw: str) -> tuple[str | None, str | None, tuple[str, ...]]:
    """Split '# NAME DESCRIPTION'. A line break decides; on one line the first space does,
    and every later space is kept as a candidate for the join with a topic-list."""
    raw = raw.strip()
    if "\n" in raw or "\r" in raw:
        first, _, rest = raw.replace("\r", "\n").partition("\n")
        name = page.field(first, "header", markdown=True)
        desc = page.field(rest, "header", markdown=True)
        return name or None, desc or None, (match_key(desc),) if desc else ()
    text = page.field(raw, "header", markdown=True)
    if " " not in text:
        return text or None, None, ()
    name, _, desc = text.partition(" ")
    spaces = [i for i, ch in enumerate(text) if ch == " "]
    keys = tuple(match_key(text[i + 1 :]) for i in spaces[:32])
    return name, desc, keys


def _slug(page: Page, url: str | None) -> str:
    if url and (slug := url_slug(url)):
        return slug
    page.warn("SLUG_MISSING", "header", "no usable topic URL; slug derived from the header")
    return ""


def _find_footer(page: Page, text: str, after: int) -> int | None:
    """The first '---' after the last listing head; later ones are warned about."""
    found = [m.start() for m in FOOTER.finditer(text, after)]
    if len(found) > 1:
        why = f"{len(found)} '---' separators after the last listing; the first ends the listings"
        page.warn("FOOTER_REPEATED", "footer", why)
    return found[0] if found else None


def parse_topic_page(page: Page) -> None:
    text = page.text
    valid = valid_heads(text)
    frame = locate(text, valid[0].start if valid else None)
    page.result.header = parse_header(page, text[slice(*frame.header)]) if frame.header else None
    if frame.header is None:
        page.warn("HEADER_MISSING", "file", "no '# ' heading or header fields: topic unknown")
    heads = accepted_heads(page, [h for h in valid if h.start >= frame.body])
    footer = _find_footer(page, text, heads[-1].end if heads else frame.body)
    if not heads:
        page.warn("NO_LISTINGS", "file", "a topic page without any listing")
    end = footer if footer is not None else len(text)
    broken = broken_heads(text, frame.body, heads, end)
    starts = sorted([h.start for h in heads[:MAX_LISTINGS]] + list(broken))
    _skip_before_listings(page, frame, starts[0] if starts else end)
    for name in frame.marks:
        page.mark(name)
    if heads:
        page.mark("listings")
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
        reason = "TRUNCATED_ITEM" if cut else "ITEM_MALFORMED"
        raw = text[start : stop_of[start]]
        page.reject(start, f"listing {number}", reason, _REASONS[reason], raw)
    if len(heads) > MAX_LISTINGS:
        h = heads[MAX_LISTINGS]
        why = f"more than {MAX_LISTINGS} listings; the rest of the page is not read"
        page.reject(h.start, f"listing {h.number}", "TOO_MANY_ITEMS", why, text[h.start :])


def _footer(page: Page, footer: int) -> None:
    """Read the footer's notice and source site, up to its source line (``来源：…``; site
    furniture inside it skipped); what follows it belongs to no structure."""
    page.mark("footer")
    text = page.text
    source = _SOURCE.search(text, footer)
    end = line_end(text, source.end()) if source is not None else len(text)
    raw = text[footer + 3 : end]  # after the '---'
    kept, furniture = split_furniture(page.lines_in(footer + 3, end))
    if furniture:
        page.skip(furniture, "of site furniture in the footer")
        raw = " ".join(ln.text for ln in kept)
    body = clean(raw)
    header = page.result.header
    if header is not None:
        m = _SITE.search(body)
        if m is not None:
            header.site_name = m.group(1)
            header.site_url = page.url(m.group(2), "footer")
            body = body[: body.find("来源")].strip()
        header.notice = body or None
    if source is not None:
        page.mark("source")
    page.skip(page.lines_in(end, len(text)), "after the page's footer")


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
