"""Internal records: what the per-file map yields, each piece carrying its provenance.

Light dataclasses (a parser makes millions of them): :class:`Listing`, :class:`PageReject`
and :class:`PageResult` with the page facts :class:`TopicHeader` and :class:`TopicStats`.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from operator import attrgetter
from typing import Any, NamedTuple


class Provenance(NamedTuple):
    """Where a listing or reject came from. A named tuple: one is built for every listing,
    and a tuple is the cheapest immutable record to build and to pickle."""

    file: str
    sha256: str
    format: str
    locator: str
    byte_offset: int
    line: int


@dataclass(slots=True)
class Listing:
    """One appearance of a resource on one page, text already normalized."""

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
    related_idx: list[int] = field(default_factory=list)  # item-page main: its related reading
    stored: bool = False  # from a page an earlier publish kept (--merge)
    crawled_at: dt.date | None = None  # a stored page's crawl day, if its run was told one

    @property
    def lid(self) -> tuple[str, int]:
        return (self.prov.file, self.index)

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        """Pickled as one flat tuple (its provenance's six values, then its other fields),
        rebuilt by ``__init__``: a slots dataclass's default pickling goes through a dict of
        its slots, about twice the cost both ways, and a named tuple's goes through a Python
        method of its own; a parallel run ships a listing for every listing it parses."""
        return _rebuilt, (*self.prov, *_OTHER_FIELDS(self))


def _rebuilt(
    file: str, sha256: str, format: str, locator: str, byte_offset: int, line: int, *rest: Any
) -> Listing:
    prov = _tuple_new(Provenance, (file, sha256, format, locator, byte_offset, line))
    return Listing(prov, *rest)


_tuple_new = tuple.__new__
#: ``Listing.lid`` as a key function, read in C (a sort by it calls it once a listing).
listing_id = attrgetter("prov.file", "index")
#: A listing's fields after ``prov``, in ``__init__``'s order.
_OTHER_FIELDS = attrgetter(*[f.name for f in fields(Listing)][1:])


@dataclass(frozen=True, slots=True)
class PageReject:
    """Something read that cannot be used, with the reason and the place."""

    prov: Provenance
    reason: str
    message: str
    excerpt: str
    is_listing: bool  # counts against the listings read (vs a file-level reject)


@dataclass(slots=True)
class TopicHeader:
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


@dataclass(slots=True)
class TopicStats:
    """Page facts of a topic-list: its description line and stats line."""

    description: str
    description_key: str
    declared_count: int | None
    declared_levels: dict[str, int]
    order_note: str | None


@dataclass(slots=True)
class PageResult:
    """Everything one file yields. Nothing in it depends on any other file."""

    file: str
    sha256: str
    size: int
    encoding: str | None
    format: str | None
    parser: str | None = None
    listings: list[Listing] = field(default_factory=list)
    rejects: list[PageReject] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    header: TopicHeader | None = None
    stats: TopicStats | None = None
    marks: list[str] = field(default_factory=list)  # structural marks found, in page order

    from_state: bool = False  # a page kept by an earlier publish (--merge), not an input
    identity: str | None = None  # what makes two versions of it "the same page"
    slug: str | None = None  # the topic this page belongs to, once topics are joined
    listings_elsewhere: int = 0  # listings kept on a worker while these facts travel

    @property
    def listings_read(self) -> int:
        return (
            len(self.listings)
            + self.listings_elsewhere
            + sum(1 for r in self.rejects if r.is_listing)
        )

    def facts(self) -> PageResult:
        """This page without its listings: what the driver of a distributed run needs."""
        return replace(self, listings=[], listings_elsewhere=len(self.listings))

    def with_slugs(self, slug_of: Mapping[str, str]) -> list[Listing]:
        """This page's listings, each told the topic it is listed on."""
        slug = slug_of.get(self.file)
        for x in self.listings:
            x.topic_key = slug
        return self.listings
