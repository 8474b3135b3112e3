"""The pages a publish was built from: read back for ``--merge``, written with each publish.

Pages are kept by content (sha256) in pack files, ``state/pages-N.pack`` (N: the publish
that wrote it). A publish writes only the pages no earlier pack holds and carries the
earlier packs over by hard link; a pack less than half of which is still used is
compacted (its live pages are written again, into the new pack). Every pack is listed in
the manifest with its checksum (see :mod:`.integrity`): a carried pack was checked when
the state was read, a new one is hashed as it is written.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from collections.abc import Callable, Iterable, Iterator
from functools import partial
from pathlib import Path

import msgspec

from .. import SCHEMA_VERSION
from ..errors import PublishError, UsageError
from ..extract.discover import StoredPage
from ..records.run import Alongside, Closing, Content, RunOutput
from .ages import earliest, first_days
from .integrity import MANIFEST, Seal
from .previous import STATE, STATE_VERSION, PageRef, Previous

#: Reads the bytes of an input file by the name records give it (None: not an input).
InputReader = Callable[[str], bytes | None]


def stored_pages(prev: Previous) -> list[StoredPage]:
    """Every page of the previous publish, read from its packs and checked by sha256."""
    if not prev.has_pages or prev.folder is None:
        raise UsageError(
            "--merge needs the pages of the previous publish, and the publish in "
            f"{str(prev.folder)!r} has none (it is older than schema 1.1, or there is no "
            "publish there yet): run once without --merge first"
        )
    out = []
    for ref in prev.pages:
        data = _read(prev.folder / STATE / ref.pack, ref)
        if hashlib.sha256(data).hexdigest() != ref.sha256:
            raise UsageError(f"the state in {str(prev.folder)!r} is damaged: {ref.file!r}")
        crawled = dt.date.fromisoformat(ref.crawled_at) if ref.crawled_at else None
        out.append(StoredPage(ref.file, data, crawled))
    return out


def _read(pack: Path, ref: PageRef) -> bytes:
    try:
        with open(pack, "rb") as fh:
            fh.seek(ref.offset)
            return fh.read(ref.size)
    except OSError as e:
        raise UsageError(f"cannot read the state: {str(pack)!r}: {e.strerror}") from e


def state_files(
    run: RunOutput, prev: Previous, read_input: InputReader, seal: Seal
) -> tuple[dict[str, Content], dict[str, Path]]:
    """The files of the new publish's ``state/`` (name → content; the new pack's pages are
    read, checked and written one at a time), and the packs it links (name → path, to be
    hard-linked): the earlier ones it carries over. ``seal`` learns the checksum of each
    pack; the manifest, made last, lists them all."""
    sequence = run.report.run.sequence
    pack_name = f"pages-{sequence}.pack"
    earlier = _live_earlier(prev, run)
    crawled = {r.sha256 + r.file: r.crawled_at for r in prev.pages}
    first = first_days(prev.pages)  # an input's bytes are dated by their first crawl
    today = run.report.run.crawled_at
    refs: list[PageRef] = []
    written: dict[str, PageRef] = {}
    to_pack: list[tuple[str, str, bool]] = []  # (file, sha256, from the state)
    size = 0
    for f in run.report.files:
        if not f.sha256:
            continue  # never read (unreadable, not a regular file, ...)
        ref = earlier.get(f.sha256) or written.get(f.sha256)
        if ref is None:
            ref = written[f.sha256] = PageRef(f.file, f.sha256, f.bytes, pack_name, size)
            to_pack.append((f.file, f.sha256, f.origin == "state"))
            size += f.bytes
        day = (
            crawled.get(f.sha256 + f.file) if f.origin == "state" else _iso(first, f.sha256, today)
        )
        refs.append(PageRef(f.file, ref.sha256, ref.size, ref.pack, ref.offset, day))
    manifest = f"{STATE}/{MANIFEST}"  # its own checksum goes into the marker
    files = {
        manifest: seal.sealed(manifest, Closing(partial(manifest_bytes, sequence, refs, seal)))
    }
    assert prev.folder is not None or not earlier
    links = {}
    for name in sorted({r.pack for r in refs} - {pack_name}):  # checked as the state was read
        links[f"{STATE}/{name}"] = (prev.folder or Path()) / STATE / name
        seal.known(f"{STATE}/{name}", prev.files[name])
    if to_pack:
        made = Alongside(partial(_pack, to_pack, prev, read_input))
        files[f"{STATE}/{pack_name}"] = seal.sealed(f"{STATE}/{pack_name}", made)
    return files, links


def _iso(first: dict[str, dt.date], sha256: str, today: dt.date | None) -> str | None:
    """The crawl day of an input's bytes (see :mod:`.ages`), as the manifest writes it."""
    day = earliest(first.get(sha256), today)
    return None if day is None else day.isoformat()


def _pack(pages: list[tuple[str, str, bool]], prev: Previous, read: InputReader) -> Iterator[bytes]:
    """The new pack's bytes, page after page, each checked against the sha256 parsed."""
    stored: dict[str, PageRef] = {}  # sha256 → the first earlier page with those bytes
    for ref in prev.pages:
        stored.setdefault(ref.sha256, ref)
    for name, sha, from_state in pages:
        yield _bytes_of(name, sha, from_state, stored.get(sha), prev, read)


def _live_earlier(prev: Previous, run: RunOutput) -> dict[str, PageRef]:
    """sha256 → where an earlier pack holds it, for packs at least half still in use."""
    used = {f.sha256 for f in run.report.files if f.sha256}
    size: dict[str, int] = {}
    live: dict[str, int] = {}
    by_sha: dict[str, PageRef] = {}
    for ref in prev.pages:
        size[ref.pack] = max(size.get(ref.pack, 0), ref.offset + ref.size)
        if ref.sha256 in used and ref.sha256 not in by_sha:
            by_sha[ref.sha256] = ref
            live[ref.pack] = live.get(ref.pack, 0) + ref.size
    keep = {p for p in size if 2 * live.get(p, 0) >= size[p]}
    return {sha: ref for sha, ref in by_sha.items() if ref.pack in keep}


def _bytes_of(
    name: str,
    sha: str,
    from_state: bool,
    stored: PageRef | None,
    prev: Previous,
    read_input: InputReader,
) -> bytes:
    """A page's bytes, from the state (``stored``: where an earlier pack holds them) or its
    input file; never other bytes than were read."""
    data: bytes | None
    if from_state:
        data = _read(prev.folder / STATE / stored.pack, stored) if stored and prev.folder else None
    else:
        data = read_input(name)
    if data is None or hashlib.sha256(data).hexdigest() != sha:
        raise PublishError(
            f"input {name!r} changed while ingest ran (its bytes are not the ones parsed); "
            "nothing was published: run again"
        )
    return data


def manifest_bytes(sequence: int, refs: Iterable[PageRef], seal: Seal) -> list[bytes]:
    """The state's manifest: its version, the publish's sequence, every other file of
    ``state/`` with its checksum (from ``seal``, once they are written) and the pages."""
    doc = {
        "state_version": STATE_VERSION,
        "schema_version": SCHEMA_VERSION,
        "sequence": sequence,
        "files": seal.listing(),  # every other file of state/, written by now
        # msgspec writes a dataclass as asdict() would give it, field by field in order,
        # without asdict's deep copy of each (85 against 8 ms for the 5,365 pages of 100 MB)
        "pages": sorted(refs, key=lambda r: (r.file, r.sha256)),
    }
    # what json.dumps(doc, indent=1, ensure_ascii=False) writes, written by msgspec (its
    # indenting encoder is Python, 0.16 s for the 5,365 pages of a 100 MB crawl)
    return [msgspec.json.format(msgspec.json.encode(doc), indent=1) + b"\n"]
