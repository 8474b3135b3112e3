"""Records → rows: pure functions from the output models to the tables' rows.

A row is a plain dict keyed by column name. ``digest`` is the sha256 of the record's line
in the folder, so two publishes of one record give one digest, and any change to it,
``sources`` included, gives another.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from typing import Any

import msgspec
from msgspec import structs

from ...records.output import Item, ItemTopic, Source, Topic

Row = dict[str, Any]


class Links(msgspec.Struct, frozen=True):
    """What an item's ``item_topics`` and ``related`` rows need of its line (the rest of
    the line is skipped, not parsed)."""

    id: str
    topics: list[ItemTopic]
    related: list[str]


def digest(line: bytes) -> str:
    return hashlib.sha256(line).hexdigest()


def item_row(item: Item, line_digest: str) -> Row:
    est = item.published_estimate
    return {
        "id": item.id,
        "kind": item.kind,
        "kind_label": item.kind_label,
        "title_zh": item.title_zh,
        "title_original": item.title_original,
        "original_language": item.original_language,
        "summary_zh": item.summary_zh,
        "url": item.url,
        "publisher": item.publisher,
        "published_ago": item.published_ago,
        "published_earliest": est.earliest if est else None,
        "published_latest": est.latest if est else None,
        "rating": item.rating,
        "collected_on": item.collected_on,
        "digest": line_digest,
    }


def topic_row(topic: Topic, line_digest: str) -> Row:
    site, declared = topic.site, topic.declared
    return {
        "slug": topic.slug,
        "name": topic.name,
        "description": topic.description,
        "category": topic.category,
        "url": topic.url,
        "site_name": site.name if site else None,
        "site_url": site.url if site else None,
        "notice": topic.notice,
        "order_note": topic.order_note,
        "declared_count": declared.count if declared else None,
        "declared_levels": dict(declared.levels) if declared else None,
        "digest": line_digest,
    }


def item_topic_rows(item: Item | Links, position: Callable[[str], int]) -> Iterator[Row]:
    """``position(slug)``: the item's index in that topic's ``items``."""
    for t in item.topics:
        yield {
            "item_id": item.id,
            "slug": t.slug,
            "position": position(t.slug),
            "rank": t.rank,
            "level": t.level,
            "level_label": t.level_label,
        }


def related_rows(item: Item | Links) -> Iterator[Row]:
    for n, other in enumerate(item.related):
        yield {"item_id": item.id, "position": n, "related_id": other}


def source_rows(key: str, value: str, found: list[Source]) -> Iterator[Row]:
    """Rows of ``sources`` (key ``item_id``) or ``topic_sources`` (key ``slug``)."""
    for n, s in enumerate(found):
        yield {key: value, "position": n, **structs.asdict(s)}
