"""Where an item page's parts are: byline, main entry, key/value block, related reading.

The page starts at its ``publisher··age`` byline: the last line holding ``··`` before the
page's first marker (a line ``- 分级``, ``- 收录时间`` or ``推荐阅读``). A page whose byline
is gone starts at its main entry, read backwards from the key/value block: the summary
line just before it, the original title before that when it has no Chinese or repeats the
Chinese title, and the Chinese title. The key/value block is the first ``- `` line after
the start (a menu entry ``- 首页`` aside) and what follows up to ``推荐阅读``; the related
reading is everything after that heading.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ...normalize.text import has_han
from .base import Line
from .lines import is_furniture, is_summary_line, same_line

RELATED_HEADING = "推荐阅读"
_KV_MARKERS = frozenset(["- 分级", "- 收录时间"])
MARKERS = _KV_MARKERS | {RELATED_HEADING}


@dataclass(frozen=True, slots=True)
class ItemFrame:
    """Indexes into the page's non-blank lines."""

    start: int  # the page's first line: its byline, or its main entry when that is gone
    byline: int | None
    main: tuple[int, int]  # the main entry's lines (with any stray lines before the k/v)
    kv: tuple[int, int]  # the key/value block's lines
    related: int | None  # the '推荐阅读' line


def is_kv(text: str) -> bool:
    return text.lstrip().startswith("- ")


def first_marker(texts: Sequence[str]) -> int | None:
    return next((i for i, s in enumerate(texts) if s.strip() in MARKERS), None)


def byline_at(texts: Sequence[str], before: int) -> int | None:
    """The last line holding '··' before ``before`` that is not site furniture."""
    return next(
        (i for i in range(before - 1, -1, -1) if "··" in texts[i] and not is_furniture(texts[i])),
        None,
    )


def locate(lines: list[Line]) -> ItemFrame:
    texts = [ln.text for ln in lines]
    marker = first_marker(texts)
    bound = len(lines) if marker is None else marker
    byline = byline_at(texts, bound)
    start = byline if byline is not None else _entry_start(texts, _kv_start(texts, bound))
    first = start + 1 if byline is not None else start
    kv_at = next(
        (i for i in range(first, len(lines)) if is_kv(texts[i]) and not is_furniture(texts[i])),
        None,
    )
    rel_at = next(
        (i for i in range(kv_at or first, len(lines)) if texts[i].strip() == RELATED_HEADING),
        None,
    )
    main_end = min(x for x in (kv_at, rel_at, len(lines)) if x is not None)
    kv_end = rel_at if rel_at is not None else len(lines)
    return ItemFrame(start, byline, (first, main_end), (main_end, kv_end), rel_at)


def entry_before_kv(texts: list[str]) -> bool:
    """Is there a key/value block (``- 分级`` / ``- 收录时间``) with an entry before it (a
    title and a summary line)? What a byline-less item page must show to be one."""
    kv = next((i for i, s in enumerate(texts) if s.strip() in _KV_MARKERS), None)
    if kv is None:
        return False
    return _summary_before(texts, _kv_start(texts, kv)) is not None


def _kv_start(texts: list[str], marker: int) -> int:
    """The first line of the key/value block that ends at (or holds) the first marker."""
    i = marker if marker < len(texts) and is_kv(texts[marker]) else marker - 1
    while i >= 0 and is_kv(texts[i]):
        i -= 1
    return i + 1


def _entry_start(texts: list[str], kv: int) -> int:
    """Where the main entry ending just before the key/value block at ``kv`` starts, read
    backwards: its summary (site furniture after it aside), an original title without
    Chinese or repeating the Chinese title, its Chinese title. When that shape is not there,
    the page starts at line 0."""
    j = _summary_before(texts, kv)
    if j is None:
        return 0
    title = j - 1
    if title >= 1 and (not has_han(texts[title]) or same_line(texts[title - 1], texts[title])):
        title -= 1
    return title


def _summary_before(texts: list[str], kv: int) -> int | None:
    """The summary line of an entry ending just before line ``kv`` (site furniture after
    it aside), when a line comes before it for a title; else None."""
    j = kv - 1
    while j >= 0 and is_furniture(texts[j]):
        j -= 1
    return j if j >= 1 and is_summary_line(texts[j]) else None
