"""Removed and added items that may be one resource: said, not decided.

The identity rules (:mod:`.identity`) keep an id only on evidence strong enough. A resource
whose original title was edited and whose summary was reworded on the same day falls short
of them (a near-duplicate summary or its place counts only while the original titles
agree), and shows in the change set as one item removed and another added. Here each
removed item is compared with each added one, and a pair that shares weaker evidence gets
the run warning ``SAME_RESOURCE_SUSPECTED``, naming both ids and why they were kept apart:

- **place** — the same topic, rank, kind and level, and summaries at least
  :data:`SUSPECT_RATIO` alike (summaries of different resources stay well below it);
- **summary** — near-duplicate summaries (:data:`.near.NEAR_DUP_RATIO`), wherever listed.

The records are not changed: the curator decides.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from rapidfuzz import fuzz

from ..normalize.text import key_of
from ..records.output import Change, Item
from ..state.earlier import EarlierItem
from ..state.previous import Previous
from .near import NEAR_DUP_RATIO, bands_many

#: Summaries at the same place this alike (rapidfuzz ratio of their keys) make a suspect.
SUSPECT_RATIO = 40.0


def suspected(previous: Previous, items: Iterable[Item], changes: Sequence[Change]) -> list[str]:
    """A warning for each (added, removed) pair of items that may be one resource."""
    removed = [c.id for c in changes if c.entity == "item" and c.op == "removed"]
    added = {c.id for c in changes if c.entity == "item" and c.op == "added"}
    if not removed or not added:
        return []
    new = {i.id: i for i in items if i.id in added}
    old = {p: previous.items[p] for p in removed}
    keys = {n: key_of(i.summary_zh) for n, i in new.items()}
    found = _by_place(new, old, keys)
    for n, p in _near_pairs(keys, old):
        score = fuzz.ratio(keys[n], old[p].facts.keys[0])
        if score >= NEAR_DUP_RATIO:
            found.setdefault((n, p), f"a near-duplicate summary ({score:.0f} % alike)")
    return [
        f"item {n}: SAME_RESOURCE_SUSPECTED: added, and removed item {p} had {evidence}; "
        f"kept apart as {_apart(new[n], old[p], keys[n])}: one resource?"
        for (n, p), evidence in sorted(found.items())
    ]


def _by_place(
    new: dict[str, Item], old: dict[str, EarlierItem], keys: dict[str, str]
) -> dict[tuple[str, str], str]:
    at: dict[tuple[str, int], list[str]] = {}
    for p, e in old.items():
        for slug, rank, _level in e.facts.places:
            at.setdefault((slug, rank), []).append(p)
    found: dict[tuple[str, str], str] = {}
    for n, item in new.items():
        for t in item.topics:
            for p in at.get((t.slug, t.rank), ()) if t.rank is not None else ():
                e = old[p]
                if e.facts.kind != item.kind_label or (t.slug, t.rank, t.level_label) not in (
                    e.facts.places
                ):
                    continue
                score = fuzz.ratio(keys[n], e.facts.keys[0])
                if score >= SUSPECT_RATIO:
                    found.setdefault(
                        (n, p),
                        f"the same place (topic {t.slug}, rank {t.rank}, {item.kind_label}, "
                        f"{t.level_label}) and a summary {score:.0f} % alike",
                    )
    return found


def _near_pairs(keys: dict[str, str], old: dict[str, EarlierItem]) -> set[tuple[str, str]]:
    """(added, removed) pairs whose summary keys share a MinHash band (:mod:`.near`)."""
    buckets: dict[bytes, list[str]] = {}
    for n, sig in zip(keys, bands_many(list(keys.values())), strict=True):
        for band in sig:
            buckets.setdefault(band, []).append(n)
    removed = list(old)
    sigs = bands_many([old[p].facts.keys[0] for p in removed])
    return {
        (n, p)
        for p, sig in zip(removed, sigs, strict=True)
        for b in sig
        for n in buckets.get(b, ())
    }


def _apart(item: Item, earlier: EarlierItem, key: str) -> str:
    """Why the identity rules did not join them."""
    titles = {key_of(item.title_original)} if item.title_original else set()
    if titles and earlier.facts.titles and not titles & set(earlier.facts.titles):
        return f"their original titles differ ({earlier.title_original!r}, {item.title_original!r})"
    if item.kind_label and earlier.facts.kind and item.kind_label != earlier.facts.kind:
        return f"their kinds differ ({earlier.facts.kind}, {item.kind_label})"
    return f"their summaries are {fuzz.ratio(key, earlier.facts.keys[0]):.0f} % alike"
