"""A publish's records as rows and back, the folder checked before a row is written, and
the database walked beside the folder (what to add, update and delete)."""

from __future__ import annotations

import hashlib
from array import array
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import msgspec
from msgspec import structs
from sqlalchemy import Column, Table, select
from sqlalchemy.engine import Connection

import ingest.database.tables as tb
from ingest.contract import Change, Item, ItemTopic, Reject, Topic
from ingest.errors import PublishError, UsageError
from ingest.reader import Published, ReportHead

Row = dict[str, Any]
Record = dict[str, Any]
S = TypeVar("S", bound=msgspec.Struct)


class Links(msgspec.Struct, frozen=True):
    """What an item's ``item_topics`` and ``related`` rows need of its line (the rest of
    the line is skipped, not parsed)."""

    id: str
    topics: list[ItemTopic]
    related: list[str]


def digest(line: bytes) -> str:
    return hashlib.sha256(line).hexdigest()


def _as_is(table: Table, record: Item | Topic) -> Row:
    """The columns of ``table`` named as a field of the record: that field, as it is."""
    names = record.__struct_fields__
    return {c.name: getattr(record, c.name) for c in table.c if c.name in names}


def item_row(item: Item, line: bytes) -> Row:
    est = item.published_estimate
    return {
        **_as_is(tb.items, item),
        "published_earliest": est.earliest if est else None,
        "published_latest": est.latest if est else None,
        "digest": digest(line),
    }


def topic_row(topic: Topic, line: bytes) -> Row:
    site, declared = topic.site, topic.declared
    return {
        **_as_is(tb.topics, topic),
        "site_name": site.name if site else None,
        "site_url": site.url if site else None,
        "declared_count": declared.count if declared else None,
        "declared_levels": dict(declared.levels) if declared else None,
        "digest": digest(line),
    }


def item_topic_rows(item: Item | Links, n: int, members: Members) -> Iterator[Row]:
    """The memberships of the item on line ``n``; a position: its index in the topic's items."""
    for t in item.topics:
        yield {"item_id": item.id, "position": members[t.slug].index(n), **structs.asdict(t)}


def related_rows(item: Item | Links) -> Iterator[Row]:
    for n, other in enumerate(item.related):
        yield {"item_id": item.id, "position": n, "related_id": other}


def source_rows(record: Item | Topic) -> Iterator[Row]:
    """Rows of ``sources`` (an item's) or ``topic_sources`` (a topic's)."""
    key = {"item_id": record.id} if isinstance(record, Item) else {"slug": record.slug}
    for n, s in enumerate(record.sources):
        yield {**key, "position": n, **structs.asdict(s)}


def old_items(conn: Connection, ids: Iterable[str]) -> dict[str, Record]:
    """Items as their JSON has them (sources aside), from their rows."""
    out: dict[str, Record] = {}
    for part in tb.batches(sorted(ids)):
        for row in _rows(conn, tb.items, tb.items.c.id, part):
            out[row["id"]] = _item(row)
        for row in _rows(conn, tb.item_topics, tb.item_topics.c.item_id, part):
            membership = {k: row[k] for k in ("slug", "rank", "level", "level_label")}
            out[row["item_id"]]["topics"].append(membership)
        for row in _rows(conn, tb.related, tb.related.c.item_id, part, "position"):
            out[row["item_id"]]["related"].append(row["related_id"])
    for record in out.values():
        record["topics"].sort(key=lambda m: m["slug"])
    return out


def old_topics(conn: Connection, slugs: Iterable[str]) -> dict[str, Record]:
    """Topics as their JSON has them (sources aside), from their rows."""
    out: dict[str, Record] = {}
    for part in tb.batches(sorted(slugs)):
        for row in _rows(conn, tb.topics, tb.topics.c.slug, part):
            out[row["slug"]] = _topic(row)
        for row in _rows(conn, tb.item_topics, tb.item_topics.c.slug, part, "position"):
            out[row["slug"]]["items"].append(row["item_id"])
    return out


def _rows(
    conn: Connection, table: Table, key: Any, part: Sequence[str], order: str | None = None
) -> Iterator[Record]:
    query = select(table).where(key.in_(part))
    if order is not None:  # a number: no collation involved
        query = query.order_by(key, table.c[order])
    return (dict(row) for row in conn.execute(query).mappings())


def _item(row: Record) -> Record:
    earliest, latest = row.pop("published_earliest"), row.pop("published_latest")
    row.pop("digest")
    estimate = None
    if earliest is not None and latest is not None:
        estimate = {"earliest": earliest.isoformat(), "latest": latest.isoformat()}
    collected = row["collected_on"]
    return {
        **row,
        "collected_on": collected.isoformat() if collected is not None else None,
        "published_estimate": estimate,
        "topics": [],
        "related": [],
    }


def _topic(row: Record) -> Record:
    has_site = row["site_name"] is not None or row["site_url"] is not None
    site = {"name": row["site_name"], "url": row["site_url"]} if has_site else None
    levels = row["declared_levels"]
    declared = None if levels is None else {"count": row["declared_count"], "levels": levels}
    keep = ("slug", "name", "description", "category", "url", "notice", "order_note")
    return {**{k: row[k] for k in keep}, "site": site, "declared": declared, "items": []}


#: slug → line numbers (from 1) in items.jsonl of the topic's items, in the topic's order.
Members = dict[str, "array[int]"]


@dataclass(slots=True)
class Checked:
    """What the database writer needs of a checked folder besides its files."""

    head: ReportHead
    digest: str
    items: int
    topics: int
    rejects: int
    merged: dict[str, str]  # old id → the id it was merged into, from changes.jsonl
    members: Members


def check(pub: Published) -> Checked:
    """The folder's records parsed and their references checked; :class:`UsageError`
    (one line, naming the file) at the first thing wrong."""
    head = pub.head()
    ordinal, claimed = _items(pub)
    members = _topics(pub, ordinal)
    _agree(pub.folder, ordinal, claimed, members)
    changes = (change for *_, change in pub.records("changes.jsonl", Change))
    merged = {c.id: c.into for c in changes if c.op == "merged" and c.into is not None}
    rejects = sum(1 for _ in pub.records("rejects.jsonl", Reject))
    return Checked(head, pub.digest(), len(ordinal), len(members), rejects, merged, members)


def _items(pub: Published) -> tuple[dict[str, int], Members]:
    """id → its line number; slug → line numbers of the items that list the topic."""
    ordinal: dict[str, int] = {}
    claimed: Members = {}
    forward: dict[str, str] = {}  # related id not seen yet → the first item naming it
    for n, item in _ascending(pub, "items.jsonl", Item, "id"):
        ordinal[item.id] = n
        _unique(f"{pub.folder}: item {item.id}: topics", [t.slug for t in item.topics])
        for t in item.topics:
            claimed.setdefault(t.slug, array("I")).append(n)
        for other in item.related:
            if other not in ordinal:
                forward.setdefault(other, item.id)
    for other, item_id in forward.items():
        if other not in ordinal:
            raise UsageError(
                f"{pub.folder}: item {item_id}: related {other!r} is not in the folder"
            )
    return ordinal, claimed


def _topics(pub: Published, ordinal: dict[str, int]) -> Members:
    members: Members = {}
    for _, topic in _ascending(pub, "topics.jsonl", Topic, "slug"):
        _unique(f"{pub.folder}: topic {topic.slug}: items", topic.items)
        for item_id in topic.items:
            if item_id not in ordinal:
                raise UsageError(
                    f"{pub.folder}: topic {topic.slug}: item {item_id!r} is not in the folder"
                )
        members[topic.slug] = array("I", (ordinal[i] for i in topic.items))
    return members


def _agree(folder: Path, ordinal: dict[str, int], claimed: Members, members: Members) -> None:
    """Items and topics name the same (item, topic) pairs."""
    odd = [
        (n, slug)
        for slug in claimed.keys() | members.keys()
        for n in set(claimed.get(slug, ())) ^ set(members.get(slug, ()))
    ]
    if not odd:
        return
    ids = {n: item_id for item_id, n in ordinal.items()}
    pairs = sorted((ids[n], slug) for n, slug in odd)
    unknown = sorted(claimed.keys() - members.keys())
    if unknown:
        item_id, slug = next(p for p in pairs if p[1] == unknown[0])
        raise UsageError(f"{folder}: item {item_id}: topic {slug!r} is not in the folder")
    item_id, slug = pairs[0]
    raise UsageError(
        f"{folder}: item {item_id} and topic {slug} disagree on membership "
        f"({len(pairs)} such pair(s))"
    )


def _ascending(pub: Published, name: str, model: type[S], key: str) -> Iterator[tuple[int, S]]:
    """(line number, record) of each line; keys strictly ascending in code point order, as
    ``ingest run`` writes them."""
    previous = ""
    for n, _, record in pub.records(name, model):
        this = getattr(record, key)
        if previous and this <= previous:
            how = "appears twice" if this == previous else f"comes after {previous!r}"
            raise UsageError(
                f"{pub.folder / name}: line {n}: {key} {this!r} {how}; a publish lists each "
                f"once, sorted by {key}"
            )
        previous = this
        yield n, record


def _unique(where: str, keys: list[str]) -> None:
    if len(set(keys)) < len(keys):
        twice = next(key for n, key in enumerate(keys) if key in keys[:n])
        raise UsageError(f"{where}: {twice!r} appears twice")


@dataclass(slots=True)
class Delta:
    """Keys to insert, update and delete in one table, and the line numbers (from 1) of
    the added and changed records in the folder's file."""

    added: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    added_lines: set[int] = field(default_factory=set)
    changed_lines: set[int] = field(default_factory=set)

    def __bool__(self) -> bool:
        return bool(self.added or self.changed or self.removed)

    @property
    def fresh_lines(self) -> set[int]:
        return self.added_lines | self.changed_lines


def delta(conn: Connection, pub: Published, name: str, table: Table, where: str) -> Delta:
    key = table.c.id if "id" in table.c else table.c.slug
    column = str(key.name)
    only_key = msgspec.defstruct("Key", [(column, str)])  # the rest of a line: not parsed
    folder = ((getattr(k, column), digest(line)) for _, line, k in pub.records(name, only_key))
    return walk(_stored(conn, table, key, where), folder)


def walk(stored: Iterable[tuple[str, str]], folder: Iterable[tuple[str, str]]) -> Delta:
    """Both sides (key, digest), ascending by key; the folder's in line order."""
    d = Delta()
    rows = iter(stored)
    row = next(rows, None)
    for n, (key, line_digest) in enumerate(folder, 1):
        while row is not None and row[0] < key:
            d.removed.append(row[0])
            row = next(rows, None)
        if row is None or key < row[0]:
            d.added.append(key)
            d.added_lines.add(n)
            continue
        if row[1] != line_digest:
            d.changed.append(key)
            d.changed_lines.add(n)
        row = next(rows, None)
    if row is not None:
        d.removed += [row[0], *(k for k, _ in rows)]
    return d


def _stored(
    conn: Connection, table: Table, key: Column[str], where: str
) -> Iterator[tuple[str, str]]:
    collation = "C" if conn.dialect.name == "postgresql" else "BINARY"
    query = select(key, table.c.digest).order_by(key.collate(collation))
    previous: str | None = None
    for k, stored in conn.execute(query.execution_options(yield_per=5000)):
        if previous is not None and k <= previous:
            raise PublishError(
                f"{where}: {table.name} came back out of code point order ({previous!r}, "
                f"then {k!r}); nothing written"
            )
        previous = k
        yield k, stored
