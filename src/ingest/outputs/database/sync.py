"""The change set a publish logs and applies, in passes over the folder that each hold one
batch of records at a time.

The log first, while the database still holds the old rows: each changed record is
rebuilt from its rows (``readback``) and compared with its line, field by field, as
``changes.jsonl`` is made; a record whose only difference is its sources is rewritten but
logs no change. Then the writes: the rows of changed and removed records go (children
first), topics are written, then items with their sources and search rows, then — every
item row being there — ``related`` and ``item_topics``. Rows of a changed record are
updated in place and its list rows replaced; nothing is dropped and recreated. A topic's
positions belong to it, an item's rank and level to the item: membership rows go when
either side changes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from msgspec import structs
from sqlalchemy import bindparam, delete, update
from sqlalchemy.engine import Connection

from ...records.output import Change, ChangeCounts, Item, OpCounts, Topic
from ...records.serial import to_builtins
from ...state.changes import changed_fields
from ..published import Published
from . import readback, search
from . import rows as r
from . import tables as t
from .checks import Checked
from .delta import Delta

#: Records per batch: rows are written (and old records read back) a batch at a time.
BATCH = 250
T = TypeVar("T")


def changed_log(conn: Connection, pub: Published, items: Delta, topics: Delta) -> list[Change]:
    """The ``changed`` entries: records whose fields (sources aside) differ."""
    log = _changed(conn, pub, "topic", topics.changed_lines, readback.old_topics)
    return log + _changed(conn, pub, "item", items.changed_lines, readback.old_items)


def _changed(
    conn: Connection,
    pub: Published,
    entity: str,
    lines: set[int],
    old_of: Callable[[Connection, Iterable[str]], dict[str, readback.Record]],
) -> list[Change]:
    """Each record of these lines as JSON (sources aside), beside its rows read back."""
    model: type[Item | Topic] = Item if entity == "item" else Topic
    name = "items.jsonl" if entity == "item" else "topics.jsonl"
    wanted = pub.records(name, model, only=lines)
    out = []
    for batch in batches(wanted):
        new = {_key(rec): to_builtins(structs.replace(rec, sources=[])) for *_, rec in batch}
        old = old_of(conn, list(new))
        for key, record in new.items():
            fields = changed_fields(old[key], record)
            if fields:
                out.append(Change(entity, "changed", key, fields, None))  # type: ignore[arg-type]
    return out


def _key(record: Item | Topic) -> str:
    return record.id if isinstance(record, Item) else record.slug


def counts(items: Delta, topics: Delta, merged: dict[str, str], log: list[Change]) -> ChangeCounts:
    def of(entity: str, d: Delta, into: dict[str, str]) -> OpCounts:
        gone_into = sum(1 for k in d.removed if k in into)
        return OpCounts(
            added=len(d.added),
            changed=sum(1 for c in log if c.entity == entity),
            removed=len(d.removed) - gone_into,
            merged=gone_into,
        )

    return ChangeCounts(items=of("item", items, merged), topics=of("topic", topics, {}))


def write_log(
    conn: Connection,
    publish_id: int,
    items: Delta,
    topics: Delta,
    merged: dict[str, str],
    log: list[Change],
) -> None:
    """The ``changes`` rows of this publish, as ``changes.jsonl`` lines."""
    rows = _log_rows(publish_id, items, topics, merged, log)
    for batch in batches(rows, BATCH * 4):
        conn.execute(t.changes.insert(), batch)


def _log_rows(
    publish_id: int, items: Delta, topics: Delta, merged: dict[str, str], log: list[Change]
) -> Iterator[r.Row]:
    for entity, d, into in (("item", items, merged), ("topic", topics, {})):
        for key in d.added:
            yield _change(publish_id, entity, "added", key)
        for key in d.removed:
            target = into.get(key)
            op = "merged" if target is not None else "removed"
            yield _change(publish_id, entity, op, key, into=target)
    for c in log:
        yield _change(publish_id, c.entity, "changed", c.id, c.fields)


def _change(
    publish_id: int,
    entity: str,
    op: str,
    key: str,
    fields: list[str] | None = None,
    into: str | None = None,
) -> r.Row:
    return {
        "publish_id": publish_id,
        "entity": entity,
        "id": key,
        "op": op,
        "fields": fields or [],
        "into_id": into,
    }


@dataclass(slots=True)
class Writes:
    """Statements against one connection, and how many rows they wrote."""

    conn: Connection
    inserted: int = 0
    updated: int = 0
    deleted: int = 0

    def insert(self, table: Any, rows: Iterable[r.Row]) -> None:
        for batch in batches(rows, BATCH * 4):
            self.conn.execute(table.insert(), batch)
            self.inserted += len(batch)

    def update(self, table: Any, key: str, rows: list[r.Row]) -> None:
        """``UPDATE table SET <every other column> WHERE key = :_key``, once per row."""
        if rows:
            stmt = update(table).where(table.c[key] == bindparam("_key"))
            params = [{"_key": x[key], **{k: v for k, v in x.items() if k != key}} for x in rows]
            self.conn.execute(stmt, params)
            self.updated += len(rows)

    def delete(self, table: Any, key: Any, keys: Sequence[str]) -> None:
        for part in readback.chunks(keys):
            self.deleted += self.conn.execute(delete(table).where(key.in_(part))).rowcount


def apply(
    conn: Connection,
    pub: Published,
    checked: Checked,
    items: Delta,
    topics: Delta,
    found: search.Search,
) -> Writes:
    w = Writes(conn)
    gone_items = items.changed + items.removed
    gone_topics = topics.changed + topics.removed
    w.delete(t.related, t.related.c.item_id, gone_items)
    w.delete(t.sources, t.sources.c.item_id, gone_items)
    w.delete(t.topic_sources, t.topic_sources.c.slug, gone_topics)
    w.delete(t.item_topics, t.item_topics.c.item_id, gone_items)
    w.delete(t.item_topics, t.item_topics.c.slug, gone_topics)
    search.forget(conn, found, gone_items)
    w.delete(t.items, t.items.c.id, items.removed)
    w.delete(t.topics, t.topics.c.slug, topics.removed)
    _write_topics(w, pub, topics)
    _write_items(w, pub, items, found)
    _write_links(w, pub, checked, items, topics)
    return w


def _write_topics(w: Writes, pub: Published, d: Delta) -> None:
    fresh = pub.records("topics.jsonl", Topic, only=d.fresh_lines)
    for batch in batches(fresh):
        new = [r.topic_row(tp, r.digest(line)) for n, line, tp in batch if n in d.added_lines]
        old = [r.topic_row(tp, r.digest(line)) for n, line, tp in batch if n in d.changed_lines]
        w.insert(t.topics, new)
        w.update(t.topics, "slug", old)
        w.insert(t.topic_sources, (x for *_, tp in batch for x in _sources(tp)))


def _write_items(w: Writes, pub: Published, d: Delta, found: search.Search) -> None:
    fresh = pub.records("items.jsonl", Item, only=d.fresh_lines)
    for batch in batches(fresh):
        new = [r.item_row(i, r.digest(line)) for n, line, i in batch if n in d.added_lines]
        old = [r.item_row(i, r.digest(line)) for n, line, i in batch if n in d.changed_lines]
        w.insert(t.items, new)
        w.update(t.items, "id", old)
        w.insert(t.sources, (x for *_, i in batch for x in _sources(i)))
        search.index(w.conn, found, [i.id for *_, i in batch])


def _write_links(w: Writes, pub: Published, checked: Checked, items: Delta, topics: Delta) -> None:
    """``related`` and ``item_topics`` rows of added and changed items, and the membership
    rows of added and changed topics."""
    slugs = {*topics.added, *topics.changed}
    members = {n for slug in slugs for n in checked.members[slug]}
    fresh = items.fresh_lines
    for batch in batches(pub.records("items.jsonl", r.Links, only=fresh | members)):
        related: list[r.Row] = []
        memberships: list[r.Row] = []
        for n, _, item in batch:

            def position(slug: str, n: int = n) -> int:
                return checked.members[slug].index(n)

            rows = r.item_topic_rows(item, position)
            if n in fresh:
                related += r.related_rows(item)
                memberships += rows
            else:
                memberships += [row for row in rows if row["slug"] in slugs]
        w.insert(t.related, related)
        w.insert(t.item_topics, memberships)


def _sources(record: Item | Topic) -> Iterator[r.Row]:
    if isinstance(record, Item):
        return r.source_rows("item_id", record.id, record.sources)
    return r.source_rows("slug", record.slug, record.sources)


def batches(values: Iterable[T], size: int = BATCH) -> Iterator[list[T]]:
    batch: list[T] = []
    for value in values:
        batch.append(value)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch
