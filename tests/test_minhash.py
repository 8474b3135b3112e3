"""The numpy MinHash gives exactly datasketch's values (the LSH bands, and so the
near-duplicate candidates, must not move when the implementation does)."""

from __future__ import annotations

import numpy as np
from datasketch import MinHash
from hypothesis import given, settings
from hypothesis import strategies as st
from rapidfuzz import fuzz
from xxhash import xxh32_intdigest

from ingest.resolve.near import (
    NEAR_DUP_RATIO,
    gram_hashes,
    permutations,
    signatures,
    verify,
    xxh32_at,
)

#: 1-, 2-, 3- and 4-byte UTF-8 characters, as summary keys hold them (letters and digits).
ALPHABET = "aZ09éßЖжα中文字摘要𠀀𠀁𝒜"


def reference(key: str, num_perm: int = 63) -> list[int]:
    m = MinHash(
        num_perm=num_perm,
        seed=1,
        permutations=permutations(num_perm),
        scheme="affine32",
        hashfunc=xxh32_intdigest,
    )
    m.update_batch([key[i : i + 3].encode() for i in range(max(1, len(key) - 2))])
    return [int(v) for v in m.hashvalues]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.text(alphabet=ALPHABET, max_size=40), min_size=1, max_size=12))
def test_signatures_equal_datasketch(keys: list[str]) -> None:
    got = signatures(keys, 63)
    assert got.shape == (len(keys), 63)
    assert [row.tolist() for row in got] == [reference(k) for k in keys]


def test_xxh32_of_every_gram_length() -> None:
    grams = ["", "a", "ab", "abc", "中", "中文", "中文字", "a中b", "𠀀xy", "𠀀𠀁𠀂", "éß中"]
    hashes, owner = gram_hashes(grams)
    assert owner.tolist() == list(range(len(grams)))  # each is shorter than 4: one gram
    assert hashes.tolist() == [xxh32_intdigest(g.encode()) for g in grams]


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=40), st.data())
def test_xxh32_at_any_offset_and_length(data: bytes, draw: st.DataObject) -> None:
    """Every length a gram can have (0 to 12 bytes; 15 is the most the word loop allows),
    starting anywhere, the pad bytes past the end never read into a hash."""
    spans = draw.draw(
        st.lists(st.tuples(st.integers(0, len(data)), st.integers(0, 15)), min_size=1)
    )
    spans = [(s, min(n, len(data) - s)) for s, n in spans]
    padded = np.frombuffer(data + bytes(12), dtype=np.uint8)
    start = np.array([s for s, _ in spans], dtype=np.int64)
    lengths = np.array([n for _, n in spans], dtype=np.int64)
    got = xxh32_at(padded, start, lengths).tolist()
    assert got == [xxh32_intdigest(data[s : s + n]) for s, n in spans]


@settings(max_examples=100, deadline=None)
@given(st.lists(st.text(alphabet="abc xyz019", max_size=30), min_size=1, max_size=12))
def test_signatures_of_plain_ascii_keys_equal_datasketch(keys: list[str]) -> None:
    assert signatures(keys, 63).tolist() == [reference(k) for k in keys]


def test_permutations_are_datasketchs() -> None:
    a, b = MinHash(num_perm=63, seed=1, scheme="affine32").permutations
    assert permutations(63)[0].tolist() == a.tolist() and permutations(63)[1].tolist() == b.tolist()


def test_a_real_summary_key() -> None:
    key = "这是nvidia技术博客的一篇文章以1240亿参数每token激活51亿参数的模型为例" * 3
    assert signatures([key, key[:50]], 63).tolist() == [reference(key), reference(key[:50])]
    assert signatures([], 63).shape == (0, 63) and np.asarray(permutations(63)[0]).size == 63


@settings(max_examples=500, deadline=None)
@given(
    st.text(alphabet="模型服务算力ab", min_size=1, max_size=60),
    st.integers(0, 30),
    st.text(alphabet="模型服务算力ab", max_size=12),
)
def test_verify_skips_only_pairs_the_ratio_fails(base: str, cut: int, extra: str) -> None:
    """The length check before the comparison never drops a near-duplicate: ``verify`` is
    rapidfuzz's ratio over the bar, or None, for keys of every length around the bound."""
    a, b = base, base[cut:] + extra
    score = fuzz.ratio(a, b, score_cutoff=NEAR_DUP_RATIO)
    assert verify(a, b) == (float(score) if score else None)
