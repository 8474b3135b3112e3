"""Long lists a page at a time: the report page shows the first entries of each list, the
pages beside it (``report/KEY-N.html``) all of them, each page under :data:`PAGE_BYTES`
whatever the size of the run.

Entries are made one after the other, in order, and a page is written as soon as the next
entry would take it over :data:`BUDGET` bytes (an entry is small: its texts are cut, see
:mod:`.text`; a large topic's block is cut in parts). Only the entries of one page are
held at a time; how many pages a list has is known once it is written. An entry carries
the anchors it holds (``item-ID``, ``topic-SLUG``), so links to them can name their page.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import NamedTuple

#: Every page, the report page and those beside it, is smaller than this.
PAGE_BYTES = 3_000_000
#: Bytes of entries on a page beside the report page (its frame and style are the rest).
BUDGET = 1_000_000
#: A part of a topic's block, at most (a larger topic's block is cut in parts).
PART_BYTES = 500_000
#: Entries of a list the report page shows at most, and their bytes at most (ten lists).
MAIN_ROWS = 30
MAIN_BUDGET = 200_000


class Entry(NamedTuple):
    """One entry of a list: its HTML, and the anchors in it."""

    html: str
    marks: tuple[str, ...] = ()


class Page(NamedTuple):
    """One page of a list: its number (from 1), its entries' HTML, whether it is the last,
    the anchors on it."""

    n: int
    html: str
    last: bool
    marks: list[str]


def paged(entries: Iterable[Entry], budget: int = BUDGET) -> Iterator[Page]:
    """``entries`` in pages of at most ``budget`` bytes (an entry larger than the budget
    alone on its page), a page made as soon as it is full.

    >>> [p[:3] for p in paged([Entry("aaaa"), Entry("bb"), Entry("cccc"), Entry("d")], 6)]
    [(1, 'aaaabb', False), (2, 'ccccd', True)]
    """
    held: list[Entry] = []
    used = n = 0
    for entry in entries:
        size = len(entry.html.encode("utf-8"))
        if held and used + size > budget:
            n += 1
            yield _page(n, held, False)
            held, used = [], 0
        held.append(entry)
        used += size
    if held:
        yield _page(n + 1, held, True)


def _page(n: int, entries: list[Entry], last: bool) -> Page:
    return Page(n, "".join(e.html for e in entries), last, [m for e in entries for m in e.marks])


def first(entries: Iterable[str], rows: int = MAIN_ROWS, budget: int = MAIN_BUDGET) -> list[str]:
    """The first of ``entries`` the report page shows: at most ``rows``, ``budget`` bytes.

    >>> first(["aa", "bb", "cc"], 5, 5)
    ['aa', 'bb']
    """
    out: list[str] = []
    used = 0
    for html in entries:
        used += len(html.encode("utf-8"))
        if len(out) == rows or used > budget:
            break
        out.append(html)
    return out


def cut(rows: Iterable[Entry], head: Callable[[int, int], str], tail: str) -> Iterator[Entry]:
    """A block of ``rows`` in parts of at most :data:`PART_BYTES`, each between its
    ``head(index of its first row, index after its last)`` and ``tail``.

    >>> list(cut([Entry("a", ("x",)), Entry("b")], lambda i, j: f"<{i}-{j}>", "."))
    [Entry(html='<0-2>ab.', marks=('x',))]
    """
    held: list[Entry] = []
    used = start = 0
    for k, row in enumerate(rows):
        size = len(row.html.encode("utf-8"))
        if held and used + size > PART_BYTES:
            yield _part(head(start, k), held, tail)
            held, used, start = [], 0, k
        held.append(row)
        used += size
    yield _part(head(start, start + len(held)), held, tail)


def _part(head: str, rows: list[Entry], tail: str) -> Entry:
    marks = tuple(m for r in rows for m in r.marks)
    return Entry(head + "".join(r.html for r in rows) + tail, marks)
