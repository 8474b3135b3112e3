"""Helpers for the database tests: a fresh SQLite file or PostgreSQL database per test,
publishes derived from a real one, and every table read back.

PostgreSQL is real: a server at ``INGEST_TEST_PG`` (default
``postgresql://postgres@127.0.0.1:5432/test``); each test creates its own database and drops
it. Without a server the PostgreSQL tests skip, saying how to point them at one; with
``CI=true`` a missing server fails them.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, inspect, text
from sqlalchemy.engine import URL, make_url

from ingest.outputs.folder import FolderWriter
from ingest.outputs.published import load_publish
from ingest.records.output import Item, RunOutput, Topic
from ingest.state.changes import change_set, counts

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
def pg_database() -> Iterator[str]:
    """A new, empty PostgreSQL database, dropped afterwards (a test fixture's body)."""
    name = f"ingest_test_{uuid.uuid4().hex[:12]}"
    try:
        _admin(f'CREATE DATABASE "{name}"')
    except Exception as e:
        reason = (
            f"no PostgreSQL server at {pg_server().render_as_string(hide_password=True)} "
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


def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A ``db_url`` fixture's body: a new SQLite file, or the ``pg_url`` fixture."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'site.sqlite'}"
    url: str = request.getfixturevalue("pg_url")
    return url


def connect(url: str) -> Any:
    """A plain SQLAlchemy engine on ``url`` (not ingest's), for reading back."""
    u = make_url(url)
    if u.get_backend_name() == "postgresql":
        u = u.set(drivername="postgresql+psycopg")
    return create_engine(u)


def plain(value: Any) -> Any:
    """A value as the JSON has it: dates as ISO strings."""
    return value.isoformat() if isinstance(value, dt.date) else value


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


def derive(base: Path, dest: Path, edit: Edit) -> Path:
    """A publish folder made from ``base``'s records after ``edit`` (on the records as
    JSON, in place; it returns old id → id merged into), with ``changes.jsonl``, the
    report's change counts, totals and ``run.sequence`` as ``ingest run`` would write them."""
    run = load_publish(base)
    items = [i.model_dump(mode="json") for i in run.items]
    topics = [t.model_dump(mode="json") for t in run.topics]
    before_i = _by(items, "id")
    before_t = _by(topics, "slug")
    merged = edit(items, topics)
    new_items = sorted((Item.model_validate(d) for d in items), key=lambda i: i.id)
    new_topics = sorted((Topic.model_validate(d) for d in topics), key=lambda t: t.slug)
    changes = change_set(before_i, before_t, new_items, new_topics, merged)
    report = run.report.model_copy(
        update={
            "run": run.report.run.model_copy(update={"sequence": run.report.run.sequence + 1}),
            "changes": counts(changes),
            "totals": run.report.totals.model_copy(
                update={"items": len(new_items), "topics": len(new_topics)}
            ),
        }
    )
    out = RunOutput(new_items, new_topics, run.rejects, report, changes)
    with FolderWriter(dest) as writer:
        writer.write(out)
    return dest
