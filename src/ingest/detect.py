"""Detect a page's kind from its content (never from its file name).

Each kind has its own signals; exactly one kind must claim the page. No signal, or the
signals of two kinds at once, is UNKNOWN_FORMAT: never a best-effort parse.
"""

from __future__ import annotations

import re

from .models import Format
from .parse.topic_list import STATS

_LISTING_HEAD = re.compile(r"(?<!\S)[0-9]{1,6}\. \[[^\n]{0,2000}?\]\([^()\n]{0,2000}\)\s?[（(]")
_ITEM_MARKERS = re.compile(r"^\s*(?:推荐阅读|- 分级|- 收录时间)\s*$", re.M)
_SCAN = 64 * 1024  # signals must show within the first 64 KiB


def detect(text: str) -> tuple[Format | None, str]:
    """Return the page kind, or None and why not."""
    head = text[:_SCAN]
    lines = [ln.strip() for ln in head.splitlines()[:8] if ln.strip()]
    if not lines:
        return None, "no text"
    claims = []
    if lines[0].startswith("# ") and (_LISTING_HEAD.search(head) or "网站" in head):
        claims.append(Format.TOPIC_PAGE)
    if len(lines) >= 2 and STATS.match(lines[1]):
        claims.append(Format.TOPIC_LIST)
    if "··" in lines[0] and _ITEM_MARKERS.search(head):
        claims.append(Format.ITEM_PAGE)
    if len(claims) == 1:
        return claims[0], ""
    if not claims:
        return None, "no page kind recognised: not a topic page, topic list or item page"
    return None, "ambiguous: looks like " + " and ".join(c.value for c in claims)
