"""Records at the two boundaries of the pipeline.

Internal (light dataclasses): what a parser yields per file — :class:`Listing`,
:class:`PageReject`, :class:`PageResult` — all carrying provenance.

Output (pydantic, ``extra="forbid"``): :class:`Item`, :class:`Topic`, :class:`Reject` and
:class:`Report`, built once per output record at the end; ``schemas/`` is generated from them.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

# --------------------------------------------------------------------------- internal


class Format(StrEnum):
    """The page kinds; also the value of ``sources[].format``."""

    TOPIC_PAGE = "topic-page"
    TOPIC_LIST = "topic-list"
    ITEM_PAGE = "item-page"


#: Field precedence when merging listings of one resource (lower wins).
PRECEDENCE = {Format.ITEM_PAGE: 0, Format.TOPIC_PAGE: 1, Format.TOPIC_LIST: 2}


@dataclass(frozen=True, slots=True)
class Provenance:
    """Where a listing or reject came from."""

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
    key: str = ""  # match key of summary_zh: the resource's identity
    related_idx: list[int] = field(default_factory=list)  # item-page main: its related reading

    @property
    def lid(self) -> tuple[str, int]:
        return (self.prov.file, self.index)


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


# --------------------------------------------------------------------------- output

ItemId = Annotated[str, StringConstraints(pattern=r"^[a-z0-9][a-z0-9-]{5,39}$")]
Slug = Annotated[str, StringConstraints(pattern=r"^[a-z0-9][a-z0-9-]{0,79}$")]
Kind = Literal[
    "blog",
    "post",
    "project",
    "tutorial",
    "course",
    "book",
    "video",
    "paper",
    "podcast",
    "talk",
    "other",
]
Level = Literal["beginner", "intermediate", "advanced"]


class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Source(_Out):
    """One listing merged into a record."""

    file: str = Field(description="Input file, relative to the folder given on the command line")
    sha256: str
    format: Literal["topic-page", "topic-list", "item-page"]
    locator: str = Field(description="Where in the file, e.g. 'listing 12' or 'line 5'")
    byte_offset: int = Field(ge=0, description="Byte offset of the listing in the raw file")
    line: int = Field(ge=1, description="1-based line of the listing in the file")


class ItemTopic(_Out):
    """An item's membership in one topic."""

    slug: Slug
    rank: int | None = Field(description="Its number on the topic page; null if only a list")
    level: Level | None
    level_label: str | None


class Item(_Out):
    """One real-world resource. All strings are plain text (consumers must escape)."""

    id: ItemId
    kind: Kind | None
    kind_label: str | None
    title_zh: str | None
    title_original: str | None
    original_language: str | None = Field(description="ISO 639-1 code of title_original")
    summary_zh: str
    url: str | None = Field(description="Absolute http(s) URL or null")
    publisher: str | None
    published_ago: str | None
    rating: str | None
    collected_on: dt.date | None
    topics: list[ItemTopic]
    related: list[ItemId]
    sources: list[Source]


class Site(_Out):
    name: str | None
    url: str | None


class Declared(_Out):
    count: int | None
    levels: dict[str, int]


class Topic(_Out):
    """One topic, joined from its topic page and topic-list views."""

    slug: Slug
    name: str | None
    description: str | None
    category: str | None
    url: str | None
    site: Site | None
    notice: str | None
    order_note: str | None
    declared: Declared | None
    items: list[ItemId] = Field(description="Item ids in rank order; list-only items last")
    sources: list[Source]


class Reject(_Out):
    """Something read that did not become (part of) a record, and why."""

    file: str
    locator: str
    reason: str = Field(description="Reason code, e.g. EMPTY_INPUT, BINARY_CONTENT")
    excerpt: str
    message: str
    byte_offset: int = Field(ge=0)
    line: int = Field(ge=1)
    format: str | None


class FileReport(_Out):
    file: str
    sha256: str
    bytes: int
    encoding: str | None
    format: str | None
    parser: str | None
    listings: int = Field(description="Listings read from the file (used + rejected)")
    rejected_listings: int
    status: Literal["ok", "partial", "rejected"]
    warnings: list[str]


class Totals(_Out):
    files: int
    listings: int = Field(description="Listings read; = listings_merged + listings_rejected")
    listings_merged: int
    listings_rejected: int
    items: int
    topics: int
    aligned_titles: int = Field(description="Items that carry both title_zh and title_original")
    merges: int = Field(description="Listings merged into an item another listing started")
    near_duplicate_merges: int
    order_alignments: int = Field(description="Topic-list entries joined by shared order")
    rejects: int = Field(description="Lines of rejects.jsonl (listings and whole files)")
    warnings: int


class TopicCheck(_Out):
    slug: str
    declared_count: int | None
    found_count: int
    declared_levels: dict[str, int]
    found_levels: dict[str, int]
    ok: bool


class ConflictValue(_Out):
    value: str
    sources: list[str]


class Conflict(_Out):
    record: str = Field(description="Item id or topic slug")
    field: str
    chosen: str
    values: list[ConflictValue]


class Report(_Out):
    schema_version: str
    ingest_version: str
    files: list[FileReport]
    totals: Totals
    consistency: list[TopicCheck]
    conflicts: list[Conflict]
    warnings: list[str] = Field(description="Run-level warnings: 'file: locator: CODE: text'")
    timing: dict[str, float] = Field(description="Seconds per stage; the only varying member")
