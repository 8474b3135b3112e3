"""Render an HTML page, its site chrome removed, as dump-format text: markdown (a topic
page's shape) and plain text (a topic list's or an item page's). selectolax renders it;
BeautifulSoup does when the page nests too deep, or selectolax fails or sees no text.
Each rendered :class:`Line` keeps its heading level, the list item it opens and is in."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Final, NamedTuple

from ingest.extract.markup import (
    START,
    TAG_LIKE,
    TEXT,
    Attrs,
    Event,
    lexbor_walk,
    looks_like_html,
    nests_deeper_than,
    soup_walk,
    strip_chrome,
)
from ingest.extract.parse.common import ends_sentence
from ingest.normalize.text import BLOCK_TAGS

_HEADING_LEVEL: Final = {f"h{level}": level for level in range(1, 7)}
_UNORDERED: Final = frozenset({"ul", "menu", "dir"})
_CELLS: Final = frozenset({"td", "th"})
_HTML_SPACE: Final = " \t\n\r\f"
_COLLAPSE: Final = re.compile(r"[ \t\n\r\f]+")
_MD_SPECIAL: Final = re.compile(r"([\\\[\]()])")
_LEADING_INT: Final = re.compile(r"\s*([+-]?\d{1,9})")
_URL_STRIP: Final = "".join(chr(code) for code in range(0x21))


class Line(NamedTuple):
    text: str  # ``---`` for a rule
    heading: int  # 1..6 for the first line of an h1..h6, else 0
    marker: str  # ``- `` or ``N. `` for the first line of a list item, else ""
    item: int  # the innermost list item it is in (in document order), -1 for none
    ordered: bool  # that item is an ordered list's


@dataclass(slots=True)
class _List:
    ordered: bool
    next_number: int = 1


@dataclass(slots=True)
class _Link:
    href: str
    parts: list[str] = field(default_factory=list)
    nested: int = 0


def render_events(events: list[Event], *, links: bool = True) -> list[Line]:
    """The lines of ``events``. With ``links``, a link in an ordered list's item is written
    ``[text](href)``; without, every link is its text (a card made a link: its lines)."""
    renderer = _Renderer()
    for kind, name, attrs in events:
        if kind == TEXT:
            renderer.text(name)
        elif name == "a" and not links:
            continue
        elif kind == START:
            renderer.start(name, attrs)
        else:
            renderer.end(name)
    return renderer.finish()


class _Renderer:
    def __init__(self) -> None:
        self._lines: list[Line] = []
        self._buf: list[str] = []
        self._heading = 0
        self._marker = ""
        self._lists: list[_List] = []
        self._items: list[tuple[int, bool]] = []  # per open li: its number, an ol item?
        self._opened = 0  # list items opened so far
        self._link: _Link | None = None
        self._pre = 0

    def finish(self) -> list[Line]:
        while self._link is not None:
            self._close_link()
        self._newline()
        return self._lines

    def text(self, data: str) -> None:
        for index, part in enumerate(data.split("\n") if self._pre else [data]):
            if index:
                self._newline()
            self._put(part)

    def start(self, tag: str, attrs: Attrs) -> None:
        if tag == "a":
            self._open_link(attrs)
            return
        if tag in BLOCK_TAGS:
            self._newline()
        marker = self._track_open(tag, attrs)
        if tag in _CELLS:
            self._put(" ")
        if self._link is not None:
            return
        if tag == "hr":
            self._lines.append(Line("---", 0, "", *self._item()))
        elif tag in _HEADING_LEVEL:
            self._heading = _HEADING_LEVEL[tag]
        elif marker:
            self._marker = marker

    def end(self, tag: str) -> None:
        if tag == "a":
            self._close_link()
            return
        if tag in BLOCK_TAGS:
            self._newline()
        if (tag == "ol" or tag in _UNORDERED) and self._lists:
            self._lists.pop()
        elif tag == "li" and self._items:
            self._items.pop()
        elif tag == "pre":
            self._pre = max(0, self._pre - 1)
        if self._link is None:  # an empty item or heading leaves no marker behind
            if tag == "li":
                self._marker = ""
            elif tag in _HEADING_LEVEL:
                self._heading = 0

    def _track_open(self, tag: str, attrs: Attrs) -> str:
        """Keep the list, item and pre stacks; return the line marker an ``li`` opens."""
        if tag == "ol":
            self._lists.append(_List(ordered=True, next_number=_int_attr(attrs, "start", 1)))
        elif tag in _UNORDERED:
            self._lists.append(_List(ordered=False))
        elif tag == "pre":
            self._pre += 1
        elif tag == "li":
            current = self._lists[-1] if self._lists else None
            ordered = current is not None and current.ordered
            self._items.append((self._opened, ordered))
            self._opened += 1
            if current is None or not ordered:
                return "- "
            number = _int_attr(attrs, "value", current.next_number)
            current.next_number = number + 1
            return f"{number}. "
        return ""

    def _item(self) -> tuple[int, bool]:
        return self._items[-1] if self._items else (-1, False)

    def _open_link(self, attrs: Attrs) -> None:
        if self._link is not None:
            self._link.nested += 1
        elif self._items and self._items[-1][1]:
            self._link = _Link(href=_clean_href(attrs.get("href")))

    def _close_link(self) -> None:
        link = self._link
        if link is None:
            return
        if link.nested:
            link.nested -= 1
            return
        self._link = None
        raw = "".join(link.parts)
        label = _COLLAPSE.sub(" ", raw).strip(" ")
        if not label.strip():
            self._put(" " if raw else "")
            return
        lead = " " if raw[:1] in _HTML_SPACE else ""
        trail = " " if raw[-1:] in _HTML_SPACE else ""
        escaped = _MD_SPECIAL.sub(r"\\\1", label)
        self._put(f"{lead}[{escaped}]({link.href}){trail}")

    def _put(self, data: str) -> None:
        (self._link.parts if self._link is not None else self._buf).append(data)

    def _newline(self) -> None:
        if self._link is not None:
            self._link.parts.append(" ")
            return
        line = _COLLAPSE.sub(" ", "".join(self._buf)).strip(" ")
        self._buf.clear()
        if line.strip():
            self._lines.append(Line(line, self._heading, self._marker, *self._item()))
            self._heading, self._marker = 0, ""


def _int_attr(attrs: Attrs, name: str, default: int) -> int:
    """Parse an integer attribute the lenient way browsers do (leading digits count)."""
    match = _LEADING_INT.match(attrs.get(name) or "")
    return int(match.group(1)) if match else default


def _clean_href(raw: str | None) -> str:
    """The href as written, minus what URL parsing drops (outer controls/space, tab, LF, CR)."""
    return (raw or "").translate({9: None, 10: None, 13: None}).strip(_URL_STRIP)


def markdown(lines: list[Line]) -> str:
    """``lines`` rendered with links, as markdown."""
    levels = sorted({x.heading for x in lines if x.heading and x.item < 0})
    ranks = {level: rank for rank, level in enumerate(levels, 1)}
    out: list[str] = []
    i = 0
    while i < len(lines):
        line, j = lines[i], i + 1
        if line.ordered:  # an ordered item's lines are one, up to the end of a sentence
            while j < len(lines) and lines[j].item == line.item:
                if ends_sentence(lines[j - 1].text):
                    break
                j += 1
            out.append(line.marker + " ".join(x.text for x in lines[i:j]))
        elif line.heading and line.item < 0:
            out.append("#" * ranks[line.heading] + " " + line.text)
        else:
            out.append(line.marker + line.text)
        i = j
    return "\n".join(out)


def plain(lines: list[Line]) -> str:
    """``lines`` rendered without links, as plain text."""
    sizes = Counter(x.item for x in lines)
    return "\n".join(
        (x.marker if sizes[x.item] == 1 else "") + x.text for x in lines if x.text != "---"
    )


__all__ = [
    "PARSER_BEAUTIFULSOUP",
    "PARSER_SELECTOLAX",
    "HtmlText",
    "html_to_text",
    "looks_like_html",
]

PARSER_SELECTOLAX: Final = "selectolax"
PARSER_BEAUTIFULSOUP: Final = "beautifulsoup"


@dataclass(frozen=True, slots=True)
class HtmlText:
    """The visible text of an HTML page in dump format, with how it was obtained."""

    text: str  # as markdown, the shape of a topic page's dump
    parser: str
    warnings: tuple[str, ...] = ()
    plain: str = ""  # as plain text, the shape of a topic list's or an item page's dump


_LEXBOR_MAX_DEPTH: Final = 2000


def html_to_text(html: str) -> HtmlText:
    warnings: list[str] = []
    if nests_deeper_than(html, _LEXBOR_MAX_DEPTH):
        warnings.append(
            f"markup nests more than {_LEXBOR_MAX_DEPTH} elements deep; "
            "used beautifulsoup instead of selectolax"
        )
    else:
        try:
            text = _render(lexbor_walk(html), warnings)
        except Exception as exc:  # any parser failure means: try the other parser
            warnings.append(f"selectolax failed ({type(exc).__name__}: {exc}); used beautifulsoup")
        else:
            if text[0]:
                return _result(text, PARSER_SELECTOLAX, warnings)
            warnings.append("selectolax found no visible text; used beautifulsoup")
            return _soup_result(html, warnings, trust_markup_like=False)
    return _soup_result(html, warnings)


def _soup_result(html: str, warnings: list[str], *, trust_markup_like: bool = True) -> HtmlText:
    """Render with BeautifulSoup; ``trust_markup_like=False`` drops text that looks like tags:
    when lexbor (a conforming HTML5 parser) found nothing visible, tag-like text from
    ``html.parser`` is markup it failed to parse (an unterminated comment or attribute
    value makes it emit the rest of the document as text), not content."""
    try:
        text = _render(soup_walk(html), warnings)
    except Exception as exc:  # a page neither parser can read yields no text, not a crash
        warnings.append(f"beautifulsoup failed ({type(exc).__name__}: {exc})")
        text = ("", "")
    if text[0] and not trust_markup_like and TAG_LIKE.search(text[0]):
        warnings.append("beautifulsoup returned unparsed markup as text; dropped it")
        text = ("", "")
    if not text[0]:
        warnings.append("no visible text in the HTML")
    return _result(text, PARSER_BEAUTIFULSOUP, warnings)


def _render(walk: Callable[[], Iterator[Event]], warnings: list[str]) -> tuple[str, str]:
    """The page's content, its site chrome removed, as markdown and as plain text."""
    events, removed = strip_chrome(walk)
    lines = render_events(events)
    if removed and not lines:
        warnings.append("every visible text is in site chrome: rendered the whole page")
        events = list(walk())
        lines = render_events(events)
    elif removed:
        shown = ", ".join(removed[:5]) + (", ..." if len(removed) > 5 else "")
        warnings.append(
            f"CHROME_REMOVED: {len(removed)} block(s) of site navigation, banners, bars or "
            f"text outside the page's content not rendered: {shown}"
        )
    return markdown(lines), plain(render_events(events, links=False))


def _result(text: tuple[str, str], parser: str, warnings: list[str]) -> HtmlText:
    tag_like = TAG_LIKE.findall(text[0])
    if tag_like:
        warnings.append(
            f"visible text contains {len(tag_like)} tag-like run(s), first {tag_like[0]!r} "
            "(written as character references in the HTML; kept as text)"
        )
    return HtmlText(text=text[0], parser=parser, warnings=tuple(warnings), plain=text[1])
