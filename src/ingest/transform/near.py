"""Near-duplicate edges: summaries that differ by a reworded clause are one resource.

MinHash over character 3-grams of each distinct summary key, cut into LSH bands; keys
sharing a band are candidates, and a real similarity check (rapidfuzz) confirms them. No
pair is compared unless a band brought it together (key → group by band → resolve).

The signatures are made where the keys are (a pool, Dask workers), in batches; the bands
are grouped where they are all gathered, as arrays (:func:`near_edges`). A pair that shares
several bands is checked once, and a pair whose characters cannot reach the bar (a bound
from their character counts, :func:`may_match`) is not checked at all: at 100 MB that is
269,000 of the 277,000 candidate pairs, each a 240-character LCS.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

import numpy as np
from rapidfuzz import fuzz

from .minhash import signatures, within
from .units import Edge, edge

#: Confirmed near-duplicate: rapidfuzz ratio (0-100) of the two summary keys.
NEAR_DUP_RATIO = 88.0
#: MinHash size and LSH banding: 21 bands of 3 rows; pairs with Jaccard ≈ 0.36 or more of
#: their 3-gram sets are likely to share a band (a reworded clause keeps well above that).
BANDS, ROWS = 21, 3
#: A band bucket with more keys than this is not expanded into pairs (templated text).
MAX_BUCKET = 200


#: Keys whose signatures are computed in one batch (numpy arrays stay in cache).
BATCH = 256


def bands(key: str) -> list[bytes]:
    """The LSH band signatures of a key (band number included, so bands never mix)."""
    return bands_many([key])[0]


def bands_many(keys: Sequence[str]) -> list[list[bytes]]:
    """The band signatures of each key: its band number and that band's rows of the key's
    MinHash (datasketch's affine32 scheme over xxHash32 of character 3-grams, seed 1), as
    the 16 bytes of four little-endian uint32s. Not digested: a dict hashes them anyway."""
    sig = _signatures(keys)
    cells = np.empty((len(sig), BANDS, ROWS + 1), dtype="<u4")
    cells[:, :, 0] = np.arange(BANDS)
    cells[:, :, 1:] = sig.reshape(len(sig), BANDS, ROWS)
    out: list[list[bytes]] = cells.view(f"V{4 * (ROWS + 1)}").reshape(len(sig), BANDS).tolist()
    return out


def _signatures(keys: Sequence[str]) -> Any:
    """The keys' MinHash signatures, computed ``BATCH`` keys at a time."""
    parts = [signatures(keys[i : i + BATCH], BANDS * ROWS) for i in range(0, len(keys), BATCH)]
    return np.concatenate(parts) if parts else np.empty((0, BANDS * ROWS), dtype=np.uint32)


def verify(a: str, b: str) -> float | None:
    """The similarity of two keys if they are near-duplicates, else None.

    The ratio is 200 × LCS / (len a + len b), so keys whose lengths differ too much for
    it to reach the bar even if the shorter were all shared fail without a comparison:
    rapidfuzz does not check that first, and a quarter of the candidate pairs fail on it.
    """
    shorter, total = min(len(a), len(b)), len(a) + len(b)
    if 200 * shorter < NEAR_DUP_RATIO * total:
        return None
    score = fuzz.ratio(a, b, score_cutoff=NEAR_DUP_RATIO)
    return float(score) if score else None


class Signed(NamedTuple):
    """Summary keys and their MinHash signatures: ``rows[i]`` is ``keys[i]``'s."""

    keys: list[str]
    rows: Any  # (len(keys), BANDS * ROWS) uint32


def signed(keys: Sequence[str]) -> Signed:
    """The keys with their signatures."""
    return Signed(list(keys), _signatures(keys))


def near_edges(parts: Iterable[Signed]) -> list[Edge]:
    """Confirmed near-duplicate edges among the keys of ``parts``, in key order: every pair
    of distinct keys that share a band bucket of at most ``MAX_BUCKET`` keys, checked once."""
    keys, rows = _in_key_order(parts)
    pairs = candidate_pairs(rows)
    pairs = pairs[may_match(keys, pairs)]
    out = []
    for i, j in pairs.tolist():
        score = verify(keys[i], keys[j])
        if score is not None:
            out.append(edge(score, keys[i], keys[j], "near"))
    return out


def merged(parts: Iterable[Signed]) -> Signed:
    """The keys of ``parts``, each once and sorted, with their signatures."""
    return Signed(*_in_key_order(parts))


def _in_key_order(parts: Iterable[Signed]) -> tuple[list[str], Any]:
    """Every distinct key once, sorted, with its signature (blind to the parts' order)."""
    at: dict[str, Any] = {}
    for part in parts:
        for key, row in zip(part.keys, part.rows, strict=True):
            at.setdefault(key, row)
    keys = sorted(at)
    rows = np.array([at[k] for k in keys], dtype=np.uint32).reshape(len(keys), BANDS * ROWS)
    return keys, rows


def candidate_pairs(rows: Any) -> Any:
    """``(i, j)``, ``i < j``, for every two rows that share a band's values in a bucket of
    at most ``MAX_BUCKET`` rows; each pair once, in order: an ``(m, 2)`` int64 array."""
    n = max(len(rows), 1)
    codes = np.concatenate(
        [_band_pairs(rows[:, b * ROWS : (b + 1) * ROWS], n) for b in range(BANDS)]
    )
    codes.sort()
    found = codes[np.concatenate(([True], codes[1:] != codes[:-1]))] if len(codes) else codes
    return np.stack([found // n, found % n], axis=1)


def _band_pairs(band: Any, n: int) -> Any:
    """The pairs of one band, each coded as ``i * n + j``."""
    values = np.ascontiguousarray(band).view(f"V{4 * ROWS}").ravel()
    _, bucket, counts = np.unique(values, return_inverse=True, return_counts=True)
    size = counts[bucket]
    members = np.flatnonzero((size >= 2) & (size <= MAX_BUCKET))
    order = np.argsort(bucket[members], kind="stable")  # a bucket's rows stay ascending
    members, bucket = members[order], bucket[members][order]
    # each member pairs with the members after it in its bucket
    end = np.searchsorted(bucket, bucket, side="right")
    after = end - np.arange(len(members)) - 1
    left = np.repeat(members, after)
    right = members[np.repeat(np.arange(len(members)) + 1, after) + within(after)]
    return left.astype(np.int64) * n + right


#: The character histograms :func:`may_match` compares have 2 ** HIST_BITS buckets.
HIST_BITS = 6
HIST_BINS = 1 << HIST_BITS
#: Chunk of pairs whose histograms are compared at once (bounded memory).
_PAIR_CHUNK = 16_384


def may_match(keys: Sequence[str], pairs: Any) -> Any:
    """For each pair, False when it cannot be a near-duplicate, True otherwise.

    The ratio is 200 × LCS / (len a + len b), and a common subsequence holds each character
    at most as often as the key holding it fewer times. Characters counted by hash bucket
    only raise that bound (the smaller of two sums is at least the sum of the smaller
    parts), so a pair whose bound misses the bar misses it for sure: no pair that
    :func:`verify` would confirm is ever dropped.
    """
    lengths = np.fromiter(map(len, keys), dtype=np.int64, count=len(keys))
    points = np.frombuffer("".join(keys).encode("utf-32-le", "surrogatepass"), dtype="<u4")
    mixed = points * np.uint32(0x9E3779B1)  # Fibonacci hashing, wrapping at 32 bits
    cells = np.repeat(np.arange(len(keys)) * HIST_BINS, lengths)
    cells += mixed >> np.uint32(32 - HIST_BITS)  # in uint32: half the memory to touch
    hist = np.bincount(cells, minlength=len(keys) * HIST_BINS).reshape(len(keys), HIST_BINS)
    hist = hist.astype(np.uint32)  # half the bytes to gather per pair
    ok = np.empty(len(pairs), dtype=bool)
    for start in range(0, len(pairs), _PAIR_CHUNK):
        i, j = pairs[start : start + _PAIR_CHUNK].T
        shared = np.minimum(hist[i], hist[j]).sum(axis=1)
        ok[start : start + _PAIR_CHUNK] = 200 * shared >= NEAR_DUP_RATIO * (lengths[i] + lengths[j])
    return ok
