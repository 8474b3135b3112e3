"""The change set: what a publish changes against the previous one (``changes.jsonl``).

Records are compared as the JSON a site loads, field by field, except ``sources`` (the
same crawl saved under other file names is no change) and the id itself. An item of the
previous publish that is gone is ``removed``, unless the identity step found it to be one
resource with another item: then it is ``merged`` into that item's id. A record whose
digest (state.earlier) is the one the previous publish kept for it is the same, and is not
compared: the daily run reads and dumps only the records that changed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from functools import partial
from typing import Any, Literal, cast

import msgspec
from msgspec import structs

from ingest.contract import Change, ChangeCounts, Item, OpCounts, Topic, Values, to_builtins
from ingest.records import RunOutput
from ingest.state.previous import Entity, Previous, line_digest

#: Share of the previous items a run may remove without --allow-shrink.
MAX_REMOVED_SHARE = 0.10
_ENCODER = msgspec.json.Encoder()


def digest(record: Item | Topic) -> int:
    """A digest of the record as JSON without its sources: :func:`line_digest` of its line."""
    return line_digest(_ENCODER.encode(structs.replace(record, sources=[])))


#: Fields that never make a change on their own.
IGNORED = frozenset({"id", "slug", "sources"})


@dataclass(frozen=True, slots=True)
class Records:
    """One side of a comparison: the keys (ids or slugs) of its records, each record as JSON
    (asked for only when it is compared), and a digest of each where known (two records of
    the same digest are the same: not compared; see state.earlier.digest)."""

    keys: AbstractSet[str]
    json: Callable[[str], Mapping[str, Any]]
    digest: Callable[[str], int | None] = lambda key: None

    @classmethod
    def of(cls, records: Mapping[str, Mapping[str, Any]]) -> Records:
        return cls(records.keys(), records.__getitem__)


def diff(
    before: Records, after: Records, entity: Entity, merged: Mapping[str, str] | None = None
) -> list[Change]:
    """Changes from ``before`` to ``after``; ``merged``: old id → the id it was merged into."""
    merged = merged or {}
    out = []
    for key in sorted(after.keys - before.keys):
        out.append(Change(entity=entity, op="added", id=key, fields=[], into=None))
    for key in sorted(after.keys & before.keys):
        digest = before.digest(key)
        if digest is not None and digest == after.digest(key):
            continue
        old, new = before.json(key), after.json(key)
        fields = changed_fields(old, new)
        if fields:
            values = {f: Values(before=old.get(f), after=new.get(f)) for f in fields}
            out.append(
                Change(entity=entity, op="changed", id=key, fields=fields, into=None, values=values)
            )
    for key in sorted(before.keys - after.keys):
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
    """Every change of items and topics against earlier records given as JSON, sorted by
    (entity, op, id)."""
    return _sorted(
        diff(Records.of(items_before), _records(items), "item", merged)
        + diff(Records.of(topics_before), _records(topics), "topic")
    )


def changes_against(
    previous: Previous, items: Iterable[Item], topics: Iterable[Topic], merged: Mapping[str, str]
) -> list[Change]:
    """Every change of items and topics against the previous publish, sorted by (entity,
    op, id). A record whose digest is its earlier one's is not compared: on a daily run,
    nearly all."""
    return _sorted(
        diff(_earlier(previous, "item"), _records(items), "item", merged)
        + diff(_earlier(previous, "topic"), _records(topics), "topic")
    )


def _earlier(previous: Previous, entity: Entity) -> Records:
    found = previous.items if entity == "item" else previous.topics
    return Records(found.keys(), partial(previous.compared, entity), lambda k: found[k].digest)


def _records(records: Iterable[Item | Topic]) -> Records:
    """New records, each dumped as JSON only when it is compared with an earlier one, but
    its sources (which make no change: nine in ten of an item's values); its digest taken
    only when the earlier one has a digest to compare it with (see :func:`diff`)."""
    by_key = {r.id if isinstance(r, Item) else r.slug: r for r in records}

    def json(key: str) -> Mapping[str, Any]:
        return cast(Mapping[str, Any], to_builtins(structs.replace(by_key[key], sources=[])))

    return Records(by_key.keys(), json, lambda key: digest(by_key[key]))


def _sorted(changes: list[Change]) -> list[Change]:
    return sorted(changes, key=lambda c: (c.entity, c.op, c.id))


def previous_values(
    previous: Previous, changes: Iterable[Change]
) -> dict[tuple[str, str], dict[str, Any]]:
    """The title a removed or merged item had, for the report page (a changed record's
    values before and after are in its change)."""
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for c in changes:
        if c.entity == "item" and c.op in ("removed", "merged") and c.id in previous.items:
            out[(c.entity, c.id)] = {"title": previous.items[c.id].facts.title}
    return out


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


def shrink(previous: Previous, run: RunOutput) -> str | None:
    """Why this run would shrink the publish too much (more than 10 % of its items removed,
    or any of its topics: a scraper that saved half the pages must not empty a site), or
    None. Merged items are not removed: their resource lives on under another id."""
    if previous.sequence == 0:
        return None
    counts = run.report.changes
    items, topics = counts.items.removed, counts.topics.removed
    too_many = items > MAX_REMOVED_SHARE * len(previous.items)
    if not too_many and not topics:
        return None
    parts = []
    if too_many:
        share = 100 * items / len(previous.items)
        parts.append(
            f"{items} of the {len(previous.items)} items of the previous publish "
            f"({share:.0f} %, more than {100 * MAX_REMOVED_SHARE:.0f} %)"
        )
    if topics:
        parts.append(f"{topics} of its {len(previous.topics)} topic(s)")
    return "this run would remove " + " and ".join(parts)
