"""Align: join topic-list entries to topic-page listings that their summaries did not join.

Both views of a topic list its resources in the same order. An entry whose summary matched
nothing (reworded more than near-duplicate search accepts, or a damaged line) is compared
only with the still-unmatched topic-page listings between its matched neighbours, and
joined to the most similar one when the similarity is clear. Order is the evidence;
similarity confirms it.
"""

from __future__ import annotations

from rapidfuzz import fuzz

from .dedup import Clusters
from .models import Format

#: Similarity (0-100) a summary must reach to be aligned by order alone.
ORDER_RATIO = 60.0


def align_by_order(c: Clusters, keys: list[str]) -> int:
    """Union topic-list entries with topic-page listings by shared order; return joins."""
    pages: dict[str, list[int]] = {}
    lists: dict[tuple[str, str], list[int]] = {}
    for i, x in enumerate(c.listings):
        if x.topic_key is None:
            continue
        if x.prov.format == Format.TOPIC_PAGE.value:
            pages.setdefault(x.topic_key, []).append(i)
        elif x.prov.format == Format.TOPIC_LIST.value:
            lists.setdefault((x.topic_key, x.prov.sha256), []).append(i)
    joins = 0
    for (slug, _), entries in sorted(lists.items()):
        page = sorted(pages.get(slug, []), key=lambda i: (c.listings[i].rank or 0, i))
        if page:
            joins += _align_one(c, keys, entries, page)
    return joins


def _align_one(c: Clusters, keys: list[str], entries: list[int], page: list[int]) -> int:
    pos = {c.find(p): n for n, p in enumerate(page)}
    matched = [pos.get(c.find(e)) for e in entries]
    used = {m for m in matched if m is not None}
    joins = 0
    for n, e in enumerate(entries):
        if matched[n] is not None:
            continue
        lo = max((m for m in matched[:n] if m is not None), default=-1)
        hi = min((m for m in matched[n + 1 :] if m is not None), default=len(page))
        best = _best(c, keys, e, [p for p in range(lo + 1, hi) if p not in used], page)
        if best is not None and c.can_join(e, page[best]):
            c.union(e, page[best])
            matched[n] = best
            used.add(best)
            joins += 1
    return joins


def _best(c: Clusters, keys: list[str], e: int, window: list[int], page: list[int]) -> int | None:
    scored = sorted((-fuzz.ratio(keys[e], keys[page[p]]), p) for p in window)
    if not scored or -scored[0][0] < ORDER_RATIO:
        return None
    if len(scored) > 1 and scored[1][0] - scored[0][0] < 10:
        return None  # two listings fit about as well: not clear, leave it
    return scored[0][1]
