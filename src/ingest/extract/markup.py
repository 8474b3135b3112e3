"""HTML as a stream of events: sniffing a page, walking the trees of selectolax (lexbor)
and BeautifulSoup with an explicit stack, and removing the site's chrome (navigation,
banners, bars) before a page is rendered."""

from __future__ import annotations

import re
from array import array
from bisect import bisect_left
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, TypeVar

from bs4 import BeautifulSoup
from bs4.element import NavigableString, Tag
from selectolax.lexbor import LexborHTMLParser

_SNIFF_CHARS: Final = 1024
_LEADING_JUNK: Final = re.compile(r"(?:\s|<!--.*?-->|<\?xml[^>]*>)+", re.S)
_DOCUMENT_START: Final = re.compile(r"<(?:!doctype\s+html|html|head|body)(?=[\s>/]|\Z)", re.I)
_ANY_TAG: Final = re.compile(r"</?[a-zA-Z][a-zA-Z0-9-]*(?:\s[^<>]*)?/?>")
_MIN_TAGS_FOR_MARKUP: Final = 3


def looks_like_html(text: str) -> bool:
    """Is ``text`` an HTML document rather than a text dump? Its first KiB (after a BOM and
    white space) starts a document (after any comments or XML declaration), or in it
    markup outweighs the visible characters."""
    sample = text.lstrip("\ufeff \t\r\n\f\v")[:_SNIFF_CHARS]
    junk = _LEADING_JUNK.match(sample)
    if _DOCUMENT_START.match(sample[junk.end() :] if junk else sample):
        return True
    tags = _ANY_TAG.findall(sample)
    if len(tags) < _MIN_TAGS_FOR_MARKUP:
        return False
    visible = len("".join(_ANY_TAG.sub(" ", sample).split()))
    return sum(len(tag) for tag in tags) >= visible


_VOID: Final = frozenset(
    "area base br col embed hr img input keygen link meta param source track wbr".split()
)
# Start tags that implicitly close an open element of the same name (<li>a<li>b).
_SELF_CLOSING_SIBLINGS: Final = frozenset(
    """p li dt dd option optgroup tr td th tbody thead tfoot rb rt rp rtc colgroup
    caption""".split()
)
_TAG_SCAN: Final = re.compile(
    r"<!--.*?(?:-->|\Z)"
    r"|<(script|style|textarea|title|xmp|iframe|noembed|noframes)\b[^>]{0,4096}>.*?(?:</\1|\Z)"
    r"|<(/?)([a-zA-Z][^\s/>]{0,64})",
    re.S | re.I,
)


def nests_deeper_than(html: str, limit: int) -> bool:
    """Estimate from the tags alone (no tree built) whether elements nest more than
    ``limit`` deep: it keeps lexbor away from documents that would take it quadratic time,
    and lets every ordinary page through at the cost of a quick count."""
    return _open_tags_bound(html) > limit and _scanned_depth_exceeds(html, limit)


def _open_tags_bound(html: str, chunk: int = 4096) -> int:
    """Most tags open at any chunk boundary, plus that chunk's start tags: cheap, loose."""
    bound = balance = 0
    for offset in range(0, len(html), chunk):
        piece = html[offset : offset + chunk]
        ends = piece.count("</")
        starts = piece.count("<") - ends
        bound = max(bound, balance + starts)
        balance = max(0, balance + starts - ends)
    return bound


def _scanned_depth_exceeds(html: str, limit: int) -> bool:
    depth = 0
    open_count: Counter[str] = Counter()
    for match in _TAG_SCAN.finditer(html):
        name = match.group(3)
        if name is None:
            continue
        name = name.lower()
        if match.group(2):
            if open_count[name]:
                open_count[name] -= 1
                depth -= 1
        elif name not in _VOID and not (name in _SELF_CLOSING_SIBLINGS and open_count[name]):
            open_count[name] += 1
            depth += 1
            if depth > limit:
                return True
    return False


#: Visible text that looks like a tag (written as character references in the HTML).
TAG_LIKE: Final = re.compile(r"<[A-Za-z/!?][^\s<>]{0,30}>?")

START: Final = 0
END: Final = 1
TEXT: Final = 2
Attrs = Mapping[str, str | None]
Event = tuple[int, str, Attrs]
_NO_ATTRS: Final[Attrs] = {}
_N = TypeVar("_N")

_NOT_RENDERED: Final = frozenset(
    """script style noscript template head title svg math-annotation iframe object embed
    canvas audio video datalist textarea select frameset frame""".split()
)
_DISPLAY_NONE: Final = re.compile(
    r"(?:^|;)\s*display\s*:\s*none\s*(?:!\s*important\s*)?(?:;|$)", re.I
)


def _is_invisible(tag: str, attrs: Attrs) -> bool:
    style = attrs.get("style")
    return tag in _NOT_RENDERED or "hidden" in attrs or bool(style and _DISPLAY_NONE.search(style))


def _walk(roots: list[_N], visit: Callable[[_N], tuple[Event | None, list[_N]]]) -> Iterator[Event]:
    """Events in document order, depth-first, without recursion. ``visit`` gives a node's
    event and the children to walk: an element's are wrapped in its start and end events;
    a node without an event (None) contributes its children transparently."""
    stack: list[tuple[_N | None, str]] = [(node, "") for node in reversed(roots)]
    while stack:
        node, closing = stack.pop()
        if node is None:
            yield (END, closing, _NO_ATTRS)
            continue
        event, children = visit(node)
        if event is not None:
            yield event
            if event[0] != START:
                continue
            stack.append((None, event[1]))
        stack.extend((child, "") for child in reversed(children))


def _lexbor_visit(node: Any) -> tuple[Event | None, list[Any]]:
    if node.is_text_node:
        return (TEXT, str(node.text_content or ""), _NO_ATTRS), []
    if not node.is_element_node:
        return None, []
    tag = str(node.tag).lower()
    attrs: dict[str, str | None] = dict(node.attributes)
    if _is_invisible(tag, attrs):
        return None, []
    return (START, tag, attrs), list(node.iter(include_text=True))


def _soup_visit(node: Any) -> tuple[Event | None, list[Any]]:
    if isinstance(node, Tag):
        tag = str(node.name).lower()
        if tag == "head" and node.find("body") is not None:
            # html.parser keeps an unclosed <head> open around the whole page.
            return None, list(node.contents)
        attrs: dict[str, str | None] = {str(k): str(v) for k, v in node.attrs.items()}
        if _is_invisible(tag, attrs):
            return None, []
        return (START, tag, attrs), list(node.contents)
    if type(node) is NavigableString:  # not Comment, Doctype, CData, script text, ...
        return (TEXT, str(node), _NO_ATTRS), []
    return None, []


def lexbor_walk(html: str) -> Callable[[], Iterator[Event]]:
    """Parse ``html`` once with lexbor; each call walks the tree's events anew."""
    root = LexborHTMLParser(html).root
    roots = [] if root is None else [root]
    return lambda: _walk(roots, _lexbor_visit)


def soup_walk(html: str) -> Callable[[], Iterator[Event]]:
    """Parse ``html`` once with BeautifulSoup; each call walks the tree's events anew."""
    roots = list(BeautifulSoup(html, "html.parser", multi_valued_attributes=None).contents)
    return lambda: _walk(roots, _soup_visit)


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
                if text[layout.text_start[k] : layout.text_end[k]].strip():
                    cls = (attrs.get("class") or "").split()
                    removed.append(f"{name}.{cls[0]}" if cls else name)
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
        """Remove element ``k`` and its subtree? Never one holding a mark of the page; else
        all outside the content element (a ``main``, or the only ``article``), chrome by
        tag, role, class, id or label, an ``aside`` outside any section, and a ``header`` or
        ``footer`` outside any sectioning element."""
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
    for m in _PAGE_MARK.finditer("".join(marked)):
        layout.mark_starts.append(m.start())
        layout.mark_ends.append(m.end())
    return layout, "".join(chunks)


def _roles(attrs: Attrs) -> set[str]:
    return set((attrs.get("role") or "").lower().split())
