"""Near-duplicate summaries: MinHash, LSH bands and a confirming ratio, in numpy. The
signatures equal datasketch's ``MinHash(scheme="affine32", hashfunc=xxh32_intdigest)`` over
character 3-grams (a test compares both) at a seventh of the cost: a batch's 3-grams are one
byte matrix, hashed with array operations, and a permutation's minima are one reduction."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import cache
from typing import Any, NamedTuple

import numpy as np
from rapidfuzz import fuzz

from ingest.resolve.graph import Edge, edge

# xxHash32 primes, and the MurmurHash3 fmix32 constants datasketch's affine32 scheme uses.
_P1, _P2, _P3, _P4, _P5 = 0x9E3779B1, 0x85EBCA77, 0xC2B2AE3D, 0x27D4EB2F, 0x165667B1
_M1, _M2 = 0x85EBCA6B, 0xC2B2AE35
_U32 = np.uint32
#: A 3-gram is at most 12 bytes of UTF-8 (three 4-byte characters).
_WIDTH = 12
#: Confirmed near-duplicate: rapidfuzz ratio (0-100) of the two summary keys.
NEAR_DUP_RATIO = 88.0
#: MinHash size and LSH banding: 21 bands of 3 rows; pairs with Jaccard ≈ 0.36 or more of
#: their 3-gram sets are likely to share a band (a reworded clause keeps well above that).
BANDS, ROWS = 21, 3
#: A band bucket with more keys than this is not expanded into pairs (templated text).
MAX_BUCKET = 200
#: Keys whose signatures are computed in one batch (numpy arrays stay in cache).
BATCH = 256
#: The character histograms :func:`may_match` compares have 2 ** HIST_BITS buckets.
HIST_BITS = 6
HIST_BINS = 1 << HIST_BITS
#: Chunk of pairs whose histograms are compared at once (bounded memory).
_PAIR_CHUNK = 16_384


@cache
def permutations(num_perm: int, seed: int = 1) -> tuple[Any, Any]:
    """The ``(a, b)`` of datasketch 2's affine32 permutations (odd ``a``: a bijection),
    drawn the same way here: importing datasketch costs half a second (it imports scipy)."""
    gen = np.random.RandomState(seed)
    a = gen.randint(0, 1 << 31, num_perm, dtype=_U32) * _U32(2) + _U32(1)
    b = gen.randint(0, 1 << 32, num_perm, dtype=_U32)
    return a, b


def signatures(keys: Sequence[str], num_perm: int, seed: int = 1) -> Any:
    """A ``(len(keys), num_perm)`` uint32 array: row i is the MinHash of ``keys[i]``."""
    if not keys:
        return np.empty((0, num_perm), dtype=_U32)
    a, b = permutations(num_perm, seed)
    hashes, owner = gram_hashes(keys)
    hv = _fmix32(hashes)
    starts = np.flatnonzero(np.diff(owner, prepend=-1))
    out = np.empty((len(keys), num_perm), dtype=_U32)
    v = np.empty_like(hv)
    with np.errstate(over="ignore"):
        for k in range(num_perm):  # one permutation at a time: arrays stay in cache
            np.multiply(hv, a[k], out=v)
            v += b[k]
            out[:, k] = np.minimum.reduceat(v, starts)
    return out


def gram_hashes(keys: Sequence[str]) -> tuple[Any, Any]:
    """xxHash32 (seed 0) of the UTF-8 of every 3-gram of every key (a shorter key: itself),
    and the index of its key, with no Python work per 3-gram: a gram is a byte offset and
    length in the keys' UTF-8 (from their code points' widths)."""
    text = "".join(keys)
    points = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype="<u4")
    width = np.where(
        points < 0x80, 1, np.where(points < 0x800, 2, np.where(points < 0x10000, 3, 4))
    )
    offset = np.concatenate(([0], np.cumsum(width)))  # byte offset of each character
    data = np.frombuffer(text.encode("utf-8", "surrogatepass") + bytes(_WIDTH), dtype=np.uint8)
    sizes = np.fromiter(map(len, keys), dtype=np.int64, count=len(keys))
    grams = np.maximum(sizes - 2, 1)
    owner = np.repeat(np.arange(len(keys)), grams)
    first = np.repeat(np.cumsum(sizes) - sizes, grams) + within(grams)
    last = first + np.minimum(np.repeat(sizes, grams), 3)
    start, lengths = offset[first], offset[last] - offset[first]
    return xxh32_at(data, start, lengths), owner


def within(counts: Any) -> Any:
    """0, 1, ..., n-1 for each n in ``counts``, concatenated."""
    total = int(counts.sum())
    return np.arange(total) - np.repeat(np.cumsum(counts) - counts, counts)


def _rotl(x: Any, r: int) -> Any:
    return (x << _U32(r)) | (x >> _U32(32 - r))


def xxh32_at(data: Any, start: Any, lengths: Any) -> Any:
    """xxHash32 (seed 0) of ``data[start[i] : start[i] + lengths[i]]`` for each i (every
    length < 16 bytes; ``data``, uint8, padded with 12 zero bytes past the last one): read
    as little-endian words, then single tail bytes."""
    wide = data.astype(_U32)
    # the little-endian 32-bit word at every byte offset
    words = wide[:-3] | (wide[1:-2] << _U32(8)) | (wide[2:-1] << _U32(16)) | (wide[3:] << _U32(24))
    with np.errstate(over="ignore"):
        h = lengths.astype(_U32) + _U32(_P5)
        for w in range(_WIDTH // 4):
            take = lengths >= 4 * (w + 1)
            step = _rotl(h + words[start + 4 * w] * _U32(_P3), 17) * _U32(_P4)
            h = np.where(take, step, h)
        tail = lengths % 4
        at = start + lengths - tail
        for r in range(3):
            take = tail > r
            step = _rotl(h + wide[at + r] * _U32(_P5), 11) * _U32(_P1)
            h = np.where(take, step, h)
        h ^= h >> _U32(15)
        h *= _U32(_P2)
        h ^= h >> _U32(13)
        h *= _U32(_P3)
        h ^= h >> _U32(16)
    return h


def _fmix32(h: Any) -> Any:
    with np.errstate(over="ignore"):
        h = h ^ (h >> _U32(16))
        h = h * _U32(_M1)
        h = h ^ (h >> _U32(13))
        h = h * _U32(_M2)
        return h ^ (h >> _U32(16))


def bands(key: str) -> list[bytes]:
    return bands_many([key])[0]


def bands_many(keys: Sequence[str]) -> list[list[bytes]]:
    """The LSH band signatures of each key: band number and that band's rows of the
    MinHash (seed 1), as the 16 bytes of four little-endian uint32s (band numbers included,
    so bands never mix; not digested: a dict hashes them anyway)."""
    sig = _signatures(keys)
    cells = np.empty((len(sig), BANDS, ROWS + 1), dtype="<u4")
    cells[:, :, 0] = np.arange(BANDS)
    cells[:, :, 1:] = sig.reshape(len(sig), BANDS, ROWS)
    out: list[list[bytes]] = cells.view(f"V{4 * (ROWS + 1)}").reshape(len(sig), BANDS).tolist()
    return out


def _signatures(keys: Sequence[str]) -> Any:
    parts = [signatures(keys[i : i + BATCH], BANDS * ROWS) for i in range(0, len(keys), BATCH)]
    return np.concatenate(parts) if parts else np.empty((0, BANDS * ROWS), dtype=np.uint32)


def verify(a: str, b: str) -> float | None:
    """The similarity of two keys if they are near-duplicates, else None. The ratio is
    200 × LCS / (len a + len b): keys whose lengths differ too much fail without a
    comparison (rapidfuzz does not check first, and a quarter of the candidates fail so)."""
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
    return Signed(list(keys), _signatures(keys))


def near_edges(parts: Iterable[Signed]) -> list[Edge]:
    """Confirmed near-duplicate edges among the keys of ``parts``, in key order: every pair
    of distinct keys that share a band bucket of at most ``MAX_BUCKET`` keys, checked once."""
    at: dict[str, Any] = {}
    for part in parts:
        for key, row in zip(part.keys, part.rows, strict=True):
            at.setdefault(key, row)
    keys = sorted(at)  # blind to the parts' order
    rows = np.array([at[k] for k in keys], dtype=np.uint32).reshape(len(keys), BANDS * ROWS)
    pairs = candidate_pairs(rows)
    return [
        edge(score, keys[i], keys[j], "near")
        for i, j in pairs[may_match(keys, pairs)].tolist()
        if (score := verify(keys[i], keys[j])) is not None
    ]


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


def may_match(keys: Sequence[str], pairs: Any) -> Any:
    """For each pair, False when it cannot be a near-duplicate. A common subsequence holds
    each character at most as often as the key holding it fewer times; counted by hash
    bucket, the bound only rises (the smaller of two sums is at least the sum of the smaller
    parts), so no pair :func:`verify` would confirm is ever dropped."""
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
