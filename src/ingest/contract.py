"""The output contract: msgspec Structs (unknown fields refused), the only definition of the
records a site loads, and their JSON.

``schemas/`` is generated from :class:`Item`, :class:`Topic`, :class:`Reject`,
:class:`Change` and :class:`Report` (:mod:`ingest.schema`). A record built in code is not
checked when it is built: the bytes written are, by decoding them again with the record's
type, so every pattern, range, enum and nesting rule holds for what a site loads. A failure
is a bug, never input: :class:`ContractError` names the record and the rule. A field's
description is its ``Meta``; a record's is its docstring (both go into the schemas)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator, Sequence
from functools import cache
from typing import Annotated, Any, Literal, TypeVar

import msgspec
from msgspec import Meta, Struct


class Out(Struct, frozen=True, forbid_unknown_fields=True, gc=False):
    """The base of every output record: immutable (each record says so again, for mypy),
    and never in a reference cycle."""


Recompute = Literal[
    "new-bytes", "cache-missing", "other-version", "checksum-failed", "full", "dask-engine"
]


class Recomputed(Out, frozen=True):
    """A page parsed again, and why its earlier result was not taken."""

    file: str
    reason: Annotated[
        Recompute,
        Meta(
            description="new-bytes: no earlier run read these bytes; cache-missing: the "
            "publish built on keeps no cache (or there is none); other-version: its cache "
            "was written by another build of ingest; checksum-failed: the cache, or this "
            "page's part of it, is damaged; full: --full; dask-engine: the Dask engine "
            "takes nothing from a cache"
        ),
    ]


class Reused(Out, frozen=True):
    """What the run took from the page cache of the publish it built on (``state/pages/``)
    instead of parsing it again. The output is the same either way."""

    pages_reused: Annotated[int, Meta(description="Pages whose parse was taken, not redone")]
    pages_parsed: int
    groups_reused: Annotated[
        int, Meta(description="Always 0: every group of listings is resolved again")
    ]
    groups_recomputed: int
    recomputed: Annotated[list[Recomputed], Meta(description="Every page parsed, and why")]
    warnings: Annotated[list[str], Meta(description="Cache trouble, as the run printed it")]


#: An id and a slug; ``(?!\n)`` keeps Python's ``$`` from matching before a final line
#: break (ECMA-262's, in JSON Schema, never does): an id ends where it ends.
ItemId = Annotated[str, Meta(pattern=r"^[a-z0-9][a-z0-9-]{5,39}(?!\n)$")]
Slug = Annotated[str, Meta(pattern=r"^[a-z0-9][a-z0-9-]{0,79}(?!\n)$")]
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
    """What later runs recognise an item by (kept in ``state/records.zst``)."""

    id: ItemId
    since: Annotated[
        int, Meta(ge=1, description="The sequence of the publish that first had this id")
    ]
    keys: Annotated[list[str], Meta(description="Summary match keys seen for it, its own first")]
    titles: Annotated[list[str], Meta(description="Original-title match keys seen for it")]


class Values(Out, frozen=True):
    """A changed field's value in the previous publish and in this one (as the JSON of the
    record has it; null when the record had no value)."""

    before: Any
    after: Any


class Change(Out, frozen=True, omit_defaults=True):
    """One line of changes.jsonl: what this publish changed against the previous one."""

    entity: Literal["item", "topic"]
    op: Literal["added", "changed", "removed", "merged"]
    id: Annotated[str, Meta(description="Item id or topic slug")]
    fields: Annotated[list[str], Meta(description="Sorted names of the changed fields ('changed')")]
    into: Annotated[str | None, Meta(description="The surviving id ('merged'), else null")]
    values: Annotated[
        dict[str, Values],
        Meta(description="Each changed field's value before and after ('changed'), by name"),
    ] = {}


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


T = TypeVar("T", bound=Out)

_ENCODER = msgspec.json.Encoder()
#: Records encoded and checked at a time in a JSON Lines file.
BATCH = 1024


class ContractError(AssertionError):
    """A record that breaks the output contract: a bug in ingest, never in its input."""


@cache
def decoder(kind: type[T]) -> msgspec.json.Decoder[T]:
    """A validating JSON decoder of one record type."""
    return msgspec.json.Decoder(kind)


def json_bytes(record: Out, indent: int | None = None) -> bytes:
    """One record as JSON (compact, or indented by ``indent``), checked against its type."""
    data = _ENCODER.encode(record)
    _check(record, data)
    return data if indent is None else msgspec.json.format(data, indent=indent)


def jsonl(records: Sequence[Out]) -> Iterator[bytes]:
    """A JSON Lines file of ``records`` in pieces of :data:`BATCH` lines, each checked (a
    batch at once; the line that breaks the contract is then found and named)."""
    for start in range(0, len(records), BATCH):
        batch = records[start : start + BATCH]
        data = _ENCODER.encode_lines(batch)
        try:
            decoder(type(batch[0])).decode_lines(data)
        except msgspec.ValidationError as e:
            for n, record in enumerate(batch, start + 1):
                _check(record, _ENCODER.encode(record), f"line {n}: ")
            raise ContractError(f"lines {start + 1}-{start + len(batch)}: mixed records") from e
        yield data


def _check(record: Out, data: bytes, where: str = "") -> None:
    try:
        decoder(type(record)).decode(data)
    except msgspec.ValidationError as e:
        name = type(record).__name__
        raise ContractError(f"{where}a record {name} breaks the output contract: {e}") from e


def to_builtins(record: Out) -> Any:
    """A record as the JSON a site loads, in Python values (dates as ISO strings)."""
    return msgspec.to_builtins(record)
