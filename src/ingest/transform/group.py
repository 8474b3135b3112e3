"""What a later run needs of a resolved group to take its results instead of resolving it
again (see :mod:`ingest.steps.reuse`).

A group is a component of listings. What it resolves to is a pure function of its members
and the edges inside it: a member is a listing, and a listing is its page's bytes (their
sha256) and its place on the page, with the name, topic, origin and crawl day of the
page; :func:`group_digest` digests exactly that. Its finished records read, besides, a
few values of the whole run: the published ids of its items and of the items its related
reading names, the languages of its original titles, the previous publish's window of
each item's age and (for an item that shows a relative age) the crawl day of the page
that shows it. :func:`finish_key` digests those; a group whose members and key are both
what they were is finished as it was.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from collections.abc import Mapping
from operator import itemgetter

import msgspec
from msgspec import Struct

from ..normalize.text import key_of
from ..records.internal import Listing
from ..records.output import Item
from ..state.ages import Ages
from ..state.earlier import Facts
from .identity import facts_of
from .merge import Component, Resolved
from .units import Edge

Lid = tuple[str, int]
#: A group's member: file, sha256, place on the page, topic, kept by the state, crawl day.
Member = tuple[str, str, int, str | None, bool, dt.date | None]
_FILE_AND_PLACE = itemgetter(0, 2)  # unique among a run's listings


def member_of(x: Listing) -> Member:
    return (x.prov.file, x.prov.sha256, x.index, x.topic_key, x.stored, x.crawled_at)


def group_digest(members: list[Member], edges: list[Edge]) -> str:
    """The digest of a group: its members, in any order, and its edges."""
    members.sort(key=_FILE_AND_PLACE)
    data = msgspec.msgpack.encode([members, edges])
    return hashlib.blake2b(data, digest_size=16).hexdigest()


class ItemUse(Struct, array_like=True, frozen=True, gc=False):
    """What finishing one item reads of the run, besides its group."""

    minted: str  # its provisional id: the run gives its published id
    summary_key: str  # of its summary (what the state keeps of it, not read by finish)
    related: tuple[Lid, ...]  # the related-reading listings it names: the run gives their items
    title: str | None  # its original title: the run gives its language
    aged: bool  # it shows a relative age: its estimate reads the crawl day
    shown_by: str | None  # the sha256 of the page whose relative age it shows
    # what identity knows it by besides its record's fields (see claim_facts):
    keys: tuple[str, ...] | None  # its members' summary keys, its own first (None: just it)
    titles: tuple[str, ...]  # its members' original-title keys
    source: str  # its best listing's place


class GroupMemo(Struct, array_like=True, frozen=True, gc=False):
    """A resolved group as a later run needs it while the group is not resolved again
    (one use per item, in the order of its finished items)."""

    digest: str  # see group_digest
    related: list[tuple[Lid, str]]  # each related-reading listing and the item it is in
    uses: list[ItemUse]
    key: str = ""  # see finish_key: what the group was finished with


def memo_of(comp: Component) -> GroupMemo:
    """The memo of a resolved group (its ``digest`` set), before it is finished."""
    return GroupMemo(
        comp.digest,
        [(x.lid, r.id) for r in comp.items for x in r.members if x.role == "related"],
        [_use(r) for r in comp.items],
    )


def _use(r: Resolved) -> ItemUse:
    own = key_of(r.fields["summary_zh"] or "")
    facts = facts_of(r)
    keys = None if facts.keys == (own,) else facts.keys
    title, shown = r.fields["title_original"], r.fields["published_ago"]
    by = next((x.prov.sha256 for x in r.members if x.published_ago == shown), None)
    uses = (r.id, own, r.related, title, shown is not None, by if shown else None)
    return ItemUse(*uses, keys, facts.titles, facts.source)


def claim_facts(item: Item, use: ItemUse) -> Facts:
    """What identity compares of an item of a group taken: its record's fields, and what
    its memo kept (the same as :func:`~.identity.facts_of` gave when it was resolved)."""
    return Facts(
        keys=use.keys or (use.summary_key,),
        titles=use.titles,
        url=item.url,
        kind=item.kind_label,
        places=tuple((t.slug, t.rank, t.level_label) for t in item.topics if t.rank is not None),
        summary=item.summary_zh,
        title=item.title_zh or item.title_original,
        source=use.source,
    )


def finish_key(
    memo: GroupMemo,
    ids: Mapping[str, str],
    id_of: Mapping[Lid, str],
    langs: Mapping[str, str | None],
    ages: Ages,
) -> str:
    """A digest of the group and of every value :func:`~.records.finish` reads besides it
    (its arguments: published ids, the items of related reading, languages, and what the
    run knows of ages: the crawl day of an age shown, the previous window)."""
    seen = []
    for use in memo.uses:
        named = [id_of.get(lid) for lid in use.related]
        related = [None if m is None else ids.get(m, m) for m in named]
        lang = None if use.title is None else (use.title in langs, langs.get(use.title))
        item_id = ids.get(use.minted, use.minted)
        day = None
        if use.aged:
            day = ages.today if use.shown_by is None else ages.day(use.shown_by)
        seen.append((item_id, related, lang, day, ages.windows.get(item_id)))
    data = msgspec.msgpack.encode([memo.digest, seen])
    return hashlib.blake2b(data, digest_size=16).hexdigest()
