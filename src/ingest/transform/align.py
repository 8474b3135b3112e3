"""Align: topic-list entries whose summaries match no listing of their topic page.

Both views of a topic list its resources in the same order. An entry that matches nothing
on its topic page (reworded beyond near-duplicate similarity, a damaged or cut line) is
compared only with the unmatched topic-page listings between its matched neighbours, and
an *order edge* joins it to the most similar one when that similarity is clear. Order is
the evidence; similarity confirms it. Pure per topic: key = topic slug → group → resolve.
"""

from __future__ import annotations

from collections.abc import Iterable

from rapidfuzz import fuzz

from ..records.internal import Listing
from ..records.vocab import Format
from .near import NEAR_DUP_RATIO
from .units import Edge, edge, summary_key

#: Similarity (0-100) a summary must reach to be aligned by order alone.
ORDER_RATIO = 60.0
#: The best candidate must beat the second by this much to count as clear.
MARGIN = 10.0


def order_edges(page: list[Listing], entries: list[Listing]) -> list[Edge]:
    """Order edges between one topic's page listings (rank order) and one list's entries."""
    pkeys = [summary_key(x) for x in page]
    ekeys = [summary_key(x) for x in entries]
    exact = {k: p for p, k in reversed(list(enumerate(pkeys)))}
    matched = [exact[k] if k in exact else _near(k, pkeys) for k in ekeys]
    out = []
    for n, key in enumerate(ekeys):
        if matched[n] is not None:
            continue
        lo = max((m for m in matched[:n] if m is not None), default=-1)
        hi = min((m for m in matched[n + 1 :] if m is not None), default=len(page))
        # Every listing strictly between the neighbours' matches is unmatched: an earlier
        # entry's match is at most lo, a later one's at least hi.
        best = _best(key, [(p, pkeys[p]) for p in range(lo + 1, hi)])
        if best is not None:
            matched[n] = best[0]
            out.append(edge(best[1], key, pkeys[best[0]], "order"))
    return out


def _near(key: str, pkeys: list[str]) -> int | None:
    """The page listing this entry's summary nearly matches, if any."""
    for p, pk in enumerate(pkeys):
        if fuzz.ratio(key, pk, score_cutoff=NEAR_DUP_RATIO):
            return p
    return None


def _best(key: str, window: list[tuple[int, str]]) -> tuple[int, float] | None:
    scored = sorted((-fuzz.ratio(key, pk), p) for p, pk in window)
    if not scored or -scored[0][0] < ORDER_RATIO:
        return None
    if len(scored) > 1 and scored[1][0] - scored[0][0] < MARGIN:
        return None  # two listings fit about as well: not clear, leave it
    return scored[0][1], -scored[0][0]


def topic_edges(listings: Iterable[Listing]) -> list[Edge]:
    """Order edges of one topic: its page listings against each of its topic-lists."""
    page: list[Listing] = []
    lists: dict[str, list[Listing]] = {}
    for x in listings:
        if x.prov.format == Format.TOPIC_PAGE.value:
            page.append(x)
        elif x.prov.format == Format.TOPIC_LIST.value:
            lists.setdefault(x.prov.sha256 + x.prov.file, []).append(x)
    if not page:
        return []
    page.sort(key=lambda x: (x.rank or 0, x.lid))
    out: list[Edge] = []
    for name in sorted(lists):
        out.extend(order_edges(page, sorted(lists[name], key=lambda x: x.ordinal)))
    return out
