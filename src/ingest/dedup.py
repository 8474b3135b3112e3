"""Identity: which listings are the same real resource (key → group → resolve).

1. Exact: listings whose summaries share a match key are one resource.
2. Near-duplicate: for the distinct keys, MinHash-LSH over character 3-grams proposes
   candidate pairs; a real similarity check (rapidfuzz ratio) confirms them. Pairs are
   applied best-first, in a deterministic order, and never join two groups that
   *cannot* be one resource: two listings of the same page, or two different original
   titles.

Nothing here reads a global: all state lives in :class:`Clusters`, built per run.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from rapidfuzz import fuzz

from .models import Listing
from .normalize import match_key

#: Confirmed near-duplicate: rapidfuzz ratio (0-100) of the two summary keys.
NEAR_DUP_RATIO = 88.0
#: Candidate generation: Jaccard threshold of the LSH index over character 3-grams.
LSH_THRESHOLD = 0.3
NUM_PERM = 64


@dataclass(slots=True)
class Group:
    """A union-find root's facts, for the cannot-link checks."""

    pages: set[tuple[str, str]] = field(default_factory=set)  # (sha256, format) of pages
    titles: set[str] = field(default_factory=set)  # match keys of original titles


class Clusters:
    """Union-find over listing indexes with cannot-link constraints."""

    def __init__(self, listings: list[Listing]) -> None:
        self.listings = listings
        self.parent = list(range(len(listings)))
        self.groups = [_group_of(x) for x in listings]
        self.near_merges = 0

    def find(self, i: int) -> int:
        root = i
        while self.parent[root] != root:
            root = self.parent[root]
        while self.parent[i] != root:
            self.parent[i], i = root, self.parent[i]
        return root

    def can_join(self, a: int, b: int) -> bool:
        ga, gb = self.groups[self.find(a)], self.groups[self.find(b)]
        if ga.pages & gb.pages:
            return False
        return not (ga.titles and gb.titles and not (ga.titles & gb.titles))

    def union(self, a: int, b: int) -> bool:
        ra, rb = self.find(a), self.find(b)
        if ra == rb:
            return False
        if rb < ra:
            ra, rb = rb, ra
        self.parent[rb] = ra
        ga, gb = self.groups[ra], self.groups[rb]
        ga.pages |= gb.pages
        ga.titles |= gb.titles
        return True

    def members(self) -> list[list[int]]:
        """The clusters, each sorted, ordered by their smallest member."""
        out: dict[int, list[int]] = defaultdict(list)
        for i in range(len(self.listings)):
            out[self.find(i)].append(i)
        return [out[k] for k in sorted(out)]


def _group_of(x: Listing) -> Group:
    g = Group()
    g.pages.add((x.prov.sha256, x.prov.format))
    if x.title_original:
        g.titles.add(match_key(x.title_original))
    return g


def cluster(listings: list[Listing], keys: list[str]) -> tuple[Clusters, list[tuple[int, int]]]:
    """Cluster listings; also return exact duplicates found on one page (index pairs)."""
    c = Clusters(listings)
    by_key: dict[str, list[int]] = defaultdict(list)
    for i, k in enumerate(keys):
        by_key[k].append(i)
    same_page: list[tuple[int, int]] = []
    for members in by_key.values():
        for other in members[1:]:
            if _same_page(listings[members[0]], listings[other]):
                same_page.append((members[0], other))
            c.union(members[0], other)
    reps = sorted((k, v[0]) for k, v in by_key.items())
    for _, a, b in near_duplicate_pairs([k for k, _ in reps]):
        ia, ib = reps[a][1], reps[b][1]
        if c.find(ia) != c.find(ib) and c.can_join(ia, ib) and c.union(ia, ib):
            c.near_merges += 1
    return c, same_page


def _same_page(a: Listing, b: Listing) -> bool:
    return (a.prov.sha256, a.prov.format) == (b.prov.sha256, b.prov.format)


def near_duplicate_pairs(keys: list[str]) -> list[tuple[float, int, int]]:
    """Confirmed near-duplicate pairs among distinct keys, best first, deterministic."""
    if len(keys) < 2:
        return []
    from datasketch import MinHash, MinHashLSH  # numpy-heavy: imported when needed
    from xxhash import xxh32_intdigest

    perms = MinHash(num_perm=NUM_PERM, seed=1, scheme="affine32").permutations
    lsh = MinHashLSH(threshold=LSH_THRESHOLD, num_perm=NUM_PERM)
    pairs: list[tuple[float, int, int]] = []
    for i, key in enumerate(keys):
        m = MinHash(
            num_perm=NUM_PERM,
            seed=1,
            permutations=perms,
            scheme="affine32",
            hashfunc=xxh32_intdigest,
        )
        m.update_batch([g.encode() for g in _shingles(key)])
        for j in sorted(lsh.query(m)):
            score = fuzz.ratio(keys[j], key)
            if score >= NEAR_DUP_RATIO:
                pairs.append((score, j, i))
        lsh.insert(i, m, check_duplication=False)
    pairs.sort(key=lambda p: (-p[0], p[1], p[2]))
    return pairs


def _shingles(key: str) -> Iterable[str]:
    if len(key) < 3:
        return {key}
    return {key[i : i + 3] for i in range(len(key) - 2)}
