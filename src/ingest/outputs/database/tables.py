"""The database a site reads: tables, keys and indexes (database schema version 3).

``items``, ``topics``: one row per record, its scalar fields as columns, plus ``digest``
(sha256 of the record's line in the folder) to tell what a publish changes. ``item_topics``,
``related``, ``sources``, ``topic_sources``: the lists inside the records, one row per
entry, with its position in the list. ``publishes``: one row per publish applied;
``changes``: what each publish changed, as ``changes.jsonl`` lines. ``ingest_meta`` marks the
database as ingest's and holds its schema version. The column types are portable: one
definition creates the SQLite and the PostgreSQL database (``columns``: JSON and
timestamps, typed in each). The search over items (``search``) lives beside these tables.
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Column,
    Date,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    Table,
    Text,
)

from .columns import Json, Timestamp, json_check, timestamp_check

#: Version of the database's tables (not of the folder's contract, SCHEMA_VERSION).
DB_SCHEMA_VERSION = 3
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
    Column("kind", Text),
    Column("kind_label", Text),
    Column("title_zh", Text),
    Column("title_original", Text),
    Column("original_language", Text),
    Column("summary_zh", Text, nullable=False),
    Column("url", Text),
    Column("publisher", Text),
    Column("published_ago", Text),
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
    Column("name", Text),
    Column("description", Text),
    Column("category", Text),
    Column("url", Text),
    Column("site_name", Text),
    Column("site_url", Text),
    Column("notice", Text),
    Column("order_note", Text),
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
    Column("level", Text),
    Column("level_label", Text),
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


def _source_columns() -> list[Column[object]]:
    return [
        Column("position", Integer, primary_key=True),
        Column("file", Text, nullable=False),
        Column("sha256", Text, nullable=False),
        Column("format", Text, nullable=False),
        Column("locator", Text, nullable=False),
        Column("byte_offset", BigInteger, nullable=False),
        Column("line", Integer, nullable=False),
    ]


sources = Table(
    "sources",
    metadata,
    Column("item_id", Text, ForeignKey("items.id"), primary_key=True),
    *_source_columns(),
)

topic_sources = Table(
    "topic_sources",
    metadata,
    Column("slug", Text, ForeignKey("topics.slug"), primary_key=True),
    *_source_columns(),
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
    json_check("fields"),
)
