"""Decode: a file's bytes into text, or a reason not to; and where offsets fall in the bytes.

Never guessed silently: a BOM decides; else strict UTF-8; else allow-listed GB18030 that
must look like real Chinese; a UTF-8 file with a few invalid bytes (or cut inside its last
character) keeps them as ``surrogateescape`` so only the listings holding them are rejected.
Everything else is refused with a reason code; never ``errors="replace"`` or ``"ignore"``.
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass

from ingest.normalize.text import han_only

#: Below this many Han characters a clean GB18030 decoding is not trusted (A4).
MIN_GB18030_HAN = 16

#: A byte that was not valid UTF-8, as ``surrogateescape`` keeps it in decoded text.
ESCAPED_BYTE = re.compile("[\udc80-\udcff]")

_MAGIC = {
    b"\x89PNG": "PNG image", b"%PDF": "PDF document", b"\x1f\x8b": "gzip archive",
    b"PK\x03\x04": "zip archive", b"\xff\xd8\xff": "JPEG image", b"GIF8": "GIF image",
    b"BZh": "bzip2 archive", b"\xfd7zXZ": "xz archive", b"\x7fELF": "ELF binary",
}  # fmt: skip
_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32-le", "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32-be", "utf-32"),
    (codecs.BOM_UTF8, "utf-8", "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16-le", "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16-be", "utf-16"),
)


@dataclass(frozen=True, slots=True)
class Decoded:
    """A file's text, or the reason it has none."""

    text: str | None
    encoding: str | None  # as reported: utf-8, utf-8-sig, utf-16-le, gb18030, ...
    codec: str | None  # the codec that reproduces the bytes of ``text`` (for offsets)
    bom_len: int
    reason: str | None = None
    message: str | None = None
    invalid_bytes: int = 0  # bytes kept as surrogate escapes (U+DC80-U+DCFF) in ``text``
    cut_tail: int = 0  # of which: an incomplete character at the very end (a cut file)


def _refused(reason: str, message: str, bom_len: int = 0, encoding: str | None = None) -> Decoded:
    return Decoded(None, encoding, None, bom_len, reason, message)


def decode(data: bytes) -> Decoded:
    if not data:
        return _refused("EMPTY_INPUT", "the file is empty (0 bytes)")
    for bom, name, codec in _BOMS:
        if data.startswith(bom):
            if name == "utf-8":
                return _decode_utf8(data, len(bom), codec)
            return _decode_bom(data, bom, name, codec)
    for magic, what in _MAGIC.items():
        if data.startswith(magic):
            return _refused("BINARY_CONTENT", f"looks like a {what}")
    nuls = data.count(0) if 0 in data else 0  # a find stops at the first; a count reads all
    if nuls and nuls * 100 >= len(data):
        why = f"{nuls} NUL bytes in {len(data)}: binary, or UTF-16 without a BOM"
        return _refused("BINARY_CONTENT", why)
    return _decode_utf8(data, 0, "utf-8")


def _decode_bom(data: bytes, bom: bytes, name: str, codec: str) -> Decoded:
    try:
        text = data[len(bom) :].decode(name)
    except UnicodeDecodeError as e:
        why = f"{name} BOM but invalid {name} at byte {e.start + len(bom)} ({e.reason})"
        return _refused("ENCODING_UNDECODABLE", why, len(bom), name)
    return Decoded(text, codec if codec != "utf-16" else name, name, len(bom))


def _decode_utf8(data: bytes, bom_len: int, encoding: str) -> Decoded:
    """Strict UTF-8; else a damaged UTF-8 file (few bad bytes, or cut at the end), else
    (without a BOM) GB18030."""
    body = data[bom_len:]
    try:
        return Decoded(body.decode("utf-8"), encoding, "utf-8", bom_len)
    except UnicodeDecodeError as e:
        first_bad = e.start + bom_len
    cut = incomplete_utf8_tail(body)
    if first_bad - bom_len >= len(body) - cut:  # the only damage: it ends inside a character
        text = body.decode("utf-8", errors="surrogateescape")
        return Decoded(text, encoding, "utf-8", bom_len, invalid_bytes=cut, cut_tail=cut)
    # GB18030 is tried before the bad bytes are counted: a GB18030 file is nearly all "bad
    # bytes" as UTF-8, and counting them cost twice its decoding.
    gb = _try_gb18030(body) if not bom_len else None
    if isinstance(gb, Decoded):
        return gb
    text = body.decode("utf-8", errors="surrogateescape")
    invalid = len(ESCAPED_BYTE.findall(text))
    if (invalid - cut) * 200 <= len(body):  # at most 0.5 % bad bytes: a damaged UTF-8 file
        return Decoded(text, encoding, "utf-8", bom_len, invalid_bytes=invalid, cut_tail=cut)
    if bom_len:
        reason, why = "ENCODING_UNDECODABLE", "despite its UTF-8 BOM"
    elif gb is None:
        reason, why = "ENCODING_UNDECODABLE", "and not GB18030 either"
    else:
        reason, why = gb
    message = f"not UTF-8 ({invalid} invalid bytes, the first at byte {first_bad}) {why}"
    return _refused(reason, message, bom_len)


def _try_gb18030(data: bytes) -> Decoded | tuple[str, str] | None:
    """GB18030 if it decodes cleanly and reads as real Chinese; else (reason, why) or None."""
    try:
        text = data.decode("gb18030")
    except UnicodeDecodeError:
        return None
    han = han_only(text)
    common = len(han.encode("gb2312", errors="ignore")) // 2  # GB2312: 2 bytes a Han char
    if len(han) < MIN_GB18030_HAN:
        return (
            "ENCODING_AMBIGUOUS",
            f"and too short to tell which encoding it is: as GB18030 it has {len(han)} Han "
            f"character(s) (at least {MIN_GB18030_HAN} needed), and other encodings such as "
            "Big5 could explain the same bytes",
        )
    if common >= 0.9 * len(han):
        return Decoded(text, "gb18030", "gb18030", 0)
    return (
        "ENCODING_UNDECODABLE",
        f"and not plausible GB18030 ({len(han) - common} of {len(han)} Han characters "
        "outside the common GB2312 set)",
    )


def incomplete_utf8_tail(data: bytes) -> int:
    """How many bytes at the end of ``data`` start a UTF-8 character that never ends (0-3).

    >>> [incomplete_utf8_tail(b) for b in ("学".encode()[:2], b"ok", b"\\xff", "学".encode())]
    [2, 0, 0, 0]
    """
    for n in (1, 2, 3):
        if len(data) >= n and data[-n] >= 0xC2:  # the last byte that may start a character
            decoder = codecs.getincrementaldecoder("utf-8")()
            try:
                pending = decoder.decode(data[-n:], final=False) == "" and decoder.getstate()[0]
            except UnicodeDecodeError:
                return 0
            return n if pending else 0
    return 0


def cut_tail_length(text: str) -> int:
    r"""Length of the incomplete UTF-8 character :func:`decode` kept, surrogate-escaped, at
    the very end of ``text``: the file was cut inside its last character (A10).

    >>> cut_tail_length("完整\udce5\udcad"), cut_tail_length("a\udcff"), cut_tail_length("a")
    (2, 0, 0)
    """
    n = 0
    while n < 3 and n < len(text) and "\udc80" <= text[-1 - n] <= "\udcff":
        n += 1
    return incomplete_utf8_tail(bytes(ord(c) - 0xDC00 for c in text[len(text) - n :]))


class Locator:
    """Maps character offsets in decoded text to (byte offset, 1-based line). Offsets asked
    in increasing order cost O(distance); going back restarts from 0."""

    def __init__(self, text: str, codec: str | None, bom_len: int) -> None:
        self._text = text
        self._codec = codec or "utf-8"
        self._bom = bom_len
        self._char = self._byte = 0
        self._line = 1
        self._one_line = "\n" not in text and "\r" not in text  # a flattened page

    def at(self, offset: int) -> tuple[int, int]:
        if offset < self._char:
            self._char, self._byte, self._line = 0, 0, 1
        text, start = self._text, self._char
        piece = text[start:offset]
        self._byte += len(piece.encode(self._codec, "surrogateescape"))
        self._char = offset
        if self._one_line:
            return self._bom + self._byte, 1
        # CRLF, lone CR and LF each end a line (as in parse.common.split_lines).
        breaks = piece.count("\n")
        if "\r" in piece:
            breaks += piece.count("\r") - piece.count("\r\n")
        if start and piece.startswith("\n") and text[start - 1] == "\r":
            breaks -= 1  # the CR that ended the previous chunk already counted this line
        self._line += breaks
        return self._bom + self._byte, self._line
