"""Helpers for the database tests: a fresh SQLite file or PostgreSQL database per test (the
fixtures ``pg_url``, ``db_url`` and ``published``, loaded for every test module by
``conftest.py``), publishes derived from a real one, and every table read back.

PostgreSQL is real: a server at ``INGEST_TEST_PG`` (default
``postgresql://postgres@127.0.0.1:5432/test``); each test creates its own database and drops
it. Without a server the PostgreSQL tests skip, saying how to point them at one; with
``CI=true`` a missing server fails them.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import re
import string
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import msgspec
import pytest
import xxhash
from msgspec.structs import replace
from sqlalchemy import create_engine, inspect, text
from sqlalchemy.engine import URL, make_url

from conftest import SEEDS
from ingest.cli import main
from ingest.contract import Item, Topic
from ingest.job import write_records
from ingest.reader import load_publish
from ingest.records import RunOutput
from ingest.state.changes import change_set, counts

DOCS = Path(__file__).resolve().parent.parent / "docs" / "database.md"
README = DOCS.parent.parent / "README.md"
PG_ENV = "INGEST_TEST_PG"
PG_DEFAULT = "postgresql://postgres@127.0.0.1:5432/test"
Json = dict[str, Any]


def pg_server() -> URL:
    return make_url(os.environ.get(PG_ENV, PG_DEFAULT)).set(drivername="postgresql+psycopg")


def _admin(statement: str) -> None:
    engine = create_engine(pg_server(), isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as conn:
            conn.execute(text(statement))
    finally:
        engine.dispose()


@contextmanager
def pg_database(options: str = "") -> Iterator[str]:
    """A new, empty PostgreSQL database, dropped afterwards (a test fixture's body);
    ``options`` go after ``CREATE DATABASE name`` (a locale, say)."""
    name = f"ingest_test_{uuid.uuid4().hex[:12]}"
    try:
        _admin(f'CREATE DATABASE "{name}" {options}')
    except Exception as e:
        reason = (
            f"no PostgreSQL server at {pg_server().set(drivername='postgresql')!r} "
            f"({type(e).__name__}); set {PG_ENV}=postgresql://USER@HOST:PORT/DB to a server "
            "where USER may create databases"
        )
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    try:
        yield pg_server().set(drivername="postgresql", database=name).render_as_string(False)
    finally:
        _admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


#: The databases every test of a ``db_url`` fixture runs on.
BACKENDS = ["sqlite", "postgresql"]


@pytest.fixture
def pg_url() -> Iterator[str]:
    """A new PostgreSQL database of the test's own."""
    with pg_database() as url:
        yield url


@pytest.fixture(params=BACKENDS)
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A new SQLite file, or a new PostgreSQL database: a test of it runs on both."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'site.sqlite'}"
    url: str = request.getfixturevalue("pg_url")
    return url


@pytest.fixture
def published(ingest: Any, tmp_path: Path, db_url: str) -> tuple[Path, Path]:
    """A (the seeds) and B (:func:`derive` with :func:`edit_b`), published one after the
    other into ``db_url``."""
    a = ingest(SEEDS).folder
    b = derive(a, tmp_path / "b", edit_b)
    for folder in (a, b):
        assert main(["publish", str(folder), "--db", db_url, "--quiet"]) == 0
    return a, b


def connect(url: str) -> Any:
    """A plain SQLAlchemy engine on ``url`` (not ingest's), for reading back."""
    u = make_url(url)
    if u.get_backend_name() == "postgresql":
        u = u.set(drivername="postgresql+psycopg")
    return create_engine(u)


def plain(value: Any) -> Any:
    """A value as the JSON has it: dates as ISO strings."""
    return value.isoformat() if isinstance(value, dt.date) else value


def json_value(value: Any) -> Any:
    """A JSON column's value as Python: SQLite hands back its text, PostgreSQL's jsonb the
    value itself."""
    return json.loads(value) if isinstance(value, str) else value


def logged(url: str, where: str = "TRUE") -> list[Json]:
    """The ``changes`` rows ``where`` says, as ``changes.jsonl`` lines: ``into_id`` as
    ``into``, ``field_values`` as ``values`` (left out where it is ``{}``, as the line leaves
    it out), sorted as the file is. A row whose ``field_values`` is NULL (logged before the
    database kept values) keeps ``values: None``, which no line of the file has."""
    query = (
        f'SELECT entity, op, id, fields, into_id AS "into", field_values FROM changes WHERE {where}'
    )
    out = []
    for row in rows(url, query):
        values = json_value(row.pop("field_values"))
        line = {**row, "fields": json_value(row["fields"])}
        if values != {}:
            line["values"] = values
        out.append(line)
    return sorted(out, key=lambda c: (c["entity"], c["op"], c["id"]))


def rows(url: str, query: str) -> list[dict[str, Any]]:
    engine = connect(url)
    try:
        with engine.connect() as conn:
            found = conn.execute(text(query)).mappings().all()
            return [{k: plain(v) for k, v in row.items()} for row in found]
    finally:
        engine.dispose()


def table_names(url: str) -> list[str]:
    engine = connect(url)
    try:
        with engine.connect() as conn:
            return sorted(inspect(conn).get_table_names())
    finally:
        engine.dispose()


def snapshot(url: str) -> dict[str, list[dict[str, Any]]]:
    """Every row of every table, in key order; on PostgreSQL with each row's ``xmin`` (the
    transaction that last wrote it), so a row rewritten with the same values shows too."""
    version = "xmin::text AS xmin, " if url.startswith("postgresql") else ""
    out = {}
    for name in table_names(url):
        found = rows(url, f"SELECT {version}* FROM {name}")
        out[name] = sorted(found, key=lambda row: repr(sorted(row.items())))
    return out


def lines(folder: Path, name: str) -> list[Json]:
    return [json.loads(x) for x in (folder / name).read_text("utf-8").splitlines()]


def _by(records: list[Json], key: str) -> dict[str, Json]:
    """A deep copy of ``records``, keyed (``edit`` changes the records in place)."""
    return {r[key]: json.loads(json.dumps(r)) for r in records}


Edit = Callable[[list[Json], list[Json]], dict[str, str]]


def reseal(folder: Path) -> Path:
    """``folder``'s marker made to list its files as they are now (size and xxh3-128): a
    publish edited by hand becomes a whole one again, as if ingest (or another tool that
    seals what it writes) had written it so. A listed file that is gone stays listed."""
    marker_path = folder / ".ingest"
    marker = json.loads(marker_path.read_bytes())
    for name in marker["files"]:
        path = folder / name
        if path.is_file() and not path.is_symlink():
            data = path.read_bytes()
            marker["files"][name] = {"size": len(data), "xxh3_128": xxhash.xxh3_128_hexdigest(data)}
    marker_path.write_text(json.dumps(marker, indent=1) + "\n", encoding="utf-8")
    return folder


def derive(base: Path, dest: Path, edit: Edit) -> Path:
    """A publish folder made from ``base``'s records after ``edit`` (on the records as
    JSON, in place; it returns old id → id merged into), with ``changes.jsonl``, the
    report's change counts, totals and ``run.sequence`` as ``ingest run`` would write them."""
    run = load_publish(base)
    items = [msgspec.to_builtins(i) for i in run.items]
    topics = [msgspec.to_builtins(t) for t in run.topics]
    before_i = _by(items, "id")
    before_t = _by(topics, "slug")
    merged = edit(items, topics)
    new_items = sorted((msgspec.convert(d, Item) for d in items), key=lambda i: i.id)
    new_topics = sorted((msgspec.convert(d, Topic) for d in topics), key=lambda t: t.slug)
    changes = change_set(before_i, before_t, new_items, new_topics, merged)
    report = replace(
        run.report,
        run=replace(run.report.run, sequence=run.report.run.sequence + 1),
        changes=counts(changes),
        totals=replace(run.report.totals, items=len(new_items), topics=len(new_topics)),
    )
    out = RunOutput(new_items, new_topics, run.rejects, report, changes)
    write_records(dest, out)  # records only: no state/ to derive
    return dest


# --- the next publishes of the seeds, as tests derive them ---------------------------------

NEW_ID = "zz0000000000new"


def _plain_ids(items: list[Json]) -> list[str]:
    """Items no related list names and with none of their own, in id order."""
    named = {r for d in items for r in d["related"]}
    return sorted(
        d["id"] for d in items if d["topics"] and not d["related"] and d["id"] not in named
    )


def edit_b(items: list[Json], topics: list[Json]) -> dict[str, str]:
    by_id = {d["id"]: d for d in items}
    a, b, c, estimate, gone, merged_away = _plain_ids(items)[:6]
    by_id[a]["summary_zh"] += "（改写）"
    by_id[b]["title_zh"] = "新的标题"
    by_id[c]["sources"][0]["line"] += 1000
    by_id[estimate]["published_estimate"] = {"earliest": "2025-06-01", "latest": "2025-07-31"}
    for old in (gone, merged_away):
        items.remove(by_id[old])
        for t in topics:
            t["items"] = [i for i in t["items"] if i != old]
    topic = topics[0]
    member = {"slug": topic["slug"], "rank": None, "level": None, "level_label": None}
    items.append({**by_id[a], "id": NEW_ID, "summary_zh": "新条目", "topics": [member]})
    topic["items"].append(NEW_ID)
    topic["description"] = "新的描述"
    return {merged_away: a}


def edit_c(items: list[Json], topics: list[Json]) -> dict[str, str]:
    by_id = {d["id"]: d for d in items}
    kind, gone = [i for i in _plain_ids(items) if i != NEW_ID][-2:]
    by_id[kind]["kind_label"] = "视频"
    items.remove(by_id[gone])
    topics[0]["items"].remove(gone)
    topics[0]["order_note"] = None
    return {}


# --- the rows, read back with plain SQL ----------------------------------------------------


def items_in_db(url: str) -> dict[str, Json]:
    out: dict[str, Json] = {}
    for row in rows(url, "SELECT * FROM items"):
        earliest, latest = row.pop("published_earliest"), row.pop("published_latest")
        row["digest"] = row.pop("digest")
        est = None if earliest is None else {"earliest": earliest, "latest": latest}
        out[row["id"]] = {**row, "published_estimate": est, "topics": [], "related": []}
        out[row["id"]]["sources"] = []
    for row in rows(url, "SELECT * FROM item_topics"):
        member = {k: row[k] for k in ("slug", "rank", "level", "level_label")}
        out[row["item_id"]]["topics"].append(member)
    for record in out.values():  # by code point, as items.jsonl: not the database's collation
        record["topics"].sort(key=lambda m: m["slug"])
    for row in rows(url, "SELECT * FROM related ORDER BY item_id, position"):
        out[row["item_id"]]["related"].append(row["related_id"])
    for row in rows(url, "SELECT * FROM sources ORDER BY item_id, position"):
        out[row.pop("item_id")]["sources"].append(_source(row))
    return out


def topics_in_db(url: str) -> dict[str, Json]:
    out: dict[str, Json] = {}
    for row in rows(url, "SELECT * FROM topics"):
        site = None
        if row["site_name"] is not None or row["site_url"] is not None:
            site = {"name": row.pop("site_name"), "url": row.pop("site_url")}
        levels = row.pop("declared_levels")
        declared = None if levels is None else {"count": row["declared_count"]}
        if declared is not None:
            declared["levels"] = json_value(levels)
        row = {k: v for k, v in row.items() if k not in ("site_name", "site_url", "declared_count")}
        out[row["slug"]] = {**row, "site": site, "declared": declared, "items": [], "sources": []}
    for row in rows(url, "SELECT slug, item_id FROM item_topics ORDER BY slug, position"):
        out[row["slug"]]["items"].append(row["item_id"])
    for row in rows(url, "SELECT * FROM topic_sources ORDER BY slug, position"):
        out[row.pop("slug")]["sources"].append(_source(row))
    return out


def _source(row: Json) -> Json:
    return {k: row[k] for k in ("file", "sha256", "format", "locator", "byte_offset", "line")}


def assert_rows_equal_jsonl(url: str, folder: Path) -> None:
    for name, in_db, key in (
        ("items.jsonl", items_in_db(url), "id"),
        ("topics.jsonl", topics_in_db(url), "slug"),
    ):
        raw = (folder / name).read_bytes().splitlines()
        records = [json.loads(x) for x in raw]
        assert sorted(in_db) == sorted(r[key] for r in records), name
        for line, record in zip(raw, records, strict=True):
            row = in_db[record[key]]
            assert row.pop("digest") == hashlib.sha256(line).hexdigest(), record[key]
            assert sorted(row) == sorted(record), (name, record[key])
            for field, value in record.items():
                assert row[field] == value, (name, record[key], field)


# --- search -------------------------------------------------------------------------------

#: The texts the search looks in.
SEARCHED = ("title_zh", "title_original", "summary_zh")
_ASCII_LOWER = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)


def fold(text: str) -> str:
    """A-Z as a-z, every other character as it is: the search's one case rule."""
    return text.translate(_ASCII_LOWER)


def substring_scan(items: list[Json], q: str) -> set[str]:
    """The ids of the items one of whose searched texts contains ``q``, A-Z and a-z taken
    as the same: what a search must find (docs/database.md, Search)."""
    return scanner(items)(q)


def scanner(items: list[Json]) -> Callable[[str], set[str]]:
    """:func:`substring_scan` of ``items`` for many words (their texts folded once)."""
    folded = [(x["id"], [fold(x[f]) for f in SEARCHED if x[f]]) for x in items]

    def scan(q: str) -> set[str]:
        word = fold(q)
        return {key for key, found in folded if any(word in t for t in found)}

    return scan


def search_query(backend: str) -> str:
    """docs/database.md's search query (the one taking ``:q``) for ``sqlite`` or
    ``postgresql``, as written there."""
    found: list[str] = re.findall(rf"```sql {backend}\n(.*?)```", DOCS.read_text("utf-8"), re.S)
    [query] = [sql for sql in found if ":q" in sql]
    return query


def readme_queries() -> list[tuple[str, str]]:
    """The SQL of the README's database section, fenced or indented, each with where it
    runs: ``both``, ``sqlite`` or ``postgresql``."""
    readme = README.read_text("utf-8")
    heading = re.search(r"^(#+) The database sites read\n", readme, re.M)
    assert heading is not None, "the README has no section 'The database sites read'"
    rest = readme[heading.end() :]
    end = re.search(rf"^#{{1,{len(heading.group(1))}}} ", rest, re.M)
    section = rest if end is None else rest[: end.start()]
    fenced = re.findall(r"```sql\n(.*?)```", section, re.S)
    indented = re.findall(r"\n\n((?:    .*\n)+)", section)
    blocks = fenced + [re.sub(r"^    ", "", b, flags=re.M) for b in indented]
    queries = [b for b in blocks if b.lstrip().upper().startswith("SELECT")]
    return [(_backend(sql), sql) for sql in queries]


def _backend(sql: str) -> str:
    """Where a query of the README runs: FTS5's MATCH is SQLite's; ILIKE and the collation
    "C" are PostgreSQL's."""
    if " MATCH " in sql:
        return "sqlite"
    return "postgresql" if " ILIKE " in sql or 'COLLATE "C"' in sql else "both"


# --- the clients' parameters --------------------------------------------------------------


def _literal(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def sqlite3_arg(value: str) -> str:
    """``"'model-serving-compute'"``: an SQL string as one argument of a dot-command of
    ``sqlite3`` (``.parameter set :q ARG``; double-quoted, with backslash escapes)."""
    inner = _literal(value).replace("\\", "\\\\").replace('"', '\\"')
    return f'"{inner}"'


def psql_arg(value: str) -> str:
    """``'''model-serving-compute'''``: an SQL string as a psql ``\\set`` value
    (single-quoted, quotes doubled, with backslash escapes)."""
    inner = _literal(value).replace("\\", "\\\\").replace("'", "''")
    return f"'{inner}'"
