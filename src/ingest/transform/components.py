"""Components: units joined by edges are settled together, and alone.

Inside one component, edges are applied best first in a deterministic order, never
joining two groups that *cannot* be one resource: two listings of the same page, or two
different original titles. Every function is pure on its arguments, so the local engine
and the Dask engine run the same code on groups they form differently.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from operator import attrgetter

from .units import Edge, Unit, edge_order, pages_of, titles_of

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


def components(edges: Iterable[Edge]) -> dict[str, str]:
    """key → component label for every key named by an edge (others stand alone)."""
    uf = UnionFind()
    for e in edges:
        uf.union(e.a, e.b)
    return {k: uf.find(k) for k in uf.parent}


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
    by_key = {u.key: u for u in units}
    uf = UnionFind()
    pages = {u.key: pages_of(u) for u in units}
    titles = {u.key: titles_of(u) for u in units}
    result = Settled([])
    for e in sorted(edges, key=edge_order):
        ra, rb = uf.find(e.a), uf.find(e.b)
        if ra == rb or e.a not in by_key or e.b not in by_key:
            continue
        if pages[ra] & pages[rb] or (titles[ra] and titles[rb] and not titles[ra] & titles[rb]):
            continue
        root = uf.union(ra, rb)
        other = rb if root == ra else ra
        pages[root] |= pages.pop(other)
        titles[root] |= titles.pop(other)
        result.applied.append(e)
        if e.kind == "near":
            result.near_merges += 1
        else:
            result.order_joins += 1
    groups: dict[str, list[Unit]] = {}
    for u in sorted(units, key=_key):
        groups.setdefault(uf.find(u.key), []).append(u)
    result.clusters = [groups[k] for k in sorted(groups)]
    return result


def best_edges(edges: Iterable[Edge]) -> list[Edge]:
    """One edge per key pair (the strongest), in the deterministic order."""
    best: dict[tuple[str, str], Edge] = {}
    for e in edges:
        if e.a == e.b:
            continue
        old = best.get((e.a, e.b))
        if old is None or edge_order(e) < edge_order(old):
            best[(e.a, e.b)] = e
    return sorted(best.values(), key=edge_order)


@dataclass(slots=True)
class Components:
    """Which component each key belongs to, and the edges inside each component."""

    label: dict[str, str] = field(default_factory=dict)
    edges_of: dict[str, list[Edge]] = field(default_factory=dict)


def label_components(found: Iterable[Edge]) -> Components:
    """Label the components that the strongest edge of each key pair forms."""
    chosen = best_edges(found)
    label = components(chosen)
    edges_of: dict[str, list[Edge]] = {}
    for e in chosen:
        edges_of.setdefault(label[e.a], []).append(e)
    return Components(label, edges_of)
