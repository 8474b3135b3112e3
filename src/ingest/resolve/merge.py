"""Resolve: one cluster of listings → one item (field precedence, conflicts, provisional id).

Precedence is item-page > topic-page > topic-list; within a kind, the page's own item
before its related reading, then the file's sha256 and the listing's offset: the result
never depends on the order files were read in.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import takewhile
from operator import attrgetter

from ingest.contract import Conflict, ConflictValue, ItemTopic
from ingest.normalize.text import has_han
from ingest.records import LEVELS, PRECEDENCE, ROLE_ORDER, Format, Listing, PageReject, listing_id
from ingest.resolve.graph import Edge, Unit, mint, settle

_NO_VALUE = frozenset({None, ""})
#: Precedence by the format's value, as listings carry it (no enum built per lookup).
_RANK_OF = {f.value: rank for f, rank in PRECEDENCE.items()}
_ITEM_PAGE = Format.ITEM_PAGE.value


def precedence(x: Listing) -> tuple[int, int, str, int]:
    return (_RANK_OF[x.prov.format], ROLE_ORDER[x.role], x.prov.sha256, x.prov.byte_offset)


def by_precedence(members: list[Listing]) -> tuple[list[Listing], str]:
    """A cluster's listings best first, and the summary key that names it: its
    best-precedence listing's (of listings alike in precedence, the smaller key)."""
    ranked = sorted(members, key=precedence)  # stable: listings alike keep their order
    best = precedence(ranked[0])
    key = min(x.key for x in takewhile(lambda x: precedence(x) == best, ranked))
    return ranked, key


@dataclass(slots=True)
class Component:
    """What one component resolves to: items, rejected orphans, and what joined them (made
    whole, not added to: a run holds one for each resource until its records are made)."""

    items: list[Resolved] = field(default_factory=list)
    rejects: tuple[PageReject, ...] = ()
    warnings: tuple[str, ...] = ()
    near_merges: int = 0
    order_joins: int = 0


def resolve_component(units: list[Unit], edges: list[Edge]) -> Component:
    """Settle one component's units into clusters, then each cluster into an item."""
    settled = settle(units, edges)
    items: list[Resolved] = []
    rejects: list[PageReject] = []
    warnings: list[str] = []
    for cluster in settled.clusters:
        members = [x for u in cluster for x in u.listings]
        if all(x.role == "orphan" for x in members):  # a title-less topic-list summary
            rejects.extend(_orphan(x) for x in members)  # that joined nothing: no item
            continue
        warnings.extend(_duplicates(cluster))
        ordered, key = by_precedence(members)
        r = resolve(mint(key), ordered)
        r.joins = _joins(cluster, settled.applied)
        items.append(r)
    return Component(
        items, tuple(rejects), tuple(warnings), settled.near_merges, settled.order_joins
    )


def _joins(cluster: list[Unit], applied: list[Edge]) -> tuple[Join, ...]:
    """The edges that joined this cluster's units, each with the best listing of each."""
    if not applied:
        return ()  # the usual case: a cluster of one unit
    best = {u.key: min(u.listings, key=precedence) for u in cluster}
    return tuple(Join(e.kind, e.score, best[e.a], best[e.b]) for e in applied if e.a in best)


def _orphan(x: Listing) -> PageReject:
    why = "summary line without its title line, matching no listing on any other page"
    return PageReject(x.prov, "PAIRING_ERROR", why, x.summary_zh[:200], True)


def _duplicates(cluster: list[Unit]) -> list[str]:
    """A warning for each extra listing of one resource on one page. A page is its content
    (sha256 and kind): byte-identical files under two names are one page, and the same
    listing in each copy (same offset) is one listing, not a duplicate."""
    out: list[str] = []
    for u in cluster:
        if len({x.prov.sha256 for x in u.listings}) == len(u.listings):
            continue  # the usual case: each listing on a page of its own (of its own bytes)
        seen: dict[tuple[str, str], dict[int, Listing]] = {}
        for x in sorted(u.listings, key=listing_id):
            seen.setdefault((x.prov.sha256, x.prov.format), {}).setdefault(x.prov.byte_offset, x)
        for at in seen.values():
            first, *rest = sorted(at.values(), key=lambda x: x.prov.byte_offset)
            out.extend(
                f"{x.prov.file}: {x.prov.locator}: DUPLICATE_ITEM: same resource as "
                f"{first.prov.locator}; merged"
                for x in rest
            )
    return out


@dataclass(frozen=True, slots=True)
class Join:
    """An edge that joined two units of an item: what kind, how similar, which listings."""

    kind: str  # "near" | "order"
    score: float
    a: Listing
    b: Listing


@dataclass(slots=True)
class Resolved:
    """Fields of one item before the output model is built."""

    id: str
    fields: dict[str, str | None]
    members: list[Listing]
    topics: list[ItemTopic]
    related: tuple[tuple[str, int], ...] = ()  # lids, page order
    conflicts: tuple[Conflict, ...] = ()
    warnings: tuple[str, ...] = ()  # "CODE: text", about this item
    joins: tuple[Join, ...] = ()


def resolve(item: str, ordered: list[Listing]) -> Resolved:
    """The fields of the item of ``ordered`` (a cluster's listings, best first): each the
    first value a listing has; when the listings disagree, a conflict naming each value's
    sources."""
    fields: dict[str, str | None] = {}
    conflicts: list[Conflict] = []
    columns = zip(*map(_VALUES, ordered), strict=True)  # a field's values, best first
    for name, got in zip(_PICKED, columns, strict=True):
        distinct = set(got) - _NO_VALUE
        if len(distinct) < 2:  # the usual case: every listing that has a value agrees
            fields[name] = distinct.pop() if distinct else None
            continue
        values: dict[str, list[Listing]] = {}  # each value and its listings, best first
        for x, v in zip(ordered, got, strict=True):
            if v:
                values.setdefault(v, []).append(x)
        chosen = fields[name] = next(iter(values))
        conflicts.append(_conflict(item, name, chosen, values))
    if fields["title_original"] is None and any(x.original_is_chinese for x in ordered):
        fields["title_original"] = fields["title_zh"]
    topics = _topics(item, ordered, conflicts)
    mains = [x for x in ordered if x.role == "main"]
    related = tuple((mains[0].prov.file, i) for i in mains[0].related_idx) if mains else ()
    return Resolved(item, fields, ordered, topics, related, tuple(conflicts), _not_chinese(fields))


#: The fields an item takes from the best of its listings that has one, in this order.
_PICKED = tuple(
    "title_zh title_original summary_zh kind_label url publisher published_ago rating "
    "collected_on".split()
)
_VALUES = attrgetter(*_PICKED)


def _conflict(item: str, name: str, chosen: str, values: dict[str, list[Listing]]) -> Conflict:
    """The conflict over field ``name``: each value and the listings that give it."""
    return Conflict(
        record=item,
        field=name,
        chosen=chosen,
        values=[
            ConflictValue(value=v, sources=[f"{x.prov.file}: {x.prov.locator}" for x in xs])
            for v, xs in values.items()
        ],
    )


def _topics(item: str, ordered: list[Listing], conflicts: list[Conflict]) -> list[ItemTopic]:
    """One entry per topic: the best-precedence listing on it gives rank and level."""
    per_slug: dict[str, list[Listing]] = {}
    for x in ordered:
        if x.topic_key is not None and x.prov.format != _ITEM_PAGE:
            per_slug.setdefault(x.topic_key, []).append(x)
    out: list[ItemTopic] = []
    for slug in sorted(per_slug):
        xs = per_slug[slug]
        best = xs[0]
        ranks = sorted({x.rank for x in xs if x.rank is not None}) if len(xs) > 1 else ()
        if len(ranks) > 1:
            by_rank = {str(k): [x for x in xs if x.rank == k] for k in ranks}
            conflicts.append(_conflict(item, f"topics[{slug}].rank", str(best.rank), by_rank))
        level = LEVELS.get(best.level_label or "")
        out.append(ItemTopic(slug, best.rank, level, best.level_label))  # type: ignore[arg-type]
    return out


def _not_chinese(fields: dict[str, str | None]) -> tuple[str, ...]:
    """The warnings of an item whose summary, or title of a few words, is not Chinese."""
    warnings: list[str] = []
    if not has_han(fields.get("summary_zh") or ""):
        warnings.append("NOT_CHINESE: summary_zh has no Chinese text")
    title = fields.get("title_zh") or ""
    if title and not has_han(title) and len(title.split()) >= 3:
        warnings.append(f"NOT_CHINESE: title_zh {title[:60]!r} is not Chinese")
    return tuple(warnings)
