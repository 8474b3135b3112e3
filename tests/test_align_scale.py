"""Order alignment at scale: the near-match index gives exactly the answers of a scan of
every listing, and an unmatched entry is compared only with listings near where it is
expected, so alignment is linear in unmatched entries, never quadratic.
``bench/adversarial.py`` shows the linear growth; these pin the rules that give it.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ingest.records import Listing, Provenance
from ingest.resolve import align
from ingest.resolve.align import (
    WINDOW,
    NearIndex,
    OrderPoint,
    _scan,
    _scan_all,
    near_matches,
    order_edges,
    order_point,
)


def _han(rng: random.Random, n: int = 20) -> str:
    return "".join(chr(rng.randrange(0x4E00, 0x9FFF)) for _ in range(n))


def _listing(key: str, n: int, fmt: str, file: str) -> OrderPoint:
    prov = Provenance(file, "sha-" + file, fmt, f"at {n}", n, 1)
    rank = n + 1 if fmt == "topic-page" else None
    return order_point(Listing(prov, n, key, key=key, index=n, rank=rank))


def _edit(rng: random.Random, key: str, edits: int, alphabet: str) -> str:
    chars = list(key)
    for _ in range(edits):
        op = rng.randrange(3)
        at = rng.randrange(len(chars) + 1)
        if op == 0 or not chars:
            chars.insert(at, rng.choice(alphabet))
        elif op == 1:
            del chars[min(at, len(chars) - 1)]
        else:
            chars[min(at, len(chars) - 1)] = rng.choice(alphabet)
    return "".join(chars)


@settings(max_examples=300, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    alphabet=st.sampled_from(
        ["ab", "abcdef", "一二三四五六七八九十", "abcdefghijklmnopqrstuvwxyz0123"]
    ),
    size=st.integers(1, 40),
    length=st.integers(0, 60),
)
def test_the_index_answers_as_a_scan_of_every_listing(
    seed: int, alphabet: str, size: int, length: int
) -> None:
    rng = random.Random(seed)
    base = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, length))) for _ in range(4)]
    pkeys = [_edit(rng, rng.choice(base), rng.randrange(8), alphabet) for _ in range(size)]
    keys = [_edit(rng, rng.choice(pkeys), rng.randrange(10), alphabet) for _ in range(30)]
    index = NearIndex(pkeys)
    assert [index.first(k) for k in keys] == [_scan(pkeys, k, range(len(pkeys))) for k in keys]
    # the scan of pairs the character counts leave gives the same answers too
    distinct = list(dict.fromkeys(keys))
    plain = {k: _scan(pkeys, k, range(len(pkeys))) for k in distinct}
    assert _scan_all(pkeys, distinct) == plain


def _stretch_case(target: int) -> list[tuple[str, str]]:
    """A page of an anchor then 200 unmatched listings; a list of the anchor, then one
    entry reworded from the listing at page position ``target`` (70 % similar)."""
    rng = random.Random(target)
    anchor, fillers = _han(rng), [_han(rng) for _ in range(200)]
    entry = fillers[target - 1][:14] + _han(rng, 6)
    page = [_listing(k, n, "topic-page", "page") for n, k in enumerate([anchor, *fillers])]
    entries = [_listing(k, n, "topic-list", "list") for n, k in enumerate([anchor, entry])]
    return [(e.a, e.b) for e in order_edges(page, entries)]


def test_an_entry_is_compared_only_near_where_its_neighbours_put_it() -> None:
    # The entry follows the anchor (page position 0), so it is expected at position 1.
    assert len(_stretch_case(1 + WINDOW)) == 1  # the furthest listing still compared
    assert _stretch_case(2 + WINDOW) == []  # one further: not compared, no order evidence
    assert len(_stretch_case(1)) == 1


# Where an entry is expected: after the furthest match so far, one place per entry since the
# entry that made it; never past the next match of a later entry. Each case is a page of
# random keys (no two alike) and a list whose entry ``x`` rewords one listing (70 %).
RNG = random.Random(7)
F = [_han(RNG) for _ in range(300)]  # page listings
J = [_han(RNG) for _ in range(300)]  # list entries like nothing on the page


def _reworded(key: str) -> str:
    return key[:14] + _han(random.Random(key), 6)


def _joined(page: list[str], entries: list[str]) -> set[str]:
    """The page listings the list's entries were joined to by order."""
    listed = [_listing(k, n, "topic-page", "page") for n, k in enumerate(page)]
    listing = [_listing(k, n, "topic-list", "list") for n, k in enumerate(entries)]
    return {k for e in order_edges(listed, listing) for k in (e.a, e.b) if k in page}


def test_an_entry_before_any_match_is_expected_at_its_own_place() -> None:
    page = F[:200]
    assert _joined(page, [J[0], J[1], _reworded(page[2 + WINDOW])]) == {page[2 + WINDOW]}
    assert _joined(page, [J[0], J[1], _reworded(page[3 + WINDOW])]) == set()


def test_a_repeated_entry_counts_from_its_last_copy() -> None:
    page = F[:200]
    a = page[0]
    assert _joined(page, [a, a, _reworded(page[1 + WINDOW])]) == {page[1 + WINDOW]}
    assert _joined(page, [a, a, _reworded(page[2 + WINDOW])]) == set()


def test_an_entry_is_never_joined_past_a_later_entrys_match() -> None:
    a, f1, b, f2, c = F[:5]
    x = _reworded(f2)  # f2 lies after b on the page, x before b in the list
    assert _joined([a, f1, b, f2], [a, x, b]) == set()
    assert _joined([a, f1, b, f2], [a, x, J[0], b]) == set()
    assert _joined([a, f1, b, f2, c], [a, x, c, b]) == set()  # b's match comes first
    assert _joined([a, f2, b], [a, x, b]) == {f2}


def test_entries_beyond_a_stretch_are_expected_at_its_end() -> None:
    page = F[:102]  # a stretch of 100 listings between page[0] and page[101]
    head, tail = [page[0], *J[:200]], [page[101]]
    assert _joined(page, [*head, _reworded(page[100 - WINDOW]), *tail]) == {page[100 - WINDOW]}
    assert _joined(page, [*head, _reworded(page[99 - WINDOW]), *tail]) == set()


@pytest.mark.parametrize("chunk", [align.CHUNK_CHARS, 150])  # one index, or one per 7 keys
def test_many_unmatched_entries_align_through_the_index_as_through_a_scan(
    chunk: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(align, "CHUNK_CHARS", chunk)
    rng = random.Random(3)
    page = F[:300]
    entries = []
    for n in range(0, 300, 2):  # in page order: near copies, rewordings and strangers
        entries.append((page[n][:-1] + "x", _reworded(page[n]), J[n])[rng.randrange(3)])
    listed = [_listing(k, n, "topic-page", "page") for n, k in enumerate(page)]
    listing = [_listing(k, n, "topic-list", "list") for n, k in enumerate(entries)]
    indexed = order_edges(listed, listing)  # 150 x 300 comparisons: the index
    monkeypatch.setattr(align, "SCAN_LIMIT", 10**9)
    assert order_edges(listed, listing) == indexed and len(indexed) > 20


def test_a_key_takes_its_first_near_match_across_index_chunks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(align, "CHUNK_CHARS", 40)  # an index per two 20-character keys
    monkeypatch.setattr(align, "SCAN_LIMIT", 0)
    key, twin = F[1][:-1] + "x", F[1][:-1] + "y"  # both 95 to F[1] and to each other
    page = [F[0], F[1], F[2], F[3], twin, F[5]]
    assert near_matches(page, [key, J[0]]) == {key: 1, J[0]: None}
    assert near_matches(page, [key]) == {key: 1}  # found in the first: the rest unread
    assert near_matches(page[2:], [key]) == {key: 2}  # the twin, in the second index
