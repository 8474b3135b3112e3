"""Discover and read: the command line's paths as input files, and a file's bytes.

Discovery takes only regular files. Anything else met while walking a folder (a symlink
leading out of it or to a folder, a FIFO, socket or device, a name with control, format or
undecodable characters, a folder that cannot be listed, a folder named like a dump file)
becomes an input with a ``problem``: rejected with a reason, never opened; the run goes on.
Reading is bounded by a cap, opens without following links or blocking and checks with
``fstat``, so a symlink or FIFO swapped in later is refused, never followed or waited on;
a file that changed while it was read is refused (INPUT_CHANGED)."""

from __future__ import annotations

import functools
import os
import stat
import unicodedata
from dataclasses import dataclass
from pathlib import Path

from ingest.errors import UsageError

#: Files larger than this are refused before they are read (TOO_LARGE).
MAX_FILE_BYTES = 64 * 1024 * 1024

_READ_CHUNK = 1 << 20
_OPEN_FLAGS = os.O_RDONLY | os.O_CLOEXEC | os.O_NOCTTY | os.O_NONBLOCK | os.O_NOFOLLOW
#: Names of dump files; a *folder* with such a name inside an input folder is rejected.
_DUMP_SUFFIXES = (".txt", ".html", ".htm", ".md")
#: Unicode categories a file name may not contain: it would forge log lines or records.
_UNSAFE_NAME_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})


def read_bytes(path: Path) -> tuple[bytes | None, tuple[str, str] | None]:
    """A file's bytes, read once; or (reason, message) why not."""
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except OSError as e:
        return None, ("UNREADABLE", f"cannot open: {e.strerror or e}")
    try:
        before = os.fstat(fd)
        refused = _refusal(before)
        if refused is not None:
            return None, refused
        data = _read_all(fd, MAX_FILE_BYTES + 1)
        after = os.fstat(fd)
    except OSError as e:
        return None, ("UNREADABLE", f"cannot read: {e.strerror or e}")
    finally:
        os.close(fd)
    if len(data) > MAX_FILE_BYTES:
        return None, ("TOO_LARGE", f"over the cap of {MAX_FILE_BYTES} bytes")
    changed = (before.st_size, before.st_mtime_ns) != (after.st_size, after.st_mtime_ns)
    if changed or len(data) != after.st_size:
        return None, (
            "INPUT_CHANGED",
            f"the file changed while it was read ({before.st_size} bytes before, "
            f"{len(data)} read, {after.st_size} after); skipped",
        )
    return data, None


def _refusal(st: os.stat_result) -> tuple[str, str] | None:
    """Why a file (``st``: its stat) is refused before a byte of it is read, if it is."""
    if not stat.S_ISREG(st.st_mode):
        return "NOT_REGULAR_FILE", f"no longer a regular file ({file_type(st.st_mode)})"
    if st.st_size > MAX_FILE_BYTES:
        return "TOO_LARGE", f"{st.st_size} bytes, over the cap of {MAX_FILE_BYTES} bytes"
    return None


def _read_all(fd: int, limit: int) -> bytes:
    buf = bytearray()
    while len(buf) < limit:
        chunk = os.read(fd, min(_READ_CHUNK, limit - len(buf)))
        if not chunk:
            break
        buf += chunk
    return bytes(buf)


def file_type(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a file"


@dataclass(frozen=True, slots=True)
class InputFile:
    """A candidate input: ``path`` is the file itself (a symlink's resolved target),
    ``name`` the one records show, safe to print (unsafe characters escaped)."""

    path: Path
    name: str
    problem: tuple[str, str] | None = None  # (reason code, message) when unusable


def collect_inputs(paths: list[str]) -> list[InputFile]:
    """Expand files and folders into input files, sorted by name.

    A path that does not exist or cannot be listed raises ``UsageError``; so do two files
    that would get the same name in the records (``a/x.txt`` and ``b/x.txt`` given as
    ``a b``). The same file reached twice is read once. Paths are made absolute: the
    workers of a Dask scheduler run in folders of their own.
    """
    found: dict[str, tuple[InputFile, str]] = {}  # name -> (the input, its real path)
    # A usable input is no link (or a link's resolved target): its real path is its
    # folder's and its name, and each folder is resolved once (realpath checks every
    # component of every path again).
    real_folder = functools.cache(os.path.realpath)
    for raw in paths:
        p = Path(raw).absolute()
        try:
            st = p.stat()
        except (OSError, RuntimeError) as e:
            why = getattr(e, "strerror", None) or str(e)
            raise UsageError(f"cannot read input path {raw!r}: {why}") from e
        entries = _walk(p, raw) if stat.S_ISDIR(st.st_mode) else [_classify(p, p.name, None)]
        for f in entries:
            if f.problem is not None:
                where = os.path.realpath(f.path)
            else:
                folder, name = os.path.split(f.path)
                where = os.path.join(real_folder(folder), name)
            seen = found.setdefault(f.name, (f, where))[1]
            if seen != where:
                raise UsageError(
                    f"two inputs would both be named {f.name!r} in the records: "
                    f"{seen!r} and {where!r}; give them in separate runs"
                )
    return [found[k][0] for k in sorted(found)]


def _walk(root: Path, raw: str) -> list[InputFile]:
    out: list[InputFile] = []
    real_root = root.resolve()

    def unreadable_folder(e: OSError) -> None:
        folder = Path(e.filename) if e.filename else root
        if folder == root:
            raise UsageError(f"cannot read input folder {raw!r}: {e.strerror or e}") from e
        name = folder.relative_to(root).as_posix()
        why = f"cannot list folder {name!r}: {e.strerror or e}"
        out.append(InputFile(folder, safe_name(name), ("UNREADABLE", why)))

    for dirpath, dirnames, filenames in os.walk(root, onerror=unreadable_folder):
        dirnames.sort()
        links = [d for d in dirnames if Path(dirpath, d).is_symlink()]
        for fn in sorted(filenames) + sorted(links):
            p = Path(dirpath, fn)
            out.append(_classify(p, p.relative_to(root).as_posix(), real_root))
        for d in [d for d in dirnames if d not in links and d.lower().endswith(_DUMP_SUFFIXES)]:
            dirnames.remove(d)  # a scraper wrote a folder where a dump should be: say so
            name = Path(dirpath, d).relative_to(root).as_posix()
            why = (
                "a folder named like a dump file; not read (give it on the command line to "
                "read what is inside)"
            )
            out.append(InputFile(Path(dirpath, d), safe_name(name), ("NOT_REGULAR_FILE", why)))
    return out


def safe_name(name: str) -> str:
    r"""``name`` with control, format and undecodable characters escaped (``\n``, ``\xff``).

    >>> safe_name("new\nline\u202e.txt"), safe_name("bad\udcff.txt"), safe_name("模型 a.txt")
    ('new\\nline\\u202e.txt', 'bad\\xff.txt', '模型 a.txt')
    """
    if name.isprintable():  # the usual name: every character is printable, none unsafe
        return name
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
        why = f"file name {name!r} contains control, format or undecodable characters; not read"
        return InputFile(p, shown, ("UNSAFE_FILE_NAME", why))
    try:
        st = p.lstat()  # a file that is no link: its lstat is its stat
        if stat.S_ISLNK(st.st_mode):
            try:
                target = p.resolve(strict=True)
            except (OSError, RuntimeError) as e:
                why = getattr(e, "strerror", None) or str(e)
                return InputFile(p, name, ("UNREADABLE", f"broken symlink: {why}"))
            if root is not None and not target.is_relative_to(root):
                why = f"symlink leads outside the input folder, to {str(target)!r}"
                return InputFile(p, name, ("SYMLINK_OUTSIDE", why))
            p = target
            st = p.stat()
    except OSError as e:
        return InputFile(p, name, ("UNREADABLE", f"cannot stat: {e.strerror or e}"))
    if stat.S_ISDIR(st.st_mode):
        return InputFile(p, name, ("NOT_REGULAR_FILE", "a symlink to a folder is not followed"))
    if not stat.S_ISREG(st.st_mode):
        why = f"not a regular file ({file_type(st.st_mode)})"
        return InputFile(p, name, ("NOT_REGULAR_FILE", why))
    return InputFile(p, name, _refusal(st))  # a regular file: too large, or fine
