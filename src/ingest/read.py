"""Read: find the input files, then turn each file's bytes into text (or a reason not to).

Discovery takes only regular files. Anything else met while walking a folder (a symlink
leading out of it, a symlink to a folder, a FIFO, socket or device, a name with control,
format or undecodable characters, a folder that cannot be listed) becomes an input with a
``problem``: it is rejected with a reason, never opened, and the run goes on. A folder,
whatever its name (``x.txt/`` too), is walked. Files are opened without following links
and without blocking, read once up to a cap, and re-checked after the read (INPUT_CHANGED).

Decoding never guesses silently: a BOM decides; otherwise strict UTF-8; otherwise an
allow-listed GB18030 decoding that must look like real Chinese; a UTF-8 file with a few
invalid bytes (or cut inside its last character) is decoded with ``surrogateescape`` so
only the listings holding them are rejected later. Everything else is refused with a
reason code. Nothing is ever decoded with ``errors="replace"`` or ``"ignore"``.
"""

from __future__ import annotations

import codecs
import os
import re
import stat
import unicodedata
from dataclasses import dataclass
from pathlib import Path

from .errors import UsageError
from .normalize import han_chars

#: Files larger than this are refused before they are read (TOO_LARGE).
MAX_FILE_BYTES = 64 * 1024 * 1024
#: Below this many Han characters a clean GB18030 decoding is not trusted (A4).
MIN_GB18030_HAN = 16

#: A byte that was not valid UTF-8, as ``surrogateescape`` keeps it in decoded text.
ESCAPED_BYTE = re.compile("[\udc80-\udcff]")

_READ_CHUNK = 1 << 20
_OPEN_FLAGS = (
    os.O_RDONLY
    | os.O_CLOEXEC
    | os.O_NOCTTY
    | os.O_NONBLOCK  # a FIFO swapped in after discovery must not block the run
    | os.O_NOFOLLOW  # nor may a symlink swapped in: links are resolved during discovery
)
#: Unicode categories a file name may not contain: it would forge log lines or records.
_UNSAFE_NAME_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})

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
    """A candidate input: where it is, and the name records will show.

    ``path`` is the file itself (a symlink's resolved target); ``name`` is safe to print:
    control, format and undecodable characters appear escaped (and make it a ``problem``).
    """

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
    invalid_bytes: int = 0  # bytes kept as surrogate escapes (U+DC80-U+DCFF) in ``text``
    cut_tail: int = 0  # of which: an incomplete character at the very end (a cut file)


# --------------------------------------------------------------------------- discovery


def collect_inputs(paths: list[str]) -> list[InputFile]:
    """Expand files and folders into input files, sorted by name; unusable paths raise.

    A path given on the command line that does not exist or cannot be listed raises
    ``UsageError``; so do two different files that would get the same name in the records
    (``a/x.txt`` and ``b/x.txt`` given as ``a b``). The same file reached twice is read once.
    """
    found: dict[str, InputFile] = {}
    real_of: dict[str, str] = {}
    for raw in paths:
        p = Path(raw)
        try:
            st = p.stat()
        except (OSError, RuntimeError) as e:
            why = getattr(e, "strerror", None) or str(e)
            raise UsageError(f"cannot read input path {raw!r}: {why}") from e
        entries = _walk(p, raw) if stat.S_ISDIR(st.st_mode) else [_classify(p, p.name, None)]
        for f in entries:
            real = os.path.realpath(f.path)
            if f.name not in found:
                found[f.name] = f
                real_of[f.name] = real
            elif real_of[f.name] != real:
                raise UsageError(
                    f"two inputs would both be named {f.name!r} in the records: "
                    f"{real_of[f.name]!r} and {real!r}; give them in separate runs"
                )
    return [found[k] for k in sorted(found)]


def _walk(root: Path, raw: str) -> list[InputFile]:
    out: list[InputFile] = []
    real_root = root.resolve()

    def unreadable_folder(e: OSError) -> None:
        folder = Path(e.filename) if e.filename else root
        if folder == root:
            raise UsageError(f"cannot read input folder {raw!r}: {e.strerror or e}") from e
        name = folder.relative_to(root).as_posix()
        out.append(
            InputFile(
                folder,
                safe_name(name),
                ("UNREADABLE", f"cannot list folder {name!r}: {e.strerror or e}"),
            )
        )

    for dirpath, dirnames, filenames in os.walk(root, onerror=unreadable_folder):
        dirnames.sort()
        links = [d for d in dirnames if Path(dirpath, d).is_symlink()]
        for fn in sorted(filenames) + sorted(links):
            p = Path(dirpath, fn)
            out.append(_classify(p, p.relative_to(root).as_posix(), real_root))
        for d in [d for d in dirnames if d not in links and d.lower().endswith(_DUMP_SUFFIXES)]:
            dirnames.remove(d)  # a scraper wrote a folder where a dump should be: say so
            name = Path(dirpath, d).relative_to(root).as_posix()
            out.append(
                InputFile(
                    Path(dirpath, d),
                    safe_name(name),
                    (
                        "NOT_REGULAR_FILE",
                        "a folder named like a dump file; not read (give it on "
                        "the command line to read what is inside)",
                    ),
                )
            )
    return out


#: Names of dump files; a *folder* with such a name inside an input folder is rejected.
_DUMP_SUFFIXES = (".txt", ".html", ".htm", ".md")


def safe_name(name: str) -> str:
    r"""``name`` with control, format and undecodable characters escaped (``\n``, ``\xff``).

    >>> safe_name("new\nline\u202e.txt"), safe_name("bad\udcff.txt"), safe_name("模型 a.txt")
    ('new\\nline\\u202e.txt', 'bad\\xff.txt', '模型 a.txt')
    """
    return "".join(_escape_char(ch) for ch in name)


def _escape_char(ch: str) -> str:
    if unicodedata.category(ch) not in _UNSAFE_NAME_CATEGORIES:
        return ch
    if "\udc80" <= ch <= "\udcff":  # a byte that is not UTF-8 (os.fsdecode surrogateescape)
        return f"\\x{ord(ch) - 0xDC00:02x}"
    return repr(ch)[1:-1]


def _classify(p: Path, name: str, root: Path | None) -> InputFile:
    shown = safe_name(name)
    if shown != name:
        return InputFile(
            p,
            shown,
            (
                "UNSAFE_FILE_NAME",
                f"file name {name!r} contains control, format or undecodable characters; not read",
            ),
        )
    try:
        lst = p.lstat()
        if stat.S_ISLNK(lst.st_mode):
            try:
                target = p.resolve(strict=True)
            except (OSError, RuntimeError) as e:
                why = getattr(e, "strerror", None) or str(e)
                return InputFile(p, name, ("UNREADABLE", f"broken symlink: {why}"))
            if root is not None and not target.is_relative_to(root):
                return InputFile(
                    p,
                    name,
                    (
                        "SYMLINK_OUTSIDE",
                        f"symlink leads outside the input folder, to {str(target)!r}",
                    ),
                )
            p = target
        st = p.stat()
    except OSError as e:
        return InputFile(p, name, ("UNREADABLE", f"cannot stat: {e.strerror or e}"))
    if stat.S_ISDIR(st.st_mode):
        return InputFile(p, name, ("NOT_REGULAR_FILE", "a symlink to a folder is not followed"))
    if not stat.S_ISREG(st.st_mode):
        return InputFile(
            p, name, ("NOT_REGULAR_FILE", f"not a regular file ({_file_type(st.st_mode)})")
        )
    if st.st_size > MAX_FILE_BYTES:
        return InputFile(
            p, name, ("TOO_LARGE", f"{st.st_size} bytes, over the cap of {MAX_FILE_BYTES} bytes")
        )
    return InputFile(p, name)


def _file_type(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a file"


def read_bytes(f: InputFile) -> tuple[bytes | None, tuple[str, str] | None]:
    """Read a file once, bounded by the size cap; re-check it did not change meanwhile.

    The file is opened with O_NOFOLLOW and O_NONBLOCK and checked with ``fstat``, so a
    symlink or FIFO put in its place after discovery is refused, never followed or waited on.
    """
    try:
        fd = os.open(f.path, _OPEN_FLAGS)
    except OSError as e:
        return None, ("UNREADABLE", f"cannot open: {e.strerror or e}")
    try:
        before = os.fstat(fd)
        if not stat.S_ISREG(before.st_mode):
            return None, (
                "NOT_REGULAR_FILE",
                f"no longer a regular file ({_file_type(before.st_mode)})",
            )
        if before.st_size > MAX_FILE_BYTES:
            return None, (
                "TOO_LARGE",
                f"{before.st_size} bytes, over the cap of {MAX_FILE_BYTES} bytes",
            )
        data = _read_all(fd, MAX_FILE_BYTES + 1)
        after = os.fstat(fd)
    except OSError as e:
        return None, ("UNREADABLE", f"cannot read: {e.strerror or e}")
    finally:
        os.close(fd)
    if len(data) > MAX_FILE_BYTES:
        return None, ("TOO_LARGE", f"over the cap of {MAX_FILE_BYTES} bytes")
    if (before.st_size, before.st_mtime_ns) != (after.st_size, after.st_mtime_ns) or len(
        data
    ) != after.st_size:
        return None, (
            "INPUT_CHANGED",
            f"the file changed while it was read ({before.st_size} bytes before, "
            f"{len(data)} read, {after.st_size} after); skipped",
        )
    return data, None


def _read_all(fd: int, limit: int) -> bytes:
    buf = bytearray()
    while len(buf) < limit:
        chunk = os.read(fd, min(_READ_CHUNK, limit - len(buf)))
        if not chunk:
            break
        buf += chunk
    return bytes(buf)


# --------------------------------------------------------------------------- decoding


def decode(data: bytes) -> Decoded:
    """Decode a file's bytes; see the module docstring for the rules."""
    if not data:
        return Decoded(None, None, None, 0, "EMPTY_INPUT", "the file is empty (0 bytes)")
    for bom, name, codec in _BOMS:
        if data.startswith(bom):
            if name == "utf-8":
                return _decode_utf8(data, len(bom), codec)
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
    return _decode_utf8(data, 0, "utf-8")


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
            f"{name} BOM but invalid {name} at byte {e.start + len(bom)} ({e.reason})",
        )
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
    text = body.decode("utf-8", errors="surrogateescape")
    invalid = len(ESCAPED_BYTE.findall(text))
    if invalid == cut:  # the only damage: the file ends inside a character
        return Decoded(text, encoding, "utf-8", bom_len, invalid_bytes=invalid, cut_tail=cut)
    gb = _try_gb18030(body) if not bom_len else None
    if isinstance(gb, Decoded):
        return gb
    if (invalid - cut) * 200 <= len(body):  # at most 0.5 % bad bytes: a damaged UTF-8 file
        return Decoded(text, encoding, "utf-8", bom_len, invalid_bytes=invalid, cut_tail=cut)
    if bom_len:
        reason, why = "ENCODING_UNDECODABLE", "despite its UTF-8 BOM"
    elif gb is None:
        reason, why = "ENCODING_UNDECODABLE", "and not GB18030 either"
    else:
        reason, why = gb
    return Decoded(
        None,
        None,
        None,
        bom_len,
        reason,
        f"not UTF-8 ({invalid} invalid bytes, the first at byte {first_bad}) {why}",
    )


def _try_gb18030(data: bytes) -> Decoded | tuple[str, str] | None:
    """GB18030 if it decodes cleanly and reads as real Chinese; else (reason, why) or None."""
    try:
        text = data.decode("gb18030")
    except UnicodeDecodeError:
        return None
    han = "".join(han_chars(text))
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
        if len(data) < n or data[-n] < 0xC2:
            continue
        decoder = codecs.getincrementaldecoder("utf-8")()
        try:
            if decoder.decode(data[-n:], final=False) == "" and decoder.getstate()[0]:
                return n
        except UnicodeDecodeError:
            return 0
        return 0
    return 0


def cut_tail_length(text: str) -> int:
    r"""Length of an incomplete UTF-8 character that :func:`decode` kept, surrogate-escaped,
    at the very end of ``text``: the file was cut inside its last character (A10).

    >>> cut_tail_length("完整\udce5\udcad"), cut_tail_length("a\udcff"), cut_tail_length("a")
    (2, 0, 0)
    """
    n = 0
    while n < 3 and n < len(text) and "\udc80" <= text[-1 - n] <= "\udcff":
        n += 1
    return incomplete_utf8_tail(bytes(ord(c) - 0xDC00 for c in text[len(text) - n :]))


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
        # CRLF, lone CR and LF each end a line (as in parse.base.split_lines).
        self._line += chunk.count("\n") + chunk.count("\r") - chunk.count("\r\n")
        if chunk.startswith("\n") and self._char and self._text[self._char - 1] == "\r":
            self._line -= 1  # the CR that ended the previous chunk already counted this line
        self._char = offset
        return self._bom + self._byte, self._line
