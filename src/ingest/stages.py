"""The cross-file stages as pure functions on groups, shared by every engine.

An engine's only job is to form the groups: the local engine with dicts, the Dask engine
with shuffles. Each function here sees one group and nothing else, so both engines give
byte-identical output.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from .align import order_edges
from .dedup import Edge, Unit, edge_order, summary_key
from .langid import language_of
from .merge import Component, Resolved, kind_of
from .models import (
    Conflict,
    Format,
    Item,
    ItemTopic,
    Listing,
    PageReject,
    Reject,
    Source,
)

Lid = tuple[str, int]
#: (slug, list-only?, rank or list position, item id, level) — one item's place in a topic.
TopicEntry = tuple[str, int, int, str, str | None]


def units_of(key: str, listings: Iterable[Listing]) -> Unit:
    """Group stage of exact identity: all listings whose summary key is ``key``."""
    return Unit(key, sorted(listings, key=lambda x: x.lid))


def topic_edges(listings: Iterable[Listing]) -> list[Edge]:
    """Order edges of one topic: its page listings against each of its topic-lists."""
    page: list[Listing] = []
    lists: dict[str, list[Listing]] = {}
    for x in listings:
        if x.prov.format == Format.TOPIC_PAGE.value:
            page.append(x)
        elif x.prov.format == Format.TOPIC_LIST.value:
            lists.setdefault(x.prov.sha256 + x.prov.file, []).append(x)
    if not page:
        return []
    page.sort(key=lambda x: (x.rank or 0, x.lid))
    out: list[Edge] = []
    for name in sorted(lists):
        out.extend(order_edges(page, sorted(lists[name], key=lambda x: x.ordinal)))
    return out


def order_edges_by_topic(listings: Iterable[Listing]) -> list[Edge]:
    """Order edges of every topic the listings are on (each topic alone, in slug order)."""
    by_slug: dict[str, list[Listing]] = {}
    for x in listings:
        if x.topic_key is not None:
            by_slug.setdefault(x.topic_key, []).append(x)
    return [e for slug in sorted(by_slug) for e in topic_edges(by_slug[slug])]


def best_edges(edges: Iterable[Edge]) -> list[Edge]:
    """One edge per key pair (the strongest), in the deterministic order."""
    best: dict[tuple[str, str], Edge] = {}
    for e in edges:
        if e.a == e.b:
            continue
        old = best.get((e.a, e.b))
        if old is None or edge_order(e) < edge_order(old):
            best[(e.a, e.b)] = e
    return sorted(best.values(), key=edge_order)


def related_lids(comp: Component) -> list[tuple[Lid, str]]:
    """(lid, item id) of every related-reading listing: what other items' ``related`` name."""
    return [(x.lid, r.id) for r in comp.items for x in r.members if x.role == "related"]


@dataclass(slots=True)
class Finished:
    """A component turned into output records and the counts the report needs."""

    items: list[Item] = field(default_factory=list)
    entries: list[TopicEntry] = field(default_factory=list)
    rejects: list[Reject] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    conflicts: list[Conflict] = field(default_factory=list)
    rejected_per_file: dict[str, int] = field(default_factory=dict)
    near_merges: int = 0
    order_joins: int = 0


def finish(
    comp: Component, id_of: Mapping[Lid, str], langs: Mapping[str, str | None] | None = None
) -> Finished:
    """Build the output records of one resolved component (``langs``: known languages)."""
    out = Finished(near_merges=comp.near_merges, order_joins=comp.order_joins)
    out.warnings.extend(comp.warnings)
    for rj in comp.rejects:
        out.rejects.append(to_reject(rj))
        out.rejected_per_file[rj.prov.file] = out.rejected_per_file.get(rj.prov.file, 0) + 1
    for r in comp.items:
        out.items.append(_item(r, id_of, langs or {}, out.warnings))
        out.entries.extend(_entries(r))
        out.conflicts.extend(r.conflicts)
        out.warnings.extend(r.warnings)
    return out


def to_reject(rj: PageReject) -> Reject:
    p = rj.prov
    return Reject(
        file=p.file,
        locator=p.locator,
        reason=rj.reason,
        excerpt=rj.excerpt,
        message=rj.message,
        byte_offset=p.byte_offset,
        line=p.line,
        format=p.format or None,
    )


def _item(
    r: Resolved, id_of: Mapping[Lid, str], langs: Mapping[str, str | None], warnings: list[str]
) -> Item:
    f = r.fields
    title = f["title_original"]
    if any(x.kind_label and kind_of(x.kind_label) == "other" for x in r.members):
        warnings.append(f"item {r.id}: UNKNOWN_KIND: label {f['kind_label']!r}")
    return Item(
        id=r.id,
        kind=kind_of(f["kind_label"]),  # type: ignore[arg-type]
        kind_label=f["kind_label"],
        title_zh=f["title_zh"],
        title_original=title,
        original_language=langs[title] if title and title in langs else language_of(title),
        summary_zh=f["summary_zh"] or "",
        url=f["url"],
        publisher=f["publisher"],
        published_ago=f["published_ago"],
        rating=f["rating"],
        collected_on=f["collected_on"],  # type: ignore[arg-type]
        topics=[ItemTopic.model_validate(t) for t in r.topics],
        related=_related(r, id_of, warnings),
        sources=sorted(
            (_source(x) for x in r.members), key=lambda s: (s.file, s.byte_offset, s.locator)
        ),
    )


def _source(x: Listing) -> Source:
    p = x.prov
    return Source(
        file=p.file,
        sha256=p.sha256,
        format=p.format,  # type: ignore[arg-type]
        locator=p.locator,
        byte_offset=p.byte_offset,
        line=p.line,
    )


def _related(r: Resolved, id_of: Mapping[Lid, str], warnings: list[str]) -> list[str]:
    """From the item's own item-page: related ids in page order, no self, no repeats."""
    out: list[str] = []
    for lid in r.related:
        rid = id_of.get(lid)
        if rid == r.id:
            warnings.append(
                f"item {r.id}: SELF_REFERENCE: related reading names the item itself; dropped"
            )
        elif rid is not None and rid not in out:
            out.append(rid)
    return out


def _entries(r: Resolved) -> list[TopicEntry]:
    out: list[TopicEntry] = []
    for t in r.topics:
        slug, rank = str(t["slug"]), t["rank"]
        level = t["level"] if isinstance(t["level"], str) else None
        if isinstance(rank, int):
            out.append((slug, 0, rank, r.id, level))
        else:
            pos = min(
                (
                    x.ordinal
                    for x in r.members
                    if x.topic_key == slug and x.prov.format == Format.TOPIC_LIST.value
                ),
                default=0,
            )
            out.append((slug, 1, pos, r.id, level))
    return out


def units_by_key(listings: Iterable[Listing]) -> dict[str, Unit]:
    """key → unit of every summary key among the listings (the exact-identity group)."""
    by_key: dict[str, list[Listing]] = {}
    for x in listings:
        by_key.setdefault(summary_key(x), []).append(x)
    return {k: units_of(k, xs) for k, xs in sorted(by_key.items())}
