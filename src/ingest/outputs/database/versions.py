"""Is this ingest's database, and of which version: refuse, create, or migrate.

``ingest_meta`` holds ``application = ingest`` and ``schema_version``. Read under the
publish lock (``locking``), in the publish's transaction: an empty database is created at
:data:`DB_SCHEMA_VERSION`; an older one is migrated step by step (``migrations``; a failed
publish leaves it at its old version); a newer one, or a database with other tables and no
``ingest_meta``, is refused before anything is written.
"""

from __future__ import annotations

from sqlalchemy import inspect, select, update
from sqlalchemy.engine import Connection

from ...errors import UsageError
from . import tables as t
from .migrations import MIGRATIONS
from .tables import APPLICATION, DB_SCHEMA_VERSION

_SHOW_TABLES = 5


def schema_version(conn: Connection, where: str) -> int | None:
    """The ingest schema version of the database; None when it is empty. Raises a
    :class:`UsageError` for a database that is not ingest's or is newer than this ingest."""
    insp = inspect(conn)
    names = set(insp.get_table_names()) | set(insp.get_view_names())
    if not names:
        return None
    if t.meta.name not in names:
        more = ", ..." if len(names) > _SHOW_TABLES else ""
        listed = ", ".join(sorted(names)[:_SHOW_TABLES]) + more
        raise UsageError(
            f"{where} is not ingest's database: it has other tables ({listed}) and no "
            f"{t.meta.name}; give an empty database or one that ingest publish made"
        )
    version = _marked_version(conn, where)
    if version > DB_SCHEMA_VERSION:
        raise UsageError(
            f"{where} has database schema version {version}, newer than this ingest's "
            f"{DB_SCHEMA_VERSION}; publish with a newer ingest"
        )
    missing = sorted(set(required_tables(version)) - names)
    if missing:
        raise UsageError(f"{where}: ingest's table(s) {', '.join(missing)} missing; damaged")
    return version


def _marked_version(conn: Connection, where: str) -> int:
    marks = dict(conn.execute(select(t.meta.c.key, t.meta.c.value)).all())
    raw = marks.get("schema_version", "")
    if marks.get("application") != APPLICATION or not raw.isdigit() or int(raw) < 1:
        raise UsageError(f"{where}: {t.meta.name} does not mark it as ingest's database")
    return int(raw)


def required_tables(version: int) -> list[str]:
    names = [table.name for table in t.metadata.sorted_tables]
    return [n for n in names if version >= 2 or n != t.changes.name]


def create(conn: Connection) -> None:
    t.metadata.create_all(conn)
    conn.execute(
        t.meta.insert(),
        [
            {"key": "application", "value": APPLICATION},
            {"key": "schema_version", "value": str(DB_SCHEMA_VERSION)},
        ],
    )


def migrate(conn: Connection, version: int) -> int:
    """Bring the database from ``version`` to the current one; returns the version it had."""
    for step in range(version, DB_SCHEMA_VERSION):
        MIGRATIONS[step](conn)
    if version != DB_SCHEMA_VERSION:
        mark = t.meta.c.key == "schema_version"
        conn.execute(update(t.meta).where(mark).values(value=str(DB_SCHEMA_VERSION)))
    return version
