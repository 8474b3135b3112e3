"""The database's tables (SQLAlchemy Core: one definition for SQLite and PostgreSQL), its
search (FTS5 / pg_trgm), and its versions: ingest's or not, created, migrated."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import islice
from typing import Any, TypeVar

from sqlalchemy import JSON, BigInteger, Date, DateTime, Integer, Text, bindparam, exc, inspect
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.engine import Connection, Dialect
from sqlalchemy.schema import CheckConstraint, Column, ForeignKey, Index, MetaData, Table
from sqlalchemy.sql import select, text, update
from sqlalchemy.types import TypeDecorator, TypeEngine

from ingest.errors import UsageError

T = TypeVar("T")
#: Ids per ``IN (...)`` list: well under SQLite's and PostgreSQL's parameter limits.
CHUNK = 500


def batches(values: Iterable[T], size: int = CHUNK) -> Iterator[list[T]]:
    it = iter(values)
    while batch := list(islice(it, size)):
        yield batch


def dumps(value: object) -> str:
    """JSON text as the database keeps it: compact, keys sorted, not ASCII-escaped."""
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


class Json(TypeDecorator[Any]):
    impl = JSON
    cache_ok = True

    def load_dialect_impl(self, dialect: Dialect) -> TypeEngine[Any]:
        kind = JSONB if dialect.name == "postgresql" else JSON
        return dialect.type_descriptor(kind(none_as_null=True))


def json_check(column: str) -> CheckConstraint:
    """SQLite's part of a JSON column: its text is JSON (null passes)."""
    rule = f"{column} IS NULL OR json_valid({column})"  # json_valid(NULL) is 0 before 3.45
    return CheckConstraint(rule, name=f"{column}_is_json").ddl_if(dialect="sqlite")


class Timestamp(TypeDecorator[dt.datetime]):
    impl = DateTime(timezone=True)
    cache_ok = True

    def load_dialect_impl(self, dialect: Dialect) -> TypeEngine[Any]:
        sqlite = dialect.name == "sqlite"
        return dialect.type_descriptor(Text() if sqlite else DateTime(timezone=True))

    def process_bind_param(self, value: dt.datetime | None, dialect: Dialect) -> Any:
        if value is not None and value.utcoffset() is None:
            raise ValueError(f"a timestamp without a time zone: {value!r}")
        return value.isoformat() if value is not None and dialect.name == "sqlite" else value

    def process_result_value(self, value: Any, dialect: Dialect) -> dt.datetime | None:
        if value is None or dialect.name != "sqlite":
            return value  # type: ignore[no-any-return]
        return dt.datetime.fromisoformat(value)


def timestamp_check(column: str) -> CheckConstraint:
    """SQLite's part of a Timestamp column: ISO 8601 with an offset, a real moment."""
    # YYYY-MM-DDTHH:MM:SS, then anything (fractions), then the offset +HH:MM
    rule = f"{column} GLOB '????-??-??T??:??:??*[+-]??:??' AND datetime({column}) IS NOT NULL"
    return CheckConstraint(rule, name=f"{column}_has_offset").ddl_if(dialect="sqlite")


def _texts(names: str, nullable: bool = True) -> list[Column[str]]:
    return [Column(name, Text, nullable=nullable) for name in names.split()]


#: Version of the database's tables (not of the folder's contract, SCHEMA_VERSION).
DB_SCHEMA_VERSION = 4
#: ``ingest_meta``'s ``application`` row: the mark that ingest made this database.
APPLICATION = "ingest"

metadata = MetaData()

meta = Table(
    "ingest_meta",
    metadata,
    Column("key", Text, primary_key=True),
    Column("value", Text, nullable=False),
)

items = Table(
    "items",
    metadata,
    Column("id", Text, primary_key=True),
    *_texts("kind kind_label title_zh title_original original_language"),
    Column("summary_zh", Text, nullable=False),
    *_texts("url publisher published_ago"),
    Column("published_earliest", Date),
    Column("published_latest", Date),
    Column("rating", Text),
    Column("collected_on", Date),
    Column("digest", Text, nullable=False),
)

topics = Table(
    "topics",
    metadata,
    Column("slug", Text, primary_key=True),
    *_texts("name description category url site_name site_url notice order_note"),
    Column("declared_count", Integer),
    Column("declared_levels", Json, comment="JSON object level → count; null: none declared"),
    Column("digest", Text, nullable=False),
    json_check("declared_levels"),
)

item_topics = Table(
    "item_topics",
    metadata,
    Column("item_id", Text, ForeignKey("items.id"), primary_key=True),
    Column("slug", Text, ForeignKey("topics.slug"), primary_key=True),
    Column("position", Integer, nullable=False, comment="index in the topic's items, from 0"),
    Column("rank", Integer),
    *_texts("level level_label"),
    Index("item_topics_by_topic", "slug", "position", unique=True),
)

related = Table(
    "related",
    metadata,
    Column("item_id", Text, ForeignKey("items.id"), primary_key=True),
    Column("position", Integer, primary_key=True),
    Column("related_id", Text, ForeignKey("items.id"), nullable=False),
    Index("related_by_target", "related_id"),
)


def _sources(name: str, key: Column[str]) -> Table:
    return Table(
        name,
        metadata,
        key,
        Column("position", Integer, primary_key=True),
        *_texts("file sha256 format locator", nullable=False),
        Column("byte_offset", BigInteger, nullable=False),
        Column("line", Integer, nullable=False),
    )


sources = _sources("sources", Column("item_id", Text, ForeignKey("items.id"), primary_key=True))
topic_sources = _sources(
    "topic_sources", Column("slug", Text, ForeignKey("topics.slug"), primary_key=True)
)

publishes = Table(
    "publishes",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("published_at", Timestamp, nullable=False, comment="UTC, with its offset"),
    Column("sequence", Integer, nullable=False, comment="report.json run.sequence"),
    Column("mode", Text, nullable=False),
    Column("crawled_at", Date),
    Column("schema_version", Text, nullable=False, comment="of the folder's records"),
    Column("ingest_version", Text, nullable=False),
    Column("items", Integer, nullable=False),
    Column("topics", Integer, nullable=False),
    Column("rejects", Integer, nullable=False),
    *(
        Column(f"{entity}_{op}", Integer, nullable=False)
        for entity in ("items", "topics")
        for op in ("added", "changed", "removed", "merged")
    ),
    Column("digest", Text, nullable=False, comment="sha256 of the files' sha256sum lines"),
    timestamp_check("published_at"),
)

changes = Table(
    "changes",
    metadata,
    Column("publish_id", Integer, ForeignKey("publishes.id"), primary_key=True),
    Column("entity", Text, primary_key=True),
    Column("id", Text, primary_key=True),
    Column("op", Text, nullable=False),
    Column("fields", Json, nullable=False, comment="JSON array of the changed fields"),
    Column("into_id", Text, comment="the surviving id, for op 'merged'"),
    Column(
        "field_values",
        Json,
        comment="JSON object field → {before, after} ('changed'); {}: other ops; "
        "null: logged before database schema 4",
    ),
    json_check("fields"),
    json_check("field_values"),
)


FTS = "items_fts"
COLUMNS = ("title_zh", "title_original", "summary_zh")
#: The search table's columns: ``id`` (not searched; read from ``items``, so that
#: ``items_fts.id`` names the item) and the searched ones.
_FTS_COLUMNS = ", ".join(("id", *COLUMNS))


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
    """FTS5 with the trigram tokenizer, an external-content table of ``items`` (it keeps only
    the index; the text is read from ``items`` by rowid). The options are written as
    Datasette and sqlite-utils look for them (``content="items"``): Datasette's table page of
    ``items`` then has a search box, served by this table."""
    query = "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = :name"
    if conn.execute(text(query), {"name": FTS}).first() is not None:
        return Search(fts=True)
    try:
        with conn.begin_nested():
            conn.exec_driver_sql(
                f"CREATE VIRTUAL TABLE {FTS} USING fts5(id UNINDEXED, {', '.join(COLUMNS)}, "
                'content="items", content_rowid="rowid", tokenize="trigram")'
            )
    except exc.OperationalError as e:
        reason = " ".join(str(e.orig).split())
        return Search(
            fts=False,
            warning=f"{where}: no search table {FTS}: this SQLite cannot make it ({reason}; "
            "FTS5 with the trigram tokenizer needs SQLite 3.34 or later); published without it",
        )
    conn.exec_driver_sql(f"INSERT INTO {FTS} ({FTS}) VALUES ('rebuild')")
    return Search(fts=True, made=True)


def _ensure_trigram(conn: Connection, where: str) -> Search:
    """One index per column: trigrams of the text with A-Z folded to a-z and nothing else
    folded (``lower`` under ``COLLATE "C"``), whatever the database's collation; the
    documented search query's ``LIKE`` on that expression uses it."""
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
    for c in missing:
        gin = f'gin (lower({c} COLLATE "C") gin_trgm_ops)'
        conn.exec_driver_sql(f"CREATE INDEX {trigram_index(c)} ON items USING {gin}")
    return Search(fts=False, made=True)


def forget(conn: Connection, search: Search, ids: Sequence[str]) -> None:
    """The search entries of these items go, before their rows in ``items`` change or go:
    an external-content table forgets a row only when told the values it indexed, which
    are still the row's (the server's indexes follow ``items`` by themselves)."""
    _fts(conn, search, ids, f"{FTS}, rowid, {_FTS_COLUMNS}", f"'delete', rowid, {_FTS_COLUMNS}")


def index(conn: Connection, search: Search, ids: Sequence[str]) -> None:
    """The search entries of these items, from their rows in ``items`` (after
    :func:`forget`, for a row that was there)."""
    _fts(conn, search, ids, f"rowid, {_FTS_COLUMNS}", f"rowid, {_FTS_COLUMNS}")


def _fts(conn: Connection, search: Search, ids: Sequence[str], into: str, values: str) -> None:
    if search.fts:
        sql = f"INSERT INTO {FTS} ({into}) SELECT {values} FROM items WHERE id IN :ids"
        query = text(sql).bindparams(bindparam("ids", expanding=True))
        for part in batches(ids):
            conn.execute(query, {"ids": part})


def _v1_to_v2(conn: Connection) -> None:
    """Add the published_estimate dates and the change log. The digests of version 1 hashed
    the 1.0 lines, so they are cleared: the next publish rewrites every row (filling the new
    columns) and logs only the fields that really differ."""
    _add_column(conn, items, Column("published_earliest", Date))
    _add_column(conn, items, Column("published_latest", Date))
    changes.create(conn)
    conn.execute(items.update().values(digest=""))


def _add_column(conn: Connection, table: Table, column: Column[object]) -> None:
    kind = column.type.compile(dialect=conn.dialect)
    quote = conn.dialect.identifier_preparer.quote
    conn.exec_driver_sql(f"ALTER TABLE {quote(table.name)} ADD COLUMN {quote(column.name)} {kind}")


def _v2_to_v3(conn: Connection) -> None:
    if conn.dialect.name == "postgresql":
        for table, column in ((topics, "declared_levels"), (changes, "fields")):
            conn.exec_driver_sql(
                f"ALTER TABLE {table.name} ALTER COLUMN {column} TYPE jsonb USING {column}::jsonb"
            )
        return
    _rebuild_sqlite(conn, [topics, publishes, item_topics, topic_sources, changes])


def _rebuild_sqlite(conn: Connection, tables: list[Table]) -> None:
    """SQLite changes no column's declared type or constraints in place: the tables are
    renamed aside, made anew and filled from the old ones (a column they lack: NULL), which
    then go. ``tables``: parents before children, and no table outside them refers to one
    of them (the foreign keys, enforced throughout, follow the renames)."""
    for table in reversed(tables):
        for index in table.indexes:
            conn.exec_driver_sql(f"DROP INDEX IF EXISTS {index.name}")
        conn.exec_driver_sql(f"ALTER TABLE {table.name} RENAME TO _old_{table.name}")
    metadata.create_all(conn, tables=tables)
    # A version 2 value as version 3 has it: published_at was naive UTC.
    convert = {"published_at": "strftime('%Y-%m-%dT%H:%M:%S+00:00', published_at)"}
    for table in tables:
        old = {row[1] for row in conn.exec_driver_sql(f"PRAGMA table_info(_old_{table.name})")}
        names = ", ".join(c.name for c in table.columns)
        values = ", ".join(
            convert.get(c.name, c.name) if c.name in old else "NULL" for c in table.columns
        )
        conn.exec_driver_sql(
            f"INSERT INTO {table.name} ({names}) SELECT {values} FROM _old_{table.name}"
        )
    for table in reversed(tables):
        conn.exec_driver_sql(f"DROP TABLE _old_{table.name}")


def _v3_to_v4(conn: Connection) -> None:
    """Add ``changes.field_values`` (the rows logged so far hold NULL: their values were not
    kept) and remake the search: SQLite's ``items_fts`` was a table of its own, with rowids
    unrelated to ``items``'; PostgreSQL's trigram indexes were on the columns as they are,
    and the search now folds A-Z alone. Both go here; the publish makes them anew (as it
    makes them for a database that has none), in the same transaction."""
    has_values = "field_values" in {c["name"] for c in inspect(conn).get_columns(changes.name)}
    if conn.dialect.name == "postgresql":
        conn.exec_driver_sql(f"DROP INDEX IF EXISTS {', '.join(map(trigram_index, COLUMNS))}")
        if not has_values:
            _add_column(conn, changes, changes.c.field_values)
        return
    conn.exec_driver_sql(f"DROP TABLE IF EXISTS {FTS}")
    if not has_values:  # else made by a step before, whole
        _rebuild_sqlite(conn, [changes])


#: version → the step that brings a database of that version to the next.
MIGRATIONS: dict[int, Callable[[Connection], None]] = {1: _v1_to_v2, 2: _v2_to_v3, 3: _v3_to_v4}


def schema_version(conn: Connection, where: str) -> int | None:
    """The ingest schema version of the database; None when it is empty. Raises a
    :class:`UsageError` for a database that is not ingest's or is newer than this ingest."""
    insp = inspect(conn)
    names = set(insp.get_table_names()) | set(insp.get_view_names())
    if not names:
        return None
    if meta.name not in names:
        listed = ", ".join(sorted(names)[:5]) + (", ..." if len(names) > 5 else "")
        raise UsageError(
            f"{where} is not ingest's database: it has other tables ({listed}) and no "
            f"{meta.name}; give an empty database or one that ingest publish made"
        )
    marks = dict(conn.execute(select(meta.c.key, meta.c.value)).all())
    raw = marks.get("schema_version", "")
    if marks.get("application") != APPLICATION or not raw.isdigit() or int(raw) < 1:
        raise UsageError(f"{where}: {meta.name} does not mark it as ingest's database")
    version = int(raw)
    if version > DB_SCHEMA_VERSION:
        raise UsageError(
            f"{where} has database schema version {version}, newer than this ingest's "
            f"{DB_SCHEMA_VERSION}; publish with a newer ingest"
        )
    required = {t.name for t in metadata.sorted_tables if version >= 2 or t is not changes}
    missing = sorted(required - names)
    if missing:
        raise UsageError(f"{where}: ingest's table(s) {', '.join(missing)} missing; damaged")
    return version


def create(conn: Connection) -> None:
    metadata.create_all(conn)
    marks = {"application": APPLICATION, "schema_version": str(DB_SCHEMA_VERSION)}
    conn.execute(meta.insert(), [{"key": k, "value": v} for k, v in marks.items()])


def migrate(conn: Connection, version: int) -> None:
    """Bring the database from ``version`` to the current one."""
    for step in range(version, DB_SCHEMA_VERSION):
        MIGRATIONS[step](conn)
    if version != DB_SCHEMA_VERSION:
        mark = meta.c.key == "schema_version"
        conn.execute(update(meta).where(mark).values(value=str(DB_SCHEMA_VERSION)))
