"""Discover: expand the paths given on the command line into input files.

Discovery takes only regular files. Anything else met while walking a folder (a symlink
leading out of it, a symlink to a folder, a FIFO, socket or device, a name with control,
format or undecodable characters, a folder that cannot be listed) becomes an input with a
``problem``: it is rejected with a reason, never opened, and the run goes on. A folder,
whatever its name (``x.txt/`` too), is walked; one named like a dump file inside an input
folder is reported instead.
"""

from __future__ import annotations

import datetime as dt
import os
import stat
import unicodedata
from dataclasses import dataclass
from pathlib import Path

from ..errors import UsageError
from .read import MAX_FILE_BYTES, file_type

#: Unicode categories a file name may not contain: it would forge log lines or records.
_UNSAFE_NAME_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})


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
class StoredPage:
    """A page an earlier publish kept in its state, read again by ``--merge``."""

    name: str
    data: bytes
    crawled_at: dt.date | None = None  # as the run that saved it was told (--crawled-at)


def collect_inputs(paths: list[str]) -> list[InputFile]:
    """Expand files and folders into input files, sorted by name; unusable paths raise.

    A path given on the command line that does not exist or cannot be listed raises
    ``UsageError``; so do two different files that would get the same name in the records
    (``a/x.txt`` and ``b/x.txt`` given as ``a b``). The same file reached twice is read once.
    Paths are made absolute: the workers of a Dask scheduler run in folders of their own.
    """
    found: dict[str, InputFile] = {}
    real_of: dict[str, str] = {}
    real = _RealPaths()
    for raw in paths:
        p = Path(raw).absolute()
        try:
            st = p.stat()
        except (OSError, RuntimeError) as e:
            why = getattr(e, "strerror", None) or str(e)
            raise UsageError(f"cannot read input path {raw!r}: {why}") from e
        entries = _walk(p, raw) if stat.S_ISDIR(st.st_mode) else [_classify(p, p.name, None)]
        for f in entries:
            where = real.of(f)
            if f.name not in found:
                found[f.name] = f
                real_of[f.name] = where
            elif real_of[f.name] != where:
                raise UsageError(
                    f"two inputs would both be named {f.name!r} in the records: "
                    f"{real_of[f.name]!r} and {where!r}; give them in separate runs"
                )
    return [found[k] for k in sorted(found)]


class _RealPaths:
    """``os.path.realpath`` of inputs, each folder resolved once: a usable input is a file
    that is no link (or a link's resolved target), so its real path is its folder's real
    path and its name (``realpath`` checks every component of every path again)."""

    def __init__(self) -> None:
        self._folders: dict[str, str] = {}

    def of(self, f: InputFile) -> str:
        if f.problem is not None:
            return os.path.realpath(f.path)
        folder, name = os.path.split(f.path)
        real = self._folders.get(folder)
        if real is None:
            real = self._folders[folder] = os.path.realpath(folder)
        return os.path.join(real, name)


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
        st = lst  # a file that is no link: its lstat is its stat
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
            p, name, ("NOT_REGULAR_FILE", f"not a regular file ({file_type(st.st_mode)})")
        )
    if st.st_size > MAX_FILE_BYTES:
        return InputFile(
            p, name, ("TOO_LARGE", f"{st.st_size} bytes, over the cap of {MAX_FILE_BYTES} bytes")
        )
    return InputFile(p, name)
