"""Loading a publish: the change set logged and applied in batches, in one transaction per
publish."""

from __future__ import annotations

import os
import signal
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import msgspec
from msgspec import structs
from sqlalchemy import bindparam, delete, select, update
from sqlalchemy.engine import Connection

import ingest.database.connect as db
import ingest.database.rows as r
import ingest.database.tables as t
from ingest.contract import Change, ChangeCounts, Item, Topic, Values, to_builtins
from ingest.database.rows import Checked, Delta
from ingest.database.tables import batches
from ingest.errors import PublishError
from ingest.publish.signals import FAULT_ENV
from ingest.reader import Published
from ingest.state.changes import changed_fields, counts

#: Records per batch: rows are written (and old records read back) a batch at a time.
BATCH = 250


def _changed(conn: Connection, pub: Published, entity: str, lines: set[int]) -> list[Change]:
    """The ``changed`` entries of these lines: each record as JSON (sources aside), beside
    its rows read back; a changed field's values before and after as that JSON has them
    (null: no value)."""
    model: type[Item | Topic] = Item if entity == "item" else Topic
    old_of = r.old_items if entity == "item" else r.old_topics
    out = []
    for batch in batches(pub.records(f"{entity}s.jsonl", model, only=lines), BATCH):
        new = {_key(rec): to_builtins(structs.replace(rec, sources=[])) for *_, rec in batch}
        old = old_of(conn, list(new))
        for key, record in new.items():
            if fields := changed_fields(old[key], record):
                values = {f: Values(old[key].get(f), record.get(f)) for f in fields}
                out.append(Change(entity, "changed", key, fields, None, values))  # type: ignore[arg-type]
    return out


def _key(record: Item | Topic) -> str:
    return record.id if isinstance(record, Item) else record.slug


def _added_and_gone(items: Delta, topics: Delta, merged: dict[str, str]) -> list[Change]:
    """The ``added``, ``removed`` and ``merged`` lines of this publish's change log."""
    log = []
    for entity, d, into in (("item", items, merged), ("topic", topics, {})):
        log += [Change(entity, "added", key, [], None) for key in d.added]  # type: ignore[arg-type]
        for key in d.removed:
            op = "merged" if key in into else "removed"
            log.append(Change(entity, op, key, [], into.get(key)))  # type: ignore[arg-type]
    return log


def log_rows(publish_id: int, log: list[Change]) -> Iterator[r.Row]:
    """The ``changes`` rows of this publish: ``changes.jsonl``'s lines."""
    for c in log:
        yield {
            "publish_id": publish_id,
            "entity": c.entity,
            "id": c.id,
            "op": c.op,
            "fields": c.fields,
            "into_id": c.into,
            "field_values": msgspec.to_builtins(c.values),
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
        for part in batches(keys):
            self.deleted += self.conn.execute(delete(table).where(key.in_(part))).rowcount


def apply(
    conn: Connection, pub: Published, checked: Checked, items: Delta, topics: Delta, found: t.Search
) -> Writes:
    w = Writes(conn)
    gone_items = items.changed + items.removed
    gone_topics = topics.changed + topics.removed
    w.delete(t.related, t.related.c.item_id, gone_items)
    w.delete(t.sources, t.sources.c.item_id, gone_items)
    w.delete(t.topic_sources, t.topic_sources.c.slug, gone_topics)
    w.delete(t.item_topics, t.item_topics.c.item_id, gone_items)
    w.delete(t.item_topics, t.item_topics.c.slug, gone_topics)
    t.forget(conn, found, gone_items)
    w.delete(t.items, t.items.c.id, items.removed)
    w.delete(t.topics, t.topics.c.slug, topics.removed)
    for tps in batches(pub.records("topics.jsonl", Topic, only=topics.fresh_lines), BATCH):
        rows = {n: r.topic_row(tp, line) for n, line, tp in tps}
        w.insert(t.topics, [rows[n] for n in rows if n in topics.added_lines])
        w.update(t.topics, "slug", [rows[n] for n in rows if n in topics.changed_lines])
        w.insert(t.topic_sources, (x for *_, tp in tps for x in r.source_rows(tp)))
    for its in batches(pub.records("items.jsonl", Item, only=items.fresh_lines), BATCH):
        rows = {n: r.item_row(i, line) for n, line, i in its}
        w.insert(t.items, [rows[n] for n in rows if n in items.added_lines])
        w.update(t.items, "id", [rows[n] for n in rows if n in items.changed_lines])
        w.insert(t.sources, (x for *_, i in its for x in r.source_rows(i)))
        t.index(conn, found, [i.id for *_, i in its])
    _write_links(w, pub, checked, items, topics)
    return w


def _write_links(w: Writes, pub: Published, checked: Checked, items: Delta, topics: Delta) -> None:
    """``related`` and ``item_topics`` rows of added and changed items, and the membership
    rows of added and changed topics."""
    slugs = {*topics.added, *topics.changed}
    members = {n for slug in slugs for n in checked.members[slug]}
    fresh = items.fresh_lines
    for batch in batches(pub.records("items.jsonl", r.Links, only=fresh | members), BATCH):
        related: list[r.Row] = []
        memberships: list[r.Row] = []
        for n, _, item in batch:
            rows = r.item_topic_rows(item, n, checked.members)
            if n in fresh:
                related += r.related_rows(item)
                memberships += rows
            else:
                memberships += [row for row in rows if row["slug"] in slugs]
        w.insert(t.related, related)
        w.insert(t.item_topics, memberships)


def _fault(point: str) -> None:
    """Where tests stop a publish (``INGEST_FAULT=<point>:stop``, then SIGCONT) or terminate
    it (``:term``): ``db_file_made`` (the SQLite file just made), ``db_locked`` (the lock just
    taken, no row read yet)."""
    wanted, _, action = os.environ.get(FAULT_ENV, "").partition(":")
    if wanted == point and action in ("stop", "term"):
        os.kill(os.getpid(), signal.SIGSTOP if action == "stop" else signal.SIGTERM)


_NONE = counts([])


@dataclass(slots=True)
class Outcome:
    """What a publish did to the database."""

    publish_id: int | None = None  # None: the database already held this publish
    counts: ChangeCounts = _NONE
    inserted: int = 0  # rows, all tables but publishes and changes
    updated: int = 0
    deleted: int = 0
    created: bool = False
    migrated_from: int | None = None
    search_made: bool = False  # into a database that had none
    warnings: list[str] = field(default_factory=list)


class DatabaseWriter:
    """Publishes a folder into the database at ``url`` (``sqlite:///PATH``,
    ``postgresql://``); waits at most ``lock_timeout`` seconds for another publish, saying
    so through ``say``."""

    def __init__(self, url: str, lock_timeout: float, say: Callable[[str], None]) -> None:
        self.url = db.parse_url(url)
        self.where = db.shown(self.url)
        self.wait = db.Wait(self.where, lock_timeout, say)
        self.outcome = Outcome()

    def write(self, pub: Published) -> Outcome:
        checked = r.check(pub)
        sqlite = self.url.get_backend_name() == "sqlite"
        file = db.claim(Path(self.url.database or ""), self.where) if sqlite else None
        engine = db.open_engine(self.url, self.wait)
        try:
            if file is not None and file.made:
                _fault("db_file_made")
            try:
                with db.one_line_errors(self.url), engine.begin() as conn:
                    self.outcome = self._publish(conn, pub, checked, file)
            except PublishError:
                if file is not None:
                    db.still_there(file, self.where)  # the truer message, if that is what it was
                raise
            if file is not None:
                try:  # after the commit: readers of later publishes never wait for the writer
                    with db.one_line_errors(self.url):
                        db.use_wal(engine)
                except Exception as e:
                    note = "readers wait while the next publish commits"
                    self.outcome.warnings.append(f"{e}; {note}")
        except BaseException:
            engine.dispose()
            if file is not None:
                db.remove_if_unused(file)
            raise
        engine.dispose()
        return self.outcome

    def _publish(
        self, conn: Connection, pub: Published, checked: Checked, file: db.SqliteFile | None
    ) -> Outcome:
        outcome = Outcome()
        if file is None:
            db.pg_lock(conn, self.wait)  # SQLite's lock came with BEGIN IMMEDIATE
        else:
            db.still_there(file, self.where)
        _fault("db_locked")
        version = t.schema_version(conn, self.where)
        if version is None:
            t.create(conn)
            outcome.created = True
        else:
            t.migrate(conn, version)
            outcome.migrated_from = version if version != t.DB_SCHEMA_VERSION else None
        # A new database gets its search table or indexes once its rows are in: made in
        # one pass, not kept up row by row through the first load.
        found = t.NONE if outcome.created else self._search(conn, outcome)
        items = r.delta(conn, pub, "items.jsonl", t.items, self.where)
        topics = r.delta(conn, pub, "topics.jsonl", t.topics, self.where)
        latest = select(t.publishes.c.digest).order_by(t.publishes.c.id.desc()).limit(1)
        if not (items or topics) and conn.execute(latest).scalar() == checked.digest:
            return outcome
        log = _added_and_gone(items, topics, checked.merged)
        log += _changed(conn, pub, "topic", topics.changed_lines)
        log += _changed(conn, pub, "item", items.changed_lines)
        outcome.counts = counts(log)
        outcome.publish_id = self._record(conn, checked, outcome.counts)
        for batch in batches(log_rows(outcome.publish_id, log), BATCH * 4):
            conn.execute(t.changes.insert(), batch)
        w = apply(conn, pub, checked, items, topics, found)
        outcome.inserted, outcome.updated, outcome.deleted = w.inserted, w.updated, w.deleted
        if outcome.created:
            self._search(conn, outcome)
        return outcome

    def _search(self, conn: Connection, outcome: Outcome) -> t.Search:
        found = t.ensure(conn, self.where)
        outcome.warnings += [found.warning] if found.warning else []
        outcome.search_made = found.made and not outcome.created
        return found

    def _record(self, conn: Connection, checked: Checked, n: ChangeCounts) -> int:
        head = checked.head
        row = {
            "published_at": datetime.now(UTC).replace(microsecond=0),
            "sequence": head.run.sequence,
            "mode": head.run.mode,
            "crawled_at": head.run.crawled_at,
            "schema_version": head.schema_version,
            "ingest_version": head.ingest_version,
            "items": checked.items,
            "topics": checked.topics,
            "rejects": checked.rejects,
            **{f"items_{op}": v for op, v in structs.asdict(n.items).items()},
            **{f"topics_{op}": v for op, v in structs.asdict(n.topics).items()},
            "digest": checked.digest,
        }
        query = t.publishes.insert().values(row).returning(t.publishes.c.id)
        return int(conn.execute(query).scalar_one())

    def summary(self, folder: Path) -> str:
        """One line: what the last ``write`` did."""
        o = self.outcome
        notes = ["new database"] if o.created else []
        if o.migrated_from is not None:
            notes.append(f"migrated from database schema {o.migrated_from}")
        if o.search_made:
            sqlite = self.url.get_backend_name() == "sqlite"
            notes.append(f"search {'table' if sqlite else 'indexes'} added")
        if o.publish_id is None:
            done = f"no record changed ({', '.join(notes)})" if notes else "nothing changed"
            return f"{self.where} already holds the publish in {folder}: {done}"
        tally = "; ".join(
            f"{name} " + ", ".join(f"{v} {op}" for op, v in structs.asdict(c).items())
            for name, c in (("items", o.counts.items), ("topics", o.counts.topics))
        )
        note = f" ({', '.join(notes)})" if notes else ""
        written = f"rows {o.inserted} inserted, {o.updated} updated, {o.deleted} deleted"
        return (
            f"published {folder} into {self.where} as publish {o.publish_id}{note}: "
            f"{tally}; {written}"
        )
