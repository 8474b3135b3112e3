"""Which records a publish adds, changes and removes: the database's digests walked beside
the folder's lines, both in key order, one row and one line at a time.

Every ``items`` and ``topics`` row carries ``digest``, the sha256 of its record's line in
the folder. The rows are read ordered by key in code point order — ``COLLATE "C"`` on
PostgreSQL, ``BINARY`` on SQLite, whatever collation the database was made with — which is
the order of the folder's lines (``checks`` saw to that), so one walk down both finds every
key on one side only (added, removed) and every key whose digest differs (changed). This
is right however many runs the database lags behind the folder.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

import msgspec
from sqlalchemy import Column, Table, select
from sqlalchemy.engine import Connection

from ...errors import PublishError
from ..published import Published
from .rows import digest

#: Rows fetched from the database at a time while walking.
FETCH = 5000


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


class _Id(msgspec.Struct):
    id: str


class _Slug(msgspec.Struct):
    slug: str


def delta(conn: Connection, pub: Published, name: str, table: Table, where: str) -> Delta:
    key = table.c.id if "id" in table.c else table.c.slug
    return walk(_stored(conn, table, key, where), _folder(pub, name))


def walk(stored: Iterable[tuple[str, str]], folder: Iterable[tuple[str, str]]) -> Delta:
    """Both sides (key, digest), ascending by key; the folder's in line order."""
    d = Delta()
    rows, lines = iter(stored), enumerate(folder, 1)
    row, line = next(rows, None), next(lines, None)
    while row is not None or line is not None:
        if line is None or (row is not None and row[0] < line[1][0]):
            assert row is not None
            d.removed.append(row[0])
            row = next(rows, None)
            continue
        n, (key, digest) = line
        if row is None or key < row[0]:
            d.added.append(key)
            d.added_lines.add(n)
        else:
            if row[1] != digest:
                d.changed.append(key)
                d.changed_lines.add(n)
            row = next(rows, None)
        line = next(lines, None)
    return d


def _stored(
    conn: Connection, table: Table, key: Column[str], where: str
) -> Iterator[tuple[str, str]]:
    collation = "C" if conn.dialect.name == "postgresql" else "BINARY"
    query = (
        select(key, table.c.digest)
        .order_by(key.collate(collation))
        .execution_options(yield_per=FETCH)
    )
    previous: str | None = None
    for k, stored in conn.execute(query):
        if previous is not None and k <= previous:
            raise PublishError(
                f"{where}: {table.name} came back out of code point order ({previous!r}, "
                f"then {k!r}); nothing written"
            )
        previous = k
        yield k, stored


def _folder(pub: Published, name: str) -> Iterator[tuple[str, str]]:
    """(key, digest of the line) of each line; only the key is parsed."""
    if name == "items.jsonl":
        for _, line, i in pub.records(name, _Id):
            yield i.id, digest(line)
    else:
        for _, line, t in pub.records(name, _Slug):
            yield t.slug, digest(line)
