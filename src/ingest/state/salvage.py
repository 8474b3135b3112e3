"""The pages of a damaged state, salvaged for ``ingest repair`` (see :mod:`.rebuild`).

The publish's report names every page it was built from (file, sha256, size): that is what
a page *is*. The manifest only says where its bytes were put, and a damaged manifest may
say it wrongly, so a page is looked for where any entry of that content says it is, then
where its own entry says, then at the boundaries of the other pages of the pack (pages are
written one after another); it is kept where bytes of its size have its sha256. A pack
none of whose pages was lost is carried as it is; the pages kept from the others are
written into a new pack, so no byte of a lost page is carried.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import partial
from itertools import count
from pathlib import Path
from typing import Any

import msgspec

from ..errors import UsageError
from ..records.run import Content, RunOutput
from .earlier import STATE
from .integrity import MANIFEST, Seal, file_sum
from .previous import PageRef

#: Boundaries of a pack tried for a page its entry misplaces, the nearest first.
NEAREST = 64


@dataclass(slots=True)
class Rebuilt:
    """A state made again: its files (name in the publish → content), the files it carries
    (→ the file to link), their checksums, and what was done and what could not be kept."""

    files: dict[str, Content] = field(default_factory=dict)
    links: dict[str, Path] = field(default_factory=dict)
    seal: Seal = field(default_factory=Seal)
    done: list[str] = field(default_factory=list)
    lost: list[str] = field(default_factory=list)


def salvaged(
    out: Rebuilt, folder: Path, run: RunOutput, manifest: dict[str, Any] | None, trusted: bool
) -> list[PageRef]:
    """The pages of the publish in ``folder`` found whole (``trusted``: the manifest is the
    one ``.ingest`` names), where the rebuilt state holds them; their packs linked into
    ``out`` or written anew; what is lost, said."""
    report = run.report
    now = report.run.crawled_at.isoformat() if report.run.crawled_at else None
    entries = [r for r in map(_ref, (manifest or {}).get("pages") or []) if r is not None]
    finder = _Finder(folder, entries)
    own = {e.file: e for e in entries}
    kept, gone, damaged, days_lost = [], [], set(), 0
    for f in (f for f in report.files if f.sha256):
        entry = own.get(f.file)
        where = finder.find(f.sha256, f.bytes, entry)
        if where is None:
            gone.append(f.file)
            damaged.update([entry.pack] if entry else [])
            continue
        if trusted and entry is not None and entry.sha256 == f.sha256:
            day = entry.crawled_at
        else:  # a day read from a manifest not the one written is not kept
            day = now if f.origin == "input" else None
            days_lost += day is None and entry is not None and entry.crawled_at is not None
        kept.append(PageRef(f.file, f.sha256, f.bytes, *where, day))
    total = len(kept) + len(gone)
    if manifest is None:
        out.lost.append(
            f"all {total} pages of the state: {STATE}/{MANIFEST} cannot be read, so no page "
            "can be found in the packs (a --merge run needs a run without it first)"
        )
    elif gone:
        shown = ", ".join(repr(f) for f in gone[:5]) + (" ..." if len(gone) > 5 else "")
        out.lost.append(
            f"{len(gone)} of the {total} pages, whose bytes are nowhere in the state as their "
            f"sha256 says (a --merge run no longer has them): {shown}"
        )
    if days_lost:
        out.lost.append(f"the crawl day of {days_lost} page(s) kept from earlier publishes")
    return _packed(out, folder, report.run.sequence, kept, damaged)


def _ref(entry: Any) -> PageRef | None:
    try:
        ref = msgspec.convert(entry, PageRef)
    except msgspec.ValidationError:
        return None
    plain = "/" not in ref.pack and ref.pack not in ("", ".", "..")
    return ref if plain and ref.offset >= 0 and ref.size >= 0 else None


class _Finder:
    """Where a page's bytes are in the packs, if anywhere the entries point."""

    def __init__(self, folder: Path, entries: list[PageRef]) -> None:
        self._folder = folder
        self._by_sha: dict[str, list[PageRef]] = {}
        self._bounds: dict[str, set[int]] = {}
        for e in entries:
            self._by_sha.setdefault(e.sha256, []).append(e)
            self._bounds.setdefault(e.pack, {0}).update((e.offset, e.offset + e.size))

    def find(self, sha: str, size: int, entry: PageRef | None) -> tuple[str, int] | None:
        tried = [(e.pack, e.offset) for e in self._by_sha.get(sha, [])]
        if entry is not None:
            tried.append((entry.pack, entry.offset))
            packs = [entry.pack] if entry.pack in self._bounds else sorted(self._bounds)
            near = entry.offset
        else:
            packs, near = sorted(self._bounds), 0
        for pack in packs:
            bounds = sorted(self._bounds[pack], key=lambda o: (abs(o - near), o))
            tried += [(pack, o) for o in bounds[:NEAREST]]
        for pack, offset in dict.fromkeys(tried):
            if self.holds(pack, offset, size, sha):
                return pack, offset
        return None

    def holds(self, pack: str, offset: int, size: int, sha: str) -> bool:
        data = read_page(self._folder, pack, offset, size)
        return data is not None and hashlib.sha256(data).hexdigest() == sha


def read_page(folder: Path, pack: str, offset: int, size: int) -> bytes | None:
    """The ``size`` bytes at ``offset`` in a pack of the state (None: not there)."""
    try:
        with open(folder / STATE / pack, "rb") as fh:
            fh.seek(offset)
            data = fh.read(size)
    except OSError:
        return None
    return data if len(data) == size else None


def _packed(
    out: Rebuilt, folder: Path, sequence: int, kept: list[PageRef], damaged: set[str]
) -> list[PageRef]:
    """Carry each pack that lost no page; write the kept pages of the others into a new
    pack. The pages, where the rebuilt state holds them."""
    whole = {r.pack for r in kept} - damaged
    for pack in sorted(whole):
        out.links[f"{STATE}/{pack}"] = folder / STATE / pack
        out.seal.known(f"{STATE}/{pack}", file_sum(folder / STATE / pack))
    moved = [r for r in kept if r.pack not in whole]
    where = [f"{len(kept) - len(moved)} in {len(whole)} pack(s) carried as they are"]
    if moved:
        name = next(n for k in count(1) if (n := f"pages-{sequence}-repair{k}.pack") not in whole)
        at: dict[tuple[str, int], int] = {}  # (old pack, offset) → offset in the new pack
        order: list[PageRef] = []  # each stored page once (pages of one content share it)
        size = 0
        for ref in moved:
            if (ref.pack, ref.offset) not in at:
                at[ref.pack, ref.offset] = size
                order.append(ref)
                size += ref.size
        pieces = partial(_moved_pieces, folder, order)
        out.files[f"{STATE}/{name}"] = out.seal.sealed(f"{STATE}/{name}", pieces)
        where.append(f"{len(moved)} written into {STATE}/{name}")
        kept = [
            dataclasses.replace(r, pack=name, offset=at[r.pack, r.offset])
            if r.pack not in whole
            else r
            for r in kept
        ]
    out.done.append(f"{len(kept)} page(s) kept ({', '.join(where)})")
    return kept


def _moved_pieces(folder: Path, refs: list[PageRef]) -> Iterator[bytes]:
    for ref in refs:
        data = read_page(folder, ref.pack, ref.offset, ref.size)
        if data is None or hashlib.sha256(data).hexdigest() != ref.sha256:
            raise UsageError(f"cannot repair {str(folder)!r}: {ref.file!r} changed meanwhile")
        yield data
