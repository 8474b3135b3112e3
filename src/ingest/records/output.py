"""Output records: msgspec Structs (unknown fields refused), the only definition of the contract.

``schemas/`` is generated from :class:`Item`, :class:`Topic`, :class:`Reject`,
:class:`Change` and :class:`Report` (:mod:`ingest.schema`); every record is checked against
its type as it is written (:mod:`.serial`). What a run hands its writers is :mod:`.run`.
A field's description is its ``Meta``; a record's is its docstring (both go into the schemas).
"""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Literal

from msgspec import Meta

from .base import Out as Out  # the base of every record here, where it was defined first
from .reused import Reused

ItemId = Annotated[str, Meta(pattern=r"^[a-z0-9][a-z0-9-]{5,39}$")]
Slug = Annotated[str, Meta(pattern=r"^[a-z0-9][a-z0-9-]{0,79}$")]
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


class Source(Out, frozen=True):
    """One listing merged into a record."""

    file: Annotated[
        str, Meta(description="Input file, relative to the folder given on the command line")
    ]
    sha256: str
    format: Literal["topic-page", "topic-list", "item-page"]
    locator: Annotated[str, Meta(description="Where in the file, e.g. 'listing 12' or 'line 5'")]
    byte_offset: Annotated[
        int, Meta(ge=0, description="Byte offset of the listing in the raw file")
    ]
    line: Annotated[int, Meta(ge=1, description="1-based line of the listing in the file")]


class ItemTopic(Out, frozen=True):
    """An item's membership in one topic."""

    slug: Slug
    rank: Annotated[
        int | None, Meta(description="Its number on the topic page; null if only a list")
    ]
    level: Level | None
    level_label: str | None


class PublishedEstimate(Out, frozen=True):
    """The dates a relative age (``5 个月前``) can mean, given the crawl date."""

    earliest: dt.date
    latest: dt.date


class Item(Out, frozen=True):
    """One real-world resource. All strings are plain text (consumers must escape)."""

    id: ItemId
    kind: Kind | None
    kind_label: str | None
    title_zh: str | None
    title_original: str | None
    original_language: Annotated[str | None, Meta(description="ISO 639-1 code of title_original")]
    summary_zh: str
    url: Annotated[str | None, Meta(description="Absolute http(s) URL or null")]
    publisher: str | None
    published_ago: str | None
    published_estimate: Annotated[
        PublishedEstimate | None,
        Meta(
            description="Dates published_ago can mean, from the day its page was first "
            "crawled (--crawled-at), narrowed by every later crawl; null when no crawl gave "
            "a date"
        ),
    ]
    rating: str | None
    collected_on: dt.date | None
    topics: list[ItemTopic]
    related: list[ItemId]
    sources: list[Source]


class Site(Out, frozen=True):
    name: str | None
    url: str | None


class Declared(Out, frozen=True):
    count: int | None
    levels: dict[str, int]


class Topic(Out, frozen=True):
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
    items: Annotated[list[ItemId], Meta(description="Item ids in rank order; list-only items last")]
    sources: list[Source]


class Reject(Out, frozen=True):
    """Something read that did not become (part of) a record, and why."""

    file: str
    locator: str
    reason: Annotated[str, Meta(description="Reason code, e.g. EMPTY_INPUT, BINARY_CONTENT")]
    excerpt: str
    message: str
    byte_offset: Annotated[int, Meta(ge=0)]
    line: Annotated[int, Meta(ge=1)]
    format: str | None


class FileReport(Out, frozen=True):
    file: str
    origin: Annotated[
        Literal["input", "state"],
        Meta(
            description="input: given on the command line; state: kept by an earlier publish "
            "and read again by --merge"
        ),
    ]
    sha256: str
    bytes: int
    encoding: str | None
    format: str | None
    parser: str | None
    listings: Annotated[int, Meta(description="Listings read from the file (used + rejected)")]
    rejected_listings: int
    status: Literal["ok", "partial", "rejected"]
    warnings: list[str]
    marks: Annotated[
        list[str],
        Meta(
            description="Structural marks found in the file, in page order (e.g. heading, "
            "category, website, section, listings, footer, source; description, stats, "
            "entries; byline, entry, key_values, related_heading, related): a layout change "
            "shows as a mark missing"
        ),
    ] = []


class Totals(Out, frozen=True):
    files: int
    listings: Annotated[
        int, Meta(description="Listings read; = listings_merged + listings_rejected")
    ]
    listings_merged: int
    listings_rejected: int
    items: int
    topics: int
    aligned_titles: Annotated[
        int, Meta(description="Items that carry both title_zh and title_original")
    ]
    merges: Annotated[int, Meta(description="Listings merged into an item another listing started")]
    near_duplicate_merges: int
    order_alignments: Annotated[int, Meta(description="Topic-list entries joined by shared order")]
    rejects: Annotated[int, Meta(description="Lines of rejects.jsonl (listings and whole files)")]
    warnings: int


class TopicCheck(Out, frozen=True):
    slug: str
    declared_count: int | None
    found_count: int
    declared_levels: dict[str, int]
    found_levels: dict[str, int]
    ok: bool


class ConflictValue(Out, frozen=True):
    value: str
    sources: list[str]


class Conflict(Out, frozen=True):
    record: Annotated[str, Meta(description="Item id or topic slug")]
    field: str
    chosen: str
    values: list[ConflictValue]


class DecisionSide(Out, frozen=True):
    """One of the two listings an identity decision joined."""

    summary_zh: str
    title: Annotated[str | None, Meta(description="The listing's Chinese or original title")]
    source: Annotated[str, Meta(description="'file: locator', or 'previous publish' for its item")]


class Decision(Out, frozen=True):
    """Two texts judged one resource by similarity rather than by an exact key."""

    item: ItemId
    kind: Annotated[
        Literal["near-duplicate", "order", "previous"],
        Meta(
            description="near-duplicate summaries; a topic-list entry placed by the topic "
            "page's order; an item of the previous publish matched by evidence (its id kept)"
        ),
    ]
    score: Annotated[float, Meta(description="Similarity of the two summaries, 0-100")]
    evidence: Annotated[str, Meta(description="What joined them, in words")]
    a: DecisionSide
    b: DecisionSide


class ItemEvidence(Out, frozen=True):
    """What later runs recognise an item by (kept in ``state/earlier.msgpack``)."""

    id: ItemId
    since: Annotated[
        int, Meta(ge=1, description="The sequence of the publish that first had this id")
    ]
    keys: Annotated[list[str], Meta(description="Summary match keys seen for it, its own first")]
    titles: Annotated[list[str], Meta(description="Original-title match keys seen for it")]


class Change(Out, frozen=True):
    """One line of changes.jsonl: what this publish changed against the previous one."""

    entity: Literal["item", "topic"]
    op: Literal["added", "changed", "removed", "merged"]
    id: Annotated[str, Meta(description="Item id or topic slug")]
    fields: Annotated[list[str], Meta(description="Sorted names of the changed fields ('changed')")]
    into: Annotated[str | None, Meta(description="The surviving id ('merged'), else null")]


class OpCounts(Out, frozen=True):
    added: int
    changed: int
    removed: int
    merged: int


class ChangeCounts(Out, frozen=True):
    items: OpCounts
    topics: OpCounts


class RunInfo(Out, frozen=True):
    """What this run built on."""

    mode: Annotated[
        Literal["snapshot", "merge"],
        Meta(description="snapshot: the inputs are the whole crawl; merge: added to the state"),
    ]
    sequence: Annotated[int, Meta(ge=1, description="1 for a first publish, +1 for each one after")]
    crawled_at: dt.date | None
    previous_items: Annotated[int | None, Meta(description="Items of the previous publish, if any")]
    previous_topics: int | None


class Report(Out, frozen=True):
    schema_version: str
    ingest_version: str
    run: RunInfo
    files: list[FileReport]
    totals: Totals
    changes: ChangeCounts
    consistency: list[TopicCheck]
    conflicts: list[Conflict]
    decisions: list[Decision]
    warnings: Annotated[
        list[str], Meta(description="Run-level warnings: 'file: locator: CODE: text'")
    ]
    timing: Annotated[
        dict[str, float], Meta(description="Seconds per stage; the only varying member")
    ]
    reuse: Annotated[
        Reused | None,
        Meta(
            description="What was taken from the previous publish's cache (a run that "
            "computes everything gives the same output with other counts); null: unknown"
        ),
    ] = None
