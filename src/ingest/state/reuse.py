"""The reuse cache in ``state/``: what a run computed that the next run takes instead.

Kept beside the pages (see :mod:`.pages`), and like them by content:

- ``state/reuse.msgpack`` — the index: the cache's format and the build of ingest that
  wrote it (:func:`build`; another build's cache is never read), then per page, by the
  sha256 of its bytes, the page as it was parsed without its listings, each listing's
  summary key and where its listings are kept; every summary key of the publish with its
  MinHash signature; the near-duplicate edges (with a digest of the keys they were found
  among) and the order edges of each topic (by a digest of its pages); and where the
  results of each group of listings are kept (by a digest of its members and edges).
- ``state/reuse-N.pack`` — the listings of pages and the results of groups, one blob
  each, each with its own checksum (xxh3-64) in the index. A publish writes only what no
  earlier pack holds and carries earlier packs over by hard link; a pack less than half
  of which is still used is compacted (its live blobs are written again, into the new one).

The index begins with a magic line and the xxh3-128 of what follows: an index that fails
it is ignored whole; a blob that fails its own checksum is ignored alone. Either way the
run says so, computes what it cannot take, and leaves a cache of its own.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Literal

import msgspec
from msgspec import Struct
from xxhash import xxh3_64_intdigest, xxh3_128_digest

from .. import __version__
from ..records.internal import PageResult
from ..records.run import Content
from .previous import STATE

#: The layout of the files; a cache of another format is not read.
CACHE_FORMAT = 1
INDEX = "reuse.msgpack"
_MAGIC = b"ingest reuse cache\n"
#: Why the cache as a whole was not used, in the words of report.json.
Why = Literal["cache-missing", "other-version", "checksum-failed"]


class Ref(Struct, array_like=True, frozen=True, gc=False):
    """Where a blob is kept, and the xxh3-64 of its bytes."""

    pack: str
    offset: int
    size: int
    digest: int


#: An edge of the cache: its score and its two keys, as their places in ``Index.keys``.
Pair = tuple[float, int, int]


class PageEntry(Struct, array_like=True, frozen=True, gc=False):
    """A page an earlier run parsed."""

    facts: PageResult  # without its listings (their count in listings_elsewhere), unnamed
    keys: list[int]  # each listing's summary key, as its place in ``Index.keys``
    listings: Ref | None  # the listings, as a msgpack list (None: the page has none)


class Index(Struct, gc=False):
    """The whole index (see the module's docstring)."""

    format: int
    build: str
    packs: dict[str, int]  # pack name → its size
    pages: dict[str, PageEntry]  # by sha256
    keys: list[str]  # the publish's summary keys, sorted
    sigs: bytes  # each key's MinHash signature (uint32 rows, in the order of ``keys``)
    near: tuple[str, list[Pair]] | None  # digest of the keys, their near-duplicate edges
    topics: dict[str, list[Pair]]  # digest of a topic's pages → its order edges
    groups: dict[str, Ref]  # digest of a group's members and edges → its results


class _Head(Struct):
    """What is read of an index before trusting the rest: who wrote it."""

    format: int = 0
    build: str = ""


_INDEX = msgspec.msgpack.Decoder(Index)
_HEAD = msgspec.msgpack.Decoder(_Head)


def build() -> str:
    """The build of ingest writing and reading a cache: its version and a digest of its
    code (a cache of code changed since, a parser or a rule, must not be read)."""
    root = Path(__file__).resolve().parent.parent
    digest = hashlib.blake2b(digest_size=8)
    for path in sorted(root.rglob("*.py")):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        digest.update(path.read_bytes())
    return f"{CACHE_FORMAT}/{__version__}/{digest.hexdigest()}"


class Store:
    """An earlier publish's cache, opened: its index, and its blobs read on demand."""

    def __init__(self, folder: Path, index: Index) -> None:
        self.folder, self.index = folder, index
        self._fds: dict[str, int] = {}

    def blob(self, ref: Ref) -> bytes | None:
        """The bytes of ``ref``; None when they cannot be read or fail their checksum."""
        try:
            fd = self._fds.get(ref.pack)
            if fd is None:
                fd = self._fds[ref.pack] = os.open(self.folder / ref.pack, os.O_RDONLY)
            data = os.pread(fd, ref.size, ref.offset)
        except OSError:
            return None
        ok = len(data) == ref.size and xxh3_64_intdigest(data) == ref.digest
        return data if ok else None

    def close(self) -> None:
        while self._fds:
            os.close(self._fds.popitem()[1])

    def __getstate__(self) -> tuple[Path, Index]:
        return (self.folder, self.index)  # a process it is sent to opens its own files

    def __setstate__(self, state: tuple[Path, Index]) -> None:
        self.__init__(*state)  # type: ignore[misc]


def open_store(folder: Path | None, wanted: str) -> tuple[Store | None, Why | None]:
    """The cache in ``folder`` (a publish), if it was written by the build ``wanted`` and
    its index is whole; else None and why."""
    path = None if folder is None else folder / STATE / INDEX
    try:
        data = b"" if path is None else path.read_bytes()
    except FileNotFoundError:
        data = b""
    except OSError:
        return None, "checksum-failed"
    if not data:
        return None, "cache-missing"
    body = data[len(_MAGIC) + 16 :]
    if not data.startswith(_MAGIC) or xxh3_128_digest(body) != data[len(_MAGIC) :][:16]:
        return None, "checksum-failed"
    try:
        head = _HEAD.decode(body)
        if (head.format, head.build) != (CACHE_FORMAT, wanted):
            return None, "other-version"
        index = _INDEX.decode(body)
    except msgspec.DecodeError:
        return None, "checksum-failed"
    assert folder is not None
    return Store(folder / STATE, index), None


#: A blob of the next cache: one kept in an earlier pack, or bytes made when written.
Blob = Ref | Callable[[], bytes]


@dataclass(slots=True)
class Fill:
    """What the next cache holds (see :class:`Index`), its blobs kept or new."""

    pages: dict[str, tuple[PageResult, list[int], Blob | None]] = field(default_factory=dict)
    keys: list[str] = field(default_factory=list)
    sigs: bytes = b""
    near: tuple[str, list[Pair]] | None = None
    topics: dict[str, list[Pair]] = field(default_factory=dict)
    groups: dict[str, Blob] = field(default_factory=dict)


def cache_files(
    fill: Fill, prev: Store | None, sequence: int, wanted: str
) -> tuple[dict[str, Content], dict[str, Path]]:
    """The files of the next publish's cache (name → content: the new pack, if any, then
    the index), and the earlier packs it carries over (name → path, to be hard-linked)."""
    sizes = prev.index.packs if prev is not None else {}
    live: dict[str, int] = {}
    for blob in _blobs(fill):
        if isinstance(blob, Ref):
            live[blob.pack] = live.get(blob.pack, 0) + blob.size
    kept = {name for name, size in sizes.items() if 2 * live.get(name, 0) >= size}
    writer = _Pack(f"reuse-{sequence}.pack", prev, kept)
    files: dict[str, Content] = {}
    if any(not (isinstance(b, Ref) and b.pack in kept) for b in _blobs(fill)):
        files[f"{STATE}/{writer.name}"] = partial(writer.pieces, fill)
    else:
        for _ in writer.pieces(fill):  # nothing new: the refs are those kept
            pass
    files[f"{STATE}/{INDEX}"] = partial(_index_bytes, fill, writer, wanted)
    links = {f"{STATE}/{n}": prev.folder / n for n in sorted(kept & live.keys()) if prev}
    return files, links


def _blobs(fill: Fill) -> Iterator[Blob]:
    for _, _, blob in fill.pages.values():
        if blob is not None:
            yield blob
    yield from fill.groups.values()


class _Pack:
    """The new pack, written blob after blob; the refs of what the next cache holds."""

    def __init__(self, name: str, prev: Store | None, kept: set[str]) -> None:
        self.name, self.prev, self.kept = name, prev, kept
        self.refs: dict[int, Ref | None] = {}  # by id() of the blob given
        self.sizes: dict[str, int] = {}

    def pieces(self, fill: Fill) -> Iterator[bytes]:
        offset = 0
        for blob in _blobs(fill):
            if isinstance(blob, Ref) and blob.pack in self.kept:
                self.refs[id(blob)] = blob
                self.sizes[blob.pack] = self.prev.index.packs[blob.pack] if self.prev else 0
                continue
            data = blob() if callable(blob) else self.prev.blob(blob) if self.prev else None
            if data is None:  # an earlier blob that no longer reads: left out
                self.refs[id(blob)] = None
                continue
            self.refs[id(blob)] = Ref(self.name, offset, len(data), xxh3_64_intdigest(data))
            offset += len(data)
            yield data
        if offset:
            self.sizes[self.name] = offset

    def ref(self, blob: Blob | None) -> Ref | None:
        return None if blob is None else self.refs.get(id(blob))


def _index_bytes(fill: Fill, pack: _Pack, wanted: str) -> list[bytes]:
    pages = {}
    for sha, (facts, keys, blob) in fill.pages.items():
        ref = pack.ref(blob)
        if ref is not None or blob is None:
            pages[sha] = PageEntry(facts, keys, ref)
    groups = {d: ref for d, blob in fill.groups.items() if (ref := pack.ref(blob)) is not None}
    index = Index(
        CACHE_FORMAT,
        wanted,
        pack.sizes,
        pages,
        fill.keys,
        fill.sigs,
        fill.near,
        fill.topics,
        groups,
    )
    body = msgspec.msgpack.encode(index)
    return [_MAGIC + xxh3_128_digest(body), body]
