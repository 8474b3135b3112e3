"""Internal records: what the per-file map yields, each piece carrying its provenance.

msgspec Structs (a parser makes millions of them, and every parsed page crosses from a
worker to the driver): :class:`Listing`, :class:`PageReject` and :class:`PageResult` with
the page facts :class:`TopicHeader` and :class:`TopicStats`. A page is pickled as one
MessagePack blob, which msgspec writes and reads far faster than pickle does records.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from functools import cache
from operator import attrgetter
from typing import Any

import msgspec
from msgspec import Struct, structs


class Provenance(Struct, frozen=True, array_like=True, gc=False):
    """Where a listing or reject came from."""

    file: str
    sha256: str
    format: str
    locator: str
    byte_offset: int
    line: int


class Listing(Struct, array_like=True, gc=False):
    """One appearance of a resource on one page, text already normalized (array-like: it
    crosses processes as a list of its values, in field order)."""

    prov: Provenance
    ordinal: int  # position among the page's listings (0-based), for order evidence
    summary_zh: str
    title_zh: str | None = None
    title_original: str | None = None
    original_is_chinese: bool = False  # an item-page entry with no original-title line
    url: str | None = None
    kind_label: str | None = None
    level_label: str | None = None
    rank: int | None = None
    topic_key: str | None = None  # slug (topic-page) or description key (topic-list)
    publisher: str | None = None
    published_ago: str | None = None
    rating: str | None = None
    collected_on: str | None = None
    role: str = "listing"  # "listing" | "main" | "related" | "orphan"
    index: int = -1  # position in its page's listings; (file, index) identifies it
    key: str = ""  # match key of summary_zh, the resource's identity: set by the listings step
    related_idx: tuple[int, ...] = ()  # item-page main: its related reading
    stored: bool = False  # from a page an earlier publish kept (--merge)
    crawled_at: dt.date | None = None  # a stored page's crawl day, if its run was told one

    @property
    def lid(self) -> tuple[str, int]:
        return (self.prov.file, self.index)


#: ``Listing.lid`` as a key function, read in C (a sort by it calls it once a listing).
listing_id = attrgetter("prov.file", "index")


class PageReject(Struct, array_like=True, frozen=True, gc=False):
    """Something read that cannot be used, with the reason and the place."""

    prov: Provenance
    reason: str
    message: str
    excerpt: str
    is_listing: bool  # counts against the listings read (vs a file-level reject)


class TopicHeader(Struct, gc=False):
    """Page facts of a topic page."""

    slug: str
    name: str | None
    description: str | None
    description_keys: tuple[str, ...]  # candidate description keys (flattened headers)
    category: str | None
    url: str | None
    site_name: str | None
    site_url: str | None
    notice: str | None


class TopicStats(Struct, gc=False):
    """Page facts of a topic-list: its description line and stats line."""

    description: str
    description_key: str
    declared_count: int | None
    declared_levels: dict[str, int]
    order_note: str | None


class PageResult(Struct, gc=False):
    """Everything one file yields. Nothing in it depends on any other file."""

    file: str
    sha256: str
    size: int
    encoding: str | None
    format: str | None
    parser: str | None = None
    listings: list[Listing] = []
    rejects: list[PageReject] = []
    warnings: list[str] = []
    header: TopicHeader | None = None
    stats: TopicStats | None = None
    marks: list[str] = []  # structural marks found, in page order

    from_state: bool = False  # a page kept by an earlier publish (--merge), not an input
    identity: str | None = None  # what makes two versions of it "the same page"
    slug: str | None = None  # the topic this page belongs to, once topics are joined
    listings_elsewhere: int = 0  # listings kept on a worker while these facts travel
    reused: bool = False  # as an earlier run parsed it (its listings read only if needed)

    @property
    def listings_read(self) -> int:
        return (
            len(self.listings)
            + self.listings_elsewhere
            + sum(1 for r in self.rejects if r.is_listing)
        )

    def facts(self) -> PageResult:
        """This page without its listings: what the driver of a distributed run needs. Its
        header is a copy: joining the topics settles the copy's slug and name, never the
        page's own (a page kept for a later run is the page as it was parsed)."""
        header = None if self.header is None else structs.replace(self.header)
        elsewhere = self.listings_elsewhere + len(self.listings)
        return structs.replace(self, listings=[], listings_elsewhere=elsewhere, header=header)

    def with_slugs(self, slug_of: Mapping[str, str]) -> list[Listing]:
        """This page's listings, each told the topic it is listed on."""
        slug = slug_of.get(self.file)
        for x in self.listings:
            x.topic_key = slug
        return self.listings

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        """Pickled as MessagePack (a ``--jobs`` worker sends every parsed page to the driver;
        a Dask worker ships them too); text MessagePack cannot hold (a lone surrogate) is
        pickled field by field."""
        try:
            return _from_msgpack, (_ENCODER.encode(self),)
        except UnicodeEncodeError:
            return _from_fields, (structs.astuple(self),)


_ENCODER = msgspec.msgpack.Encoder()


@cache
def _decoder() -> msgspec.msgpack.Decoder[PageResult]:
    return msgspec.msgpack.Decoder(PageResult)


def _from_msgpack(data: bytes) -> PageResult:
    """A page as it was sent, its listings' provenance sharing one string of each file name,
    sha256 and format again (decoded, each listing has copies of its own: memory a large
    run holds, and slower to compare)."""
    page = _decoder().decode(data)
    one: dict[str, str] = {}
    for x in page.listings:
        p = x.prov
        x.prov = Provenance(
            one.setdefault(p.file, p.file),
            one.setdefault(p.sha256, p.sha256),
            one.setdefault(p.format, p.format),
            p.locator,
            p.byte_offset,
            p.line,
        )
    return page


def _from_fields(values: tuple[Any, ...]) -> PageResult:
    return PageResult(*values)
