"""The page cache: what a page produced, kept under its bytes' sha256.

Each page a publish was built from has one entry, ``state/pages/SHA256.zst``: a zstd frame
(with its own checksum: the entry checks itself) of a MessagePack record holding the build
of ingest that parsed it, the page's bytes, and what parsing them gave (its
:class:`~ingest.records.PageResult`). A later run whose input has those bytes takes the
result instead of parsing the page again, when the entry was written by its own build (a
parser or a rule changed since must not be taken); ``--merge`` reads the pages the state
keeps from their entries; ``ingest repair`` reads them to mend a publish. An entry of
another build is still the page's bytes: a run parses them again and writes a new entry.

An unchanged page's entry is carried into the next publish by a hard link; a new one is
written by the process that parsed the page, into the new publish's staging folder.
"""

from __future__ import annotations

import hashlib
import os
import uuid
from pathlib import Path

import msgspec
import zstandard
from msgspec import Struct, structs

from ingest import __version__
from ingest.errors import PublishError
from ingest.publish.folder import write_file
from ingest.records import PageResult, Provenance

FOLDER = "state/pages"
#: The compression level of an entry: zstd's level 3 writes 100 MB of pages and their
#: results as 47 MB in about 0.5 s of one core (level 1: 50 MB, 0.4 s).
LEVEL = 3


def entry_name(sha256: str) -> str:
    return f"{FOLDER}/{sha256}.zst"


def build() -> str:
    """The build of ingest writing and reading entries: its version and a digest of its
    code (an entry of code changed since is never taken)."""
    root = Path(__file__).resolve().parent.parent
    digest = hashlib.blake2b(digest_size=8)
    for path in sorted(root.rglob("*.py")):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        digest.update(path.read_bytes())
    return f"{__version__}/{digest.hexdigest()}"


class Entry(Struct, array_like=True, gc=False):
    """One page as the state keeps it: its bytes, and what the build ``build`` made of them
    (read only by that build: another's records may have another shape)."""

    build: str
    data: bytes
    page: msgspec.Raw

    def result(self) -> PageResult | None:
        try:
            return _PAGE.decode(self.page)
        except (msgspec.DecodeError, RecursionError):
            return None


_ENCODER = msgspec.msgpack.Encoder()
_DECODER = msgspec.msgpack.Decoder(Entry)
_PAGE = msgspec.msgpack.Decoder(PageResult)


def entry_bytes(build: str, data: bytes, page: PageResult) -> bytes:
    """An entry's bytes: of the page under no name (the same bytes under any name give the
    same entry; :func:`named` gives it its name when it is taken). A page whose text
    MessagePack cannot hold (a lone surrogate) is kept as its bytes alone: the next run
    parses it again."""
    try:
        raw = _ENCODER.encode(Entry(build, data, msgspec.Raw(_ENCODER.encode(named(page, "")))))
    except UnicodeEncodeError:
        raw = _ENCODER.encode(Entry("", data, msgspec.Raw(_ENCODER.encode(None))))
    return zstandard.ZstdCompressor(level=LEVEL, write_checksum=True).compress(raw)


#: What a zstd frame of the state may unpack to, at least: a frame that says it holds more
#: than this (or than 32 times its own size) is damaged, not read (a frame of 17 bytes may
#: say it holds a terabyte).
MOST = 1 << 30


def unpacked(blob: bytes) -> bytes:
    """The content of a zstd frame ingest wrote (ValueError or ZstdError: damaged)."""
    size = zstandard.frame_content_size(blob)
    if size < 0 or size > max(MOST, 32 * len(blob)):
        raise ValueError(f"a zstd frame that says it holds {size} bytes")
    return zstandard.ZstdDecompressor().decompress(blob)


def read_entry(blob: bytes) -> Entry | None:
    """The entry in ``blob``; None when it is damaged (fails its checksum or its shape)."""
    try:
        return _DECODER.decode(unpacked(blob))
    except (zstandard.ZstdError, msgspec.DecodeError, RecursionError, ValueError):
        return None


def keep(folder: Path, build: str, data: bytes, page: PageResult) -> tuple[int, str] | None:
    """Write the entry of a page just parsed into the state folder of a publish being made
    (``folder``: the staging folder); its size and digest. None when another process wrote
    it first (the same bytes under two names, a Dask task run again). Written under a
    temporary name and linked into place: a worker killed while writing leaves no half."""
    final = folder / entry_name(page.sha256)
    tmp = final.with_name(f".{final.name}.{uuid.uuid4().hex}.tmp")  # the publish drops it
    try:
        found = write_file(tmp, entry_bytes(build, data, page))
        os.link(tmp, final)
    except FileExistsError:
        return None
    except OSError as e:  # a full disk: the run's end, in one line (from any worker)
        where = f"cannot write a page's cache entry in {str(folder)!r}"
        raise PublishError(f"{where}: {e.strerror or e}") from e
    finally:
        tmp.unlink(missing_ok=True)
    return found.size, found.xxh3_128


def named(page: PageResult, name: str) -> PageResult:
    """A page taken from an entry as the file ``name`` gives it (the same bytes under
    another name: every provenance names the file it is read from now)."""
    if page.file == name:
        return page
    listings = [structs.replace(x, prov=_renamed(x.prov, name)) for x in page.listings]
    rejects = [structs.replace(r, prov=_renamed(r.prov, name)) for r in page.rejects]
    return structs.replace(page, file=name, listings=listings, rejects=rejects)


def _renamed(prov: Provenance, name: str) -> Provenance:
    return structs.replace(prov, file=name)
