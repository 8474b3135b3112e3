"""Search over the items' Chinese and original titles and summaries, in both databases.

SQLite: an FTS5 table ``items_fts`` with the trigram tokenizer (any substring of three or
more characters matches, Chinese included; case folded), columns ``id`` (unindexed: the
key back to ``items``), ``title_zh``, ``title_original``, ``summary_zh``. It holds its own
copy of the text, and every publish keeps it in step with ``items`` in the same
transaction: the rows of changed and removed items are deleted, those of added and changed
items inserted. PostgreSQL: ``pg_trgm`` GIN indexes on the same three columns of ``items``,
which the server keeps in step by itself.

Each publish makes sure they exist (a database made before them, or where they could not be
made, gets them as soon as it can). When it cannot — a SQLite without FTS5 or its trigram
tokenizer (SQLite ≥ 3.34), a PostgreSQL role that may not create the extension — the
publish goes on without them and says so in one warning. The queries are in
docs/database.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import bindparam, exc, text
from sqlalchemy.engine import Connection

FTS = "items_fts"
COLUMNS = ("title_zh", "title_original", "summary_zh")
#: Ids per ``IN (...)`` list: well under SQLite's and PostgreSQL's parameter limits.
CHUNK = 500


def trigram_index(column: str) -> str:
    return f"items_{column}_trgm"


@dataclass(frozen=True, slots=True)
class Search:
    """What this publish keeps in step (``fts``: the SQLite table), whether it made the
    search table or indexes (``made``), and what it could not make (``warning``)."""

    fts: bool
    made: bool = False
    warning: str | None = None


#: Nothing to keep in step (yet).
NONE = Search(fts=False)


def ensure(conn: Connection, where: str) -> Search:
    if conn.dialect.name == "sqlite":
        return _ensure_fts(conn, where)
    return _ensure_trigram(conn, where)


def _ensure_fts(conn: Connection, where: str) -> Search:
    query = "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = :name"
    if conn.execute(text(query), {"name": FTS}).first() is not None:
        return Search(fts=True)
    columns = ", ".join(COLUMNS)
    try:
        with conn.begin_nested():
            conn.exec_driver_sql(
                f"CREATE VIRTUAL TABLE {FTS} USING fts5("
                f"id UNINDEXED, {columns}, tokenize = 'trigram')"
            )
    except exc.OperationalError as e:
        reason = " ".join(str(e.orig).split())
        return Search(
            fts=False,
            warning=f"{where}: no search table {FTS}: this SQLite cannot make it ({reason}; "
            "FTS5 with the trigram tokenizer needs SQLite 3.34 or later); published without it",
        )
    conn.exec_driver_sql(f"INSERT INTO {FTS} (id, {columns}) SELECT id, {columns} FROM items")
    return Search(fts=True, made=True)


def _ensure_trigram(conn: Connection, where: str) -> Search:
    query = "SELECT indexname FROM pg_indexes WHERE schemaname = current_schema()"
    present = set(conn.execute(text(query)).scalars())
    missing = [c for c in COLUMNS if trigram_index(c) not in present]
    if not missing:
        return Search(fts=False)
    try:
        with conn.begin_nested():
            conn.exec_driver_sql("CREATE EXTENSION IF NOT EXISTS pg_trgm")
    except exc.DBAPIError as e:
        reason = " ".join(str(e.orig).split())
        return Search(
            fts=False,
            warning=f"{where}: no trigram search indexes: cannot create extension pg_trgm "
            f"({reason}); published without them (a superuser can run CREATE EXTENSION "
            "pg_trgm in this database; the next publish then adds the indexes)",
        )
    for column in missing:
        conn.exec_driver_sql(
            f"CREATE INDEX {trigram_index(column)} ON items USING gin ({column} gin_trgm_ops)"
        )
    return Search(fts=False, made=True)


def forget(conn: Connection, search: Search, ids: Sequence[str]) -> None:
    """The search rows of these items go (SQLite's table; the server's indexes follow
    ``items`` by themselves)."""
    if search.fts:
        _each_chunk(conn, f"DELETE FROM {FTS} WHERE id IN :ids", ids)


def index(conn: Connection, search: Search, ids: Sequence[str]) -> None:
    """The search rows of these items, from their rows in ``items``."""
    if search.fts:
        columns = ", ".join(COLUMNS)
        statement = (
            f"INSERT INTO {FTS} (id, {columns}) SELECT id, {columns} FROM items WHERE id IN :ids"
        )
        _each_chunk(conn, statement, ids)


def _each_chunk(conn: Connection, statement: str, ids: Sequence[str]) -> None:
    query = text(statement).bindparams(bindparam("ids", expanding=True))
    for start in range(0, len(ids), CHUNK):
        conn.execute(query, {"ids": list(ids[start : start + CHUNK])})
