"""An older database is migrated in the publish (SPEC §6, §7), on SQLite and PostgreSQL.

The older databases are made as the older ingest made them, with data: a publish of A and
B is taken back to database schema version 2 (SQLite: a new file made with version 2's
exact DDL, every row copied in, ``published_at`` as version 2 wrote it, naive UTC text;
PostgreSQL: JSON columns back to ``text``, no trigram indexes) or further back to version 1
(no ``published_estimate`` dates, no change log). C is then published into it.
"""

from __future__ import annotations

import datetime as dt
import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import inspect, text

from conftest import SEEDS
from dbtest import (
    Json,
    assert_rows_equal_jsonl,
    connect,
    derive,
    edit_b,
    edit_c,
    lines,
    logged,
    rows,
    search_query,
    substring_scan,
    table_names,
)
from ingest.cli import main
from ingest.database import tables

NOW = str(tables.DB_SCHEMA_VERSION)
TRGM = ["items_summary_zh_trgm", "items_title_original_trgm", "items_title_zh_trgm"]

#: The tables as ingest's database schema version 2 made them in SQLite (only the line
#: breaks and indentation differ from the DDL it wrote).
V2_SQLITE = """
CREATE TABLE ingest_meta ("key" TEXT NOT NULL, value TEXT NOT NULL, PRIMARY KEY ("key"));
CREATE TABLE items (id TEXT NOT NULL, kind TEXT, kind_label TEXT, title_zh TEXT,
  title_original TEXT, original_language TEXT, summary_zh TEXT NOT NULL, url TEXT,
  publisher TEXT, published_ago TEXT, published_earliest DATE, published_latest DATE,
  rating TEXT, collected_on DATE, digest TEXT NOT NULL, PRIMARY KEY (id));
CREATE TABLE topics (slug TEXT NOT NULL, name TEXT, description TEXT, category TEXT, url TEXT,
  site_name TEXT, site_url TEXT, notice TEXT, order_note TEXT, declared_count INTEGER,
  declared_levels TEXT, digest TEXT NOT NULL, PRIMARY KEY (slug));
CREATE TABLE publishes (id INTEGER NOT NULL, published_at DATETIME NOT NULL,
  sequence INTEGER NOT NULL, mode TEXT NOT NULL, crawled_at DATE, schema_version TEXT NOT NULL,
  ingest_version TEXT NOT NULL, items INTEGER NOT NULL, topics INTEGER NOT NULL,
  rejects INTEGER NOT NULL, items_added INTEGER NOT NULL, items_changed INTEGER NOT NULL,
  items_removed INTEGER NOT NULL, items_merged INTEGER NOT NULL, topics_added INTEGER NOT NULL,
  topics_changed INTEGER NOT NULL, topics_removed INTEGER NOT NULL,
  topics_merged INTEGER NOT NULL, digest TEXT NOT NULL, PRIMARY KEY (id));
CREATE TABLE item_topics (item_id TEXT NOT NULL, slug TEXT NOT NULL, position INTEGER NOT NULL,
  rank INTEGER, level TEXT, level_label TEXT, PRIMARY KEY (item_id, slug),
  FOREIGN KEY(item_id) REFERENCES items (id), FOREIGN KEY(slug) REFERENCES topics (slug));
CREATE UNIQUE INDEX item_topics_by_topic ON item_topics (slug, position);
CREATE TABLE related (item_id TEXT NOT NULL, position INTEGER NOT NULL,
  related_id TEXT NOT NULL, PRIMARY KEY (item_id, position),
  FOREIGN KEY(item_id) REFERENCES items (id), FOREIGN KEY(related_id) REFERENCES items (id));
CREATE INDEX related_by_target ON related (related_id);
CREATE TABLE sources (item_id TEXT NOT NULL, position INTEGER NOT NULL, file TEXT NOT NULL,
  sha256 TEXT NOT NULL, format TEXT NOT NULL, locator TEXT NOT NULL,
  byte_offset BIGINT NOT NULL, line INTEGER NOT NULL, PRIMARY KEY (item_id, position),
  FOREIGN KEY(item_id) REFERENCES items (id));
CREATE TABLE topic_sources (slug TEXT NOT NULL, position INTEGER NOT NULL, file TEXT NOT NULL,
  sha256 TEXT NOT NULL, format TEXT NOT NULL, locator TEXT NOT NULL,
  byte_offset BIGINT NOT NULL, line INTEGER NOT NULL, PRIMARY KEY (slug, position),
  FOREIGN KEY(slug) REFERENCES topics (slug));
CREATE TABLE changes (publish_id INTEGER NOT NULL, entity TEXT NOT NULL, id TEXT NOT NULL,
  op TEXT NOT NULL, fields TEXT NOT NULL, into_id TEXT, PRIMARY KEY (publish_id, entity, id),
  FOREIGN KEY(publish_id) REFERENCES publishes (id));
"""
V2_TABLES = [
    "ingest_meta",
    "items",
    "topics",
    "publishes",
    "item_topics",
    "related",
    "sources",
    "topic_sources",
    "changes",
]


def downgrade_to_v2(url: str) -> None:
    if url.startswith("sqlite"):
        _sqlite_to_v2(Path(url.removeprefix("sqlite:///")))
        return
    engine = connect(url)
    with engine.begin() as conn:
        conn.execute(text("ALTER TABLE changes DROP COLUMN field_values"))
        for table, column in (("topics", "declared_levels"), ("changes", "fields")):
            conn.execute(
                text(f"ALTER TABLE {table} ALTER COLUMN {column} TYPE text USING {column}::text")
            )
        conn.execute(text(f"DROP INDEX {', '.join(TRGM)}"))
        conn.execute(text("UPDATE ingest_meta SET value = '2' WHERE key = 'schema_version'"))
    engine.dispose()


def _sqlite_to_v2(path: Path) -> None:
    """A new file made with version 2's DDL, filled from the current one."""
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA journal_mode = DELETE")  # the WAL folded in: one file to copy
    conn.close()
    newer = path.with_name(path.name + ".newer")
    path.rename(newer)
    conn = sqlite3.connect(path, isolation_level=None)
    conn.executescript(V2_SQLITE)
    conn.execute("ATTACH DATABASE ? AS newer", (str(newer),))
    conn.execute("BEGIN")
    for name in V2_TABLES:
        names = [r[1] for r in conn.execute(f"PRAGMA main.table_info({name})")]
        values = [
            "replace(substr(published_at, 1, 19), 'T', ' ') || '.000000'"
            if n == "published_at"
            else n
            for n in names
        ]
        conn.execute(
            f"INSERT INTO main.{name} ({', '.join(names)}) "
            f"SELECT {', '.join(values)} FROM newer.{name}"
        )
    conn.execute("UPDATE ingest_meta SET value = '2' WHERE key = 'schema_version'")
    conn.execute("COMMIT")
    conn.execute("DETACH DATABASE newer")
    conn.execute("PRAGMA journal_mode = WAL")
    conn.close()
    newer.unlink()


#: ``changes`` as database schema version 3 made it in SQLite (no ``field_values``), and its
#: search table: FTS5 holding its own copy of the texts, rowids of its own.
V3_SQLITE_CHANGES = """
CREATE TABLE changes (
	publish_id INTEGER NOT NULL,
	entity TEXT NOT NULL,
	id TEXT NOT NULL,
	op TEXT NOT NULL,
	fields JSON NOT NULL,
	into_id TEXT,
	PRIMARY KEY (publish_id, entity, id),
	CONSTRAINT fields_is_json CHECK (fields IS NULL OR json_valid(fields)),
	FOREIGN KEY(publish_id) REFERENCES publishes (id)
)"""
V3_SQLITE_FTS = (
    "CREATE VIRTUAL TABLE items_fts USING fts5(id UNINDEXED, title_zh, title_original, "
    "summary_zh, tokenize = 'trigram')"
)


def downgrade_to_v3(url: str) -> None:
    """Version 3: no ``changes.field_values``; SQLite's ``items_fts`` a table of its own (its
    rows put in in reverse id order: rowids that do not line up with ``items``', as a v3
    database's drifted); PostgreSQL's trigram indexes on the columns as they are."""
    if url.startswith("sqlite"):
        conn = sqlite3.connect(url.removeprefix("sqlite:///"), isolation_level=None)
        conn.execute("BEGIN")
        conn.execute("DROP TABLE items_fts")
        conn.execute(V3_SQLITE_FTS)
        searched = "id, title_zh, title_original, summary_zh"
        conn.execute(
            f"INSERT INTO items_fts ({searched}) SELECT {searched} FROM items ORDER BY id DESC"
        )
        conn.execute("ALTER TABLE changes RENAME TO _v4_changes")
        conn.execute(V3_SQLITE_CHANGES)
        conn.execute(
            "INSERT INTO changes SELECT publish_id, entity, id, op, fields, into_id "
            "FROM _v4_changes"
        )
        conn.execute("DROP TABLE _v4_changes")
        conn.execute("UPDATE ingest_meta SET value = '3' WHERE key = 'schema_version'")
        conn.execute("COMMIT")
        conn.close()
        return
    engine = connect(url)
    with engine.begin() as conn:
        conn.execute(text("ALTER TABLE changes DROP COLUMN field_values"))
        conn.execute(text(f"DROP INDEX {', '.join(TRGM)}"))
        for index in TRGM:
            column = index.removeprefix("items_").removesuffix("_trgm")
            conn.execute(text(f"CREATE INDEX {index} ON items USING gin ({column} gin_trgm_ops)"))
        conn.execute(text("UPDATE ingest_meta SET value = '3' WHERE key = 'schema_version'"))
    engine.dispose()


def downgrade_to_v1(url: str) -> None:
    """Version 1 of the tables: no published_estimate dates, no change log."""
    downgrade_to_v2(url)
    engine = connect(url)
    with engine.begin() as conn:
        conn.execute(text("DROP TABLE changes"))
        conn.execute(text("ALTER TABLE items DROP COLUMN published_earliest"))
        conn.execute(text("ALTER TABLE items DROP COLUMN published_latest"))
        conn.execute(text("UPDATE ingest_meta SET value = '1' WHERE key = 'schema_version'"))
    engine.dispose()


def columns(url: str) -> dict[str, dict[str, str]]:
    """ingest's tables (not SQLite's search table and its shadows): column → declared type."""
    engine = connect(url)
    with engine.connect() as conn:
        insp = inspect(conn)
        found = {
            name: {c["name"]: str(c["type"]) for c in insp.get_columns(name)}
            for name in table_names(url)
            if name in tables.metadata.tables
        }
    engine.dispose()
    return found


def schema_sql(url: str) -> list[str]:
    """SQLite: every table's and index's DDL as the file holds it, white space aside."""
    query = "SELECT sql FROM sqlite_master WHERE sql IS NOT NULL ORDER BY name"
    return [" ".join(re.sub(r"\s*([(),])\s*", r"\1", r["sql"]).split()) for r in rows(url, query)]


def publish(folder: Path, url: str, *more: str) -> int:
    return main(["publish", str(folder), "--db", url, *more])


@pytest.fixture
def abc(ingest: Any, tmp_path: Path) -> tuple[Path, Path, Path]:
    a = ingest(SEEDS).folder
    b = derive(a, tmp_path / "b", edit_b)
    return a, b, derive(b, tmp_path / "c", edit_c)


def search_finds(url: str, words: str) -> set[str]:
    """The ids the documented search finds (three or more characters)."""
    if url.startswith("sqlite"):
        query = "SELECT id FROM items_fts WHERE items_fts MATCH :q"
        found = rows_with(url, query, {"q": f'"{words}"'})
    else:
        query = "SELECT id FROM items WHERE title_zh ILIKE :p OR summary_zh ILIKE :p"
        found = rows_with(url, query, {"p": f"%{words}%"})
    return {r["id"] for r in found}


def rows_with(url: str, query: str, params: dict[str, str]) -> list[dict[str, Any]]:
    engine = connect(url)
    with engine.connect() as conn:
        found = [dict(r) for r in conn.execute(text(query), params).mappings()]
    engine.dispose()
    return found


def test_a_version_2_database_with_data_is_migrated_in_the_publish(
    db_url: str, abc: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b, c = abc
    assert publish(a, db_url, "--quiet") == 0
    assert publish(b, db_url, "--quiet") == 0
    history = logged(db_url, "publish_id < 3")
    taken = rows(db_url, "SELECT id, published_at FROM publishes ORDER BY id")
    fresh = tmp_path / "fresh.sqlite"
    if db_url.startswith("sqlite"):
        assert publish(b, f"sqlite:///{fresh}", "--quiet") == 0
    downgrade_to_v2(db_url)
    old = columns(db_url)
    assert old["changes"]["fields"] == old["topics"]["declared_levels"] == "TEXT"
    assert "items_fts" not in table_names(db_url)

    capsys.readouterr()
    assert publish(c, db_url) == 0
    assert "migrated from database schema 2" in capsys.readouterr().out
    assert rows(db_url, "SELECT value FROM ingest_meta WHERE key = 'schema_version'") == [
        {"value": NOW}
    ]
    assert_rows_equal_jsonl(db_url, c)
    assert logged(db_url, "publish_id = 3") == lines(c, "changes.jsonl")
    assert any("values" in x for x in lines(c, "changes.jsonl"))
    # The rows logged before: as they were, their values not known (NULL).
    assert logged(db_url, "publish_id < 3") == [
        {**{k: v for k, v in x.items() if k != "values"}, "values": None} for x in history
    ]
    now = rows(db_url, "SELECT id, published_at FROM publishes WHERE id < 3 ORDER BY id")
    if db_url.startswith("sqlite"):
        assert schema_sql(db_url) == schema_sql(f"sqlite:///{fresh}")
        for before, after in zip(taken, now, strict=True):
            assert after["published_at"].endswith("+00:00")
            moment = dt.datetime.fromisoformat(before["published_at"])
            assert dt.datetime.fromisoformat(after["published_at"]) == moment
    else:
        assert now == taken
        types = "SELECT pg_typeof(fields)::text AS t FROM changes LIMIT 1"
        assert rows(db_url, types) == [{"t": "jsonb"}]
        assert longest_fields(db_url) >= 1
        indexes = "SELECT indexname FROM pg_indexes WHERE indexname LIKE '%trgm' ORDER BY 1"
        assert [r["indexname"] for r in rows(db_url, indexes)] == TRGM
    [item] = [x for x in lines(c, "items.jsonl") if x["summary_zh"].endswith("（改写）")]
    assert item["id"] in search_finds(db_url, "（改写）")


def test_a_version_3_database_gets_field_values_and_the_linked_search(
    db_url: str, abc: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A and B in a version 3 database, then C: ``changes`` gets ``field_values`` (C's rows
    hold the values, the rows logged before NULL), and the search is made anew — SQLite's
    ``items_fts`` linked to ``items`` (Datasette finds it; FTS5's check of it against
    ``items`` passes), PostgreSQL's trigram indexes on the expressions the query uses — and
    the documented query finds what the substring scan finds."""
    from datasette.utils import detect_fts

    a, b, c = abc
    assert publish(a, db_url, "--quiet") == 0
    assert publish(b, db_url, "--quiet") == 0
    history = logged(db_url, "publish_id < 3")
    assert any("values" in x for x in history)
    downgrade_to_v3(db_url)
    assert "field_values" not in columns(db_url)["changes"]
    capsys.readouterr()
    assert publish(c, db_url) == 0
    out = capsys.readouterr().out
    search = "table" if db_url.startswith("sqlite") else "indexes"
    assert f"(migrated from database schema 3, search {search} added)" in out, out
    version = "SELECT value FROM ingest_meta WHERE key = 'schema_version'"
    assert rows(db_url, version) == [{"value": NOW}]
    assert_rows_equal_jsonl(db_url, c)
    assert logged(db_url, "publish_id = 3") == lines(c, "changes.jsonl")
    assert any("values" in x for x in lines(c, "changes.jsonl"))
    assert logged(db_url, "publish_id < 3") == [
        {**{k: v for k, v in x.items() if k != "values"}, "values": None} for x in history
    ]
    if db_url.startswith("sqlite"):
        fresh = f"sqlite:///{tmp_path / 'fresh.sqlite'}"
        assert publish(c, fresh, "--quiet") == 0
        assert schema_sql(db_url) == schema_sql(fresh)
        path = db_url.removeprefix("sqlite:///")
        with sqlite3.connect(path) as conn:
            assert detect_fts(conn, "items") == "items_fts"
            conn.execute("INSERT INTO items_fts (items_fts, rank) VALUES ('integrity-check', 1)")
        conn.close()
    else:
        query = "SELECT indexname, indexdef FROM pg_indexes WHERE indexname LIKE '%trgm' ORDER BY 1"
        found = rows(db_url, query)
        assert [r["indexname"] for r in found] == TRGM
        for r in found:
            column = r["indexname"].removeprefix("items_").removesuffix("_trgm")
            assert f'lower(({column} COLLATE "C")) gin_trgm_ops' in r["indexdef"], r
    backend = "sqlite" if db_url.startswith("sqlite") else "postgresql"
    items = lines(c, "items.jsonl")
    for q in ("推理", "（改写）", "强化学习", "a", "TRL"):
        found_ids = {r["id"] for r in rows_with(db_url, search_query(backend), {"q": q})}
        assert found_ids == substring_scan(items, q) != set(), q


def longest_fields(url: str) -> int:
    """PostgreSQL: jsonb_array_length on changes.fields as it is, no cast."""
    query = "SELECT max(jsonb_array_length(fields)) AS n FROM changes"
    n: int = rows(url, query)[0]["n"]
    return n


def test_a_version_1_database_is_migrated_in_the_publish(
    db_url: str, abc: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """B (with a published_estimate) in a version 1 database, then C: the tables are brought
    to the current version in C's transaction and every row is rewritten, so the estimate
    that version 1 could not hold is back, though the item did not change from B to C; the
    log says so."""
    _, b, c = abc
    assert publish(b, db_url, "--quiet") == 0
    downgrade_to_v1(db_url)
    assert "changes" not in table_names(db_url)
    capsys.readouterr()
    assert publish(c, db_url) == 0
    assert "migrated from database schema 1" in capsys.readouterr().out
    expected = {t.name: {c.name for c in t.columns} for t in tables.metadata.sorted_tables}
    assert {name: set(found) for name, found in columns(db_url).items()} == expected
    version = "SELECT value FROM ingest_meta WHERE key = 'schema_version'"
    assert rows(db_url, version) == [{"value": NOW}]
    assert_rows_equal_jsonl(db_url, c)
    [dated] = [x for x in lines(c, "items.jsonl") if x["published_estimate"]]
    estimate = {"before": None, "after": dated["published_estimate"]}
    back = {
        "entity": "item",
        "op": "changed",
        "id": dated["id"],
        "fields": ["published_estimate"],
        "into": None,
        "values": {"published_estimate": estimate},
    }
    expected_log = [*lines(c, "changes.jsonl"), back]
    assert logged(db_url) == sorted(expected_log, key=lambda x: (x["entity"], x["op"], x["id"]))


def _nothing_declared(items: list[Json], topics: list[Json]) -> dict[str, str]:
    topics[0]["declared"] = None
    return {}


def test_json_and_timestamps_are_typed_in_a_new_database(
    db_url: str, abc: Any, tmp_path: Path
) -> None:
    """jsonb and timestamptz in PostgreSQL; in SQLite JSON text that must be JSON and
    timestamps with their offset (a row breaking either is refused by the database). A
    JSON value that is none is SQL NULL."""
    _, b, _ = abc
    assert publish(b, db_url, "--quiet") == 0
    bare = derive(b, tmp_path / "bare", _nothing_declared)
    assert publish(bare, db_url, "--quiet") == 0
    assert_rows_equal_jsonl(db_url, bare)
    assert rows(db_url, "SELECT count(*) AS n FROM topics WHERE declared_levels IS NULL") == [
        {"n": 1}
    ]
    assert publish(b, db_url, "--quiet") == 0
    [row, *_] = rows(db_url, "SELECT published_at FROM publishes")
    assert dt.datetime.fromisoformat(row["published_at"]).utcoffset() == dt.timedelta(0)
    engine = connect(db_url)
    if db_url.startswith("sqlite"):
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00", row["published_at"])
        assert columns(db_url)["changes"]["fields"] == "JSON"
        assert columns(db_url)["changes"]["field_values"] == "JSON"
        for statement in (
            "UPDATE changes SET fields = 'not json'",
            "UPDATE changes SET field_values = '{\"a\":'",
            "UPDATE publishes SET published_at = '2026-12-03 19:04:40'",
        ):
            with pytest.raises(Exception, match="CHECK constraint failed"), engine.begin() as conn:
                conn.execute(text(statement))
    else:
        query = "SELECT DISTINCT pg_typeof(published_at)::text AS t FROM publishes"
        assert rows(db_url, query) == [{"t": "timestamp with time zone"}]
        query = "SELECT pg_typeof(declared_levels)::text AS t FROM topics"
        assert rows(db_url, query) == [{"t": "jsonb"}]
        query = "SELECT DISTINCT pg_typeof(field_values)::text AS t FROM changes"
        assert rows(db_url, query) == [{"t": "jsonb"}]
        assert longest_fields(db_url) == 1  # ["declared"], as jsonb
    engine.dispose()
