"""Near-duplicate edges (``transform.near``): the bands grouped as arrays give exactly the
edges that checking every pair of every band bucket gives, each pair checked once, and the
character-count bound never drops a pair that the similarity check would confirm."""

from __future__ import annotations

import random
from collections import defaultdict
from itertools import combinations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import TOPIC_PAGE
from ingest.resolve.graph import Edge, edge
from ingest.resolve.near import (
    BANDS,
    MAX_BUCKET,
    ROWS,
    bands_many,
    candidate_pairs,
    may_match,
    near_edges,
    signed,
    verify,
)


def reference(keys: list[str]) -> list[Edge]:
    """Every band bucket of 2 to MAX_BUCKET keys, every pair in it checked: the rule."""
    buckets: dict[bytes, list[str]] = defaultdict(list)
    for key, sig in zip(keys, bands_many(keys), strict=True):
        for band in sig:
            buckets[band].append(key)
    found = set()
    for members in buckets.values():
        if 2 <= len(members) <= MAX_BUCKET:
            for a, b in combinations(sorted(members), 2):
                score = verify(a, b)
                if score is not None:
                    found.add(edge(score, a, b, "near"))
    return sorted(found, key=lambda e: (e.a, e.b))


def reworded(rng: random.Random, text: str, edits: int) -> str:
    """``text`` with ``edits`` characters replaced, dropped or added at random places."""
    chars = list(text)
    for _ in range(edits):
        at = rng.randrange(len(chars))
        op = rng.choice("rda")
        if op == "r":
            chars[at] = chr(0x4E00 + rng.randrange(3000))
        elif op == "d" and len(chars) > 1:
            del chars[at]
        else:
            chars.insert(at, chr(0x4E00 + rng.randrange(3000)))
    return "".join(chars)


def summary_keys() -> list[str]:
    """The seed topic page's summaries as keys, and rewordings of them from a few edits
    (near-duplicates) to many (candidates the check turns down)."""
    rng = random.Random(7)
    text = TOPIC_PAGE.read_text(encoding="utf-8")
    bases = sorted({"".join(c for c in s if c.isalnum()) for s in text.split("：")[1:]})
    bases = [b[:120] for b in bases if len(b) > 40]
    keys = set(bases)
    for base in bases:
        for edits in (1, 3, 8, 15, 30):
            keys.add(reworded(rng, base, edits))
    return sorted(keys)


def test_grouped_bands_give_the_edges_every_bucket_gives() -> None:
    keys = summary_keys()
    expected = reference(keys)
    assert len(expected) > 20 and len(keys) > 150  # the set has near-duplicates to find
    rng = random.Random(1)
    shuffled = rng.sample(keys, len(keys))
    parts = [signed(shuffled[i : i + 37]) for i in range(0, len(shuffled), 37)]
    assert near_edges(parts) == expected
    assert near_edges(reversed(parts)) == expected  # blind to the order parts arrive in
    assert near_edges(parts + parts[:2]) == expected  # a key met twice is one key


def test_no_keys_and_one_key_give_no_edges() -> None:
    assert near_edges([]) == []
    assert near_edges([signed([])]) == []
    assert near_edges([signed(["只有一个摘要的键"])]) == []


def _rows(n: int, shared: dict[int, list[int]]) -> np.ndarray:
    """``n`` signatures of distinct values, except that band b's values are equal for
    the rows ``shared[b]`` lists."""
    rows = np.arange(n * BANDS * ROWS, dtype=np.uint32).reshape(n, BANDS * ROWS)
    for band, members in shared.items():
        rows[members, band * ROWS : (band + 1) * ROWS] = 7
    return rows


def test_a_bucket_of_max_bucket_rows_gives_all_its_pairs_and_a_larger_none() -> None:
    full = _rows(MAX_BUCKET + 1, {3: list(range(MAX_BUCKET))})
    assert candidate_pairs(full).tolist() == [list(p) for p in combinations(range(MAX_BUCKET), 2)]
    over = _rows(MAX_BUCKET + 1, {3: list(range(MAX_BUCKET + 1))})
    assert candidate_pairs(over).tolist() == []  # templated text: not expanded


def test_a_pair_sharing_many_bands_is_checked_once() -> None:
    rows = _rows(5, {0: [1, 3], 4: [1, 3], 20: [3, 1, 4], 9: [0, 2]})
    assert candidate_pairs(rows).tolist() == [[0, 2], [1, 3], [1, 4], [3, 4]]
    assert candidate_pairs(_rows(0, {})).shape == (0, 2)


@settings(max_examples=300, deadline=None)
@given(
    st.text(alphabet="模型服务算力推理ab", min_size=1, max_size=80),
    st.lists(st.tuples(st.integers(0, 79), st.sampled_from("模型服务算力推理abxyz")), max_size=12),
)
def test_the_character_bound_never_drops_a_near_duplicate(base: str, edits: list) -> None:
    chars = list(base)
    for at, char in edits:  # replace, or add at the end when past it
        if at < len(chars):
            chars[at] = char
        else:
            chars.append(char)
    other = "".join(chars)
    keys = sorted({base, other})
    if len(keys) < 2:
        return
    kept = may_match(keys, np.array([[0, 1]]))[0]
    if verify(keys[0], keys[1]) is not None:
        assert kept


def test_the_character_bound_drops_pairs_that_cannot_match() -> None:
    keys = ["模型服务" * 10, "算力推理" * 10, "模型服务" * 9 + "算力推理"]
    kept = may_match(keys, np.array([[0, 1], [0, 2]]))
    assert kept.tolist() == [False, True]
