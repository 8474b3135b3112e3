"""The steps that bring an older database to the current tables, run in the publish's
transaction under its lock (``versions.migrate``).

Versions: 1 — the tables for schema 1.0 records (no ``published_estimate``, no change log);
2 — ``items.published_earliest`` / ``published_latest`` and the ``changes`` table; 3 — JSON
values typed (``jsonb`` in PostgreSQL, declared ``JSON`` and checked in SQLite) and
``publishes.published_at`` with its offset in SQLite (PostgreSQL's was ``timestamptz``
already). The search table and indexes are not a step: every publish makes sure of them
(``search``).
"""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import Column, Date, Table
from sqlalchemy.engine import Connection

from . import tables as t


def _v1_to_v2(conn: Connection) -> None:
    """Add the published_estimate dates and the change log. The digests of version 1 hashed
    the 1.0 lines, so they are cleared: the next publish rewrites every row (filling the new
    columns) and logs only the fields that really differ."""
    _add_column(conn, t.items, Column("published_earliest", Date))
    _add_column(conn, t.items, Column("published_latest", Date))
    t.changes.create(conn)
    conn.execute(t.items.update().values(digest=""))


def _add_column(conn: Connection, table: Table, column: Column[object]) -> None:
    kind = column.type.compile(dialect=conn.dialect)
    quote = conn.dialect.identifier_preparer.quote
    conn.exec_driver_sql(f"ALTER TABLE {quote(table.name)} ADD COLUMN {quote(column.name)} {kind}")


def _v2_to_v3(conn: Connection) -> None:
    if conn.dialect.name == "postgresql":
        for table, column in ((t.topics, "declared_levels"), (t.changes, "fields")):
            conn.exec_driver_sql(
                f"ALTER TABLE {table.name} ALTER COLUMN {column} TYPE jsonb USING {column}::jsonb"
            )
        return
    _rebuild_sqlite(conn, [t.topics, t.publishes, t.item_topics, t.topic_sources, t.changes])


#: SQLite: how a version 2 value becomes a version 3 one (published_at was naive UTC).
_CONVERT = {"published_at": "strftime('%Y-%m-%dT%H:%M:%S+00:00', published_at)"}


def _rebuild_sqlite(conn: Connection, tables: list[Table]) -> None:
    """SQLite changes no column's declared type or constraints in place: the tables are
    renamed aside, made anew and filled from the old ones, which then go. ``tables``:
    parents before children, and no table outside them refers to one of them (the foreign
    keys, enforced throughout, follow the renames)."""
    for table in reversed(tables):
        for index in table.indexes:
            conn.exec_driver_sql(f"DROP INDEX IF EXISTS {index.name}")
        conn.exec_driver_sql(f"ALTER TABLE {table.name} RENAME TO _old_{table.name}")
    t.metadata.create_all(conn, tables=tables)
    for table in tables:
        names = ", ".join(c.name for c in table.columns)
        values = ", ".join(_CONVERT.get(c.name, c.name) for c in table.columns)
        conn.exec_driver_sql(
            f"INSERT INTO {table.name} ({names}) SELECT {values} FROM _old_{table.name}"
        )
    for table in reversed(tables):
        conn.exec_driver_sql(f"DROP TABLE _old_{table.name}")


#: version → the step that brings a database of that version to the next.
MIGRATIONS: dict[int, Callable[[Connection], None]] = {1: _v1_to_v2, 2: _v2_to_v3}
