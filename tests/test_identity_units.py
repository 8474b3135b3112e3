"""The identity rules as pure functions, on literal inputs: each assertion pins one rule
(a threshold, a window bound, a tie-break, a signature) so that changing the rule fails here.
Mutation testing (``make mutation``) runs these first; the command-line tests in
test_identity_rules.py and tests/test_eval.py show the same rules on whole pages.
"""

from __future__ import annotations

import hashlib
import struct

from ingest.records import Listing, Provenance
from ingest.resolve.align import (
    ORDER_RATIO,
    OrderPoint,
    _best,
    order_edges,
    order_point,
    topic_edges,
)
from ingest.resolve.graph import (
    Edge,
    UnionFind,
    Unit,
    best_edges,
    edge,
    edge_order,
    settle,
    summary_key,
)
from ingest.resolve.near import bands, signatures, verify
from ingest.resolve.topics import derived_slug

# Keys of 20 distinct characters each, so similarities are exact: fuzz.ratio of two
# 20-character keys is 5 x their longest common subsequence. P is shared by A and B.
BLOCK = iter(range(0x4E00, 0x9FFF, 20))


def _key(n: int = 20) -> str:
    start = next(BLOCK)
    return "".join(chr(start + i) for i in range(n))


P, Q, R, J = _key(10), _key(10), _key(10), _key(10)  # J: junk no other key holds
A, B = P + Q, P + R  # ratio 50
C, D, W = _key(), _key(), _key()


def _listing(key: str, n: int, fmt: str, file: str = "f", rank: int | None = None) -> Listing:
    prov = Provenance(file, "sha-" + file, fmt, f"at {n}", n, 1)
    return Listing(prov, n, key, key=key, index=n, rank=rank)


def _page(*keys: str) -> list[OrderPoint]:
    return [order_point(_listing(k, n, "topic-page", "page", n + 1)) for n, k in enumerate(keys)]


def _entries(*keys: str, file: str = "list") -> list[OrderPoint]:
    return [order_point(_listing(k, n, "topic-list", file)) for n, k in enumerate(keys)]


def _pairs(edges: list[Edge]) -> list[tuple[str, str, float]]:
    return [(e.a, e.b, e.score) for e in edges]


def test_best_needs_the_order_ratio_and_a_margin() -> None:
    key = "abcdefghij"
    assert _best(key, []) is None
    assert _best("abcde", [(4, "abcxy")]) == (4, ORDER_RATIO)  # exactly 60: enough
    assert _best("abcde", [(4, "abxyz")]) is None  # 40: not enough
    assert _best(key, [(1, "abcdefgxyz"), (2, "abcdefuvwx")]) == (1, 70.0)  # margin 10: clear
    assert _best(key, [(1, "abcdefgxyz"), (2, "abcdefguvw")]) is None  # margin 0


def test_an_unmatched_first_entry_is_aligned_within_its_window() -> None:
    a2 = P + Q[:4] + R[:3] + J[:3]  # 70 to A, 65 to B: only A is in its window
    page = _page(A, C, B)
    assert _pairs(order_edges(page, _entries(a2, C, B))) == [(min(a2, A), max(a2, A), 70.0)]


def test_an_unmatched_last_entry_is_aligned_within_its_window() -> None:
    c2 = C[:14] + J[:6]
    assert _pairs(order_edges(_page(A, D, C), _entries(A, D, c2))) == [
        (min(c2, C), max(c2, C), 70.0)
    ]


def test_the_window_ends_at_the_neighbours_matches() -> None:
    x = P + R[:4] + Q[:3] + J[:3]  # 70 to B (its window), 65 to A (its left neighbour)
    assert _pairs(order_edges(_page(A, B, C), _entries(A, x, C))) == [(min(x, B), max(x, B), 70.0)]
    y = W[:15] + J[:5]  # like W, past the next match: never looked at
    assert order_edges(_page(A, D, C, W, B), _entries(A, y, C, B)) == []


def test_an_aligned_entry_bounds_the_next_window() -> None:
    x = P + R[:6] + J[:4]  # 80 to B, 50 to A
    y = P + R[:3] + Q[:3] + J[:4]  # 65 to B and to A: clear only once B is taken
    got = order_edges(_page(C, B, A, D), _entries(C, x, y, D))
    assert _pairs(got) == [(min(x, B), max(x, B), 80.0), (min(y, A), max(y, A), 65.0)]
    assert {e.kind for e in got} == {"order"}


def test_exact_and_near_matches_are_not_order_edges() -> None:
    b_near = B[:18] + J[:2]  # 90: a near-duplicate, joined by its own edge
    assert order_edges(_page(A, B), _entries(A, b_near)) == []
    b2 = B[:18] + J[2:4]  # a near-duplicate of B listed after it
    x = b2[:14] + J[4:10]  # 70 to b2 and to B
    assert order_edges(_page(A, B, b2, D), _entries(A, b2, x, D)) == []


def test_each_topic_list_is_aligned_on_its_own() -> None:
    x, y = C[:14] + J[:6], C[:14] + J[4:10]
    page = _page(A, C, B)
    lists = _entries(A, x, B, file="l1") + _entries(A, y, B, file="l2")
    assert sorted(_pairs(topic_edges(page + lists))) == sorted(
        [(min(x, C), max(x, C), 70.0), (min(y, C), max(y, C), 70.0)]
    )


def test_the_page_is_read_in_rank_order() -> None:
    x = C[:14] + J[:6]
    page = [
        order_point(_listing(C, 0, "topic-page", "page", 2)),
        order_point(_listing(A, 1, "topic-page", "page", 1)),
        order_point(_listing(B, 2, "topic-page", "page", 3)),
    ]
    assert _pairs(topic_edges(page + _entries(A, x, B))) == [(min(x, C), max(x, C), 70.0)]


def test_edges_round_scores_and_order_best_first() -> None:
    assert edge(91.23456, "b", "a", "near") == Edge(91.235, "a", "b", "near")
    weak, strong = edge(70, "a", "b", "order"), edge(90, "c", "d", "near")
    assert sorted([weak, strong], key=edge_order) == [strong, weak]


def test_summary_key_is_computed_when_missing() -> None:
    x = _listing("", 0, "topic-page")
    x.summary_zh = "第一篇 文章，摘要！"
    assert summary_key(x) == "第一篇文章摘要"


def test_verify_confirms_only_near_duplicates() -> None:
    assert verify(A, A[:18] + J[:2]) == 90.0
    assert verify(A, A[:17] + J[:3]) is None  # 85
    assert verify(A, C) is None


def test_band_signatures_are_pinned() -> None:
    """The LSH signatures are part of the data's identity (the Dask shuffles group by them);
    their recipe (seed, permutations, hash, 3-grams, band layout) must not drift."""
    for key, digest in [
        ("第一篇文章的摘要介绍一个用于测试的资源", "ea3a9dd71e391bd4"),
        ("短文", "d04156083d0b459b"),
        ("abc", "4f6a49b04c13f6d7"),
    ]:
        signature = bands(key)
        assert len(signature) == 21 and all(len(b) == 16 for b in signature)
        assert hashlib.blake2b(b"".join(signature), digest_size=8).hexdigest() == digest, key


def test_a_band_is_its_number_and_its_rows_of_the_minhash() -> None:
    key = "第一篇文章的摘要介绍一个用于测试的资源"
    rows = signatures([key], 63)[0].tolist()
    for n, band in enumerate(bands(key)):
        assert list(struct.unpack("<4I", band)) == [n, *rows[3 * n : 3 * n + 3]]


def test_derived_slugs_are_pinned() -> None:
    assert derived_slug("主题乙只有列表。") == "topic-91da6cb4f152"


def _unit(key: str, page: str, title: str | None = None) -> Unit:
    prov = Provenance("f.txt", page, "topic-page", "listing 1", 0, 1)
    return Unit(key, [Listing(prov, 0, "摘要", title_original=title)])


def _clusters(units: list[Unit], edges: list[Edge]) -> list[list[str]]:
    return [[u.key for u in c] for c in settle(units, edges).clusters]


def test_settle_applies_the_strongest_edge_first() -> None:
    units = [_unit("k1", "p1"), _unit("k2", "p2"), _unit("k3", "p2")]
    edges = [edge(90, "k1", "k3", "near"), edge(95, "k1", "k2", "near")]
    assert _clusters(units, edges) == [["k1", "k2"], ["k3"]]


def test_settle_keeps_the_pages_of_both_sides() -> None:
    """A joined group is on every page either side was on: a third unit on any of them
    cannot join it, whichever side became the root."""
    units = [_unit("k1", "p1"), _unit("k2", "p2"), _unit("k3", "p2")]
    edges = [edge(95, "k1", "k2", "near"), edge(90, "k1", "k3", "near")]
    assert _clusters(units, edges) == [["k1", "k2"], ["k3"]]
    units = [_unit("k1", "p1"), _unit("k2", "p2"), _unit("k3", "p1")]
    edges = [edge(95, "k1", "k2", "near"), edge(90, "k2", "k3", "near")]
    assert _clusters(units, edges) == [["k1", "k2"], ["k3"]]
    units = [_unit("k1", "p1"), _unit("k2", "p2"), _unit("k3", "p3"), _unit("k4", "p2")]
    edges = [edge(95, "k1", "k3", "near"), edge(93, "k2", "k3", "near")]
    edges.append(edge(90, "k1", "k4", "near"))
    assert _clusters(units, edges) == [["k1", "k2", "k3"], ["k4"]]


def test_settle_keeps_the_titles_of_both_sides() -> None:
    units = [_unit("k1", "p1", "T1"), _unit("k2", "p2"), _unit("k3", "p3", "T2")]
    edges = [edge(95, "k1", "k2", "near"), edge(90, "k2", "k3", "near")]
    assert _clusters(units, edges) == [["k1", "k2"], ["k3"]]


def test_settle_goes_on_after_a_refused_or_redundant_edge() -> None:
    units = [_unit(f"k{n}", f"p{n}") for n in (1, 2, 3, 5)] + [_unit("k4", "p1")]
    edges = [
        edge(95, "k1", "k2", "near"),
        edge(94, "k2", "k3", "order"),
        edge(93, "k1", "k3", "near"),  # already one group
        edge(92, "k3", "k4", "near"),  # k4 shares page p1 with k1: refused
        edge(91, "k4", "k5", "order"),
    ]
    settled = settle(units, edges)
    assert [[u.key for u in c] for c in settled.clusters] == [["k1", "k2", "k3"], ["k4", "k5"]]
    assert (settled.near_merges, settled.order_joins) == (1, 2)
    assert [(e.a, e.b) for e in settled.applied] == [("k1", "k2"), ("k2", "k3"), ("k4", "k5")]


def test_settle_counts_each_join() -> None:
    units = [_unit(f"k{n}", f"p{n}") for n in range(1, 4)]
    near = settle(units, [edge(95, "k1", "k2", "near"), edge(94, "k2", "k3", "near")])
    assert (near.near_merges, near.order_joins) == (2, 0)


def test_settle_ignores_edges_to_keys_it_was_not_given() -> None:
    assert _clusters([_unit("k1", "p1")], [edge(95, "k1", "zz", "near")]) == [["k1"]]
    assert _clusters([_unit("k2", "p1")], [edge(95, "aa", "k2", "near")]) == [["k2"]]


def test_best_edges_keeps_the_strongest_per_pair_best_first() -> None:
    self_edge = Edge(100.0, "a", "a", "near")
    for found in (
        [self_edge, edge(90, "a", "b", "order"), edge(95, "a", "b", "near")],
        [edge(95, "a", "b", "near"), edge(90, "a", "b", "order")],
    ):
        assert best_edges(found) == [Edge(95.0, "a", "b", "near")]
    got = best_edges([edge(70, "c", "d", "order"), edge(99, "e", "f", "near")])
    assert got == [Edge(99.0, "e", "f", "near"), Edge(70.0, "c", "d", "order")]


def test_union_find_follows_chains_to_the_smallest_root() -> None:
    uf = UnionFind()
    uf.union("c", "d")
    uf.union("b", "c")
    uf.union("a", "b")
    assert [uf.find(x) for x in "dcba"] == ["a", "a", "a", "a"]


def test_the_page_is_read_in_rank_order_from_zero() -> None:
    x = C[:14] + J[:6]
    page = [
        order_point(_listing(C, 0, "topic-page", "page", 1)),
        order_point(_listing(A, 1, "topic-page", "page", 0)),
        order_point(_listing(B, 2, "topic-page", "page", 2)),
    ]
    assert _pairs(topic_edges(page + _entries(A, x, B))) == [(min(x, C), max(x, C), 70.0)]
