"""The change set a publish applies, derived from the database itself, and applying it.

The database's ``digest`` per item and topic is compared with the folder's: new keys are
added, missing ones removed, different digests changed. This is right however many runs
the database lags behind the folder, and equals the folder's ``changes.jsonl`` when the
database holds the previous publish. Rows of a changed record are updated in place and
its list rows (topics, related, sources) replaced; nothing is dropped and recreated.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from sqlalchemy import bindparam, delete, select, update
from sqlalchemy.engine import Connection

from ...records.output import Change, Item, Topic
from ...state.changes import Records, diff
from . import readback
from . import rows as r
from . import tables as t


@dataclass(slots=True)
class Delta:
    """Keys to insert, update and delete in one table."""

    added: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.added or self.changed or self.removed)


def delta(before: Mapping[str, str], after: Mapping[str, str]) -> Delta:
    """``before`` / ``after``: key → digest."""
    return Delta(
        added=sorted(after.keys() - before.keys()),
        changed=sorted(k for k in after.keys() & before.keys() if before[k] != after[k]),
        removed=sorted(before.keys() - after.keys()),
    )


def stored_digests(conn: Connection) -> tuple[dict[str, str], dict[str, str]]:
    """(item id → digest, topic slug → digest) as the database holds them."""
    items = dict(conn.execute(select(t.items.c.id, t.items.c.digest)).all())
    topics = dict(conn.execute(select(t.topics.c.slug, t.topics.c.digest)).all())
    return items, topics


@dataclass(slots=True)
class Folder:
    """A run's records with their lines in the folder and the lines' digests, keyed."""

    items: dict[str, Item]
    topics: dict[str, Topic]
    item_lines: dict[str, bytes]
    topic_lines: dict[str, bytes]
    item_digests: dict[str, str]
    topic_digests: dict[str, str]
    merged: dict[str, str]  # old id → the id it was merged into, from changes.jsonl


def change_log(conn: Connection, folder: Folder, items: Delta, topics: Delta) -> list[Change]:
    """The changes the database sees, as ``changes.jsonl`` lines sorted by (entity, op, id).
    A row whose only difference is its sources is rewritten but logs no change."""
    old_i = readback.old_items(conn, items.changed)
    old_t = readback.old_topics(conn, topics.changed)
    log = _diff("item", items, old_i, folder.item_lines, folder.merged)
    log += _diff("topic", topics, old_t, folder.topic_lines, {})
    return sorted(log, key=lambda c: (c.entity, c.op, c.id))


def _diff(
    entity: Literal["item", "topic"],
    d: Delta,
    old: Mapping[str, Any],
    lines: Mapping[str, bytes],
    merged: Mapping[str, str],
) -> list[Change]:
    """The change set's own :func:`diff`, on what the delta touched: added and removed rows
    need no content, changed ones are compared as the database and the folder hold them."""
    before = {k: {} for k in d.removed} | dict(old)
    after = {k: {} for k in d.added} | {k: json.loads(lines[k]) for k in old}
    return diff(Records.of(before), Records.of(after), entity, merged)


@dataclass(slots=True)
class Writes:
    """Statements against one connection, and how many rows they wrote."""

    conn: Connection
    inserted: int = 0
    updated: int = 0
    deleted: int = 0

    def insert(self, table: Any, rows: Iterable[r.Row]) -> None:
        batch = list(rows)
        if batch:
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


def apply(conn: Connection, folder: Folder, items: Delta, topics: Delta) -> Writes:
    """Delete the rows of removed and changed records (children first), then write the
    rows of added and changed ones (parents first). A topic's positions belong to it, an
    item's rank and level to the item: membership rows go when either side changes."""
    w = Writes(conn)
    gone_items = items.changed + items.removed
    gone_topics = topics.changed + topics.removed
    w.delete(t.related, t.related.c.item_id, gone_items)
    w.delete(t.sources, t.sources.c.item_id, gone_items)
    w.delete(t.topic_sources, t.topic_sources.c.slug, gone_topics)
    w.delete(t.item_topics, t.item_topics.c.item_id, gone_items)
    w.delete(t.item_topics, t.item_topics.c.slug, gone_topics)
    w.delete(t.items, t.items.c.id, items.removed)
    w.delete(t.topics, t.topics.c.slug, topics.removed)
    _write_topics(w, folder, topics)
    _write_items(w, folder, items)
    w.insert(t.item_topics, _memberships(folder, items, topics))
    return w


def _memberships(folder: Folder, items: Delta, topics: Delta) -> list[r.Row]:
    """The membership rows to write: every row of an added or changed item or topic."""
    touched = set(items.added) | set(items.changed)
    for slug in topics.added + topics.changed:
        touched.update(folder.topics[slug].items)
    positions = r.topic_positions(folder.topics.values())
    wanted = {*topics.added, *topics.changed}
    fresh = {*items.added, *items.changed}
    out = []
    for item_id in sorted(touched):
        rows = r.item_topic_rows(folder.items[item_id], positions)
        out += [row for row in rows if item_id in fresh or row["slug"] in wanted]
    return out


def _write_topics(w: Writes, folder: Folder, d: Delta) -> None:
    def row(slug: str) -> r.Row:
        return r.topic_row(folder.topics[slug], folder.topic_digests[slug])

    w.insert(t.topics, [row(k) for k in d.added])
    w.update(t.topics, "slug", [row(k) for k in d.changed])
    fresh = [folder.topics[k] for k in d.added + d.changed]
    w.insert(
        t.topic_sources, [x for tp in fresh for x in r.source_rows("slug", tp.slug, tp.sources)]
    )


def _write_items(w: Writes, folder: Folder, d: Delta) -> None:
    def row(item_id: str) -> r.Row:
        return r.item_row(folder.items[item_id], folder.item_digests[item_id])

    w.insert(t.items, [row(k) for k in d.added])
    w.update(t.items, "id", [row(k) for k in d.changed])
    fresh = [folder.items[k] for k in d.added + d.changed]
    w.insert(t.related, [x for item in fresh for x in r.related_rows(item)])
    w.insert(t.sources, [x for i in fresh for x in r.source_rows("item_id", i.id, i.sources)])
