"""Rendering: start/text/end events into lines (see :mod:`ingest.extract.html`).

Each line keeps what the markup said of it apart from its text: the heading it is
(``h1``..``h6``), the list item it opens and the item it belongs to. :mod:`.views` writes
the lines in the dump shape of a page kind.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Final, NamedTuple

from ...normalize.text import BLOCK_TAGS
from .tree import START, TEXT, Attrs, Event

_BLOCK: Final = BLOCK_TAGS
_HEADING_LEVEL: Final = {f"h{level}": level for level in range(1, 7)}
_UNORDERED: Final = frozenset({"ul", "menu", "dir"})
_CELLS: Final = frozenset({"td", "th"})
_HTML_SPACE: Final = " \t\n\r\f"
_COLLAPSE: Final = re.compile(r"[ \t\n\r\f]+")
_MD_SPECIAL: Final = re.compile(r"([\\\[\]()])")
_LEADING_INT: Final = re.compile(r"\s*([+-]?\d{1,9})")
_URL_STRIP: Final = "".join(chr(code) for code in range(0x21))


class Line(NamedTuple):
    """One rendered line."""

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
    ``[text](href)``; without, every link is its text (and a link holding blocks, a card
    made a link, its lines)."""
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
    """Turns balanced start/text/end events into lines."""

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
        if not self._pre:
            self._put(data)
            return
        for index, part in enumerate(data.split("\n")):
            if index:
                self._newline()
            self._put(part)

    def start(self, tag: str, attrs: Attrs) -> None:
        if tag == "a":
            self._open_link(attrs)
            return
        if tag in _BLOCK:
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
        if tag in _BLOCK:
            self._newline()
        if tag == "ol" or tag in _UNORDERED:
            if self._lists:
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
            return self._open_item(attrs)
        return ""

    def _open_item(self, attrs: Attrs) -> str:
        current = self._lists[-1] if self._lists else None
        ordered = current is not None and current.ordered
        self._items.append((self._opened, ordered))
        self._opened += 1
        if current is None or not ordered:
            return "- "
        number = _int_attr(attrs, "value", current.next_number)
        current.next_number = number + 1
        return f"{number}. "

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
        self._put(f"{lead}[{_md_escape(label)}]({link.href}){trail}")

    def _put(self, data: str) -> None:
        if self._link is not None:
            self._link.parts.append(data)
        else:
            self._buf.append(data)

    def _newline(self) -> None:
        if self._link is not None:
            self._link.parts.append(" ")
            return
        line = _COLLAPSE.sub(" ", "".join(self._buf)).strip(" ")
        self._buf.clear()
        if line.strip():
            self._lines.append(Line(line, self._heading, self._marker, *self._item()))
            self._heading, self._marker = 0, ""


def _md_escape(label: str) -> str:
    return _MD_SPECIAL.sub(r"\\\1", label)


def _int_attr(attrs: Attrs, name: str, default: int) -> int:
    """Parse an integer attribute the lenient way browsers do (leading digits count)."""
    match = _LEADING_INT.match(attrs.get(name) or "")
    return int(match.group(1)) if match else default


def _clean_href(raw: str | None) -> str:
    """The href as written, minus what URL parsing drops (outer controls/space, tab, LF, CR)."""
    if raw is None:
        return ""
    return raw.translate({9: None, 10: None, 13: None}).strip(_URL_STRIP)
