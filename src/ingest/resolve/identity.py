"""Identity: the one place where an item's id is decided.

A cluster's provisional id is :func:`~.graph.mint` of its Chinese summary's match key (every
page kind shows it, so any subset of pages gives the same id). After an earlier publish, an
item keeps the id of the earlier item that is the same resource, judged by evidence in tiers:
1. **exact** — a summary identical (by match key) to one the earlier item had; 2. **link** —
the same URL; 3. **title** — the same original title, no conflicting kind; or a
**near-duplicate** summary (≥ 88), no conflicting original title or kind; 4. **place** — the
same topic, rank, kind and level, a summary still similar (≥ 60), no conflicting original
title. Chinese titles are never evidence: different resources share them. Each earlier item
goes to its strongest claim; an item claimed by several keeps the oldest id, the others
*merged* into it. An item none goes to is new: its minted id, never one an earlier item had.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from msgspec import Struct
from rapidfuzz import fuzz

from ingest.contract import Change, Decision, DecisionSide, Item, ItemEvidence
from ingest.normalize.text import key_of
from ingest.records import Facts
from ingest.resolve.align import ORDER_RATIO
from ingest.resolve.graph import mint
from ingest.resolve.merge import Component, Resolved
from ingest.resolve.near import NEAR_DUP_RATIO, bands_many
from ingest.state.previous import EarlierItem, Previous

EXACT, LINK, SIMILAR, PLACE = 4, 3, 2, 1
#: Summary keys remembered per item across publishes (the newest first).
MAX_KEYS = 16
_EVIDENCE = {
    LINK: "the same link",
    SIMILAR: "the same original title or a near-duplicate summary",
    PLACE: "the same place on its topic page (topic, rank, kind, level), a similar summary",
}


class Claim(Struct, frozen=True, array_like=True, gc=False):
    """One item of this run and the earlier items the cheap indexes found for it (a Struct:
    a Dask worker sends the driver every one, and it pickles in C)."""

    minted: str
    facts: Facts
    found: tuple[tuple[str, int, float], ...] = ()  # (earlier id, tier, score)


@dataclass(slots=True)
class IdIndex:
    """The previous publish's items, indexed by the evidence that can find them cheaply."""

    facts: dict[str, Facts] = field(default_factory=dict)
    since: dict[str, int] = field(default_factory=dict)
    by_key: dict[str, list[str]] = field(default_factory=dict)
    by_title: dict[str, list[str]] = field(default_factory=dict)
    by_url: dict[str, list[str]] = field(default_factory=dict)

    @classmethod
    def of(cls, items: Iterable[EarlierItem]) -> IdIndex:
        index = cls()
        for item in sorted(items, key=lambda i: i.id):
            facts = index.facts[item.id] = item.facts
            index.since[item.id] = item.since
            for k in facts.keys:
                index.by_key.setdefault(k, []).append(item.id)
            for t in facts.titles:
                index.by_title.setdefault(t, []).append(item.id)
            if facts.url:
                index.by_url.setdefault(facts.url, []).append(item.id)
        return index


def claims(comp: Component, index: IdIndex) -> list[Claim]:
    """The claims of one component's items (a pure function: runs on any worker)."""
    return [claim_of(r.id, facts_of(r), index) for r in comp.items]


def claim_of(minted: str, facts: Facts, index: IdIndex) -> Claim:
    """The claim of the item minted ``minted``, known by ``facts``, on the earlier items."""
    if not index.facts:
        return Claim(minted, facts)
    found: dict[str, tuple[int, float]] = {}
    for k in facts.keys:
        for p in index.by_key.get(k, ()):
            found[p] = (EXACT, 100.0)
    for p in index.by_url.get(facts.url or "", ()):
        found.setdefault(p, (LINK, 100.0))
    for t in facts.titles:
        for p in index.by_title.get(t, ()):
            if p not in found and _kinds_agree(facts, index.facts[p]):
                found[p] = (SIMILAR, _ratio(facts, index.facts[p]))
    return Claim(
        minted, facts, tuple((p, tier, score) for p, (tier, score) in sorted(found.items()))
    )


def facts_of(r: Resolved) -> Facts:
    """What identity compares of a resolved item."""
    f, best = r.fields, r.members[0]
    return Facts(
        keys=(best.key, *sorted({x.key for x in r.members} - {best.key})),
        titles=tuple(sorted({key_of(x.title_original) for x in r.members if x.title_original})),
        url=f["url"],
        kind=f["kind_label"],
        places=tuple((t.slug, t.rank, t.level_label) for t in r.topics if t.rank is not None),
        summary=f["summary_zh"] or "",
        title=f["title_zh"] or f["title_original"],
        source=f"{best.prov.file}: {best.prov.locator}",
    )


def _kinds_agree(a: Facts, b: Facts) -> bool:
    return not (a.kind and b.kind and a.kind != b.kind)


def _titles_agree(a: Facts, b: Facts) -> bool:
    return not (a.titles and b.titles and not set(a.titles) & set(b.titles))


def _ratio(a: Facts, b: Facts) -> float:
    return round(float(fuzz.ratio(a.keys[0], b.keys[0])), 3)


@dataclass(slots=True)
class Ids:
    """What the identity step decided, for the steps after it."""

    final: dict[str, str] = field(default_factory=dict)  # minted id → published id
    merged: dict[str, str] = field(default_factory=dict)  # earlier id → the id it joined
    decisions: list[Decision] = field(default_factory=list)
    evidence: list[ItemEvidence] = field(default_factory=list)


Candidate = tuple[int, float, str, str]  # (tier, score, claim's minted id, earlier id)


def assign(found: Iterable[Claim], index: IdIndex, sequence: int) -> Ids:
    """Decide every published id (``sequence``: this publish's number, for new items)."""
    by_minted = {c.minted: c for c in sorted(found, key=lambda c: c.minted)}
    cands = [(tier, score, c.minted, p) for c in by_minted.values() for p, tier, score in c.found]
    # Near-duplicate and place evidence, between the claims the cheap indexes found nothing
    # for and the earlier items nobody reached: few on a daily run, so computed here.
    left, reached = [c for c in by_minted.values() if not c.found], {p for *_, p in cands}
    gone = [p for p in index.facts if p not in reached]
    if left and gone:
        cands += _near_candidates(left, gone, index) + _place_candidates(left, gone, index)
    # each earlier item goes to its strongest claim (ties: the smaller minted id)
    per_earlier: dict[str, Candidate] = {}
    for c in sorted(cands, key=lambda c: (-c[0], -c[1], c[2], c[3])):
        per_earlier.setdefault(c[3], c)
    best = list(per_earlier.values())
    won: dict[str, list[str]] = {}
    for _tier, _score, minted, p in best:
        won.setdefault(minted, []).append(p)
    ids = Ids()
    taken = set(index.facts)
    for minted, claim in by_minted.items():
        earlier = sorted(won.get(minted, []), key=lambda p: (index.since[p], p))
        final = earlier[0] if earlier else _new_id(claim, taken)
        taken.add(final)
        ids.final[minted] = final
        ids.merged.update((p, final) for p in earlier[1:])
        ids.evidence.append(_evidence(final, claim, earlier, index, sequence))
    ids.decisions = _decisions(best, ids, by_minted, index)
    return ids


def _new_id(claim: Claim, taken: set[str]) -> str:
    """The minted id, or (never reusing an id) a salted one when that id is taken."""
    new, salt = claim.minted, 0
    while new in taken:
        salt += 1
        new = mint(claim.facts.keys[0], salt)
    return new


def _near_candidates(left: list[Claim], gone: list[str], index: IdIndex) -> list[Candidate]:
    pairs = _band_pairs([c.facts.keys[0] for c in left], [index.facts[p].keys[0] for p in gone])
    out = []
    for n, g in pairs:
        c, p = left[n], gone[g]
        prev = index.facts[p]
        if not (_titles_agree(c.facts, prev) and _kinds_agree(c.facts, prev)):
            continue
        score = _ratio(c.facts, prev)
        if score >= NEAR_DUP_RATIO:
            out.append((SIMILAR, score, c.minted, p))
    return sorted(out)


def _place_candidates(left: list[Claim], gone: list[str], index: IdIndex) -> list[Candidate]:
    at: dict[tuple[str, int], list[str]] = {}
    for p in gone:
        for slug, rank, _level in index.facts[p].places:
            at.setdefault((slug, rank), []).append(p)
    out = []
    for c in left:
        for slug, rank, level in c.facts.places:
            for p in at.get((slug, rank), ()):
                prev = index.facts[p]
                if c.facts.kind != prev.kind or (slug, rank, level) not in prev.places:
                    continue
                score = _ratio(c.facts, prev)
                if score >= ORDER_RATIO and _titles_agree(c.facts, prev):
                    out.append((PLACE, score, c.minted, p))
    return sorted(set(out))


def _evidence(
    final: str, claim: Claim, earlier: list[str], index: IdIndex, sequence: int
) -> ItemEvidence:
    before = [k for p in earlier for k in index.facts[p].keys]
    keys = list(dict.fromkeys([*claim.facts.keys, *before]))
    titles = sorted({*claim.facts.titles, *(t for p in earlier for t in index.facts[p].titles)})
    return ItemEvidence(
        id=final,
        since=index.since.get(final, sequence),
        keys=keys[:MAX_KEYS],
        titles=titles[:MAX_KEYS],
    )


def _decisions(
    best: list[Candidate], ids: Ids, claims_: dict[str, Claim], index: IdIndex
) -> list[Decision]:
    """An earlier item matched (``best``: each one's winning claim) by evidence weaker than
    an identical summary, shown with both texts: the curator can see why an id was kept."""
    out = []
    for tier, score, minted, p in best:
        if tier == EXACT:
            continue
        prev, now = index.facts[p], claims_[minted].facts
        out.append(
            Decision(
                item=ids.final[minted],
                kind="previous",
                score=score,
                evidence=f"earlier item {p}: {_EVIDENCE[tier]}",
                a=DecisionSide(summary_zh=prev.summary, title=prev.title, source=prev.source),
                b=DecisionSide(summary_zh=now.summary, title=now.title, source=now.source),
            )
        )
    return sorted(out, key=lambda d: (d.item, d.evidence))


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
    new_ids, old_ids = list(keys), list(old)
    for i, j in _band_pairs(list(keys.values()), [old[p].facts.keys[0] for p in old_ids]):
        n, p = new_ids[i], old_ids[j]
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


def _band_pairs(left: list[str], right: list[str]) -> set[tuple[int, int]]:
    """(i, j) for each key of ``left`` and key of ``right`` that share a MinHash band
    (:mod:`.near`), once however many they share."""
    buckets: dict[bytes, list[int]] = {}
    for i, sig in enumerate(bands_many(left)):
        for band in sig:
            buckets.setdefault(band, []).append(i)
    return {
        (i, j) for j, sig in enumerate(bands_many(right)) for b in sig for i in buckets.get(b, ())
    }


def _apart(item: Item, earlier: EarlierItem, key: str) -> str:
    """Why the identity rules did not join them."""
    titles = {key_of(item.title_original)} if item.title_original else set()
    if titles and earlier.facts.titles and not titles & set(earlier.facts.titles):
        return f"their original titles differ ({earlier.title_original!r}, {item.title_original!r})"
    if item.kind_label and earlier.facts.kind and item.kind_label != earlier.facts.kind:
        return f"their kinds differ ({earlier.facts.kind}, {item.kind_label})"
    return f"their summaries are {fuzz.ratio(key, earlier.facts.keys[0]):.0f} % alike"
