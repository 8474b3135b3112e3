"""Which entries go on which page: the report page shows the first of each long list, the
pages beside it (``report/KEY-N.html``) show all of them, a page at a time.

Each entry has an upper bound of the bytes it takes (its texts are cut to a length and a
character takes at most :data:`.text.CHAR_BYTES` bytes: see :mod:`.text`), so every page's
size is known to stay under :data:`PAGE_BYTES` before it is written, at any corpus size:
a list is cut into pages of at most :data:`BUDGET` bytes of entries, and the report page
shows at most :data:`MAIN_ROWS` entries and :data:`MAIN_BUDGET` bytes of each list. The
plan is made before the pages are (their names are part of the publish) and costs a pass
over the topics' items; the pages are then made by the report page's child.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from ...records.output import Topic
from ...records.run import PAGES
from .text import TABLE_TAIL

#: Every page, the report page and those beside it, is smaller than this.
PAGE_BYTES = 3_000_000
#: Bytes of entries on a page beside the report page (its frame and style are the rest).
BUDGET = 2_400_000
#: Entries of a list on the report page at most, and their bytes at most (nine lists).
MAIN_ROWS = 30
MAIN_BUDGET = 220_000


@dataclass(frozen=True, slots=True)
class Listing:
    """One long list: its entries, how each is shown, and which page holds which."""

    key: str  # its pages are report/KEY-N.html
    title: str
    entries: Sequence[Any]
    row: Callable[[Any, Any], str]  # (entry, Shown) → its escaped HTML
    pages: list[range]  # the entries of each page, in order
    shown: int  # how many the report page shows (the first ones)
    head: str = ""  # the HTML around a page's entries (a table's head and tail)
    tail: str = ""

    def name(self, n: int) -> str:
        """The file of its page ``n`` (from 1), in the publish."""
        return f"{PAGES}/{self.key}-{n}.html"


def listing(
    view: Any,
    key: str,
    title: str,
    entries: Sequence[Any],
    size: Callable[[Any, Any], int],
    row: Callable[[Any, Any], str],
    head: str = "",
    tail: str | None = None,
) -> Listing:
    """A :class:`Listing` of ``entries``, paged by ``size`` (each entry's bound in bytes,
    given the view); ``head`` a table's head: ``tail`` its end unless given."""
    bounds = [size(e, view) for e in entries]
    shown, used = 0, 0
    for b in bounds[:MAIN_ROWS]:
        if used + b > MAIN_BUDGET:
            break
        shown, used = shown + 1, used + b
    end = (TABLE_TAIL if head else "") if tail is None else tail
    return Listing(key, title, entries, row, pack(bounds, BUDGET), shown, head, end)


def pack(bounds: Sequence[int], budget: int) -> list[range]:
    """Consecutive entries in pages of at most ``budget`` bytes (an entry larger than the
    budget alone on its page: none is, its texts being cut).

    >>> pack([5, 5, 5, 9, 1], 10)
    [range(0, 2), range(2, 3), range(3, 5)]
    """
    pages: list[range] = []
    start = used = 0
    for n, b in enumerate(bounds):
        if n > start and used + b > budget:
            pages.append(range(start, n))
            start, used = n, 0
        used += b
    if start < len(bounds):
        pages.append(range(start, len(bounds)))
    return pages


class Part(NamedTuple):
    """A topic's items on one page: all of them, or a run of a large topic's."""

    topic: Topic | None  # None: the items that are on no topic
    ids: Sequence[str]
    start: int  # the index of its first item in the topic
    total: int  # the topic's items in all
    anchored: frozenset[str] = frozenset()  # the items whose first row is in this part


def topic_parts(
    topics: Iterable[Topic],
    unlisted: Sequence[str],
    head_bytes: Callable[[Topic | None], int],
    item_bytes: Callable[[str], int],
) -> tuple[list[Part], list[int]]:
    """Each topic's items cut into parts of at most :data:`BUDGET` bytes, the items on no
    topic last; and each part's bound (its block's head, ``head_bytes``, and its rows)."""
    parts: list[Part] = []
    bounds: list[int] = []
    for topic, ids in [*((t, t.items) for t in topics), (None, unlisted)]:
        if topic is None and not ids:
            continue
        head = head_bytes(topic)
        start, used = 0, head
        for n, item_id in enumerate(ids):
            b = item_bytes(item_id)
            if n > start and used + b > BUDGET:
                parts.append(Part(topic, ids[start:n], start, len(ids)))
                bounds.append(used)
                start, used = n, head
            used += b
        parts.append(Part(topic, ids[start:], start, len(ids)))
        bounds.append(used)
    return parts, bounds


def anchors(
    parts: Sequence[Part], pages: Sequence[range]
) -> tuple[list[Part], dict[str, int], dict[str, int]]:
    """The parts with the items whose first row each holds (links to an item land there),
    and the page (from 1) of each item's first row and of each topic's first part."""
    items: dict[str, int] = {}
    topics: dict[str, int] = {}
    out = list(parts)
    for n, page in enumerate(pages, 1):
        for k in page:
            part = parts[k]
            if part.topic is not None:
                topics.setdefault(part.topic.slug, n)
            first = [i for i in part.ids if i not in items]
            items.update(dict.fromkeys(first, n))
            out[k] = part._replace(anchored=frozenset(first))
    return out, items, topics
