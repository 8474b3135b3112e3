"""The change set: what a publish changes against the previous one (``changes.jsonl``).

Records are compared as the JSON a site loads, field by field, except ``sources`` (the
same crawl saved under other file names is no change) and the id itself. An item of the
previous publish that is gone is ``removed``, unless the identity step found it to be one
resource with another item: then it is ``merged`` into that item's id.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Literal

from msgspec import structs

from ..records.output import Change, ChangeCounts, Item, OpCounts, Topic
from ..records.serial import to_builtins

Entity = Literal["item", "topic"]
#: Fields that never make a change on their own.
IGNORED = frozenset({"id", "slug", "sources"})


def diff(
    before: Mapping[str, Mapping[str, Any]],
    after: Mapping[str, Mapping[str, Any]],
    entity: Entity,
    merged: Mapping[str, str] | None = None,
) -> list[Change]:
    """Changes from ``before`` to ``after`` (id → record as JSON); ``merged``: old id → the
    id it was merged into."""
    merged = merged or {}
    out = []
    for key in sorted(after.keys() - before.keys()):
        out.append(Change(entity=entity, op="added", id=key, fields=[], into=None))
    for key in sorted(after.keys() & before.keys()):
        fields = changed_fields(before[key], after[key])
        if fields:
            out.append(Change(entity=entity, op="changed", id=key, fields=fields, into=None))
    for key in sorted(before.keys() - after.keys()):
        into = merged.get(key)
        op: Literal["merged", "removed"] = "merged" if into is not None else "removed"
        out.append(Change(entity=entity, op=op, id=key, fields=[], into=into))
    return out


def changed_fields(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    """Sorted names of the fields whose values differ (a field one side lacks is null)."""
    names = (old.keys() | new.keys()) - IGNORED
    return sorted(n for n in names if old.get(n) != new.get(n))


def change_set(
    items_before: Mapping[str, Mapping[str, Any]],
    topics_before: Mapping[str, Mapping[str, Any]],
    items: Iterable[Item],
    topics: Iterable[Topic],
    merged: Mapping[str, str] | None = None,
) -> list[Change]:
    """Every change of items and topics, sorted by (entity, op, id)."""
    items_after = {i.id: _as_json(i, i.id in items_before) for i in items}
    topics_after = {t.slug: _as_json(t, t.slug in topics_before) for t in topics}
    found = diff(items_before, items_after, "item", merged) + diff(
        topics_before, topics_after, "topic"
    )
    return sorted(found, key=lambda c: (c.entity, c.op, c.id))


def _as_json(record: Item | Topic, compared: bool) -> Mapping[str, Any]:
    """A record as JSON when it is compared with an earlier one, but its sources (which
    make no change: nine in ten of an item's values); a new record is only listed as added,
    so it is not dumped (on a first run, none is)."""
    return to_builtins(structs.replace(record, sources=[])) if compared else {}


def counts(changes: Iterable[Change]) -> ChangeCounts:
    tally: dict[tuple[str, str], int] = {}
    for c in changes:
        tally[(c.entity, c.op)] = tally.get((c.entity, c.op), 0) + 1

    def of(entity: str) -> OpCounts:
        return OpCounts(
            added=tally.get((entity, "added"), 0),
            changed=tally.get((entity, "changed"), 0),
            removed=tally.get((entity, "removed"), 0),
            merged=tally.get((entity, "merged"), 0),
        )

    return ChangeCounts(items=of("item"), topics=of("topic"))
