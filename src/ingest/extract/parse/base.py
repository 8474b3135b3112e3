"""What every page parser shares: provenance, rejects, warnings, field cleaning.

A parser fills one :class:`Page` (the builder) and never raises on bad input: whatever it
cannot use becomes a :class:`~ingest.models.PageReject` with a reason code and its place.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterator, Sequence
from itertools import accumulate
from typing import NamedTuple

from ...normalize.text import cleaned_md, cleaned_plain
from ...normalize.urls import checked_url
from ...records.internal import Listing, PageReject, PageResult, Provenance
from ..decode import ESCAPED_BYTE, Locator, cut_tail_length

#: A single field longer than this is refused (FIELD_TOO_LONG).
MAX_FIELD_CHARS = 20_000
#: A page with more listings than this is cut there (TOO_MANY_ITEMS).
MAX_LISTINGS = 50_000
#: A line longer than this (in a line-based page kind) is refused (LINE_TOO_LONG).
MAX_LINE_CHARS = 100_000
#: Detection reads this much of a page: its structural marks must show within it.
DETECTION_CHARS = 64 * 1024

LINE_BREAK = re.compile(r"\r\n|\r|\n")

_CLOSERS = "”’）」』)\"' "
_FULL_STOPS = ("。", "！", "？", "…", "!", "?")


def ends_sentence(s: str) -> bool:
    """Does the text end like a complete sentence (closing quotes and brackets aside)?

    A cut summary usually does not: ``v1.`` and ``（含编译）`` end mid-sentence.

    >>> [ends_sentence(s) for s in ("读者。", "（见附录。）", "PyTorch v1.", "the model.", "a）")]
    [True, True, False, True, False]
    """
    s = s.rstrip(_CLOSERS)
    if s.endswith(_FULL_STOPS):
        return True
    return s.endswith(".") and len(s) > 1 and s[-2].isalpha() and s[-2].isascii()


class Line(NamedTuple):
    """One line of a page (a named tuple: line-based pages build one for every line)."""

    text: str
    start: int  # character offset in the decoded text
    number: int  # 1-based


def split_lines(text: str) -> Iterator[Line]:
    """Split on CRLF, CR or LF only (never on U+2028, form feed, ...), with offsets."""
    start = 0
    number = 1
    if "\r" not in text:  # the usual case: LF alone ends a line, and str.split finds it in C
        *whole, last = text.split("\n")
        for number, piece in enumerate(whole, start=1):
            yield Line(piece, start, number)
            start += len(piece) + 1
        if start < len(text):
            yield Line(last, start, len(whole) + 1)
        return
    for m in LINE_BREAK.finditer(text):
        yield Line(text[start : m.start()], start, number)
        start = m.end()
        number += 1
    if start < len(text):
        yield Line(text[start:], start, number)


def line_pieces(text: str) -> list[str]:
    """``LINE_BREAK.split(text)``: found with ``str.split`` when LF alone ends lines."""
    return text.split("\n") if "\r" not in text else LINE_BREAK.split(text)


def next_break(text: str, pos: int, stop: int) -> tuple[int, int] | None:
    """Where the first line break (CRLF, CR or LF) in ``text[pos:stop]`` starts and ends:
    what ``LINE_BREAK.search(text, pos, stop)`` finds, found with ``str.find`` (a regex
    tries every position in Python's matcher: ten times the cost on a long summary)."""
    lf = text.find("\n", pos, stop)
    cr = text.find("\r", pos, stop if lf < 0 else lf)
    if cr >= 0:
        return cr, cr + 2 if text.startswith("\n", cr + 1, stop) else cr + 1
    return (lf, lf + 1) if lf >= 0 else None


def _line_starts(text: str) -> list[int]:
    """Where each line of ``text`` after the first starts (the end of each line break)."""
    if "\r" not in text:  # the usual case: summed in C from str.split's pieces
        return list(accumulate(len(piece) + 1 for piece in text.split("\n")[:-1]))
    return [m.end() for m in LINE_BREAK.finditer(text)]


#: Line numbers a page counts before it builds the list of its line starts.
_COUNTED_LINES = 4


def line_at(text: str, offset: int) -> int:
    """The 1-based line of ``text[offset]``: one more than the line breaks (CRLF, CR, LF)
    that end before it; a CRLF that ``offset`` splits has not ended.

    >>> [line_at("a\\r\\nb\\rc\\nd", i) for i in (0, 1, 2, 3, 5, 7)]
    [1, 1, 1, 2, 3, 4]
    """
    offset = max(0, min(offset, len(text)))  # as a lookup among the line starts would
    n = text.count("\n", 0, offset) + text.count("\r", 0, offset) - text.count("\r\n", 0, offset)
    if offset and text[offset - 1] == "\r" and text.startswith("\n", offset):
        n -= 1
    return n + 1


def excerpt(raw: str, limit: int = 200) -> str:
    """At most ``limit`` characters of raw text, invalid bytes and controls made visible."""
    s = raw[:limit]
    s = ESCAPED_BYTE.sub(lambda m: f"\\x{ord(m.group()) - 0xDC00:02x}", s)
    return "".join(ch if ch.isprintable() or ch == " " else repr(ch)[1:-1] for ch in s)


class Page:
    """Builder for one file's :class:`PageResult`."""

    def __init__(
        self, result: PageResult, text: str, locator: Locator, bad_bytes: bool | None = None
    ) -> None:
        """``bad_bytes``: whether ``text`` holds bytes that were not valid UTF-8, when the
        decoder knows (None: the page looks for them)."""
        self.result = result
        self.text = text
        self._loc = locator
        self._end = len(text.rstrip())
        self._cut_tail = cut_tail_length(text)
        self._breaks: list[int] | None = None  # offsets where lines start, built when asked
        self._lf_only = "\r" not in text  # the usual page: LF alone ends its lines
        self._counted = 0  # line numbers counted before the list is built
        if bad_bytes is None:
            bad_bytes = ESCAPED_BYTE.search(text) is not None  # checked once a page
        self._has_bad_bytes = bad_bytes

    def prov(self, offset: int, locator: str) -> Provenance:
        byte, line = self._loc.at(offset)
        r = self.result
        return Provenance(r.file, r.sha256, r.format or "", locator, byte, line)

    def warn(self, code: str, where: str, detail: str = "") -> None:
        self.result.warnings.append(f"{where}: {code}" + (f": {detail}" if detail else ""))

    def mark(self, name: str) -> None:
        """Record a structural mark found on the page (``report.json`` ``files[].marks``)."""
        if name not in self.result.marks:
            self.result.marks.append(name)

    def skip(self, lines: Sequence[Line], what: str) -> None:
        """Warn that ``lines`` belong to no structure of the page and are not read."""
        if not lines:
            return
        first, last = lines[0], lines[-1]
        where = f"line {first.number}" if first is last else f"lines {first.number}-{last.number}"
        shown = excerpt(first.text.strip(), 40)
        self.warn("LINES_SKIPPED", where, f"{len(lines)} line(s) {what}, first '{shown}'")

    def line_number(self, offset: int) -> int:
        """The 1-based line of a character offset (CRLF, CR and LF end a line). The first
        few are counted in C; a page asked for more gets the list of its line starts."""
        if self._breaks is None:
            if self._counted < _COUNTED_LINES:
                self._counted += 1
                if self._lf_only:  # one count, not line_at's three
                    return self.text.count("\n", 0, max(0, offset)) + 1
                return line_at(self.text, offset)
            self._breaks = _line_starts(self.text)
        return bisect_right(self._breaks, offset) + 1

    def lines_in(self, start: int, stop: int) -> list[Line]:
        """The non-blank lines (or pieces of lines) of ``text[start:stop]``."""
        if not self.text[start:stop].strip():
            return []  # the usual case: no line numbers needed
        first = self.line_number(start)
        return [
            Line(ln.text, start + ln.start, first + ln.number - 1)
            for ln in split_lines(self.text[start:stop])
            if ln.text.strip()
        ]

    def reject(self, offset: int, locator: str, reason: str, message: str, raw: str) -> None:
        self.result.rejects.append(
            PageReject(self.prov(offset, locator), reason, message, excerpt(raw), True)
        )

    def field(self, raw: str, where: str, *, markdown: bool = False) -> str:
        """Clean one text field, turning every lossy step into a warning at ``where``."""
        text, codes = (cleaned_md if markdown else cleaned_plain)(raw)
        for code in codes:
            self.warn(code, where)
        return text

    def url(self, raw: str | None, where: str) -> str | None:
        if not raw:
            return None  # the usual link target: empty, no link (what check_url says)
        url, problem = checked_url(raw)
        if problem is not None:
            self.warn(problem[0], where, problem[1])
        return url

    def may_be_bad(self, size: int) -> bool:
        """Could :meth:`bad_raw` refuse raw text of ``size`` characters? Only on a page with
        invalid bytes, or over the field cap (the usual listing needs no raw text built)."""
        return self._has_bad_bytes or size > MAX_FIELD_CHARS

    def bad_raw(self, raw: str) -> tuple[str, str] | None:
        """A reason to refuse a listing whose raw text is unusable, or None."""
        if not self.may_be_bad(len(raw)):
            return None
        m = ESCAPED_BYTE.search(raw) if self._has_bad_bytes else None
        if m is not None:
            tail = self._cut_tail
            if tail and m.start() == len(raw) - tail and raw.endswith(self.text[-tail:]):
                return "TRUNCATED_ITEM", "the file ends inside a multi-byte character: cut short"
            return "INVALID_UTF8", f"invalid UTF-8 byte 0x{ord(m.group()) - 0xDC00:02x} inside"
        if len(raw) > MAX_FIELD_CHARS:
            return "FIELD_TOO_LONG", f"{len(raw)} characters, over the cap of {MAX_FIELD_CHARS}"
        return None

    def cut_short(self, line: Line) -> bool:
        """Is this the file's last line, ending mid-sentence? (How a cut file looks: the
        line-based page kinds have no footer to tell a cut from a short summary.)"""
        return self.is_last(line) and not ends_sentence(line.text)

    def is_last(self, line: Line) -> bool:
        return line.start + len(line.text) >= self._end

    def without_long_lines(self, lines: list[Line]) -> list[Line]:
        """The lines under the line cap; each longer one is rejected LINE_TOO_LONG."""
        kept = []
        for ln in lines:
            if len(ln.text) > MAX_LINE_CHARS:
                self.reject(
                    ln.start,
                    f"line {ln.number}",
                    "LINE_TOO_LONG",
                    f"{len(ln.text)} characters, over the cap of {MAX_LINE_CHARS}",
                    ln.text,
                )
            else:
                kept.append(ln)
        return kept

    def add(self, listing: Listing) -> None:
        listing.index = len(self.result.listings)
        self.result.listings.append(listing)
