"""Render saved HTML pages as text in the dump format of their page kind.

A saved ``.html`` page of any page kind (topic-page, topic-list, item-page) is turned into
the text a browser shows (its ``innerText``, in reading order), written with the same
conventions as the text dumps, so that the text parsers read it unchanged:

* ``script``, ``style``, ``noscript``, ``template``, ``head``, ``title``, ``svg``, ``iframe``
  and other non-rendered elements, comments, elements with the ``hidden`` attribute and
  elements with an inline ``display: none`` produce no text;
* block elements start a new line, inline elements stay on it; runs of white space inside a
  line collapse to one space; empty lines are dropped;
* ``h1`` .. ``h6`` become ``# `` .. ``###### `` lines, ``hr`` a ``---`` line;
* ``ul > li`` becomes ``- item``, ``ol > li`` becomes ``N. item`` (``N`` from the list's
  ``start`` or the item's ``value``, counting up);
* an ``a`` inside an ``ol > li`` becomes a markdown link ``[text](href)`` with ``\\ [ ] ( )``
  escaped in the text; every other ``a`` is just its text.

Character references are decoded exactly once, by the HTML parser: ``&amp;lt;b&amp;gt;``
becomes the text ``&lt;b&gt;``, and ``&lt;b&gt;`` becomes the visible text ``<b>`` (kept, as a
browser shows it, and reported in the warnings).

selectolax's lexbor parser is used first. BeautifulSoup (``html.parser``) takes over when
lexbor raises, finds no visible text, or the markup nests so deep that lexbor's tree
builder would take quadratic time. Both trees are walked with an explicit stack, so no
document can exhaust the recursion limit.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, TypeVar

from bs4 import BeautifulSoup
from bs4.element import NavigableString, Tag
from selectolax.lexbor import LexborHTMLParser

from .normalize import BLOCK_TAGS

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

    text: str
    parser: str
    warnings: tuple[str, ...] = ()


# --------------------------------------------------------------------------- sniffing

_SNIFF_CHARS: Final = 1024
_LEADING_JUNK: Final = re.compile(r"(?:\s|<!--.*?-->|<\?xml[^>]*>)+", re.S)
_DOCUMENT_START: Final = re.compile(r"<(?:!doctype\s+html|html|head|body)(?=[\s>/]|\Z)", re.I)
_ANY_TAG: Final = re.compile(r"</?[a-zA-Z][a-zA-Z0-9-]*(?:\s[^<>]*)?/?>")
_MIN_TAGS_FOR_MARKUP: Final = 3


def looks_like_html(text: str) -> bool:
    """Tell cheaply whether ``text`` is an HTML document rather than a text dump.

    Looks at the first KiB after a BOM and leading white space: a doctype, ``<html``,
    ``<head`` or ``<body`` (after any leading comments or XML declaration), or a sample in
    which markup outweighs the visible characters.
    """
    sample = text.lstrip("\ufeff \t\r\n\f\v")[:_SNIFF_CHARS]
    junk = _LEADING_JUNK.match(sample)
    start = sample[junk.end() :] if junk else sample
    if _DOCUMENT_START.match(start):
        return True
    return _markup_dominates(sample)


def _markup_dominates(sample: str) -> bool:
    tags = _ANY_TAG.findall(sample)
    if len(tags) < _MIN_TAGS_FOR_MARKUP:
        return False
    markup = sum(len(tag) for tag in tags)
    visible = len("".join(_ANY_TAG.sub(" ", sample).split()))
    return markup >= visible


# --------------------------------------------------------------------------- entry point

_LEXBOR_MAX_DEPTH: Final = 2000
_TAG_LIKE: Final = re.compile(r"<[A-Za-z/!?][^\s<>]{0,30}>?")


def html_to_text(html: str) -> HtmlText:
    """Render ``html`` as dump-format text (see the module docstring for the rules)."""
    warnings: list[str] = []
    if _nests_deeper_than(html, _LEXBOR_MAX_DEPTH):
        warnings.append(
            f"markup nests more than {_LEXBOR_MAX_DEPTH} elements deep; "
            "used beautifulsoup instead of selectolax"
        )
    else:
        try:
            text = _render(_walk(_lexbor_roots(html), _lexbor_visit))
        except Exception as exc:  # any parser failure means: try the other parser
            warnings.append(f"selectolax failed ({type(exc).__name__}: {exc}); used beautifulsoup")
        else:
            if text:
                return _result(text, PARSER_SELECTOLAX, warnings)
            warnings.append("selectolax found no visible text; used beautifulsoup")
            return _soup_result(html, warnings, trust_markup_like=False)
    return _soup_result(html, warnings)


def _soup_result(html: str, warnings: list[str], *, trust_markup_like: bool = True) -> HtmlText:
    """Render with BeautifulSoup; ``trust_markup_like=False`` drops text that looks like tags.

    When lexbor (a conforming HTML5 parser) found nothing visible, tag-like text from
    ``html.parser`` is markup it failed to parse (an unterminated comment or attribute
    value makes it emit the rest of the document as text), not content.
    """
    try:
        text = _render(_walk(_soup_roots(html), _soup_visit))
    except Exception as exc:  # a page neither parser can read yields no text, not a crash
        warnings.append(f"beautifulsoup failed ({type(exc).__name__}: {exc})")
        text = ""
    if text and not trust_markup_like and _TAG_LIKE.search(text):
        warnings.append("beautifulsoup returned unparsed markup as text; dropped it")
        text = ""
    if not text:
        warnings.append("no visible text in the HTML")
    return _result(text, PARSER_BEAUTIFULSOUP, warnings)


def _result(text: str, parser: str, warnings: list[str]) -> HtmlText:
    tag_like = _TAG_LIKE.findall(text)
    if tag_like:
        warnings.append(
            f"visible text contains {len(tag_like)} tag-like run(s), first {tag_like[0]!r} "
            "(written as character references in the HTML; kept as text)"
        )
    return HtmlText(text=text, parser=parser, warnings=tuple(warnings))


# --------------------------------------------------------------------------- depth guard

_VOID: Final = frozenset(
    [
        "area",
        "base",
        "br",
        "col",
        "embed",
        "hr",
        "img",
        "input",
        "keygen",
        "link",
        "meta",
        "param",
        "source",
        "track",
        "wbr",
    ]
)
# Start tags that implicitly close an open element of the same name (<li>a<li>b).
_SELF_CLOSING_SIBLINGS: Final = frozenset(
    [
        "p",
        "li",
        "dt",
        "dd",
        "option",
        "optgroup",
        "tr",
        "td",
        "th",
        "tbody",
        "thead",
        "tfoot",
        "rb",
        "rt",
        "rp",
        "rtc",
        "colgroup",
        "caption",
    ]
)
_TAG_SCAN: Final = re.compile(
    r"<!--.*?(?:-->|\Z)"
    r"|<(script|style|textarea|title|xmp|iframe|noembed|noframes)\b[^>]{0,4096}>.*?(?:</\1|\Z)"
    r"|<(/?)([a-zA-Z][^\s/>]{0,64})",
    re.S | re.I,
)


def _nests_deeper_than(html: str, limit: int) -> bool:
    """Estimate from the tags alone whether elements nest more than ``limit`` deep.

    A heuristic (no tree is built): it keeps lexbor away from documents that would take
    it quadratic time, and lets every ordinary page through at the cost of a quick count.
    """
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
    open_count: dict[str, int] = {}
    for match in _TAG_SCAN.finditer(html):
        name = match.group(3)
        if name is None:
            continue
        name = name.lower()
        if match.group(2):
            if open_count.get(name):
                open_count[name] -= 1
                depth -= 1
        elif name not in _VOID and not (name in _SELF_CLOSING_SIBLINGS and open_count.get(name)):
            open_count[name] = open_count.get(name, 0) + 1
            depth += 1
            if depth > limit:
                return True
    return False


# --------------------------------------------------------------------------- tree walking

_START: Final = 0
_END: Final = 1
_TEXT: Final = 2
_Attrs = Mapping[str, str | None]
_Event = tuple[int, str, _Attrs]
_NO_ATTRS: Final[_Attrs] = {}
_N = TypeVar("_N")

_NOT_RENDERED: Final = frozenset(
    [
        "script",
        "style",
        "noscript",
        "template",
        "head",
        "title",
        "svg",
        "math-annotation",
        "iframe",
        "object",
        "embed",
        "canvas",
        "audio",
        "video",
        "datalist",
        "textarea",
        "select",
        "frameset",
        "frame",
    ]
)
_DISPLAY_NONE: Final = re.compile(
    r"(?:^|;)\s*display\s*:\s*none\s*(?:!\s*important\s*)?(?:;|$)", re.I
)


def _is_invisible(tag: str, attrs: _Attrs) -> bool:
    if tag in _NOT_RENDERED or "hidden" in attrs:
        return True
    style = attrs.get("style")
    return bool(style) and _DISPLAY_NONE.search(style or "") is not None


def _walk(
    roots: list[_N], visit: Callable[[_N], tuple[_Event | None, list[_N]]]
) -> Iterator[_Event]:
    """Yield start/text/end events in document order, depth-first, without recursion.

    ``visit`` returns a node's event (``None`` to emit nothing) and the children to walk:
    an element's children are wrapped in its start and end events; a node without an
    event contributes its children (if any) transparently.
    """
    stack: list[tuple[_N | None, str]] = [(node, "") for node in reversed(roots)]
    while stack:
        node, closing = stack.pop()
        if node is None:
            yield (_END, closing, _NO_ATTRS)
            continue
        event, children = visit(node)
        if event is not None:
            yield event
            if event[0] != _START:
                continue
            stack.append((None, event[1]))
        stack.extend((child, "") for child in reversed(children))


def _lexbor_roots(html: str) -> list[Any]:
    root = LexborHTMLParser(html).root
    return [] if root is None else [root]


def _lexbor_visit(node: Any) -> tuple[_Event | None, list[Any]]:
    if node.is_text_node:
        return (_TEXT, str(node.text_content or ""), _NO_ATTRS), []
    if not node.is_element_node:
        return None, []
    tag = str(node.tag).lower()
    attrs: dict[str, str | None] = dict(node.attributes)
    if _is_invisible(tag, attrs):
        return None, []
    children = []
    child = node.child
    while child is not None:
        children.append(child)
        child = child.next
    return (_START, tag, attrs), children


def _soup_roots(html: str) -> list[Any]:
    soup = BeautifulSoup(html, "html.parser", multi_valued_attributes=None)
    return list(soup.contents)


def _soup_visit(node: Any) -> tuple[_Event | None, list[Any]]:
    if isinstance(node, Tag):
        tag = str(node.name).lower()
        if tag == "head" and node.find("body") is not None:
            # html.parser keeps an unclosed <head> open around the whole page.
            return None, list(node.contents)
        attrs: dict[str, str | None] = {str(k): str(v) for k, v in node.attrs.items()}
        if _is_invisible(tag, attrs):
            return None, []
        return (_START, tag, attrs), list(node.contents)
    if type(node) is NavigableString:  # not Comment, Doctype, CData, script text, ...
        return (_TEXT, str(node), _NO_ATTRS), []
    return None, []


# --------------------------------------------------------------------------- rendering

_BLOCK: Final = BLOCK_TAGS
_HEADING_LEVEL: Final = {f"h{level}": level for level in range(1, 7)}
_UNORDERED: Final = frozenset({"ul", "menu", "dir"})
_CELLS: Final = frozenset({"td", "th"})
_HTML_SPACE: Final = " \t\n\r\f"
_COLLAPSE: Final = re.compile(r"[ \t\n\r\f]+")
_MD_SPECIAL: Final = re.compile(r"([\\\[\]()])")
_LEADING_INT: Final = re.compile(r"\s*([+-]?\d{1,9})")
_URL_STRIP: Final = "".join(chr(code) for code in range(0x21))


@dataclass(slots=True)
class _List:
    ordered: bool
    next_number: int = 1


@dataclass(slots=True)
class _Link:
    href: str
    parts: list[str] = field(default_factory=list)
    nested: int = 0


def _render(events: Iterable[_Event]) -> str:
    renderer = _Renderer()
    for kind, name, attrs in events:
        if kind == _TEXT:
            renderer.text(name)
        elif kind == _START:
            renderer.start(name, attrs)
        else:
            renderer.end(name)
    return renderer.finish()


class _Renderer:
    """Turns balanced start/text/end events into dump-format lines."""

    def __init__(self) -> None:
        self._lines: list[str] = []
        self._buf: list[str] = []
        self._prefix = ""
        self._lists: list[_List] = []
        self._items: list[bool] = []  # per open li: is it an ol item?
        self._link: _Link | None = None
        self._pre = 0

    def finish(self) -> str:
        while self._link is not None:
            self._close_link()
        self._newline()
        return "\n".join(self._lines)

    def text(self, data: str) -> None:
        if not self._pre:
            self._put(data)
            return
        for index, part in enumerate(data.split("\n")):
            if index:
                self._newline()
            self._put(part)

    def start(self, tag: str, attrs: _Attrs) -> None:
        if tag == "a":
            self._open_link(attrs)
            return
        marker = self._track_open(tag, attrs)
        if tag in _BLOCK:
            self._newline()
        if tag in _CELLS:
            self._put(" ")
        if self._link is not None:
            return
        if tag == "hr":
            self._lines.append("---")
        elif tag in _HEADING_LEVEL:
            self._prefix = "#" * _HEADING_LEVEL[tag] + " "
        elif marker:
            self._prefix = marker

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
        if (tag == "li" or tag in _HEADING_LEVEL) and self._link is None:
            self._prefix = ""  # an empty item or heading leaves no marker behind

    def _track_open(self, tag: str, attrs: _Attrs) -> str:
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

    def _open_item(self, attrs: _Attrs) -> str:
        current = self._lists[-1] if self._lists else None
        ordered = current is not None and current.ordered
        self._items.append(ordered)
        if current is None or not ordered:
            return "- "
        number = _int_attr(attrs, "value", current.next_number)
        current.next_number = number + 1
        return f"{number}. "

    def _open_link(self, attrs: _Attrs) -> None:
        if self._link is not None:
            self._link.nested += 1
        elif self._items and self._items[-1]:
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
            self._lines.append(self._prefix + line)
            self._prefix = ""


def _md_escape(label: str) -> str:
    return _MD_SPECIAL.sub(r"\\\1", label)


def _int_attr(attrs: _Attrs, name: str, default: int) -> int:
    """Parse an integer attribute the lenient way browsers do (leading digits count)."""
    match = _LEADING_INT.match(attrs.get(name) or "")
    return int(match.group(1)) if match else default


def _clean_href(raw: str | None) -> str:
    """The href as written, minus what URL parsing drops (outer controls/space, tab, LF, CR)."""
    if raw is None:
        return ""
    return raw.translate({9: None, 10: None, 13: None}).strip(_URL_STRIP)
