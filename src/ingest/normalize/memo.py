"""Memos of pure functions of a text, bounded by the characters they hold, not by entries.

A resource's summary, title and link are on every page that lists it, so the functions
that clean, key and check them are asked the same text again and again. A memo of a fixed
number of entries thrashes once a crawl has more distinct texts than entries, which a
large crawl has. These memos keep every text up to ``MEMO_CHARS`` long until the texts
they hold reach ``BUDGET`` characters, then start over: hostile input of many distinct
long texts holds no more.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, TypeVar

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)

#: Texts up to this long are remembered (the same summary on many pages); longer ones,
#: rare and costly to keep, are computed each time.
MEMO_CHARS = 2048
#: Characters of remembered texts a memo holds at most before it starts over: as many as
#: 16,384 texts of ``MEMO_CHARS`` (what the memos of entries held at most).
BUDGET = 1 << 25

_MISS: Any = object()


class TextMemo(Protocol[T_co]):
    """A memo: the function's value for a text; ``seen`` is what it holds, and
    ``cache_clear()`` empties it (as ``functools.lru_cache``'s)."""

    seen: dict[str, Any]

    def __call__(self, text: str, /) -> T_co: ...

    def cache_clear(self) -> None: ...


def text_memo(fn: Callable[[str], T], budget: int = BUDGET) -> TextMemo[T]:
    """``fn``, remembered for texts up to ``MEMO_CHARS`` long within ``budget`` characters.
    A closure, not a class: a call costs what a call of ``functools.lru_cache`` costs."""
    seen: dict[str, T] = {}
    held = [0]

    def once(text: str) -> T:
        got = seen.get(text, _MISS)
        if got is _MISS:
            got = fn(text)
            if len(text) <= MEMO_CHARS:
                if held[0] + len(text) > budget:
                    seen.clear()
                    held[0] = 0
                seen[text] = got
                held[0] += len(text)
        return got  # type: ignore[no-any-return]

    def cache_clear() -> None:
        seen.clear()
        held[0] = 0

    once.seen = seen  # type: ignore[attr-defined]
    once.cache_clear = cache_clear  # type: ignore[attr-defined]
    return once  # type: ignore[return-value]
