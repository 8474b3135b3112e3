"""Listing heads of a topic page: ``N. [title](url)（kind · level）：``.

The scanner is linear: candidate starts come from ``str.find``, each is checked by one
anchored, bounded, possessive pattern that honours backslash escapes and nested brackets,
so a match never backtracks. A candidate inside a summary (``见 6. [x]``) is accepted only
when the full grammar matches and the numbering says it is the next listing; one that fails
the grammar counts as a broken head only where the numbering expects it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import NamedTuple

from .base import Page

#: Digits a number may have (also full-width ones, which are never valid in a head).
_DIGITS = frozenset("0123456789０１２３４５６７８９")
_MAX_DIGITS = 6
_ASCII_SPACE = frozenset(" \t\n\r\f\v")
_HEADISH_REACH = 1200  # past the longest title a head may have (1000), to its "]("
_HEADISH = re.compile(r"\]\(|[（(][^（()）\n]{0,30}[·・•][^（()）\n]{0,30}[）)]\s?[：:]")

# A listing head. Link text honours backslash escapes and up to two levels of nested
# brackets, the link target one level of parentheses; every repetition is possessive and
# bounded, and alternatives differ in their first character, so a match never backtracks.
_TEXT = r"(?:\\.|[^\[\]\\\n])"
_HEAD = re.compile(
    rf"\[((?:{_TEXT}|\[(?:{_TEXT}|\[{_TEXT}{{0,500}}+\]){{0,500}}+\]){{0,1000}}+)\]"
    r"\(((?:[^()\n]|\([^()\n]{0,500}+\)){0,2000}+)\)"
    r"[ \t]*[（(]([^（()）\n]{0,60}+)[）)][ \t]*[：:]"
)
#: The usual head, without escapes or nested brackets: a loop over one character class is
#: a tight C loop, an alternation is not (a third of the cost). Where it matches, ``_HEAD``
#: matches the same way (its other alternatives never come into play); else ``_HEAD`` is tried.
_PLAIN_HEAD = re.compile(
    r"\[([^\[\]\\\n]{0,1000}+)\]"
    r"\(([^()\n]{0,2000}+)\)"
    r"[ \t]*[（(]([^（()）\n]{0,60}+)[）)][ \t]*[：:]"
)


class Head(NamedTuple):
    """A parsed listing head: where it starts and ends, and its parts (a named tuple: the
    cheapest immutable record to build, and every candidate head builds one)."""

    number: int
    start: int
    end: int
    title: str
    url: str
    meta: str
    dot: int  # where the ``.`` after its number is


def candidates(text: str, start: int = 0, end: int | None = None) -> Iterator[tuple[int, int]]:
    """(start, number) of every ``N. [`` (N: 1 to 6 ASCII digits after ASCII white space or
    the start of the text) in ``text[start:end]``: what ``(?<!\\S)([0-9]{1,6})\\. \\[`` with
    ``re.ASCII`` finds, found with ``str.find`` (a regex with a look-behind tries every
    position: ten times slower)."""
    stop = len(text) if end is None else end
    i = text.find(". [", start, stop)
    while i != -1:
        first = _number_start(text, i, ascii_only=True)
        if first is not None and first >= start:
            yield first, int(text[first:i])
        i = text.find(". [", i + 3, stop)


def _number_start(text: str, dot: int, *, ascii_only: bool) -> int | None:
    """Where the 1 to 6 digits before ``text[dot]`` start, when white space (or the start
    of the text) comes before them; else None."""
    j = dot
    while j > 0 and dot - j < _MAX_DIGITS and text[j - 1] in _DIGITS:
        if ascii_only and not text[j - 1].isascii():
            break
        j -= 1
    if j == dot or (j > 0 and not _space(text[j - 1], ascii_only)):
        return None
    return j


def _space(c: str, ascii_only: bool) -> bool:
    """White space as a regex's ``\\s`` sees it (with ``re.ASCII``: the six ASCII ones)."""
    return c in _ASCII_SPACE if ascii_only else c.isspace()


def loose_numbers(
    text: str, start: int, end: int, skip: frozenset[int] = frozenset()
) -> Iterator[tuple[int, str]]:
    """(start, digits) of everything numbered like a listing in ``text[start:end]``: 1 to 6
    digits (ASCII or full-width) after white space, then ``.`` or ``．`` and white space or
    ``[``; but the dots in ``skip``. In order of position. A C-level scan finds each dot so
    followed (a pattern that starts with a literal is searched for fast; one that starts
    with a digit class is tried at every position, five times slower); the digits before it
    are checked in Python."""
    dots = [m.start() for m in _DOT.finditer(text, start, end)]
    if text.find("．", start, end) != -1:
        dots = sorted(dots + [m.start() for m in _WIDE_DOT.finditer(text, start, end)])
    for dot in dots:
        if dot in skip:
            continue
        first = _number_start(text, dot, ascii_only=False)
        if first is not None and first >= start:
            yield first, text[first:dot]


#: A dot followed by white space or ``[`` (the end of the text is neither).
_DOT = re.compile(r"\.(?=[\[\s])")
_WIDE_DOT = re.compile(r"．(?=[\[\s])")


def valid_heads(text: str) -> list[Head]:
    """Every candidate head in ``text`` that passes the grammar, in order: what
    ``[h for at, n in candidates(text) if (h := _scan_head(text, at, n))]`` gives, in one
    loop (a topic page has a head a listing; generator steps and calls were half its cost)."""
    out: list[Head] = []
    find, plain, full = text.find, _PLAIN_HEAD.match, _HEAD.match
    dot = find(". [")
    while dot != -1:
        j = dot
        while j > 0 and dot - j < _MAX_DIGITS and text[j - 1] in _ASCII_DIGITS:
            j -= 1
        if j != dot and (j == 0 or text[j - 1] in _ASCII_SPACE):
            h = plain(text, dot + 2) or full(text, dot + 2)
            if h is not None:
                parts = h.group(1, 2, 3)
                out.append(_tuple_new(Head, (int(text[j:dot]), j, h.end(), *parts, dot)))
        dot = find(". [", dot + 3)
    return out


_ASCII_DIGITS = "0123456789"
_tuple_new = tuple.__new__


def accepted_heads(page: Page, valid: list[Head]) -> list[Head]:
    """Valid heads filtered by the numbering (see the module docstring)."""
    accepted: list[Head] = []
    last = 0
    for i, head in enumerate(valid):
        if head.number not in (last, last + 1) and accepted:
            nxt = valid[i + 1] if i + 1 < len(valid) else None
            if nxt is not None and nxt.number == last + 1:
                page.warn(
                    "AMBIGUOUS_BOUNDARY",
                    f"listing {last}",
                    f"'{head.number}. [' inside a summary kept as text",
                )
                continue
            page.warn("NUMBERING", f"listing {head.number}", f"follows listing {last}")
        accepted.append(head)
        last = head.number
    if accepted and accepted[0].number != 1:
        page.warn("NUMBERING", f"listing {accepted[0].number}", "numbering does not start at 1")
    return accepted


def ambiguous(heads: list[Head]) -> set[int]:
    """Starts of listings whose extent is unknown: a number given twice in a row means the
    first may be text inside the listing before it (``见 3. [附录]()（博客 · 入门）：``) or a
    duplicate number. The listing before and the first of the pair are not trusted."""
    out: set[int] = set()
    for i in range(1, len(heads)):
        if heads[i].number == heads[i - 1].number:
            out.add(heads[i - 1].start)
            if i >= 2:
                out.add(heads[i - 2].start)
    return out


def broken_heads(text: str, start: int, heads: list[Head], end: int) -> dict[int, int]:
    """start → number of listings whose head grammar is broken.

    A failed candidate counts only where it still looks like a head (a link or a meta block
    follows) and either has full-width digits (never valid) or sits where the numbering
    expects it (the next number, that number missing): ``见 6. [x]`` stays summary text.
    """
    taken = {h.start for h in heads}
    # a listing's own number: its digits start where it does (its dot needs no look)
    own = frozenset(h.dot for h in heads)
    failed = [
        (at, int(digits), not digits.isascii())
        for at, digits in loose_numbers(text, start, end, own)
        if at not in taken
    ]
    out: dict[int, int] = {}
    bounds = [(h.start, h.number) for h in heads] + [(end, None)]
    i, expect = 0, 1
    for b_start, b_num in bounds:  # one walk over both lists, both sorted by offset
        while i < len(failed) and failed[i][0] < b_start:
            f_start, f_num, full_width = failed[i]
            i += 1
            expected = f_num == expect and (b_num is None or b_num > expect)
            if not (full_width or expected):
                continue
            if _HEADISH.search(text, f_start, min(b_start, f_start + _HEADISH_REACH)):
                out[f_start] = f_num
                expect += int(expected)
        expect = (b_num or 0) + 1
    return out


def first_listing_head(text: str) -> int | None:
    """Where the first full listing head in ``text`` starts, if there is one."""
    if "](" not in text:
        return None
    for at, number in candidates(text):
        if _scan_head(text, at, number) is not None:
            return at
    return None


def _scan_head(text: str, at: int, number: int) -> Head | None:
    """Check the full head grammar at a candidate ``number. [`` starting at ``at``: one
    anchored match, no backtracking."""
    pos = text.index(". [", at) + 2
    h = _PLAIN_HEAD.match(text, pos) or _HEAD.match(text, pos)
    if h is None:
        return None
    return Head(number, at, h.end(), h.group(1), h.group(2), h.group(3), pos - 2)
