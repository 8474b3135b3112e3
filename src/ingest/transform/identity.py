"""Identity: the one place where an item's id is decided.

Every cluster of listings gets a provisional id when it is resolved (:func:`~.mint.mint`: a
digest of its Chinese summary's match key, which every page kind shows, so any subset of
pages gives a resource the same id). The identity step then decides the id each item is
published under. With no earlier publish that is the minted id. With one, an item keeps
the id of the earlier item that is the same resource, judged by evidence in tiers:

1. **exact** — a Chinese summary identical (by match key) to one the earlier item had;
2. **link** — the same absolute URL;
3. **title** — the same original title, with no conflicting kind; or a **near-duplicate**
   summary (a reworded clause: similarity ≥ 88), with no conflicting original title or kind;
4. **place** — the same topic, rank, kind and level, and a summary still clearly similar
   (≥ 60), with no conflicting original title: a regenerated title and summary in place.

Chinese titles are never evidence: different resources share them. Each earlier item goes
to the item with the strongest claim on it; an item claimed by several earlier items
keeps the oldest id and the others are *merged* into it. An item no earlier item goes to
is new: its minted id, never one an earlier item had.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from msgspec import Struct
from rapidfuzz import fuzz

from ..normalize.text import key_of
from ..records.output import Decision, DecisionSide, ItemEvidence
from ..state.index import Facts, IdIndex
from .align import ORDER_RATIO
from .merge import Component, Resolved
from .mint import mint
from .near import NEAR_DUP_RATIO, bands_many

EXACT, LINK, SIMILAR, PLACE = 4, 3, 2, 1
#: Summary keys remembered per item across publishes (the newest first).
MAX_KEYS = 16
_EVIDENCE = {
    LINK: "the same link",
    SIMILAR: "the same original title or a near-duplicate summary",
    PLACE: "the same place on its topic page (topic, rank, kind, level), a similar summary",
}


class Claim(Struct, frozen=True, array_like=True, gc=False):
    """One item of this run, and the earlier items the cheap indexes found for it (a
    Struct: a Dask worker sends the driver every one, and it pickles in C)."""

    minted: str
    facts: Facts
    found: tuple[tuple[str, int, float], ...] = ()  # (earlier id, tier, score)


# --------------------------------------------------------------------------- claims


def claims(comp: Component, index: IdIndex) -> list[Claim]:
    """The claims of one component's items (a pure function: runs on any worker)."""
    return [_claim(r, index) for r in comp.items]


def _claim(r: Resolved, index: IdIndex) -> Claim:
    return claim_of(r.id, facts_of(r), index)


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
    f = r.fields
    own = r.members[0].key if r.members else ""
    summary_keys = sorted({x.key for x in r.members} - {own})
    title = f["title_original"]
    best = r.members[0]
    return Facts(
        keys=(own, *summary_keys),
        titles=tuple(sorted({key_of(x.title_original) for x in r.members if x.title_original})),
        url=f["url"],
        kind=f["kind_label"],
        places=tuple((t.slug, t.rank, t.level_label) for t in r.topics if t.rank is not None),
        summary=f["summary_zh"] or "",
        title=f["title_zh"] or title,
        source=f"{best.prov.file}: {best.prov.locator}",
    )


def _kinds_agree(a: Facts, b: Facts) -> bool:
    return not (a.kind and b.kind and a.kind != b.kind)


def _titles_agree(a: Facts, b: Facts) -> bool:
    return not (a.titles and b.titles and not set(a.titles) & set(b.titles))


def _ratio(a: Facts, b: Facts) -> float:
    return round(float(fuzz.ratio(a.keys[0], b.keys[0])), 3)


# --------------------------------------------------------------------------- assignment


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
    cands += _leftover_candidates(by_minted, index, {p for *_, p in cands})
    best = list(_best_per_earlier(cands).values())
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


def _best_per_earlier(cands: list[Candidate]) -> dict[str, Candidate]:
    """Each earlier item goes to its strongest claim (ties: the smaller minted id)."""
    best: dict[str, Candidate] = {}
    for c in sorted(cands, key=lambda c: (-c[0], -c[1], c[2], c[3])):
        best.setdefault(c[3], c)
    return best


def _new_id(claim: Claim, taken: set[str]) -> str:
    """The minted id, or (never reusing an id) a salted one when that id is taken."""
    new, salt = claim.minted, 0
    while new in taken:
        salt += 1
        new = mint(claim.facts.keys[0], salt)
    return new


def _leftover_candidates(
    claims_: dict[str, Claim], index: IdIndex, reached: set[str]
) -> list[Candidate]:
    """Near-duplicate and place evidence between the claims the cheap indexes found nothing
    for and the earlier items nobody reached: few on a daily run, so computed here."""
    left = [c for c in claims_.values() if not c.found]
    gone = [p for p in index.facts if p not in reached]
    if not left or not gone:
        return []
    return _near_candidates(left, gone, index) + _place_candidates(left, gone, index)


def _near_candidates(left: list[Claim], gone: list[str], index: IdIndex) -> list[Candidate]:
    buckets: dict[bytes, tuple[list[int], list[str]]] = {}
    for n, sig in enumerate(bands_many([c.facts.keys[0] for c in left])):
        for band in sig:
            buckets.setdefault(band, ([], []))[0].append(n)
    for p, sig in zip(gone, bands_many([index.facts[p].keys[0] for p in gone]), strict=True):
        for band in sig:
            if band in buckets:
                buckets[band][1].append(p)
    pairs = {(n, p) for ns, ps in buckets.values() for n in ns for p in ps}  # once, not per band
    out = []
    for n, p in pairs:
        c, prev = left[n], index.facts[p]
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
