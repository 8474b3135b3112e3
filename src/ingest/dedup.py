"""Identity: which listings are the same real resource, as key → group → resolve.

1. **Exact** — listings whose summaries share a match key form one *unit*; always merged.
2. **Near-duplicate edges** — MinHash over character 3-grams of each distinct key, cut into
   LSH bands; keys sharing a band are candidates, and a real similarity check (rapidfuzz)
   confirms them. No pair is compared unless a band brought it together.
3. **Components** — units connected by any edge (near-duplicate or order, see
   :mod:`ingest.align`) are settled together and alone.
4. **Settle** — inside one component, edges are applied best first in a deterministic order,
   never joining two groups that *cannot* be one resource: two listings of the same page,
   or two different original titles.

Every function is pure on its arguments, so the local engine and the Dask engine run the
same code on groups they form differently.
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any, NamedTuple

from rapidfuzz import fuzz

from .models import Listing
from .normalize import match_key

#: Confirmed near-duplicate: rapidfuzz ratio (0-100) of the two summary keys.
NEAR_DUP_RATIO = 88.0
#: MinHash size and LSH banding: 21 bands of 3 rows; pairs with Jaccard ≈ 0.36 or more of
#: their 3-gram sets are likely to share a band (a reworded clause keeps well above that).
BANDS, ROWS = 21, 3
#: A band bucket with more keys than this is not expanded into pairs (templated text).
MAX_BUCKET = 200


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


@dataclass(slots=True)
class Unit:
    """Listings that share one summary key."""

    key: str
    listings: list[Listing]
    pages: set[tuple[str, str]] = field(default_factory=set)
    titles: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        for x in self.listings:
            self.pages.add((x.prov.sha256, x.prov.format))
            if x.title_original:
                self.titles.add(match_key(x.title_original))


def summary_key(x: Listing) -> str:
    return x.key or match_key(x.summary_zh)


# --------------------------------------------------------------------------- signatures


@cache
def _minhash_setup() -> tuple[Any, Any]:
    from datasketch import MinHash  # numpy-heavy: imported only when needed
    from xxhash import xxh32_intdigest

    perms = MinHash(num_perm=BANDS * ROWS, seed=1, scheme="affine32").permutations
    return perms, xxh32_intdigest


def bands(key: str) -> list[bytes]:
    """The LSH band signatures of a key (band number included, so bands never mix)."""
    from datasketch import MinHash

    perms, hashfunc = _minhash_setup()
    m = MinHash(
        num_perm=BANDS * ROWS, seed=1, permutations=perms, scheme="affine32", hashfunc=hashfunc
    )
    m.update_batch([key[i : i + 3].encode() for i in range(max(1, len(key) - 2))])
    values = [int(v) for v in m.hashvalues]
    out = []
    for b in range(BANDS):
        raw = struct.pack(f"<H{ROWS}I", b, *values[b * ROWS : (b + 1) * ROWS])
        out.append(hashlib.blake2b(raw, digest_size=8).digest())
    return out


def verify(a: str, b: str) -> float | None:
    """The similarity of two keys if they are near-duplicates, else None."""
    score = fuzz.ratio(a, b, score_cutoff=NEAR_DUP_RATIO)
    return float(score) if score else None


def bucket_edges(keys: Sequence[str]) -> list[Edge]:
    """Confirmed near-duplicate edges among the keys of one band bucket."""
    if len(keys) < 2 or len(keys) > MAX_BUCKET:
        return []
    ks = sorted(set(keys))
    out = []
    for i, a in enumerate(ks):
        for b in ks[i + 1 :]:
            score = verify(a, b)
            if score is not None:
                out.append(edge(score, a, b, "near"))
    return out


def near_edges(
    keys: Sequence[str],
    mapper: Callable[[Callable[[str], list[bytes]], Sequence[str]], Iterable[list[bytes]]] = map,
) -> list[Edge]:
    """All confirmed near-duplicate edges among distinct keys; ``mapper`` computes the
    signatures (``map``, or a process pool's)."""
    buckets: dict[bytes, list[str]] = {}
    for k, signature in zip(keys, mapper(bands, keys), strict=True):
        for band in signature:
            buckets.setdefault(band, []).append(k)
    edges = {e for bucket in buckets.values() for e in bucket_edges(bucket)}
    return sorted(edges, key=edge_order)


# --------------------------------------------------------------------------- components


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


def settle(units: list[Unit], edges: list[Edge]) -> Settled:
    """Apply edges best first, refusing any join the cannot-link facts forbid."""
    by_key = {u.key: u for u in units}
    uf = UnionFind()
    pages = {u.key: set(u.pages) for u in units}
    titles = {u.key: set(u.titles) for u in units}
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
        if e.kind == "near":
            result.near_merges += 1
        else:
            result.order_joins += 1
    groups: dict[str, list[Unit]] = {}
    for u in sorted(units, key=lambda u: u.key):
        groups.setdefault(uf.find(u.key), []).append(u)
    result.clusters = [groups[k] for k in sorted(groups)]
    return result
