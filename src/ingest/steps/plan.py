"""The ``plan`` step: from the summary keys of every page, the edges and groups of the run,
and which groups the cache of the earlier publish already has (see :mod:`.reuse`)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import msgspec
import numpy as np

from ..records.internal import Listing, PageResult
from ..state.index import IdIndex
from ..state.reuse import Pair, Store
from ..transform.align import order_point, topic_edges
from ..transform.components import Components, label_components
from ..transform.group import Member, claim_facts, group_digest
from ..transform.identity import Claim, claim_of
from ..transform.near import BANDS, ROWS, Signed, near_edges, signed
from ..transform.records import Finished
from ..transform.topics import Routes
from ..transform.units import Edge, keyed
from .reuse import Reuse

Lid = tuple[str, int]
_FINISHED = msgspec.msgpack.Decoder(Finished)
WIDTH = BANDS * ROWS  # uint32 values in a key's signature


@dataclass(slots=True)
class Plan:
    """The ``plan`` step's value: every page read, and what the run takes (``given``: the
    edges and components are the plan's; only the ``dirty`` listings are read)."""

    pages: list[PageResult] = field(default_factory=list)
    given: bool = False
    dirty: dict[str, set[int]] | None = None  # file → places of listings to read; None: all
    keys: list[list[str]] = field(default_factory=list)  # of each kept page, when given
    signed: Signed | None = None  # every summary key and its signature, when given
    near: list[Edge] = field(default_factory=list)
    order: dict[str, list[Edge]] = field(default_factory=dict)  # by topic
    components: Components = field(default_factory=Components)
    found: dict[str, Finished] = field(default_factory=dict)  # groups taken, by label

    def claims(self, index: IdIndex) -> list[Claim]:
        """The identity claims of the items of the groups taken."""
        return [
            claim_of(use.minted, claim_facts(item, use), index)
            for f in self.found.values()
            if f.memo is not None
            for item, use in zip(f.items, f.memo.uses, strict=True)
        ]

    def related(self) -> dict[Lid, str]:
        """Each related-reading listing of the groups taken, and its item's minted id."""
        return {lid: m for f in self.found.values() if f.memo for lid, m in f.memo.related}


def plan_of(pages: list[PageResult], reuse: Reuse | None, routes: Routes) -> Plan:
    """The plan of a run (see the module's docstring); with no cache to take from, every
    step computes (the pages are kept for the cache the run leaves)."""
    if reuse is None:
        return Plan()
    if reuse.store is None:
        return Plan(pages)
    store = reuse.store
    kept = [p for p in pages if routes.keeps(p)]
    table = store.index.keys
    keys = [
        [table[k] for k in store.index.pages[p.sha256].keys]
        if p.reused
        else [x.key for x in keyed(p.listings)]
        for p in kept
    ]
    plan = Plan(pages, True, keys=keys, signed=_signed(keys, store))
    plan.near = _near(plan.signed, store)
    plan.order = _order(kept, keys, reuse, routes)
    plan.components = label_components(plan.near + [e for es in plan.order.values() for e in es])
    members = _members(kept, keys, reuse, routes, plan.components)
    edges_of = plan.components.edges_of
    dirty: dict[str, set[int]] = {}
    for label, group in members.items():
        found = _found(store, group_digest(group, edges_of.get(label, [])))
        if found is not None:
            plan.found[label] = found
        else:
            for file, _, at, *_ in group:
                dirty.setdefault(file, set()).add(at)
    plan.dirty = dirty
    return plan


def keys_digest(keys: list[str]) -> str:
    """The digest of a run's summary keys (sorted, each once)."""
    digest = hashlib.blake2b(digest_size=16)
    for k in keys:
        digest.update(k.encode("utf-8", "surrogatepass") + b"\0")
    return digest.hexdigest()


def topic_digest(slug: str, pages: list[tuple[str, str]]) -> str:
    """The digest of a topic's pages: its order edges are a function of them."""
    data = msgspec.msgpack.encode([slug, sorted(pages)])
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def _signed(keys: list[list[str]], store: Store) -> Signed:
    """Every key of the run, sorted, with its signature: the cache's, else computed."""
    every = sorted({k for ks in keys for k in ks})
    place = {k: n for n, k in enumerate(store.index.keys)}
    old = np.frombuffer(store.index.sigs, dtype=np.uint32)
    if len(old) != len(place) * WIDTH:  # not a table of this build's signatures
        place = {}
    rows = np.empty((len(every), WIDTH), dtype=np.uint32)
    at = np.array([place.get(k, -1) for k in every], dtype=np.int64)
    have = at >= 0
    rows[have] = old.reshape(-1, WIDTH)[at[have]]
    new = [k for k, h in zip(every, have.tolist(), strict=True) if not h]
    if new:
        rows[~have] = signed(new).rows
    return Signed(every, rows)


def _near(found: Signed | None, store: Store) -> list[Edge]:
    """The near-duplicate edges among the keys: the cache's when the keys are its own."""
    assert found is not None
    kept = store.index.near
    if kept is not None and kept[0] == keys_digest(found.keys):
        return [Edge(s, found.keys[a], found.keys[b], "near") for s, a, b in kept[1]]
    return near_edges([found])


def _order(
    kept: list[PageResult], keys: list[list[str]], reuse: Reuse, routes: Routes
) -> dict[str, list[Edge]]:
    """Each topic's order edges: the cache's for a topic whose pages it knows, else
    computed from the listings of its pages."""
    assert reuse.store is not None
    table, memo = reuse.store.index.keys, reuse.store.index.topics
    slug_of = routes.slug_of
    pages: dict[str, list[int]] = {}
    for n, p in enumerate(kept):
        slug = slug_of.get(p.file)
        if slug is not None and keys[n]:
            pages.setdefault(slug, []).append(n)
    out: dict[str, list[Edge]] = {}
    for slug, ns in sorted(pages.items()):
        pairs = memo.get(topic_digest(slug, [(kept[n].file, kept[n].sha256) for n in ns]))
        if pairs is not None:
            out[slug] = [Edge(s, table[a], table[b], "order") for s, a, b in pairs]
            continue
        points = []
        for n in ns:
            for x in reuse.listings(kept[n]):
                x.topic_key = slug
                points.append(order_point(x))
        out[slug] = topic_edges(points)
    return out


def _members(
    kept: list[PageResult],
    keys: list[list[str]],
    reuse: Reuse,
    routes: Routes,
    comps: Components,
) -> dict[str, list[Member]]:
    """The members of each group (by label): every listing of the kept pages."""
    label, slug_of = comps.label, routes.slug_of
    out: dict[str, list[Member]] = {}
    for p, ks in zip(kept, keys, strict=True):
        day = reuse.days.get(p.file) if p.from_state else None
        slug = slug_of.get(p.file)
        for at, k in enumerate(ks):
            g = label.get(k, k)
            out.setdefault(g, []).append((p.file, p.sha256, at, slug, p.from_state, day))
    return out


def group_listings(
    labels: set[str], plan: Plan, reuse: Reuse, routes: Routes
) -> dict[str, list[Listing]]:
    """The listings of groups the plan took, read again (to resolve them once more)."""
    label = plan.components.label
    kept = [p for p in plan.pages if routes.keeps(p)]
    out: dict[str, list[Listing]] = {g: [] for g in labels}
    for page, keys in zip(kept, plan.keys, strict=True):
        places = {at for at, k in enumerate(keys) if label.get(k, k) in labels}
        if not places:
            continue
        slug = routes.slug_of.get(page.file)
        for x in keyed(reuse.listings(page, places)):
            x.topic_key = slug
            out[label.get(x.key, x.key)].append(x)
    return out


def _found(store: Store, digest: str) -> Finished | None:
    """The finished group the cache keeps under ``digest``, if it reads whole."""
    ref = store.index.groups.get(digest)
    data = None if ref is None else store.blob(ref)
    if data is None:
        return None
    try:
        found = _FINISHED.decode(data)
    except msgspec.DecodeError:
        return None
    return found if found.memo is not None and found.memo.digest == digest else None


def edge_pairs(edges: list[Edge], place: dict[str, int]) -> list[Pair]:
    """Edges as the cache keeps them: their keys as places in its key table."""
    return [(e.score, place[e.a], place[e.b]) for e in edges]
