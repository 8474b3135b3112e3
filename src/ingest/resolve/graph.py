"""The vocabulary of identity, and how it is settled.

A *unit* is every listing whose Chinese summary has one match key: exact identity, always
merged. An *edge* is evidence that two units are one resource (a near-duplicate summary,
or the shared order of two views of a topic). Units joined by edges form a *component*,
settled alone: edges are applied best first in a deterministic order, never joining two
groups that *cannot* be one resource (two listings of one page, or two different original
titles). Each item gets a provisional id (:func:`mint`)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from operator import attrgetter
from typing import NamedTuple

from ingest.normalize.text import key_of
from ingest.records import Listing, listing_id


def mint(summary_key: str, salt: int = 0) -> str:
    """A new id: a digest of the Chinese summary's match key (``salt``: the next free id
    when that one is taken)."""
    text = summary_key if not salt else f"{summary_key}\x00{salt}"
    return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()


class Edge(NamedTuple):
    """Evidence that two summary keys are one resource; ``a < b``."""

    score: float
    a: str
    b: str
    kind: str  # "near" | "order"


def edge(score: float, x: str, y: str, kind: str) -> Edge:
    a, b = sorted((x, y))
    return Edge(round(score, 3), a, b, kind)


def edge_order(e: Edge) -> tuple[float, str, str, str]:
    return (-e.score, e.a, e.b, e.kind)


class Unit(NamedTuple):
    """Listings that share one summary key (in ``listing_id`` order)."""

    key: str
    listings: list[Listing]


def pages_of(u: Unit) -> set[tuple[str, str]]:
    """The pages the unit's listings are on: a page is its content and kind."""
    return {(x.prov.sha256, x.prov.format) for x in u.listings}


def summary_key(x: Listing) -> str:
    return x.key or key_of(x.summary_zh)


def keyed(listings: list[Listing]) -> list[Listing]:
    """``listings``, each given its summary's match key: once they have left their pages,
    not where parsed (the ``--jobs`` pool would ship both back; here, a summary met on
    eight pages is keyed once)."""
    for x in listings:
        x.key = key_of(x.summary_zh)
    return listings


def units_of(key: str, listings: Iterable[Listing]) -> Unit:
    return Unit(key, sorted(listings, key=listing_id))


_key = attrgetter("key")


class UnionFind:
    """Union-find over hashable labels; the root of a set is its smallest label."""

    def __init__(self) -> None:
        self.parent: dict[str, str] = {}

    def find(self, x: str) -> str:
        root = self.parent.setdefault(x, x)
        while root != self.parent[root]:
            root = self.parent[root]
        while x != root:
            self.parent[x], x = root, self.parent[x]
        return root

    def union(self, a: str, b: str) -> str:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            ra, rb = min(ra, rb), max(ra, rb)
            self.parent[rb] = ra
        return ra


@dataclass(slots=True)
class Settled:
    """The clusters of one component and what joined them."""

    clusters: list[list[Unit]]
    near_merges: int = 0
    order_joins: int = 0
    applied: list[Edge] = field(default_factory=list)  # the edges that joined, in order


def settle(units: list[Unit], edges: list[Edge]) -> Settled:
    """Apply edges best first, refusing any join the cannot-link facts forbid."""
    if not edges:  # the usual case: a component of one unit
        return Settled([[u] for u in sorted(units, key=_key)])
    given = {u.key for u in units}
    uf = UnionFind()
    pages = {u.key: pages_of(u) for u in units}  # a group's pages and title keys, by root
    titles = {
        u.key: {key_of(x.title_original) for x in u.listings if x.title_original} for u in units
    }
    applied = []
    for e in sorted(edges, key=edge_order):
        ra, rb = uf.find(e.a), uf.find(e.b)
        if ra == rb or e.a not in given or e.b not in given:
            continue
        if pages[ra] & pages[rb] or (titles[ra] and titles[rb] and not titles[ra] & titles[rb]):
            continue
        root = uf.union(ra, rb)
        other = rb if root == ra else ra
        pages[root] |= pages.pop(other)
        titles[root] |= titles.pop(other)
        applied.append(e)
    groups: dict[str, list[Unit]] = {}
    for u in sorted(units, key=_key):
        groups.setdefault(uf.find(u.key), []).append(u)
    near = sum(e.kind == "near" for e in applied)
    return Settled([groups[k] for k in sorted(groups)], near, len(applied) - near, applied)


def best_edges(edges: Iterable[Edge]) -> list[Edge]:
    """One edge per key pair (the strongest), in the deterministic order."""
    weakest_first = sorted(edges, key=edge_order, reverse=True)
    best = {(e.a, e.b): e for e in weakest_first if e.a != e.b}  # the strongest comes last
    return sorted(best.values(), key=edge_order)


@dataclass(slots=True)
class Components:
    """Which component each key belongs to, and the edges inside each component."""

    label: dict[str, str] = field(default_factory=dict)
    edges_of: dict[str, list[Edge]] = field(default_factory=dict)


def label_components(found: Iterable[Edge]) -> Components:
    """Label the components that the strongest edge of each key pair forms (a key no edge
    names stands alone)."""
    chosen = best_edges(found)
    uf = UnionFind()
    for e in chosen:
        uf.union(e.a, e.b)
    label = {k: uf.find(k) for k in uf.parent}
    edges_of: dict[str, list[Edge]] = {}
    for e in chosen:
        edges_of.setdefault(label[e.a], []).append(e)
    return Components(label, edges_of)
