"""Read: find the input files, then turn each file's bytes into text (or a reason not to).

Decoding never guesses silently: a BOM decides; otherwise strict UTF-8; otherwise an
allow-listed GB18030 decoding that must look like real Chinese; a file with a few invalid
UTF-8 bytes is decoded with ``surrogateescape`` so only the listings holding them are
rejected later. Everything else is refused with a reason code.
"""

from __future__ import annotations

import codecs
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from .errors import UsageError
from .normalize import han_chars

#: Files larger than this are refused before they are read (TOO_LARGE).
MAX_FILE_BYTES = 64 * 1024 * 1024

_MAGIC = {
    b"\x89PNG": "PNG image",
    b"%PDF": "PDF document",
    b"\x1f\x8b": "gzip archive",
    b"PK\x03\x04": "zip archive",
    b"\xff\xd8\xff": "JPEG image",
    b"GIF8": "GIF image",
    b"BZh": "bzip2 archive",
    b"\xfd7zXZ": "xz archive",
    b"\x7fELF": "ELF binary",
}
_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32-le", "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32-be", "utf-32"),
    (codecs.BOM_UTF8, "utf-8", "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16-le", "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16-be", "utf-16"),
)


@dataclass(frozen=True, slots=True)
class InputFile:
    """A candidate input: where it is, and the name records will show."""

    path: Path
    name: str
    problem: tuple[str, str] | None = None  # (reason code, message) when unusable


@dataclass(frozen=True, slots=True)
class Decoded:
    """A file's text, or the reason it has none."""

    text: str | None
    encoding: str | None  # as reported: utf-8, utf-8-sig, utf-16-le, gb18030, ...
    codec: str | None  # the codec that reproduces the bytes of ``text`` (for offsets)
    bom_len: int
    reason: str | None = None
    message: str | None = None
    invalid_bytes: int = 0


# --------------------------------------------------------------------------- discovery


def collect_inputs(paths: list[str]) -> list[InputFile]:
    """Expand files and folders into input files, sorted by name; unusable paths raise.

    Only regular files are read. A symlink whose target leaves the folder it was found
    in, FIFOs, sockets and devices become inputs with a ``problem`` (rejected, run goes on).
    """
    found: dict[str, InputFile] = {}
    for raw in paths:
        p = Path(raw)
        try:
            st = p.stat()
        except OSError as e:
            raise UsageError(f"cannot read input path {raw!r}: {e.strerror or e}") from e
        if stat.S_ISDIR(st.st_mode):
            for f in _walk(p):
                found.setdefault(f.name, f)
        else:
            f = _classify(p, p.name, root=None)
            found.setdefault(f.name, f)
    return [found[k] for k in sorted(found)]


def _walk(root: Path) -> list[InputFile]:
    out: list[InputFile] = []
    real_root = root.resolve()
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames.sort()
        for fn in sorted(filenames) + sorted(d for d in dirnames if Path(dirpath, d).is_symlink()):
            p = Path(dirpath, fn)
            out.append(_classify(p, p.relative_to(root).as_posix(), real_root))
    return out


def _classify(p: Path, name: str, root: Path | None) -> InputFile:
    try:
        lst = p.lstat()
        if stat.S_ISLNK(lst.st_mode):
            target = p.resolve()
            if root is not None and not target.is_relative_to(root):
                return InputFile(
                    p,
                    name,
                    (
                        "SYMLINK_OUTSIDE",
                        f"symlink leads outside the input folder, to {str(target)!r}",
                    ),
                )
        st = p.stat()
    except OSError as e:
        return InputFile(p, name, ("UNREADABLE", f"cannot stat: {e.strerror or e}"))
    if stat.S_ISDIR(st.st_mode):
        return InputFile(p, name, ("NOT_REGULAR_FILE", "a symlink to a folder is not followed"))
    if not stat.S_ISREG(st.st_mode):
        return InputFile(
            p, name, ("NOT_REGULAR_FILE", "not a regular file (FIFO, socket or device)")
        )
    if st.st_size > MAX_FILE_BYTES:
        return InputFile(
            p, name, ("TOO_LARGE", f"{st.st_size} bytes, over the cap of {MAX_FILE_BYTES} bytes")
        )
    return InputFile(p, name)


def read_bytes(f: InputFile) -> tuple[bytes | None, tuple[str, str] | None]:
    """Read a file once, bounded by the size cap; re-check it did not change meanwhile."""
    try:
        before = f.path.stat()
        with open(f.path, "rb") as fh:
            data = fh.read(MAX_FILE_BYTES + 1)
        after = f.path.stat()
    except OSError as e:
        return None, ("UNREADABLE", f"cannot read: {e.strerror or e}")
    if len(data) > MAX_FILE_BYTES:
        return None, ("TOO_LARGE", f"over the cap of {MAX_FILE_BYTES} bytes")
    if (before.st_size, before.st_mtime_ns) != (after.st_size, after.st_mtime_ns) or len(
        data
    ) != after.st_size:
        return None, ("INPUT_CHANGED", "the file changed while it was read; skipped")
    return data, None


# --------------------------------------------------------------------------- decoding


def decode(data: bytes) -> Decoded:
    """Decode a file's bytes; see the module docstring for the rules."""
    if not data:
        return Decoded(None, None, None, 0, "EMPTY_INPUT", "the file is empty (0 bytes)")
    for bom, name, codec in _BOMS:
        if data.startswith(bom):
            return _decode_bom(data, bom, name, codec)
    for magic, what in _MAGIC.items():
        if data.startswith(magic):
            return Decoded(None, None, None, 0, "BINARY_CONTENT", f"looks like a {what}")
    nuls = data.count(0)
    if nuls and nuls * 100 >= len(data):
        return Decoded(
            None,
            None,
            None,
            0,
            "BINARY_CONTENT",
            f"{nuls} NUL bytes in {len(data)}: binary, or UTF-16 without a BOM",
        )
    try:
        return Decoded(data.decode("utf-8"), "utf-8", "utf-8", 0)
    except UnicodeDecodeError as e:
        first_bad = e.start
    return _decode_non_utf8(data, first_bad)


def _decode_bom(data: bytes, bom: bytes, name: str, codec: str) -> Decoded:
    body = data[len(bom) :]
    try:
        text = body.decode(name)
    except UnicodeDecodeError as e:
        return Decoded(
            None,
            name,
            None,
            len(bom),
            "ENCODING_UNDECODABLE",
            f"{name} BOM but invalid {name} at byte {e.start + len(bom)}",
        )
    return Decoded(text, codec if codec != "utf-16" else name, name, len(bom))


def _decode_non_utf8(data: bytes, first_bad: int) -> Decoded:
    gb = _try_gb18030(data)
    if isinstance(gb, Decoded):
        return gb
    invalid = _count_invalid_utf8(data)
    if invalid * 200 <= len(data):  # at most 0.5 % bad bytes: a damaged UTF-8 file
        text = data.decode("utf-8", errors="surrogateescape")
        return Decoded(text, "utf-8", "utf-8", 0, invalid_bytes=invalid)
    return Decoded(
        None,
        None,
        None,
        0,
        gb or "ENCODING_UNDECODABLE",
        f"not UTF-8 (invalid byte at offset {first_bad}) and not plausible GB18030",
    )


def _try_gb18030(data: bytes) -> Decoded | str | None:
    """GB18030 if it decodes cleanly and reads as real Chinese; else a reason or None."""
    try:
        text = data.decode("gb18030")
    except UnicodeDecodeError:
        return None
    han = "".join(han_chars(text))
    common = len(han.encode("gb2312", errors="ignore")) // 2  # GB2312: 2 bytes a Han char
    if len(han) >= 16 and common >= 0.9 * len(han):
        return Decoded(text, "gb18030", "gb18030", 0)
    if len(han) < 16:
        return "ENCODING_AMBIGUOUS"
    return None


def _count_invalid_utf8(data: bytes) -> int:
    text = data.decode("utf-8", errors="surrogateescape")
    return sum(1 for c in text if "\udc80" <= c <= "\udcff")


# --------------------------------------------------------------------------- locations


class Locator:
    """Maps character offsets in decoded text to (byte offset, 1-based line).

    Offsets asked in increasing order cost O(distance); going back restarts from 0.
    """

    def __init__(self, text: str, codec: str | None, bom_len: int) -> None:
        self._text = text
        self._codec = codec or "utf-8"
        self._bom = bom_len
        self._char = 0
        self._byte = 0
        self._line = 1

    def at(self, offset: int) -> tuple[int, int]:
        if offset < self._char:
            self._char, self._byte, self._line = 0, 0, 1
        chunk = self._text[self._char : offset]
        self._byte += len(chunk.encode(self._codec, errors="surrogateescape"))
        self._line += chunk.count("\n") + (chunk.count("\r") if "\n" not in self._text else 0)
        self._char = offset
        return self._bom + self._byte, self._line
