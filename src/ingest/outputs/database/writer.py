"""The database writer: a run's records published into SQLite or PostgreSQL, in one
transaction.

Entered, it checks the URL and the database (ingest's, not newer) before anything is read
or written. ``write`` then, in one transaction: creates or migrates the tables, takes the
publish lock, derives the change set from the rows' digests, applies it, and adds one
``publishes`` row and its ``changes`` rows. The same folder again changes nothing, not even
``publishes``. On any failure the transaction rolls back; a SQLite file this writer created
is removed again.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Self

from msgspec import structs
from sqlalchemy import Engine, select
from sqlalchemy.engine import Connection

from ...records.output import Change
from ...records.run import FILES, RunOutput, content_bytes
from ...state.changes import counts
from ..render import render
from . import tables as t
from .connect import one_line_errors, open_engine, parse_url, shown, sqlite_path, use_wal
from .rows import digest
from .sync import Delta, Folder, apply, change_log, delta, stored_digests
from .versions import create, lock, migrate, schema_version


def files_digest(files: dict[str, bytes]) -> str:
    """sha256 of the files' ``sha256sum`` lines, in name order: in the folder,
    ``sha256sum changes.jsonl items.jsonl rejects.jsonl report.json topics.jsonl | sha256sum``."""
    lines = "".join(f"{digest(files[name])}  {name}\n" for name in sorted(FILES))
    return hashlib.sha256(lines.encode()).hexdigest()


@dataclass(slots=True)
class Outcome:
    """What a publish did to the database."""

    publish_id: int | None = None  # None: the database already held this publish
    log: list[Change] = field(default_factory=list)
    inserted: int = 0  # rows, all tables but publishes and changes
    updated: int = 0
    deleted: int = 0
    created: bool = False
    migrated_from: int | None = None


class DatabaseWriter:
    """Publishes a run into the database at ``url`` (``sqlite:///PATH``, ``postgresql://``)."""

    def __init__(self, url: str) -> None:
        self.url = parse_url(url)
        self.where = shown(self.url)
        self.outcome = Outcome()
        self._engine: Engine | None = None

    def __enter__(self) -> Self:
        self._engine = open_engine(self.url)
        if not self._is_new_file():
            with one_line_errors(self.url), self._engine.connect() as conn:
                schema_version(conn, self.where)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._engine is not None:
            self._engine.dispose()

    def _is_new_file(self) -> bool:
        path = sqlite_path(self.url)
        return path is not None and (not path.exists() or path.stat().st_size == 0)

    def write(self, run: RunOutput) -> None:
        assert self._engine is not None, "enter the writer first"
        rendered = render(run)  # lazily: only the files digested are made
        files = {name: content_bytes(rendered[name]) for name in FILES}
        folder = _folder(run, files)
        path = sqlite_path(self.url)
        created = path if path is not None and not path.exists() else None
        try:
            with one_line_errors(self.url):
                use_wal(self._engine)
                with self._engine.begin() as conn:
                    self.outcome = self._publish(conn, run, folder, files_digest(files))
        except BaseException:
            if created is not None:
                self._engine.dispose()
                _remove_sqlite(created)
            raise

    def summary(self, folder: Path) -> str:
        """One line: what the last ``write`` did."""
        o = self.outcome
        if o.publish_id is None:
            return f"{self.where} already holds the publish in {folder}: nothing changed"
        notes = ["new database"] if o.created else []
        if o.migrated_from is not None:
            notes.append(f"migrated from database schema {o.migrated_from}")
        n = counts(o.log)
        tally = "; ".join(
            f"{name} " + ", ".join(f"{v} {op}" for op, v in structs.asdict(c).items())
            for name, c in (("items", n.items), ("topics", n.topics))
        )
        note = f" ({', '.join(notes)})" if notes else ""
        written = f"rows {o.inserted} inserted, {o.updated} updated, {o.deleted} deleted"
        return (
            f"published {folder} into {self.where} as publish {o.publish_id}{note}: "
            f"{tally}; {written}"
        )

    def _publish(self, conn: Connection, run: RunOutput, folder: Folder, digest: str) -> Outcome:
        outcome = Outcome()
        version = schema_version(conn, self.where)
        if version is None:
            create(conn)
            outcome.created = True
        else:
            lock(conn)
            old = migrate(conn, version)
            outcome.migrated_from = old if old != t.DB_SCHEMA_VERSION else None
        items, topics = _deltas(conn, folder)
        if not (items or topics) and _latest_digest(conn) == digest:
            return outcome
        outcome.log = change_log(conn, folder, items, topics)
        w = apply(conn, folder, items, topics)
        outcome.inserted, outcome.updated, outcome.deleted = w.inserted, w.updated, w.deleted
        outcome.publish_id = self._record(conn, run, outcome.log, digest)
        return outcome

    def _record(self, conn: Connection, run: RunOutput, log: list[Change], digest: str) -> int:
        info, n = run.report.run, counts(log)
        row = {
            "published_at": datetime.now(UTC),
            "sequence": info.sequence,
            "mode": info.mode,
            "crawled_at": info.crawled_at,
            "schema_version": run.report.schema_version,
            "ingest_version": run.report.ingest_version,
            "items": len(run.items),
            "topics": len(run.topics),
            "rejects": len(run.rejects),
            **{f"items_{op}": v for op, v in structs.asdict(n.items).items()},
            **{f"topics_{op}": v for op, v in structs.asdict(n.topics).items()},
            "digest": digest,
        }
        query = t.publishes.insert().values(row).returning(t.publishes.c.id)
        publish_id = int(conn.execute(query).scalar_one())
        if log:
            conn.execute(t.changes.insert(), [_change_row(publish_id, c) for c in log])
        return publish_id


def _folder(run: RunOutput, files: dict[str, bytes]) -> Folder:
    item_lines = dict(
        zip((i.id for i in run.items), files["items.jsonl"].splitlines(), strict=True)
    )
    topic_lines = dict(
        zip((tp.slug for tp in run.topics), files["topics.jsonl"].splitlines(), strict=True)
    )
    return Folder(
        items={i.id: i for i in run.items},
        topics={tp.slug: tp for tp in run.topics},
        item_lines=item_lines,
        topic_lines=topic_lines,
        item_digests={k: digest(x) for k, x in item_lines.items()},
        topic_digests={k: digest(x) for k, x in topic_lines.items()},
        merged={c.id: c.into for c in run.changes if c.op == "merged" and c.into is not None},
    )


def _deltas(conn: Connection, folder: Folder) -> tuple[Delta, Delta]:
    items, topics = stored_digests(conn)
    return delta(items, folder.item_digests), delta(topics, folder.topic_digests)


def _latest_digest(conn: Connection) -> str | None:
    query = select(t.publishes.c.digest).order_by(t.publishes.c.id.desc()).limit(1)
    return conn.execute(query).scalar()


def _change_row(publish_id: int, c: Change) -> dict[str, object]:
    return {
        "publish_id": publish_id,
        "entity": c.entity,
        "id": c.id,
        "op": c.op,
        "fields": json.dumps(c.fields),
        "into_id": c.into,
    }


def _remove_sqlite(path: Path) -> None:
    """A database file this writer created, with WAL mode's companions."""
    for suffix in ("", "-wal", "-shm", "-journal"):
        with contextlib.suppress(FileNotFoundError):
            Path(f"{path}{suffix}").unlink()
