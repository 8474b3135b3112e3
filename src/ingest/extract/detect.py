"""Detect a page's kind from its content (never from its file name).

Each kind has its own signals; exactly one kind must claim the page. No signal, or the
signals of two kinds at once, is UNKNOWN_FORMAT: never a best-effort parse.

- topic page: the first line starts with ``# `` and a listing head or a ``- 网站：`` /
  ``- 所属：`` header mark follows;
- topic list: the second line is a stats line (``44 条精选 · …``);
- item page: the first line holds ``publisher··age`` and a line is exactly ``推荐阅读``,
  ``- 分级`` or ``- 收录时间``.
"""

from __future__ import annotations

import re

from ..records.vocab import Format
from .parse.base import split_lines
from .parse.topic_list import STATS
from .parse.topic_page import has_listing_head

_HEADER_MARK = re.compile(r"(?<!\S)-\s*(?:所属|网站)\s*[：:]")
_ITEM_MARKERS = frozenset(["推荐阅读", "- 分级", "- 收录时间"])
_SCAN = 64 * 1024  # signals must show within the first 64 KiB


def detect(text: str) -> tuple[Format | None, str]:
    """Return the page kind, or None and why not."""
    head = text[:_SCAN]
    lines = [s for ln in split_lines(head) if (s := ln.text.strip())]
    if not lines:
        return None, "no text"
    claims = []
    if lines[0].startswith("# ") and (_HEADER_MARK.search(head) or has_listing_head(head)):
        claims.append(Format.TOPIC_PAGE)
    if len(lines) >= 2 and STATS.match(lines[1]):
        claims.append(Format.TOPIC_LIST)
    if any(s in _ITEM_MARKERS for s in lines) and ("··" in lines[0] or claims):
        claims.append(Format.ITEM_PAGE)
    if len(claims) == 1:
        return claims[0], ""
    if not claims:
        return None, "no page kind recognised: not a topic page, topic list or item page"
    return None, "ambiguous: looks like " + " and ".join(c.value for c in claims)
