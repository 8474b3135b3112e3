"""Sniffing: is a text an HTML document, and does its markup nest dangerously deep?"""

from __future__ import annotations

import re
from typing import Final

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


def nests_deeper_than(html: str, limit: int) -> bool:
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
