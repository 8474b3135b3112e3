"""Detect a page's kind from its content (never from its file name), wherever it starts.

Each kind has its own structural marks, and they may follow lines that belong to no
structure (a breadcrumb, a saved page's navigation); exactly one kind must claim the page.
No claim, or the claims of two kinds at once, is UNKNOWN_FORMAT: never a best-effort parse.

- topic page: a full listing head ``N. [title](url)（kind · level）：``, or a ``# `` heading
  that a ``- 所属：`` / ``- 网站：`` header field follows;
- topic list: a stats line (``44 条精选 · …``);
- item page: a line that is exactly ``推荐阅读``, ``- 分级`` or ``- 收录时间``, after a
  ``publisher··age`` line, or on a page that another kind claims too; a page whose byline
  is gone must show its entry (a title and a summary line) right before ``- 分级`` or
  ``- 收录时间``.
"""

from __future__ import annotations

from ..records.vocab import Format
from .parse.base import DETECTION_CHARS, line_pieces
from .parse.item_frame import byline_at, entry_before_kv, first_marker
from .parse.listing_heads import first_listing_head
from .parse.topic_frame import locate
from .parse.topic_list import stats_at


def detect(text: str) -> tuple[Format | None, str, list[str]]:
    """Return the page kind (or None and why not) and the structural marks seen."""
    head = text[:DETECTION_CHARS]
    lines = [s for piece in line_pieces(head) if (s := piece.strip())]
    if not lines:
        return None, "no text", []
    first = first_listing_head(head)
    frame = locate(head, first)
    marks = [m for m in frame.marks if m != "section"]
    marks += ["listings"] if first is not None else []
    claims = []
    if first is not None or ("heading" in marks and len(marks) > 1):
        claims.append(Format.TOPIC_PAGE)
    if stats_at(lines) is not None:
        claims.append(Format.TOPIC_LIST)
        marks.append("stats")
    marker = first_marker(lines)
    if marker is not None:
        marks.append("item_markers")
        byline = byline_at(lines, marker) is not None
        marks += ["byline"] if byline else []
        if byline or claims or entry_before_kv(lines):
            claims.append(Format.ITEM_PAGE)
    if len(claims) == 1:
        return claims[0], "", marks
    if not claims:
        return None, "no page kind recognised: not a topic page, topic list or item page", marks
    return None, "ambiguous: looks like " + " and ".join(c.value for c in claims), marks
