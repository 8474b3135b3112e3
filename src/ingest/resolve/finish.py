"""Records: one resolved component → its output records and the counts the report needs:
a pure function of the component and the small maps the driver gathered (published ids,
the items related reading names, known languages), so both engines call it on their groups.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from operator import attrgetter
from typing import Any

import msgspec
from msgspec import structs

from ingest.contract import Conflict, Decision, DecisionSide, Item, Reject, Source
from ingest.normalize.language import language_of
from ingest.records import Format, Listing, PageReject, kind_of
from ingest.resolve.merge import Component, Join, Resolved
from ingest.state.windows import Ages

Lid = tuple[str, int]
#: (slug, list-only?, rank or list position, item id, level) — one item's place in a topic.
TopicEntry = tuple[str, int, int, str, str | None]


def related_lids(comp: Component) -> list[tuple[Lid, str]]:
    """(lid, item id) of every related-reading listing: what other items' ``related`` name."""
    return [(x.lid, r.id) for r in comp.items for x in r.members if x.role == "related"]


@dataclass(slots=True)
class Finished:
    """A component's output records and the counts the report needs (made whole: a run
    holds one for each resource until the outputs are assembled)."""

    items: tuple[Item, ...] = ()
    entries: tuple[TopicEntry, ...] = ()
    rejects: tuple[Reject, ...] = ()
    warnings: tuple[str, ...] = ()
    conflicts: tuple[Conflict, ...] = ()
    rejected_per_file: dict[str, int] = field(default_factory=dict)
    decisions: tuple[Decision, ...] = ()
    near_merges: int = 0
    order_joins: int = 0

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        """Pickled as MessagePack (a Dask worker sends the driver every one): many times
        faster than pickle. Text MessagePack cannot hold (a lone surrogate) goes field by
        field."""
        try:
            return _from_msgpack, (_ENCODER.encode(self),)
        except UnicodeEncodeError:
            return Finished, _FINISHED_FIELDS(self)


_FINISHED_FIELDS = attrgetter(*(f.name for f in fields(Finished)))
_ENCODER = msgspec.msgpack.Encoder()
_DECODER = msgspec.msgpack.Decoder(Finished)


def _from_msgpack(data: bytes) -> Finished:
    return _DECODER.decode(data)


def finish(
    comp: Component,
    ids: Mapping[str, str],
    id_of: Mapping[Lid, str],
    langs: Mapping[str, str | None] | None = None,
    ages: Ages | None = None,
) -> Finished:
    """The output records of one resolved component. ``ids``: the published id of each
    minted one (one it lacks is its own); ``id_of``: the (minted) id of every related-reading
    listing; ``langs``: known languages of original titles; ``ages``: crawl days and earlier
    windows of relative ages."""
    warnings = list(comp.warnings)
    per_file = dict(Counter(rj.prov.file for rj in comp.rejects))
    items: list[Item] = []
    entries: list[TopicEntry] = []
    conflicts: list[Conflict] = []
    decisions: list[Decision] = []
    for r in comp.items:
        item = _item(r, ids, id_of, langs or {}, ages or Ages(), warnings)
        items.append(item)
        entries.extend(_entries(r, item.id))
        conflicts.extend(
            c if c.record == item.id else structs.replace(c, record=item.id) for c in r.conflicts
        )
        warnings.extend(f"item {item.id}: {w}" for w in r.warnings)
        decisions.extend(_decision(item.id, j) for j in r.joins)
    rejects = tuple(to_reject(rj) for rj in comp.rejects)
    return Finished(
        tuple(items),
        tuple(entries),
        rejects,
        tuple(warnings),
        tuple(conflicts),
        per_file,
        tuple(decisions),
        comp.near_merges,
        comp.order_joins,
    )


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
    r: Resolved,
    ids: Mapping[str, str],
    id_of: Mapping[Lid, str],
    langs: Mapping[str, str | None],
    ages: Ages,
    warnings: list[str],
) -> Item:
    f = r.fields
    title = f["title_original"]
    item_id = ids.get(r.id, r.id)
    if any(kind_of(label) == "other" for label in {x.kind_label for x in r.members} if label):
        warnings.append(f"item {item_id}: UNKNOWN_KIND: label {f['kind_label']!r}")
    estimate = ages.window(item_id, f["published_ago"], _crawled(r, ages), warnings)
    related = [ids.get(m, m) for m in (id_of[lid] for lid in r.related if lid in id_of)]
    provs = sorted((x.prov for x in r.members), key=_source_order)
    collected = f["collected_on"]  # a YYYY-MM-DD the parsers found
    # the original title's language: as the languages step found it, else judged here
    lang = (langs[title] if title in langs else language_of(title)) if title else None
    return Item(  # checked against the contract where it is written (records.serial)
        id=item_id,
        kind=kind_of(f["kind_label"]),  # type: ignore[arg-type]
        kind_label=f["kind_label"],
        title_zh=f["title_zh"],
        title_original=title,
        original_language=lang,
        summary_zh=f["summary_zh"] or "",
        url=f["url"],
        publisher=f["publisher"],
        published_ago=f["published_ago"],
        published_estimate=estimate,
        rating=f["rating"],
        collected_on=None if collected is None else dt.date.fromisoformat(collected),
        topics=r.topics,
        related=_related(item_id, related, warnings),
        sources=[Source(*structs.astuple(p)) for p in provs],  # the same fields, in order
    )


_source_order = attrgetter("file", "byte_offset", "locator")


def _crawled(r: Resolved, ages: Ages) -> dt.date | None:
    """The crawl day of the page whose relative age the item shows: the first day its bytes
    were crawled (this run's, or one an earlier publish recorded; None: no run was told one)."""
    shown = r.fields["published_ago"]
    source = next((x for x in r.members if x.published_ago == shown), None)
    return ages.today if source is None else ages.day(source.prov.sha256)


def _related(item_id: str, named: list[str], warnings: list[str]) -> list[str]:
    """From the item's own item-page: related ids in page order, no self, no repeats."""
    out: list[str] = []
    for rid in named:
        if rid == item_id:
            warnings.append(
                f"item {item_id}: SELF_REFERENCE: related reading names the item itself; dropped"
            )
        elif rid not in out:
            out.append(rid)
    return out


def _entries(r: Resolved, item_id: str) -> list[TopicEntry]:
    out: list[TopicEntry] = []
    for t in r.topics:
        if t.rank is not None:
            out.append((t.slug, 0, t.rank, item_id, t.level))
            continue
        on_list = (x for x in r.members if x.topic_key == t.slug)
        pos = min((x.ordinal for x in on_list if x.prov.format == Format.TOPIC_LIST), default=0)
        out.append((t.slug, 1, pos, item_id, t.level))
    return out


_EVIDENCE = {
    "near": "near-duplicate summaries",
    "order": "a topic-list entry placed by its topic page's order, the clearest match there",
}


def _decision(item_id: str, j: Join) -> Decision:
    return Decision(
        item=item_id,
        kind="near-duplicate" if j.kind == "near" else "order",
        score=j.score,
        evidence=_EVIDENCE[j.kind],
        a=_side(j.a),
        b=_side(j.b),
    )


def _side(x: Listing) -> DecisionSide:
    return DecisionSide(
        summary_zh=x.summary_zh,
        title=x.title_zh or x.title_original,
        source=f"{x.prov.file}: {x.prov.locator}",
    )
