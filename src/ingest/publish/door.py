"""The one door into a publish: every command that opens one opens it here.

A publish folder holds its marker, ``.ingest``: written by ingest, the kind of folder (a
``publish``, or the ``refused`` output of a run the shrink guard or ``--strict`` refused),
the versions, and every file of the publish with its size and xxh3-128 digest.
:func:`open_publish` checks the marker and its kind, and that every file it lists is
present, a regular file (never a FIFO, device, folder or link: each is opened without
following links or blocking) of its listed size; its bytes are checked against the digest
as they are read (:meth:`Opened.read`), or all at once (:meth:`Opened.check_all`). A folder
with the marker and a file missing or damaged is **damaged** (:class:`Damaged`, naming
``ingest repair``), never "no publish"; a folder without the marker is no publish
(:class:`NotAPublish`), unless it is a publish of an older ingest (:attr:`Opened.legacy`:
the records are there, without digests).

Files are opened through one handle on the folder, so a run that swaps the folder meanwhile
cannot hand over files of two publishes: a file gone under the handle means the folder was
replaced, and the opening is tried again on the folder now in place.

Light on purpose: ``read_publish`` is built on it (the standard library, msgspec, xxhash).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import errno
import hashlib
import os
import shlex
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, BinaryIO, TypeVar

import msgspec
from xxhash import xxh3_128

from ingest.errors import UsageError

MARKER = ".ingest"
STATE = "state"
#: The state this ingest writes; older ones are read as their records (:attr:`Opened.legacy`).
STATE_VERSION = 4
#: What every publish holds, with or without digests (an older ingest's too).
RECORDS = ("items.jsonl", "topics.jsonl", "rejects.jsonl", "changes.jsonl", "report.json")
#: Git keep files an output folder may hold besides a publish (carried into each one).
KEEP = (".keep", ".gitkeep")
_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY
_PIECE = 1 << 20
_TRIES = 3
T = TypeVar("T")


class FileSum(msgspec.Struct, frozen=True):
    """A file's size and xxh3-128 digest (hex), as the marker lists it."""

    size: int
    xxh3_128: str


class Marker(msgspec.Struct, frozen=True):
    """The marker of an ingest folder (``.ingest``)."""

    written_by: str
    kind: str = "publish"
    schema_version: str = ""
    state_version: int = 0
    ingest_version: str = ""
    build: str = ""  # the build of ingest that wrote it (see ingest.state.cache.build)
    files: dict[str, FileSum] = {}


def repair_command(folder: Path) -> str:
    return f"ingest repair {shlex.quote(str(folder))}"


class NotAPublish(UsageError):
    """A folder that holds no publish of ingest (exit 2)."""


class Damaged(UsageError):
    """A publish with a file missing or not what was written (exit 2); ``what`` names it."""

    def __init__(self, folder: Path, what: str) -> None:
        super().__init__(
            f"the publish in {str(folder)!r} is damaged: {what}. Nothing was changed; mend "
            f"it from what remains with: {repair_command(folder)}"
        )
        self.what = what


def digest(data: bytes) -> str:
    return xxh3_128(data).hexdigest()


def read_marker(folder: Path, dir_fd: int | None = None) -> Marker | None:
    """The marker of ``folder`` (None: it has none); :class:`Damaged` when it is there but
    is no ingest marker."""
    try:
        data = _read_at(folder, dir_fd, MARKER, 1 << 26)
    except FileNotFoundError:
        return None
    except OSError as e:
        raise Damaged(folder, f"{MARKER} cannot be read ({_why(e)})") from None
    try:
        marker = msgspec.json.decode(data, type=Marker)
    except (msgspec.DecodeError, RecursionError) as e:
        raise Damaged(folder, f"{MARKER} is not ingest's marker ({e})") from None
    if marker.written_by != "ingest":
        raise Damaged(folder, f"{MARKER} is not ingest's marker")
    for name in marker.files:
        if not plain_name(name):
            raise Damaged(folder, f"{MARKER} lists a file {name!r}")
    return marker


def plain_name(name: str) -> bool:
    """A file name ingest writes: plain, or ``folder/name`` (at most two levels)."""
    parts = name.split("/")
    return 0 < len(parts) <= 3 and all(p not in ("", ".", "..") and "\0" not in p for p in parts)


class Opened:
    """A publish, opened through the door: its marker, and its files read through one
    handle on the folder. Close it (or use it as a context manager)."""

    def __init__(self, folder: Path, fd: int, marker: Marker | None, legacy: bool) -> None:
        self.folder, self.fd, self.marker, self.legacy = folder, fd, marker, legacy
        self._checked: set[str] = set()

    def __enter__(self) -> Opened:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    @property
    def files(self) -> dict[str, FileSum]:
        return {} if self.marker is None else self.marker.files

    def read(self, name: str) -> bytes:
        """A file of the publish, whole, checked against its digest (a legacy publish's
        records: against nothing but their being regular files)."""
        listed = self.files.get(name)
        try:
            data = _read_at(
                self.folder, self.fd, name, _PIECE << 10 if listed is None else listed.size
            )
        except FileNotFoundError:
            raise self._gone(name) from None
        except OSError as e:
            raise Damaged(self.folder, f"{name} {_why(e)}") from None
        if listed is not None and name not in self._checked:
            if len(data) != listed.size or digest(data) != listed.xxh3_128:
                raise Damaged(self.folder, f"{name} does not match its checksum")
            self._checked.add(name)
        return data

    def lines(self, name: str) -> Iterator[bytes]:
        """A JSON Lines file of the publish, a line at a time (without its newline)."""
        data = self.read(name)
        start = 0
        while start < len(data):
            end = data.find(b"\n", start)
            end = len(data) if end < 0 else end
            yield data[start:end]
            start = end + 1

    def _gone(self, name: str) -> Exception:
        """A file not found: the folder was replaced meanwhile (try again), or it is missing."""
        if not _still_named(self.folder, self.fd):
            return Replaced(f"{str(self.folder)!r} was replaced while it was read")
        return Damaged(self.folder, f"{name} is missing")

    def check(self, name: str) -> None:
        """A file read (a piece at a time) and checked against its digest."""
        if name not in self._checked and name in self.files:
            with self.open(name) as fh:
                check_stream(self.folder, name, fh, self.files[name])
        self._checked.add(name)

    def check_all(self) -> None:
        """Every file the marker lists, read and checked against its digest (a publish of
        ingest 0.2: against what its state and its report say)."""
        for name in sorted(self.files):
            self.check(name)
        if self.legacy and self.marker is not None:
            self._check_0_2()

    def _check_0_2(self) -> None:
        """ingest 0.2 gave no digest of its records: its marker gives its state manifest's,
        that manifest its state files', and its report counts its records."""
        want, manifest = self._json(MARKER).get("state_manifest"), f"{STATE}/manifest.json"
        if isinstance(want, str) and want:
            if digest(self.read(manifest)) != want:
                raise Damaged(self.folder, f"{manifest} does not match its checksum")
            files = self._json(manifest).get("files")
            for name, listed in files.items() if isinstance(files, dict) else [("", None)]:
                try:
                    sums = msgspec.convert(listed, FileSum)
                except msgspec.ValidationError:
                    sums = None
                if sums is None or not plain_name(name):
                    raise Damaged(self.folder, f"{manifest} lists {name!r} oddly")
                with self.open(f"{STATE}/{name}") as fh:
                    check_stream(self.folder, f"{STATE}/{name}", fh, sums)
            try:
                pages = packed_pages(self.read(manifest), lambda n: self.read(f"{STATE}/{n}"))
                lost = next((p[0] for p in pages if p[4] is None), None)
            except ValueError as e:
                raise Damaged(self.folder, str(e)) from None
            if lost is not None:
                raise Damaged(self.folder, f"page {lost!r} is not in its pack")
        elif (
            self.marker is not None
            and self.marker.state_version == 3
            and _exists(self.fd, manifest)
        ):
            raise Damaged(self.folder, f"{MARKER} gives no checksum of {manifest}")  # 0.2 gave it
        totals = self._json("report.json").get("totals")
        for name in ("items", "topics", "rejects"):
            count = totals.get(name) if isinstance(totals, dict) else None
            found = sum(1 for line in self.lines(f"{name}.jsonl") if line.strip())
            if isinstance(count, int) and found != count:
                raise Damaged(
                    self.folder, f"{name}.jsonl holds {found} records, its report counts {count}"
                )

    def _json(self, name: str) -> dict[str, Any]:
        try:
            doc = msgspec.json.decode(self.read(name))
        except (msgspec.DecodeError, RecursionError, ValueError):
            doc = None
        if not isinstance(doc, dict):
            raise Damaged(self.folder, f"{name} does not read as ingest wrote it")
        return doc

    def open(self, name: str) -> BinaryIO:
        """A file of the publish, open for reading (a regular file, never followed)."""
        try:
            fd = os.open(name, _FLAGS, dir_fd=self.fd)
        except FileNotFoundError:
            raise self._gone(name) from None
        except OSError as e:
            raise Damaged(self.folder, f"{name} {_why(e)}") from None
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise Damaged(self.folder, f"{name} is not a regular file")
        return open(fd, "rb")

    def path(self, name: str) -> Path:
        return self.folder / name


class Replaced(UsageError):
    """The folder was replaced (a run swapped a new publish in) while it was read."""


def reading(folder: Path, read: Callable[[Opened], T], *, check: bool = False) -> T:
    """``read(opened)`` of the publish in ``folder``, tried again when a run replaces the
    folder meanwhile: what it reads is of one publish."""
    for _ in range(_TRIES):
        try:
            with open_publish(folder, check=check) as opened:
                return read(opened)
        except Replaced:
            continue
    raise UsageError(f"{str(folder)!r} was replaced again and again while it was read")


def open_publish(folder: Path, *, check: bool = False, kind: str = "publish") -> Opened:
    """The publish in ``folder``, every file its marker lists there, regular and of its
    size (``check``: and of its digest). :class:`NotAPublish` when the folder holds none,
    :class:`Damaged` when it holds a damaged one."""
    for _ in range(_TRIES):
        fd = _open_folder(folder)
        try:
            opened = _opened(folder, fd, kind)
            if check:
                opened.check_all()
            return opened
        except (_Replaced, Replaced):
            os.close(fd)
            continue
        except BaseException:
            os.close(fd)
            raise
    raise UsageError(f"{str(folder)!r} was replaced again and again while it was read")


class _Replaced(Exception):
    """A file gone under the handle of a folder since replaced: open the new one."""


def _opened(folder: Path, fd: int, kind: str) -> Opened:
    marker = read_marker(folder, fd)
    if marker is None:
        present = [n for n in (*RECORDS, STATE, "report.html") if _exists(fd, n)]
        if present and _still_named(folder, fd):
            if set(present) == set(RECORDS) - {"changes.jsonl"} and _is_0_1(folder, fd):
                return Opened(folder, fd, None, legacy=True)  # a publish of ingest 0.1
            raise Damaged(folder, f"{MARKER} is missing (it holds {', '.join(present)})")
        if not present and not _still_named(folder, fd):
            raise _Replaced
        raise NotAPublish(f"{str(folder)!r} holds no publish of ingest (no {MARKER})")
    if marker.kind != kind:
        raise NotAPublish(
            f"{str(folder)!r} holds ingest's {marker.kind!r} output, not a {kind}: "
            + ("a run refused it; it is never published" if marker.kind == "refused" else "")
        )
    if marker.state_version > STATE_VERSION:
        raise UsageError(
            f"the publish in {str(folder)!r} has state version {marker.state_version}, newer "
            f"than this ingest reads ({STATE_VERSION}): upgrade ingest, or point it elsewhere"
        )
    legacy = marker.state_version < STATE_VERSION
    listed = list(marker.files) if not legacy else [n for n in RECORDS if n != "changes.jsonl"]
    for name in listed:
        _check_present(folder, fd, name, None if legacy else marker.files[name])
    return Opened(folder, fd, marker, legacy)


#: A page of ingest 0.2's state: file, sha256, size, crawl day, its bytes (None: not them).
PackedPage = tuple[str, str, int, str | None, bytes | None]


def packed_pages(manifest: bytes, read: Callable[[str], bytes]) -> Iterator[PackedPage]:
    """ingest 0.2's pages as its state manifest lists them, each with its bytes from its
    pack (``read``: a pack's bytes by name), None where a page is not its sha256 or the
    manifest cannot place it; ValueError when the manifest lists no pages."""
    doc = None
    with contextlib.suppress(msgspec.DecodeError, RecursionError, ValueError):
        doc = msgspec.json.decode(manifest)
    pages = doc.get("pages") if isinstance(doc, dict) else None
    if not isinstance(pages, list):
        raise ValueError("state/manifest.json lists no pages")
    packs: dict[str, bytes] = {}
    for p in pages:
        p = p if isinstance(p, dict) else {}
        file, sha256, pack, day = (
            str(p.get(k) or "") for k in ("file", "sha256", "pack", "crawled_at")
        )
        try:
            offset, size = int(p["offset"]), int(p["size"])
            day = dt.date.fromisoformat(day).isoformat() if day else ""
        except (KeyError, TypeError, ValueError):
            offset = size = -1
        if pack not in packs:
            packs[pack] = read(pack) if plain_name(pack) and "/" not in pack else b""
        data = packs[pack][offset : offset + size] if min(offset, size) >= 0 else b""
        whole = bool(sha256) and hashlib.sha256(data).hexdigest() == sha256
        name, bytes_ = file or "(a page without a name)", data if whole else None
        yield name, sha256, max(size, 0), day or None, bytes_


def is_0_1_report(data: bytes) -> bool:
    """Is this the ``report.json`` of a publish of ingest 0.1 (schema 1.0, no marker)?"""
    try:
        doc = msgspec.json.decode(data)
    except (msgspec.DecodeError, RecursionError):
        return False
    return isinstance(doc, dict) and str(doc.get("schema_version", "")).startswith("1.0.")


def _is_0_1(folder: Path, fd: int) -> bool:
    try:
        return is_0_1_report(_read_at(folder, fd, "report.json", 1 << 30))
    except OSError:
        return False


def _check_present(folder: Path, fd: int, name: str, listed: FileSum | None) -> None:
    try:
        st = _lstat_at(fd, name)
    except FileNotFoundError:
        if not _still_named(folder, fd):
            raise _Replaced from None
        raise Damaged(folder, f"{name} is missing") from None
    except OSError as e:
        raise Damaged(folder, f"{name} cannot be read ({_why(e)})") from None
    if not stat.S_ISREG(st.st_mode):
        raise Damaged(folder, f"{name} is {_kind(st.st_mode)}, not a regular file")
    if listed is not None and st.st_size != listed.size:
        raise Damaged(folder, f"{name} is {st.st_size} bytes, not the {listed.size} written")


def check_stream(folder: Path, name: str, fh: BinaryIO, listed: FileSum) -> None:
    """An open file of the publish read from its start, a piece at a time, and checked
    against its listed size and digest (left at its start again)."""
    fh.seek(0)
    h, size = xxh3_128(), 0
    try:
        while piece := fh.read(_PIECE):
            h.update(piece)
            size += len(piece)
            if size > listed.size:
                break
    except OSError as e:
        raise Damaged(folder, f"{name} cannot be read ({_why(e)})") from None
    if size != listed.size or h.hexdigest() != listed.xxh3_128:
        raise Damaged(folder, f"{name} does not match its checksum")
    fh.seek(0)


def _read_at(folder: Path, dir_fd: int | None, name: str, limit: int) -> bytes:
    """The bytes of ``name`` in the folder, a regular file opened without following a link
    or blocking, at most ``limit`` (a larger one is read as far as ``limit`` + 1)."""
    fd = os.open(name if dir_fd is not None else folder / name, _FLAGS, dir_fd=dir_fd)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(errno.EINVAL, f"is {_kind(st.st_mode)}, not a regular file")
        out = bytearray()
        while len(out) <= limit and (piece := os.read(fd, min(_PIECE, limit + 1 - len(out)))):
            out += piece
        return bytes(out)
    finally:
        os.close(fd)


def read_regular(path: Path, limit: int = 1 << 31) -> bytes | None:
    """A file's bytes when it is a regular file (a link never followed, a FIFO or a device
    never waited on; at most ``limit`` + 1 bytes); None when it is not one or cannot be
    read."""
    try:
        return _read_at(path.parent, None, path.name, limit)
    except (OSError, ValueError):
        return None


def _open_folder(folder: Path) -> int:
    try:
        return os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except FileNotFoundError:
        raise NotAPublish(f"{str(folder)!r}: no such folder") from None
    except NotADirectoryError:
        raise NotAPublish(f"{str(folder)!r} is not a folder") from None
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise NotAPublish(f"{str(folder)!r} cannot be opened (a loop of links)") from None
        raise NotAPublish(f"{str(folder)!r} cannot be opened ({_why(e)})") from None


def _lstat_at(fd: int, name: str) -> os.stat_result:
    return os.stat(name, dir_fd=fd, follow_symlinks=False)


def _exists(fd: int, name: str) -> bool:
    try:
        _lstat_at(fd, name)
    except OSError:
        return False
    return True


def _still_named(folder: Path, fd: int) -> bool:
    """Is ``folder`` still the folder the handle holds (not swapped since)?"""
    try:
        now, held = os.stat(folder), os.fstat(fd)
    except OSError:
        return False
    return (now.st_dev, now.st_ino) == (held.st_dev, held.st_ino)


def _kind(mode: int) -> str:
    if stat.S_ISLNK(mode):
        return "a link"
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a file"


def _why(e: OSError) -> str:
    if e.errno == errno.ELOOP:
        return "is a link, not a regular file"
    if e.errno == errno.EISDIR:
        return "is a folder, not a regular file"
    return e.strerror or str(e)


def decode_json(data: bytes, kind: Any, where: str) -> Any:
    """``data`` as JSON of ``kind`` (msgspec); any failure — malformed, nested too deep, a
    number too large — is one :class:`UsageError` naming ``where``."""
    try:
        return msgspec.json.decode(data, type=kind)
    except (msgspec.DecodeError, RecursionError, ValueError) as e:
        raise UsageError(f"{where}: {' '.join(str(e).split()) or type(e).__name__}") from None
