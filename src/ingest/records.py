"""The data that flows through a run: the page kinds and the site's vocabularies, the
internal records a parser yields (each carrying its provenance), and what a run hands its
writers (:class:`RunOutput`). Everything imports from here; it imports nothing of ingest's
but the output contract."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from functools import cache
from operator import attrgetter
from typing import Any

import msgspec
from msgspec import Struct, structs

from ingest.contract import Change, Item, ItemEvidence, Out, Reject, Report, Topic


class Format(StrEnum):
    """The page kinds; also the value of ``sources[].format``."""

    TOPIC_PAGE = "topic-page"
    TOPIC_LIST = "topic-list"
    ITEM_PAGE = "item-page"


#: Field precedence when merging listings of one resource (lower wins).
PRECEDENCE = {Format.ITEM_PAGE: 0, Format.TOPIC_PAGE: 1, Format.TOPIC_LIST: 2}
#: Within one page kind: the page's own item before its listings, related reading, orphans.
ROLE_ORDER = {"main": 0, "listing": 1, "related": 2, "orphan": 3}

#: Kind labels as the pages show them → ``kind``.
KINDS = {
    "博客": "blog",
    "帖子": "post",
    "项目": "project",
    "教程": "tutorial",
    "课程": "course",
    "书籍": "book",
    "视频": "video",
    "论文": "paper",
    "播客": "podcast",
    "演讲": "talk",
}
#: Level labels as the pages show them → ``level``.
LEVELS = {"入门": "beginner", "进阶": "intermediate", "深入": "advanced"}


def kind_of(label: str | None) -> str | None:
    """The ``kind`` of a label: a known kind, ``other`` for any other label, or None.

    >>> kind_of("博客"), kind_of("播客"), kind_of("杂谈"), kind_of(None)
    ('blog', 'podcast', 'other', None)
    """
    if label is None:
        return None
    return KINDS.get(label, "other")


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
    entry: tuple[int, str] | None = None  # its cache entry as written: size, xxh3-128
    first_rank: int = 1  # of its listings (facts: a part whose ranks go on from another's)

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
        first = min((x.rank for x in self.listings if x.rank), default=self.first_rank)
        return structs.replace(
            self, listings=[], listings_elsewhere=elsewhere, header=header, first_rank=first
        )

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


#: A publish's files of records: name → type of each line (.jsonl) or the file; report last.
FILES: dict[str, type[Out]] = {
    "items.jsonl": Item,
    "topics.jsonl": Topic,
    "rejects.jsonl": Reject,
    "changes.jsonl": Change,
    "report.json": Report,
}
#: The run report as a web page: no schema, but part of every publish.
PAGE = "report.html"
#: The folder of the pages beside it (long lists, a page at a time): ``report/NAME.html``.
PAGES = "report"

#: An item's place on a topic page: (slug, rank, level label).
Place = tuple[str, int, str | None]


class Facts(Struct, frozen=True, array_like=True, gc=False):
    """What identity compares of an item, this run's or the previous publish's."""

    keys: tuple[str, ...]  # summary match keys (the first is its own summary's)
    titles: tuple[str, ...]  # original-title match keys
    url: str | None
    kind: str | None  # kind label
    places: tuple[Place, ...]
    summary: str
    title: str | None
    source: str


@dataclass(slots=True)
class RunOutput:
    """The records of one run: what writers publish."""

    items: list[Item]
    topics: list[Topic]
    rejects: list[Reject]
    report: Report
    changes: list[Change] = field(default_factory=list)
    evidence: list[ItemEvidence] = field(default_factory=list)  # for the next run's state
    #: What the previous publish said of the records a change names, for the report page:
    #: (entity, id) → {field: its JSON value} — a changed record's changed fields; a
    #: removed or merged item's title, as ``title``.
    previous_values: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)


def packed(run: RunOutput) -> bytes:
    """What a run's report pages are made of, as bytes another process reads (MessagePack:
    the records in a fraction of pickle's time)."""
    values = [[e, i, v] for (e, i), v in run.previous_values.items()]
    return _ENCODER.encode([run.items, run.topics, run.rejects, run.report, run.changes, values])


def unpacked(data: bytes) -> RunOutput:
    """The run :func:`packed` packed."""
    items, topics, rejects, report, changes, values = _PACKED.decode(data)
    run = RunOutput(items, topics, rejects, report, changes)
    run.previous_values = {(e, i): v for e, i, v in values}
    return run


_PACKED = msgspec.msgpack.Decoder(
    tuple[
        list[Item],
        list[Topic],
        list[Reject],
        Report,
        list[Change],
        list[tuple[str, str, dict[str, Any]]],
    ]
)
