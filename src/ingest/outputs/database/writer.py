"""The database writer: a publish folder loaded into SQLite or PostgreSQL, in one
transaction.

``write`` checks the folder first (``checks``: nothing is touched for a folder that is
not a publish), then, in one transaction: takes the publish lock (``locking``: the first
statement), reads the schema version, creates or migrates the tables, makes sure of the
search table or indexes, walks the database beside the folder (``delta``), and — unless
the database already holds this publish — logs and applies the change set (``sync``) and
adds one ``publishes`` row and its ``changes`` rows. The same folder again changes
nothing, not even ``publishes``. On any failure the transaction rolls back; a SQLite file
this publish made is removed again if it holds nothing (``sqlite_file``).
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from msgspec import structs
from sqlalchemy import Engine, select
from sqlalchemy.engine import Connection

from ...errors import PublishError
from ...records.output import ChangeCounts, OpCounts
from ..faults import FAULT_ENV
from ..published import Published
from . import search
from . import tables as t
from .checks import Checked, check
from .connect import LOCK_TIMEOUT, one_line_errors, open_engine, parse_url, shown, sqlite_path
from .connect import use_wal as _use_wal
from .delta import delta
from .locking import Wait, pg_lock
from .sqlite_file import SqliteFile, claim, remove_if_unused, still_there
from .sync import apply, changed_log, counts, write_log
from .versions import create, migrate, schema_version

_NONE = ChangeCounts(items=OpCounts(0, 0, 0, 0), topics=OpCounts(0, 0, 0, 0))
#: Where tests stop a publish (``INGEST_FAULT=<point>:stop``, then SIGCONT) or terminate it
#: (``:term``): the SQLite file just made; the lock just taken (no row read yet).
FAULT_POINTS = ("db_file_made", "db_locked")


def _fault(point: str) -> None:
    wanted, _, action = os.environ.get(FAULT_ENV, "").partition(":")
    if wanted == point and action in ("stop", "term"):
        os.kill(os.getpid(), signal.SIGSTOP if action == "stop" else signal.SIGTERM)


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

    def __init__(
        self,
        url: str,
        lock_timeout: float = LOCK_TIMEOUT,
        say: Callable[[str], None] = lambda line: None,
    ) -> None:
        self.url = parse_url(url)
        self.where = shown(self.url)
        self.wait = Wait(self.where, lock_timeout, say)
        self.outcome = Outcome()

    def write(self, pub: Published) -> Outcome:
        checked = check(pub)
        path = sqlite_path(self.url)
        file = claim(path, self.where) if path is not None else None
        engine = open_engine(self.url, self.wait)
        try:
            if file is not None and file.made:
                _fault("db_file_made")
            try:
                with one_line_errors(self.url), engine.begin() as conn:
                    self.outcome = self._publish(conn, pub, checked, file)
            except PublishError:
                if file is not None:
                    still_there(file, self.where)  # the truer message, if that is what it was
                raise
            if file is not None:
                self._use_wal(engine)
        except BaseException:
            engine.dispose()
            if file is not None:
                remove_if_unused(file)
            raise
        engine.dispose()
        return self.outcome

    def _use_wal(self, engine: Engine) -> None:
        """After the commit: readers of later publishes never wait for the writer."""
        try:
            with one_line_errors(self.url):
                _use_wal(engine)
        except Exception as e:
            self.outcome.warnings.append(f"{e}; readers wait while the next publish commits")

    def _publish(
        self, conn: Connection, pub: Published, checked: Checked, file: SqliteFile | None
    ) -> Outcome:
        outcome = Outcome()
        if file is None:
            pg_lock(conn, self.wait)  # SQLite's lock came with BEGIN IMMEDIATE
        else:
            still_there(file, self.where)
        _fault("db_locked")
        version = schema_version(conn, self.where)
        if version is None:
            create(conn)
            outcome.created = True
        else:
            old = migrate(conn, version)
            outcome.migrated_from = old if old != t.DB_SCHEMA_VERSION else None
        # A new database gets its search table or indexes once its rows are in: made in
        # one pass, not kept up row by row through the first load.
        found = search.NONE if outcome.created else self._search(conn, outcome)
        items = delta(conn, pub, "items.jsonl", t.items, self.where)
        topics = delta(conn, pub, "topics.jsonl", t.topics, self.where)
        if not (items or topics) and _latest_digest(conn) == checked.digest:
            return outcome
        log = changed_log(conn, pub, items, topics)
        outcome.counts = counts(items, topics, checked.merged, log)
        outcome.publish_id = self._record(conn, checked, outcome.counts)
        write_log(conn, outcome.publish_id, items, topics, checked.merged, log)
        w = apply(conn, pub, checked, items, topics, found)
        outcome.inserted, outcome.updated, outcome.deleted = w.inserted, w.updated, w.deleted
        if outcome.created:
            self._search(conn, outcome)
        return outcome

    def _search(self, conn: Connection, outcome: Outcome) -> search.Search:
        found = search.ensure(conn, self.where)
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


def _latest_digest(conn: Connection) -> str | None:
    query = select(t.publishes.c.digest).order_by(t.publishes.c.id.desc()).limit(1)
    return conn.execute(query).scalar()
