"""Tree walking: events (start, text, end) in document order from lexbor or BeautifulSoup.

Both trees are walked with an explicit stack, so no document can exhaust the recursion
limit; elements that are not rendered (scripts, hidden elements, ...) yield nothing.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Final, TypeVar

from bs4 import BeautifulSoup
from bs4.element import NavigableString, Tag
from selectolax.lexbor import LexborHTMLParser

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


def _is_invisible(tag: str, attrs: Attrs) -> bool:
    if tag in _NOT_RENDERED or "hidden" in attrs:
        return True
    style = attrs.get("style")
    return bool(style) and _DISPLAY_NONE.search(style or "") is not None


def _walk(roots: list[_N], visit: Callable[[_N], tuple[Event | None, list[_N]]]) -> Iterator[Event]:
    """Yield start/text/end events in document order, depth-first, without recursion.

    ``visit`` returns a node's event (``None`` to emit nothing) and the children to walk:
    an element's children are wrapped in its start and end events; a node without an
    event contributes its children (if any) transparently.
    """
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


def _lexbor_roots(html: str) -> list[Any]:
    root = LexborHTMLParser(html).root
    return [] if root is None else [root]


def _lexbor_visit(node: Any) -> tuple[Event | None, list[Any]]:
    if node.is_text_node:
        return (TEXT, str(node.text_content or ""), _NO_ATTRS), []
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
    return (START, tag, attrs), children


def _soup_roots(html: str) -> list[Any]:
    soup = BeautifulSoup(html, "html.parser", multi_valued_attributes=None)
    return list(soup.contents)


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
    roots = _lexbor_roots(html)
    return lambda: _walk(roots, _lexbor_visit)


def soup_walk(html: str) -> Callable[[], Iterator[Event]]:
    """Parse ``html`` once with BeautifulSoup; each call walks the tree's events anew."""
    roots = _soup_roots(html)
    return lambda: _walk(roots, _soup_visit)
