"""Align: topic-list entries whose summaries match no listing of their topic page.

Both views of a topic list its resources in the same order. An unmatched entry (reworded
beyond near-duplicate similarity, damaged or cut) is compared only with the unmatched
listings between its matched neighbours, and an *order edge* joins it to the most similar
one when that is clear: order is the evidence, similarity confirms it. Pure per topic.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable
from operator import itemgetter

import numpy as np
from msgspec import Struct
from rapidfuzz import fuzz, process

from ingest.records import Format, Listing
from ingest.resolve.graph import Edge, edge, summary_key
from ingest.resolve.near import NEAR_DUP_RATIO, may_match, verify

#: Similarity (0-100) a summary must reach to be aligned by order alone.
ORDER_RATIO = 60.0
#: The best candidate must beat the second by this much to count as clear.
MARGIN = 10.0
#: An unmatched entry is compared with the listings at most this far from where its
#: neighbours put it: a wider stretch holds no order evidence, and must not cost quadratic time.
WINDOW = 64
#: Two near-duplicate keys share at least ``LEAST * len - 1`` of either one's bigrams. A ratio
#: r = NEAR_DUP_RATIO / 100 allows an indel distance d <= (1 - r)(la + lb), and strings that
#: far apart share max(la, lb) - 1 - 2d bigrams (the q-gram lemma); with lb <= la (2 - r) / r,
#: la - 1 - 2d >= la (1 - 2 (1 - r)(1 + (2 - r) / r)) - 1 (0.4545 la - 1 at r = 0.88),
#: rounded down to hundredths so that rounding never loses a pair.
_R = NEAR_DUP_RATIO / 100
LEAST = math.floor(100 * (1 - 2 * (1 - _R) * (1 + (2 - _R) / _R))) / 100
#: Up to this many comparisons, unmatched entries are compared with every listing of the
#: page (building the index costs more than it saves).
SCAN_LIMIT = 20_000
#: The near-match index is built over runs of listings of this many characters at a time:
#: its memory (a few hundred bytes a character) stays bounded on a huge page.
CHUNK_CHARS = 500_000


class OrderPoint(Struct, frozen=True, array_like=True, gc=False):
    """What alignment reads of a listing (the Dask engine ships them between workers: a
    whole listing weighs five times as much)."""

    format: str
    sha256: str
    file: str
    rank: int | None
    at: int  # the listing's index: (file, at) identifies it
    ordinal: int
    key: str

    @property
    def lid(self) -> tuple[str, int]:
        return (self.file, self.at)


def order_point(x: Listing) -> OrderPoint:
    p = x.prov
    return OrderPoint(p.format, p.sha256, p.file, x.rank, x.index, x.ordinal, summary_key(x))


def order_edges(page: list[OrderPoint], entries: list[OrderPoint]) -> list[Edge]:
    """Order edges between one topic's page listings (rank order) and one list's entries,
    in linear time: the matched neighbours come from a running maximum and a suffix minimum,
    and an entry is compared with at most ``2 * WINDOW + 1`` listings."""
    pkeys = [x.key for x in page]
    ekeys = [x.key for x in entries]
    exact = {k: p for p, k in reversed(list(enumerate(pkeys)))}
    near = near_matches(pkeys, [k for k in dict.fromkeys(ekeys) if k not in exact])
    matched = [exact[k] if k in exact else near[k] for k in ekeys]
    after = _suffix_min(matched, len(page))
    out = []
    lo, lo_n = -1, -1  # the furthest page position matched so far, and by which entry
    for n, key in enumerate(ekeys):
        if matched[n] is None:
            # Every listing strictly between the neighbours' matches is unmatched: an earlier
            # entry's match is at most lo, a later one's at least after[n + 1].
            best = _best(key, _window(pkeys, lo, after[n + 1], lo + n - lo_n))
            if best is not None:
                matched[n] = best[0]
                out.append(edge(best[1], key, pkeys[best[0]], "order"))
        m = matched[n]
        if m is not None and m >= lo:  # a repeated entry: count from its last copy
            lo, lo_n = m, n
    return out


def _suffix_min(matched: list[int | None], end: int) -> list[int]:
    """``out[n]`` = the smallest match among ``matched[n:]`` (``end`` when there is none)."""
    out = [end] * (len(matched) + 1)
    for n in range(len(matched) - 1, -1, -1):
        m = matched[n]
        out[n] = out[n + 1] if m is None or m > out[n + 1] else m
    return out


def _window(pkeys: list[str], lo: int, hi: int, expected: int) -> list[tuple[int, str]]:
    """The listings strictly between ``lo`` and ``hi`` within ``WINDOW`` of where the entry
    is expected; the whole stretch when it holds at most ``WINDOW + 1`` listings."""
    expected = min(expected, hi - 1)  # never below lo + 1: the entry comes after lo's
    start, stop = max(lo + 1, expected - WINDOW), min(hi, expected + WINDOW + 1)
    return [(p, pkeys[p]) for p in range(start, stop)]


def near_matches(pkeys: list[str], keys: list[str]) -> dict[str, int | None]:
    """For each key, the first page listing it nearly matches (or None): a scan of the
    listings when that costs few comparisons, else through a :class:`NearIndex` of each
    run of listings holding ``CHUNK_CHARS`` characters, in page order (the same answers in
    linear time, and the index's memory bounded whatever the size of the page)."""
    if len(keys) * len(pkeys) <= SCAN_LIMIT:
        return _scan_all(pkeys, keys)
    found: dict[str, int | None] = dict.fromkeys(keys)
    for start, stop in _chunks(pkeys):
        left = [k for k in keys if found[k] is None]
        if not left:
            break
        index = NearIndex(pkeys[start:stop])
        for k in left:
            if (p := index.first(k)) is not None:
                found[k] = start + p
    return found


def _scan_all(pkeys: list[str], keys: list[str]) -> dict[str, int | None]:
    """For each key, the first listing it nearly matches; a pair :func:`~.near.may_match`
    rules out (a bound, never wrong, at a twentieth of a comparison) is not compared: on a
    topic page nearly all pairs are of different resources."""
    if not keys or not pkeys:
        return dict.fromkeys(keys)
    n, m = len(keys), len(pkeys)
    pairs = np.stack([np.repeat(np.arange(n), m), np.tile(np.arange(n, n + m), n)], axis=1)
    ok = may_match(keys + pkeys, pairs).reshape(n, m)
    return {k: _scan(pkeys, k, np.flatnonzero(ok[i]).tolist()) for i, k in enumerate(keys)}


def _chunks(pkeys: list[str]) -> list[tuple[int, int]]:
    """Consecutive runs of listings of about ``CHUNK_CHARS`` characters (at least one)."""
    out, start, size = [], 0, 0
    for p, k in enumerate(pkeys):
        if size and size + len(k) > CHUNK_CHARS:
            out.append((start, p))
            start, size = p, 0
        size += len(k)
    return [*out, (start, len(pkeys))] if pkeys else out


def _scan(pkeys: list[str], key: str, among: Iterable[int]) -> int | None:
    """The first listing of ``among`` (positions, ascending) ``key`` nearly matches."""
    return next((p for p in among if verify(key, pkeys[p]) is not None), None)


class NearIndex:
    """Finds the first page listing whose summary nearly matches a key, as a scan of all
    listings would, without comparing the key with each. Near-duplicates share ``LEAST``
    of their bigrams, so (the prefix-filter lemma) one among the first few of each, rarest
    first: only listings sharing one are compared, in page order. Keys too short for the
    bound are compared with every listing."""

    def __init__(self, pkeys: list[str]) -> None:
        self.pkeys = pkeys
        grams = [_bigrams(k) for k in pkeys]
        freq = Counter(g for gs in grams for g in gs)
        # rarest first; equals in first-seen order (any fixed order keeps the lemma)
        self.rank = {g: r for r, (g, _) in enumerate(sorted(freq.items(), key=itemgetter(1)))}
        self.short: list[int] = []  # keys too short to filter: always compared
        self.postings: dict[str, list[int]] = {}
        for p, (k, gs) in enumerate(zip(pkeys, grams, strict=True)):
            prefix = self._prefix(k, gs)
            if prefix is None:
                self.short.append(p)
            for g in prefix or ():
                self.postings.setdefault(g, []).append(p)

    def _prefix(self, key: str, grams: list[str]) -> list[str] | None:
        """The rarest bigrams any near-duplicate must share one of; None if too short.
        Bigrams no page key has come first in the order (and can be left out)."""
        shared = math.ceil(LEAST * len(key) - 1)
        if shared < 1:
            return None
        known = [g for g in grams if g in self.rank]
        keep = len(grams) - shared + 1 - (len(grams) - len(known))
        return sorted(known, key=self.rank.__getitem__)[: max(keep, 0)]

    def first(self, key: str) -> int | None:
        prefix = self._prefix(key, _bigrams(key))
        if prefix is None:
            return _scan(self.pkeys, key, range(len(self.pkeys)))
        found = {p for g in prefix for p in self.postings.get(g, ())}.union(self.short)
        return _scan(self.pkeys, key, sorted(found))


def _bigrams(key: str) -> list[str]:
    """The bigrams of ``key`` as a set: a bigram's k-th occurrence (k > 1) is named
    ``bigram + str(k)``, which no bigram is."""
    grams = [key[i : i + 2] for i in range(len(key) - 1)]
    if len(set(grams)) == len(grams):
        return grams
    seen: dict[str, int] = {}
    out = []
    for g in grams:
        k = seen[g] = seen.get(g, 0) + 1
        out.append(g if k == 1 else f"{g}{k}")
    return out


def _best(key: str, window: list[tuple[int, str]]) -> tuple[int, float] | None:
    """The listing of ``window`` (ascending positions) clearly most similar to ``key``."""
    if not window:
        return None
    scores = process.cdist([key], [pk for _, pk in window], scorer=fuzz.ratio, dtype=np.float64)[0]
    top = int(scores.argmax())  # the first of equals: the lowest position
    best = float(scores[top])
    if best < ORDER_RATIO:
        return None
    scores[top] = -MARGIN
    if best - float(scores.max()) < MARGIN:
        return None  # two listings fit about as well: not clear, leave it
    return window[top][0], best


def topic_edges(points: Iterable[OrderPoint]) -> list[Edge]:
    """Order edges of one topic: its page listings against each of its topic-lists."""
    page: list[OrderPoint] = []
    lists: dict[str, list[OrderPoint]] = {}
    for x in points:
        if x.format == Format.TOPIC_PAGE:
            page.append(x)
        elif x.format == Format.TOPIC_LIST:
            lists.setdefault(x.sha256 + x.file, []).append(x)
    if not page:
        return []
    page.sort(key=lambda x: (x.rank or 0, x.lid))
    in_order = (sorted(lists[name], key=lambda x: x.ordinal) for name in sorted(lists))
    return [e for entries in in_order for e in order_edges(page, entries)]
