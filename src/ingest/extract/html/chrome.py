"""Site chrome: what a saved page carries around its content, removed before rendering.

The page's content is its ``main`` element (or ``role="main"``), else its only ``article``,
else the whole body. Removed, with their subtrees:

* everything outside the content, but for the ancestors that lead to it;
* inside it: ``nav`` and ``search``; elements with the ARIA role navigation, search,
  banner, contentinfo or complementary; cookie, consent, share, social, breadcrumb,
  copyright, search and table-of-contents (``toc``) blocks (told by their ``class``, ``id``
  or ``aria-label``); ``header`` and ``footer`` that belong to the
  whole page (no ``article``, ``aside``, ``main``, ``nav`` or ``section`` around them: the
  site's banner and footer, not a section's own) and ``aside`` that belongs to the page or
  its ``main`` (a sidebar, not an article's or a section's aside), as HTML-AAM maps them
  to the banner, contentinfo and complementary roles.

A block that carries one of the page's own structural marks is never removed, wherever it
is: the topic header's ``所属：`` / ``网站：``, a ``条精选`` stats line, a ``publisher··age``
byline, ``推荐阅读`` and the footer's ``来源：`` (a site footer that holds the page's
notice and source stays, as does a topic header in the site's ``header``). The text of a
link to a place on the same page (``href="#…"``: a table of contents' entry) names that
place and carries no mark.

Two passes over the same tree walk, linear in the number of events: the first finds the
content and where each element's text lies, the second drops subtrees as it streams.
"""

from __future__ import annotations

import re
from array import array
from bisect import bisect_left
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Final

from .tree import END, START, TEXT, Attrs, Event

_PAGE_MARK: Final = re.compile(r"所属\s*[：:]|网站\s*[：:]|条精选|··|推荐阅读|来源\s*[：:]")
_CHROME_ROLES: Final = frozenset(["navigation", "search", "banner", "contentinfo", "complementary"])
_CHROME_NAME: Final = re.compile(
    r"(?:^|[\s_-])(?:cookies?|consent|gdpr|share|sharing|social|breadcrumbs?|copyright|search"
    r"|toc)(?:$|[\s_-])",
    re.IGNORECASE,
)
_CHROME_LABEL: Final = re.compile(r"cookie|share|breadcrumb|分享|面包屑", re.IGNORECASE)
_CHROME_TAGS: Final = frozenset(["nav", "search"])
_LANDMARKS: Final = frozenset(["header", "footer"])
_SECTIONING: Final = frozenset(["article", "aside", "main", "nav", "section"])
_SECTIONS: Final = _SECTIONING - {"main"}  # what makes an aside a section's own


@dataclass(slots=True)
class _Layout:
    """What the first pass learns, per start event in order (its ordinal)."""

    text_start: array[int] = field(default_factory=lambda: array("q"))
    text_end: array[int] = field(default_factory=lambda: array("q"))
    content: int | None = None  # ordinal of the content element; None: the whole page
    ancestors: frozenset[int] = frozenset()
    mark_starts: list[int] = field(default_factory=list)
    mark_ends: list[int] = field(default_factory=list)

    def marked(self, k: int) -> bool:
        """Does element ``k``'s text hold a structural mark of the page?"""
        i = bisect_left(self.mark_starts, self.text_start[k])
        return i < len(self.mark_starts) and self.mark_ends[i] <= self.text_end[k]

    def has_text(self, k: int, text: str) -> bool:
        return bool(text[self.text_start[k] : self.text_end[k]].strip())


def strip_chrome(walk: Callable[[], Iterator[Event]]) -> tuple[list[Event], list[str]]:
    """The events of ``walk()`` without site chrome, and a label for each removed block
    that had visible text. ``walk`` is called twice and must yield the same events."""
    layout, text = _layout(walk())
    state = _Stream(layout)
    kept: list[Event] = []
    removed: list[str] = []
    for event in walk():
        kind, name, attrs = event
        if state.skip:
            state.skipped(kind)
            continue
        if kind == START:
            k = state.next_start()
            if state.drop(k, name, attrs):
                if layout.has_text(k, text):
                    removed.append(_label(name, attrs))
                state.skip = 1
                continue
            state.open(k, name)
        elif kind == END:
            state.close()
        elif not state.in_content():
            continue  # text directly inside the content's ancestors: outside the content
        kept.append(event)
    return kept, removed


@dataclass(slots=True)
class _Stream:
    """The second pass's state: the kept open elements and how deep a skip goes."""

    layout: _Layout
    opened: list[tuple[bool, str]] = field(default_factory=list)  # (in content, tag)
    sectioning: int = 0  # kept open sectioning elements (article, aside, main, nav, section)
    sections: int = 0  # the same but main
    k: int = -1  # ordinal of the last start event
    skip: int = 0  # depth inside a removed subtree

    def next_start(self) -> int:
        self.k += 1
        return self.k

    def skipped(self, kind: int) -> None:
        if kind == START:
            self.k += 1
            self.skip += 1
        elif kind == END:
            self.skip -= 1

    def in_content(self) -> bool:
        return (bool(self.opened) and self.opened[-1][0]) or self.layout.content is None

    def open(self, k: int, tag: str) -> None:
        self.sectioning += tag in _SECTIONING
        self.sections += tag in _SECTIONS
        self.opened.append((k not in self.layout.ancestors, tag))

    def close(self) -> None:
        if self.opened:
            tag = self.opened.pop()[1]
            self.sectioning -= tag in _SECTIONING
            self.sections -= tag in _SECTIONS

    def drop(self, k: int, tag: str, attrs: Attrs) -> bool:
        """Remove element ``k`` and its subtree? (See the module docstring.)"""
        layout = self.layout
        if layout.marked(k):
            return False
        if layout.content is not None and k != layout.content and not self.in_content():
            return k not in layout.ancestors
        if tag in _CHROME_TAGS or _roles(attrs) & _CHROME_ROLES:
            return True
        names = f"{attrs.get('class') or ''} {attrs.get('id') or ''}"
        if _CHROME_NAME.search(names) or _CHROME_LABEL.search(attrs.get("aria-label") or ""):
            return True
        if tag == "aside":
            return not self.sections
        return tag in _LANDMARKS and not self.sectioning


def _layout(events: Iterator[Event]) -> tuple[_Layout, str]:
    layout = _Layout()
    chunks: list[str] = []
    marked: list[str] = []  # the same text, a same-page link's text blanked
    links: list[bool] = []  # per open ``a``: does it link to a place on the same page?
    size = 0
    stack: list[int] = []
    main: tuple[int, list[int]] | None = None
    article: tuple[int, list[int]] | None = None
    articles = 0
    for kind, name, attrs in events:
        if kind == TEXT:
            chunks.append(name)
            marked.append(" " * len(name) if any(links) else name)
            size += len(name)
        elif kind == START:
            if name == "a":
                links.append((attrs.get("href") or "").lstrip().startswith("#"))
            k = len(layout.text_start)
            layout.text_start.append(size)
            layout.text_end.append(size)
            if main is None and (name == "main" or "main" in _roles(attrs)):
                main = (k, stack[:])
            elif name == "article":
                articles += 1
                article = article or (k, stack[:])
            stack.append(k)
        elif stack:
            layout.text_end[stack.pop()] = size
            if name == "a" and links:
                links.pop()
    content = main or (article if articles == 1 else None)
    if content is not None:
        layout.content, layout.ancestors = content[0], frozenset(content[1])
    text = "".join(chunks)
    for m in _PAGE_MARK.finditer("".join(marked)):
        layout.mark_starts.append(m.start())
        layout.mark_ends.append(m.end())
    return layout, text


def _roles(attrs: Attrs) -> set[str]:
    return set((attrs.get("role") or "").lower().split())


def _label(tag: str, attrs: Attrs) -> str:
    cls = (attrs.get("class") or "").split()
    return f"{tag}.{cls[0]}" if cls else tag
