"""Reuse: a run over an earlier publish takes what that publish's run computed wherever
what it was computed from is unchanged, and computes the rest; its output is the output
of a run that computes everything (``--full``), byte for byte.

What is kept, in the publish's ``state/`` (:mod:`ingest.state.reuse`), is content-
addressed: a parsed page by the sha256 of its bytes; a group of listings (a component: the
listings of one resource, and what settled them) by a digest of its members and edges
(:mod:`ingest.transform.group`); a topic's order edges by a digest of its pages; the
near-duplicate edges by a digest of every summary key. Nothing is invalidated: what no
longer has the digest it was kept under is simply not found, and computed.

A run (:data:`ingest.steps.STEPS`) then goes: the parse step takes a page whose bytes the
cache has (its checksum good) as it was parsed, without its listings; the ``plan`` step
(:func:`plan_of`) finds every edge and group from the kept summary keys (the order edges
of a topic whose pages changed, and the near-duplicate edges when the keys changed, are
computed here) and looks up each group's digest; the listings of groups found are never
read again. The listings step gives the later steps only the listings of the other
groups (read from the cache where their page was not parsed); the order, near-duplicate
and component steps take the plan's values; identity, related reading and the records
add the groups found to what they computed. A group found is finished as it was when
what finishing reads of the whole run (published ids, languages, crawl day) is what it
was (:func:`~ingest.transform.group.finish_key`), else it is resolved again here.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from collections.abc import Callable

import msgspec
from msgspec import structs

from ..errors import PublishError
from ..extract.pages import parse_bytes
from ..records.internal import Listing, PageReject, PageResult
from ..state.reuse import Store

_LISTINGS = msgspec.msgpack.Decoder(list[Listing])


#: The bytes of a page read by the run, by its name (None: not one).
Reader = Callable[[str], bytes | None]


class Reuse:
    """What a run may take: an earlier publish's cache (None: none, and ``why``).

    A page is taken by the sha256 of its bytes (:meth:`known`); its listings are read from
    the cache only when a later step needs them (:meth:`listings`), and checked then: a
    blob that fails its checksum is never used, the page's bytes (``read``) are parsed
    instead, and the page is told ``damaged``."""

    def __init__(
        self,
        store: Store | None,
        why: str,
        build: str,
        days: dict[str, dt.date | None] | None = None,
        read: Reader | None = None,
    ) -> None:
        self.store, self.why, self.build = store, why, build
        self.days = days or {}  # the crawl day of each page kept by the state, by name
        self.read = read
        self.damaged: set[str] = set()  # pages whose listings failed their checksum

    def __getstate__(self) -> tuple[Store | None, str, str, dict[str, dt.date | None]]:
        return (self.store, self.why, self.build, self.days)  # what a parse worker needs

    def __setstate__(self, state: tuple[Store | None, str, str, dict[str, dt.date | None]]) -> None:
        self.__init__(*state)  # type: ignore[misc]

    def known(self, sha256: str, name: str) -> PageResult | None:
        """The parse step's lookup: the page as an earlier run parsed it, named ``name``,
        without its listings; None: parse it."""
        entry = None if self.store is None else self.store.index.pages.get(sha256)
        if entry is None:
            return None
        f = entry.facts
        return structs.replace(
            f,
            file=name,
            rejects=[
                structs.replace(r, prov=structs.replace(r.prov, file=name)) for r in f.rejects
            ],
            warnings=list(f.warnings),
            marks=list(f.marks),
            header=None if f.header is None else structs.replace(f.header),
            reused=True,
        )

    def listings(self, page: PageResult, wanted: set[int] | None = None) -> list[Listing]:
        """A page's listings (those at ``wanted`` places, when given), each told its file,
        origin and crawl day and summary key: read from the cache for a page taken."""
        if not page.reused:
            xs = page.listings
            return xs if wanted is None else [x for x in xs if x.index in wanted]
        if wanted is not None and not wanted:
            return []
        assert self.store is not None, "a page taken from no cache"
        entry = self.store.index.pages[page.sha256]
        data = None if entry.listings is None else self.store.blob(entry.listings)
        if entry.listings is None:
            xs = []
        elif data is None:
            xs = self._parsed(page)
        else:
            xs = _LISTINGS.decode(data)
        if wanted is not None:
            xs = [x for x in xs if x.index in wanted]
        day = self.days.get(page.file) if page.from_state else None
        table = self.store.index.keys
        for x in xs:
            p = x.prov
            x.prov = structs.replace(p, file=page.file, sha256=page.sha256)
            x.stored, x.crawled_at, x.key = page.from_state, day, table[entry.keys[x.index]]
        return xs

    def _parsed(self, page: PageResult) -> list[Listing]:
        """The listings of a page whose cached ones failed their checksum: its bytes,
        parsed (the same bytes as the cache's: its sha256 is checked)."""
        data = None if self.read is None else self.read(page.file)
        if data is None or hashlib.sha256(data).hexdigest() != page.sha256:
            raise PublishError(
                f"input {page.file!r} changed while ingest ran (its bytes are not the ones "
                "read); nothing was published: run again"
            )
        self.damaged.add(page.file)
        return parse_bytes(page.file, data, page.sha256).listings


def _named(rj: PageReject, name: str) -> PageReject:
    """A cached page's reject, told the name its page has in this run."""
    return structs.replace(rj, prov=structs.replace(rj.prov, file=name))
