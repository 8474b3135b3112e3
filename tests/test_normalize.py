"""Normalization: small pure functions, idempotent, and safe on any text."""

from __future__ import annotations

import doctest
import importlib
import pkgutil
import re
import unicodedata

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

import ingest
from ingest.normalize.text import (
    _COMMON_NON_WORD,
    HAN_RANGES,
    clean,
    han_count,
    letters_and_digits,
    match_key,
    md_unescape,
)

_CHARS = "\\_[]()#+*`&;<>/ aZ09，（）：。·\u3000\u200b\u200d\u202e\ufeff\x07\n\t❤️中文"
_PIECES = [*_CHARS, "&amp;", "&lt;b&gt;", "<b>", "</i>", "\ufe0f"]
TEXT = st.lists(st.sampled_from(_PIECES), max_size=40).map("".join)


MODULES = sorted(
    m.name for m in pkgutil.walk_packages(ingest.__path__, "ingest.") if m.name != "ingest.__main__"
)
DOCTESTED = {"ingest.normalize.text", "ingest.normalize.urls", "ingest.normalize.language"}


@pytest.mark.parametrize("name", MODULES)
def test_doctests(name: str) -> None:
    """Every example in a docstring holds; the normalizers must have examples."""
    result = doctest.testmod(importlib.import_module(name))
    assert result.failed == 0
    assert result.attempted > 0 or name not in DOCTESTED


@given(TEXT, st.booleans())
def test_clean_is_idempotent_and_safe(s: str, markdown: bool) -> None:
    once = clean(s, markdown=False)
    assert clean(once) == once
    out = clean(s, markdown=markdown)
    assert out == out.strip() and "  " not in out
    assert unicodedata.is_normalized("NFC", out)
    assert not any(ch in out for ch in "\x07\u200b\u202e\ufeff\n\t\r")
    assert "<b>" not in out and "</i>" not in out


def test_escaped_and_plain_text_are_the_same_text() -> None:
    assert clean(r"torch\_xla 与 C\+\+ \[P\]", markdown=True) == clean("torch_xla 与 C++ [P]")
    assert md_unescape(r"a\\_b") == r"a\_b"  # unescaped exactly once


def test_emoji_sequences_survive() -> None:
    assert clean("Hugging Face ❤️ TorchTPU") == "Hugging Face ❤️ TorchTPU"
    assert clean("👩\u200d💻 开发") == "👩\u200d💻 开发"


def test_match_key_ignores_width_case_and_punctuation() -> None:
    assert match_key("ＡＩ 五层蛋糕（测试）") == match_key("ai五层蛋糕(测试)")
    assert match_key("甲乙") != match_key("甲丙")


#: Every character the cheap way removes first, among others of every kind.
_AROUND_COMMON = st.lists(
    st.one_of(
        st.sampled_from([*_COMMON_NON_WORD, *_CHARS, "Ⅻ", "²", "𠀀", "ｱ", "é"]), st.characters()
    ),
    max_size=60,
).map("".join)


@given(_AROUND_COMMON)
@example("".join(_COMMON_NON_WORD) + " Ⅻ²𠀀ｱé_❤️")
def test_letters_and_digits_is_what_the_regex_leaves(s: str) -> None:
    assert letters_and_digits(s) == re.sub(r"[\W_]+", "", s)


_ONE_HAN = re.compile(f"[{HAN_RANGES}]")


@given(
    st.text(
        alphabet=st.sampled_from(
            "a 1，。（）\u3400\u4dbf\u4e00中\u9fff\uf900\U00020000\U0002fa1f\U0002fa20\u3040"
        )
    )
)
def test_han_count_counts_each_han_character(s: str) -> None:
    """Counted by removing the runs of other characters: the same as testing each one."""
    assert han_count(s) == sum(1 for c in s if _ONE_HAN.match(c))
