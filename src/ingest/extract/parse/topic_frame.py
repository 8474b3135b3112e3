"""Where a topic page's parts are: header, section line, listings, footer.

A topic page starts at its first structural mark: the ``# `` heading that its header fields
(``- 所属：``, ``- 网站：``) follow, else its first header field, its ``##`` section line or
its first listing. It ends with the footer's source line (``来源：NAME（URL）``). What lies
before the start, between the header and the first listing (but the section line) and
after the footer belongs to no structure: the parser skips it with a warning.

A heading that reads like site furniture (``# 登录``) is never the page's heading.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from .lines import is_furniture
from .listing_heads import candidates

SECTION = re.compile(r"(?<!\S)##(?!\S)")
FOOTER = re.compile(r"(?<!\S)---(?!\S)")
HEADER_FIELD = re.compile(r"(?<!\S)-\s*(所属|网站)\s*[：:]\s*")
_SOURCE = re.compile(r"来源\s*[：:]")
_FIELD_MARKS = {"所属": "category", "网站": "website"}


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
    marks += [_FIELD_MARKS[f.group(1)] for f in fields]
    if section is not None:
        marks.append("section")
    body = _after_section(text, section.end()) if section else stop
    return Frame(start, (start, stop), section.start() if section else None, body, _uniq(marks))


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
    ending by ``before``) starts, last first. Each ``#`` is found with ``str.rfind`` and
    its line start walked back to: a pattern that starts with a character class is tried
    at every position (on a page without a header, over the first 64 KiB: 2 % of a parse)."""
    i = text.rfind("#", 0, max(before - 1, 0))  # a negative end counts from the end
    while i != -1:
        j = i
        while j > 0 and text[j - 1] in _INDENT:
            j -= 1
        if (j == 0 or text[j - 1] in "\r\n") and text[i + 1] in " \t":
            yield j
        i = text.rfind("#", 0, i)


_INDENT = " \t\ufeff"


def _after_section(text: str, end: int) -> int:
    """Where the listings start after a '##': the first 'N. [' on its line, else the line end."""
    stop = line_end(text, end)
    first = next(candidates(text, end, stop), None)
    if first is not None:
        return first[0]
    return stop if stop < len(text) else end


def footer_end(text: str, footer: int) -> tuple[int, bool]:
    """Where the footer starting at ``footer`` ends: after the line of its source
    (``来源：…``), else at the end of the text; and whether it has a source."""
    m = _SOURCE.search(text, footer)
    if m is None:
        return len(text), False
    return line_end(text, m.end()), True


def line_start(text: str, offset: int) -> int:
    return max(text.rfind("\n", 0, offset), text.rfind("\r", 0, offset)) + 1


def line_end(text: str, offset: int) -> int:
    """Where the line holding ``offset`` ends (before its CR, LF or CRLF)."""
    lf, cr = text.find("\n", offset), text.find("\r", offset)
    return min(x for x in (lf, cr, len(text)) if x >= 0)


def _last(matches: Iterator[re.Match[str]]) -> re.Match[str] | None:
    found = None
    for found in matches:  # noqa: B007 - the loop keeps the last match
        pass
    return found


def _uniq(names: list[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(names))
