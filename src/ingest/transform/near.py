"""Near-duplicate edges: summaries that differ by a reworded clause are one resource.

MinHash over character 3-grams of each distinct summary key, cut into LSH bands; keys
sharing a band are candidates, and a real similarity check (rapidfuzz) confirms them. No
pair is compared unless a band brought it together (key → group by band → resolve).
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Sequence
from functools import cache
from typing import Any

from rapidfuzz import fuzz

from .units import Edge, edge

#: Confirmed near-duplicate: rapidfuzz ratio (0-100) of the two summary keys.
NEAR_DUP_RATIO = 88.0
#: MinHash size and LSH banding: 21 bands of 3 rows; pairs with Jaccard ≈ 0.36 or more of
#: their 3-gram sets are likely to share a band (a reworded clause keeps well above that).
BANDS, ROWS = 21, 3
#: A band bucket with more keys than this is not expanded into pairs (templated text).
MAX_BUCKET = 200


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
