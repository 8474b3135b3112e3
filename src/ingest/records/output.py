"""Output records: pydantic models (``extra="forbid"``), built once per record at the end.

``schemas/`` is generated from :class:`Item`, :class:`Topic`, :class:`Reject` and
:class:`Report`; :class:`RunOutput` is what every writer receives.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

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


class PublishedEstimate(_Out):
    """The dates a relative age (``5 个月前``) can mean, given the crawl date."""

    earliest: dt.date
    latest: dt.date


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
    published_estimate: PublishedEstimate | None = Field(
        description="Dates published_ago can mean, from --crawled-at; null without it"
    )
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
    origin: Literal["input", "state"] = Field(
        description="input: given on the command line; state: kept by an earlier publish "
        "and read again by --merge"
    )
    sha256: str
    bytes: int
    encoding: str | None
    format: str | None
    parser: str | None
    listings: int = Field(description="Listings read from the file (used + rejected)")
    rejected_listings: int
    status: Literal["ok", "partial", "rejected"]
    warnings: list[str]
    marks: list[str] = Field(
        default_factory=list,
        description="Structural marks found in the file, in page order (e.g. heading, "
        "category, website, section, listings, footer, source; description, stats, entries; "
        "byline, entry, key_values, related_heading, related): a layout change shows as a "
        "mark missing",
    )


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


class DecisionSide(_Out):
    """One of the two listings an identity decision joined."""

    summary_zh: str
    title: str | None = Field(description="The listing's Chinese or original title")
    source: str = Field(description="'file: locator', or 'previous publish' for its item")


class Decision(_Out):
    """Two texts judged one resource by similarity rather than by an exact key."""

    item: ItemId
    kind: Literal["near-duplicate", "order", "previous"] = Field(
        description="near-duplicate summaries; a topic-list entry placed by the topic "
        "page's order; an item of the previous publish matched by evidence (its id kept)"
    )
    score: float = Field(description="Similarity of the two summaries, 0-100")
    evidence: str = Field(description="What joined them, in words")
    a: DecisionSide
    b: DecisionSide


class ItemEvidence(_Out):
    """One line of ``state/evidence.jsonl``: what later runs recognise an item by."""

    id: ItemId
    since: int = Field(ge=1, description="The sequence of the publish that first had this id")
    keys: list[str] = Field(description="Summary match keys seen for it, its own first")
    titles: list[str] = Field(description="Original-title match keys seen for it")


class Change(_Out):
    """One line of changes.jsonl: what this publish changed against the previous one."""

    entity: Literal["item", "topic"]
    op: Literal["added", "changed", "removed", "merged"]
    id: str = Field(description="Item id or topic slug")
    fields: list[str] = Field(description="Sorted names of the changed fields ('changed')")
    into: str | None = Field(description="The surviving id ('merged'), else null")


class OpCounts(_Out):
    added: int
    changed: int
    removed: int
    merged: int


class ChangeCounts(_Out):
    items: OpCounts
    topics: OpCounts


class RunInfo(_Out):
    """What this run built on."""

    mode: Literal["snapshot", "merge"] = Field(
        description="snapshot: the inputs are the whole crawl; merge: added to the state"
    )
    sequence: int = Field(ge=1, description="1 for a first publish, +1 for each one after")
    crawled_at: dt.date | None
    previous_items: int | None = Field(description="Items of the previous publish, if any")
    previous_topics: int | None


class Report(_Out):
    schema_version: str
    ingest_version: str
    run: RunInfo
    files: list[FileReport]
    totals: Totals
    changes: ChangeCounts
    consistency: list[TopicCheck]
    conflicts: list[Conflict]
    decisions: list[Decision]
    warnings: list[str] = Field(description="Run-level warnings: 'file: locator: CODE: text'")
    timing: dict[str, float] = Field(description="Seconds per stage; the only varying member")


#: A publish's files of records: name → model of each line (.jsonl) or the file; report last.
FILES: dict[str, type[_Out]] = {
    "items.jsonl": Item,
    "topics.jsonl": Topic,
    "rejects.jsonl": Reject,
    "changes.jsonl": Change,
    "report.json": Report,
}
#: The run report as a web page: no schema, but part of every publish.
PAGE = "report.html"

#: A file's content: its bytes, or a function giving them in pieces as it is written.
Content = bytes | Callable[[], Iterable[bytes]]


def jsonl(records: Sequence[_Out]) -> Iterator[bytes]:
    """A JSON Lines file of ``records``, a line at a time (a :data:`Content` with partial)."""
    return (json_bytes(r) + b"\n" for r in records)


def json_bytes(record: BaseModel, indent: int | None = None) -> bytes:
    """``record.model_dump_json(indent=indent).encode()``, not decoded and encoded again."""
    return record.__pydantic_serializer__.to_json(record, indent=indent)


@dataclass(slots=True)
class RunOutput:
    """The records of one run: what writers publish."""

    items: list[Item]
    topics: list[Topic]
    rejects: list[Reject]
    report: Report
    changes: list[Change] = field(default_factory=list)
    evidence: list[ItemEvidence] = field(default_factory=list)  # for state/evidence.jsonl
