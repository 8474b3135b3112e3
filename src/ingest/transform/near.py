"""Near-duplicate edges: summaries that differ by a reworded clause are one resource.

MinHash over character 3-grams of each distinct summary key, cut into LSH bands; keys
sharing a band are candidates, and a real similarity check (rapidfuzz) confirms them. No
pair is compared unless a band brought it together (key → group by band → resolve).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from rapidfuzz import fuzz

from .minhash import signatures
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
    out: list[list[bytes]] = []
    for start in range(0, len(keys), BATCH):
        sig = signatures(keys[start : start + BATCH], BANDS * ROWS)
        cells = np.empty((len(sig), BANDS, ROWS + 1), dtype="<u4")
        cells[:, :, 0] = np.arange(BANDS)
        cells[:, :, 1:] = sig.reshape(len(sig), BANDS, ROWS)
        out.extend(cells.view(f"V{4 * (ROWS + 1)}").reshape(len(sig), BANDS).tolist())
    return out


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
